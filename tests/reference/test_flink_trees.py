"""The reference against the checkpoint trees of real Flink 2.3.0 jobs (``fixtures/flink/``).

No Java: every ``_metadata`` of every archive reads with ``read_metadata`` and writes back to
the same bytes, and for the archives ``scripts/flink_trees.py`` made, what Flink's own loader
recorded in ``MANIFEST.json`` holds of the unpacked tree and of the reference: the files each
completed checkpoint or savepoint references (``admin.references.checkpoint_references``, the
original root mapped onto the unpacked directory), its inline bytes, the kinds of handles it
holds, which directories are in flight and which files are orphans.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from ckptstore.admin.references import checkpoint_references
from ckptstore.flink_metadata import (
    CheckpointMetadata,
    FileHandle,
    IncrementalHandle,
    KeyGroupsHandle,
    MergedInputChannelHandle,
    SegmentFileHandle,
    read_metadata,
    stream_handles,
    write_metadata,
)
from ckptstore.paths import parse_storage_path
from tests.reference._flink_trees import ARCHIVES, FIXTURES, MANIFEST_TREES, Tree, unpack

#: Flink's handle classes (simple names) as the reader's value classes
FLINK_TO_PYTHON = {
    "ByteStreamStateHandle": "ByteStreamHandle",
    "FileStateHandle": "FileHandle",
    "RelativeFileStateHandle": "RelativeFileHandle",
    "SegmentFileStateHandle": "SegmentFileHandle",
    "EmptySegmentFileStateHandle": "EmptySegmentFileHandle",
    "KeyGroupsStateHandle": "KeyGroupsHandle",
    "KeyGroupsSavepointStateHandle": "KeyGroupsHandle",
    "IncrementalRemoteKeyedStateHandle": "IncrementalHandle",
    "OperatorStreamStateHandle": "OperatorStateHandle",
    "FileMergingOperatorStreamStateHandle": "OperatorStateHandle",
    "EmptyFileMergingOperatorStreamStateHandle": "OperatorStateHandle",
    "InputChannelStateHandle": "InputChannelHandle",
    "ResultSubpartitionStateHandle": "ResultSubpartitionHandle",
    "MergedInputChannelStateHandle": "MergedInputChannelHandle",
    "MergedResultSubpartitionStateHandle": "MergedResultSubpartitionHandle",
}


def _name(archive: Path) -> str:
    return archive.name.removeprefix("flink-2.3.0-").removesuffix(".tar.gz")


def _unpack(archive: Path, factory: pytest.TempPathFactory) -> Tree:
    return unpack(archive, factory.mktemp("flink-trees") / _name(archive))


@pytest.fixture(scope="module", params=ARCHIVES, ids=_name)
def tree(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Tree:
    """Every archive of fixtures/flink/, unpacked."""
    return _unpack(request.param, tmp_path_factory)


@pytest.fixture(scope="module", params=MANIFEST_TREES)
def made(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Tree:
    """A tree made by scripts/flink_trees.py, with its MANIFEST.json."""
    archive = FIXTURES / f"flink-2.3.0-{request.param}.tar.gz"
    assert archive.is_file(), f"{archive} is missing: python scripts/flink_trees.py makes it"
    made = _unpack(archive, tmp_path_factory)
    assert made.manifest is not None, f"{archive.name} holds no MANIFEST.json"
    return made


def test_the_manifest_trees_are_all_there() -> None:
    names = {_name(a) for a in ARCHIVES}
    assert set(MANIFEST_TREES) <= names, f"missing fixture archives: {set(MANIFEST_TREES) - names}"


def test_every_metadata_reads_and_writes_back_byte_for_byte(tree: Tree) -> None:
    directories = tree.metadata_dirs()
    assert directories
    for directory in directories:
        data = (directory / "_metadata").read_bytes()
        metadata = read_metadata(data)
        assert metadata.version == 6, directory
        assert write_metadata(metadata) == data, directory
    if tree.manifest is not None:
        completed = [e for e in tree.manifest["checkpoints"] if e["state"] == "completed"]
        assert sorted(e["path"] for e in completed) == sorted(
            str(d.relative_to(tree.directory)) for d in directories
        )


def test_the_manifest_describes_the_unpacked_tree(made: Tree) -> None:
    manifest = made.manifest
    assert manifest is not None
    assert manifest["root"] == f"file:///tmp/ckptconform-flink-trees/{made.name}"
    assert manifest["flink_version"] == "2.3.0"
    on_disk = {
        str(p.relative_to(made.directory)): p.stat().st_size
        for p in made.directory.rglob("*")
        if p.is_file()
    }
    assert len(on_disk) == manifest["file_count"]
    assert sum(on_disk.values()) == manifest["total_bytes"]
    accounted: set[str] = set()
    for entry in manifest["checkpoints"]:
        directory = made.directory / entry["path"]
        assert directory.is_dir(), entry["path"]
        if entry["state"] == "in-flight":
            assert not (directory / "_metadata").exists()
            continue
        accounted.add(f"{entry['path']}/_metadata")
        assert on_disk[f"{entry['path']}/_metadata"] == entry["metadata_size"]
        for item in entry["files"]:
            assert on_disk.get(item["path"]) == item["size"], item
            if item["size"] is not None:
                accounted.add(item["path"])
        assert entry["intact"] == all(
            f["size"] is not None and f["size"] >= f["needed_bytes"] for f in entry["files"]
        )
    orphans = {o["path"]: o["size"] for o in manifest["orphans"]}
    assert all(on_disk[path] == size for path, size in orphans.items())
    assert accounted.isdisjoint(orphans)
    assert accounted | set(orphans) == set(on_disk)
    assert all(path not in on_disk for path in manifest["missing"])


def test_the_references_are_those_flink_found(made: Tree) -> None:
    assert made.manifest is not None
    for entry in made.manifest["checkpoints"]:
        if entry["state"] != "completed":
            continue
        directory = made.directory / entry["path"]
        metadata = read_metadata((directory / "_metadata").read_bytes())
        refs = checkpoint_references(metadata, parse_storage_path(str(directory)))
        assert refs.checkpoint_id == entry["checkpoint_id"]
        assert refs.unresolved == ()
        assert refs.inline_bytes == entry["inline_bytes"], entry["path"]
        ours = sorted(
            (made.relative_path(f.url), f.needed_bytes, f.handles, f.relative) for f in refs.files
        )
        flinks = sorted(
            (f["path"], f["needed_bytes"], f["handles"], f["relative"]) for f in entry["files"]
        )
        assert ours == flinks, entry["path"]


def python_kinds(metadata: CheckpointMetadata) -> Counter[str]:
    """The reader's value classes of every handle, as Flink's ``handle_classes`` counts them."""
    counts = Counter(type(h).__name__ for h in stream_handles(metadata))
    for operator in metadata.operators:
        for entry in operator.subtasks or ():
            state = entry.state
            if state is None:
                continue
            for handle in (
                state.managed_operator,
                state.raw_operator,
                state.managed_keyed,
                state.raw_keyed,
                *state.input_channels,
                *state.result_subpartitions,
            ):
                if handle is not None and not isinstance(handle, KeyGroupsHandle):
                    counts[type(handle).__name__] += 1
    return counts


def test_the_handle_kinds_are_those_flink_found(made: Tree) -> None:
    assert made.manifest is not None
    for entry in made.manifest["checkpoints"]:
        if entry["state"] != "completed":
            continue
        unknown = set(entry["handle_classes"]) - set(FLINK_TO_PYTHON)
        assert not unknown, f"Flink handle classes this test does not map: {unknown}"
        expected: Counter[str] = Counter()
        for flink_class, count in entry["handle_classes"].items():
            expected[FLINK_TO_PYTHON[flink_class]] += count
        metadata = read_metadata((made.directory / entry["path"] / "_metadata").read_bytes())
        assert python_kinds(metadata) == expected, entry["path"]


def _completed(tree: Tree) -> dict[str, CheckpointMetadata]:
    assert tree.manifest is not None
    return {
        e["path"]: read_metadata((tree.directory / e["path"] / "_metadata").read_bytes())
        for e in tree.manifest["checkpoints"]
        if e["state"] == "completed"
    }


def test_each_tree_holds_what_it_was_made_for(made: Tree) -> None:
    manifest = made.manifest
    assert manifest is not None
    entries = manifest["checkpoints"]
    kinds = Counter(c for e in entries for c in e.get("handle_classes", {}))
    completed = _completed(made)
    handles = [h for m in completed.values() for h in stream_handles(m)]
    if made.name == "rocksdb-incremental":
        first, claimed = (j["job_id"] for j in manifest["jobs"])
        assert manifest["jobs"][1]["config"]["execution.state-recovery.claim-mode"] == "CLAIM"
        assert {e.get("format") for e in entries if e["kind"] == "savepoint"} == {
            "canonical",
            "native",
        }
        assert any(e["state"] == "in-flight" for e in entries)
        assert kinds["IncrementalRemoteKeyedStateHandle"] > 0
        shared = Counter(
            f["path"]
            for e in entries
            if e["kind"] == "checkpoint" and e["state"] == "completed"
            for f in e["files"]
            if "/shared/" in f["path"]
        )
        assert max(shared.values()) >= 2, "retained checkpoints share files in shared/"
        assert any(
            f"checkpoints/{first}/shared/" in f["path"]
            for e in entries
            if e.get("job_id") == claimed and e["state"] == "completed"
            for f in e["files"]
        ), "the claimed job references the first job's files"
        assert any(isinstance(m, IncrementalHandle) for m in _keyed(completed))
    elif made.name == "hashmap-unaligned":
        assert kinds["MergedInputChannelStateHandle"] > 0
        assert kinds["ByteStreamStateHandle"] > 0, "small state inline"
        assert kinds["RelativeFileStateHandle"] > 0, "larger state in files"
        assert any(e["state"] == "in-flight" for e in entries)
        channels = [
            c
            for m in completed.values()
            for op in m.operators
            for s in op.subtasks or ()
            if s.state is not None
            for c in s.state.input_channels
        ]
        assert any(isinstance(c, MergedInputChannelHandle) for c in channels)
    elif made.name == "file-merging":
        assert kinds["SegmentFileStateHandle"] > 0
        assert any(isinstance(h, SegmentFileHandle) for h in handles)
        assert all(
            "/shared/job_" in f["path"] or "/taskowned/job_" in f["path"]
            for e in entries
            if e["kind"] == "checkpoint" and e["state"] == "completed"
            for f in e["files"]
        ), "merged checkpoints reference only the file-merging directories"
    assert not any(
        isinstance(h, FileHandle) and "ckptconform-flink-trees" not in h.path for h in handles
    )


def _keyed(completed: dict[str, CheckpointMetadata]) -> list[object]:
    return [
        s.state.managed_keyed
        for m in completed.values()
        for op in m.operators
        for s in op.subtasks or ()
        if s.state is not None and s.state.managed_keyed is not None
    ]
