"""The targets of ``ckptconform bench`` (issue 13) and their evaluation on a ``bench.json``.

``evaluate(document)`` turns the figures of a run into ``Check`` values, one per target and
figure. Only two kinds are *gated* (they decide the exit code), because they do not depend on
how busy the machine is: the S3 requests of a checkpoint against the minimum, counted by the
ledger, and the peak memory of one large stream against ``write buffer + 64 MiB``. The ratios
are reported with their spread (min..max of the per-repetition ratios) and a verdict on their
median, never gated.

=============================================  =====================================  =====
figure                                         target                                 gated
=============================================  =====================================  =====
file-backed write, read (every size and leg)   >= 0.95 x raw fsspec, same durability  no
inline path                                    >= 100k states/s; <= 5 x io.BytesIO    no
inline path, ``--peer flink`` (stretch)        >= 1 x Flink's Java, same run          no
``threads`` threads vs 1 (local, RAM disk)     >= 1.5 x                               no
peak RSS writing one large stream              <= write buffer + 64 MiB               yes
S3 requests per checkpoint                     = the minimum (0 above it)             yes
suite wall time (``--suite``)                  < 180 s without Spark, < 300 s with    no
=============================================  =====================================  =====
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ckptconform.bench.stats import AT_LEAST, AT_MOST, Check, Goal, Summary, check

__all__ = [
    "INLINE_COST",
    "INLINE_RATE",
    "INLINE_VS_FLINK",
    "RSS_HEADROOM",
    "SUITE_SECONDS",
    "SUITE_SECONDS_WITH_SPARK",
    "THREADS_SPEEDUP",
    "THROUGHPUT_RATIO",
    "evaluate",
    "gated_errors",
    "verdict_line",
]

MIB = 1 << 20
THROUGHPUT_RATIO = 0.95
INLINE_RATE = 100_000.0
INLINE_COST = 5.0
#: the stretch target of the inline path: at least Flink's Java in the same run (--peer flink)
INLINE_VS_FLINK = 1.0
THREADS_SPEEDUP = 1.5
#: peak RSS of one stream: at most its write buffer plus this
RSS_HEADROOM = 64 * MIB
SUITE_SECONDS = 180.0
SUITE_SECONDS_WITH_SPARK = 300.0


def evaluate(document: Mapping[str, Any]) -> list[Check]:
    """Every target of the issue that the run's figures can be held against."""
    checks: list[Check] = []
    for figure in document.get("figures", []):
        if figure.get("error"):
            continue
        checks += _figure_checks(figure)
    for entry in document.get("rss", []):
        if entry.get("variant") != "target" or entry.get("error") or not entry.get("growth"):
            continue
        bound = (int(entry["write_buffer"]) + RSS_HEADROOM) / MIB
        checks.append(
            check(
                f"peak RSS writing {entry['size'] // MIB} MiB, {entry['leg']}: above baseline",
                Summary.from_json(entry["growth"]),
                Goal(AT_MOST, bound, "MiB", gated=True),
            )
        )
    requests = document.get("requests") or {}
    checkpoints = [r for r in requests.get("rows", []) if r["kind"] == "checkpoint"]
    if checkpoints and not requests.get("error"):
        excess = [float(r["requests"]) - float(r["minimum"]) for r in checkpoints]
        checks.append(
            check(
                f"S3 requests per checkpoint above the minimum ({requests.get('leg', 'moto')})",
                Summary.of(excess),
                Goal(AT_MOST, 0, "requests", gated=True),
            )
        )
    suite = document.get("suite") or {}
    legs = {leg["name"]: leg for leg in suite.get("legs", []) if not leg.get("skipped")}
    plain = [legs[name]["seconds"] for name in ("local", "memory", "moto") if name in legs]
    if plain:
        without = float(sum(plain))
        checks.append(
            check(
                "suite wall time without Spark (ci profile)",
                Summary.single(without),
                Goal(AT_MOST, SUITE_SECONDS, "s"),
            )
        )
        if "spark" in legs:
            checks.append(
                check(
                    "suite wall time with Spark (ci profile)",
                    Summary.single(without + float(legs["spark"]["seconds"])),
                    Goal(AT_MOST, SUITE_SECONDS_WITH_SPARK, "s"),
                )
            )
    return checks


def _figure_checks(figure: Mapping[str, Any]) -> list[Check]:
    group = figure["group"]
    ratios: Mapping[str, Any] = figure.get("ratios", {})
    values: Mapping[str, Any] = figure.get("values", {})
    found: list[Check] = []
    if group in ("write", "read"):
        name = f"target / {figure['baseline']}"
        if name in ratios:
            found.append(
                check(
                    f"{figure['label']}: {name}",
                    Summary.from_json(ratios[name]),
                    Goal(AT_LEAST, THROUGHPUT_RATIO, "x"),
                )
            )
    elif group == "inline":
        if "target" in values:
            found.append(
                check(
                    f"{figure['label']}: target",
                    Summary.from_json(values["target"]),
                    Goal(AT_LEAST, INLINE_RATE, "states/s"),
                )
            )
        cost = f"{figure['baseline']} / target"
        if cost in ratios:
            found.append(
                check(
                    f"{figure['label']}: cost relative to {figure['baseline']}",
                    Summary.from_json(ratios[cost]),
                    Goal(AT_MOST, INLINE_COST, "x"),
                )
            )
        if "target / flink" in ratios:
            found.append(
                check(
                    f"{figure['label']}: target / flink (stretch)",
                    Summary.from_json(ratios["target / flink"]),
                    Goal(AT_LEAST, INLINE_VS_FLINK, "x"),
                )
            )
    elif group == "threads":
        speedup = next((n for n in ratios if n.startswith("target ")), None)
        if speedup is not None:
            found.append(
                check(
                    f"{figure['label']}: {speedup}",
                    Summary.from_json(ratios[speedup]),
                    Goal(AT_LEAST, THREADS_SPEEDUP, "x"),
                )
            )
    return found


def gated_errors(document: Mapping[str, Any]) -> list[str]:
    """Gated figures that could not be measured (a failure of the gate, with the reason)."""
    errors = [
        f"peak RSS, {entry['leg']}: {entry['error']}"
        for entry in document.get("rss", [])
        if entry.get("variant") == "target" and entry.get("error")
    ]
    requests = document.get("requests") or {}
    if requests.get("error"):
        errors.append(f"S3 requests per checkpoint: {requests['error']}")
    for row in requests.get("rows", []):
        if not row.get("completed", True):
            errors.append(f"S3 requests per checkpoint: {row['what']} did not complete")
    return errors


def verdict_line(checks: list[Check], errors: list[str]) -> str:
    """The run's last line: PASS or FAIL and why, in one sentence."""
    failures = [c.describe() for c in checks if c.gated and not c.passed] + errors
    if failures:
        more = f" (and {len(failures) - 1} more above)" if len(failures) > 1 else ""
        return f"bench: FAIL: {failures[0]}{more}."
    gated = [c for c in checks if c.gated]
    if not gated:
        return "bench: PASS: nothing gated was measured (ratios are reported, never gated)."
    what = []
    if any(c.name.startswith("S3 requests") for c in gated):
        what.append("S3 requests per checkpoint at the minimum")
    if any(c.name.startswith("peak RSS") for c in gated):
        what.append("peak RSS within the write buffer + 64 MiB")
    return f"bench: PASS: {' and '.join(what)}; ratios are reported, never gated."
