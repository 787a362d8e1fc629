"""MEM: the JobManager storage's state size limit (Flink CS3, MEM5; pain point P10).

Capability: memory-limit. The limit is exercised with a small ``max_state_size`` so that the
boundary (exactly the maximum passes, one byte more fails) is cheap to cross.
"""

from __future__ import annotations

import pytest

from ckptconform.suite._driver import (
    EXCLUSIVE,
    SHARED,
    JobDriver,
    assert_same_bytes,
    expect_error,
    fail_message,
    payload,
    read_handle,
    tagged,
    write_chunks,
)

DEFAULT_MAX = 5 * 1024 * 1024


def _write(open_stream, data: bytes, sizes=None):
    stream = open_stream()
    try:
        write_chunks(stream, data, sizes)
        return stream.close_and_get_handle()
    finally:
        stream.close()


def _streams(drv: JobDriver):
    drv.init_base()
    factory = drv.worker(1, drv.location(1).location_reference)
    return {
        "exclusive": lambda: factory.create_checkpoint_state_output_stream(EXCLUSIVE),
        "shared": lambda: factory.create_checkpoint_state_output_stream(SHARED),
        "task-owned": drv.access.create_task_owned_state_stream,
    }


@pytest.mark.clause("MEM-1", "MEM-2")
@pytest.mark.parametrize("max_size", [1, 17, 1000])
@pytest.mark.parametrize("kind", ["exclusive", "shared"])
def test_limit_boundary(sandbox, max_size, kind):
    """MEM-1: exactly max_state_size bytes pass; MEM-2: one byte more raises OSError."""
    drv = JobDriver(sandbox, max_state_size=max_size)
    open_stream = _streams(drv)[kind]
    blob = payload(max_size, seed=max_size)
    with tagged(
        "MEM-1", "state of max_state_size bytes", sandbox, max_state_size=max_size, kind=kind
    ):
        handle = _write(open_stream, blob, [max(1, max_size // 3)])
        assert handle is not None
        assert read_handle(handle) == blob
    expect_error(
        OSError,
        "MEM-2",
        "state of max_state_size + 1 bytes",
        lambda: _write(open_stream, payload(max_size + 1), [max(1, max_size // 3)]),
        sandbox,
        max_state_size=max_size,
        kind=kind,
    )


@pytest.mark.clause("MEM-3")
def test_limit_applies_to_task_owned_state(sandbox):
    """MEM-3: the maximum applies to task-owned streams."""
    drv = JobDriver(sandbox, max_state_size=100)
    open_stream = _streams(drv)["task-owned"]
    assert read_handle(_write(open_stream, payload(100))) == payload(100), fail_message(
        "MEM-3", "task-owned state of max_state_size bytes", sandbox, max_state_size=100
    )
    expect_error(
        OSError,
        "MEM-3",
        "task-owned state of max_state_size + 1 bytes",
        lambda: _write(open_stream, payload(101)),
        sandbox,
        max_state_size=100,
    )


@pytest.mark.clause("MEM-4")
@pytest.mark.parametrize("max_size", [0, -1, -5 * 1024 * 1024])
def test_invalid_maximum(sandbox, max_size):
    """MEM-4: a max_state_size of 0 or less raises ValueError by first use at the latest."""

    def use():
        drv = JobDriver(sandbox, max_state_size=max_size)
        return _write(_streams(drv)["exclusive"], payload(1))

    expect_error(
        ValueError, "MEM-4", "make_storage + first stream", use, sandbox, max_state_size=max_size
    )


@pytest.mark.clause("MEM-5")
def test_default_maximum(sandbox):
    """MEM-5: without a configured maximum, 5 MiB pass and 5 MiB + 1 byte fail."""
    drv = JobDriver(sandbox)
    open_stream = _streams(drv)["exclusive"]
    blob = payload(DEFAULT_MAX)
    assert_same_bytes(
        read_handle(_write(open_stream, blob, [1 << 20] * 5)),
        blob,
        fail_message("MEM-5", "5 MiB of state, default maximum", sandbox),
    )
    expect_error(
        OSError,
        "MEM-5",
        "5 MiB + 1 byte of state, default maximum",
        lambda: _write(open_stream, payload(DEFAULT_MAX + 1), [1 << 20] * 6),
        sandbox,
    )
