"""Flink 2.3.0's jars for the Flink targets: the kit's ``ckptconform.flink.jars``, re-exported.

The kit fetches and caches the jars (the bench's Flink peer needs them too); the target's
modules and tests keep importing them from here.
"""

from __future__ import annotations

from ckptconform.flink.jars import (
    FLINK_VERSION,
    MINIMUM_JAVA,
    FlinkUnavailableError,
    cache_dir,
    cached_jars,
    ensure_jars,
    java_unavailable_reason,
    py4j_jar,
    unavailable_reason,
)

__all__ = [
    "FLINK_VERSION",
    "MINIMUM_JAVA",
    "FlinkUnavailableError",
    "cache_dir",
    "cached_jars",
    "ensure_jars",
    "java_unavailable_reason",
    "py4j_jar",
    "unavailable_reason",
]
