"""Crash leftovers (issue 10, case 6): find and remove them, and nothing else.

A crash leaves ``._metadata.<hex>.inprogress`` staging files (local publish) and state files
in ``chk-<n>`` directories that never got ``_metadata``. ``find_leftovers`` lists them,
``clean_leftovers`` removes them; both stay inside the storage's own layout for one job.
"""

from __future__ import annotations

import datetime
import os
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from ckptstore import FileSystemCheckpointStorage, JobManagerCheckpointStorage
from ckptstore.api import CheckpointedStateScope, JobID
from ckptstore.errors import CheckpointStorageError
from ckptstore.filesystem import leftovers
from ckptstore.paths import parse_storage_path
from tests.reference._fsroot import FsRoot
from tests.reference._moto import S3Root

HOUR = 3600
OLD = time.time() - 2 * HOUR


def _staging() -> str:
    return f"._metadata.{uuid.uuid4().hex}.inprogress"


def _age(path: Path, when: float = OLD) -> None:
    os.utime(path, (when, when))


class Layout:
    """A job's checkpoint tree on local disk with every kind of file, some of them old."""

    def __init__(self, tmp_path: Path) -> None:
        self.base = tmp_path / "ckpt"
        self.savepoints = tmp_path / "sp"
        self.storage = FileSystemCheckpointStorage(
            str(self.base), 0, savepoint_path=str(self.savepoints)
        )
        self.job = JobID.generate()
        access = self.storage.create_checkpoint_storage(self.job)
        access.initialize_base_locations_for_checkpoint()
        self.job_dir = Path(parse_storage_path(access.checkpoints_directory).path)
        # chk-1: completed (state + _metadata) plus an old staging file of its publish
        completed = access.initialize_location_for_checkpoint(1)
        stream = completed.create_checkpoint_state_output_stream(CheckpointedStateScope.EXCLUSIVE)
        stream.write(b"kept state")
        self.kept = stream.close_and_get_handle()
        with completed.create_metadata_output_stream() as out:
            out.write(b"m")
            out.close_and_finalize_checkpoint()
        self.chk1_staging = self.job_dir / "chk-1" / _staging()
        self.chk1_staging.write_bytes(b"half")
        # chk-2: crashed before _metadata; two old state files, an old staging file, an old
        # file with another name (kept: not ours), a nested dir (kept)
        chk2 = self.job_dir / "chk-2"
        chk2.mkdir()
        self.orphans = [chk2 / str(uuid.uuid4()) for _ in range(2)]
        for path in self.orphans:
            path.write_bytes(b"orphan")
        self.chk2_staging = chk2 / _staging()
        self.chk2_staging.write_bytes(b"half")
        self.foreign = chk2 / "notes.txt"
        self.foreign.write_bytes(b"keep me")
        # chk-3: in flight (fresh state, no _metadata yet)
        chk3 = self.job_dir / "chk-3"
        chk3.mkdir()
        self.fresh = chk3 / str(uuid.uuid4())
        self.fresh.write_bytes(b"in flight")
        # chk-4: an abandoned, empty directory
        self.empty = self.job_dir / "chk-4"
        self.empty.mkdir()
        # a directory that only looks like a checkpoint, and shared/taskowned files
        self.lookalike = self.job_dir / "chk-5-backup"
        self.lookalike.mkdir()
        (self.lookalike / str(uuid.uuid4())).write_bytes(b"x")
        self.shared = self.job_dir / "shared" / str(uuid.uuid4())
        self.shared.write_bytes(b"shared")
        self.owned = self.job_dir / "taskowned" / str(uuid.uuid4())
        self.owned.write_bytes(b"owned")
        # savepoints: ours aborted (no _metadata), another job's aborted, ours completed
        prefix = f"savepoint-{str(self.job)[:6]}-"
        self.savepoint_orphan = self.savepoints / f"{prefix}0123456789ab" / str(uuid.uuid4())
        self.other_job = self.savepoints / "savepoint-ffffff-0123456789ab" / str(uuid.uuid4())
        done = self.savepoints / f"{prefix}ba9876543210"
        for path in (self.savepoint_orphan, self.other_job):
            path.parent.mkdir(parents=True)
            path.write_bytes(b"sp state")
        done.mkdir(parents=True)
        (done / "_metadata").write_bytes(b"m")
        self.savepoint_kept = done / str(uuid.uuid4())
        self.savepoint_kept.write_bytes(b"sp state")
        for path in self.everything():
            _age(path)
        _age(self.fresh, time.time())
        _age(chk3, time.time())

    def everything(self) -> list[Path]:
        return sorted(p for p in self.base.parent.rglob("*"))

    def files(self) -> list[Path]:
        return sorted(p for p in self.base.parent.rglob("*") if p.is_file())


def _urls(items: list[Any]) -> list[str]:
    return [item.url for item in items]


def _url(path: Path) -> str:
    return parse_storage_path(str(path)).url


def test_find_reports_exactly_the_leftovers(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    before = layout.files()
    found = layout.storage.find_leftovers(layout.job)
    by_kind = {
        kind: sorted(i.url for i in found if i.kind == kind) for kind in leftovers.LEFTOVER_KINDS
    }
    assert by_kind["metadata-staging"] == sorted(
        [_url(layout.chk1_staging), _url(layout.chk2_staging)]
    )
    assert by_kind["orphaned-state"] == sorted(
        [*map(_url, layout.orphans), _url(layout.savepoint_orphan)]
    )
    # directories without _metadata that hold nothing but leftovers go too
    assert by_kind["abandoned-directory"] == sorted(
        [_url(layout.empty), _url(layout.savepoint_orphan.parent)]
    )
    assert layout.files() == before  # finding deletes nothing
    for item in found:
        assert item.modified < datetime.datetime.now(datetime.UTC) - datetime.timedelta(hours=1)


def test_clean_removes_them_and_nothing_else(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    expected = layout.storage.find_leftovers(layout.job)
    assert layout.storage.clean_leftovers(layout.job, dry_run=True) == expected
    before = set(layout.files())
    removed = layout.storage.clean_leftovers(layout.job)
    assert _urls(removed) == _urls(expected)
    gone = {layout.chk1_staging, layout.chk2_staging, *layout.orphans, layout.savepoint_orphan}
    assert set(layout.files()) == before - gone
    assert not layout.empty.exists()
    assert layout.foreign.exists()
    assert (layout.job_dir / "chk-2").is_dir()
    assert not layout.savepoint_orphan.parent.exists()
    for kept in (
        layout.fresh,
        layout.shared,
        layout.owned,
        layout.other_job,
        layout.savepoint_kept,
    ):
        assert kept.exists(), kept
    assert layout.kept is not None
    with layout.kept.open_input_stream() as stream:
        assert stream.read() == b"kept state"
    assert layout.storage.find_leftovers(layout.job) == []
    # the storage is still usable: a new checkpoint resolves
    assert layout.storage.resolve_checkpoint(str(layout.job_dir / "chk-1"))


def test_grace_period(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    assert layout.storage.find_leftovers(layout.job, older_than=3 * HOUR) == []
    assert len(layout.storage.find_leftovers(layout.job, older_than=0)) > len(
        layout.storage.find_leftovers(layout.job)
    )  # the in-flight chk-3 counts once no grace is left
    for bad in (-1, "1h", None, float("nan")):
        with pytest.raises((TypeError, ValueError)) as caught:
            layout.storage.find_leftovers(layout.job, older_than=bad)
        assert isinstance(caught.value, CheckpointStorageError)
    with pytest.raises(TypeError):
        layout.storage.clean_leftovers(layout.job, dry_run="yes")  # type: ignore[arg-type]


def test_metadata_that_appears_meanwhile_keeps_the_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkpoint that finalizes between the scan and the removal keeps its state."""
    layout = Layout(tmp_path)
    real = leftovers.file_info

    def finalize_first(fs: Any, path: Any) -> Any:
        metadata = Path(path.path)
        if metadata.parent.name == "chk-2":
            metadata.write_bytes(b"late metadata")
        return real(fs, path)

    monkeypatch.setattr(leftovers, "file_info", finalize_first)
    removed = layout.storage.clean_leftovers(layout.job)
    assert all(path.exists() for path in layout.orphans)
    assert _url(layout.chk2_staging) in _urls(removed)


def test_other_jobs_and_no_subdir(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    assert layout.storage.find_leftovers(JobID.generate()) == []
    flat = FileSystemCheckpointStorage(str(tmp_path / "flat"), create_subdir=False)
    job = JobID.generate()
    chk = tmp_path / "flat" / "chk-9"
    chk.mkdir(parents=True)
    orphan = chk / str(uuid.uuid4())
    orphan.write_bytes(b"x")
    _age(orphan)
    assert _urls(flat.find_leftovers(job)) == [_url(orphan)]


def test_jobmanager_storage_leftovers(tmp_path: Path) -> None:
    storage = JobManagerCheckpointStorage(str(tmp_path / "jm"))
    job = JobID.generate()
    location = storage.create_checkpoint_storage(job).initialize_location_for_checkpoint(3)
    chk = Path(parse_storage_path(location.checkpoint_directory).path)
    staging = chk / _staging()
    staging.write_bytes(b"half")
    _age(staging)
    _age(chk)
    found = storage.find_leftovers(job)
    assert [(i.kind, i.url) for i in found] == [
        ("abandoned-directory", _url(chk)),
        ("metadata-staging", _url(staging)),
    ]
    assert _urls(storage.clean_leftovers(job)) == _urls(found)
    assert not chk.exists()
    assert JobManagerCheckpointStorage().find_leftovers(job) == []


def test_memory_file_system(memroot: FsRoot) -> None:
    storage = FileSystemCheckpointStorage(memroot.sub("ckpt"), 0)
    job = JobID.generate()
    access = storage.create_checkpoint_storage(job)
    access.initialize_base_locations_for_checkpoint()
    location = access.initialize_location_for_checkpoint(7)
    stream = location.create_checkpoint_state_output_stream(CheckpointedStateScope.EXCLUSIVE)
    stream.write(b"orphan")
    handle = stream.close_and_get_handle()
    assert handle is not None
    assert storage.find_leftovers(job) == []  # fresh
    found = storage.find_leftovers(job, older_than=0)
    assert [(i.kind, i.url) for i in found] == [
        ("abandoned-directory", location.checkpoint_directory),
        ("orphaned-state", handle.file_path),  # type: ignore[attr-defined]
    ]
    storage.clean_leftovers(job, older_than=0)
    assert not memroot.exists(handle.file_path)  # type: ignore[attr-defined]
    assert memroot.isdir(location.checkpoint_directory) is False  # now empty: removed


def test_s3_lists_and_deletes_only_leftovers(s3: S3Root) -> None:
    storage = FileSystemCheckpointStorage(s3.sub("ckpt"), 0, storage_options=s3.storage_options)
    job = JobID.generate()
    access = storage.create_checkpoint_storage(job)
    for checkpoint_id, finalize in ((1, True), (2, False)):
        location = access.initialize_location_for_checkpoint(checkpoint_id)
        stream = location.create_checkpoint_state_output_stream(CheckpointedStateScope.EXCLUSIVE)
        stream.write(b"state %d" % checkpoint_id)
        assert stream.close_and_get_handle() is not None
        if finalize:
            with location.create_metadata_output_stream() as out:
                out.write(b"m")
                out.close_and_finalize_checkpoint()
    keys_before = s3.keys()
    with s3.record() as rec:
        found = storage.find_leftovers(job, older_than=0)
    # listings only; issue 9: one ListMultipartUploads for the open uploads
    listings = {"ListObjectsV2", "ListObjects", "ListMultipartUploads"}
    assert set(rec.operations()) <= listings, rec.summary()
    assert [i.kind for i in found] == ["orphaned-state"]
    assert "/chk-2/" in found[0].url
    removed = storage.clean_leftovers(job, older_than=0)
    assert _urls(removed) == _urls(found)
    assert set(keys_before) - set(s3.keys()) == {s3.key_of(found[0].url)}
