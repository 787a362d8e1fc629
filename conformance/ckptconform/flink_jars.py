"""Flink 2.3.0's jars: ``ckptconform.flink.jars``, under the name it had before."""

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
