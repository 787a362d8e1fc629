"""Hypothesis strategies and settings shared by the clause tests.

Sizes cluster around the inline threshold (where implementations go wrong), chunkings cover one
write, many small writes and random cuts, and settings keep the run's profile (selected by the
plugin) while capping the number of examples of expensive tests and allowing the sandbox
fixture, which is shared by the examples of one test (each example uses its own job id).
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

__all__ = [
    "checkpoint_ids",
    "chunkings",
    "capped",
    "pointer_spellings",
    "sizes_around",
    "thread_counts",
    "thresholds",
]

# A threshold of 1 MiB is the maximum (CS4); examples stay small to keep S3 legs fast.
thresholds = st.one_of(
    st.sampled_from([0, 1, 2, 15, 17, 100, 1000, 1024, 4096]),
    st.integers(min_value=0, max_value=8192),
)

thread_counts = st.integers(min_value=2, max_value=12)

checkpoint_ids = st.one_of(
    st.sampled_from([0, 1, 7, 10, 177, 1000]),
    st.integers(min_value=0, max_value=2**40),
)

#: How a test names a checkpoint: its directory, the directory with '/', or its metadata file.
pointer_spellings = st.sampled_from(["dir", "dir/", "dir//", "metadata-file"])


def sizes_around(threshold: int, spread: int = 3) -> st.SearchStrategy[int]:
    """Sizes at and near ``threshold`` (never negative), plus small and larger ones."""
    near = st.integers(min_value=max(0, threshold - spread), max_value=threshold + spread)
    return st.one_of(near, st.integers(min_value=0, max_value=max(2 * threshold, 64)))


@st.composite
def chunkings(draw: Any, total: int) -> list[int]:
    """Write sizes that add up to ``total``: one write, small writes, or random cuts (with 0s)."""
    if total <= 0:
        return list(draw(st.sampled_from([[], [0], [0, 0]])))
    kind = draw(st.sampled_from(["one", "cuts", "small"]))
    if kind == "one":
        return [total]
    if kind == "small" and total <= 512:
        step = draw(st.integers(min_value=1, max_value=7))
        return [min(step, total - i) for i in range(0, total, step)]
    cuts = sorted(
        draw(st.sets(st.integers(min_value=0, max_value=total), max_size=min(total, 12)))
        | {0, total}
    )
    return [b - a for a, b in pairwise(cuts)]


def capped(max_examples: int, **kwargs: Any) -> settings:
    """The active profile, with at most ``max_examples`` and no deadline or fixture checks.

    Caps keep the expensive tests (threads, S3 round trips) affordable in the ``dev`` and ``ci``
    profiles; a long profile (200 examples or more, like ``thorough``) raises them fourfold
    (stateful steps twofold).
    """
    current = settings()
    long_run = current.max_examples >= 200
    limit = max_examples * 4 if long_run else max_examples
    if "stateful_step_count" in kwargs:
        steps = kwargs["stateful_step_count"] * (2 if long_run else 1)
        kwargs["stateful_step_count"] = min(current.stateful_step_count, steps)
    return settings(
        max_examples=min(current.max_examples, limit),
        deadline=None,
        report_multiple_bugs=False,
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
        ],
        **kwargs,
    )
