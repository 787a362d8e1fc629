"""The raw operations on a store, the only places that touch a file system's quirks.

Exclusive file creation, the atomic exclusive publish of ``_metadata`` (on S3 with the
conditional-write probe: :func:`probe_conditional_writes`, :func:`conditional_write_mode`),
deletes that tolerate a missing target (on S3 a directory's delete also aborts its open
multipart uploads), a GET-only read on S3 and server-side copies. What every store shares is
here: the checks before a deletion, the translation of failures into the contract's
``OSError`` subclasses (``ckptstore.io_errors``); what a store family does its own way, its
adapter does (``ckptstore.stores.adapters.adapter_for``, ``ckptstore.stores.protocol``).
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from typing import IO, Any, BinaryIO, cast

from ckptstore.errors import CheckpointFileExistsError, DisposalRefusedError, MetadataExistsError
from ckptstore.io_errors import (
    guarded_reader,
    guarded_writer,
    io_errors,
    is_unreachable,
    translate_io_error,
    unwrap_writer,
)
from ckptstore.paths import S3_SCHEMES, StoragePath
from ckptstore.stores import s3
from ckptstore.stores.adapters import adapter_for, authority_of, traits_for

__all__ = [
    "OpenUpload",
    "abort_open_upload",
    "client_reading",
    "conditional_write_mode",
    "copy_exclusive",
    "delete_file",
    "delete_tree",
    "discard_writer",
    "existing_size",
    "file_info",
    "list_directory",
    "list_open_uploads",
    "make_directories",
    "make_directory_exclusive",
    "open_exclusive_write",
    "open_for_read",
    "path_is_s3",
    "probe_conditional_writes",
    "publish_exclusive",
    "remove_empty_directory",
    "require_literal_path",
    "sync_and_close",
]

# Writers that are plain local/in-memory files: closing them is all the cleanup they need.
_LOCAL_FILE_TYPES: tuple[type, ...] = (io.BufferedWriter, io.FileIO, io.BytesIO)

# --------------------------------------------------------------------------- directories


#: ``makedirs`` calls of :func:`make_directories`: a checkpoint's deepest directory is a few
#: levels below one that exists, so a few lost races at most.
_MAKEDIRS_ATTEMPTS = 4


def make_directories(fs: Any, path: StoragePath) -> None:
    """``makedirs(path, exist_ok=True)`` on directory file systems; nothing on object stores.

    A directory that another writer created meanwhile is no failure, also where the file
    system reports it as a generic error (SFTP's and FTP's clients: "File exists"), and also
    where it was a parent (``makedirs`` creates them one by one): then it tries again, as
    often as there could be parents to lose the race for.
    """
    if not traits_for(path.scheme).real_directories:
        return
    with io_errors("create the directory", path, fs):
        for attempt in range(_MAKEDIRS_ATTEMPTS):
            try:
                fs.makedirs(path.fs_path, exist_ok=True)
                return
            except FileExistsError:
                return
            except OSError:
                if _is_directory(fs, path):
                    return
                if attempt == _MAKEDIRS_ATTEMPTS - 1:
                    raise


def make_directory_exclusive(fs: Any, path: StoragePath) -> bool:
    """Create ``path`` (parents as needed); False if it already existed.

    On object stores there is nothing to create and the answer is True: uniqueness rests on
    the random name (as in Flink, whose ``mkdirs`` also returns true for existing dirs).
    """
    if not traits_for(path.scheme).real_directories:
        return True
    make_directories(fs, path.parent)
    with io_errors("create the directory", path, fs):
        try:
            fs.mkdir(path.fs_path, create_parents=False)
        except FileExistsError:
            return False
        except OSError:
            if _is_directory(fs, path):
                return False
            raise
    return True


def _is_directory(fs: Any, path: StoragePath) -> bool:
    """Whether ``path`` is a directory now (asked only after a failed creation)."""
    try:
        return bool(fs.isdir(path.fs_path))
    except Exception:
        return False


def list_directory(fs: Any, path: StoragePath) -> list[dict[str, Any]]:
    """The entries directly in ``path`` (fsspec ``ls(detail=True)``); missing gives ``[]``.

    Used only by the crash-leftover scan (``ckptstore.filesystem.leftovers``), never on the
    checkpoint path: on S3 it is one ListObjectsV2 per page.
    """
    with io_errors("list", path, fs):
        try:
            entries = fs.ls(path.fs_path, detail=True)
        except (FileNotFoundError, NotADirectoryError):
            return []
    return [entry for entry in entries if isinstance(entry, dict)]


def remove_empty_directory(fs: Any, path: StoragePath) -> bool:
    """Remove ``path`` if it is an empty directory (directory file systems only).

    Never recursive: a directory that got a file meanwhile stays. True if it was removed.
    """
    if not traits_for(path.scheme).real_directories:
        return False
    try:
        return adapter_for(path.scheme).remove_empty_directory(fs, path)
    except OSError:
        return False


# --------------------------------------------------------------------------- files


def open_exclusive_write(fs: Any, path: StoragePath) -> IO[bytes]:
    """Create ``path`` exclusively and return a binary writer (S11).

    The store's adapter opens it: local files with the built-in ``open(..., 'xb')`` (atomic
    ``O_EXCL``, ``fileno`` for fsync); S3 a ``ckptstore.stores.s3.ExclusiveUpload`` (one
    PutObject with ``If-None-Match: *`` at close for a state of up to
    ``OBJECT_STORE_UPLOAD_BUFFER``, a multipart upload completed with that header for a larger
    one); other file systems ``fs.open(path, 'xb')`` with their own buffering; object stores
    among them (gcsfs, adlfs) likewise create nothing until the file is committed, and a
    discarded writer uploads nothing. The writer raises the contract's errors
    (``ckptstore.io_errors.guarded_writer``); an existing file raises
    ``CheckpointFileExistsError``.
    """
    with io_errors("create", path, fs):
        writer = adapter_for(path.scheme).open_exclusive_write(fs, path)
    return guarded_writer(writer, path, fs)


def discard_writer(writer: IO[bytes]) -> None:
    """Abandon a writer from :func:`open_exclusive_write` without committing it.

    For buffered remote files (s3fs) ``discard()`` aborts a multipart upload and drops the
    buffer, so ``close()`` uploads nothing. Errors are swallowed: this runs on cleanup paths.
    """
    writer = unwrap_writer(writer)
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
    adapter_for(path.scheme).sync_and_close(writer, path)


def publish_exclusive(
    fs: Any, path: StoragePath, data: bytes, *, probe_dir: StoragePath | None = None
) -> None:
    """Make ``path`` hold ``data`` at once and only if it does not exist (MD2).

    The store's adapter publishes. Local: temp file in the same directory + ``os.link``
    (atomic, never overwrites). Memory: check-and-create under a lock. S3:
    ``ckptstore.stores.s3.publish_metadata``: one
    PutObject with ``If-None-Match: *`` where the server honours it; where it does not,
    ``ConditionalWritesUnsupportedError``, or claim-then-write where the storage options
    allow unconditional metadata; the server is probed first if this process has not yet
    (under ``probe_dir``, default: the directory above ``path``'s;
    :func:`probe_conditional_writes`); a lost answer whose write committed is recognised by
    its bytes. Others: ``open(path, 'xb')``. An existing target raises
    ``MetadataExistsError``; any other failure the contract's ``OSError`` types
    (``ckptstore.io_errors``).

    A failure removes whatever the publish staged (a temporary file, a half-written target it
    created): nothing of it stays on the backend, so the next attempt finds a clean directory.
    Only a crash between the temp file's creation and its removal leaves
    ``._metadata.<hex>.inprogress`` behind (``ckptstore.filesystem.leftovers`` finds and removes
    it).
    """
    try:
        adapter_for(path.scheme).publish(fs, path, data, probe_dir or _probe_dir_for(path))
    except (FileExistsError, CheckpointFileExistsError) as exc:
        if isinstance(exc, MetadataExistsError):
            raise
        raise MetadataExistsError(f"Target file {path.url} already exists.") from exc
    except Exception as exc:
        error = translate_io_error(exc, "publish", path, fs)
        raise error from exc


def _probe_dir_for(path: StoragePath) -> StoragePath:
    """Where a lazy probe goes: the directory that holds ``path``'s directory (``<job>`` for
    ``<job>/chk-<n>/_metadata``), or ``path``'s own directory right below a bucket."""
    directory = path.parent
    above = directory.parent
    return (
        above if above != directory and authority_of(above) and "/" in above.path else (directory)
    )


def probe_conditional_writes(fs: Any, directory: StoragePath) -> str:
    """Find out whether the store honours exclusive creates, once per process and store.

    S3: ``ckptstore.stores.s3.probe_conditional_writes`` (three requests under ``directory`` the
    first time per endpoint and bucket, none afterwards). Other file systems create files
    exclusively by themselves: nothing is sent. Returns :func:`conditional_write_mode`.
    """
    with io_errors("probe conditional writes in", directory, fs):
        return adapter_for(directory.scheme).probe_conditional_writes(fs, directory)


def conditional_write_mode(fs: Any, path: StoragePath) -> str:
    """How ``_metadata`` is kept from being overwritten at ``path``'s store (no I/O).

    ``"honoured"`` (S3 servers that refuse a second ``If-None-Match: *`` create; local and
    memory file systems, whose exclusive create is native); on S3 servers that ignore the
    header ``"ignored: finalization refused"``, or ``"ignored: claim-then-write"`` where the
    storage options allow unconditional metadata (``ckptstore.stores.s3``); or
    ``"unknown: not probed yet"`` on S3 before this process probed the server.
    """
    return adapter_for(path.scheme).conditional_write_mode(fs, path)


def path_is_s3(path: StoragePath) -> bool:
    """True for ``s3://``/``s3a://`` paths."""
    return path.scheme in S3_SCHEMES


#: What fsspec expands as a glob pattern (``fsspec.utils``' ``has_magic``) in ``rm``.
GLOB_CHARACTERS = ("*", "?", "[")


def client_reading(fs: Any, path: StoragePath) -> str | None:
    """Why ``fs`` would act on another path than ``path`` names, or ``None`` if it would not.

    fsspec's ``rm`` expands ``*``, ``?`` and ``[`` as glob patterns; s3fs's ``split_path``
    cuts a key at ``?versionId=`` (and reads ARNs as buckets). ``parse_storage_path`` refuses
    such paths already; this is the check at the deletion itself, whatever path reaches it
    (a listed name, a path made by another route).
    """
    if any(character in path.fs_path for character in GLOB_CHARACTERS):
        return "fsspec reads '*', '?' and '[' in it as a glob pattern"
    return adapter_for(path.scheme).misreading(fs, path)


def require_literal_path(fs: Any, path: StoragePath, action: str) -> None:
    """Raise ``DisposalRefusedError`` (nothing deleted) when ``fs`` would read ``path`` as
    another path (:func:`client_reading`): a deletion never reaches beyond what it names."""
    reason = client_reading(fs, path)
    if reason is not None:
        raise DisposalRefusedError(
            f"refused to {action} {path.shown}: {reason}, so the deletion could reach other "
            "paths. Nothing was deleted."
        )


def delete_file(fs: Any, path: StoragePath) -> None:
    """Delete one file; a missing file is fine; never touch the parent (H2, T-FSH2..5).

    When the delete succeeds nothing else is asked. When it fails, one existence check
    decides: gone means success, still there raises ``CheckpointIOError``. When the endpoint
    could not be reached at all, the check is skipped (it could not be answered either) and
    the failure is raised at once. A path the client would read as another one is refused
    (:func:`require_literal_path`).
    """
    require_literal_path(fs, path, "delete")
    try:
        fs.rm_file(path.fs_path)
        return
    except FileNotFoundError:
        return
    except Exception as exc:
        failure: Exception = exc
    if not is_unreachable(failure):
        try:
            still_there = bool(fs.exists(path.fs_path))
        except Exception:
            still_there = True
        if not still_there:
            return
    error = translate_io_error(failure, "delete", path, fs)
    raise error from failure


def delete_tree(fs: Any, path: StoragePath) -> None:
    """Delete a directory and everything below it; missing is fine (MD6, MD7, T-CCL1).

    S3: ``ckptstore.stores.s3.delete_below``: the open multipart uploads below the directory are
    aborted (ListMultipartUploads), then one ListObjectsV2 and one DeleteObjects per 1000
    keys; a bucket's root is refused. Elsewhere ``fs.rm(recursive=True)``. Callers confine it
    to directories the storage's layout names (``ckptstore.filesystem.layout``); a path the client
    would read as another one is refused (:func:`require_literal_path`).
    """
    require_literal_path(fs, path, "delete")
    with io_errors("delete", path, fs):
        adapter_for(path.scheme).delete_tree(fs, path)


@dataclass(frozen=True, slots=True)
class OpenUpload:
    """An S3 multipart upload that was started and neither completed nor aborted."""

    path: StoragePath
    upload_id: str
    #: when it was started (UTC), as the server reports it
    initiated: Any


def list_open_uploads(fs: Any, directory: StoragePath) -> list[OpenUpload] | None:
    """The open multipart uploads below ``directory`` (S3: ListMultipartUploads per 1000).

    ``None`` where there are none to find (other file systems) or the server does not
    implement the listing (s3rver answers 501).
    """
    with io_errors("list the open uploads below", directory, fs):
        found = adapter_for(directory.scheme).list_open_uploads(fs, directory)
    if found is None:
        return None
    bucket = authority_of(directory)
    uploads = []
    for item in found:
        key = str(item.get("Key", ""))
        if key:
            path = StoragePath(directory.scheme, f"{bucket}/{key}")
            uploads.append(OpenUpload(path, str(item.get("UploadId", "")), item.get("Initiated")))
    return uploads


def abort_open_upload(fs: Any, upload: OpenUpload) -> None:
    """Abort an open multipart upload (S3 AbortMultipartUpload); a finished one is fine."""
    bucket, _, key = upload.path.path.partition("/")  # the listed key as it is
    with io_errors("abort the upload of", upload.path, fs):
        s3.abort_upload(fs, bucket, key, upload.upload_id)


def existing_size(fs: Any, path: StoragePath) -> int | None:
    """The size of the S3 object ``path``, ``None`` when it does not exist (one HEAD).

    Raises the client's exception when it cannot tell (callers decide).
    """
    info = s3.head_object(fs, path)
    return None if info is None else int(info.get("ContentLength", -1))


def file_info(fs: Any, path: StoragePath) -> dict[str, Any] | None:
    """``fs.info(path)`` or ``None`` when it does not exist (one HEAD on S3 for a file)."""
    with io_errors("look up", path, fs):
        try:
            return cast(dict[str, Any], fs.info(path.fs_path))
        except (FileNotFoundError, NotADirectoryError):
            return None


def open_for_read(fs: Any, path: StoragePath, size: int) -> BinaryIO:
    """Open a file for reading; with a known size, S3 costs one GET and no HEAD.

    The reader raises the contract's errors (``ckptstore.io_errors``) on open and on read:
    on S3 the GET happens at the first ``read()``. With a known ``size`` (not -1) the file
    must hold exactly that many bytes: a read that finds it shorter or longer raises
    ``StateSizeMismatchError`` instead of returning bytes, on every file system (on S3 each
    GET also compares the object's size the answer names, so a reader that never asks
    beyond ``size`` notices an object that grew).
    """
    with io_errors("read", path, fs):
        reader = _open_for_read(fs, path, size)
    return guarded_reader(reader, path, fs, size)


def _open_for_read(fs: Any, path: StoragePath, size: int) -> BinaryIO:
    """The store's reader of ``path`` (S3: one GET and no HEAD when the size is known)."""
    return adapter_for(path.scheme).open_for_read(fs, path, size)


def copy_exclusive(fs: Any, source: StoragePath, target: StoragePath, size: int = -1) -> None:
    """Copy a file to a new ``target``, never overwriting, without moving the bytes through
    this process, on the file systems whose traits claim a server-side copy (local, memory,
    S3; nothing else calls it).

    Local: a hard link (``os.link`` never overwrites), else an exclusive ``open('xb')`` copy
    (across devices). Memory: check-and-copy under a lock. S3: one CopyObject (no HEAD) for
    files up to 5 GiB of known size, else s3fs's multipart copy; S3's CopyObject cannot be
    made exclusive everywhere, so callers pick fresh random target names. An existing target
    raises ``CheckpointFileExistsError``, a missing source ``CheckpointNotFoundError``, any
    other failure ``CheckpointIOError``.
    """
    message = f"Could not copy {source.url} to {target.url}"
    with io_errors("copy", target, fs, message=message):
        adapter_for(source.scheme).copy_exclusive(fs, source, target, size)
