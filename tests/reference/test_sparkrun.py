"""``sparkrun``: the Java check that guards the Spark legs (one sentence, never a JVM stack
trace) and a session's wait for its executors (bounded)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from typing import Any

import pytest

import sparkrun
from sparkrun.java import JAVA_REQUIREMENT, java_major_version, spark_unavailable_reason


def _fake_java(directory, banner: str):
    java = directory / "java"
    java.write_text(f"#!/bin/sh\necho '{banner}' >&2\n")
    java.chmod(java.stat().st_mode | stat.S_IEXEC)
    return {"PATH": str(directory)}


def test_no_java_gives_the_sentence(tmp_path):
    reason = spark_unavailable_reason({"PATH": str(tmp_path)})
    assert reason is not None
    assert reason.startswith(JAVA_REQUIREMENT)
    assert "no java was found" in reason


def test_old_java_gives_the_sentence(tmp_path):
    env = _fake_java(tmp_path, 'openjdk version "11.0.20" 2023-07-18')
    assert java_major_version(env) == 11
    reason = spark_unavailable_reason(env)
    assert reason is not None
    assert reason.startswith(JAVA_REQUIREMENT)
    assert "found Java 11" in reason


def test_java_8_version_scheme(tmp_path):
    env = _fake_java(tmp_path, 'java version "1.8.0_392"')
    assert java_major_version(env) == 8


def test_java_17_is_enough(tmp_path):
    env = _fake_java(tmp_path, 'openjdk version "17.0.15" 2025-04-15')
    assert java_major_version(env) == 17
    assert spark_unavailable_reason(env) is None


def test_java_home_wins_over_path(tmp_path):
    home = tmp_path / "jdk"
    (home / "bin").mkdir(parents=True)
    _fake_java(home / "bin", 'openjdk version "21.0.1" 2023-10-17')
    old = tmp_path / "old"
    old.mkdir()
    env = _fake_java(old, 'openjdk version "11.0.1" 2018-10-16')
    env["JAVA_HOME"] = str(home)
    assert java_major_version(env) == 21


def test_this_machine_reports_consistently():
    """On CI machines (Java 17) Spark is available; elsewhere the sentence names the need."""
    reason = spark_unavailable_reason(dict(os.environ))
    assert reason is None or reason.startswith(JAVA_REQUIREMENT)


def test_a_cluster_whose_executors_do_not_register_is_refused_in_bounded_time() -> None:
    class NoExecutors:  # what py4j answers for a cluster without free resources
        def __getattr__(self, name: str) -> Any:
            return self

        def __call__(self, *args: Any) -> Any:
            return self

        def size(self) -> int:
            return 0

    with pytest.raises(sparkrun.ExecutorsMissingError, match="0 of 2 executors"):
        sparkrun.await_executors(NoExecutors(), "local-cluster[2,1,1024]", 0.3)
    with pytest.raises(sparkrun.ExecutorsMissingError, match="0 of 1 executors"):
        sparkrun.await_executors(NoExecutors(), "spark://127.0.0.1:7077", 0.3)
    assert sparkrun.await_executors(NoExecutors(), "local[2]", 0.3) == []  # the driver runs tasks


def test_sparkrun_imports_nothing_of_the_reference_or_the_kit() -> None:
    code = (
        "import sys, sparkrun\n"
        "print(sorted(m for m in sys.modules if m.startswith(('ckpt', 'pyspark', 'py4j'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
