"""The reference against checkpoint trees written by real Apache Flink 2.3.0 (PyFlink, Java 17).

The fixture (see ``fixtures/flink/README.md``) holds a job directory with retained
checkpoints chk-9, chk-11, chk-12, an aborted chk-13 without ``_metadata``, empty shared/ and
taskowned/, and a canonical savepoint (id 10, so chk-10 never existed). The reference must
resolve Flink's pointers in every spelling (PTR1, PTR6-PTR9, T-BASE1), fail precisely on the
aborted and the missing ones (PTR5, PTR6), dispose a copy (MD6, T-CCL1), and its own trees
must have Flink's shape (L1-L3, L5).
"""

from __future__ import annotations

import re
import shutil
import struct
import tarfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ckptstore import FileSystemCheckpointStorage, JobManagerCheckpointStorage
from ckptstore.api import CheckpointedStateScope, JobID
from ckptstore.paths import parse_storage_path

REPO = Path(__file__).resolve().parents[2]
ARCHIVE_NAMES = ("hashmap-inline0.tar.gz", "flink-2.3.0-hashmap-inline0.tar.gz")
SHARED_ARCHIVE = REPO.parent / "shared" / "fixtures" / "flink-2.3.0" / "hashmap-inline0.tar.gz"

JOB = "28035f78a330f28ba4ff4840f31b71d0"
SAVEPOINT = "savepoint-28035f-1a44b3786f30"
RETAINED = (9, 11, 12)
METADATA_MAGIC = bytes.fromhex("4960672D")

UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
JOB_RE = re.compile(r"[0-9a-f]{32}")
CHK_RE = re.compile(r"chk-(0|[1-9][0-9]*)")


def find_archive() -> Path | None:
    for name in ARCHIVE_NAMES:
        candidate = REPO / "fixtures" / "flink" / name
        if candidate.is_file():
            return candidate
    return SHARED_ARCHIVE if SHARED_ARCHIVE.is_file() else None


@pytest.fixture
def flink(tmp_path: Path) -> Path:
    """The unpacked Flink tree: ``<tmp>/flinkckpt/<job>/...`` and ``<tmp>/flinksp/...``."""
    archive = find_archive()
    if archive is None:
        pytest.skip(f"Flink fixture archive not found (looked for {ARCHIVE_NAMES})")
    target = tmp_path / "flink"
    target.mkdir()
    with tarfile.open(archive) as tar:
        tar.extractall(target, filter="data")
    return target


def pointer_of(directory: Path) -> str:
    """The canonical external pointer of a local directory (``file:///...``)."""
    return parse_storage_path(str(directory)).url


def spellings(directory: Path) -> list[str]:
    url = pointer_of(directory)
    return [url, url + "/", url + "/_metadata", str(directory), str(directory) + "/"]


def checkpoint_dirs(flink: Path) -> dict[int, Path]:
    job = flink / "flinkckpt" / JOB
    dirs = {n: job / f"chk-{n}" for n in RETAINED}
    dirs[10] = flink / "flinksp" / SAVEPOINT
    return dirs


def read_all(handle: Any) -> bytes:
    with handle.open_input_stream() as stream:
        return bytes(stream.read())


# --------------------------------------------------------------------------- resolution


def test_flink_pointers_resolve_in_every_spelling(flink: Path, tmp_path: Path) -> None:
    """PTR1, PTR6, PTR7, PTR8, PTR9, T-BASE1: dir, dir/ and dir/_metadata of each retained
    checkpoint and of the savepoint resolve to the same pointer and the same metadata bytes:
    Flink's format (magic 49 60 67 2D, version 6, the checkpoint id as big-endian int64)."""
    storage = FileSystemCheckpointStorage(str(tmp_path / "own-checkpoints"))
    for checkpoint_id, directory in checkpoint_dirs(flink).items():
        on_disk = (directory / "_metadata").read_bytes()
        for form in spellings(directory):
            completed = storage.resolve_checkpoint(form)
            assert completed.external_pointer == pointer_of(directory), form
            assert completed.metadata_handle.state_size == len(on_disk), form
            assert read_all(completed.metadata_handle) == on_disk, form
        assert on_disk[:4] == METADATA_MAGIC
        version, stored_id = struct.unpack(">iq", on_disk[4:16])
        assert version == 6
        assert stored_id == checkpoint_id, directory.name


def test_aborted_checkpoint_without_metadata_does_not_resolve(flink: Path, tmp_path: Path) -> None:
    """PTR6: chk-13 (in flight at cancel, one state file, no _metadata) raises
    FileNotFoundError "Cannot find meta data file '_metadata' in directory ..."."""
    storage = FileSystemCheckpointStorage(str(tmp_path / "own-checkpoints"))
    chk13 = flink / "flinkckpt" / JOB / "chk-13"
    assert [p.name for p in chk13.iterdir()] == ["4d8174c5-e60e-46a0-ab5d-3c7d13d99259"]
    for form in (pointer_of(chk13), pointer_of(chk13) + "/"):
        with pytest.raises(FileNotFoundError, match="Cannot find meta data file '_metadata'"):
            storage.resolve_checkpoint(form)
    with pytest.raises(FileNotFoundError):
        storage.resolve_checkpoint(pointer_of(chk13) + "/_metadata")


def test_missing_checkpoint_does_not_resolve(flink: Path, tmp_path: Path) -> None:
    """PTR5: chk-10 never existed (the savepoint took id 10): FileNotFoundError
    "Cannot find checkpoint or savepoint file/directory '<p>' on file system 'file'."."""
    storage = FileSystemCheckpointStorage(str(tmp_path / "own-checkpoints"))
    chk10 = flink / "flinkckpt" / JOB / "chk-10"
    with pytest.raises(FileNotFoundError, match="Cannot find checkpoint or savepoint") as info:
        storage.resolve_checkpoint(pointer_of(chk10))
    assert "chk-10" in str(info.value)


def test_other_jobs_and_the_jobmanager_storage_resolve_flink_pointers(
    flink: Path, tmp_path: Path
) -> None:
    """ACC4, T-BASE3, CS3: resolution does not depend on the job: an access for another job
    id, and a JobManagerCheckpointStorage, resolve Flink's pointers to the same bytes."""
    other_job = JobID.generate()
    assert str(other_job) != JOB
    access = FileSystemCheckpointStorage(str(tmp_path / "other")).create_checkpoint_storage(
        other_job
    )
    jobmanager = JobManagerCheckpointStorage(str(tmp_path / "jm"))
    jm_access = jobmanager.create_checkpoint_storage(other_job)
    for directory in checkpoint_dirs(flink).values():
        expected = (directory / "_metadata").read_bytes()
        for resolver in (access, jobmanager, jm_access):
            for form in spellings(directory):
                completed = resolver.resolve_checkpoint(form)
                assert completed.external_pointer == pointer_of(directory)
                assert read_all(completed.metadata_handle) == expected


def test_dispose_of_a_copied_flink_checkpoint_removes_it(flink: Path, tmp_path: Path) -> None:
    """MD6, T-CCL1: disposing a resolved checkpoint deletes its directory recursively (the
    state files included) and nothing else: siblings, shared/ and taskowned/ stay."""
    job_dir = tmp_path / "copy" / JOB
    shutil.copytree(flink / "flinkckpt" / JOB, job_dir)
    storage = FileSystemCheckpointStorage(str(tmp_path / "copy"))
    completed = storage.resolve_checkpoint(pointer_of(job_dir / "chk-9"))
    completed.dispose_storage_location()
    assert not (job_dir / "chk-9").exists()
    assert sorted(p.name for p in job_dir.iterdir()) == [
        "chk-11", "chk-12", "chk-13", "shared", "taskowned",
    ]  # fmt: skip
    assert len(list((job_dir / "chk-11").iterdir())) == 3
    completed.dispose_storage_location()  # already gone: fine
    assert (flink / "flinkckpt" / JOB / "chk-9" / "_metadata").is_file()  # the original stays


# --------------------------------------------------------------------------- layout


def normalised_tree(root: Path) -> Counter[str]:
    """Every directory and file below ``root``, with job ids, UUIDs and savepoint suffixes
    replaced by placeholders (directories end with '/')."""
    entries: Counter[str] = Counter()
    for path in sorted(root.rglob("*")):
        parts = []
        for part in path.relative_to(root).parts:
            if JOB_RE.fullmatch(part):
                part = "<job>"
            elif UUID_RE.fullmatch(part):
                part = "<uuid>"
            elif re.fullmatch(r"savepoint-[0-9a-f]{6}-[0-9a-f]{12}", part):
                part = "savepoint-<job6>-<hex12>"
            parts.append(part)
        entries["/".join(parts) + ("/" if path.is_dir() else "")] += 1
    return entries


def check_flink_layout(checkpoints: Path, savepoints: Path) -> None:
    """L1, L2, L3, L5: the structural rules both trees must follow."""
    (job_dir,) = list(checkpoints.iterdir())
    assert JOB_RE.fullmatch(job_dir.name), job_dir.name
    children = {p.name for p in job_dir.iterdir()}
    assert {"shared", "taskowned"} <= children
    for name in children - {"shared", "taskowned"}:
        assert CHK_RE.fullmatch(name), name
        for entry in (job_dir / name).iterdir():
            assert entry.is_file(), entry  # state files directly in chk-<n>, no subfolders
            assert entry.name == "_metadata" or UUID_RE.fullmatch(entry.name), entry.name
    (savepoint,) = list(savepoints.iterdir())
    assert re.fullmatch(rf"savepoint-{job_dir.name[:6]}-[0-9a-f]{{12}}", savepoint.name)
    assert len(savepoint.name) == 29
    for entry in savepoint.iterdir():
        assert entry.is_file()
        assert entry.name == "_metadata" or UUID_RE.fullmatch(entry.name), entry.name


def write_like_flink(base: Path) -> None:
    """Replay the Flink job's storage calls with the reference: threshold 0 (every state chunk
    is a file), two exclusive chunks per checkpoint, retained 9/11/12, savepoint id 10, chk-13
    aborted (its state written, never finalized), subsumed checkpoints 1..8 disposed."""
    storage = FileSystemCheckpointStorage(
        str(base / "flinkckpt"), 0, savepoint_path=str(base / "flinksp")
    )
    access = storage.create_checkpoint_storage(JobID.generate())
    access.initialize_base_locations_for_checkpoint()

    def take(location: Any, finalize: bool) -> Any:
        for chunk in (b"a" * 2979, b"b" * 3005):
            stream = location.create_checkpoint_state_output_stream(
                CheckpointedStateScope.EXCLUSIVE
            )
            stream.write(chunk)
            stream.close_and_get_handle()
        if not finalize:
            return None
        with location.create_metadata_output_stream() as out:
            out.write(b"metadata")
            return out.close_and_finalize_checkpoint()

    for checkpoint_id in range(1, 13):
        if checkpoint_id == 10:
            take(access.initialize_location_for_savepoint(10, None), True)
            continue
        completed = take(access.initialize_location_for_checkpoint(checkpoint_id), True)
        if checkpoint_id < 9:
            completed.dispose_storage_location()
    chk13 = access.initialize_location_for_checkpoint(13)
    stream = chk13.create_checkpoint_state_output_stream(CheckpointedStateScope.EXCLUSIVE)
    stream.write(b"c" * 2979)
    stream.close_and_get_handle()


def test_flink_tree_and_reference_tree_have_the_same_shape(flink: Path, tmp_path: Path) -> None:
    """L1, L2, L3, L5: job dir = 32 lowercase hex, chk-<n> unpadded, shared/ and taskowned/
    present, state files are UUIDv4 names directly in the chk dirs, savepoint dir
    savepoint-<job[0:6]>-<12 hex>; the reference's own tree for the same history is the
    same once ids and random names are masked."""
    check_flink_layout(flink / "flinkckpt", flink / "flinksp")
    ours = tmp_path / "ours"
    write_like_flink(ours)
    check_flink_layout(ours / "flinkckpt", ours / "flinksp")
    assert normalised_tree(ours) == normalised_tree(flink)
