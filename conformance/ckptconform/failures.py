"""The exception a clause test raises when it finds a clause broken, and how reports read it.

A test may check several clauses. Each part of such a test runs inside
``suite._driver.tagged(clause, ...)``, which turns any failure of that part (a failed
``assert`` with pytest's explanation, or an unexpected exception of the implementation) into a
``ClauseFailure`` naming the clause. The plugin copies ``clauses_of(exception)`` into the test
report, and the clause report blames exactly those clauses: no failure text is parsed.

A failure that carries no clause ids (an assertion outside any ``tagged`` block) is blamed on
every clause of its test, which is exact for the many tests that check one clause.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["ClauseFailure", "clauses_of"]


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
