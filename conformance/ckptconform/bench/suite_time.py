"""The suite's own wall time per leg, for ``ckptconform bench --suite``.

Each leg is one ``ckptconform --impl ...`` run in a child process with the ``ci`` Hypothesis
profile (the gate's profile), in a temporary directory: ``local``, ``memory`` and ``moto``
(each with the Spark leg off) and ``spark`` (the SPK clauses on the local and moto backends,
where Spark can start here). The figure is the child's wall time, interpreter start included,
as a CI job pays it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["LEGS", "SuiteLeg", "time_leg"]

_SUMMARY = re.compile(r"\d+ (passed|failed|error|skipped).* in [0-9.]+s")

#: leg name -> ckptconform arguments
LEGS: dict[str, tuple[str, ...]] = {
    "local": ("--backend=local", "--spark-master=none"),
    "memory": ("--backend=memory", "--spark-master=none"),
    "moto": ("--backend=moto", "--spark-master=none"),
    "spark": ("--backend=local,moto", "-k", "test_spk"),
}


@dataclass(frozen=True)
class SuiteLeg:
    """One leg's run: its wall time, pytest's exit code and the last line it printed."""

    name: str
    seconds: float
    exit_code: int
    summary: str
    skipped: str | None = None


def spark_unavailable() -> str | None:
    """Why the Spark leg cannot run here (``None`` when it can)."""
    try:
        from ckptconform.spark import DEFAULT_MASTER, SparkLeg
    except ImportError as exc:  # pragma: no cover - part of the package
        return str(exc)
    return SparkLeg(DEFAULT_MASTER).availability()


def time_leg(impl: str, leg: str, extra: Sequence[str] = (), timeout: float = 1800.0) -> SuiteLeg:
    """Run the suite's ``leg`` against ``impl`` in a child process and time it."""
    if leg == "spark":
        reason = spark_unavailable()
        if reason is not None:
            return SuiteLeg(leg, 0.0, 0, "", skipped=reason)
    env = dict(os.environ)
    env["HYPOTHESIS_PROFILE"] = "ci"
    paths = [p for p in sys.path if p]
    env["PYTHONPATH"] = os.pathsep.join([*paths, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    with tempfile.TemporaryDirectory(prefix="ckptconform-bench-suite-") as work:
        command = [
            sys.executable, "-m", "ckptconform.cli", f"--impl={impl}", *LEGS[leg],
            f"--report-dir={work}/report", "-q", "-p", "no:cacheprovider", *extra,
        ]  # fmt: skip
        started = time.perf_counter()
        try:
            done = subprocess.run(
                command, cwd=work, env=env, capture_output=True, text=True, timeout=timeout,
                check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return SuiteLeg(leg, time.perf_counter() - started, -1, f"timed out after {timeout} s")
        seconds = time.perf_counter() - started
    summary = next(
        (line.strip("= ") for line in reversed(done.stdout.splitlines()) if _SUMMARY.search(line)),
        "",
    )
    return SuiteLeg(leg, seconds, done.returncode, summary)
