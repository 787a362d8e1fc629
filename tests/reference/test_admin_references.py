"""``ckptstore.admin.references``: a ``_metadata``'s handles resolved to the files they need.

One reference per physical file with the most bytes any handle on it needs (a segment needs
``start + size``), relative handles against the metadata's directory, inline bytes counted,
and paths no store of the reference reaches listed as unresolved rather than guessed.
"""

from __future__ import annotations

import tarfile
from pathlib import Path

from ckptstore.admin.references import checkpoint_references, referenced_urls
from ckptstore.flink_metadata import read_metadata
from ckptstore.flink_metadata import values as v
from ckptstore.paths import parse_storage_path

REPO = Path(__file__).resolve().parents[2]
ARCHIVE = REPO / "fixtures" / "flink" / "flink-2.3.0-hashmap-inline0.tar.gz"
OPERATOR = bytes(range(16))


def _metadata(*handles: v.KeyGroupsHandle | v.OperatorStateHandle) -> v.CheckpointMetadata:
    subtasks = []
    for index, handle in enumerate(handles):
        if isinstance(handle, v.KeyGroupsHandle):
            state = v.SubtaskState(managed_keyed=handle)
        else:
            state = v.SubtaskState(managed_operator=handle)
        subtasks.append(v.SubtaskEntry(index, state))
    operator = v.OperatorState(OPERATOR, len(handles), 128, None, tuple(subtasks))
    return v.CheckpointMetadata(6, 7, (), (operator,))


def _key_groups(
    delegate: v.FileHandle | v.RelativeFileHandle | v.SegmentFileHandle | v.ByteStreamHandle,
) -> v.KeyGroupsHandle:
    return v.KeyGroupsHandle(0, (0,), delegate)


def test_one_reference_per_file_with_the_largest_extent() -> None:
    segment_a = v.SegmentFileHandle("file:/ckpt/job/shared/merged", 0, 10, v.StateScope.SHARED, "a")
    segment_b = v.SegmentFileHandle(
        "file:/ckpt/job/shared/merged", 10, 30, v.StateScope.SHARED, "b"
    )
    metadata = _metadata(
        _key_groups(segment_a),
        _key_groups(segment_b),
        _key_groups(v.RelativeFileHandle("state-1", 100)),
        _key_groups(v.FileHandle("file:/elsewhere/other-job/shared/sst", 55)),
        _key_groups(v.ByteStreamHandle("inline", b"12345")),
    )
    refs = checkpoint_references(metadata, parse_storage_path("/ckpt/job/chk-7"))
    assert refs.checkpoint_id == 7
    assert [(f.url, f.needed_bytes, f.handles, f.relative) for f in refs.files] == [
        ("file:///ckpt/job/chk-7/state-1", 100, 1, True),
        ("file:///ckpt/job/shared/merged", 40, 2, False),
        ("file:///elsewhere/other-job/shared/sst", 55, 1, False),
    ]
    assert refs.inline_bytes == 5
    assert refs.referenced_bytes == 195
    assert refs.unresolved == ()


def test_paths_no_store_reaches_are_unresolved_not_guessed() -> None:
    metadata = _metadata(
        _key_groups(v.FileHandle("s3p://bucket/job/shared/sst", 1)),
        _key_groups(v.RelativeFileHandle("../../../../../escape", 1)),
    )
    refs = checkpoint_references(metadata, parse_storage_path("memory:///job/chk-1"))
    assert refs.files == ()
    assert refs.unresolved == ("../../../../../escape", "s3p://bucket/job/shared/sst")


def test_the_flink_fixture_references_its_own_files(tmp_path: Path) -> None:
    with tarfile.open(ARCHIVE) as archive:
        archive.extractall(tmp_path, filter="data")
    every_file = {parse_storage_path(p).url for p in tmp_path.rglob("*") if p.is_file()}
    found = []
    for path in sorted(tmp_path.rglob("_metadata")):
        refs = checkpoint_references(
            read_metadata(path.read_bytes()), parse_storage_path(path.parent)
        )
        assert all(f.relative and f.url.startswith(refs.directory + "/") for f in refs.files)
        assert all(
            Path(parse_storage_path(f.url).path).stat().st_size >= f.needed_bytes
            for f in refs.files
        )
        found.append(refs)
    assert [r.checkpoint_id for r in found] == [11, 12, 9, 10]
    orphans = (
        every_file
        - referenced_urls(found)
        - {parse_storage_path(p).url for p in tmp_path.rglob("_metadata")}
    )
    assert [u.rsplit("/", 2)[-2] for u in orphans] == ["chk-13"]
