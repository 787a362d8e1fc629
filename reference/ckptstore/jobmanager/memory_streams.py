"""In-memory state streams for the JobManager storage (MEM4, MEM5, S17).

``MemoryCheckpointOutputStream`` keeps everything written in memory and hands it back as a
``ByteStreamStateHandle``: the state travels inline to the JobManager. The size limit is
checked when the handle is taken, exactly as Flink does (MEM5): ``size > max_size`` fails
with Flink's message, exactly ``max_size`` bytes pass.

``MemCheckpointStreamFactory`` creates such streams for either scope and cannot duplicate
state (the task-owned side uses ``toolset.NotDuplicatingCheckpointStateToolset``).
"""

from __future__ import annotations

import io
import threading
from collections.abc import Sequence

from ckptstore.api import (
    ByteStreamStateHandle,
    CheckpointedStateScope,
    StreamStateHandle,
)
from ckptstore.errors import (
    InvalidArgumentError,
    StateSizeExceededError,
    StreamClosedError,
)
from ckptstore.names import unique_name
from ckptstore.validation import (
    require_bytes,
    require_handle,
    require_handles,
    require_scope,
)

__all__ = [
    "MemCheckpointStreamFactory",
    "MemoryCheckpointOutputStream",
    "check_state_size",
]


def check_state_size(size: int, max_size: int) -> None:
    """Raise Flink's MEM5 error when ``size`` exceeds ``max_size`` (strictly)."""
    if size > max_size:
        raise StateSizeExceededError(
            f"Size of the state is larger than the maximum permitted memory-backed state. "
            f"Size={size} , maxSize={max_size} . Consider using a different state backend, "
            f"like the File System State backend."
        )


class MemoryCheckpointOutputStream:
    """A state stream that buffers in memory and yields an inline handle (MEM4).

    ``close_and_get_handle()`` returns ``None`` when nothing was written (and closes the
    stream), raises ``StateSizeExceededError`` when more than ``max_size`` bytes were written,
    and otherwise returns a ``ByteStreamStateHandle`` named by a fresh UUID. After
    ``close()`` or a handle, ``write`` and ``close_and_get_handle`` raise
    ``StreamClosedError``. ``close()`` is idempotent and never raises.
    """

    def __init__(self, max_size: int) -> None:
        self._max_size = max_size  # checked once, where the storage takes it (MEM1)
        self._buffer: io.BytesIO | None = io.BytesIO()  # None once closed
        self._lock = threading.Lock()

    @property
    def max_size(self) -> int:
        return self._max_size

    @property
    def closed(self) -> bool:
        return self._buffer is None

    def write(self, data: bytes | bytearray | memoryview, /) -> int:
        view = require_bytes(data)
        buffer = self._buffer
        if buffer is None:
            raise StreamClosedError("Cannot write: the memory checkpoint stream is closed")
        return buffer.write(view)

    def flush(self) -> None:
        """Nothing to flush: the bytes stay in memory until the handle is taken."""

    def sync(self) -> None:
        """Nothing to sync: the bytes stay in memory (MEM4)."""

    def tell(self) -> int:
        buffer = self._buffer
        if buffer is None:
            raise StreamClosedError("Cannot tell: the memory checkpoint stream is closed")
        return buffer.tell()

    def close_and_get_bytes(self) -> bytes:
        """Close the stream and return the written bytes; MEM5 size check applies."""
        with self._lock:
            buffer = self._buffer
            if buffer is None:
                raise StreamClosedError("Stream has already been closed and discarded.")
            self._buffer = None
        data = buffer.getvalue()
        check_state_size(len(data), self._max_size)
        return data

    def close_and_get_handle(self) -> StreamStateHandle | None:
        data = self.close_and_get_bytes()
        if not data:
            return None
        return ByteStreamStateHandle.of(unique_name(), data)

    def close(self) -> None:
        with self._lock:
            self._buffer = None

    def __enter__(self) -> MemoryCheckpointOutputStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._buffer is None else f"{self.tell()} bytes"
        return f"MemoryCheckpointOutputStream(max_size={self._max_size}, {state})"


def _require_scope(scope: object) -> CheckpointedStateScope:
    return require_scope(scope)


class MemCheckpointStreamFactory:
    """Creates in-memory state streams for both scopes; cannot duplicate state (S17)."""

    def __init__(self, max_state_size: int) -> None:
        self._max_state_size = max_state_size  # checked once, where the storage takes it (MEM1)

    @property
    def max_state_size(self) -> int:
        return self._max_state_size

    def create_checkpoint_state_output_stream(
        self, scope: CheckpointedStateScope
    ) -> MemoryCheckpointOutputStream:
        _require_scope(scope)
        return MemoryCheckpointOutputStream(self._max_state_size)

    def can_fast_duplicate(self, handle: StreamStateHandle, scope: CheckpointedStateScope) -> bool:
        _require_scope(scope)
        require_handle(handle)
        return False

    def duplicate(
        self, handles: Sequence[StreamStateHandle], scope: CheckpointedStateScope
    ) -> list[StreamStateHandle]:
        _require_scope(scope)
        require_handles(handles)
        raise InvalidArgumentError("The underlying FS does not support duplication.")

    def __repr__(self) -> str:
        return f"MemCheckpointStreamFactory(max_state_size={self._max_state_size})"
