"""Interoperability on the local file system, both ways, between the reference and Flink 2.3.0.

A checkpoint written through the reference is resolved by Flink's storage from its pointer and
its state is read by Flink's own handles; one written by Flink is resolved and read by the
reference. Exclusive state travels as relative handles (rebased by the reader's completed
location, as Flink's metadata deserializer does), shared state as absolute file handles.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ckptstore import FileSystemCheckpointStorage
from ckptstore.api import CheckpointedStateScope, JobID

EXCLUSIVE = CheckpointedStateScope.EXCLUSIVE
SHARED = CheckpointedStateScope.SHARED
STATE = {EXCLUSIVE: [b"e" * 3000, b"E" * 70_000], SHARED: [b"s" * 5000]}
METADATA = b"\x49\x60\x67\x2d metadata written by one, read by the other"


def _read(handle) -> bytes:  # type: ignore[no-untyped-def]
    with handle.open_input_stream() as stream:
        return stream.read()


def _checkpoint(storage, checkpoint_id: int):  # type: ignore[no-untyped-def]
    """A whole checkpoint through the contract: (completed location, [(handle, bytes)])."""
    access = storage.create_checkpoint_storage(JobID.generate())
    access.initialize_base_locations_for_checkpoint()
    location = access.initialize_location_for_checkpoint(checkpoint_id)
    factory = access.resolve_checkpoint_storage_location(checkpoint_id, location.location_reference)
    written = []
    for scope, blobs in STATE.items():
        for blob in blobs:
            stream = factory.create_checkpoint_state_output_stream(scope)
            stream.write(blob)
            written.append((stream.close_and_get_handle(), blob))
    stream = location.create_metadata_output_stream()
    stream.write(METADATA)
    return stream.close_and_finalize_checkpoint(), written


@pytest.fixture
def flink(flink_ready, tmp_path: Path):  # type: ignore[no-untyped-def]
    from flinktarget import target_unchecked

    return target_unchecked.make_storage(
        checkpoint_dir=(tmp_path / "checkpoints").as_uri(),
        savepoint_dir=None,
        options={"inline_threshold": 0, "write_buffer_size": 4096},
    )


@pytest.fixture
def reference(tmp_path: Path) -> FileSystemCheckpointStorage:
    return FileSystemCheckpointStorage((tmp_path / "checkpoints").as_uri(), 0, 4096)


def test_flink_reads_what_the_reference_wrote(flink, reference):
    from flinktarget.storage import FlinkFileStateHandle, to_flink_handle

    completed, written = _checkpoint(reference, 11)
    resolved = flink.resolve_checkpoint(completed.external_pointer)
    assert _read(resolved.metadata_handle) == METADATA
    assert isinstance(resolved.metadata_handle, FlinkFileStateHandle)
    for handle, blob in written:
        flink_handle = resolved.resolve_handle(to_flink_handle(handle))
        assert isinstance(flink_handle, FlinkFileStateHandle)  # read by Java, not fsspec
        assert _read(flink_handle) == blob
    assert any(hasattr(h, "relative_path") for h, _ in written)


def test_reference_reads_what_flink_wrote(flink, reference):
    from ckptstore.filesystem.handles import FileStateHandle

    completed, written = _checkpoint(flink, 12)
    assert completed.external_pointer.startswith("file:/")  # Flink's spelling of the pointer
    resolved = reference.resolve_checkpoint(completed.external_pointer)
    assert _read(resolved.metadata_handle) == METADATA
    for handle, blob in written:
        if hasattr(handle, "relative_path"):
            ours = resolved.resolve_handle(handle)
        else:
            ours = FileStateHandle(handle.file_path, handle.state_size)
        assert type(ours).__module__.startswith("ckptstore"), ours
        assert _read(ours) == blob
