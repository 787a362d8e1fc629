"""The BAD tests' shared ground: the ``World`` their bad calls are made in, a call's
``Outcome``, the ``report`` of findings, and the errnos that mean a lost connection.
"""

from __future__ import annotations

import errno
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ckptconform.suite._bad_inputs import (
    Bad,
    fixed_cases,
    relative_segments,
    show,
)
from ckptconform.suite._driver import (
    JobDriver,
    fail_message,
    file_options,
    file_path,
    join,
    payload,
)

#: Errors the contract names for bad arguments, and for pointers (which may also be I/O).
ARGUMENT_ERRORS = (TypeError, ValueError)
POINTER_ERRORS = (TypeError, ValueError, OSError)


# --------------------------------------------------------------------------- the world


class World:
    """What the corpus calls need, built through the contract on one sandbox.

    A job with two completed checkpoints (1 and 2, with exclusive and shared state), an open
    checkpoint location 3 with its worker factory, the task-owned toolset, and a savepoint
    target below the root that must never be created by a refused call.
    """

    def __init__(self, sandbox: Any, target: Any, cwd: Path) -> None:
        self.sandbox = sandbox
        self.target = target
        self.cwd = cwd
        self.driver = drv = JobDriver(sandbox, **file_options(target))
        drv.init_base()
        self.completed, written = drv.checkpoint(
            1, exclusive=[payload(3000, 11)], shared=[payload(3000, 12)], metadata=b"bad chk-1"
        )
        self.second, _ = drv.checkpoint(2, exclusive=[payload(3000, 13)], metadata=b"bad chk-2")
        self.metadata = {"chk-1": b"bad chk-1", "chk-2": b"bad chk-2"}
        self.handle, self.shared_handle = written[0][0], written[1][0]
        self.storage = drv.storage
        self.access = drv.access
        self.location = drv.location(3)
        self.factory = drv.worker(3, self.location.location_reference)
        self.toolset = drv.access.create_task_owned_checkpoint_state_toolset()
        self.savepoint_target = join(sandbox.root, "savepoint-target")

    def by_name(self, name: str) -> Any:
        return {"chk-1": self.completed, "chk-2": self.second}[name]

    def known_locations(self) -> dict[str, tuple[str, ...]] | None:
        """Segments below the root of each checkpoint's directory and metadata file, by name."""
        found: dict[str, tuple[str, ...]] = {}
        for name, completed in (("chk-1", self.completed), ("chk-2", self.second)):
            directory = relative_segments(self.sandbox, completed.external_pointer)
            if directory is None:
                return None
            found[name] = directory
            metadata = relative_segments(self.sandbox, file_path(completed.metadata_handle))
            if metadata is not None:
                found[f"{name} metadata"] = metadata
        return found


def world_in(sandbox: Any, target: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    """A World whose relative paths land in an empty working directory (``tmp_path/cwd``)."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return World(sandbox, target, cwd)


# --------------------------------------------------------------------------- outcomes


@dataclass
class Outcome:
    """What one bad call did: the error it raised, or what it returned."""

    bad: Bad
    error: BaseException | None = None
    result: Any = None

    def refused(self, *errors: type[BaseException]) -> bool:
        """Raised one of ``errors`` (or answered what the operation may answer instead)."""
        if self.error is None:
            may_return = self.bad.operation.may_return
            return may_return is not None and may_return(self.result)
        return isinstance(self.error, errors)

    def got(self) -> str:
        if self.error is None:
            return f"returned {show(self.result, 80)}"
        return f"raised {type(self.error).__name__}: {show(str(self.error), 160)}"

    def line(self) -> str:
        return f"  {self.bad.describe()}: {self.got()}"


def attempt(bad: Bad, world: World) -> Outcome:
    try:
        result = bad.operation.call(world, bad.value)
    except Exception as exc:  # the point: which exception escapes
        return Outcome(bad, error=exc)
    return Outcome(bad, result=result)


def corpus(world: World, kinds: Iterable[str]) -> list[Outcome]:
    cases = fixed_cases(world, world.target.capabilities, tuple(kinds))
    return [attempt(bad, world) for bad in cases]


def report(
    clause: str, what: str, failures: list[str], total: int, unit: str = "call(s)", **inputs: Any
) -> str:
    shown = failures[:40]
    more = f"\n  ... and {len(failures) - len(shown)} more" if len(failures) > len(shown) else ""
    return (
        fail_message(clause, what, **inputs)
        + f"\n{len(failures)} finding(s) in {total} {unit}:\n"
        + "\n".join(shown)
        + more
    )


# --------------------------------------------------------------------------- errnos (BAD-14)

#: errnos of a connection that could not be made or was lost: a ConnectionError's (with
#: ConnectionRefusedError's, ConnectionResetError's, ConnectionAbortedError's and
#: BrokenPipeError's own) and those of timeouts and unreachable hosts and networks
CONNECTION_ERRNOS = frozenset(
    {
        errno.ECONNREFUSED,
        errno.ECONNRESET,
        errno.ECONNABORTED,
        errno.EPIPE,
        errno.ETIMEDOUT,
        errno.EHOSTUNREACH,
        errno.ENETUNREACH,
    }
)


def errno_disagreement(error: BaseException) -> str | None:
    """Why ``error``'s errno and class disagree (BAD-14), or ``None``.

    The class Python's ``OSError(errno, text)`` picks for the errno must be the error's own
    built-in class (the first one in its MRO); a ConnectionError, which no errno picks, needs
    one of :data:`CONNECTION_ERRNOS`.
    """
    if not isinstance(error, OSError):
        return None
    code = error.errno
    if not isinstance(code, int):
        return f"{type(error).__name__} has no errno ({code!r})"
    own = next(c for c in type(error).__mro__ if c.__module__ == "builtins")
    picked = type(OSError(code, "text"))
    agrees = code in CONNECTION_ERRNOS if own is ConnectionError else picked is own
    if agrees:
        return None
    name = errno.errorcode.get(code, str(code))
    return (
        f"{type(error).__name__} (a {own.__name__}) has errno {name}, which Python's OSError "
        f"makes a {picked.__name__}"
    )
