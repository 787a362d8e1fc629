"""Fixtures of the Flink target's tests: skipped, with the reason, where Flink cannot run.

The JVM tests run where Java (11+) and py4j are present and Flink 2.3.0's jars are already in
the cache (``flinktarget.jars.cache_dir()``), or where ``CKPTCONFORM_FLINK=1`` asks for them (the
``flink`` tox environment): then the jars are fetched with pip on first use. Elsewhere every
test that needs the JVM is skipped with one sentence that says why, and the default CI pays
nothing for them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def _requested() -> bool:
    return os.environ.get("CKPTCONFORM_FLINK", "").strip() not in ("", "0", "false", "False")


@pytest.fixture(scope="session")
def flink_ready() -> None:
    """Skip (with the reason) unless Flink's storages can run in this process."""
    from flinktarget.jars import unavailable_reason

    reason = unavailable_reason(download=_requested())
    if reason is not None:
        if _requested() and os.environ.get("CKPTCONFORM_FLINK_REQUIRED"):
            pytest.fail(f"the Flink leg is required but cannot run: {reason}")
        pytest.skip(reason)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture
def flink_storage(flink_ready: None, root: Path):  # type: ignore[no-untyped-def]
    """Flink's FileSystemCheckpointStorage on ``root`` (threshold 100, savepoints configured)."""
    from flinktarget import target_unchecked

    return target_unchecked.make_storage(
        checkpoint_dir=(root / "checkpoints").as_uri(),
        savepoint_dir=(root / "savepoints").as_uri(),
        options={"inline_threshold": 100, "write_buffer_size": 4096},
    )


@pytest.fixture
def jobmanager_storage(flink_ready: None, root: Path):  # type: ignore[no-untyped-def]
    """Flink's JobManagerCheckpointStorage on ``root`` with a 1000-byte limit."""
    from flinktarget import jobmanager_target_unchecked

    return jobmanager_target_unchecked.make_storage(
        checkpoint_dir=(root / "checkpoints").as_uri(),
        savepoint_dir=(root / "savepoints").as_uri(),
        options={"max_state_size": 1000},
    )
