"""The JVM gateway of the Flink targets: the kit's ``ckptconform.flink.gateway``, re-exported.

One JVM per process serves the targets and the kit's FLK clause alike; any other name of the
kit's module (its state, such as ``_current``) is reached through this one too.
"""

from __future__ import annotations

from typing import Any

from ckptconform.flink import gateway as _kit
from ckptconform.flink.gateway import (
    JavaError,
    JavaFileExistsError,
    JavaFileNotFoundError,
    JavaIllegalArgumentError,
    JavaIllegalStateError,
    JavaIOError,
    JavaNullPointerError,
    JavaRuntimeError,
    JavaTypeError,
    JavaUnsupportedOperationError,
    gateway,
    java_errors,
    jvm,
    stop,
    translate,
)

__all__ = [
    "JavaError",
    "JavaFileExistsError",
    "JavaFileNotFoundError",
    "JavaIOError",
    "JavaIllegalArgumentError",
    "JavaIllegalStateError",
    "JavaNullPointerError",
    "JavaRuntimeError",
    "JavaTypeError",
    "JavaUnsupportedOperationError",
    "gateway",
    "java_errors",
    "jvm",
    "stop",
    "translate",
]


def __getattr__(name: str) -> Any:
    """The kit module's other names, read there each time (its state changes)."""
    return getattr(_kit, name)
