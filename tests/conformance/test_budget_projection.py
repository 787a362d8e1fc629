"""The projection from a run's counts to S3's per-prefix limits, and the burst's start signal."""

from __future__ import annotations

import threading
import time

import pytest

from ckptconform.budget.projection import binding, gate, project
from ckptconform.spark import split_evenly
from ckptconform.workload import play_together

ROOT = "bucket/run/checkpoints/" + "a" * 32


def _phase(kind="worker", name="checkpoint 1: tasks", **by_prefix):
    return {"name": name, "kind": kind, "by_prefix": by_prefix,
            "peak_per_second_by_prefix": {}, "peak_per_second_per_prefix": {}}  # fmt: skip


def test_the_busiest_prefix_grows_with_the_parallelism():
    phase = _phase(PutObject={f"{ROOT}/chk-1/": 96, f"{ROOT}/shared/": 64})
    (put,) = project([phase], tasks=64)
    assert (put.what, put.prefixes, put.busiest, put.whole_class) == ("PutObject", 2, 96, True)
    assert put.busiest_prefix == "chk-<n>/"  # what every prefix shares is left out
    assert put.per_subtask == 1.5
    assert put.peak_at(1000) == 1500
    assert put.limit_parallelism == 2333  # 3,500 writes per second per prefix
    assert gate([put], 2333) == []
    (over,) = gate([put], 2334)
    assert over.limit == 3500
    assert over.actual == pytest.approx(3501)
    assert "S3's limit 3,500" in over.describe()


def test_operations_of_one_class_add_up_on_a_prefix():
    phase = _phase(HeadObject={f"{ROOT}/": 128}, GetObject={f"{ROOT}/": 64, f"{ROOT}/shared/": 10})
    rows = {p.what: p for p in project([phase], tasks=64)}
    assert set(rows) == {"HeadObject", "GetObject", "reads"}
    assert not rows["HeadObject"].whole_class
    assert rows["reads"].busiest == 192
    assert binding(rows.values(), 64) is rows["reads"]


def test_coordinator_phases_are_not_projected_and_the_worst_checkpoint_counts():
    phases = [
        _phase(PutObject={f"{ROOT}/chk-1/": 10}),
        _phase(name="checkpoint 2: tasks", PutObject={f"{ROOT}/chk-2/": 30}),
        _phase(kind="coordinator", name="checkpoint 2: metadata", PutObject={f"{ROOT}/chk-2/": 1}),
    ]
    (put,) = project(phases, tasks=10)
    assert put.busiest == 30


def test_entropy_spreads_requests_over_prefixes():
    spread = {f"bucket/run/{i:04x}/checkpoints/job/chk-1/": 1 for i in range(100)}
    (put,) = project([_phase(PutObject=spread)], tasks=50)
    assert (put.prefixes, put.busiest) == (100, 1)
    assert put.limit_parallelism == 175_000


def test_subtasks_start_together_after_all_are_ready():
    ready_at, started_at = [], []
    rendezvous = []

    def subtask(delay, ready):
        time.sleep(delay)
        ready_at.append(time.monotonic())
        ready()
        started_at.append(time.monotonic())
        return delay

    assert play_together(subtask, [0.0, 0.05, 0.2], lambda: rendezvous.append(1)) == [0, 0.05, 0.2]
    assert rendezvous == [1]
    assert min(started_at) >= max(ready_at)


def test_a_subtask_failing_before_its_start_keeps_no_one_waiting():
    def subtask(item, ready):
        if item == "bad":
            raise RuntimeError("failed while preparing")
        ready()
        return threading.current_thread().name

    with pytest.raises(RuntimeError, match="failed while preparing"):
        play_together(subtask, ["ok", "bad", "ok"], timeout=30)


def test_subtasks_are_split_evenly_over_the_slots():
    assert split_evenly(list(range(7)), 3) == [[0, 1, 2], [3, 4], [5, 6]]
    assert split_evenly([1], 4) == [[1]]
