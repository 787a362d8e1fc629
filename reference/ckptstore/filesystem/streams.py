"""The state output stream: small state inline, larger state in one file (S4-S16).

``FsCheckpointStateOutputStream`` buffers up to ``buffer_size`` bytes. State whose total
size is at most ``threshold`` comes back inline (a ``ByteStreamStateHandle``), whatever the
write chunking (our inline rule; Flink spills one write of exactly ``capacity`` bytes,
T-FSF1). Larger state goes to one file ``<dir>/<uuid4>``, created lazily and exclusively
with up to 10 fresh names (S11).

The worker path does no directory work at all (S1): no mkdir, no exists/info/ls. On S3 the
file is an s3fs buffered writer, so a file-backed stream costs exactly one PUT (or the
multipart set) and a discarded stream uploads nothing. When the commit fails on an object
store, one HEAD on that failure path decides: an object of the size written is the stream's
own (its random name is used by nobody else; the answer to a committed upload was lost and
the retry refused), so the handle is returned; no object means nothing to delete.

A write or flush that fails poisons the stream: part of its bytes may be in the file, so the
file is no longer the state that was acknowledged. Every later write, flush and
``close_and_get_handle`` raises ``StreamFailedError`` (an ``OSError``, the failure's errno)
and ``close_and_get_handle`` and ``close()`` delete the file: a failed stream never gives a
handle. Flink's stream keeps no such state and would commit the file (S6, S12).

Concurrency (S16): I/O operations (write, flush, close_and_get_handle) hold an I/O lock;
``close()`` never waits for a slow one. If a write or flush is in progress, ``close()``
marks the stream closed and leaves a discard request that the operation carries out when it
ends. ``close_and_get_handle`` closes the stream as it starts, so it wins: a ``close()``
during or after it does nothing. A write that only appends to the buffer does no I/O and
takes no lock (a stream has one writer; a ``close()`` from another thread discards the
buffer whichever comes first).

Small inline states are by far the most frequent operation, so their path is kept short:
what all streams of a factory's scope share (validated sizes, parsed directory, traits) is a
``StreamSettings`` computed once, and a ``bytes`` write that fits the buffer is one append.
"""

from __future__ import annotations

import contextlib
import errno
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

from ckptstore.api import ByteStreamStateHandle, StreamStateHandle
from ckptstore.calls import public_call
from ckptstore.errors import (
    EndpointUnreachableError,
    InvalidArgumentError,
    StreamClosedError,
    StreamFailedError,
)
from ckptstore.filesystem.entropy import EntropyInjector
from ckptstore.filesystem.handles import FileStateHandle, RelativeFileStateHandle
from ckptstore.io_errors import is_unreachable, with_context
from ckptstore.names import random_uuid4, unique_name
from ckptstore.paths import StoragePath, parse_storage_path
from ckptstore.redaction import redact_text
from ckptstore.stores.adapters import traits_for
from ckptstore.stores.operations import (
    delete_file,
    discard_writer,
    existing_size,
    open_exclusive_write,
    path_is_s3,
    sync_and_close,
)
from ckptstore.stores.registry import filesystem_for
from ckptstore.validation import MAX_WRITE_BUFFER_SIZE, require_bytes, require_int

__all__ = ["MAX_FILE_CREATION_ATTEMPTS", "FsCheckpointStateOutputStream", "StreamSettings"]

MAX_FILE_CREATION_ATTEMPTS = 10
_CLOSED_MESSAGE = "Stream has already been closed and discarded."


@dataclass(frozen=True, slots=True)
class StreamSettings:
    """What every stream into one directory shares: validated once, not per stream.

    ``capacity`` is the write buffer (never below the threshold), ``relative`` whether
    handles are relative (EXCLUSIVE scope without entropy), ``entropy`` the injector when it
    is active for ``base_dir``.
    """

    base_dir: StoragePath
    capacity: int
    threshold: int
    fs_token: str | None
    entropy: EntropyInjector | None
    relative: bool
    object_store: bool
    inline_prefix: str

    @classmethod
    def of(
        cls,
        base_dir: StoragePath,
        *,
        capacity: int,
        threshold: int,
        fs_token: str | None,
        allow_relative_paths: bool,
        entropy: EntropyInjector | None,
    ) -> StreamSettings:
        """Settings from sizes the caller has checked (a factory's, from its storage's options)."""
        active = entropy if entropy is not None and entropy.is_active(base_dir) else None
        return cls(
            base_dir=base_dir,
            capacity=capacity,
            threshold=threshold,
            fs_token=fs_token,
            entropy=active,
            relative=allow_relative_paths and active is None,
            object_store=traits_for(base_dir.scheme).object_store,
            inline_prefix=f"{base_dir.url}/",
        )

    @classmethod
    def validated(
        cls,
        base_dir: StoragePath | str,
        *,
        buffer_size: object,
        threshold: object,
        fs_token: str | None = None,
        allow_relative_paths: bool = False,
        entropy: EntropyInjector | None = None,
    ) -> StreamSettings:
        """Check unchecked arguments (typed errors), then :meth:`of` (a stream built directly)."""
        checked_threshold = require_int(
            threshold,
            "threshold",
            minimum=0,
            below_message="The threshold for file state size must be zero or larger.",
        )
        capacity = require_int(
            buffer_size,
            "buffer_size",
            minimum=0,
            maximum=MAX_WRITE_BUFFER_SIZE,
            below_message="The write buffer size must be zero or larger.",
        )
        directory = parse_storage_path(base_dir)
        if capacity < checked_threshold:
            raise InvalidArgumentError(
                f"The write buffer size ({capacity}) must not be smaller than the inline "
                f"threshold ({checked_threshold})."
            )
        return cls.of(
            directory,
            capacity=capacity,
            threshold=checked_threshold,
            fs_token=fs_token,
            allow_relative_paths=allow_relative_paths,
            entropy=entropy,
        )


class FsCheckpointStateOutputStream:
    """A binary, write-only stream for one piece of state (the ``CheckpointStateOutputStream``).

    ``base_dir`` must exist already (S1). ``allow_relative_paths`` gives
    ``RelativeFileStateHandle`` results (EXCLUSIVE scope) unless entropy is active for the
    directory (E6); otherwise handles are absolute. Factories create their streams with
    :meth:`with_settings` from settings they validated once.
    """

    # Set by with_settings for every stream
    _settings: StreamSettings
    _buffer: bytearray
    _flag_lock: threading.Lock
    # What a new stream starts with (the class answers until an instance sets its own, which
    # also serves a stream whose __init__ failed): no file, nothing written, no I/O going on.
    _fs: Any = None
    _io_lock: threading.Lock | None = None
    _writer: IO[bytes] | None = None
    _file: StoragePath | None = None
    _file_pos = 0
    _file_may_exist = False
    _busy = False
    _discard_pending = False
    _closed = True
    #: The failure of a write or flush: the stream is poisoned (see ``_run_io``).
    _failure: Exception | None = None
    #: What the buffer may hold for a write to be a plain append: the capacity while the
    #: stream is open, -1 once it is closed (so the append path needs no second check).
    _room = -1

    def __init__(
        self,
        base_dir: StoragePath,
        *,
        buffer_size: int,
        threshold: int,
        fs_token: str | None = None,
        allow_relative_paths: bool = False,
        entropy: EntropyInjector | None = None,
    ) -> None:
        settings = StreamSettings.validated(
            base_dir,
            buffer_size=buffer_size,
            threshold=threshold,
            fs_token=fs_token,
            allow_relative_paths=allow_relative_paths,
            entropy=entropy,
        )
        # A stream made by direct construction is the one with_settings makes.
        vars(self).update(vars(self.with_settings(settings)))

    @classmethod
    def with_settings(cls, settings: StreamSettings) -> FsCheckpointStateOutputStream:
        """A stream from settings validated once (what factories call per stream)."""
        stream = cls.__new__(cls)
        stream._settings = settings
        stream._buffer = bytearray()
        stream._flag_lock = threading.Lock()
        stream._closed = False
        stream._room = settings.capacity
        return stream

    def _io_guard(self) -> threading.Lock:
        """The lock that serialises I/O, made on first use: inline streams never need one."""
        lock = self._io_lock
        if lock is None:
            with self._flag_lock:
                lock = self._io_lock
                if lock is None:
                    lock = self._io_lock = threading.Lock()
        return lock

    # ------------------------------------------------------------------ properties

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def base_dir(self) -> str:
        return self._settings.base_dir.url

    @property
    def file_path(self) -> str | None:
        """The URL of the stream's file once created (with entropy resolved), else ``None``."""
        return None if self._file is None else self._file.url

    def writable(self) -> bool:
        return not self._closed

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False

    def tell(self) -> int:
        """Every byte written so far, buffered or in the file (S10)."""
        return self._file_pos + len(self._buffer)

    # ------------------------------------------------------------------ writing

    def write(self, data: bytes | bytearray | memoryview, /) -> int:
        if data.__class__ is not bytes:
            data = require_bytes(data)
        buffer = self._buffer
        size = len(data)
        if len(buffer) + size <= self._room:
            # One append, no I/O and no lock: a stream has one writer (the contract), and a
            # close() racing with it discards the buffer either way.
            buffer += data
            return size
        if self._failure is not None:
            raise self._failed_error()
        if size == 0:
            return 0  # also on a closed stream, as in Flink (S14: an empty write is no write)
        self._write_to_file(memoryview(data), size)
        return size

    @public_call
    def _write_to_file(self, view: memoryview, size: int) -> None:
        """The I/O of a write that outgrows the buffer (a public call of its own)."""
        self._run_io(lambda: self._write_beyond_buffer(view, size))

    def _write_beyond_buffer(self, view: memoryview, size: int) -> None:
        """Write ``size`` bytes that do not fit in what is left of the buffer."""
        if size >= self._settings.capacity:
            self._spill()
            assert self._writer is not None
            self._writer.write(view)
            self._file_pos += size
        else:
            remaining = self._settings.capacity - len(self._buffer)
            self._buffer += view[:remaining]
            self._spill()
            self._buffer += view[remaining:]

    @public_call
    def flush(self) -> None:
        """Spill to the file only if one exists or more than the threshold is buffered (S9)."""
        self._run_io(self._flush_beyond_threshold)

    def _flush_beyond_threshold(self) -> None:
        if self._writer is not None or len(self._buffer) > self._settings.threshold:
            self._spill()
            assert self._writer is not None
            self._writer.flush()

    @public_call
    def flush_to_file(self) -> None:
        """Write the buffered bytes to the file, creating it if needed (S8)."""
        self._run_io(self._spill)

    def _run_io(self, operation: Callable[[], None]) -> None:
        """Run a write or flush that does I/O, under the I/O lock.

        A failure poisons the stream: what reached the file is then no longer what was
        acknowledged (a write may have stored part of its bytes), so every later write, flush
        and ``close_and_get_handle`` raises ``StreamFailedError`` and only ``close()`` is left,
        which discards the file.
        """
        with self._io_guard():
            self._begin_io()
            try:
                operation()
            except Exception as exc:
                self._failure = exc
                self._room = -1  # no more plain appends: every write checks the failure
                raise
            finally:
                self._end_io()

    def _failed_error(self) -> StreamFailedError:
        """The error of any use of a stream after a write or flush failed."""
        failure = self._failure
        assert failure is not None
        where = self._file.shown if self._file is not None else self._settings.base_dir.shown
        code = getattr(failure, "errno", None)
        if not isinstance(code, int) or type(OSError(code, "")) is not OSError:
            code = errno.EIO  # OSError(code) would be another class (FileNotFoundError...)
        error = StreamFailedError(
            f"The state stream to {where} failed a write or flush earlier and holds no complete "
            f"state, so it gives no handle (close() discards it): "
            f"{type(failure).__name__}: {redact_text(str(failure), limit=300)}"
        )
        error.errno = code
        error.__cause__ = failure
        return error

    def _spill(self) -> None:
        if self._writer is None:
            self._create_file()
        assert self._writer is not None
        if self._buffer:
            self._writer.write(self._buffer)
            self._file_pos += len(self._buffer)
            self._buffer.clear()

    def _create_file(self) -> None:
        """Create the file under a fresh name, up to 10 times (S11).

        Any failure moves on to a new name, except an unreachable endpoint: another name
        would not reach it either, so that fails at once (within the retry budget).
        """
        settings = self._settings
        if self._fs is None:
            self._fs = filesystem_for(settings.base_dir, settings.fs_token)
        for _ in range(MAX_FILE_CREATION_ATTEMPTS):
            target = settings.base_dir.child(random_uuid4())
            if settings.entropy is not None:
                target = settings.entropy.inject(target)
            try:
                writer = open_exclusive_write(self._fs, target)
            except Exception as exc:
                failure = exc
                if isinstance(exc, EndpointUnreachableError):
                    break
                continue
            self._writer = writer
            self._file = target
            self._file_may_exist = not settings.object_store
            return
        raise with_context(
            failure, "Could not open output stream for state backend", target, self._fs
        ) from failure

    # ------------------------------------------------------------------ finishing

    def close_and_get_handle(self) -> StreamStateHandle | None:
        """End the stream: ``None`` if nothing was written, inline state, or a file handle.

        The stream is closed from the start, so a ``close()`` from another thread while the
        file is committed does nothing (the handle wins) and a write fails.
        """
        flags = self._flag_lock
        flags.acquire()  # not 'with': half the cost, on the path of every inline state
        try:
            was_closed = self._closed
            self._closed = True
            self._room = -1
        finally:
            flags.release()
        if was_closed:
            raise StreamClosedError(_CLOSED_MESSAGE)
        if self._failure is not None:
            with self._io_guard():
                self._discard_file()
            raise self._failed_error()
        buffer = self._buffer
        if self._writer is None and len(buffer) <= self._settings.threshold:
            # Inline state (S5), or None for an empty stream: no I/O, so no lock to wait for.
            if not buffer:
                return None
            data = bytes(buffer)
            buffer.clear()
            return ByteStreamStateHandle.of(self._settings.inline_prefix + unique_name(), data)
        return self._finish()

    @public_call
    def _finish(self) -> StreamStateHandle:
        """Commit the file (the I/O of ``close_and_get_handle``, a public call of its own)."""
        with self._io_guard():
            return self._commit()

    def _commit(self) -> StreamStateHandle:
        committing = False
        try:
            self._spill()
            assert self._writer is not None
            assert self._file is not None
            self._file_may_exist = True
            committing = True
            sync_and_close(self._writer, self._file)
        except Exception as exc:
            target = self._file.url if self._file is not None else self._settings.base_dir.url
            if committing and self._committed_despite(exc):
                self._writer = None  # our object is there: nothing to discard or abort
                return self._handle()
            if isinstance(exc, FileExistsError):
                # the exclusive commit found another writer's object: never delete that one
                self._file_may_exist = False
            elif self._settings.object_store and is_unreachable(exc):
                # the upload never reached the store: nothing to delete, and a delete could
                # not reach it either (it would only spend the retry budget a second time)
                self._file_may_exist = False
            self._discard_file()
            raise with_context(
                exc,
                f"Could not flush to file and close the file system output stream to {target} "
                "in order to obtain the stream state handle",
                self._file if self._file is not None else self._settings.base_dir,
                self._fs,
            ) from exc
        self._writer = None
        return self._handle()

    def _committed_despite(self, exc: BaseException) -> bool:
        """After a failed commit on S3: is our object there anyway? (one HEAD)

        An answer lost after the server committed the upload makes the client retry; the
        retried exclusive create then fails (412, or ``NoSuchUpload`` for a multipart
        completion), or every attempt's answer is lost. The file's name is a random UUID
        only this stream uses, so an object of the size written is ours. Also decides the
        cleanup: an absent object needs no delete, another size is not ours to delete.
        """
        if self._file is None or not path_is_s3(self._file) or is_unreachable(exc):
            return False
        try:
            size = existing_size(self._fs, self._file)
        except Exception:
            return False  # unknown: the usual cleanup decides
        if size == self._file_pos:
            return True
        self._file_may_exist = False
        return False

    def _handle(self) -> FileStateHandle:
        assert self._file is not None
        kind = RelativeFileStateHandle if self._settings.relative else FileStateHandle
        return kind.of(self._file, self._file_pos, fs_token=self._settings.fs_token)

    def close(self) -> None:
        """Discard the stream: delete its own file, if any, and nothing else (S13).

        Idempotent, never raises, never waits for a slow operation in another thread.
        """
        with self._flag_lock:
            if self._closed:
                return
            self._closed = True
            self._room = -1
            if self._busy:
                self._discard_pending = True
                return
        self._discard()

    @public_call
    def _discard(self) -> None:
        """The I/O of ``close()`` (a public call of its own)."""
        with self._io_guard():
            self._discard_file()

    def _discard_file(self) -> None:
        """Drop the writer without committing and remove the file if it may exist."""
        self._buffer.clear()
        writer, self._writer = self._writer, None
        if writer is not None:
            discard_writer(writer)
        if self._file is not None and self._file_may_exist:
            with contextlib.suppress(Exception):
                delete_file(self._fs, self._file)

    def _begin_io(self) -> None:
        with self._flag_lock:
            if self._closed:
                raise StreamClosedError("closed")
            if self._failure is not None:
                raise self._failed_error()
            self._busy = True

    def _end_io(self) -> None:
        with self._flag_lock:
            self._busy = False
            pending, self._discard_pending = self._discard_pending, False
        if pending:
            self._discard_file()

    def __enter__(self) -> FsCheckpointStateOutputStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        # A stream dropped without close: free the writer (no upload), keep the contract quiet.
        # Not while the interpreter shuts down: the file system's event loop may be gone, and
        # the I/O of a discard (aborting an S3 multipart upload) would wait for it forever.
        if self._writer is not None and not self._closed and not sys.is_finalizing():
            with contextlib.suppress(Exception):
                self.close()

    def __repr__(self) -> str:
        shown = self._settings.base_dir.shown
        return f"FsCheckpointStateOutputStream({shown!r}, pos={self.tell()})"
