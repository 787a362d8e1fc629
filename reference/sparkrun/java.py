"""Whether this machine can run Spark (or Flink): Java 17 or newer on the PATH.

PySpark and Flink's jars start a JVM. Without a suitable Java they fail with a long JVM or py4j
stack trace; the suite's Spark and Flink legs and the Spark audit ask this module first and
skip, fail or refuse with one sentence instead.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

__all__ = [
    "JAVA_REQUIREMENT",
    "MINIMUM_JAVA",
    "java_major_version",
    "java_unavailable_reason",
    "spark_unavailable_reason",
]

MINIMUM_JAVA = 17
JAVA_REQUIREMENT = f"Spark needs Java {MINIMUM_JAVA} or newer"

_VERSION = re.compile(r'version "(?P<major>\d+)(?:\.(?P<minor>\d+))?')


def _java_executable(environ: dict[str, str] | None = None) -> str | None:
    env = os.environ if environ is None else environ
    java_home = env.get("JAVA_HOME")
    if java_home:
        candidate = os.path.join(java_home, "bin", "java")
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("java", path=env.get("PATH"))


def java_major_version(environ: dict[str, str] | None = None) -> int | None:
    """The major version of the ``java`` PySpark would start, or None if there is none."""
    executable = _java_executable(environ)
    if executable is None:
        return None
    try:
        completed = subprocess.run(
            [executable, "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = _VERSION.search(completed.stderr + completed.stdout)
    if match is None:
        return None
    major = int(match["major"])
    # Java 8 and older print "1.8.0_392": the major version is the second number.
    return int(match["minor"] or 0) if major == 1 else major


def java_unavailable_reason(
    requirement: str, minimum: int, environ: dict[str, str] | None = None
) -> str | None:
    """None when Java ``minimum`` or newer is here, else one sentence: ``requirement``, why not."""
    major = java_major_version(environ)
    if major is None:
        return f"{requirement} on the PATH (or in JAVA_HOME); no java was found."
    if major < minimum:
        return f"{requirement} on the PATH (or in JAVA_HOME); found Java {major}."
    return None


def spark_unavailable_reason(environ: dict[str, str] | None = None) -> str | None:
    """None when Spark can run here, else the one sentence that says why not."""
    return java_unavailable_reason(JAVA_REQUIREMENT, MINIMUM_JAVA, environ)
