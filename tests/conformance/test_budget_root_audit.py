"""The budget's audit of its root (``ckptconform.budget.root_audit``): what the retained
``_metadata`` reference, absolute or relative, against what is listed; the end to end runs
are in ``test_budget_command.py``."""

from __future__ import annotations

from ckptconform.budget.root_audit import audit_root, referenced_keys, store_key
from ckptconform.metadata_file import PlacedState, encode_metadata
from ckptstore.filesystem.handles import FileStateHandle, RelativeFileStateHandle

CHK = "s3://bucket/root/checkpoints/job/chk-3"
SAVEPOINT = "s3://bucket/root/savepoints/savepoint-1"


def _metadata(*handles: object) -> bytes:
    placed = [PlacedState(0, i, "shared", h) for i, h in enumerate(handles)]
    return encode_metadata(3, len(placed), placed, b"record")


def test_store_keys_ignore_the_scheme_and_a_trailing_slash() -> None:
    assert store_key("s3a://bucket/a/b/") == store_key("s3://bucket/a/b") == "bucket/a/b"


def test_absolute_and_relative_handles_are_referenced() -> None:
    metadata = _metadata(
        FileStateHandle("s3a://bucket/root/checkpoints/job/shared/s1", 10),
        RelativeFileStateHandle(f"{SAVEPOINT}/x1", 5, relative_path="x1"),
    )
    assert referenced_keys(metadata, SAVEPOINT) == {
        "bucket/root/checkpoints/job/shared/s1",
        "bucket/root/savepoints/savepoint-1/x1",
    }


def test_what_no_retained_metadata_references_is_an_orphan() -> None:
    kept = _metadata(FileStateHandle(f"{CHK}/e1", 10))
    listed = [
        f"{CHK}/_metadata",
        f"{CHK}/e1",
        "s3://bucket/root/checkpoints/job/chk-2/e0",  # a subsumed checkpoint's file
        "s3://bucket/root/checkpoints/job/taskowned/t0",
    ]
    audit = audit_root("s3://bucket/root", listed, {CHK: kept})
    assert audit.orphans == (
        "s3://bucket/root/checkpoints/job/chk-2/e0",
        "s3://bucket/root/checkpoints/job/taskowned/t0",
    )
    assert (audit.listed, audit.referenced, audit.clean) == (4, 2, False)
    assert "2 orphan(s) of 4 file(s)" in audit.describe()
    clean = audit_root("s3://bucket/root", listed[:2], {CHK: kept})
    assert clean.clean
    assert clean.to_dict()["orphan_count"] == 0


def test_metadata_that_is_not_flinks_format_leaves_the_audit_unmade() -> None:
    audit = audit_root("s3://bucket/root", [f"{CHK}/_metadata"], {CHK: b"not metadata"})
    assert audit.error is not None
    assert audit.error.startswith(CHK)
    assert not audit.clean
    assert "not made" in audit.describe()
