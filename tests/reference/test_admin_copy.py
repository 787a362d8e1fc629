"""``ckptstore.admin.copy``: a self-contained copy of a completed checkpoint.

The copy holds every file the source's ``_metadata`` references (the checkpoint's own at
their relative place, every other one below ``_external/<scheme>/<path>``) with the same
bytes, and a ``_metadata`` whose handles name only files of the copy, spelled as Flink spells
paths; the source may then go. Within one store the files are copied server-side (on S3 one
CopyObject each), across stores streamed. A destination that holds anything, a missing or
short source file refuse the copy before anything is written; a failure midway lists what was
copied and leaves no ``_metadata``. Flink's own loader reads copies in
``tests/flink/test_admin_copy.py``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import tarfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec
import pytest

from ckptstore.admin import copy as admin_copy
from ckptstore.admin.copy import (
    CopyFailedError,
    DestinationNotEmptyError,
    IncompleteCheckpointError,
    copy_checkpoint,
)
from ckptstore.admin.references import checkpoint_references
from ckptstore.admin.relocation import RelocationError, flink_spelling, relocate_metadata
from ckptstore.errors import StateSizeMismatchError
from ckptstore.flink_metadata import (
    FileHandle,
    FileMergingDirectories,
    RelativeFileHandle,
    SegmentFileHandle,
    read_metadata,
    stream_handles,
    write_metadata,
)
from ckptstore.flink_metadata import values as v
from ckptstore.paths import StoragePath, parse_storage_path
from tests.reference._copy_tree import INSIDE, UNREFERENCED, SourceTree, build_tree
from tests.reference._moto import S3Root

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "fixtures" / "flink" / "flink-2.3.0-hashmap-inline0.tar.gz"


# --------------------------------------------------------------------------- helpers


def expected_place(tree: SourceTree, relative: str, dest: StoragePath) -> StoragePath:
    """Where the documented layout puts the source file ``relative`` (to the tree's base)."""
    location = tree.base.child(relative)
    prefix = tree.directory.path + "/"
    if location.path.startswith(prefix):
        return dest.child(location.path[len(prefix) :])
    return dest.child(f"_external/{location.scheme}/{location.path.lstrip('/')}")


def referenced(tree: SourceTree) -> list[str]:
    return sorted(set(tree.contents) - UNREFERENCED)


def check_copy(tree: SourceTree, dest: StoragePath, raw: Any) -> v.CheckpointMetadata:
    """The copy at ``dest`` (read through ``raw``) is whole, self-contained and Flink-spelled."""
    copied = read_metadata(bytes(raw.cat_file(dest.child("_metadata").path)))
    refs = checkpoint_references(copied, dest)
    assert refs.unresolved == ()
    assert all(f.url.startswith(dest.url + "/") for f in refs.files)
    places = {expected_place(tree, name, dest).url: name for name in referenced(tree)}
    assert {f.url for f in refs.files} == set(places)
    for reference in refs.files:
        data = bytes(raw.cat_file(parse_storage_path(reference.url).path))
        assert data == tree.contents[places[reference.url]]
        assert len(data) >= reference.needed_bytes
    for name in UNREFERENCED:
        assert not raw.exists(expected_place(tree, name, dest).path)
    for handle in stream_handles(copied):
        if isinstance(handle, FileHandle | SegmentFileHandle):
            assert handle.path == flink_spelling(parse_storage_path(handle.path))
    relative = sorted(
        h.relative_path for h in stream_handles(copied) if isinstance(h, RelativeFileHandle)
    )
    original = sorted(
        h.relative_path for h in stream_handles(tree.metadata) if isinstance(h, RelativeFileHandle)
    )
    assert relative == original
    return copied


def remove(raw: Any, location: StoragePath) -> None:
    with contextlib.suppress(FileNotFoundError):
        raw.rm(location.path, recursive=True)


@pytest.fixture
def local_base(tmp_path: Path) -> str:
    return parse_storage_path(str(tmp_path / "source")).url


@pytest.fixture
def memory_base() -> Iterator[str]:
    raw = fsspec.filesystem("memory")
    path = f"/copy-test-{uuid.uuid4().hex}"
    try:
        yield f"memory://{path}"
    finally:
        with contextlib.suppress(FileNotFoundError):
            raw.rm(path, recursive=True)


LOCAL = fsspec.filesystem("file")
MEMORY = fsspec.filesystem("memory")


# --------------------------------------------------------------------------- copies


def test_local_to_local_copy_is_whole_and_outlives_its_source(
    local_base: str, tmp_path: Path
) -> None:
    tree = build_tree(LOCAL, local_base)
    dest = parse_storage_path(str(tmp_path / "dr" / "chk-5"))
    result = copy_checkpoint(tree.pointer + "/_metadata", str(tmp_path / "dr" / "chk-5"))
    assert result.checkpoint_id == 5
    assert result.source == tree.directory.url
    assert result.destination == dest.url
    assert len(result.files) == len(referenced(tree)) == 9
    assert result.server_side == 9  # one local file system: hard links
    remove(LOCAL, tree.base)
    copied = check_copy(tree, dest, LOCAL)
    handles = list(stream_handles(copied))
    absolute = {h.path for h in handles if isinstance(h, FileHandle | SegmentFileHandle)}
    assert f"file:{dest.path}/raw-operator" in absolute
    assert f"file:{dest.path}/_external/file{tree.base.path}/other/shared/sst-9" in absolute
    merging = [
        h.file_merging
        for op in copied.operators
        for entry in op.subtasks or ()
        if entry.state and (h := entry.state.managed_operator) and h.file_merging
    ]
    assert merging
    assert all(
        m
        == FileMergingDirectories(
            f"file:{dest.path}/_external/file{tree.base.path}/job/taskowned/tm-1",
            f"file:{dest.path}/_external/file{tree.base.path}/job/shared/op-1",
            False,
        )
        for m in merging
    )
    # what is not a path is the source's: inline bytes, master states, properties, ids
    assert copied.master_states == tree.metadata.master_states
    assert copied.properties == tree.metadata.properties
    assert [op.coordinator_state for op in copied.operators] == [
        op.coordinator_state for op in tree.metadata.operators
    ]


def test_local_to_moto_streams_every_file(local_base: str, s3: S3Root) -> None:
    tree = build_tree(LOCAL, local_base)
    dest = parse_storage_path(s3.sub("dr", "chk-5"))
    with s3.record() as recording:
        result = copy_checkpoint(tree.pointer, dest.url, dest_storage_options=s3.storage_options)
    assert result.server_side == 0
    assert len(result.files) == 9
    assert recording.count("PutObject", key_contains="/dr/chk-5/") >= 10  # 9 files + _metadata
    assert recording.count("CopyObject") == 0
    remove(LOCAL, tree.base)
    copied = check_copy(tree, dest, s3.raw)
    paths = [h.path for h in stream_handles(copied) if isinstance(h, FileHandle)]
    assert paths
    assert all(p.startswith(f"s3://{dest.path}/") for p in paths)


def test_moto_to_moto_copies_server_side(s3: S3Root) -> None:
    tree = build_tree(s3.raw, s3.sub("source"))
    dest = parse_storage_path(s3.sub("dr", "chk-5"))
    options = s3.storage_options
    with s3.record() as recording:
        result = copy_checkpoint(tree.pointer, dest.url, storage_options=options)
    assert result.server_side == len(result.files) == 9
    assert recording.count("CopyObject") == 9
    # no state file's bytes pass through this process: one GET, of the source's _metadata
    assert recording.count("GetObject") == 1
    s3.raw.rm(tree.base.path, recursive=True)
    check_copy(tree, dest, s3.raw)


def test_memory_to_memory(memory_base: str) -> None:
    tree = build_tree(MEMORY, memory_base)
    dest = parse_storage_path(memory_base + "/dr/chk-5")
    result = copy_checkpoint(tree.pointer, dest.url)
    assert result.server_side == 9
    for name in referenced(tree):
        MEMORY.rm(tree.base.child(name).path)
    copied = check_copy(tree, dest, MEMORY)
    assert any(
        isinstance(h, FileHandle) and h.path.startswith(f"memory:{dest.path}/_external/memory/")
        for h in stream_handles(copied)
    )


def test_the_flink_fixture_copies_to_identical_metadata(tmp_path: Path) -> None:
    """Flink's own tree holds only relative handles: the copy's ``_metadata`` is the source's."""
    with tarfile.open(FIXTURE) as archive:
        archive.extractall(tmp_path / "flink", filter="data")
    sources = sorted((tmp_path / "flink").rglob("_metadata"))
    assert len(sources) == 4
    for index, source in enumerate(sources):
        dest = tmp_path / "copies" / f"copy-{index}"
        result = copy_checkpoint(str(source.parent), str(dest))
        assert (dest / "_metadata").read_bytes() == source.read_bytes()
        names = {p.name for p in source.parent.iterdir()}
        assert {p.name for p in dest.iterdir()} == names
        assert len(result.files) == len(names) - 1
        for path in source.parent.iterdir():
            assert (dest / path.name).read_bytes() == path.read_bytes()


# --------------------------------------------------------------------------- refusals


def test_a_destination_that_holds_anything_is_refused(local_base: str, tmp_path: Path) -> None:
    tree = build_tree(LOCAL, local_base)
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "keep").write_bytes(b"mine")
    with pytest.raises(DestinationNotEmptyError, match="not empty") as caught:
        copy_checkpoint(tree.pointer, str(busy))
    assert isinstance(caught.value, FileExistsError)
    assert sorted(p.name for p in busy.iterdir()) == ["keep"]
    a_file = tmp_path / "a-file"
    a_file.write_bytes(b"x")
    with pytest.raises(DestinationNotEmptyError, match="is a file"):
        copy_checkpoint(tree.pointer, str(a_file))
    assert a_file.read_bytes() == b"x"
    empty = tmp_path / "empty"
    empty.mkdir()
    copy_checkpoint(tree.pointer, str(empty))
    assert (empty / "_metadata").is_file()


def test_a_nonempty_s3_prefix_is_refused(local_base: str, s3: S3Root) -> None:
    tree = build_tree(LOCAL, local_base)
    s3.raw.pipe_file(parse_storage_path(s3.sub("dr", "x")).path, b"x")
    with pytest.raises(DestinationNotEmptyError):
        copy_checkpoint(tree.pointer, s3.sub("dr"), dest_storage_options=s3.storage_options)
    assert s3.keys() == [s3.key_of(s3.sub("dr", "x"))]


def test_a_missing_source_file_is_named_and_nothing_is_written(
    local_base: str, tmp_path: Path
) -> None:
    tree = build_tree(LOCAL, local_base)
    (Path(tree.base.path) / "job/shared/sst-2").unlink()
    (Path(tree.base.path) / "other/shared/sst-9").write_bytes(b"short")
    dest = tmp_path / "dr"
    with pytest.raises(IncompleteCheckpointError) as caught:
        copy_checkpoint(tree.pointer, str(dest))
    error = caught.value
    assert isinstance(error, FileNotFoundError)
    assert error.missing == (tree.url("job/shared/sst-2"),)
    assert error.short == ((tree.url("other/shared/sst-9"), 5, 500),)
    assert tree.url("job/shared/sst-2") in str(error)
    assert "sst-9" in str(error)
    assert not dest.exists()


def test_a_failure_midway_lists_what_was_copied_and_writes_no_metadata(
    local_base: str, memory_base: str
) -> None:
    """A source file that changes under the copy (here: truncated after the first file was
    copied) fails its streamed copy; the files copied are listed, no ``_metadata`` written."""
    tree = build_tree(LOCAL, local_base)
    victim = Path(tree.base.path) / "other/shared/sst-9"

    def truncate(_: Any) -> None:
        victim.write_bytes(b"")

    dest = parse_storage_path(memory_base + "/dr")
    with pytest.raises(CopyFailedError) as caught:
        copy_checkpoint(tree.pointer, dest.url, workers=1, on_copied=truncate)
    error = caught.value
    assert error.failed == tree.url("other/shared/sst-9")
    assert isinstance(error.__cause__, StateSizeMismatchError)
    assert 1 <= len(error.copied) < 9
    assert "No _metadata was written" in str(error)
    on_memory = {f"memory://{p}" for p in MEMORY.find(dest.path) if not p.endswith("/_metadata")}
    assert set(error.copied) == on_memory
    assert not MEMORY.exists(dest.child("_metadata").path)


def test_a_failing_progress_callback_fails_the_copy(memory_base: str) -> None:
    tree = build_tree(MEMORY, memory_base)
    dest = parse_storage_path(memory_base + "/dr")

    def stop(_: Any) -> None:
        raise RuntimeError("interrupted by the caller")

    with pytest.raises(CopyFailedError, match="interrupted by the caller") as caught:
        copy_checkpoint(tree.pointer, dest.url, workers=1, on_copied=stop)
    assert len(caught.value.copied) == 1
    assert MEMORY.exists(parse_storage_path(caught.value.copied[0]).path)
    assert not MEMORY.exists(dest.child("_metadata").path)


def test_a_reference_no_store_reaches_refuses_the_copy(local_base: str, tmp_path: Path) -> None:
    tree = build_tree(LOCAL, local_base)
    metadata = v.CheckpointMetadata(
        6,
        1,
        (),
        (
            v.OperatorState(
                bytes(16),
                1,
                1,
                None,
                (
                    v.SubtaskEntry(
                        0,
                        v.SubtaskState(
                            managed_keyed=v.KeyGroupsHandle(
                                0, (0,), FileHandle("s3p://bucket/x", 1)
                            )
                        ),
                    ),
                ),
            ),
        ),
        b"\xac\xed\x00\x05p",
    )
    directory = Path(tree.base.path) / "odd"
    directory.mkdir()
    (directory / "_metadata").write_bytes(write_metadata(metadata))
    with pytest.raises(RelocationError, match="s3p://bucket/x"):
        copy_checkpoint(str(directory), str(tmp_path / "dr"))
    assert not (tmp_path / "dr").exists()


# --------------------------------------------------------------------------- the pure parts


def test_relocation_is_deterministic_and_keeps_what_is_no_path() -> None:
    source = parse_storage_path("s3://bucket/job/chk-3")
    dest = parse_storage_path("/dr/copy")
    handle = v.KeyGroupsHandle(0, (0,), FileHandle("s3://bucket/job/shared/a", 4))
    inline = v.KeyGroupsHandle(1, (0,), v.ByteStreamHandle("x", b"1"))
    relative = v.KeyGroupsHandle(2, (0,), RelativeFileHandle("f", 2))
    metadata = v.CheckpointMetadata(
        3,
        3,
        (),
        (
            v.OperatorState(
                bytes(16),
                3,
                4,
                None,
                tuple(
                    v.SubtaskEntry(i, v.SubtaskState(managed_keyed=h))
                    for i, h in enumerate((handle, inline, relative))
                ),
            ),
        ),
    )
    moved = relocate_metadata(metadata, source, dest)
    assert moved == relocate_metadata(metadata, source, dest)
    states = [e.state for e in moved.operators[0].subtasks or ()]
    assert states[0] is not None
    assert states[0].managed_keyed == v.KeyGroupsHandle(
        0, (0,), FileHandle("file:/dr/copy/_external/s3/bucket/job/shared/a", 4)
    )
    assert states[1] is metadata.operators[0].subtasks[1].state  # type: ignore[index]
    assert states[2] is metadata.operators[0].subtasks[2].state  # type: ignore[index]


def test_flink_spelling() -> None:
    assert flink_spelling(parse_storage_path("file:///a/b")) == "file:/a/b"
    assert flink_spelling(parse_storage_path("memory:///a/b")) == "memory:/a/b"
    assert flink_spelling(parse_storage_path("s3://bucket/a/b")) == "s3://bucket/a/b"
    assert flink_spelling(parse_storage_path("s3a://bucket/a")) == "s3a://bucket/a"


# --------------------------------------------------------------------------- the subcommand


def run_copy(*argv: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="ckptstore copy")
    admin_copy.add_arguments(parser)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = admin_copy.run(parser.parse_args(list(argv)))
    return code, out.getvalue(), err.getvalue()


def test_the_subcommand_copies_and_reports(local_base: str, s3: S3Root) -> None:
    tree = build_tree(LOCAL, local_base)
    options = [
        f"--storage-option={k}={v}" for k, v in s3.storage_options.items() if isinstance(v, str)
    ]
    nested = {k: v for k, v in s3.storage_options.items() if isinstance(v, dict)}
    options += [f"--storage-option={k}={json.dumps(v)}" for k, v in nested.items()]
    code, out, err = run_copy(tree.pointer, s3.sub("dr"), "--json", *options)
    assert (code, err) == (0, "")
    report = json.loads(out)
    assert report["checkpoint_id"] == 5
    assert report["streamed"] == 9
    assert report["metadata"] == s3.sub("dr", "_metadata")
    code, out, err = run_copy(tree.pointer, s3.sub("dr"), *options)
    assert code == 1
    assert "DestinationNotEmptyError" in err
    assert out == ""


def test_the_subcommand_exit_codes(local_base: str, tmp_path: Path) -> None:
    tree = build_tree(LOCAL, local_base)
    code, out, err = run_copy(tree.pointer, str(tmp_path / "dr"))
    assert code == 0
    assert err == ""
    assert "Copied checkpoint 5" in out
    assert f"{len(INSIDE)} of the checkpoint's directory" in out
    assert run_copy(tree.pointer, str(tmp_path / "x"), "--storage-option", "novalue")[0] == 2
    assert run_copy(tree.pointer, str(tmp_path / "y"), "--workers", "0")[0] == 2
    code, _, err = run_copy(str(tmp_path / "nothing-here"), str(tmp_path / "z"))
    assert code == 1
    assert "CheckpointNotFoundError" in err
