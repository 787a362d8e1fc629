"""BAD: bad arguments, invalid retry budgets and hostile text.

Every public method of the contract gets bad arguments from the corpus of ``_bad_inputs``
(a fixed corpus plus a small hypothesis sample) with every other argument valid; the clauses
name the built-in errors (TypeError, ValueError, OSError; subclasses accepted) and nothing else
may escape. Retry budgets outside their ranges are refused; hostile text of growing length is
answered in bounded time.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ckptconform.suite._bad_inputs import (
    MUST_REFUSE,
    NEGATIVE,
    NONE,
    NULL_OK,
    OPERATIONS,
    RANGE,
    TYPE,
    Bad,
    bad_values,
    show,
)
from ckptconform.suite._bad_world import (
    ARGUMENT_ERRORS,
    Outcome,
    World,
    attempt,
    corpus,
    report,
    world_in,
)
from ckptconform.suite._driver import (
    JobDriver,
    expect_error,
    fail_message,
    file_options,
    payload,
    read_handle,
    tagged,
    within,
)
from ckptconform.suite._strategies import capped
from ckptstore.api import JobID


@pytest.fixture
def world(sandbox: Any, target: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    """A World; relative paths land in an empty working directory that the tests watch."""
    return world_in(sandbox, target, tmp_path, monkeypatch)


# --------------------------------------------------------------------------- BAD-1..3: arguments


@pytest.mark.clause("BAD-1")
def test_bad_arguments_raise_typed_errors(world):
    """BAD-1: every bad argument of the fixed corpus raises TypeError or ValueError."""
    outcomes = corpus(world, MUST_REFUSE)
    failures = [o.line() for o in outcomes if not o.refused(*ARGUMENT_ERRORS)]
    assert not failures, report(
        "BAD-1", "bad-argument corpus", failures, len(outcomes), expected="TypeError or ValueError"
    )


@pytest.mark.clause("BAD-2")
def test_none_and_out_of_range_ids(world):
    """BAD-2: None raises TypeError; ids outside their range raise ValueError."""
    outcomes = corpus(world, (NONE, RANGE))
    failures = [
        o.line() + f" (expected {'TypeError' if o.bad.kind == NONE else 'ValueError'})"
        for o in outcomes
        if not o.refused(TypeError if o.bad.kind == NONE else ValueError)
    ]
    assert not failures, report("BAD-2", "None and out-of-range corpus", failures, len(outcomes))


#: BAD-3: the error each stricter-than-Flink kind should raise.
STRICT = {TYPE: TypeError, NEGATIVE: ValueError, NULL_OK: TypeError}


@pytest.mark.clause("BAD-3")
def test_stricter_than_flink(world):
    """BAD-3 (SHOULD): wrong types raise TypeError; negative ids and None scopes are refused."""
    outcomes = corpus(world, tuple(STRICT))
    failures = [
        o.line() + f" (expected {STRICT[o.bad.kind].__name__})"
        for o in outcomes
        if not o.refused(STRICT[o.bad.kind])
    ]
    assert not failures, report("BAD-3", "stricter-than-Flink corpus", failures, len(outcomes))


#: BAD-12: the words by which an error may name each argument of the corpus (the contract's
#: parameter name first), compared without case, spaces and underscores.
ARGUMENT_NAMES: dict[str, tuple[str, ...]] = {
    "job_id": ("job_id",),
    "pointer": ("external_pointer", "pointer"),
    "checkpoint_id": ("checkpoint_id",),
    "target": ("external_location_pointer", "target", "pointer"),
    "reference": ("reference",),
    "scope": ("scope",),
    "handle": ("handle",),
    "handles": ("handles", "handle"),
    "data": ("data",),
}


def _argument_names(outcome: Outcome) -> tuple[str, ...]:
    """How the error of ``outcome`` may name the argument its operation varies (the one of
    the operation's parameters that is a name, not a fixed value)."""
    name = outcome.bad.operation.name
    inside = name[name.rindex("(") + 1 : -1]
    return next(
        ARGUMENT_NAMES[part.strip()] for part in inside.split(",") if part.strip() in ARGUMENT_NAMES
    )


def _squeezed(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _names_its_argument(outcome: Outcome) -> bool:
    message = _squeezed(str(outcome.error))
    return any(_squeezed(name) in message for name in _argument_names(outcome))


@pytest.mark.clause("BAD-12")
def test_errors_name_the_bad_argument(world):
    """BAD-12 (SHOULD): each error of the fixed corpus names the argument that was bad."""
    outcomes = [o for o in corpus(world, MUST_REFUSE) if o.error is not None]
    failures = [
        o.line() + f" (expected a message naming {' or '.join(_argument_names(o))})"
        for o in outcomes
        if not _names_its_argument(o)
    ]
    assert not failures, report("BAD-12", "bad-argument corpus", failures, len(outcomes))


def _operations_for(target: Any) -> list[Any]:
    return [
        op for op in OPERATIONS if op.capability is None or op.capability in target.capabilities
    ]


@pytest.mark.clause("BAD-1")
@capped(40)
@given(data=st.data())
def test_bad_arguments_sample(world, data):
    """BAD-1: a hypothesis sample of bad arguments raises TypeError or ValueError."""
    operation = data.draw(st.sampled_from(_operations_for(world.target)), label="operation")
    value = data.draw(
        bad_values().filter(lambda v: operation.classify(v) in MUST_REFUSE), label="value"
    )
    bad = Bad(operation, value, str(operation.classify(value)), show(value))
    outcome = attempt(bad, world)
    assert outcome.refused(*ARGUMENT_ERRORS), report(
        "BAD-1", "bad-argument sample", [outcome.line()], 1, expected="TypeError or ValueError"
    )


# --------------------------------------------------------------------------- BAD-9: retry budgets

#: BAD-9's budgets: the option, its value and the errors it must raise.
BAD_BUDGETS: tuple[tuple[str, Any, tuple[type[Exception], ...]], ...] = (
    ("retry_attempts", 0, (ValueError,)),
    ("retry_attempts", -1, (ValueError,)),
    ("retry_seconds", 0, (ValueError,)),
    ("retry_seconds", -1, (ValueError,)),
    ("retry_seconds", math.nan, (ValueError,)),
    ("retry_seconds", math.inf, (ValueError,)),
    ("retry_attempts", True, ARGUMENT_ERRORS),
    ("retry_attempts", 2.5, ARGUMENT_ERRORS),
    ("retry_attempts", "3", ARGUMENT_ERRORS),
    ("retry_seconds", True, ARGUMENT_ERRORS),
    ("retry_seconds", "5", ARGUMENT_ERRORS),
)


@pytest.mark.clause("BAD-9")
@pytest.mark.parametrize(
    ("option", "value", "errors"), BAD_BUDGETS, ids=[f"{o}={v!r}" for o, v, _ in BAD_BUDGETS]
)
def test_invalid_retry_budgets_are_refused(sandbox, target, option, value, errors):
    """BAD-9: a retry budget out of range or of the wrong type is refused by first use."""

    def use() -> Any:
        drv = JobDriver(sandbox, **{option: value}, **file_options(target))
        drv.init_base()
        return drv.write(drv.location(1), payload(3000))

    expect_error(
        errors, "BAD-9", "make_storage, the access and a first stream", use, sandbox,
        **{option: value},
    )  # fmt: skip


#: BAD-9's valid budget, accepted on every backend
VALID_BUDGET = {"retry_attempts": 2, "retry_seconds": 30}


@pytest.mark.clause("BAD-9")
def test_valid_retry_budget_is_accepted(sandbox, target):
    """BAD-9: a valid retry budget (retry_attempts 2, retry_seconds 30) is accepted on every
    backend: with it, 3000 bytes of state in a file read back and a checkpoint finalizes."""
    data, metadata = payload(3000, seed=9), b"metadata with a retry budget"
    with tagged("BAD-9", "state and a checkpoint with a valid retry budget", sandbox,
                **VALID_BUDGET):  # fmt: skip
        drv = JobDriver(sandbox, **VALID_BUDGET, **file_options(target))
        drv.init_base()
        location = drv.location(1)
        handle = drv.write(drv.worker(1, location.location_reference), data)
        assert read_handle(handle) == data, "the state read back other bytes"
        completed = drv.finalize(location, metadata)
        assert read_handle(completed.metadata_handle) == metadata, "_metadata reads other bytes"


# --------------------------------------------------------------------------- BAD-17: bounded time

#: Hostile texts by shape, ``n`` characters long: shapes on which a backtracking pattern (a
#: redaction, a URL parser) or a quadratic normalisation of '..' spends time squared in ``n``.
HOSTILE_TEXTS: dict[str, Callable[[int], str]] = {
    "letters and digits": lambda n: ("ab1" * n)[:n],
    "one letter, no '@'": lambda n: "x" * n,
    "'a:' repeated, then '@'": lambda n: "a:" * (n // 2) + "@",
    "'='": lambda n: "=" * n,
    "quoted items": lambda n: "'a':" * (n // 4),
    "a Bearer token": lambda n: "Bearer " + "a" * n,
    "'a://' repeated": lambda n: "a://" * (n // 4),
    "'x/' then '../' repeated": lambda n: "x/" * (n // 5) + "../" * (n // 5),
}


#: Seconds a call may take: the clause says one, the suite allows for slow machines.
HOSTILE_TEXT_SECONDS = 2.0


#: The first length tried; it doubles up to a megabyte. A quadratic implementation fails at a
#: small length, in seconds: a call that holds the GIL cannot be interrupted by a timer.
FIRST_HOSTILE_LENGTH = 16 * 1024


MEGABYTE = 1024 * 1024


@dataclass
class HostileTextCall:
    """A call that takes a path: pointers are only read, so they get every shape as it is; a
    savepoint target or checkpoint directory may be created, so it gets the shapes without
    '/' as one name below the test's root (an implementation that accepts it creates nothing
    elsewhere, and no tree too deep to remove)."""

    what: str
    call: Callable[[str], Any]
    creates: bool

    def text(self, sandbox: Any, hostile: str) -> str | None:
        if not self.creates:
            return hostile
        return None if "/" in hostile else f"{sandbox.root}/{hostile}"


def _hostile_text_calls(sandbox: Any, target: Any) -> list[HostileTextCall]:
    drv = JobDriver(sandbox, **file_options(target))

    def make_storage(text: str) -> Any:
        return sandbox.make_storage(checkpoint_dir=text).create_checkpoint_storage(JobID.generate())

    calls = [
        HostileTextCall("the storage's resolve_checkpoint", drv.storage.resolve_checkpoint, False),
        HostileTextCall("the access's resolve_checkpoint", drv.access.resolve_checkpoint, False),
        HostileTextCall("make_storage's checkpoint directory", make_storage, True),
    ]
    if "savepoints" in target.capabilities:
        calls.append(HostileTextCall(
            "initialize_location_for_savepoint's target",
            lambda text: drv.access.initialize_location_for_savepoint(1, text),
            True,
        ))  # fmt: skip
    return calls


def _answer(call: Callable[[str], Any], text: str) -> tuple[float, str]:
    """Seconds until ``call(text)`` answered (the bound past when it has not), and how."""
    outcome = ["no answer"]

    def work() -> None:
        try:
            call(text)
            outcome[0] = "returned"
        except (TypeError, ValueError, OSError) as exc:
            outcome[0] = f"refused: {type(exc).__name__}"
        except Exception as exc:  # the clause names the three built-in errors
            outcome[0] = f"raised {type(exc).__name__}: {show(str(exc), 160)}"

    start = time.monotonic()
    within(HOSTILE_TEXT_SECONDS, work, name="ckptconform-hostile-text")
    return time.monotonic() - start, outcome[0]


@pytest.mark.clause("BAD-17")
def test_hostile_text_of_any_length_is_answered_in_bounded_time(
    sandbox, target, tmp_path, monkeypatch
):
    """BAD-17: resolve_checkpoint of a storage and of an access, initialize_location_for_savepoint
    and make_storage, given hostile text up to 1 MB as a pointer, savepoint target or
    checkpoint directory, answer within 2 seconds with TypeError, ValueError or OSError, or
    accept a target or directory.

    Each shape starts at 16 KiB and doubles; the test stops at the first slow answer.
    """
    monkeypatch.chdir(tmp_path)  # relative pointers are read in an empty working directory
    calls = _hostile_text_calls(sandbox, target)
    for shape, make in HOSTILE_TEXTS.items():
        length = FIRST_HOSTILE_LENGTH
        while length <= MEGABYTE:
            for call in calls:
                text = call.text(sandbox, make(length))
                if text is None:
                    continue
                took, how = _answer(call.call, text)
                msg = fail_message(
                    "BAD-17", call.what, sandbox, text=f"{shape}, {len(text)} characters"
                )
                assert took <= HOSTILE_TEXT_SECONDS, msg + f"\nanswered after {took:.1f} s: {how}"
                answered = how.startswith("refused") or (call.creates and how == "returned")
                assert answered, msg + f"\nexpected TypeError, ValueError or OSError: {how}"
            length *= 2
