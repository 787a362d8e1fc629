"""Flink 2.3.0's own loader against ckptstore.flink_metadata (needs Java; the Flink leg).

For every ``_metadata`` of every fixture archive (``fixtures/flink/*.tar.gz``: trees of real
Flink 2.3.0 jobs, RocksDB incremental, unaligned, file merging, savepoints of both formats) and
for metadata the Python writer makes from at
least 200 hypothesis-drawn values, ``Checkpoints.loadCheckpointMetadata`` loads the bytes and
agrees with the Python reader on the checkpoint id, the master states, the operators (id,
parallelism, maximum parallelism, name, uid, finished subtasks, coordinator state) and every
stream state handle with its path, size and offsets; and what Flink writes back
(``Checkpoints.storeCheckpointMetadata``, version 6) reads in Python as the same values, except
for what Flink itself makes up when the bytes lack it (a state handle id, the checkpointed size
of an old incremental handle, a changelog's storage identifier or checkpoint id). Run it with
``CKPTCONFORM_FLINK=1 python -m pytest tests/flink/test_flink_metadata.py``. The kinds of
handles each tree's ``MANIFEST.json`` records are checked against Flink's loader here too.
"""

from __future__ import annotations

import dataclasses
import itertools
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from ckptstore.flink_metadata import (
    ByteStreamHandle,
    CheckpointMetadata,
    EmptySegmentFileHandle,
    FileHandle,
    KeyGroupsHandle,
    OperatorStateHandle,
    RelativeFileHandle,
    SegmentFileHandle,
    read_metadata,
    stream_handles,
    write_metadata,
)
from tests.reference import _flink_metadata_strategies as strategies
from tests.reference._flink_trees import ARCHIVES, MANIFEST_TREES, Tree, unpack

EXAMPLES = 200
#: fields Flink fills in itself when the bytes (an older tag) lack them
MADE_UP_BY_FLINK = {"handle_id", "checkpointed_size", "checkpoint_id", "storage_identifier"}
#: how many ``_metadata`` the archive without a MANIFEST.json holds
INLINE0_METADATA = 4


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Tree]:
    """Every fixture archive, unpacked, by name."""
    unpacked = [unpack(a, tmp_path_factory.mktemp("flink-tree") / a.name) for a in ARCHIVES]
    return {t.name: t for t in unpacked}


@pytest.fixture(scope="module", autouse=True)
def flink_properties(trees: dict[str, Tree]) -> None:
    blobs = {
        read_metadata((d / "_metadata").read_bytes()).properties
        for t in trees.values()
        for d in t.metadata_dirs()
    }
    strategies.with_properties(sorted(b for b in blobs if b is not None))


def python_summary(metadata: CheckpointMetadata, directory: Path) -> dict[str, Any]:
    """What ``flinktarget.metadata.summary`` says of Flink's object, from the Python values."""
    operators = []
    for op in metadata.operators:
        coordinator = op.coordinator_state
        operators.append(
            {
                "id": op.operator_id_hex,
                "parallelism": op.parallelism,
                "max_parallelism": op.max_parallelism,
                "name": op.name,
                "uid": op.uid,
                "fully_finished": op.subtasks is None,
                "coordinator_size": None if coordinator is None else coordinator.state_size,
                "subtasks": {e.index: e.state is None for e in op.subtasks or ()},
            }
        )
    return {
        "checkpoint_id": metadata.checkpoint_id,
        "masters": [(m.name, m.version, len(m.data)) for m in metadata.master_states],
        "operators": operators,
        "streams": [_entry(h, directory) for h in stream_handles(metadata)],
    }


def _entry(handle: Any, directory: Path) -> tuple[Any, ...]:
    if isinstance(handle, RelativeFileHandle):
        resolved = f"file:{directory}/{handle.relative_path}"
        return ("relative", handle.relative_path, handle.state_size, resolved)
    if isinstance(handle, FileHandle):
        return ("file", handle.path, handle.state_size)
    if isinstance(handle, ByteStreamHandle):
        return ("bytes", handle.name, handle.state_size)
    if isinstance(handle, SegmentFileHandle):
        scope = int(handle.scope)
        return (
            "segment",
            handle.path,
            handle.start,
            handle.state_size,
            scope,
            handle.logical_file_id,
        )
    if isinstance(handle, EmptySegmentFileHandle):
        return ("empty-segment",)
    assert isinstance(handle, KeyGroupsHandle)
    return ("key-groups", handle.key_group_start, handle.offsets)


def assert_flink_agrees(data: bytes, directory: Path) -> None:
    """Flink loads ``data`` (the ``_metadata`` of ``directory``) as the Python reader does."""
    from flinktarget import metadata as flink

    ours = read_metadata(data)
    loaded = flink.load(data, directory.as_uri())
    theirs = flink.summary(loaded)
    expected = python_summary(ours, directory)
    assert theirs["checkpoint_id"] == expected["checkpoint_id"]
    assert theirs["masters"] == expected["masters"]
    assert theirs["operators"] == expected["operators"]
    assert Counter(theirs["streams"]) == Counter(expected["streams"])
    rewritten = read_metadata(flink.store(loaded))
    assert rewritten.version == 6
    assert_same(ours, rewritten, "metadata")


def assert_same(ours: Any, flinks: Any, where: str) -> None:
    """``ours`` equals what Flink wrote back, but for fields Flink makes up (absent in ours)."""
    if dataclasses.is_dataclass(ours) and not isinstance(ours, type):
        assert type(ours) is type(flinks), where
        for field in dataclasses.fields(ours):
            mine, other = getattr(ours, field.name), getattr(flinks, field.name)
            if field.name in ("version", "properties") and isinstance(ours, CheckpointMetadata):
                continue
            if field.name in MADE_UP_BY_FLINK and mine is None:
                continue
            if field.name == "partitions" and isinstance(ours, OperatorStateHandle):
                mine, other = sorted(mine, key=_name), sorted(other, key=_name)
            assert_same(mine, other, f"{where}.{field.name}")
    elif isinstance(ours, tuple):
        assert isinstance(flinks, tuple), where
        assert len(ours) == len(flinks), where
        for index, (mine, other) in enumerate(zip(ours, flinks, strict=True)):
            assert_same(mine, other, f"{where}[{index}]")
    else:
        assert ours == flinks, where


def _name(partition: Any) -> str:
    return str(partition.name)


def _tree_names() -> list[str]:
    return [a.name.removeprefix("flink-2.3.0-").removesuffix(".tar.gz") for a in ARCHIVES]


@pytest.mark.parametrize("name", _tree_names())
def test_flink_and_the_reader_agree_on_every_fixture(
    flink_ready: None, trees: dict[str, Tree], name: str
) -> None:
    tree = trees[name]
    directories = tree.metadata_dirs()
    if tree.manifest is None:
        assert len(directories) == INLINE0_METADATA
    else:
        completed = [e for e in tree.manifest["checkpoints"] if e["state"] == "completed"]
        assert len(directories) == len(completed)
    for directory in directories:
        assert_flink_agrees((directory / "_metadata").read_bytes(), directory)


@pytest.mark.parametrize("name", MANIFEST_TREES)
def test_the_manifest_records_what_flink_loads(
    flink_ready: None, trees: dict[str, Tree], name: str
) -> None:
    """Each completed entry's id and handle classes are what Flink loads from the tree."""
    from flinktarget import metadata as flink

    tree = trees[name]
    assert tree.manifest is not None
    for entry in tree.manifest["checkpoints"]:
        if entry["state"] != "completed":
            continue
        directory = tree.directory / entry["path"]
        loaded = flink.load((directory / "_metadata").read_bytes(), directory.as_uri())
        assert int(loaded.getCheckpointId()) == entry["checkpoint_id"]
        assert dict(flink.handle_classes(loaded)) == entry["handle_classes"], entry["path"]
        inline = sum(s[2] for s in flink.summary(loaded)["streams"] if s[0] == "bytes")
        assert inline == entry["inline_bytes"]


def test_flink_loads_what_the_writer_writes(flink_ready: None) -> None:
    seen = itertools.count()
    with tempfile.TemporaryDirectory(prefix="ckpt-metadata-") as scratch:
        directories = (Path(scratch) / f"chk-{n}" for n in itertools.count())

        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(strategies.checkpoint_metadata())
        def check(metadata: CheckpointMetadata) -> None:
            data = write_metadata(metadata)
            assert read_metadata(data) == metadata
            directory = next(directories)
            directory.mkdir()
            (directory / "_metadata").write_bytes(data)
            assert_flink_agrees(data, directory)
            next(seen)

        check()
    assert next(seen) >= EXAMPLES
