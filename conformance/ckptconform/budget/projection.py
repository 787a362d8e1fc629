"""From a run's counts to S3's per-prefix limits: the peak rate at another parallelism.

S3 serves at least 3,500 writes (PUT, COPY, POST, DELETE) and 5,500 reads (GET, HEAD) per second
per partitioned key prefix (``S3_LIMITS``); beyond that it answers 503 SlowDown. A job's subtasks
write a checkpoint at once after its barrier, so what decides whether a job of parallelism ``P``
is throttled is how many requests land on one prefix in that burst.

The projection takes the phases whose requests grow with the number of subtasks (``worker``: a
checkpoint's or savepoint's tasks; ``restore_worker``: a restore's reads), counts each
operation's first attempts per key prefix, and assumes, as a checkpoint burst does, that all of
one phase's requests on a prefix arrive within one second and grow in proportion to ``P``:

    peak(P) = requests on the busiest prefix / tasks * P
    parallelism at the limit = floor(limit * tasks / requests on the busiest prefix)

A prefix is a key's directory. Fixed directories (``chk-<n>/``, ``shared/``) take all of a
checkpoint's files; entropy injection puts each file under a random prefix, which the table shows
as many prefixes and a small busiest share (the projection then overestimates: new files spread
over new prefixes). Coordinator phases send a few requests whatever the parallelism; their
budgets, not this projection, bound them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ckptconform.budget.limits import READ_OPERATIONS, WRITE_OPERATIONS, Violation

__all__ = [
    "S3_LIMITS",
    "SCALING_KINDS",
    "Projection",
    "binding",
    "gate",
    "operation_class",
    "phase_group",
    "project",
]

#: S3's published request rates per second per partitioned prefix.
S3_LIMITS = {"write": 3500.0, "read": 5500.0}
#: Phase kinds whose requests grow with the job's parallelism.
SCALING_KINDS = ("worker", "restore_worker")
_JOB = re.compile(r"[0-9a-f]{32}")
_NUMBERED = re.compile(r"\b(chk-[0-9]+|savepoint-[0-9a-f]{6}-[0-9a-f]{12})(?=/)")


def operation_class(operation: str) -> str | None:
    """``write`` or ``read`` (S3's two per-prefix limits), ``None`` for neither."""
    if operation in WRITE_OPERATIONS:
        return "write"
    if operation in READ_OPERATIONS:
        return "read"
    return None


def phase_group(phase: Mapping[str, Any]) -> str:
    """What a scaling phase is: ``checkpoint``, ``savepoint`` or ``restore`` tasks."""
    if phase["kind"] == "restore_worker":
        return "restore"
    return "savepoint" if str(phase["name"]).startswith("savepoint") else "checkpoint"


@dataclass(frozen=True, slots=True)
class Projection:
    """One operation (or a whole class, ``write``/``read``) of one phase group, projected."""

    group: str
    what: str
    limit_class: str
    requests: int
    prefixes: int
    busiest_prefix: str
    busiest: int
    measured_peak: int
    tasks: int
    limit: float
    #: whether this row holds every request of its class (a class row, or the class's only one)
    whole_class: bool = False

    @property
    def per_subtask(self) -> float:
        """Requests of one subtask on the busiest prefix, per phase."""
        return self.busiest / self.tasks

    def peak_at(self, parallelism: int) -> float:
        """The projected requests per second on the busiest prefix at ``parallelism``."""
        return self.per_subtask * parallelism

    @property
    def limit_parallelism(self) -> int | None:
        """The largest parallelism within the limit (``None``: no request on any prefix)."""
        if self.busiest <= 0:
            return None
        return math.floor(self.limit * self.tasks / self.busiest)

    def row(self, parallelism: int) -> dict[str, Any]:
        return {
            "phase": self.group,
            "operation": self.what,
            "limit_class": self.limit_class,
            "requests_per_phase": self.requests,
            "prefixes": self.prefixes,
            "busiest_prefix": self.busiest_prefix,
            "busiest_prefix_requests": self.busiest,
            "busiest_share": round(self.busiest / self.requests, 3) if self.requests else 0.0,
            "per_subtask": round(self.per_subtask, 3),
            "measured_peak_per_second": self.measured_peak,
            "parallelism": parallelism,
            "projected_peak_per_second": round(self.peak_at(parallelism), 1),
            "limit": self.limit,
            "limit_parallelism": self.limit_parallelism,
            "whole_class": self.whole_class,
        }


def _short(prefix: str, root: str) -> str:
    text = prefix[len(root) :] if prefix.startswith(root) else prefix
    text = _NUMBERED.sub(lambda m: m.group(1).split("-")[0] + "-<n>", _JOB.sub("<job>", text))
    return text or "/"


def _common_root(phases: Iterable[Mapping[str, Any]]) -> str:
    """The part every prefix of the run shares (bucket and the run's root), left out of names."""
    prefixes: list[str] = [
        str(p)
        for phase in phases
        for counts in phase.get("by_prefix", {}).values()
        for p in counts
        if p.count("/") > 1  # not a bucket-level request (listings)
    ]
    if not prefixes:
        return ""
    shared = prefixes[0]
    for prefix in prefixes[1:]:
        while not prefix.startswith(shared):
            shared = shared[: shared.rstrip("/").rfind("/") + 1]
    return shared


def _candidates(
    phase: Mapping[str, Any], limits: Mapping[str, float]
) -> Iterable[tuple[str, str, dict[str, int], int, bool]]:
    """(what, class, counts by prefix, measured peak, whole class) per operation and class.

    A class with one operation has no row of its own: that operation's row stands for it.
    """
    by_class: dict[str, dict[str, dict[str, int]]] = {}
    for operation, counts in phase.get("by_prefix", {}).items():
        kind = operation_class(operation)
        if kind is not None and kind in limits:
            by_class.setdefault(kind, {})[operation] = {p: int(n) for p, n in counts.items()}
    peaks = phase.get("peak_per_second_by_prefix", {})
    class_peaks = phase.get("peak_per_second_per_prefix", {})
    for kind, operations in by_class.items():
        for operation, counts in operations.items():
            yield operation, kind, counts, int(peaks.get(operation, 0)), len(operations) == 1
        if len(operations) > 1:
            merged: dict[str, int] = {}
            for counts in operations.values():
                for prefix, count in counts.items():
                    merged[prefix] = merged.get(prefix, 0) + count
            yield f"{kind}s", kind, merged, int(class_peaks.get(kind, 0)), True


def project(
    phases: Iterable[Mapping[str, Any]], tasks: int, limits: Mapping[str, float] | None = None
) -> list[Projection]:
    """One projection per phase group and operation (and per class), the worst phase of each."""
    limits = dict(S3_LIMITS if limits is None else limits)
    phases = [p for p in phases if p["kind"] in SCALING_KINDS]
    root = _common_root(phases)
    worst: dict[tuple[str, str], Projection] = {}
    for phase in phases:
        group = phase_group(phase)
        for what, kind, counts, measured, whole in _candidates(phase, limits):
            prefix, busiest = max(counts.items(), key=lambda item: (item[1], item[0]))
            candidate = Projection(
                group, what, kind, sum(counts.values()), len(counts), _short(prefix, root),
                busiest, measured, max(1, tasks), float(limits[kind]), whole,
            )  # fmt: skip
            known = worst.get((group, what))
            if known is None or candidate.busiest > known.busiest:
                worst[(group, what)] = candidate
    order = {"checkpoint": 0, "savepoint": 1, "restore": 2}
    return sorted(
        worst.values(),
        key=lambda p: (order.get(p.group, 9), p.what in ("writes", "reads"), p.what),
    )


def gate(projections: Iterable[Projection], parallelism: int) -> list[Violation]:
    """Each class whose projected peak per prefix at ``parallelism`` exceeds its limit."""
    return [
        Violation(
            f"{p.group} tasks at parallelism {parallelism}",
            f"projected {p.limit_class}s/s per prefix ({p.busiest_prefix})",
            p.limit,
            round(p.peak_at(parallelism), 1),
            "projection",
        )
        for p in projections
        if p.whole_class and p.peak_at(parallelism) > p.limit
    ]


def binding(projections: Iterable[Projection], parallelism: int) -> Projection | None:
    """The class projection closest to (or furthest over) its limit at ``parallelism``."""
    classes = [p for p in projections if p.whole_class]
    return max(classes, key=lambda p: p.peak_at(parallelism) / p.limit, default=None)
