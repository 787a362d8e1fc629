"""``ckptstore.stores.s3.ExclusiveUpload``, the writer of S3 state files (issue 13, S3 writes).

A state up to the writer's buffer is one exclusive PutObject; a larger one a multipart upload
whose first part is the buffer and whose other parts are ``part_size``, never holding more
than the buffer (the part filling and the one in flight together); a commit never replaces an
existing object; a discarded writer sends nothing or aborts its upload; a failing part comes
out of the next write or the close. Through the storage: ``default_block_size`` in the
storage options sizes buffer and parts as s3fs's own files.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from ckptstore.api import CheckpointedStateScope, CheckpointStorageLocationReference, JobID
from ckptstore.filesystem.handles import FileStateHandle
from ckptstore.stores import s3 as s3_module
from ckptstore.stores.s3 import MIN_PART_SIZE, ExclusiveUpload
from tests.reference._moto import S3Root
from tests.reference.test_s3_requests import make_storage

pytest.importorskip("s3fs")
pytest.importorskip("moto.server")

MIB = 1 << 20


def _upload(s3_root: S3Root, name: str, *, limit: int, part: int) -> tuple[ExclusiveUpload, str]:
    """A writer on a client whose requests the ledger sees (``raw`` is invisible to it)."""
    import s3fs

    fs = s3fs.S3FileSystem(skip_instance_cache=True, **s3_root.storage_options)
    url = s3_root.sub(name)
    bucket, key, _ = fs.split_path(url)
    return ExclusiveUpload(fs, bucket, key, buffer_limit=limit, part_size=part), url


def _part_sizes(rec: Any) -> list[int]:
    return [r.bytes_in for r in rec.requests if r.operation == "UploadPart"]


def test_a_state_up_to_the_buffer_is_one_exclusive_put(s3: S3Root) -> None:
    data = os.urandom(10 * MIB)
    writer, url = _upload(s3, "exactly-the-buffer", limit=10 * MIB, part=5 * MIB)
    with s3.record() as rec:
        for start in range(0, len(data), MIB):
            assert writer.write(data[start : start + MIB]) == MIB
        writer.close()
    assert rec.operations() == {"PutObject": 1}, rec.summary()
    assert rec.requests[0].bytes_in == len(data)
    assert s3.read(url) == data
    assert writer.closed


def test_a_larger_state_is_a_multipart_upload_within_the_buffer(s3: S3Root) -> None:
    data = os.urandom(23 * MIB + 5)
    writer, url = _upload(s3, "multipart", limit=10 * MIB, part=5 * MIB)
    held = 0
    with s3.record() as rec:
        for start in range(0, len(data), 3 * MIB):  # writes that do not divide the parts
            writer.write(memoryview(data)[start : start + 3 * MIB])
            held = max(held, writer._buffered + writer._in_flight_size)
        writer.close()
    ops = rec.operations()
    assert ops == {"CreateMultipartUpload": 1, "UploadPart": 4, "CompleteMultipartUpload": 1}, (
        rec.summary()
    )
    # the first part is the whole buffer, the others part_size, the last what is left
    assert _part_sizes(rec) == [10 * MIB, 5 * MIB, 5 * MIB, 3 * MIB + 5]
    assert held <= 10 * MIB
    assert s3.read(url) == data


def test_one_large_write_is_split_into_parts(s3: S3Root) -> None:
    data = os.urandom(12 * MIB)
    writer, url = _upload(s3, "one-write", limit=5 * MIB, part=5 * MIB)
    with s3.record() as rec:
        writer.write(bytearray(data))
        writer.close()
    assert _part_sizes(rec) == [5 * MIB, 5 * MIB, 2 * MIB], rec.summary()
    assert s3.read(url) == data


def test_the_commit_never_replaces_an_object(s3: S3Root) -> None:
    for size, name in ((MIB, "small"), (11 * MIB, "large")):
        url = s3.sub(f"taken-{name}")
        s3.raw.pipe_file(url, b"first")
        writer, _ = _upload(s3, f"taken-{name}", limit=5 * MIB, part=5 * MIB)
        writer.write(os.urandom(size))
        with pytest.raises(OSError):
            writer.close()
        writer.discard()
        assert s3.read(url) == b"first"


def test_a_discarded_writer_sends_nothing_or_aborts(s3: S3Root) -> None:
    small, small_url = _upload(s3, "discard-small", limit=5 * MIB, part=5 * MIB)
    large, large_url = _upload(s3, "discard-large", limit=5 * MIB, part=5 * MIB)
    with s3.record() as rec:
        small.write(os.urandom(MIB))
        small.discard()
        small.close()  # nothing to commit
        for _ in range(12):
            large.write(os.urandom(MIB))
        large.discard()
        large.close()
    ops = rec.operations()
    assert "PutObject" not in ops, rec.summary()
    assert "CompleteMultipartUpload" not in ops, rec.summary()
    assert ops["AbortMultipartUpload"] == 1, rec.summary()
    assert not s3.exists(small_url)
    assert not s3.exists(large_url)
    with pytest.raises(ValueError, match="closed"):
        small.write(b"x")


def test_a_failing_part_comes_out_of_the_next_write_or_the_close(s3: S3Root) -> None:
    writer, url = _upload(s3, "failing-part", limit=5 * MIB, part=5 * MIB)
    s3.ledger.inject("UploadPart", status=403, code="AccessDenied", times=None)
    data = os.urandom(MIB)

    def write_and_close() -> None:
        for _ in range(30):
            writer.write(data)
        writer.close()

    try:
        with pytest.raises(OSError):
            write_and_close()
    finally:
        s3.ledger.clear_faults()
    writer.discard()
    assert not s3.exists(url)


def test_an_empty_object_is_one_put(s3: S3Root) -> None:
    writer, url = _upload(s3, "empty", limit=5 * MIB, part=5 * MIB)
    with s3.record() as rec:
        writer.close()
    assert rec.operations() == {"PutObject": 1}, rec.summary()
    assert s3.read(url) == b""


def test_the_storage_sizes_its_uploads_by_the_buffer_or_default_block_size(s3: S3Root) -> None:
    """Through a state stream: the reference's buffer by default (a 12 MiB state is one
    PutObject), ``default_block_size`` when the storage options set it (as s3fs's files)."""
    assert s3_module.OBJECT_STORE_UPLOAD_BUFFER >= 12 * MIB
    assert s3_module.OBJECT_STORE_PART_SIZE >= MIN_PART_SIZE
    data = os.urandom(12 * MIB)
    for options, expected in (
        ({}, {"PutObject": 1}),
        (
            {"default_block_size": 5 * MIB},
            {"CreateMultipartUpload": 1, "UploadPart": 3, "CompleteMultipartUpload": 1},
        ),
    ):
        storage = make_storage(s3, storage_options=options)
        access = storage.create_checkpoint_storage(JobID.generate())
        location = access.resolve_checkpoint_storage_location(
            1, CheckpointStorageLocationReference.default()
        )
        with s3.record() as rec:
            stream = location.create_checkpoint_state_output_stream(
                CheckpointedStateScope.EXCLUSIVE
            )
            for start in range(0, len(data), MIB):
                stream.write(data[start : start + MIB])
            handle = stream.close_and_get_handle()
        assert rec.operations() == expected, rec.summary()
        assert isinstance(handle, FileStateHandle)
        assert s3.read(handle.file_path) == data


_DROPPED_STREAM = """
import json, sys
from ckptstore import FileSystemCheckpointStorage
from ckptstore.api import CheckpointedStateScope, JobID
options = {**json.loads(sys.argv[2]), "default_block_size": 5 * 2**20}
storage = FileSystemCheckpointStorage(sys.argv[1], 0, storage_options=options)
location = storage.create_checkpoint_storage(JobID.generate()).initialize_location_for_checkpoint(1)
stream = location.create_checkpoint_state_output_stream(CheckpointedStateScope.EXCLUSIVE)
for _ in range(12):
    stream.write(b"x" * 2**20)  # parts sent: a multipart upload is open, one part in flight
print("dropped", flush=True)
"""


def test_a_stream_dropped_at_exit_lets_the_interpreter_end(s3: S3Root) -> None:
    """A process that ends with a large stream never closed (a killed task's) exits: the
    stream's finaliser does no I/O while the interpreter shuts down, when the file system's
    event loop may be gone (it used to abort the multipart upload there and wait forever)."""
    import json
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _DROPPED_STREAM, s3.sub("dropped"), json.dumps(s3.storage_options)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "dropped" in done.stdout
