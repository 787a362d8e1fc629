"""STR: semantics of checkpoint state streams (Flink S4-S16, seed 000's raw bytes storage).

The basic round trip lives here so that it fails first and explains later failures.
"""

from __future__ import annotations

import contextlib
import io
import random
from typing import Any
from urllib.parse import parse_qs

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ckptconform.suite._driver import (
    EXCLUSIVE,
    SHARED,
    JobDriver,
    assert_same_bytes,
    call_outcome,
    expect_error,
    fail_message,
    file_options,
    file_path,
    files_below,
    open_uploads_below,
    outcome,
    payload,
    read_handle,
    require,
    tagged,
    under_file_size_limit,
    within,
    write_chunks,
    write_state,
)
from ckptconform.suite._strategies import capped, chunkings

CLOSED_ERRORS = (OSError, ValueError)


def _factory(drv: JobDriver, checkpoint_id: int = 1):
    drv.init_base()
    location = drv.location(checkpoint_id)
    return drv.worker(checkpoint_id, location.location_reference)


@pytest.mark.clause("STR-1")
@capped(25)
@given(
    data=st.data(),
    size=st.integers(min_value=1, max_value=70_000),
    scope=st.sampled_from([EXCLUSIVE, SHARED]),
)
def test_round_trip_any_chunking(sandbox, target, data, size, scope):
    """STR-1: bytes written in any chunking read back identically, repeatedly."""
    sizes = data.draw(chunkings(size), label="write sizes")
    threshold = data.draw(st.sampled_from([None, 0, 100, 20480]), label="threshold")
    options = (
        {}
        if threshold is None or "inline-state" not in target.capabilities
        else {"inline_threshold": threshold}
    )
    drv = JobDriver(sandbox, **options)
    factory = _factory(drv)
    blob = payload(size, seed=size)
    handle = drv.write(factory, blob, scope, sizes)
    msg = fail_message(
        "STR-1",
        "write+close_and_get_handle",
        sandbox,
        size=size,
        scope=scope,
        sizes=sizes,
        threshold=threshold,
    )
    assert handle is not None, msg + "\nclose_and_get_handle() returned None for non-empty state"
    assert_same_bytes(read_handle(handle), blob, msg + "\nthe handle read other bytes")
    assert_same_bytes(read_handle(handle), blob, msg + "\na second read gave other bytes")
    assert handle.state_size in (size, -1), msg + f"\nstate_size {handle.state_size} != {size}"


@pytest.mark.clause("STR-2")
@pytest.mark.parametrize("threshold", [None, 0, 100])
@pytest.mark.parametrize("scope", [EXCLUSIVE, SHARED])
@pytest.mark.parametrize("size", [1, 100, 101, 70_000])
def test_state_size_is_exact(sandbox, target, threshold, scope, size):
    """STR-2: a handle's state_size is the number of bytes written (not -1)."""
    options = (
        {}
        if threshold is None or "inline-state" not in target.capabilities
        else {"inline_threshold": threshold}
    )
    drv = JobDriver(sandbox, **options)
    handle = drv.write(_factory(drv), payload(size, seed=size), scope, [4096])
    assert handle is not None, fail_message("STR-2", "close_and_get_handle", sandbox, size=size)
    assert handle.state_size == size, fail_message(
        "STR-2", "state_size", sandbox, size=size, scope=scope, threshold=threshold,
        got=handle.state_size,
    )  # fmt: skip


@pytest.mark.clause("STR-3")
def test_empty_stream_gives_none(sandbox, target):
    """STR-3: close_and_get_handle() with nothing written (or only empty writes) returns None
    and leaves no file."""
    drv = JobDriver(sandbox, **file_options(target))
    factory = _factory(drv)
    before = files_below(sandbox, sandbox.root)
    for writes in ([], [b""], [b"", b""]):  # one test: a known failure of STR-3 fails it whole
        for scope in (EXCLUSIVE, SHARED):
            stream = factory.create_checkpoint_state_output_stream(scope)
            for w in writes:
                stream.write(w)
            handle = stream.close_and_get_handle()
            assert handle is None, fail_message(
                "STR-3", "close_and_get_handle", sandbox, scope=scope, writes=writes, got=handle
            )
    assert files_below(sandbox, sandbox.root) == before, fail_message(
        "STR-3", "empty streams left files", sandbox
    )


@pytest.mark.clause("STR-4")
@capped(20)
@given(data=st.data(), size=st.integers(min_value=0, max_value=5000))
def test_tell_counts_every_byte(sandbox, target, data, size):
    """STR-4: tell() equals the bytes written so far, across buffer boundaries, and write()
    returns the number of bytes it was given."""
    options = (
        {"inline_threshold": 17, "write_buffer_size": 31}
        if ("inline-state" in target.capabilities)
        else {}
    )
    drv = JobDriver(sandbox, **options)
    factory = _factory(drv)
    sizes = data.draw(chunkings(size), label="write sizes")
    stream = factory.create_checkpoint_state_output_stream(EXCLUSIVE)
    try:
        assert stream.tell() == 0, fail_message("STR-4", "tell on a new stream", got=stream.tell())
        written = 0
        for piece in [payload(n, seed=i) for i, n in enumerate([*sizes, 0])]:
            returned = stream.write(piece)
            assert returned == len(piece), fail_message(
                "STR-4", "write() returned", sandbox, sizes=sizes, given=len(piece), got=returned
            )
            written += len(piece)
            assert stream.tell() == written, fail_message(
                "STR-4",
                "tell after write",
                sandbox,
                sizes=sizes,
                expected=written,
                got=stream.tell(),
            )
    finally:
        stream.close()


@pytest.mark.clause("STR-5")
@pytest.mark.parametrize("ending", ["close", "close_and_get_handle"])
@pytest.mark.parametrize("placement", ["file", "inline"])
def test_use_after_close_fails(sandbox, target, ending, placement):
    """STR-5: `closed` is False while the stream is open; after close() or
    close_and_get_handle(), write and close_and_get_handle raise (an empty write may return 0).

    Both for state that went to a file and for state that stayed inline (the default options):
    the two paths end a stream differently.
    """
    drv = JobDriver(sandbox, **(file_options(target) if placement == "file" else {}))
    factory = _factory(drv)
    for scope in (EXCLUSIVE, SHARED):
        stream = factory.create_checkpoint_state_output_stream(scope)
        stream.write(payload(300))
        assert stream.closed is False, fail_message(
            "STR-5", "`closed` of an open stream", sandbox, scope=scope, got=stream.closed
        )
        if ending == "close":
            stream.close()
        else:
            stream.close_and_get_handle()
        assert stream.closed, fail_message(
            "STR-5", f"closed after {ending}", sandbox, scope=scope, placement=placement
        )
        expect_error(
            CLOSED_ERRORS,
            "STR-5",
            f"write after {ending}",
            lambda s=stream: s.write(b"x"),
            scope=scope,
        )
        expect_error(
            CLOSED_ERRORS,
            "STR-5",
            f"close_and_get_handle after {ending}",
            stream.close_and_get_handle,
            scope=scope,
        )
        try:
            returned = stream.write(b"")
        except CLOSED_ERRORS:
            continue
        require(
            returned == 0,
            "STR-5",
            fail_message("STR-5", f"empty write after {ending}", sandbox, scope=scope)
            + f"\nreturned {returned!r}: neither an OSError or ValueError nor 0",
        )


@pytest.mark.clause("STR-6")
@pytest.mark.parametrize("size", [0, 10, 30_000, 6 * 1024 * 1024])
def test_close_discards(sandbox, target, size):
    """STR-6: close() without a handle never raises, can repeat, and leaves no file."""
    drv = JobDriver(sandbox, **file_options(target))
    factory = _factory(drv)
    before = files_below(sandbox, sandbox.root)
    for scope in (EXCLUSIVE, SHARED):
        stream = factory.create_checkpoint_state_output_stream(scope)
        write_chunks(stream, payload(size), [7, 4096])
        stream.flush()
        stream.close()
        stream.close()
    assert files_below(sandbox, sandbox.root) == before, fail_message(
        "STR-6", "close() without a handle", sandbox, size=size
    )


@pytest.mark.clause("STR-6")
def test_close_discards_when_the_abort_fails(sandbox, target, ledger):
    """STR-6: close() without a handle never raises, can repeat, and leaves no file, also while
    every AbortMultipartUpload is answered 500 after 12 MiB were written with s3fs's
    default_block_size of 5 MiB (a multipart upload is open)."""
    options = {**file_options(target), **_abort_options(sandbox, target)}
    if "memory-limit" in target.capabilities:
        options["max_state_size"] = 32 * MIB
    drv = JobDriver(sandbox, **options)
    factory = _factory(drv)
    before = files_below(sandbox, sandbox.root)
    stream = factory.create_checkpoint_state_output_stream(EXCLUSIVE)
    with ledger.record() as writing:
        write_chunks(stream, payload(12 * MIB, seed=6), [MIB] * 12)
    fault = ledger.inject("AbortMultipartUpload", status=500, code="InternalError", times=None)
    with ledger.record() as closing:
        outcomes = [call_outcome(stream.close) for _ in range(2)]
    ledger.clear_faults()
    left = sorted(set(files_below(sandbox, sandbox.root)) - set(before))
    open_uploads_below(sandbox, sandbox.root)  # the suite aborts what the refused abort left
    msg = fail_message(
        "STR-6", "close() twice while every AbortMultipartUpload is answered 500", sandbox
    ) + (
        f"\noutcomes: {outcomes}; the fault hit {fault.hits} requests"
        f"\nwriting: {writing.summary()}\nclosing: {closing.summary()}"
    )
    assert outcomes == ["returned", "returned"], msg
    assert not left, msg + f"\nnew files: {left}"


def _abort_options(sandbox: Any, target: Any) -> dict[str, Any]:
    """STR-6's options for a stream that opens a multipart upload on S3: s3fs's
    default_block_size of 5 MiB, and one attempt where the target claims retry-budget (so a
    refused abort fails fast)."""
    if sandbox.backend.scheme != "s3":
        return {}
    block = {"default_block_size": 5 * MIB}
    options: dict[str, Any] = {"storage_options": {**sandbox.backend.storage_options, **block}}
    if "retry-budget" in target.capabilities:
        options.update(retry_attempts=1, retry_seconds=5)
    return options


@pytest.mark.clause("STR-6")
def test_close_after_handle_keeps_state(sandbox, target):
    """STR-6: close() after close_and_get_handle() does nothing: the state stays readable."""
    drv = JobDriver(sandbox, **file_options(target))
    factory = _factory(drv)
    blob = payload(5000, seed=3)
    stream = factory.create_checkpoint_state_output_stream(EXCLUSIVE)
    stream.write(blob)
    handle = stream.close_and_get_handle()
    stream.close()
    stream.close()
    assert read_handle(handle) == blob, fail_message("STR-6", "read after close()", sandbox)


@pytest.mark.clause("STR-7")
def test_context_manager(sandbox, target):
    """STR-7: leaving the block discards; exceptions propagate; handles taken inside stay valid."""
    drv = JobDriver(sandbox, **file_options(target))
    factory = _factory(drv)
    before = files_below(sandbox, sandbox.root)
    with factory.create_checkpoint_state_output_stream(EXCLUSIVE) as stream:
        stream.write(payload(50_000))
    assert stream.closed, fail_message("STR-7", "closed after the with block", sandbox)
    assert files_below(sandbox, sandbox.root) == before, fail_message(
        "STR-7", "with block without a handle left files", sandbox
    )

    class BoomError(Exception):
        pass

    def fail_inside_block():
        with factory.create_checkpoint_state_output_stream(SHARED) as stream:
            stream.write(payload(50_000))
            raise BoomError

    with pytest.raises(BoomError):
        fail_inside_block()
    assert files_below(sandbox, sandbox.root) == before, fail_message(
        "STR-7", "with block left by an exception left files", sandbox
    )

    blob = payload(177, seed=177)
    with factory.create_checkpoint_state_output_stream(EXCLUSIVE) as stream:
        stream.write(blob)
        handle = stream.close_and_get_handle()
    msg = fail_message("STR-7", "handle taken inside a with block", sandbox)
    assert handle is not None, msg
    assert read_handle(handle) == blob, msg


@pytest.mark.clause("STR-8")
@pytest.mark.parametrize("kind", ["bytes", "bytearray", "memoryview"])
@pytest.mark.parametrize("size", [10, 50_000])
def test_written_bytes_are_copied(sandbox, target, kind, size):
    """STR-8: write() takes bytes-likes, copies them, and never changes the caller's buffer."""
    options = {"inline_threshold": 1024} if "inline-state" in target.capabilities else {}
    drv = JobDriver(sandbox, **options)
    factory = _factory(drv)
    original = payload(size, seed=8)
    buf = bytearray(original)
    arg = {"bytes": bytes(buf), "bytearray": buf, "memoryview": memoryview(buf)}[kind]
    stream = factory.create_checkpoint_state_output_stream(EXCLUSIVE)
    stream.write(arg)
    assert bytes(buf) == original, fail_message(
        "STR-8", "write changed the caller's buffer", kind=kind, size=size
    )
    buf[:] = b"\xee" * len(buf)  # the caller reuses its buffer
    handle = stream.close_and_get_handle()
    assert read_handle(handle) == original, fail_message(
        "STR-8", "state changed with the caller's buffer", sandbox, kind=kind, size=size
    )


@pytest.mark.clause("STR-9")
def test_flush_keeps_stream_open(sandbox, target):
    """STR-9: flush() neither ends the stream nor loses bytes."""
    drv = JobDriver(sandbox, **file_options(target))
    factory = _factory(drv)
    parts = [payload(n, seed=n) for n in (5, 3000, 1, 70_000)]
    stream = factory.create_checkpoint_state_output_stream(SHARED)
    for p in parts:
        stream.write(p)
        stream.flush()
    handle = stream.close_and_get_handle()
    msg = fail_message("STR-9", "write/flush repeatedly", sandbox, sizes=[len(p) for p in parts])
    assert handle is not None, msg + "\nclose_and_get_handle() gave None after the flushes"
    assert read_handle(handle) == b"".join(parts), msg


#: What the file library may hold back on top of the stream's own buffer (Python's io buffer
#: is 8 KiB; Java's FileOutputStream holds nothing).
LIBRARY_SLACK = 64 * 1024


@pytest.mark.clause("STR-11")
@pytest.mark.options("inline_threshold", "write_buffer_size")
@pytest.mark.backend_traits(shows_unclosed_files=True)
def test_state_beyond_the_buffer_reaches_the_file(sandbox, target):
    """STR-11: bytes beyond the write buffer are in the stream's file before close_and_get_handle(); flush() sends the buffered bytes to the file once more than the inline threshold is written."""  # noqa: E501
    buffer, threshold = 4096, 1024
    drv = JobDriver(sandbox, inline_threshold=threshold, write_buffer_size=buffer)
    factory = _factory(drv)

    def new_files(before: list[str]) -> dict[str, int]:
        raw = sandbox.backend.raw
        return {p: int(raw.size(p)) for p in files_below(sandbox, sandbox.root) if p not in before}

    before = files_below(sandbox, sandbox.root)
    stream = factory.create_checkpoint_state_output_stream(EXCLUSIVE)
    try:
        data = payload(512 * 1024)
        write_chunks(stream, data, [1000] * (len(data) // 1000))  # small writes, the buffer's case
        sizes = list(new_files(before).values())
        in_file = len(sizes) == 1 and sizes[0] >= len(data) - buffer - LIBRARY_SLACK
        assert in_file, fail_message(
            "STR-11",
            "bytes beyond the write buffer are not in the stream's file before the handle",
            sandbox,
            written=len(data),
            write_buffer_size=buffer,
            new_files=sizes,
        )
    finally:
        stream.close()

    before = files_below(sandbox, sandbox.root)
    stream = factory.create_checkpoint_state_output_stream(EXCLUSIVE)
    try:
        stream.write(payload(threshold + 500, seed=5))
        stream.flush()
        sizes = list(new_files(before).values())
        assert sizes == [threshold + 500], fail_message(
            "STR-11",
            "flush() with more than the threshold buffered did not send it to the file",
            sandbox,
            written=threshold + 500,
            inline_threshold=threshold,
            new_files=sizes,
        )
    finally:
        stream.close()


@pytest.mark.clause("STR-10")
@pytest.mark.parametrize("size", [1, 100, 30_000])
def test_as_bytes_if_in_memory(sandbox, target, size):
    """STR-10: as_bytes_if_in_memory() is None or the bytes, and None for file handles."""
    drv = JobDriver(
        sandbox, **({"inline_threshold": 1000} if "inline-state" in target.capabilities else {})
    )
    factory = _factory(drv)
    blob = payload(size, seed=size)
    handle = drv.write(factory, blob)
    got = handle.as_bytes_if_in_memory()
    msg = fail_message(
        "STR-10", "as_bytes_if_in_memory", sandbox, size=size, file_path=file_path(handle)
    )
    assert got is None or bytes(got) == blob, msg
    if file_path(handle) is not None:
        assert got is None, msg + "\na handle that names a file returned inline bytes"


def _read_back_handles(sandbox, target):
    """Handles of 3000 bytes of state (a file where the target has an inline threshold), and of
    100 bytes (inline there), with the bytes each holds."""
    inline = "inline-state" in target.capabilities
    drv = JobDriver(sandbox, **({"inline_threshold": 1024} if inline else {}))
    drv.init_base()
    factory = drv.worker(1, drv.location(1).location_reference)
    blobs = [payload(3000, 7), payload(100, 8)]
    return [(drv.write(factory, blob, EXCLUSIVE), blob) for blob in blobs]


@pytest.mark.clause("STR-12")
def test_input_streams_seek_and_tell(sandbox, target):
    """STR-12: a handle's input stream seeks to any offset from the start, tell() reports the
    position, and read(k) returns at most k bytes."""
    for handle, blob in _read_back_handles(sandbox, target):
        size = len(blob)
        msg = fail_message("STR-12", "seek, tell and read(k) on open_input_stream()", sandbox,
                           handle=handle, size=size)  # fmt: skip
        with handle.open_input_stream() as source:
            assert source.readable(), msg + "\nreadable() is False"
            assert source.seekable(), msg + "\nseekable() is False"
            for offset in (size // 2, size - 1, size, 1, 0):
                assert source.seek(offset) == offset, msg + f"\nseek({offset}) answered otherwise"
                assert source.tell() == offset, msg + f"\ntell() after seek({offset})"
                assert source.read() == blob[offset:], msg + f"\nread() after seek({offset})"
            source.seek(0)
            pieces = []
            while piece := source.read(7):
                assert len(piece) <= 7, msg + f"\nread(7) returned {len(piece)} bytes"
                pieces.append(piece)
            assert b"".join(pieces) == blob, msg + "\nread(7) until the end"
            assert source.tell() == size, msg + "\ntell() at the end"


@pytest.mark.clause("STR-13")
def test_input_streams_read_into_buffers(sandbox, target):
    """STR-13 (SHOULD): the input stream fills a buffer with readinto() and reads with
    read1(); it seeks relative to the position and to the end, and read(None) and read(-1)
    return the rest; seek(-1) is refused."""
    for handle, blob in _read_back_handles(sandbox, target):
        msg = fail_message("STR-13", "readinto() on open_input_stream()", sandbox, handle=handle)
        with handle.open_input_stream() as source:
            source.seek(5)
            buffer = bytearray(64)
            count = source.readinto(buffer)
            assert count == min(64, len(blob) - 5), msg + f"\nreadinto() returned {count}"
            assert bytes(buffer[:count]) == blob[5 : 5 + count], msg + "\nthe buffer's bytes"
            assert source.tell() == 5 + count, msg + "\ntell() after readinto()"
            piece = source.read1(16)
            assert 0 < len(piece) <= 16, msg + f"\nread1(16) returned {len(piece)} bytes"
            assert piece == blob[5 + count : 5 + count + len(piece)], msg + "\nread1()'s bytes"
        seeks = fail_message("STR-13", "seek() on open_input_stream()", sandbox, handle=handle)
        _seeks_as_io_does(handle, blob, seeks)
    _removed_state_is_missing_to_every_read(sandbox, target)


def _removed_state_is_missing_to_every_read(sandbox: Any, target: Any) -> None:
    """STR-13: readinto() or read1() as the first call on a removed state's stream raises
    FileNotFoundError (where the open did not already), as read() does."""
    for first in ("readinto", "read1"):
        handle, _ = _read_back_handles(sandbox, target)[0]
        if file_path(handle) is None:
            return  # inline: nothing to remove
        handle.discard_state()

        def read_first(first: str = first, handle: Any = handle) -> None:
            with handle.open_input_stream() as source:
                if first == "readinto":
                    source.readinto(bytearray(64))
                else:
                    source.read1(16)

        expect_error(
            FileNotFoundError,
            "STR-13",
            f"{first}() as the first call on a removed state's stream",
            read_first,
            sandbox,
        )


def _seeks_as_io_does(handle: Any, blob: bytes, msg: str) -> None:
    """STR-13: seek() relative to the position (forwards and back) and to the end lands where
    io.BufferedIOBase does: the returned position, tell() and the next read agree; read()
    returns the rest with None and -1; a negative absolute position is refused."""
    size = len(blob)
    with handle.open_input_stream() as source:
        source.seek(min(3, size))
        where = source.seek(2, io.SEEK_CUR)
        assert where == min(3, size) + 2 == source.tell(), msg + f"\nseek(2, SEEK_CUR): {where}"
        assert source.read(None) == blob[where:], msg + "\nread(None) after seek(2, SEEK_CUR)"
        source.seek(10)
        where = source.seek(-4, io.SEEK_CUR)
        assert where == 6 == source.tell(), msg + f"\nseek(-4, SEEK_CUR) from 10: {where}"
        assert source.read(3) == blob[6:9], msg + "\nread(3) after seek(-4, SEEK_CUR) from 10"
        where = source.seek(-min(7, size), io.SEEK_END)
        assert where == size - min(7, size) == source.tell(), (
            msg + f"\nseek(-7, SEEK_END) returned {where}, tell() {source.tell()}"
        )
        assert source.read(-1) == blob[where:], msg + "\nread(-1) after seek(-7, SEEK_END)"
    _refuses_negative_position(handle, blob, msg)


def _refuses_negative_position(handle: Any, blob: bytes, msg: str) -> None:
    """STR-13: seek(-1) raises ValueError or OSError, as Python's files do, and the stream
    stays where it was: a reader that accepted it would read from before the state's start
    (or fail later, far from the bad seek)."""
    with handle.open_input_stream() as source:
        source.seek(5)
        try:
            landed = source.seek(-1)
        except (ValueError, OSError):
            landed = None
        assert landed is None, (
            msg + f"\nseek(-1) from 5 returned {landed!r} instead of raising ValueError or OSError"
        )
        assert source.tell() == 5, msg + f"\ntell() after the refused seek(-1): {source.tell()}"
        assert source.read(4) == blob[5:9], msg + "\nread(4) after the refused seek(-1)"


MIB = 1024 * 1024


@pytest.mark.clause("STR-14")
def test_large_state_round_trips_in_parts(sandbox, target):
    """STR-14: 15 MiB of state, written as twelve 1 MiB writes and one 3 MiB write, reads
    back identically in either scope; a second stream closed without taking a handle leaves
    no file and no open multipart upload."""
    options = file_options(target)
    if "memory-limit" in target.capabilities:
        options["max_state_size"] = 32 * MIB
    if sandbox.backend.scheme == "s3":  # several parts, not one PutObject
        block = {"default_block_size": 5 * MIB}
        options["storage_options"] = {**sandbox.backend.storage_options, **block}
    drv = JobDriver(sandbox, **options)
    factory = _factory(drv)
    sizes = [MIB] * 6 + [3 * MIB] + [MIB] * 6
    ledger = sandbox.backend.ledger if sandbox.backend.scheme == "s3" else None
    for scope in (EXCLUSIVE, SHARED):
        blob = payload(sum(sizes), seed=14)
        with ledger.record() if ledger is not None else contextlib.nullcontext() as requests:
            handle = drv.write(factory, blob, scope, sizes)
        msg = fail_message("STR-14", f"{scope} state of 15 MiB", sandbox, sizes=sizes)
        assert handle is not None, msg
        assert_same_bytes(read_handle(handle), blob, msg)
        assert handle.state_size in (len(blob), -1), msg + f"\nstate_size {handle.state_size}"
        if requests is not None and file_path(handle) is not None:
            _check_parts(requests, sandbox.raw_path(file_path(handle)), msg)
    before = files_below(sandbox, sandbox.root)
    stream = factory.create_checkpoint_state_output_stream(EXCLUSIVE)
    write_chunks(stream, payload(sum(sizes), seed=15), sizes)
    stream.close()
    left = sorted(set(files_below(sandbox, sandbox.root)) - set(before))
    assert not left, fail_message(
        "STR-14", "close() without a handle after 15 MiB", sandbox, new_files=left
    )
    uploads = open_uploads_below(sandbox, sandbox.root)
    assert not uploads, fail_message(
        "STR-14", "close() without a handle after 15 MiB", sandbox, open_uploads=uploads
    )


#: STR-14's part bound: default_block_size, plus what aws-chunked framing adds to a body
PART_BYTES = 5 * MIB + 64 * 1024


def _check_parts(requests: Any, raw_path: str, msg: str) -> None:
    """STR-14 on a ledger: the state of ``raw_path`` went up as a multipart upload in parts of
    at most default_block_size (5 MiB), not in one PutObject."""
    key = raw_path.split("/", 1)[1]
    writes = [r for r in requests.requests if r.key == key]
    puts = [r for r in writes if r.operation == "PutObject"]
    parts = [r.bytes_in for r in writes if r.operation == "UploadPart"]
    shown = "\n".join(f"  {r} ({r.bytes_in} bytes)" for r in writes)
    assert not puts, msg + f"\nthe state went up in one PutObject:\n{shown}"
    assert len(parts) >= 3, msg + f"\nnot a multipart upload in parts:\n{shown}"
    assert max(parts) <= PART_BYTES, msg + f"\nparts beyond default_block_size:\n{shown}"


#: STR-14's writes across the 5 MiB parts (default_block_size): a write that fills one part and
#: begins the next, and one that leaves one byte of room in the first part; then, as the first
#: chunking, with SHA256 checksums of the parts (s3fs's s3_additional_kwargs)
STRADDLING = {
    "five-3MiB-writes": ([3 * MIB] * 5, {}),
    "5MiB-1-then-2-bytes-then-3MiB": ([5 * MIB - 1, 2, 3 * MIB], {}),
    "sha256-part-checksums": (
        [3 * MIB] * 5,
        {"s3_additional_kwargs": {"ChecksumAlgorithm": "SHA256"}},
    ),
}

#: seconds within which STR-14's straddling state is written and committed
STRADDLING_SECONDS = 30


@pytest.mark.clause("STR-14")
@pytest.mark.parametrize("case", sorted(STRADDLING))
def test_large_state_in_writes_across_parts(sandbox, target, case):
    """STR-14: on S3 backends, with default_block_size 5 MiB, state written in writes that
    straddle the 5 MiB parts (and, in one case, with SHA256 part checksums) reads back
    identically."""
    if sandbox.backend.scheme != "s3":
        pytest.skip("parts of default_block_size exist on S3 backends only")
    sizes, extra = STRADDLING[case]
    options = file_options(target)
    if "memory-limit" in target.capabilities:
        options["max_state_size"] = 32 * MIB
    block = {"default_block_size": 5 * MIB, **extra}
    options["storage_options"] = {**sandbox.backend.storage_options, **block}
    factory = _factory(JobDriver(sandbox, **options))
    blob = _distinct_chunks(sizes)
    written: list[Any] = []  # the handle, or what write_state raised

    def write() -> None:
        try:
            written.append(write_state(factory, blob, sizes=sizes))
        except Exception as exc:
            written.append(exc)

    finished = within(STRADDLING_SECONDS, write, name="ckptconform-STR-14")
    if not finished:
        _stop_runaway_upload(sandbox)
    msg = fail_message(
        "STR-14", f"state written as {case}", sandbox, sizes=sizes, storage_options=block
    )
    require(finished, "STR-14", msg + f"\nnot written and committed within {STRADDLING_SECONDS} s")
    with tagged("STR-14", f"state written as {case}, read back", sandbox, sizes=sizes):
        if isinstance(written[0], Exception):
            raise written[0]
        back = read_handle(written[0])
    assert_same_bytes(back, blob, msg)


def _distinct_chunks(sizes: list[int]) -> bytes:
    """Bytes for writes of ``sizes``: random, another seed for each write, so that a slice
    dropped, repeated or moved within or across writes changes what reads back."""
    return b"".join(random.Random(n).randbytes(size) for n, size in enumerate(sizes))


def _stop_runaway_upload(sandbox: Any) -> None:
    """Refuse every further UploadPart, so that a writer still uploading parts after
    STR-14's time is up stops (its thread cannot be killed) instead of filling the server."""
    ledger = sandbox.backend.ledger
    if ledger is not None:
        ledger.inject("UploadPart", status=400, code="InvalidRequest", times=None)


#: STR-14's state with s3fs's fixed_upload_size: beyond twice s3fs's own 50 MiB block, so that
#: any part size a storage picks up to that block gives at least two full parts before the last
FIXED_PARTS_STATE = 101 * MIB


@pytest.mark.clause("STR-14")
@pytest.mark.backend_traits(object_store=True, ledger=True)
def test_fixed_upload_size_gives_equal_parts(sandbox, target, backend):
    """STR-14: on S3 backends with a ledger, with s3fs's fixed_upload_size in the
    storage_options (stores that refuse parts of unequal size), 101 MiB of state goes up as
    a multipart upload whose parts but the last are all the same size, and reads back."""
    if backend.scheme != "s3":
        pytest.skip("multipart uploads exist on S3 backends only")
    options = file_options(target)
    if "memory-limit" in target.capabilities:
        options["max_state_size"] = 128 * MIB
    fixed = {"fixed_upload_size": True}
    options["storage_options"] = {**backend.storage_options, **fixed}
    factory = _factory(JobDriver(sandbox, **options))
    sizes = [MIB] * (FIXED_PARTS_STATE // MIB)
    blob = _distinct_chunks(sizes)
    with (
        backend.ledger.record() as requests,
        tagged("STR-14", "101 MiB of state with fixed_upload_size", sandbox, storage_options=fixed),
    ):
        handle = write_state(factory, blob, sizes=sizes)
    msg = fail_message("STR-14", "101 MiB of state with fixed_upload_size", sandbox)
    if file_path(handle) is None:  # kept in memory (memory-limit targets): nothing went up
        with tagged("STR-14", "read back 101 MiB of state kept in memory", sandbox):
            assert_same_bytes(read_handle(handle), blob, msg + "\nthe state does not read back")
        return
    key = sandbox.raw_path(file_path(handle)).split("/", 1)[1]
    parts = [
        size
        for _, size in sorted(
            (_part_number(r.query), r.bytes_in)
            for r in requests.requests
            if r.key == key and r.operation == "UploadPart" and r.status == 200
        )
    ]
    shown = ", ".join(map(str, parts))
    assert len(parts) >= 2, msg + f"\nnot a multipart upload in parts: [{shown}]"
    assert len(set(parts[:-1])) == 1, msg + f"\nparts of unequal size before the last: [{shown}]"
    with tagged("STR-14", "read back 101 MiB of state with fixed_upload_size", sandbox):
        back = read_handle(handle)
    assert_same_bytes(back, blob, msg)


def _part_number(query: str) -> int:
    """The partNumber of an UploadPart request's query string."""
    return int(parse_qs(query.lstrip("?")).get("partNumber", ["0"])[0])


#: STR-15's child: a state stream, a file size limit of LIMIT bytes, FIRST bytes written and
#: flushed (within the limit), a write of SECOND bytes that passes the limit part-way, and one
#: more write (a caller may ignore a failed write) before close_and_get_handle().
STR15_CHILD = """
_, factory = _first_checkpoint(box)
stream = factory.create_checkpoint_state_output_stream(CheckpointedStateScope.EXCLUSIVE)
limit_file_size(box["limit"])
out = {"write": outcome(lambda: stream.write(box["first"]))}
out["flush"] = outcome(stream.flush)
out["failing write"] = outcome(lambda: stream.write(box["second"]))
out["later write"] = outcome(lambda: stream.write(box["first"]))
out["close_and_get_handle"] = outcome(stream.close_and_get_handle)
stream.close()
"""


@pytest.mark.clause("STR-15")
def test_a_stream_whose_write_failed_gives_no_handle(sandbox, target):
    """STR-15: after a write that failed part-way (as on a full disk), close_and_get_handle()
    raises OSError and the partial file is removed."""
    drv = JobDriver(sandbox, **file_options(target))
    before = set(files_below(sandbox, sandbox.root))
    box = {
        "storage": drv.storage,
        "job_id": drv.job_id,
        "limit": MIB,
        "first": payload(128 * 1024, seed=1),
        "second": payload(2 * MIB, seed=2),
    }
    out = under_file_size_limit("STR-15", sandbox, STR15_CHILD, box)
    _check_no_handle_after_a_failed_write(sandbox, out, before, "a file size limit of 1 MiB")


def _check_no_handle_after_a_failed_write(
    sandbox: Any, out: dict[str, tuple[str, Any]], before: set[str], how: str
) -> None:
    """STR-15: once a write of ``out`` failed, close_and_get_handle() raised OSError and no
    file is left that was not there ``before``."""
    failed = [
        call for call, (kind, _) in out.items() if call.endswith("write") and kind != "returned"
    ]
    if not failed:
        pytest.skip(
            f"no write failed under {how}: the target's bytes did not meet the fault (kept in "
            "memory, or written by another process, such as a JVM, that the limit does not reach)"
        )
    kind, result = out["close_and_get_handle"]
    left = sorted(set(files_below(sandbox, sandbox.root)) - before)
    shown = "\n".join(f"  {call}: {kind} {value!r}"[:400] for call, (kind, value) in out.items())
    msg = fail_message("STR-15", f"close_and_get_handle() after a failed write, {how}", sandbox)
    msg += f"\noutcomes:\n{shown}"
    if kind == "returned" and result is not None:
        msg += f"\nthe handle: {result!r}, state_size {getattr(result, 'state_size', '?')}"
    assert kind == "OSError", msg
    assert not left, msg + f"\nthe partial file is left: {left}"


@pytest.mark.clause("STR-15")
@pytest.mark.backend_traits(object_store=True, ledger=True)
def test_a_stream_whose_part_upload_failed_gives_no_handle(sandbox, target, backend):
    """STR-15: after a write failed because the server refused a part of it (later writes
    attempted all the same), close_and_get_handle() raises OSError and no partial file is
    left."""
    options = {**file_options(target)}
    options["storage_options"] = {**backend.storage_options, "default_block_size": 5 * MIB}
    if "memory-limit" in target.capabilities:
        options["max_state_size"] = 32 * MIB
    factory = _factory(JobDriver(sandbox, **options))
    before = set(files_below(sandbox, sandbox.root))
    stream = factory.create_checkpoint_state_output_stream(EXCLUSIVE)
    out = {}
    backend.ledger.inject("UploadPart", status=403, code="AccessDenied", times=1)
    try:
        for n in range(12):  # on after a failure too: a caller may ignore a failed write
            out[f"{n + 1}. write"] = outcome(lambda n=n: stream.write(payload(MIB, seed=n)))
    finally:
        backend.ledger.clear_faults()
    out["close_and_get_handle"] = outcome(stream.close_and_get_handle)
    stream.close()
    try:
        _check_no_handle_after_a_failed_write(sandbox, out, before, "a refused UploadPart")
    finally:
        open_uploads_below(sandbox, sandbox.root)  # none outlives the test


#: How STR-16 reads a handle to its end: each way must notice a file of another size.
SIZED_READS = ("read()", "read(k)", "readinto()", "seek() and read()")


def _read_to_the_end(handle: Any, how: str) -> bytes:
    """Read ``handle``'s input stream to its end the way ``how`` names."""
    with handle.open_input_stream() as source:
        if how == "read()":
            return bytes(source.read())
        if how == "seek() and read()":
            source.seek(handle.state_size // 2)
            return bytes(source.read())
        pieces = []
        while True:
            if how == "readinto()":
                buffer = bytearray(7000)
                piece = bytes(buffer[: source.readinto(buffer)])
            else:
                piece = bytes(source.read(7000))
            if not piece:
                return b"".join(pieces)
            pieces.append(piece)


@pytest.mark.clause("STR-16")
@pytest.mark.parametrize("change", ["shorter", "longer"])
def test_reads_check_the_state_size(sandbox, target, change):
    """STR-16: a file-backed handle whose file became shorter or longer than its state_size
    behind the storage's back raises OSError with read(), read(k), readinto() and after seek()
    alike, instead of returning other bytes."""
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    location = drv.location(1)
    blob = payload(100_000, seed=16)
    handles = {"a state": write_state(drv.worker(1, location.location_reference), blob)}
    handles["the _metadata"] = drv.finalize(location, blob).metadata_handle
    found = blob[:50_000] if change == "shorter" else blob + payload(100_000, seed=17)
    checked = 0
    for name, handle in handles.items():
        path = file_path(handle)
        if path is None or handle.state_size < 0:
            continue  # inline, or a size the handle does not know
        sandbox.backend.raw.pipe_file(sandbox.raw_path(path), found)
        checked += 1
        outcomes = {
            how: call_outcome(lambda h=handle, w=how: _read_to_the_end(h, w)) for how in SIZED_READS
        }
        msg = fail_message(
            "STR-16", f"read {name} whose file became {change}", sandbox, file=path,
            state_size=handle.state_size, file_size=len(found),
        )  # fmt: skip
        wrong = {
            how: outcome for how, outcome in outcomes.items() if not outcome.startswith("OSError")
        }
        assert not wrong, msg + f"\nno OSError: {wrong}"
    if not checked:
        pytest.skip("no file-backed handle of a known state_size to read")
