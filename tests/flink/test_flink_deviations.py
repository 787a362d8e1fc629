"""Reproducers of what Flink 2.3.0 itself does where the suite's clauses say otherwise.

Each test pins Flink's observed behaviour and names the clause it deviates from; each deviation
of ``flinktarget.DEVIATIONS`` (the target's ``known_failures`` and CONFORMANCE.md's Flink
columns) names its test here (tests/meta/test_flink_outcomes.py checks both ways). When a Flink
upgrade changes the behaviour, the test here fails first and the list is due for review.
Classification: "Flink bug" (Flink is wrong or inconsistent with itself) or "beyond Flink" (the
clause asks more than Flink does, on purpose, and its rationale says why). The last test pins a
behaviour a clause relies on without a deviation: why duplicate() is in BAD-1's corpus
only where fast-duplicate is claimed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from pathlib import Path

import pytest

from ckptstore.api import CheckpointedStateScope, JobID

EXCLUSIVE = CheckpointedStateScope.EXCLUSIVE


def _job(storage):  # type: ignore[no-untyped-def]
    access = storage.create_checkpoint_storage(JobID.generate())
    access.initialize_base_locations_for_checkpoint()
    return access


def _finalize(location, data: bytes = b"m"):  # type: ignore[no-untyped-def]
    stream = location.create_metadata_output_stream()
    stream.write(data)
    return stream.close_and_finalize_checkpoint()


def _local(url: str) -> Path:
    return Path(url.removeprefix("file:"))


def test_dis2_dispose_is_not_recursive(flink_storage):
    """Flink bug FLINK-38909 (DIS-2, SPK-3): disposeStorageLocation deletes the checkpoint
    directory non-recursively, so a directory with _metadata in it stays (as a subsumed
    checkpoint does on the Spark leg, SPK-3); in Flink's own order (state and metadata handles
    first, MD6) disposal works, which is how DIS-3, DIS-4 and TOW-3 dispose."""
    location = _job(flink_storage).initialize_location_for_checkpoint(1)
    completed = _finalize(location)
    with pytest.raises(OSError, match="is not empty"):
        completed.dispose_storage_location()
    assert _local(completed.external_pointer).is_dir()
    completed.metadata_handle.discard_state()  # Flink's own order: handles first (MD6)
    completed.dispose_storage_location()
    assert not _local(completed.external_pointer).exists()


def test_md2_close_without_finalize_leaves_a_staging_file(flink_storage):
    """Flink bug (MD-2, LAY-7, BAD-6): close() of an unfinalized metadata stream leaves the
    recoverable writer's ._metadata.inprogress.<uuid> file; _metadata itself never appears."""
    location = _job(flink_storage).initialize_location_for_checkpoint(2)
    stream = location.create_metadata_output_stream()
    stream.write(b"abandoned")
    stream.close()
    completed = _finalize(location, b"real")
    names = sorted(os.listdir(_local(completed.external_pointer)))
    assert names[0].startswith("._metadata.inprogress."), names
    assert names[1:] == ["_metadata"]


def test_md11_a_stream_made_before_replaces_the_finalized_metadata(flink_storage):
    """Beyond Flink (MD-11): Flink checks for an existing _metadata only when a metadata stream
    is made and commits by an atomic rename, so a second stream made before the first
    finalized also finalizes, and _metadata then holds its bytes."""
    location = _job(flink_storage).initialize_location_for_checkpoint(4)
    first = location.create_metadata_output_stream()
    second = location.create_metadata_output_stream()
    first.write(b"first")
    completed = first.close_and_finalize_checkpoint()
    second.write(b"second")
    second.close_and_finalize_checkpoint()
    assert (_local(completed.external_pointer) / "_metadata").read_bytes() == b"second"


def test_md7_relative_paths_are_rebased_unchecked(flink_storage):
    """Beyond Flink (MD-7): Flink's metadata deserializer builds new Path(exclusiveDir,
    relativePath) for any relative path; '../victim' names a file outside the checkpoint."""
    from flinktarget.storage import FlinkRelativeFileStateHandle

    completed = _finalize(_job(flink_storage).initialize_location_for_checkpoint(3))
    foreign = FlinkRelativeFileStateHandle("file:/somewhere/else", "../victim", 3)
    rebased = completed.resolve_handle(foreign)
    assert rebased.file_path == completed.external_pointer.rsplit("/", 1)[0] + "/victim"


def test_bad5_blank_savepoint_target_is_a_relative_directory(flink_storage):
    """Beyond Flink (BAD-5): Flink's Path refuses '' but takes ' ' as a relative directory (in
    the working directory of the JVM)."""
    access = _job(flink_storage)
    with pytest.raises(ValueError, match="empty string"):
        access.initialize_location_for_savepoint(1, "")
    completed = _finalize(access.initialize_location_for_savepoint(1, " "))
    savepoint = _local(completed.external_pointer)
    try:
        assert savepoint.parent.name == " "
        assert savepoint.name.startswith("savepoint-")
        assert (savepoint / "_metadata").is_file()
    finally:
        shutil.rmtree(savepoint, ignore_errors=True)
        with contextlib.suppress(OSError):
            savepoint.parent.rmdir()  # only if nothing else is in it


def test_str16_a_handle_reads_whatever_its_file_holds(flink_storage):
    """Beyond Flink (STR-16): FileStateHandle reads whatever its file holds (H1), so a state
    file truncated behind the storage's back reads as fewer bytes than its state size, with
    no error."""
    access = _job(flink_storage)
    factory = access.resolve_checkpoint_storage_location(
        5, access.initialize_location_for_checkpoint(5).location_reference
    )
    state = bytes(range(256)) * 40
    stream = factory.create_checkpoint_state_output_stream(EXCLUSIVE)
    stream.write(state)
    handle = stream.close_and_get_handle()
    assert handle.state_size == len(state)
    path = _local(handle.file_path)
    path.write_bytes(state[:5000])
    source = handle.open_input_stream()
    try:
        assert source.read() == state[:5000]
    finally:
        source.close()


def _seconds_to_resolve(storage, pointer: str) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    with contextlib.suppress(OSError):
        storage.resolve_checkpoint(pointer)
    return time.perf_counter() - start


def test_bad17_dot_segments_take_quadratic_time(flink_storage):
    """Flink bug (BAD-17): resolving a pointer of 'x/' and '../' repeated takes time quadratic
    in its length (java.net.URI.normalize() rescans removed segments): four times the pairs,
    about sixteen times the time, where a linear parse would take four. Each length keeps its
    fastest of a few runs, so a busy machine slowing one run cannot hide the curve."""
    _seconds_to_resolve(flink_storage, "x/" * 4096 + "../" * 4096)  # the JIT warms up
    short = min(_seconds_to_resolve(flink_storage, "x/" * 8192 + "../" * 8192) for _ in range(5))
    long = min(_seconds_to_resolve(flink_storage, "x/" * 32768 + "../" * 32768) for _ in range(3))
    assert long > 8 * short, (short, long)


def test_duplicate_answers_unsupported_before_checking_arguments(flink_storage):
    """Without fast duplication, duplicate(None) is refused as unsupported, not as None: why
    BAD-1's corpus calls duplicate() only where fast-duplicate is claimed (TO5, S17)."""
    access = _job(flink_storage)
    factory = access.resolve_checkpoint_storage_location(
        4, access.initialize_location_for_checkpoint(4).location_reference
    )
    with pytest.raises(ValueError, match="does not support duplication"):
        factory.duplicate(None, EXCLUSIVE)
    with pytest.raises(OSError, match="does not support duplication"):
        access.create_task_owned_checkpoint_state_toolset().duplicate(None)


def test_str5_memory_stream_takes_writes_after_close(jobmanager_storage):
    """Flink bug (STR-5, THR-3): MemoryCheckpointOutputStream.write() never checks closed."""
    access = jobmanager_storage.create_checkpoint_storage(JobID.generate())
    factory = access.resolve_checkpoint_storage_location(
        1, access.initialize_location_for_checkpoint(1).location_reference
    )
    stream = factory.create_checkpoint_state_output_stream(EXCLUSIVE)
    stream.close()
    assert stream.closed
    assert stream.write(b"after close") == 11  # no IOException


def test_md10_in_memory_metadata_takes_writes_after_finalize(flink_ready):  # type: ignore[no-untyped-def]
    """Flink bug (MD-10): without a checkpoint directory, the metadata stream of
    NonPersistentMetadataCheckpointStorageLocation never checks closed in write(), so writes
    after closeAndFinalizeCheckpoint() succeed into a buffer nobody reads."""
    from flinktarget import jobmanager_target_unchecked

    storage = jobmanager_target_unchecked.make_storage(
        checkpoint_dir=None, savepoint_dir=None, options={}
    )
    access = storage.create_checkpoint_storage(JobID.generate())
    stream = access.initialize_location_for_checkpoint(1).create_metadata_output_stream()
    stream.write(b"metadata")
    completed = stream.close_and_finalize_checkpoint()
    assert completed.external_pointer == "<checkpoint-not-externally-addressable>"
    assert stream.write(b"after finalize") == 14  # no IOException
    with pytest.raises(OSError, match="Already closed"):
        stream.close_and_finalize_checkpoint()


def test_str3_memory_stream_counts_an_empty_write(jobmanager_storage):
    """Flink bug (STR-3): an empty write marks MemoryCheckpointOutputStream non-empty, so it
    returns a 0-byte ByteStreamStateHandle where the file streams return null (FLINK-5218)."""
    access = jobmanager_storage.create_checkpoint_storage(JobID.generate())
    factory = access.resolve_checkpoint_storage_location(
        1, access.initialize_location_for_checkpoint(1).location_reference
    )
    stream = factory.create_checkpoint_state_output_stream(EXCLUSIVE)
    stream.write(b"")
    handle = stream.close_and_get_handle()
    assert handle is not None
    assert handle.state_size == 0
