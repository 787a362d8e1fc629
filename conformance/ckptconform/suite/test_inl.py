"""INL: the inline threshold (seed 002; Flink S7, S9, CS4, CFG4). Capability: inline-state.

"Inline" is observed through the contract (``as_bytes_if_in_memory`` gives the bytes, the handle
names no file) and on the backend (no new file below the sandbox root).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ckptconform.suite._driver import (
    EXCLUSIVE,
    SHARED,
    JobDriver,
    expect_error,
    fail_message,
    file_path,
    files_below,
    is_inline,
    payload,
    read_handle,
    tagged,
    write_chunks,
)
from ckptconform.suite._strategies import capped, chunkings, sizes_around, thresholds

MAX_THRESHOLD = 1024 * 1024


def _factory(drv: JobDriver, checkpoint_id: int = 1):
    drv.init_base()
    location = drv.location(checkpoint_id)
    return drv.worker(checkpoint_id, location.location_reference)


def _check_inline(sandbox, clause, handle, blob, before, **inputs):
    """``handle`` is inline and holds ``blob``, and no file was written; else ``clause`` fails."""
    with tagged(clause, "close_and_get_handle", sandbox, size=len(blob), **inputs):
        assert handle is not None, "got None for non-empty state"
        assert is_inline(handle), f"expected an inline handle, got {handle!r}"
        assert bytes(handle.as_bytes_if_in_memory()) == blob, "inline bytes differ"
        assert files_below(sandbox, sandbox.root) == before, "inline state created a file"


def _check_file(sandbox, clause, handle, blob, **inputs):
    """``handle`` is a file handle whose file holds ``blob``; else ``clause`` fails."""
    with tagged(clause, "close_and_get_handle", sandbox, size=len(blob), **inputs):
        assert handle is not None, "got None for non-empty state"
        assert handle.as_bytes_if_in_memory() is None, "state above the threshold is inline"
        path = file_path(handle)
        assert path is not None, f"expected a file handle, got {handle!r}"
        assert sandbox.exists(path), f"the handle's file {path} does not exist"
        assert sandbox.read(path) == blob, f"the file {path} holds other bytes"
        assert read_handle(handle) == blob, "the handle reads other bytes"


@pytest.mark.clause("INL-1", "INL-3")
@capped(30)
@given(data=st.data(), threshold=thresholds, scope=st.sampled_from([EXCLUSIVE, SHARED]))
def test_threshold_boundary(sandbox, data, threshold, scope):
    """INL-1: up to `threshold` bytes (small writes) stay inline; INL-3: more go to a file."""
    size = data.draw(sizes_around(threshold).filter(bool) | st.just(threshold + 1), label="size")
    sizes = data.draw(chunkings(size), label="write sizes")
    buffer_size = data.draw(st.sampled_from([None, 1, 64, 4096]), label="write buffer")
    if size <= threshold <= 1:
        buffer_size = None  # a 1-byte write is not smaller than a 1-byte threshold (INL-2)
    options = {"inline_threshold": threshold}
    if buffer_size is not None:
        options["write_buffer_size"] = buffer_size
    drv = JobDriver(sandbox, **options)
    factory = _factory(drv)
    blob = payload(size, seed=threshold)
    before = files_below(sandbox, sandbox.root)
    if size <= threshold:
        # INL-1 is about writes each smaller than the threshold (INL-2 covers the rest).
        sizes = [min(s, max(threshold - 1, 1)) for s in sizes]
        sizes = _refill(sizes, size, max(threshold - 1, 1))
    handle = drv.write(factory, blob, scope, sizes)
    inputs = {
        "threshold": threshold,
        "write_buffer_size": buffer_size,
        "sizes": sizes,
        "scope": scope,
    }
    if size <= threshold:
        _check_inline(sandbox, "INL-1", handle, blob, before, **inputs)
    else:
        _check_file(sandbox, "INL-3", handle, blob, **inputs)


def _refill(sizes: list[int], total: int, cap: int) -> list[int]:
    out, left = [], total
    for s in sizes:
        if left <= 0:
            break
        out.append(min(s, left))
        left -= out[-1]
    while left > 0:
        out.append(min(cap, left))
        left -= out[-1]
    return out


@pytest.mark.clause("INL-2")
@pytest.mark.parametrize("threshold", [1, 100, 4096, 20480])
def test_single_write_of_threshold_stays_inline(sandbox, threshold):
    """INL-2: one write of exactly `threshold` bytes stays inline (Flink T-FSF1 spills here)."""
    drv = JobDriver(sandbox, inline_threshold=threshold)
    factory = _factory(drv)
    blob = payload(threshold, seed=2)
    before = files_below(sandbox, sandbox.root)
    handle = drv.write(factory, blob, EXCLUSIVE, [threshold])
    _check_inline(sandbox, "INL-2", handle, blob, before, threshold=threshold, sizes=[threshold])


@pytest.mark.clause("INL-4")
@capped(15)
@given(data=st.data(), size=st.integers(min_value=1, max_value=20_000))
def test_threshold_zero(sandbox, data, size):
    """INL-4: with threshold 0 every non-empty state goes to a file; empty gives None."""
    drv = JobDriver(sandbox, inline_threshold=0)
    factory = _factory(drv)
    sizes = data.draw(chunkings(size), label="write sizes")
    blob = payload(size, seed=size)
    handle = drv.write(factory, blob, EXCLUSIVE, sizes)
    _check_file(sandbox, "INL-4", handle, blob, threshold=0, sizes=sizes)
    assert drv.write(factory, b"") is None, fail_message("INL-4", "empty state, threshold 0")


@pytest.mark.clause("INL-5")
@pytest.mark.parametrize("threshold", [10, 1000])
def test_flush_respects_threshold(sandbox, threshold):
    """INL-5: flush() at or below the threshold creates no file; the state ends inline."""
    drv = JobDriver(sandbox, inline_threshold=threshold)
    factory = _factory(drv)
    before = files_below(sandbox, sandbox.root)
    blob = payload(threshold, seed=5)
    stream = factory.create_checkpoint_state_output_stream(EXCLUSIVE)
    try:
        for piece in (blob[: threshold // 2], blob[threshold // 2 :]):
            stream.write(piece)
            stream.flush()
            assert files_below(sandbox, sandbox.root) == before, fail_message(
                "INL-5",
                "flush() below the threshold created a file",
                sandbox,
                threshold=threshold,
                written=stream.tell(),
            )
        handle = stream.close_and_get_handle()
    finally:
        stream.close()
    _check_inline(sandbox, "INL-5", handle, blob, before, threshold=threshold, flushed=True)


@pytest.mark.clause("INL-6")
def test_max_threshold_accepted(sandbox):
    """INL-6: threshold 1 MiB is accepted and 1 MiB of state stays inline under it."""
    drv = JobDriver(sandbox, inline_threshold=MAX_THRESHOLD)
    factory = _factory(drv)
    blob = payload(MAX_THRESHOLD, seed=6)
    before = files_below(sandbox, sandbox.root)
    handle = drv.write(factory, blob, SHARED, [65536] * 16)
    _check_inline(sandbox, "INL-6", handle, blob, before, threshold=MAX_THRESHOLD)


@pytest.mark.clause("INL-7")
@pytest.mark.parametrize("threshold", [MAX_THRESHOLD + 1, 2**31, -2, -1000])
def test_invalid_threshold_rejected(sandbox, threshold):
    """INL-7: a threshold above 1048576 or below -1 raises ValueError by first use at the latest."""

    def use():
        drv = JobDriver(sandbox, inline_threshold=threshold)
        drv.init_base()
        factory = drv.worker(1)
        stream = factory.create_checkpoint_state_output_stream(EXCLUSIVE)
        try:
            write_chunks(stream, payload(10))
            return stream.close_and_get_handle()
        finally:
            stream.close()

    expect_error(
        ValueError, "INL-7", "make_storage + first stream", use, sandbox, inline_threshold=threshold
    )


@pytest.mark.clause("INL-9")
@pytest.mark.parametrize("buffer_size", [-2, -4096])
def test_invalid_write_buffer_size_rejected(sandbox, buffer_size):
    """INL-9: a write_buffer_size below -1 raises ValueError by first use at the latest."""

    def use():
        drv = JobDriver(sandbox, inline_threshold=0, write_buffer_size=buffer_size)
        drv.init_base()
        return drv.write(drv.worker(1), payload(3000), EXCLUSIVE)

    expect_error(
        ValueError, "INL-9", "make_storage + first stream", use, sandbox,
        write_buffer_size=buffer_size,
    )  # fmt: skip


@pytest.mark.clause("INL-8")
def test_default_threshold(sandbox):
    """INL-8: without a configured threshold, 20480 bytes stay inline and 20481 go to a file."""
    drv = JobDriver(sandbox)
    factory = _factory(drv)
    small, large = payload(20480, seed=1), payload(20481, seed=2)
    before = files_below(sandbox, sandbox.root)
    handle = drv.write(factory, small, EXCLUSIVE, [1000] * 21)
    _check_inline(sandbox, "INL-8", handle, small, before, threshold="default")
    handle = drv.write(factory, large, EXCLUSIVE, [1000] * 21)
    _check_file(sandbox, "INL-8", handle, large, threshold="default")
