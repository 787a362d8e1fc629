"""Request budgets: the limits a checkpoint workload's S3 requests must stay within, and the gate.

A budget file is TOML. Every table is optional; a missing one sets no limit. The defaults
(``DEFAULT_BUDGETS``, also ``ckptconform budget --print-default-budgets``) are what a storage
on S3 can meet: nothing but uploads on the worker path, at most one request per file-backed
stream, a few coordinator requests per checkpoint whatever the task count, restores without
existence checks, and AWS's documented per-prefix request rates::

    [worker]                    # per checkpoint: every request the tasks send
    HeadObject = 0              # an operation name limits that operation
    per_file_stream = 1         # requests per file-backed stream (inline state: none)

    [coordinator]               # per checkpoint: initialize the location, write _metadata
    requests = 4                # "requests" limits the total

    [restore_worker]            # per restore: the tasks that read the handles
    HeadObject = 0
    per_file_handle = 1

    [restore_coordinator]       # per restore: resolve the pointer, read _metadata
    requests = 3

    [peak_per_second_per_prefix]
    write = 3500                # PUT, COPY, POST, DELETE per second and key prefix (AWS)
    read = 5500                 # GET, HEAD per second and key prefix (AWS)

``evaluate`` turns a run's figures and the limits into ``Violation`` values; ``regressions``
compares a run with a baseline (an earlier ``budget.json``): any operation count of any phase
that grew is a violation, named with the baseline's figure. Both count first attempts: a
request that repeats one the server failed (an injected fault, throttling) is a retry, shown in
the report but not held against the budget; how many retries a storage may make is its retry
budget, which the REQ clauses check.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ckptconform.servers.ledger import OPERATIONS

__all__ = [
    "DEFAULT_BUDGETS",
    "PHASE_KINDS",
    "READ_OPERATIONS",
    "WRITE_OPERATIONS",
    "BudgetError",
    "Violation",
    "evaluate",
    "first_attempts",
    "load_budgets",
    "regressions",
]

#: Phase kinds a budget table may name (``ckptconform.budget.phases`` labels every phase with one).
PHASE_KINDS = ("setup", "worker", "coordinator", "restore_worker", "restore_coordinator", "dispose")
WRITE_OPERATIONS = frozenset(
    {
        "PutObject", "CopyObject", "DeleteObject", "DeleteObjects", "CreateMultipartUpload",
        "UploadPart", "CompleteMultipartUpload", "AbortMultipartUpload",
    }
)  # fmt: skip
READ_OPERATIONS = frozenset(
    {
        "GetObject",
        "HeadObject",
        "HeadBucket",
        "ListObjectsV2",
        "ListObjects",
        "ListMultipartUploads",
        "ListParts",
    }
)

DEFAULT_BUDGETS = """\
# ckptconform default request budgets (see ckptconform.budget.limits).
[worker]
HeadObject = 0
HeadBucket = 0
ListObjectsV2 = 0
ListObjects = 0
per_file_stream = 1

[coordinator]
HeadBucket = 0
ListObjectsV2 = 0
ListObjects = 0
requests = 4

[restore_worker]
HeadObject = 0
HeadBucket = 0
ListObjectsV2 = 0
ListObjects = 0
per_file_handle = 1

[restore_coordinator]
requests = 3

[peak_per_second_per_prefix]
write = 3500
read = 5500
"""

_PER = {"per_file_stream": "file_streams", "per_file_handle": "file_handles"}


class BudgetError(ValueError):
    """A budget or baseline file that cannot be used (its path and what is wrong)."""


@dataclass(frozen=True, slots=True)
class Violation:
    """One limit a run exceeded: where, what, the limit, the figure and the excess."""

    phase: str
    metric: str
    limit: float
    actual: float
    source: str = "budget"

    @property
    def excess(self) -> float:
        return self.actual - self.limit

    def describe(self) -> str:
        if self.source == "projection":
            return (
                f"{self.phase}: {self.metric} = {self.actual:,g}, S3's limit {self.limit:,g} "
                f"(+{self.excess:,g})"
            )
        against = "baseline" if self.source != "budget" else "budget"
        return (
            f"{self.phase}: {self.metric} = {self.actual:g}, {against} {self.limit:g} "
            f"(+{self.excess:g}{', ' + self.source if self.source != 'budget' else ''})"
        )


def load_budgets(path: str | Path | None = None) -> dict[str, dict[str, float]]:
    """The limits of a TOML budget file (``None``: the defaults), checked for known names."""
    if path is None:
        text, where = DEFAULT_BUDGETS, "the default budgets"
    else:
        where = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise BudgetError(f"cannot read the budget file {where}: {exc}") from exc
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BudgetError(f"{where} is not valid TOML: {exc}") from exc
    budgets: dict[str, dict[str, float]] = {}
    for table, limits in raw.items():
        if table not in (*PHASE_KINDS, "peak_per_second_per_prefix"):
            known = ", ".join((*PHASE_KINDS, "peak_per_second_per_prefix"))
            raise BudgetError(f"{where}: unknown table [{table}]; known: {known}")
        if not isinstance(limits, dict):
            raise BudgetError(f"{where}: [{table}] must be a table of limits")
        allowed = _allowed_metrics(table)
        for metric, value in limits.items():
            if metric not in allowed:
                raise BudgetError(
                    f"{where}: [{table}] {metric} is not a limit; use one of "
                    + ", ".join(sorted(allowed))
                )
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise BudgetError(f"{where}: [{table}] {metric} must be a number >= 0")
        budgets[table] = {metric: float(value) for metric, value in limits.items()}
    return budgets


def _allowed_metrics(table: str) -> set[str]:
    if table == "peak_per_second_per_prefix":
        return {"write", "read", *OPERATIONS}
    return {"requests", *OPERATIONS, *_PER}


def evaluate(
    phases: Iterable[Mapping[str, Any]], budgets: Mapping[str, Mapping[str, float]]
) -> list[Violation]:
    """Every limit of ``budgets`` that a phase of the run exceeded."""
    violations: list[Violation] = []
    for phase in phases:
        limits = budgets.get(str(phase["kind"]), {})
        operations = first_attempts(phase)
        requests = sum(operations.values())
        for metric, limit in limits.items():
            if metric == "requests":
                actual = float(requests)
            elif metric in _PER:
                # a phase whose streams are all inline may send nothing at all
                actual = float(requests)
                limit = limit * int(phase.get(_PER[metric], 0))
            else:
                actual = float(operations.get(metric, 0))
            if actual > limit:
                violations.append(Violation(str(phase["name"]), metric, limit, actual))
        peaks = budgets.get("peak_per_second_per_prefix", {})
        for metric, limit in peaks.items():
            actual = float(_peak(phase, metric))
            if actual > limit:
                violations.append(
                    Violation(str(phase["name"]), f"peak {metric}/s per prefix", limit, actual)
                )
    return violations


def first_attempts(phase: Mapping[str, Any]) -> dict[str, int]:
    """A phase's requests by operation, without the retries of failed requests."""
    retries: Mapping[str, int] = phase.get("retries_by_operation", {})
    counts = {op: int(n) - int(retries.get(op, 0)) for op, n in phase["operations"].items()}
    return {op: n for op, n in counts.items() if n > 0}


def _peak(phase: Mapping[str, Any], metric: str) -> int:
    by_class: Mapping[str, int] = phase.get("peak_per_second_per_prefix", {})
    if metric in by_class:
        return int(by_class[metric])
    return int(phase.get("peak_per_second", {}).get(metric, 0))


def regressions(
    phases: Iterable[Mapping[str, Any]], baseline: Mapping[str, Any], source: str
) -> list[Violation]:
    """Operation counts that grew against a baseline run (phases matched by name)."""
    before = {str(p["name"]): p for p in baseline.get("phases", [])}
    found: list[Violation] = []
    for phase in phases:
        old = before.get(str(phase["name"]))
        if old is None:
            continue
        before_counts = first_attempts(old)
        for operation, count in first_attempts(phase).items():
            was = before_counts.get(operation, 0)
            if count > was:
                found.append(Violation(str(phase["name"]), operation, was, count, source))
    return found
