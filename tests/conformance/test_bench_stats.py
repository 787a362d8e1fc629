"""The statistics and the evaluation of ``ckptconform bench``: summaries, paired ratios, the
targets' verdicts, and which misses fail the run (only requests per checkpoint and peak RSS)."""

from __future__ import annotations

import math

import pytest

from ckptconform.bench.goals import (
    INLINE_RATE,
    RSS_HEADROOM,
    THROUGHPUT_RATIO,
    evaluate,
    gated_errors,
)
from ckptconform.bench.stats import AT_LEAST, AT_MOST, Goal, Summary, check, gate, paired_ratios

MIB = 1 << 20


def test_summary_is_median_min_max():
    summary = Summary.of([5.0, 1.0, 3.0, 100.0, 2.0])
    assert (summary.median, summary.minimum, summary.maximum, summary.count) == (3, 1, 100, 5)
    assert Summary.of([1.0, 2.0, 3.0, 4.0]).median == 2.5
    assert Summary.from_json(summary.to_json()) == summary
    with pytest.raises(ValueError):
        Summary.of([])
    with pytest.raises(ValueError):
        Summary.of([1.0, math.nan])


def test_ratios_are_paired_per_repetition():
    # repetition 2 was slow for both variants: paired ratios do not see it, medians would
    target = [1.0, 0.5, 1.0]
    baseline = [2.0, 1.0, 2.0]
    ratios = paired_ratios(target, baseline)
    assert (ratios.median, ratios.minimum, ratios.maximum) == (0.5, 0.5, 0.5)
    assert paired_ratios([1.0], [0.0]).median == math.inf
    with pytest.raises(ValueError):
        paired_ratios([1.0, 2.0], [1.0])


def test_verdict_on_the_median_with_the_spread():
    goal = Goal(AT_LEAST, 0.95, "x")
    clear = check("w", Summary.of([0.96, 0.97, 1.1]), goal)
    assert clear.passed
    assert not clear.spread_crosses
    assert clear.verdict == "pass"
    noisy = check("w", Summary.of([0.7, 0.9, 1.2]), goal)
    assert not noisy.passed
    assert noisy.spread_crosses
    assert noisy.verdict == "miss (within spread)"
    assert "0.9 x (0.7..1.2)" in noisy.describe()
    at_most = check("c", Summary.of([4.0, 5.0, 6.0]), Goal(AT_MOST, 5, "x"))
    assert at_most.passed
    assert at_most.spread_crosses
    assert not check("c", Summary.of([5.5, 6.0, 7.0]), Goal(AT_MOST, 5, "x")).passed


def test_gated_goals_hold_for_every_sample_and_decide_the_gate():
    goal = Goal(AT_MOST, 0, "requests", gated=True)
    one_over = check("requests", Summary.of([0, 0, 1]), goal)
    assert not one_over.passed  # the median is 0, but one checkpoint sent a request too many
    ungated_miss = check("ratio", Summary.of([0.5, 0.5, 0.5]), Goal(AT_LEAST, 0.95))
    assert gate([one_over, ungated_miss]) == [one_over]
    assert gate([ungated_miss]) == []
    with pytest.raises(ValueError):
        Goal("about", 1.0)


def _figure(group, label, *, ratios=None, values=None, baseline="fsspec+fsync", error=None):
    return {
        "group": group,
        "label": label,
        "baseline": baseline,
        "ratios": ratios or {},
        "values": values or {},
        "error": error,
    }


def _s(*samples):
    return Summary.of(samples).to_json()


def _document(*, rss_growth=10.0, requests=(17, 17), minimum=17, **extra):
    return {
        "figures": [
            _figure(
                "write",
                "write 16 MiB, local",
                ratios={
                    "target / fsspec+fsync": _s(0.5, 0.6, 0.7),
                    "target / disk": _s(0.1, 0.1, 0.1),
                },
            ),
            _figure(
                "read",
                "read 16 MiB, moto",
                baseline="fsspec",
                ratios={"target / fsspec": _s(1.0, 1.1, 0.99)},
            ),
            _figure(
                "inline",
                "inline",
                baseline="io.BytesIO",
                values={"target": _s(20_000, 21_000, 19_000)},
                ratios={"io.BytesIO / target": _s(20, 22, 21)},
            ),
            _figure(
                "threads",
                "threads",
                ratios={"target 8 / 1": _s(1.6, 1.7, 1.4), "fsspec+fsync 8 / 1": _s(1, 1, 1)},
            ),
            _figure("write", "write 1 MiB, local", error="target: OSError: boom"),
        ],
        "rss": [
            {
                "leg": "moto",
                "variant": "target",
                "size": 1024 * MIB,
                "write_buffer": 4096,
                "growth": Summary.single(rss_growth).to_json(),
            },
            {
                "leg": "moto",
                "variant": "fsspec",
                "size": 1024 * MIB,
                "write_buffer": 4096,
                "growth": Summary.single(500.0).to_json(),
            },
        ],
        "requests": {
            "leg": "moto",
            "rows": [
                *(
                    {
                        "what": f"checkpoint {i}",
                        "kind": "checkpoint",
                        "requests": n,
                        "minimum": minimum,
                        "completed": True,
                    }
                    for i, n in enumerate(requests, 1)
                ),
                {
                    "what": "restore 2",
                    "kind": "restore",
                    "requests": 30,
                    "minimum": 8,
                    "completed": True,
                },
            ],
        },
        **extra,
    }


def _by_name(checks):
    return {c.name: c for c in checks}


def test_evaluate_holds_each_figure_against_the_issues_targets():
    checks = _by_name(evaluate(_document()))
    write = checks["write 16 MiB, local: target / fsspec+fsync"]
    assert write.goal.threshold == THROUGHPUT_RATIO
    assert not write.passed
    assert not write.gated
    assert "write 16 MiB, local: target / disk" not in checks  # context, not a target
    assert checks["read 16 MiB, moto: target / fsspec"].passed
    inline = checks["inline: target"]
    assert inline.goal.threshold == INLINE_RATE
    assert not inline.passed
    cost = checks["inline: cost relative to io.BytesIO"]
    assert cost.value.median == 21
    assert not cost.passed
    assert checks["threads: target 8 / 1"].passed
    assert not any(name.startswith("write 1 MiB") for name in checks)  # an error: no verdict
    rss = checks["peak RSS writing 1024 MiB, moto: above baseline"]
    assert rss.gated
    assert rss.passed
    assert rss.goal.threshold == (4096 + RSS_HEADROOM) / MIB
    assert not any("fsspec" in name and "RSS" in name for name in checks)  # only the target
    requests = checks["S3 requests per checkpoint above the minimum (moto)"]
    assert requests.gated
    assert requests.passed
    assert gate(checks.values()) == []


def test_the_gate_fails_on_memory_above_the_bound_and_requests_above_the_minimum():
    bound = (4096 + RSS_HEADROOM) / MIB
    over = evaluate(_document(rss_growth=bound + 0.5))
    assert [c.name for c in gate(over)] == ["peak RSS writing 1024 MiB, moto: above baseline"]
    at_bound = evaluate(_document(rss_growth=bound))
    assert gate(at_bound) == []
    extra_head = evaluate(_document(requests=(17, 18)))
    failed = gate(extra_head)
    assert [c.name for c in failed] == ["S3 requests per checkpoint above the minimum (moto)"]
    assert failed[0].value.maximum == 1
    fewer = evaluate(_document(requests=(16, 17)))  # below the minimum is not a failure
    assert gate(fewer) == []


def test_unmeasured_gated_figures_are_gate_errors():
    document = _document()
    assert gated_errors(document) == []
    document["rss"][0] = {"leg": "local", "variant": "target", "error": "child died"}
    document["requests"]["rows"][0]["completed"] = False
    errors = gated_errors(document)
    assert "peak RSS, local: child died" in errors
    assert "S3 requests per checkpoint: checkpoint 1 did not complete" in errors
    assert gated_errors({"requests": {"error": "boom"}}) == ["S3 requests per checkpoint: boom"]


def test_suite_wall_time_targets():
    legs = [
        {"name": "local", "seconds": 60.0},
        {"name": "memory", "seconds": 50.0},
        {"name": "moto", "seconds": 80.0},
        {"name": "spark", "seconds": 100.0},
    ]
    checks = _by_name(evaluate({"suite": {"legs": legs}}))
    without = checks["suite wall time without Spark (ci profile)"]
    assert without.value.median == 190
    assert not without.passed
    assert not without.gated
    assert checks["suite wall time with Spark (ci profile)"].value.median == 290
    legs[3] = {"name": "spark", "skipped": "no Java"}
    assert "suite wall time with Spark (ci profile)" not in _by_name(
        evaluate({"suite": {"legs": legs}})
    )
