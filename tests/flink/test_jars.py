"""flinktarget.jars and the target objects: no JVM needed, so these run everywhere."""

from __future__ import annotations

import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from flinktarget import jars

REPO = Path(__file__).resolve().parents[2]


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("CKPTCONFORM_CACHE", str(tmp_path))
    assert jars.cache_dir() == tmp_path / "flink-2.3.0"
    assert jars.cached_jars() is None


def test_no_jars_in_the_cache_is_one_sentence(monkeypatch, tmp_path):
    monkeypatch.setenv("CKPTCONFORM_CACHE", str(tmp_path))
    reason = jars.unavailable_reason(download=False)
    if jars.java_unavailable_reason() is None:
        assert reason is not None
        assert "not in the cache" in reason
        assert "\n" not in reason


def test_no_java_is_one_sentence(tmp_path):
    reason = jars.java_unavailable_reason({"PATH": str(tmp_path)})
    assert reason == (
        "The flink target needs Java 11 or newer on the PATH (or in JAVA_HOME); no java was found."
    )


def test_old_java_is_one_sentence(tmp_path):
    java = tmp_path / "java"
    java.write_text("#!/bin/sh\necho 'java version \"1.8.0_392\"' >&2\n")
    java.chmod(java.stat().st_mode | stat.S_IEXEC)
    reason = jars.java_unavailable_reason({"PATH": str(tmp_path)})
    assert reason is not None
    assert reason.endswith("found Java 8.")


def test_loading_without_java_names_the_reason(monkeypatch, tmp_path):
    """--impl=flink on a machine without Java: one sentence, not a JVM stack trace."""
    import flinktarget

    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(jars.FlinkUnavailableError, match="needs Java 11 or newer"):
        flinktarget.conformance_target()


def test_entry_points_name_the_targets():
    with open(REPO / "pyproject.toml", "rb") as handle:
        project = tomllib.load(handle)["project"]
    entries = project["entry-points"]["ckptconform.targets"]
    assert entries["flink"] == "flinktarget:conformance_target"
    assert entries["flink-jobmanager"] == "flinktarget:jobmanager_target"
    assert "flink" in project["optional-dependencies"]


def test_targets_validate_against_the_catalog():
    """Capabilities, options and known failures are names the suite knows."""
    from ckptconform.target import validate_target
    from flinktarget import jobmanager_target_unchecked, target_unchecked

    fs = validate_target(target_unchecked, spec="flink")
    assert fs.schemes == frozenset({"file"})
    assert "fast-duplicate" not in fs.capabilities
    assert "entropy-injection" not in fs.capabilities
    assert fs.options == frozenset({"inline_threshold", "write_buffer_size", "create_subdir"})
    jm = validate_target(jobmanager_target_unchecked, spec="flink-jobmanager")
    assert "memory-limit" in jm.capabilities
    assert jm.options == frozenset({"max_state_size"})
    for reason in [*fs.known_failures.values(), *jm.known_failures.values()]:
        assert reason.startswith(("Flink bug: ", "beyond Flink: ")), reason


def test_the_header_shows_flinks_version():
    """The target says which Flink it runs (2.3.0), not the version of the adapter's package."""
    from ckptconform.target import load_target

    for spec in ("flinktarget:target_unchecked", "flinktarget:jobmanager_target_unchecked"):
        target = load_target(spec)
        assert target.version == jars.FLINK_VERSION == "2.3.0"
        assert target.describe().startswith(f"{target.name} 2.3.0 (--impl={spec}")


def test_ckptconform_never_imports_flinktarget():
    sources = (REPO / "conformance" / "ckptconform").rglob("*.py")
    offenders = [str(p) for p in sources if "flinktarget" in p.read_text()]
    assert offenders == []


def test_importing_the_target_starts_no_jvm():
    code = (
        "import flinktarget, flinktarget.storage, flinktarget.gateway as g; "
        "t = flinktarget.target_unchecked; assert g._current is None, g._current"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
