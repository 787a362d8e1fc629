"""The measurement machinery of ``ckptconform bench`` without timing anything real: the
interleaved order, figures and their ratios, the requests-per-checkpoint minimum, and the
peak-RSS child on a tiny local write."""

from __future__ import annotations

import pytest

from ckptconform.bench.measure import Case, Figure, requests_per_checkpoint, run_interleaved
from ckptconform.bench.rss import measure


def _figure(name="f"):
    return Figure(id=name, group="write", label=name, unit="GiB/s", amount=2.0)


def test_repetitions_interleave_and_rotate_the_variants():
    order: list[str] = []
    first, second = _figure("a"), _figure("b")

    def case(figure, variant, seconds=1.0):
        def run():
            order.append(f"{figure.id}.{variant}")
            return seconds

        return Case(figure, variant, run, prepare=lambda: order.append(f"prep {figure.id}"))

    groups = [
        [case(first, "x"), case(first, "y"), case(first, "z")],
        [case(second, "x"), case(second, "y")],
    ]
    steps: list[str] = []
    run_interleaved(groups, 3, on_step=steps.append)
    assert order[:5] == ["prep a"] * 3 + ["prep b"] * 2
    assert order[5:] == [
        "a.x", "a.y", "a.z", "b.x", "b.y",
        "a.y", "a.z", "a.x", "b.y", "b.x",
        "a.z", "a.x", "a.y", "b.x", "b.y",
    ]  # fmt: skip
    assert len(steps) == 6
    assert first.seconds == {"x": [1.0] * 3, "y": [1.0] * 3, "z": [1.0] * 3}


def test_a_failing_variant_ends_its_figure_not_the_run():
    broken, fine = _figure("broken"), _figure("fine")

    def boom():
        raise OSError("disk full")

    groups = [
        [Case(broken, "target", boom), Case(broken, "fsspec", lambda: 1.0)],
        [Case(fine, "target", lambda: 1.0)],
    ]
    run_interleaved(groups, 3)
    assert broken.error == "target: OSError: disk full"
    assert fine.error is None
    assert fine.seconds == {"target": [1.0, 1.0, 1.0]}
    assert broken.to_json()["error"] == "target: OSError: disk full"


def test_figure_rates_and_paired_ratios():
    figure = _figure()
    figure.scale = 0.5
    figure.ratios = {"target / fsspec": ("target", "fsspec")}
    figure.seconds = {"target": [1.0, 2.0, 4.0], "fsspec": [0.5, 1.0, 1.0]}
    assert figure.rates("target") == [1.0, 0.5, 0.25]  # 2 units per s, scaled by 0.5
    ratio = figure.ratio("target / fsspec")
    assert ratio is not None
    assert (ratio.median, ratio.minimum, ratio.maximum) == (0.5, 0.25, 0.5)
    document = figure.to_json()
    assert document["values"]["target"]["median"] == 0.5
    assert document["ratios"]["target / fsspec"]["count"] == 3
    figure.seconds["fsspec"].pop()
    assert figure.ratio("target / fsspec") is None  # unpaired samples give no ratio


def _phase(name, kind, checkpoint_id, operations, **extra):
    return {
        "name": name,
        "kind": kind,
        "checkpoint_id": checkpoint_id,
        "operations": operations,
        "retries_by_operation": extra.pop("retries", {}),
        "completed": True,
        **extra,
    }


def test_requests_per_checkpoint_against_the_minimum():
    phases = [
        _phase("setup", "setup", None, {"PutObject": 2, "DeleteObject": 1}),
        _phase("checkpoint 1: location", "coordinator", 1, {}),
        _phase(
            "checkpoint 1: tasks", "worker", 1, {"PutObject": 5, "HeadObject": 5}, file_streams=5
        ),
        _phase("checkpoint 1: metadata", "coordinator", 1, {"PutObject": 1}),
        _phase("checkpoint 2: location", "coordinator", 2, {}),
        _phase(
            "checkpoint 2: tasks",
            "worker",
            2,
            {"PutObject": 6},
            file_streams=4,
            retries={"PutObject": 2},
        ),
        _phase("checkpoint 2: metadata", "coordinator", 2, {"PutObject": 1}),
        _phase("dispose 1", "dispose", 1, {"DeleteObjects": 1}),
        _phase("restore 2: resolve", "restore_coordinator", 2, {"HeadObject": 1, "GetObject": 1}),
        _phase("restore 2: read", "restore_worker", 2, {"GetObject": 4}, file_handles=4),
    ]
    rows = {row["what"]: row for row in requests_per_checkpoint(phases)}
    assert set(rows) == {"checkpoint 1", "checkpoint 2", "restore 2"}
    one = rows["checkpoint 1"]
    assert (one["requests"], one["minimum"]) == (11, 6)  # a HEAD per stream: 5 too many
    two = rows["checkpoint 2"]
    assert (two["requests"], two["minimum"]) == (5, 5)  # retries of failed requests not held
    # finding _metadata (HEAD), reading it and one GET per handle: the minimum of a restore
    assert (rows["restore 2"]["requests"], rows["restore 2"]["minimum"]) == (6, 6)


@pytest.mark.timeout(120)
def test_peak_rss_child_on_a_small_local_write(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    result = measure(
        {
            "leg": "local",
            "variant": "target",
            "impl": "ckptstore",
            "checkpoint_dir": f"file://{tmp_path}/checkpoints",
            "options": {"inline_threshold": 1024, "write_buffer_size": 4096},
            "scheme": "file",
            "storage_options": {},
            "raw_dir": str(raw),
            "sync": True,
            "size": 8 << 20,
        }
    )
    assert result["peak"] >= result["baseline"] > 10 << 20
    assert result["seconds"] > 0
    assert result["peak"] - result["baseline"] < 64 << 20
    assert not list(raw.iterdir())
