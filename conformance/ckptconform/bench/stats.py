"""Statistics and targets of ``ckptconform bench``: summaries, paired ratios, verdicts.

Pure functions of numbers, no I/O, so the evaluation can be tested on its own.

- ``Summary``: the median, minimum and maximum of repeated samples (at least one).
- ``paired_ratios``: repetitions of two variants ran next to each other (interleaved), so the
  ratio is taken per repetition (``a[i] / b[i]``) and summarized; slow drifts of the machine
  hit both sides of a pair alike.
- ``Goal`` and ``Check``: a target of the issue (``at_least`` or ``at_most`` a threshold) and
  its verdict for a figure. A check's verdict uses the median; ``spread_crosses`` says that
  the min..max range reaches the other side of the threshold (the verdict is within the
  noise). ``gated`` checks are the figures that do not depend on machine noise (requests
  counted by the ledger, the memory bound): only they decide the exit code (``gate``).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "AT_LEAST",
    "AT_MOST",
    "Check",
    "Goal",
    "Summary",
    "check",
    "gate",
    "paired_ratios",
    "rates",
]

AT_LEAST = "at_least"
AT_MOST = "at_most"


@dataclass(frozen=True, slots=True)
class Summary:
    """Median, minimum and maximum of repeated samples (in the samples' unit)."""

    median: float
    minimum: float
    maximum: float
    count: int

    @classmethod
    def of(cls, samples: Iterable[float]) -> Summary:
        values = [float(v) for v in samples]
        if not values:
            raise ValueError("a summary needs at least one sample")
        if any(math.isnan(v) for v in values):
            raise ValueError("NaN sample")
        return cls(statistics.median(values), min(values), max(values), len(values))

    @classmethod
    def single(cls, value: float) -> Summary:
        return cls(float(value), float(value), float(value), 1)

    def scaled(self, factor: float) -> Summary:
        """The same summary in another unit (``factor`` > 0)."""
        return Summary(
            self.median * factor, self.minimum * factor, self.maximum * factor, self.count
        )

    def to_json(self) -> dict[str, float | int]:
        return {
            "median": self.median,
            "min": self.minimum,
            "max": self.maximum,
            "count": self.count,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Summary:
        return cls(
            float(data["median"]), float(data["min"]), float(data["max"]), int(data["count"])
        )


def rates(amount: float, seconds: Sequence[float]) -> list[float]:
    """``amount`` per second for each timed repetition (a zero time counts as infinitely fast)."""
    return [amount / s if s > 0 else math.inf for s in seconds]


def paired_ratios(numerators: Sequence[float], denominators: Sequence[float]) -> Summary:
    """Per-repetition ratios ``numerators[i] / denominators[i]`` of two interleaved variants.

    Both lists come from the same repetitions, in order; a length mismatch is a programming
    error. A zero denominator gives an infinite ratio.
    """
    if len(numerators) != len(denominators):
        raise ValueError(
            f"paired samples differ in length: {len(numerators)} vs {len(denominators)}"
        )
    ratios = [n / d if d else math.inf for n, d in zip(numerators, denominators, strict=True)]
    return Summary.of(ratios)


@dataclass(frozen=True, slots=True)
class Goal:
    """A target of the issue: ``value <direction> threshold`` (``at_least`` or ``at_most``)."""

    direction: str
    threshold: float
    unit: str = ""
    gated: bool = False

    def __post_init__(self) -> None:
        if self.direction not in (AT_LEAST, AT_MOST):
            raise ValueError(f"direction must be {AT_LEAST!r} or {AT_MOST!r}")

    def met_by(self, value: float) -> bool:
        if self.direction == AT_LEAST:
            return value >= self.threshold
        return value <= self.threshold

    def describe(self) -> str:
        sign = ">=" if self.direction == AT_LEAST else "<="
        unit = f" {self.unit}" if self.unit else ""
        return f"{sign} {_number(self.threshold)}{unit}"


@dataclass(frozen=True, slots=True)
class Check:
    """One figure held against one goal."""

    name: str
    goal: Goal
    value: Summary
    passed: bool
    spread_crosses: bool

    @property
    def gated(self) -> bool:
        return self.goal.gated

    @property
    def verdict(self) -> str:
        """``pass`` / ``miss``, with ``(within spread)`` when min..max crosses the threshold."""
        word = "pass" if self.passed else "miss"
        return f"{word} (within spread)" if self.spread_crosses else word

    def describe(self) -> str:
        unit = f" {self.goal.unit}" if self.goal.unit else ""
        spread = ""
        if self.value.count > 1 and self.value.minimum != self.value.maximum:
            spread = f" ({_number(self.value.minimum)}..{_number(self.value.maximum)})"
        return (
            f"{self.name}: {_number(self.value.median)}{unit}{spread}, target "
            f"{self.goal.describe()}: {self.verdict}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "direction": self.goal.direction,
            "threshold": self.goal.threshold,
            "unit": self.goal.unit,
            "gated": self.goal.gated,
            "value": self.value.to_json(),
            "passed": self.passed,
            "spread_crosses": self.spread_crosses,
            "verdict": self.verdict,
        }


def check(name: str, value: Summary, goal: Goal) -> Check:
    """The verdict of ``value`` (its median) against ``goal``.

    A gated goal (a figure without machine noise) must hold for every sample, so its verdict
    uses the worst sample rather than the median.
    """
    if goal.gated:
        worst = value.minimum if goal.direction == AT_LEAST else value.maximum
        passed = goal.met_by(worst)
        crosses = False
    else:
        passed = goal.met_by(value.median)
        crosses = goal.met_by(value.minimum) != goal.met_by(value.maximum)
    return Check(name, goal, value, passed, crosses)


def gate(checks: Iterable[Check]) -> list[Check]:
    """The gated checks that failed: a non-empty list means a non-zero exit code."""
    return [c for c in checks if c.gated and not c.passed]


def _number(value: float) -> str:
    if math.isinf(value):
        return "inf"
    if abs(value) >= 10_000:
        return f"{value:,.0f}"
    if value == int(value):
        return str(int(value))
    return f"{value:.3g}"
