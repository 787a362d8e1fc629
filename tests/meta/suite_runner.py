"""Runs the installed conformance suite in a process of its own, as a user would, and reads
its report.

The suite runs from an empty directory with ``--impl`` and ``--conformance-report``; broken
implementations are found through ``fixtures/broken`` on ``PYTHONPATH``. The process is a
child forked from ``tests/meta/forkserver.py`` (the heavy imports done once; a new
interpreter with ``CKPTCONFORM_META_FORK=0``, as each run of ``fresh=True`` is).
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.meta.forkserver import ForkServer

REPO = Path(__file__).resolve().parents[2]
BROKEN_DIR = REPO / "fixtures" / "broken"
FAILING = {"FAIL", "WARN"}
_SERVER = ForkServer()
_STORAGE: str | None = None


@dataclass
class SuiteRun:
    """The outcome of one suite run: exit code, output and the parsed conformance.json."""

    command: list[str]
    returncode: int
    output: str
    report: dict[str, Any]

    def clause_status(self) -> dict[str, str]:
        return {cid: entry["status"] for cid, entry in self.report["clauses"].items()}

    def failing_clauses(self) -> set[str]:
        return {cid for cid, status in self.clause_status().items() if status in FAILING}

    def describe(self, clause_ids: set[str] | None = None) -> str:
        """The failing tests' messages (of the given clauses), for assertion messages."""
        lines = [" ".join(self.command), f"exit code {self.returncode}"]
        for test in self.report.get("tests", []):
            if test["status"] in FAILING and (
                clause_ids is None or clause_ids & set(test["clauses"])
            ):
                lines.append(f"{test['status']} {test['nodeid']}: {test.get('message', '')[:600]}")
        return "\n".join(lines)


def _hypothesis_storage() -> str:
    """A directory of this process for hypothesis's caches, removed when it exits."""
    global _STORAGE
    if _STORAGE is None:
        _STORAGE = tempfile.mkdtemp(prefix="ckptconform-hypothesis-")
        atexit.register(shutil.rmtree, _STORAGE, ignore_errors=True)
    return _STORAGE


def run_suite(
    impl: str,
    backends: str,
    workdir: Path,
    *extra: str,
    profile: str = "ci",
    timeout: int = 900,
    fresh: bool = False,
) -> SuiteRun:
    """Run ``pytest --impl=<impl>`` in ``workdir`` with a hypothesis profile; return its report
    (in a new interpreter when ``fresh``, else forked from the fork server)."""
    report_dir = workdir / "report"
    args = [
        f"--impl={impl}",
        f"--backend={backends}",
        f"--conformance-report={report_dir}",
        "-p",
        "no:cacheprovider",
        # pytest's unraisable-exception plugin collects the garbage twice as a run ends, about
        # 0.2 s of CPU a run after the kit, the reference and botocore's models are loaded;
        # what it would report is a warning, which the report the meta-tests read never holds
        "-p",
        "no:unraisableexception",
        "-q",
        *extra,
    ]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(BROKEN_DIR), env.get("PYTHONPATH", "")) if p
    )
    env["HYPOTHESIS_PROFILE"] = profile
    # the constants hypothesis reads from the source of local modules, cached once for all runs
    # instead of in each run's empty directory (its profiles keep no example database)
    env.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", _hypothesis_storage())
    env.pop("PYTEST_ADDOPTS", None)
    command = [sys.executable, "-m", "pytest", *args]
    if fresh or os.environ.get("CKPTCONFORM_META_FORK", "1") == "0":
        completed = subprocess.run(
            command,
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        returncode, output = completed.returncode, completed.stdout + completed.stderr
    else:
        returncode, output = _SERVER.run(args, workdir, env, timeout)
    report_file = report_dir / "conformance.json"
    if not report_file.exists():
        raise AssertionError(
            f"no conformance.json written by {' '.join(command)}\n{output[-4000:]}"
        )
    report = json.loads(report_file.read_text(encoding="utf-8"))
    return SuiteRun(command, returncode, output, report)
