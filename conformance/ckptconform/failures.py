"""The exception a clause test raises when it finds a clause broken, and how reports read it.

A test may check several clauses. Each part of such a test runs inside
``suite._driver.tagged(clause, ...)``, which turns any failure of that part (a failed
``assert`` with pytest's explanation, or an unexpected exception of the implementation) into a
``ClauseFailure`` naming the clause. The plugin copies ``clauses_of(exception)`` into the test
report, and the clause report blames exactly those clauses: no failure text is parsed.

A failure that carries no clause ids (an assertion outside any ``tagged`` block) is blamed on
every clause of its test, which is exact for the many tests that check one clause.

A failure message shows the listing of the test's sandbox, but most messages are built for a
check that passes, and listing a remote store costs requests and time. So a message holds a
promise (:func:`promise_listing`), and the plugin fills it in (:func:`fill_listings`) when a
failure reaches the report: the listing shows the sandbox as the test left it.
"""

from __future__ import annotations

import re
import threading
import weakref
from collections.abc import Iterable
from typing import Any

__all__ = ["ClauseFailure", "clauses_of", "fill_listings", "promise_listing"]

#: sandboxes whose listing a message promises, by root; an entry lives as long as its sandbox
_PROMISED: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()
_PROMISED_LOCK = threading.Lock()
_PROMISE = re.compile(r"<<listing of (.+?)>>")


class ClauseFailure(AssertionError):  # noqa: N818 (a test failure, like pytest.fail.Exception)
    """A clause (or several) found broken; ``clauses`` names them, ``str()`` says why."""

    def __init__(self, clauses: Iterable[str], message: str) -> None:
        ids = tuple(dict.fromkeys(clauses))
        if not ids:
            raise ValueError("a ClauseFailure names at least one clause")
        super().__init__(message)
        self.clauses = ids

    def __reduce__(self) -> tuple[type[ClauseFailure], tuple[tuple[str, ...], str]]:
        # pytest-xdist and hypothesis may pickle failures; keep the clause ids across it.
        return (type(self), (self.clauses, str(self)))


def clauses_of(exc: BaseException | None) -> tuple[str, ...]:
    """The clause ids that ``exc`` names; () when any part of it names none.

    Hypothesis raises an exception group when it found several distinct failures: the ids of
    its members are joined, but a member that names no clause makes the whole answer () (the
    failure is then blamed on every clause of the test).
    """
    found: dict[str, None] = {}
    pending: list[BaseException] = [] if exc is None else [exc]
    while pending:
        current = pending.pop(0)
        if isinstance(current, ClauseFailure):
            found.update(dict.fromkeys(current.clauses))
        elif isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        else:
            return ()
    return tuple(found)


def promise_listing(sandbox: Any) -> str:
    """A placeholder for the listing of ``sandbox`` (anything with ``root`` and ``listing()``),
    for a failure message; :func:`fill_listings` replaces it with the listing."""
    root = str(sandbox.root)
    with _PROMISED_LOCK:
        _PROMISED[root] = sandbox
    return f"<<listing of {root}>>"


def _listing(root: str) -> str:
    with _PROMISED_LOCK:
        sandbox = _PROMISED.get(root)
    if sandbox is None:
        return f"{root}: (not listed: its sandbox is gone)"
    try:
        return str(sandbox.listing())
    except Exception as exc:  # the listing is a courtesy; never hide the real failure
        return f"<listing failed: {type(exc).__name__}: {exc}>"


def fill_listings(exc: BaseException | None) -> None:
    """Replace the promised listings in the messages of ``exc``, its causes and contexts and
    the members of its groups, with the listings as they are now: each root listed once,
    though a ``tagged`` failure and the assertion it wraps both promise it."""
    taken: dict[str, str] = {}

    def filled(text: str) -> str:
        def one(match: re.Match[str]) -> str:
            root = match.group(1)
            if root not in taken:
                taken[root] = _listing(root)
            return taken[root]

        return _PROMISE.sub(one, text)

    pending: list[BaseException] = [] if exc is None else [exc]
    seen: set[int] = set()
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if current.args and isinstance(current.args[0], str) and _PROMISE.search(current.args[0]):
            current.args = (filled(current.args[0]), *current.args[1:])
        message = getattr(current, "msg", None)  # pytest.fail's exception keeps its text here
        if isinstance(message, str) and _PROMISE.search(message):
            current.msg = filled(message)  # type: ignore[attr-defined]
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        pending.extend(e for e in (current.__cause__, current.__context__) if e is not None)
