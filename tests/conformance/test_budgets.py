"""Budget files, the gate's arithmetic and the command's arguments (no server needed)."""

from __future__ import annotations

import pytest

from ckptconform.budget.command import UsageError, parse_fault, parse_throttle
from ckptconform.budget.limits import (
    DEFAULT_BUDGETS,
    BudgetError,
    evaluate,
    first_attempts,
    load_budgets,
    regressions,
)


def _phase(name="checkpoint 1: tasks", kind="worker", **operations):
    return {
        "name": name,
        "kind": kind,
        "operations": operations,
        "requests": sum(operations.values()),
        "file_streams": 10,
        "file_handles": 0,
        "peak_per_second": {},
        "peak_per_second_per_prefix": {"write": 5, "read": 0},
        "retries_by_operation": {},
    }


def test_default_budgets_load_and_are_printed_as_documented():
    budgets = load_budgets()
    assert budgets["worker"]["HeadObject"] == 0
    assert budgets["worker"]["per_file_stream"] == 1
    assert budgets["peak_per_second_per_prefix"] == {"write": 3500, "read": 5500}
    assert "[restore_worker]" in DEFAULT_BUDGETS


def test_a_phase_within_the_default_budget_passes():
    assert evaluate([_phase(PutObject=10)], load_budgets()) == []


def test_a_head_per_stream_is_named_with_limit_and_excess():
    (head, per_stream) = evaluate([_phase(PutObject=10, HeadObject=10)], load_budgets())
    assert (head.metric, head.limit, head.actual, head.excess) == ("HeadObject", 0, 10, 10)
    assert per_stream.metric == "per_file_stream"
    assert (per_stream.limit, per_stream.actual) == (10, 20)
    assert head.describe() == "checkpoint 1: tasks: HeadObject = 10, budget 0 (+10)"


def test_retries_are_not_held_against_the_budget():
    phase = _phase(PutObject=13)
    phase["retries_by_operation"] = {"PutObject": 3}
    assert first_attempts(phase) == {"PutObject": 10}
    assert evaluate([phase], load_budgets()) == []


def test_peaks_per_prefix_have_limits(tmp_path):
    path = tmp_path / "budgets.toml"
    path.write_text("[peak_per_second_per_prefix]\nwrite = 4\n")
    (violation,) = evaluate([_phase(PutObject=10)], load_budgets(path))
    assert violation.metric == "peak write/s per prefix"
    assert (violation.limit, violation.actual) == (4, 5)


def test_a_baseline_catches_one_growing_operation():
    baseline = {"phases": [_phase(PutObject=10), _phase("restore 5: read", "restore_worker")]}
    (grew,) = regressions([_phase(PutObject=11)], baseline, "baseline b.json")
    assert (grew.metric, grew.limit, grew.actual) == ("PutObject", 10, 11)
    assert grew.describe() == (
        "checkpoint 1: tasks: PutObject = 11, baseline 10 (+1, baseline b.json)"
    )
    assert regressions([_phase(PutObject=10)], baseline, "b") == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[workers]\nHeadObject = 0\n", "unknown table [workers]"),
        ("[worker]\nHeadObjects = 0\n", "HeadObjects is not a limit"),
        ("[worker]\nHeadObject = -1\n", "must be a number >= 0"),
        ("[worker]\nHeadObject = true\n", "must be a number >= 0"),
        ("worker = 3\n", "must be a table"),
        ("[worker\n", "is not valid TOML"),
    ],
)
def test_bad_budget_files_name_the_problem(tmp_path, text, message):
    path = tmp_path / "b.toml"
    path.write_text(text)
    with pytest.raises(BudgetError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_budgets(path)


def test_a_missing_budget_file_is_a_budget_error(tmp_path):
    with pytest.raises(BudgetError, match="cannot read the budget file"):
        load_budgets(tmp_path / "nope.toml")


def test_fault_and_throttle_specs():
    assert parse_fault("PutObject:0.05:503") == {
        "operation": ["PutObject"],
        "rate": 0.05,
        "times": None,
        "key_contains": None,
        "status": 503,
        "code": "SlowDown",
    }
    fault = parse_fault("PutObject,UploadPart:0.1:drop-after-commit:_metadata")
    assert fault["drop_connection"]
    assert fault["after_commit"]
    assert fault["key_contains"] == "_metadata"
    assert parse_throttle("PutObject:3500") == {
        "per_second": 3500.0,
        "operation": ["PutObject"],
        "prefix_depth": None,
    }
    assert parse_throttle(":100:0")["prefix_depth"] == 0
    for bad in ("PutObject:0.1", "PutObject:x:503", "PutObject:0.1:404"):
        with pytest.raises(UsageError):
            parse_fault(bad)
    with pytest.raises(UsageError):
        parse_throttle("PutObject")
