"""Resolving external checkpoint/savepoint pointers (PTR1-PTR10).

A pointer is the URL of a checkpoint directory (``file:///...``, ``s3://b/k``,
``memory:///...``), that directory plus ``/``, or the metadata file itself (any file name,
PTR7). Resolution never lists a directory's contents. The common case costs one metadata request
(``<dir>/_metadata`` is tried first: one HEAD on S3); a pointer whose last segment is
``_metadata`` is tried as a file first. Only the failure paths and the "metadata file with
another name" form cost more (on S3, s3fs follows a missing key with one listing to tell a
directory prefix from nothing).

Security: a pointer may come from a user or a REST call, so only the schemes the caller
allows are opened (``allowed_schemes``); anything else raises ``UnsupportedSchemeError``
without touching any file system. Pointers are normalised like Flink's Path (``.`` and ``..``
resolved, ``ckptstore.paths``), so the resolved ``external_pointer`` never keeps a ``..``; a
pointer that climbs above its root or bucket, holds control characters, is not UTF-8 or is
longer than ``MAX_URL_LENGTH`` is an ``InvalidPointerError`` (PTR3), also before any I/O.
A pointer to any file resolves, as in Flink (PTR7), but disposing such a location deletes
nothing unless the directory is a ``chk-<n>`` or savepoint directory
(``ckptstore.filesystem.layout``). Messages show the pointer redacted (``ckptstore.redaction``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from ckptstore.api import METADATA_FILE_NAME, NON_ADDRESSABLE_POINTER
from ckptstore.calls import public_call
from ckptstore.errors import (
    CheckpointIOError,
    CheckpointNotFoundError,
    InvalidArgumentError,
    InvalidPointerError,
    MissingArgumentError,
    UnsupportedSchemeError,
)
from ckptstore.filesystem.handles import FileStateHandle
from ckptstore.filesystem.metadata import FsCompletedCheckpointStorageLocation
from ckptstore.io_errors import contract_error, io_errors
from ckptstore.paths import LOCAL_SCHEMES, StoragePath, canonical_scheme, parse_storage_path
from ckptstore.redaction import redact_text
from ckptstore.stores.adapters import DIRECTORY_SCHEMES, S3_SCHEMES
from ckptstore.stores.registry import filesystem_for, is_available_scheme, register_path
from ckptstore.validation import require_url_text

__all__ = [
    "normalise_schemes",
    "require_allowed_scheme",
    "resolve_checkpoint_pointer",
    "storage_schemes",
]

# Spellings that open the same file system; allowing one allows its siblings.
_ALIASES: tuple[frozenset[str], ...] = (
    frozenset(LOCAL_SCHEMES),
    S3_SCHEMES,
    frozenset({"gs", "gcs"}),
    frozenset({"abfs", "az"}),
)


def normalise_schemes(schemes: Collection[str]) -> frozenset[str]:
    """Canonical, alias-expanded scheme names (``file``/``local``, ``s3``/``s3a``...).

    Aliases are added only where a file system serves them (never ``s3n``).
    """
    result: set[str] = set()
    for scheme in schemes:
        name = canonical_scheme(str(scheme).rstrip(":/"))
        result.add(name)
        for group in _ALIASES:
            if name in group:
                result |= {canonical_scheme(alias) for alias in group if is_available_scheme(alias)}
    return frozenset(result)


def storage_schemes(
    paths: Iterable[StoragePath | None], extra: Collection[str] = ()
) -> frozenset[str]:
    """The schemes a storage may open: its paths' (else ``file``) plus ``extra``, normalised.

    A storage with no paths at all (a JobManager storage without checkpoint and savepoint
    path) still takes savepoints to, and resolves pointers on, the local file system, which is
    Flink's default file system when none is configured.
    """
    own = [path.scheme for path in paths if path is not None]
    return normalise_schemes([*(own or ["file"]), *extra])


def require_allowed_scheme(
    path: StoragePath,
    allowed: Collection[str],
    what: str,
    *,
    shown: str | None = None,
    purpose: str = "",
) -> None:
    """Raise ``UnsupportedSchemeError`` unless ``path``'s scheme is one of ``allowed``.

    The message names ``what`` and the path (``shown``, else the redacted URL), the allowed
    schemes and the remedy, ``allowed_schemes`` (``purpose``: what adding it is for).
    """
    allowed = normalise_schemes(allowed)
    if path.scheme in allowed:
        return
    shown = redact_text(path.url) if shown is None else shown
    raise UnsupportedSchemeError(
        f"Cannot access file system for {what} '{shown}': the scheme '{path.scheme}' is not "
        f"allowed for this storage (allowed: {', '.join(sorted(allowed)) or 'none'}). Add it "
        f"to the storage's allowed_schemes{purpose}."
    )


@public_call
def resolve_checkpoint_pointer(
    pointer: str,
    *,
    allowed_schemes: Collection[str],
    storage_options: Mapping[str, Any] | None = None,
) -> FsCompletedCheckpointStorageLocation:
    """Find the checkpoint or savepoint that ``pointer`` names.

    ``allowed_schemes``: the schemes that may be opened (the storage's own checkpoint and
    savepoint schemes plus what the user allowed); ``file`` and ``local`` are the same.
    ``storage_options``: fsspec options for the pointer's file system; every scheme but
    ``file`` and ``memory`` (which take none) gets them.

    Raises ``MissingArgumentError`` (TypeError) for ``None``, ``InvalidArgumentError``
    (ValueError) "empty checkpoint pointer", ``InvalidPointerError`` for an unparsable
    pointer, ``UnsupportedSchemeError`` for a scheme that is not allowed,
    ``CheckpointNotFoundError`` (FileNotFoundError) when nothing is there (PTR5), when a
    directory has no ``_metadata`` (PTR6), or for the JobManager's non-addressable pointer
    (PTR10), and ``CheckpointIOError`` when the file system cannot be reached (PTR4).
    """
    if pointer is None:
        raise MissingArgumentError("checkpoint pointer (checkpointPointer) must not be None")
    if isinstance(pointer, str) and not pointer.strip():
        raise InvalidArgumentError("empty checkpoint pointer")
    if pointer == NON_ADDRESSABLE_POINTER:
        raise CheckpointNotFoundError(
            f"Cannot resolve the pointer {pointer!r}: that checkpoint was kept in the "
            "JobManager's memory only and was never written to a file system."
        )
    shown = redact_text(pointer) if isinstance(pointer, str) else ""
    try:
        location = parse_storage_path(require_url_text(pointer, "checkpoint pointer"))
    except TypeError:  # None or not a string: the caller's mistake, not a bad path
        raise
    except ValueError as exc:
        raise InvalidPointerError(
            f"Checkpoint/savepoint path '{shown}' is not a valid file URI. Either the pointer "
            "path is invalid, or the checkpoint was created by a different state backend. "
            f"({exc})"
        ) from exc

    require_allowed_scheme(
        location,
        allowed_schemes,
        "checkpoint/savepoint path",
        shown=shown,
        purpose=" to resolve pointers on it",
    )

    use_options = location.scheme not in DIRECTORY_SCHEMES
    try:
        token = register_path(location, storage_options if use_options else None)
        fs = filesystem_for(location, token)
    except CheckpointIOError as exc:
        text = f"Cannot access file system for checkpoint/savepoint path '{shown}': {exc}"
        raise contract_error(type(exc), text, exc.errno) from exc
    except Exception as exc:
        raise CheckpointIOError(
            f"Cannot access file system for checkpoint/savepoint path '{shown}'."
        ) from exc

    metadata_path, size = _find_metadata(fs, location, pointer)
    directory = metadata_path.parent
    handle = FileStateHandle(metadata_path.url, size, fs_token=token)
    return FsCompletedCheckpointStorageLocation(
        directory.url, handle, directory.url, fs_token=token
    )


def _info(fs: Any, path: StoragePath, pointer: str) -> dict[str, Any] | None:
    with io_errors(
        f"resolve the checkpoint/savepoint pointer '{redact_text(pointer)}': looking up",
        path,
        fs,
    ):
        try:
            info: dict[str, Any] = fs.info(path.fs_path)
        except (FileNotFoundError, NotADirectoryError):
            return None
    return info


def _file_size(info: dict[str, Any] | None) -> int | None:
    """The size of the file ``info`` describes; None when it describes nothing or a directory."""
    if info is None or info.get("type") != "file":
        return None
    return int(info["size"])


def _find_metadata(fs: Any, location: StoragePath, pointer: str) -> tuple[StoragePath, int]:
    """The metadata file and its size, in as few requests as possible (PTR5-PTR8)."""
    if location.name == METADATA_FILE_NAME:
        info = _info(fs, location, pointer)
        size = _file_size(info)
        if size is not None:
            return location, size
        candidate = location.child(METADATA_FILE_NAME)
        candidate_info = _info(fs, candidate, pointer) if info is not None else None
        size = _file_size(candidate_info)
        if size is not None:
            return candidate, size
    else:
        candidate = location.child(METADATA_FILE_NAME)
        size = _file_size(_info(fs, candidate, pointer))
        if size is not None:
            return candidate, size
        info = _info(fs, location, pointer)
    if info is None:
        raise CheckpointNotFoundError(
            f"Cannot find checkpoint or savepoint file/directory '{redact_text(pointer)}' on "
            f"file system '{location.scheme}'."
        )
    size = _file_size(info)
    if size is not None:
        return location, size
    raise CheckpointNotFoundError(
        f"Cannot find meta data file '{METADATA_FILE_NAME}' in directory '{location.url}'. "
        "Please try to load the checkpoint/savepoint directly from the metadata file instead "
        "of the directory."
    )
