"""The state output stream (S4-S16): Flink's FsCheckpointStreamFactoryTest (T-FSF*),
FsCheckpointStateOutputStreamTest (T-SOS*) and CheckpointStateOutputStreamTest (T-CSOS*)."""

from __future__ import annotations

import errno
import random
import threading
import time
from typing import Any

import pytest

from ckptstore import FileStateHandle, RelativeFileStateHandle
from ckptstore.api import (
    ByteStreamStateHandle,
    CheckpointedStateScope,
    CheckpointStateOutputStream,
    CheckpointStorageLocationReference,
    JobID,
)
from ckptstore.errors import (
    CheckpointIOError,
    InvalidArgumentError,
    StreamClosedError,
    StreamFailedError,
)
from ckptstore.filesystem import streams as streams_module
from ckptstore.filesystem.locations import FsCheckpointStreamFactory
from ckptstore.filesystem.streams import FsCheckpointStateOutputStream
from ckptstore.paths import parse_storage_path
from ckptstore.stores.registry import register_filesystem
from tests.reference._fsroot import FsRoot
from tests.reference._moto import S3Root
from tests.reference.test_s3_requests import make_storage


def _stream(
    root: FsRoot, buffer_size: int, threshold: int, relative: bool = False, sub: str = "dir"
) -> FsCheckpointStateOutputStream:
    directory = root.sub(sub)
    root.makedirs(directory)
    return FsCheckpointStateOutputStream(
        parse_storage_path(directory),
        buffer_size=buffer_size,
        threshold=threshold,
        fs_token=register_filesystem(root.scheme),
        allow_relative_paths=relative,
    )


def _factory(root: FsRoot, threshold: int, buffer_size: int = 4096) -> FsCheckpointStreamFactory:
    exclusive, shared = root.sub("chk-1"), root.sub("shared")
    root.makedirs(exclusive)
    root.makedirs(shared)
    return FsCheckpointStreamFactory(
        parse_storage_path(exclusive),
        parse_storage_path(shared),
        file_state_threshold=threshold,
        write_buffer_size=buffer_size,
        fs_token=register_filesystem(root.scheme),
    )


def _read(handle: Any) -> bytes:
    with handle.open_input_stream() as stream:
        return bytes(stream.read())


def _random_writes(stream: FsCheckpointStateOutputStream, data: bytes, rnd: random.Random) -> None:
    """Write ``data`` as a random mix of single bytes and arrays (as T-SOS3..5 do)."""
    pos = 0
    while pos < len(data):
        if rnd.random() < 0.3:
            stream.write(data[pos : pos + 1])
            pos += 1
        else:
            n = min(len(data) - pos, rnd.randint(1, 2 * max(1, len(data) // 50)))
            chunk = bytearray(data[pos : pos + n])
            before = bytes(chunk)
            stream.write(chunk)
            assert bytes(chunk) == before  # the source array is not modified
            pos += n


# --------------------------------------------------------------------------- T-FSF


def test_exactly_threshold_in_one_write_stays_inline(fsroot: FsRoot) -> None:
    """T-FSF1 (deliberately different): threshold = buffer = 100, one 100-byte write.

    Flink spills a single write of exactly ``capacity`` bytes to a file at once. Our inline
    rule (INTERFACES.md) keeps state of size <= threshold inline whatever the chunking, so
    the 100 bytes stay buffered; the 101st byte makes it a file.
    """
    stream = _stream(fsroot, 100, 100)
    stream.write(bytes(100))
    assert fsroot.files(fsroot.sub("dir")) == []
    handle = stream.close_and_get_handle()
    assert isinstance(handle, ByteStreamStateHandle)
    assert handle.data == bytes(100)

    stream = _stream(fsroot, 100, 100)
    stream.write(bytes(100))
    stream.write(b"x")
    handle = stream.close_and_get_handle()
    assert isinstance(handle, FileStateHandle)
    assert handle.state_size == 101
    assert _read(handle) == bytes(100) + b"x"


def test_write_larger_than_capacity_goes_to_the_file(fsroot: FsRoot) -> None:
    """T-FSF1 (the part we keep): a write >= capacity that does not fit spills at once."""
    stream = _stream(fsroot, 100, 100)
    stream.write(bytes(150))
    assert len(fsroot.files(fsroot.sub("dir"))) == 1
    stream.write(bytes(99))
    handle = stream.close_and_get_handle()
    assert handle is not None
    assert handle.state_size == 249


def test_exclusive_state_has_relative_path_handles(fsroot: FsRoot) -> None:
    """T-FSF2: EXCLUSIVE scope, threshold 0 -> RelativeFileStateHandle in the exclusive dir."""
    factory = _factory(fsroot, 0)
    stream = factory.create_checkpoint_state_output_stream(CheckpointedStateScope.EXCLUSIVE)
    stream.write(b"0")
    handle = stream.close_and_get_handle()
    assert isinstance(handle, RelativeFileStateHandle)
    path = parse_storage_path(handle.file_path)
    assert path.parent.url == parse_storage_path(fsroot.sub("chk-1")).url
    assert handle.relative_path == path.name


def test_shared_state_has_absolute_path_handles(fsroot: FsRoot) -> None:
    """T-FSF3: SHARED scope -> plain FileStateHandle in the shared dir."""
    factory = _factory(fsroot, 0)
    stream = factory.create_checkpoint_state_output_stream(CheckpointedStateScope.SHARED)
    stream.write(b"0")
    handle = stream.close_and_get_handle()
    assert type(handle) is FileStateHandle
    assert (
        parse_storage_path(handle.file_path).parent.url
        == parse_storage_path(fsroot.sub("shared")).url
    )


def test_flush_under_threshold(fsroot: FsRoot) -> None:
    """T-FSF6: threshold 10, write 10 bytes, flush() creates no file (S9)."""
    stream = _factory(fsroot, 10).create_checkpoint_state_output_stream(
        CheckpointedStateScope.EXCLUSIVE
    )
    stream.write(bytes(10))
    stream.flush()
    assert fsroot.files(fsroot.sub("chk-1")) == []
    stream.close()


def test_flush_above_threshold(fsroot: FsRoot) -> None:
    """T-FSF7: threshold 10, write 11 bytes, flush() leaves exactly one file."""
    stream = _factory(fsroot, 10).create_checkpoint_state_output_stream(
        CheckpointedStateScope.EXCLUSIVE
    )
    stream.write(bytes(11))
    stream.flush()
    assert len(fsroot.files(fsroot.sub("chk-1"))) == 1
    stream.close()
    assert fsroot.files(fsroot.sub("chk-1")) == []


def test_unknown_scope_and_factory_validation(fsroot: FsRoot) -> None:
    """S2/S3: factory parameter checks with Flink's messages; unknown scope is a ValueError."""
    factory = _factory(fsroot, 10)
    with pytest.raises(InvalidArgumentError, match="Unknown state scope"):
        factory.create_checkpoint_state_output_stream("private")  # type: ignore[arg-type]
    path = parse_storage_path(fsroot.url)
    with pytest.raises(InvalidArgumentError, match="zero or larger"):
        FsCheckpointStreamFactory(path, path, file_state_threshold=-1, write_buffer_size=1)
    with pytest.raises(InvalidArgumentError, match="cannot be larger than 1048576"):
        FsCheckpointStreamFactory(path, path, file_state_threshold=1048577, write_buffer_size=1)
    # S3: the buffer is max(buffer, threshold)
    big = FsCheckpointStreamFactory(path, path, file_state_threshold=5000, write_buffer_size=10)
    assert big.write_buffer_size == 5000


# --------------------------------------------------------------------------- T-SOS


def test_wrong_parameters(fsroot: FsRoot) -> None:
    """T-SOS1: buffer 4000 < threshold 5000 raises ValueError."""
    with pytest.raises(InvalidArgumentError):
        _stream(fsroot, 4000, 5000)


@pytest.mark.parametrize("relative", [True, False])
def test_empty_state(fsroot: FsRoot, relative: bool) -> None:
    """T-SOS2 / S12(a): nothing written -> None (and an empty write counts as nothing)."""
    stream = _stream(fsroot, 1024, 512, relative)
    stream.write(b"")
    assert stream.close_and_get_handle() is None
    assert fsroot.files() == []


@pytest.mark.parametrize("relative", [True, False])
def test_state_below_mem_threshold(fsroot: FsRoot, relative: bool) -> None:
    """T-SOS3: 999 bytes, buffer 1024, threshold 1000 -> inline, contents round-trip."""
    data = random.Random(1).randbytes(999)
    stream = _stream(fsroot, 1024, 1000, relative)
    _random_writes(stream, data, random.Random(2))
    handle = stream.close_and_get_handle()
    assert isinstance(handle, ByteStreamStateHandle)
    assert _read(handle) == data
    assert handle.handle_name.startswith(parse_storage_path(fsroot.sub("dir")).url + "/")
    assert fsroot.files() == []


@pytest.mark.parametrize(
    ("size", "buffer_size", "threshold"),
    [(896, 1024, 15), (576446, 259, 17), (16678, 4096, 0)],
    ids=["T-SOS4-one-buffer", "T-SOS5-above", "T-SOS5-zero-threshold"],
)
@pytest.mark.parametrize("relative", [True, False])
def test_state_above_threshold(
    fsroot: FsRoot, size: int, buffer_size: int, threshold: int, relative: bool
) -> None:
    """T-SOS4 / T-SOS5: state above the threshold becomes a file; read back, then discarded."""
    data = random.Random(size).randbytes(size)
    stream = _stream(fsroot, buffer_size, threshold, relative)
    _random_writes(stream, data, random.Random(size + 1))
    handle = stream.close_and_get_handle()
    assert isinstance(handle, RelativeFileStateHandle if relative else FileStateHandle)
    assert handle.state_size == size
    assert _read(handle) == data
    assert fsroot.read(handle.file_path) == data
    handle.discard_state()
    assert fsroot.files() == []
    assert fsroot.isdir(fsroot.sub("dir"))


def test_get_pos(fsroot: FsRoot) -> None:
    """T-SOS6 / S10: tell() counts every byte, across spills."""
    stream = _stream(fsroot, 31, 17)
    for i in range(64):
        assert stream.tell() == i
        stream.write(b"x")
    stream.close()
    stream = _stream(fsroot, 31, 17)
    written = 0
    for _ in range(20):
        assert stream.tell() == written
        stream.write(b"x")
        stream.write(bytes(7))
        written += 8
    assert stream.tell() == written
    handle = stream.close_and_get_handle()
    assert handle is not None
    assert handle.state_size == written


def test_cleanup_when_closing_stream(fsroot: FsRoot) -> None:
    """T-SOS7 / T-CSOS3: the file exists while open; close() deletes that same file."""
    stream = _stream(fsroot, 4, 0)
    stream.write(bytes(5))
    assert stream.file_path is not None
    assert fsroot.exists(stream.file_path)
    stream.close()
    assert not fsroot.exists(stream.file_path)
    assert fsroot.isdir(fsroot.sub("dir"))


def test_cleanup_when_failing_close_and_get_handle(
    fsroot: FsRoot, monkeypatch: pytest.MonkeyPatch
) -> None:
    """T-SOS8 / T-CSOS4: the final close fails -> OSError, and the same file is deleted."""
    stream = _stream(fsroot, 4, 0)
    stream.write(bytes(5))
    target = stream.file_path
    assert target is not None

    def failing(writer: Any, path: Any) -> None:
        writer.close()
        raise OSError("disk on fire")

    monkeypatch.setattr(streams_module, "sync_and_close", failing)
    with pytest.raises(CheckpointIOError, match="Could not flush to file and close"):
        stream.close_and_get_handle()
    assert not fsroot.exists(target)
    assert stream.closed


class _FileSizeLimit:
    """A stream's real writer under a file size limit: a write that would pass ``limit``
    stores the bytes up to it and fails with EFBIG, as a write under ``RLIMIT_FSIZE`` does."""

    def __init__(self, inner: Any, limit: int) -> None:
        self.inner = inner
        self.limit = limit
        self.written = 0

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        if self.written + len(view) > self.limit:
            self.inner.write(view[: self.limit - self.written])
            self.inner.flush()
            self.written = self.limit
            raise OSError(errno.EFBIG, "File too large")
        self.written += len(view)
        return int(self.inner.write(view))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _limited_stream(
    root: FsRoot, monkeypatch: pytest.MonkeyPatch, limit: int
) -> FsCheckpointStateOutputStream:
    real = streams_module.open_exclusive_write
    monkeypatch.setattr(
        streams_module,
        "open_exclusive_write",
        lambda fs, path: _FileSizeLimit(real(fs, path), limit),
    )
    return _stream(root, 4096, 0)


def test_a_write_that_failed_part_way_poisons_the_stream(
    fsroot: FsRoot, monkeypatch: pytest.MonkeyPatch
) -> None:
    """128 KiB acknowledged, then a 2 MiB write fails part-way (1 MiB limit): every later
    write, flush and close_and_get_handle raises StreamFailedError (the failure's errno), no
    handle is given and the partial file is removed."""
    stream = _limited_stream(fsroot, monkeypatch, limit=1 << 20)
    stream.write(bytes(128 << 10))
    stream.flush()
    with pytest.raises(OSError) as failed:
        stream.write(bytes(2 << 20))
    assert failed.value.errno == errno.EFBIG
    target = stream.file_path
    assert target is not None
    assert len(fsroot.read(target)) == 1 << 20  # the unacknowledged fragment is in the file
    for call in (lambda: stream.write(b"x"), lambda: stream.write(b""), stream.flush):
        with pytest.raises(StreamFailedError, match="failed a write or flush earlier") as error:
            call()
        assert error.value.errno == errno.EFBIG
        assert error.value.__cause__ is failed.value
    with pytest.raises(StreamFailedError):
        stream.close_and_get_handle()
    assert stream.closed
    assert not fsroot.exists(target)
    stream.close()
    with pytest.raises(StreamClosedError):
        stream.close_and_get_handle()


def test_close_discards_a_failed_stream(fsroot: FsRoot, monkeypatch: pytest.MonkeyPatch) -> None:
    """close() after a failed write removes the partial file and never raises."""
    stream = _limited_stream(fsroot, monkeypatch, limit=10_000)
    with pytest.raises(OSError):
        stream.write(bytes(50_000))
    target = stream.file_path
    assert target is not None
    assert fsroot.exists(target)
    stream.close()
    assert not fsroot.exists(target)


def test_a_failed_file_creation_gives_no_inline_handle(
    fsroot: FsRoot, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write whose file could not be created leaves part of its bytes in the buffer; a later
    close_and_get_handle must not hand those out (inline or in a file created then)."""
    real = streams_module.open_exclusive_write
    failures = iter(range(streams_module.MAX_FILE_CREATION_ATTEMPTS))

    def creation(fs: Any, path: Any) -> Any:
        if next(failures, None) is not None:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fs, path)

    monkeypatch.setattr(streams_module, "open_exclusive_write", creation)
    stream = _stream(fsroot, 100, 100)
    stream.write(bytes(60))
    with pytest.raises(OSError, match="Could not open output stream"):
        stream.write(bytes(60))
    with pytest.raises(StreamFailedError) as error:
        stream.close_and_get_handle()
    assert error.value.errno == errno.ENOSPC
    assert fsroot.files(fsroot.sub("dir")) == []


def _write_megabytes(stream: Any, count: int) -> None:
    for _ in range(count):
        stream.write(bytes(1 << 20))


def test_a_failed_part_upload_poisons_the_stream(s3: S3Root) -> None:
    """S3: an UploadPart refused mid-stream fails the write; close_and_get_handle then raises
    and no object and no open multipart upload is left."""
    storage = make_storage(s3, storage_options={"default_block_size": 5 << 20})
    access = storage.create_checkpoint_storage(JobID.generate())
    location = access.resolve_checkpoint_storage_location(
        1, CheckpointStorageLocationReference.default()
    )
    stream = location.create_checkpoint_state_output_stream(CheckpointedStateScope.EXCLUSIVE)
    s3.ledger.inject("UploadPart", status=403, code="AccessDenied", times=1)
    try:
        with pytest.raises(OSError):
            _write_megabytes(stream, 30)
    finally:
        s3.ledger.clear_faults()
    with pytest.raises(StreamFailedError):
        stream.close_and_get_handle()
    assert s3.keys() == []
    bucket, prefix = s3.url.removeprefix("s3://").split("/", 1)
    uploads = s3.raw.call_s3("list_multipart_uploads", Bucket=bucket, Prefix=prefix)
    assert not uploads.get("Uploads")


def test_write_fails_fast_when_closed(fsroot: FsRoot) -> None:
    """T-SOS9 / S14: after close(), writes and close_and_get_handle raise OSError+ValueError."""
    stream = _stream(fsroot, 1024, 512)
    stream.close()
    assert stream.closed
    with pytest.raises(StreamClosedError):
        stream.write(b"x")
    with pytest.raises(OSError):
        stream.write(b"xy")
    with pytest.raises(ValueError, match="already been closed"):
        stream.close_and_get_handle()
    assert stream.write(b"") == 0  # S14 (derived): an empty write after close does not raise


def test_mixed_below_and_above_threshold(fsroot: FsRoot) -> None:
    """T-SOS10: file, inline and None results share one dir; discards empty it."""
    big = random.Random(3).randbytes(1_274_673)
    s1 = _stream(fsroot, 1024, 15)
    s1.write(big)
    h1 = s1.close_and_get_handle()
    assert isinstance(h1, FileStateHandle)

    s2 = _stream(fsroot, 1024, 15)
    s2.write(b"1")
    h2 = s2.close_and_get_handle()
    assert isinstance(h2, ByteStreamStateHandle)

    s3 = _stream(fsroot, 1024, 15)
    s3.write(b"")
    assert s3.close_and_get_handle() is None

    with _stream(fsroot, 1024, 15) as s4:
        s4.write(bytes(177))
        h4 = s4.close_and_get_handle()
    assert isinstance(h4, FileStateHandle)
    assert _read(h4) == bytes(177)  # still valid after the auto-close

    s5 = _stream(fsroot, 1024, 15)
    s5.close()
    with pytest.raises(OSError):
        s5.close_and_get_handle()

    assert _read(h1) == big
    for handle in (h1, h2, h4):
        handle.discard_state()
    assert fsroot.files(fsroot.sub("dir")) == []
    assert fsroot.isdir(fsroot.sub("dir"))


def test_stream_does_not_clean_up_parent_on_error(fsroot: FsRoot, spy_fs: Any) -> None:
    """T-SOS11: a failing stream never deletes (or inspects) its directory.

    The directory does not exist (the worker never creates one, S1), so on the local file
    system the file cannot be created; on memory it can. Either way no call touches the
    directory itself.
    """
    spy = spy_fs(fsroot.scheme)
    directory = parse_storage_path(fsroot.sub("missing"))
    for _ in range(2):
        stream = FsCheckpointStateOutputStream(
            directory, buffer_size=4, threshold=0, fs_token=register_filesystem(fsroot.scheme)
        )
        try:
            stream.write(bytes(10))
            stream.close_and_get_handle()
        except OSError:
            assert fsroot.name == "local"
        stream.close()
    touched = [args[0] for _, args in spy.calls if args]
    assert directory.path not in touched
    assert not {"rm", "rmdir", "exists", "info", "ls", "makedirs", "mkdir"} & set(spy.names())


def test_close_racing_with_file_creation(fsroot: FsRoot, monkeypatch: pytest.MonkeyPatch) -> None:
    """T-SOS12 / S16: close() during file creation leaves the stream closed and no file."""
    stream = _stream(fsroot, 4, 0)
    entered, release = threading.Event(), threading.Event()
    real_open = streams_module.open_exclusive_write

    def slow_open(fs: Any, path: Any) -> Any:
        writer = real_open(fs, path)
        entered.set()
        release.wait(5)
        return writer

    monkeypatch.setattr(streams_module, "open_exclusive_write", slow_open)
    worker = threading.Thread(target=lambda: stream.write(bytes(10)))
    worker.start()
    assert entered.wait(5)
    started = time.monotonic()
    stream.close()
    assert time.monotonic() - started < 2  # close() does not wait for the write
    release.set()
    worker.join(5)
    assert stream.closed
    assert fsroot.files(fsroot.sub("dir")) == []


def test_close_does_not_lock(fsroot: FsRoot, monkeypatch: pytest.MonkeyPatch) -> None:
    """T-CSOS5 / S16: close() returns while close_and_get_handle is blocked; the handle wins."""
    stream = _stream(fsroot, 4, 0)
    stream.write(bytes(10))
    entered, release = threading.Event(), threading.Event()
    real = streams_module.sync_and_close

    def blocking(writer: Any, path: Any) -> None:
        entered.set()
        release.wait(10)
        real(writer, path)

    monkeypatch.setattr(streams_module, "sync_and_close", blocking)
    result: list[Any] = []
    worker = threading.Thread(target=lambda: result.append(stream.close_and_get_handle()))
    worker.start()
    assert entered.wait(5)
    started = time.monotonic()
    stream.close()
    assert time.monotonic() - started < 2
    release.set()
    worker.join(5)
    assert isinstance(result[0], FileStateHandle)
    assert _read(result[0]) == bytes(10)


def test_close_is_idempotent_and_close_after_handle_keeps_file(fsroot: FsRoot) -> None:
    """S13 / S14: close() twice is fine; close() after close_and_get_handle keeps the file."""
    stream = _stream(fsroot, 4, 0)
    stream.write(bytes(8))
    handle = stream.close_and_get_handle()
    assert isinstance(handle, FileStateHandle)
    stream.close()
    stream.close()
    assert fsroot.exists(handle.file_path)
    with pytest.raises(StreamClosedError):
        stream.close_and_get_handle()


def test_file_creation_retries(fsroot: FsRoot, monkeypatch: pytest.MonkeyPatch) -> None:
    """S11: up to 10 attempts with fresh names; after 10 failures an OSError with the cause."""
    real_open = streams_module.open_exclusive_write
    names: list[str] = []

    def flaky(fs: Any, path: Any) -> Any:
        names.append(path.name)
        if len(names) < 10:
            raise FileExistsError(path.url)
        return real_open(fs, path)

    monkeypatch.setattr(streams_module, "open_exclusive_write", flaky)
    stream = _stream(fsroot, 4, 0)
    stream.write(bytes(5))
    handle = stream.close_and_get_handle()
    assert handle is not None
    assert len(names) == 10
    assert len(set(names)) == 10

    def always(fs: Any, path: Any) -> Any:
        raise FileExistsError(path.url)

    monkeypatch.setattr(streams_module, "open_exclusive_write", always)
    stream = _stream(fsroot, 4, 0)
    with pytest.raises(CheckpointIOError, match="Could not open output stream") as info:
        stream.write(bytes(5))
    assert isinstance(info.value.__cause__, FileExistsError)
    stream.close()


def test_data_file_names_are_uuids(fsroot: FsRoot) -> None:
    """L3: state files are named <uuid4> (36 characters) directly in the target directory."""
    stream = _stream(fsroot, 4, 0)
    stream.write(bytes(5))
    handle = stream.close_and_get_handle()
    assert isinstance(handle, FileStateHandle)
    name = parse_storage_path(handle.file_path).name
    assert len(name) == 36
    assert name.count("-") == 4


def test_protocol_and_concurrent_writers(fsroot: FsRoot) -> None:
    """The stream satisfies the api protocol; streams in threads do not interfere."""
    factory = _factory(fsroot, 100)
    results: dict[int, Any] = {}

    def work(i: int) -> None:
        s = factory.create_checkpoint_state_output_stream(CheckpointedStateScope.SHARED)
        assert isinstance(s, CheckpointStateOutputStream)
        s.write(bytes([i]) * (50 + 37 * i))
        results[i] = s.close_and_get_handle()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, handle in results.items():
        assert _read(handle) == bytes([i]) * (50 + 37 * i)


def test_commit_conflict_never_deletes_the_other_object(
    fsroot: FsRoot, monkeypatch: pytest.MonkeyPatch
) -> None:
    """S12(e) refinement: when the exclusive commit reports that the object exists (another
    writer's, on object stores), the failing stream must not delete it."""
    stream = _stream(fsroot, 4, 0)
    stream.write(bytes(5))
    target = stream.file_path
    assert target is not None

    def conflict(writer: Any, path: Any) -> None:
        writer.close()
        raise FileExistsError(path.url)

    monkeypatch.setattr(streams_module, "sync_and_close", conflict)
    with pytest.raises(CheckpointIOError):
        stream.close_and_get_handle()
    assert fsroot.exists(target)
