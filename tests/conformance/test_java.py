"""The Java check that guards the Spark legs: one sentence, never a JVM stack trace."""

from __future__ import annotations

import os
import stat

from ckptconform.java import JAVA_REQUIREMENT, java_major_version, spark_unavailable_reason


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
