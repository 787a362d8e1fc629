"""The process-wide registry of fsspec file systems, scheme traits and the few raw operations.

Why a registry: storages are picklable configuration and handles are small values, so neither
may carry a file-system instance or credentials. A storage registers ``(scheme,
storage_options)`` and gets a short token (a hash, no secrets); handles carry the token and
look the file system up here. In a process where the token is unknown (a handle unpickled
before any storage), the scheme's fsspec defaults are used (credentials then come from the
environment, as with any fsspec URL).

Traits: object stores (``s3``, ``gs``, ``az``, ...) have no real directories, so nobody sends
a request for a directory there (S1, ACC5, ACC6). ``file`` and ``memory`` have directories,
which the coordinator creates with ``makedirs``.

The raw operations here are the only places that touch a file system's quirks: exclusive
file creation, the atomic exclusive publish of ``_metadata``, deletes that tolerate a missing
target, a GET-only read on S3 and server-side copies.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import json
import os
import threading
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO, Any, BinaryIO, cast

import fsspec

from ckptstore.errors import CheckpointIOError, MetadataExistsError
from ckptstore.paths import StoragePath

__all__ = [
    "DIRECTORY_SCHEMES",
    "OBJECT_STORE_SCHEMES",
    "S3_SCHEMES",
    "SchemeTraits",
    "delete_file",
    "discard_writer",
    "delete_tree",
    "file_info",
    "filesystem_for",
    "filesystem_options",
    "get_filesystem",
    "make_directories",
    "make_directory_exclusive",
    "open_exclusive_write",
    "open_for_read",
    "publish_exclusive",
    "register_filesystem",
    "registered_filesystem_token",
    "server_side_copy",
    "sync_and_close",
    "traits_for",
]

S3_SCHEMES = frozenset({"s3", "s3a", "s3n"})
OBJECT_STORE_SCHEMES = frozenset(
    S3_SCHEMES | {"gs", "gcs", "az", "abfs", "abfss", "adl", "oss", "r2", "b2", "wasb", "wasbs"}
)
#: Schemes whose file systems have real directories that must exist before files go in.
DIRECTORY_SCHEMES = frozenset({"file", "memory"})
_COPY_SCHEMES = frozenset(S3_SCHEMES | {"gs", "gcs", "file", "memory"})
# Writers that are plain local/in-memory files: closing them is all the cleanup they need.
_LOCAL_FILE_TYPES: tuple[type, ...] = (io.BufferedWriter, io.FileIO, io.BytesIO)


@dataclass(frozen=True, slots=True)
class SchemeTraits:
    """What the storage may assume about a scheme's file system."""

    scheme: str
    #: no real directories: never mkdir, never ask whether a directory exists
    object_store: bool
    #: directories must be created (``makedirs``) before files are written into them
    real_directories: bool
    #: ``fs.copy`` is a server-side copy (S3 CopyObject) or a cheap local link/copy
    server_side_copy: bool
    #: entropy injection makes sense (object stores; memory for tests) (E1)
    entropy_allowed: bool
    #: reads can skip the HEAD when the size is known (``open(..., size=n)``)
    read_with_size_hint: bool


def traits_for(scheme: str) -> SchemeTraits:
    """Traits of a canonical scheme; unknown schemes are treated as object stores."""
    scheme = scheme.lower()
    directories = scheme in DIRECTORY_SCHEMES
    return SchemeTraits(
        scheme=scheme,
        object_store=not directories,
        real_directories=directories,
        server_side_copy=scheme in _COPY_SCHEMES,
        entropy_allowed=scheme in OBJECT_STORE_SCHEMES or scheme == "memory",
        read_with_size_hint=scheme in S3_SCHEMES,
    )


def filesystem_options(scheme: str, storage_options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The fsspec options actually used for ``scheme``.

    ``file`` and ``memory`` take none (the user's connection options are meant for the
    remote store). For S3 the listings cache is off unless the user asked for it: a cached
    listing would hide other processes' writes (pointer resolution, metadata checks).
    """
    if scheme in DIRECTORY_SCHEMES:
        return {}
    options = dict(storage_options or {})
    if scheme in S3_SCHEMES:
        options.setdefault("use_listings_cache", False)
    return options


_LOCK = threading.Lock()
_OPTIONS: dict[str, tuple[str, dict[str, Any]]] = {}
_INSTANCES: dict[tuple[str, int], Any] = {}
_MEMORY_LOCK = threading.Lock()


def _token(scheme: str, options: Mapping[str, Any]) -> str:
    blob = json.dumps([scheme, sorted(options.items())], default=repr, sort_keys=True)
    return "fs-" + hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def register_filesystem(scheme: str, storage_options: Mapping[str, Any] | None = None) -> str:
    """Register the options for ``scheme`` and return their token (idempotent, thread-safe)."""
    options = filesystem_options(scheme, storage_options)
    token = _token(scheme, options)
    with _LOCK:
        _OPTIONS.setdefault(token, (scheme, options))
    return token


def registered_filesystem_token(scheme: str) -> str:
    """The token of ``scheme`` with default options (registered on the way)."""
    return register_filesystem(scheme, None)


def get_filesystem(scheme: str, token: str | None = None) -> Any:
    """The fsspec file system for ``token`` (or the scheme's defaults when unknown here).

    Instances are cached per process id, so a forked worker builds its own (s3fs keeps an
    event loop and sessions that must not cross a fork).
    """
    with _LOCK:
        entry = _OPTIONS.get(token) if token else None
        if token is None or entry is None or entry[0] != scheme:
            options = filesystem_options(scheme, None)
            token = _token(scheme, options)
            entry = _OPTIONS.setdefault(token, (scheme, options))
        key = (token, os.getpid())
        fs = _INSTANCES.get(key)
        if fs is None:
            fs = fsspec.filesystem(entry[0], **entry[1])
            _INSTANCES[key] = fs
        return fs


def filesystem_for(path: StoragePath, token: str | None = None) -> Any:
    """Shorthand for ``get_filesystem(path.scheme, token)``."""
    return get_filesystem(path.scheme, token)


# --------------------------------------------------------------------------- directories


def make_directories(fs: Any, path: StoragePath) -> None:
    """``makedirs(path, exist_ok=True)`` on directory file systems; nothing on object stores."""
    if not traits_for(path.scheme).real_directories:
        return
    try:
        fs.makedirs(path.path, exist_ok=True)
    except FileExistsError:
        return
    except OSError as exc:
        raise CheckpointIOError(f"Failed to create directory {path.url}: {exc}") from exc


def make_directory_exclusive(fs: Any, path: StoragePath) -> bool:
    """Create ``path`` (parents as needed); False if it already existed.

    On object stores there is nothing to create and the answer is True: uniqueness rests on
    the random name (as in Flink, whose ``mkdirs`` also returns true for existing dirs).
    """
    if not traits_for(path.scheme).real_directories:
        return True
    fs.makedirs(path.parent.path, exist_ok=True)
    try:
        fs.mkdir(path.path, create_parents=False)
    except FileExistsError:
        return False
    return True


# --------------------------------------------------------------------------- files


def open_exclusive_write(fs: Any, path: StoragePath) -> IO[bytes]:
    """Create ``path`` exclusively and return a binary writer (S11).

    Local files use the built-in ``open(..., 'xb')`` (atomic ``O_EXCL``, ``fileno`` for
    fsync). Object stores get ``fs.open(path, 'xb')``: s3fs buffers and sends one PUT with
    ``If-None-Match: *`` at close (multipart for large files), so nothing exists on the
    store until the file is committed and a discarded writer uploads nothing.
    """
    if path.scheme == "file":
        return open(path.path, "xb")
    if path.scheme == "memory":
        with _MEMORY_LOCK:
            return cast(IO[bytes], fs.open(path.path, "xb"))
    return cast(IO[bytes], fs.open(path.path, "xb"))


def discard_writer(writer: IO[bytes]) -> None:
    """Abandon a writer from :func:`open_exclusive_write` without committing it.

    For buffered remote files (s3fs) ``discard()`` aborts a multipart upload and drops the
    buffer, so ``close()`` uploads nothing. Errors are swallowed: this runs on cleanup paths.
    """
    discard = getattr(writer, "discard", None)
    if callable(discard) and not isinstance(writer, _LOCAL_FILE_TYPES):
        with contextlib.suppress(Exception):
            discard()
        # s3fs: after discard() the buffer is gone; mark closed so close() does not commit
        with contextlib.suppress(Exception):
            writer.closed = True  # type: ignore[misc]
    with contextlib.suppress(Exception):
        writer.close()


def sync_and_close(writer: IO[bytes], path: StoragePath) -> None:
    """Flush, fsync (local files) and close a writer, committing it (FLINK-36421)."""
    if path.scheme == "file":
        writer.flush()
        os.fsync(writer.fileno())
    writer.close()


def publish_exclusive(fs: Any, path: StoragePath, data: bytes) -> None:
    """Make ``path`` hold ``data`` at once and only if it does not exist (MD2).

    Local: temp file in the same directory + ``os.link`` (atomic, never overwrites).
    Memory: check-and-create under a lock. S3: one PutObject with ``If-None-Match: *``.
    Others: ``open(path, 'xb')``. An existing target raises ``MetadataExistsError``.
    """
    try:
        if path.scheme == "file":
            _publish_local(path, data)
        elif path.scheme == "memory":
            with _MEMORY_LOCK:
                if fs.exists(path.path):
                    raise FileExistsError(errno.EEXIST, "exists", path.url)
                with fs.open(path.path, "wb") as out:
                    out.write(data)
        elif path.scheme in S3_SCHEMES:
            fs.pipe_file(path.path, data, mode="create")
        else:
            with fs.open(path.path, "xb") as out:
                out.write(data)
    except FileExistsError as exc:
        raise MetadataExistsError(f"Target file {path.url} already exists.") from exc
    except MetadataExistsError:
        raise
    except OSError as exc:
        if _is_precondition_failure(exc):
            raise MetadataExistsError(f"Target file {path.url} already exists.") from exc
        raise


def _is_precondition_failure(exc: OSError) -> bool:
    """s3fs reports a failed ``If-None-Match`` without the condition header as EINVAL."""
    text = str(exc).lower()
    return (
        "precondition" in text
        or "pre-condition" in text
        or "conditionalrequestconflict" in text
    )


def _publish_local(path: StoragePath, data: bytes) -> None:
    directory = path.parent.path
    temp = f"{directory}/.{path.name}.{uuid.uuid4().hex}.inprogress"
    with open(temp, "xb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    try:
        os.link(temp, path.path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temp)
    with contextlib.suppress(OSError):
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def delete_file(fs: Any, path: StoragePath) -> None:
    """Delete one file; a missing file is fine; never touch the parent (H2, T-FSH2..5).

    When the delete succeeds nothing else is asked. When it fails, one existence check
    decides: gone means success, still there raises ``CheckpointIOError``.
    """
    try:
        fs.rm_file(path.path)
        return
    except FileNotFoundError:
        return
    except Exception as exc:
        failure: Exception = exc
    try:
        still_there = bool(fs.exists(path.path))
    except Exception:
        still_there = True
    if still_there:
        raise CheckpointIOError(f"Failed to delete {path.url}: {failure}") from failure


def delete_tree(fs: Any, path: StoragePath) -> None:
    """Delete a directory and everything below it; missing is fine (MD6, MD7, T-CCL1)."""
    try:
        fs.rm(path.path, recursive=True)
    except FileNotFoundError:
        return
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return
        raise CheckpointIOError(f"Failed to delete {path.url}: {exc}") from exc


def file_info(fs: Any, path: StoragePath) -> dict[str, Any] | None:
    """``fs.info(path)`` or ``None`` when it does not exist (one HEAD on S3 for a file)."""
    try:
        return cast(dict[str, Any], fs.info(path.path))
    except (FileNotFoundError, NotADirectoryError):
        return None


def open_for_read(fs: Any, path: StoragePath, size: int) -> BinaryIO:
    """Open a file for reading; with a known size, S3 costs one GET and no HEAD."""
    if path.scheme == "file":
        return open(path.path, "rb")
    if size >= 0 and traits_for(path.scheme).read_with_size_hint:
        reader = fs.open(path.path, "rb", size=size)
        # s3fs reads ``details`` (a HEAD, for the ETag) on the first ranged GET unless they
        # are known; the size is all it needs, so give it that and skip the HEAD.
        if getattr(reader, "_details", "absent") is None:
            reader._details = {"name": path.path, "size": size, "type": "file"}
        return cast(BinaryIO, reader)
    return cast(BinaryIO, fs.open(path.path, "rb"))


def server_side_copy(fs: Any, source: StoragePath, target: StoragePath, size: int = -1) -> None:
    """Copy a file without moving its bytes through this process where the store allows it.

    S3: one CopyObject (no HEAD) for files up to 5 GiB of known size; local: a hard link
    (falling back to a copy across devices); memory and others: ``fs.copy``.
    """
    if source.scheme == "file":
        try:
            os.link(source.path, target.path)
        except OSError as exc:
            if exc.errno in (errno.EEXIST,):
                raise
            fs.copy(source.path, target.path)
        return
    if source.scheme in S3_SCHEMES and 0 <= size <= 5 * 2**30:
        from fsspec.asyn import sync

        sync(fs.loop, fs._copy_basic, source.path, target.path)
        return
    fs.copy(source.path, target.path)
