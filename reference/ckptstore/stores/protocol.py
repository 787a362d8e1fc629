"""What differs between store families, as one protocol, and plain fsspec's answer to it.

Each family of stores has one adapter (``ckptstore.stores.adapters`` picks it by scheme):
``local`` (``file``), ``memory``, ``remote`` (file systems on hosts: SFTP, FTP, HDFS...) and
``s3`` (``s3``/``s3a``); any other scheme (GCS, Azure...) gets :class:`FsspecStore`, plain
fsspec. An adapter says what the storage may assume about its stores (:class:`SchemeTraits`)
and does what its stores do their own way: the options its client takes, how a client is
made, an exclusive create, the atomic exclusive publish of ``_metadata``, the conditional-write
mode, deletes, reads, server-side copies, open multipart uploads. The generic operations
(``ckptstore.stores.operations``) hold what every store shares (error translation, the checks
before a deletion) and ask the path's adapter for the rest.
"""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO, Any, BinaryIO, Protocol, cast

import fsspec.config

from ckptstore.paths import S3_SCHEMES, StoragePath

__all__ = [
    "ALLOW_UNCONDITIONAL_METADATA",
    "CONDITIONAL_WRITES_NATIVE",
    "REFERENCE_OPTION_KEYS",
    "RETRY_ATTEMPTS",
    "RETRY_SECONDS",
    "FsspecStore",
    "SchemeTraits",
    "StoreAdapter",
    "configured_options",
    "copy_options",
    "family_of",
]

#: ``storage_options`` key: requests per operation (``ckptstore.stores.retry``).
RETRY_ATTEMPTS = "retry_attempts"
#: ``storage_options`` key: seconds per public call (``ckptstore.stores.retry``).
RETRY_SECONDS = "retry_seconds"
#: ``storage_options`` key: publish ``_metadata`` where the server ignores conditional
#: writes (claim-then-write) instead of refusing (a bool, default False; ``ckptstore.stores.s3``).
ALLOW_UNCONDITIONAL_METADATA = "allow_unconditional_metadata"
#: The reference's own ``storage_options`` keys: never handed to a file system's client.
REFERENCE_OPTION_KEYS = (RETRY_ATTEMPTS, RETRY_SECONDS, ALLOW_UNCONDITIONAL_METADATA)
#: File systems whose exclusive create is native (local ``os.link``, memory under a lock).
CONDITIONAL_WRITES_NATIVE = "honoured"

# fsspec applies its configuration for every protocol name of the implementation class.
_CONFIG_PROTOCOLS = {"s3": ("s3", "s3a")}


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


class StoreAdapter(Protocol):
    """What one family of stores does its own way (module docstring).

    ``fs`` is the family's fsspec file system, ``path`` a path of its scheme. Failures are
    raised as the client raises them: ``ckptstore.stores.operations`` translates them.
    """

    #: the store lives in this process (``file``, ``memory``): no connection options, no
    #: buckets, one store per family
    local: bool
    #: one client per thread (paramiko's SFTP client serves one thread)
    thread_bound: bool

    def client_options(self, options: dict[str, Any]) -> dict[str, Any]:
        """The client's options from fsspec's configuration updated by the storage's."""
        ...

    def instantiate(self, scheme: str, options: Mapping[str, Any]) -> Any:
        """A new file system for ``options`` (from :meth:`client_options`)."""
        ...

    def connected(self, fs: Any) -> bool:
        """Whether a cached client can still be used."""
        ...

    def open_exclusive_write(self, fs: Any, path: StoragePath) -> IO[bytes]:
        """A writer of a new file; an existing one raises ``FileExistsError``."""
        ...

    def sync_and_close(self, writer: IO[bytes], path: StoragePath) -> None:
        """Commit a writer of :meth:`open_exclusive_write` (durably where that is asked)."""
        ...

    def publish(self, fs: Any, path: StoragePath, data: bytes, probe_dir: StoragePath) -> None:
        """Make ``path`` hold ``data`` at once, only if it does not exist (MD2)."""
        ...

    def probe_conditional_writes(self, fs: Any, directory: StoragePath) -> str:
        """Find out (once) whether the store honours exclusive creates."""
        ...

    def conditional_write_mode(self, fs: Any, path: StoragePath) -> str:
        """How ``_metadata`` is kept from being overwritten (no I/O)."""
        ...

    def misreading(self, fs: Any, path: StoragePath) -> str | None:
        """Why the client would read ``path`` as another key, or ``None``."""
        ...

    def delete_tree(self, fs: Any, path: StoragePath) -> None:
        """Delete a directory and everything below it; missing is fine."""
        ...

    def remove_empty_directory(self, fs: Any, path: StoragePath) -> bool:
        """Remove ``path`` if it is an empty directory; True if it was removed."""
        ...

    def open_for_read(self, fs: Any, path: StoragePath, size: int) -> BinaryIO:
        """A reader of ``path``; ``size`` (or -1) is what the handle knows."""
        ...

    def copy_exclusive(self, fs: Any, source: StoragePath, target: StoragePath, size: int) -> None:
        """Copy ``source`` to a new ``target`` without moving the bytes through here."""
        ...

    def list_open_uploads(self, fs: Any, directory: StoragePath) -> list[dict[str, Any]] | None:
        """Open multipart uploads below ``directory`` (``Key``, ``UploadId``, ``Initiated``);
        ``None`` where there are none to find."""
        ...


def family_of(scheme: str) -> str:
    """Spellings of one store share it: ``s3``/``s3a``."""
    return "s3" if scheme in S3_SCHEMES else scheme


def copy_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """A copy with nested dicts copied (values such as a user's session object are shared)."""
    return {
        name: copy_options(value) if isinstance(value, dict) else value
        for name, value in options.items()
    }


def _fsspec_configuration(scheme: str) -> dict[str, Any]:
    """fsspec's process-wide configuration for ``scheme`` (environment and config dir)."""
    merged: dict[str, Any] = {}
    for protocol in _CONFIG_PROTOCOLS.get(family_of(scheme), (scheme,)):
        merged.update(copy_options(fsspec.config.conf.get(protocol, {})))
    return merged


def configured_options(scheme: str, storage_options: Mapping[str, Any] | None) -> dict[str, Any]:
    """fsspec's configuration for ``scheme`` updated by ``storage_options`` (fsspec's own
    precedence: explicit options win, key by key); copies, never the caller's dicts."""
    options = _fsspec_configuration(scheme)
    options.update(copy_options(storage_options or {}))
    return options


class FsspecStore:
    """Plain fsspec: what a store family does unless its adapter says otherwise.

    Exclusive creates with ``open(path, 'xb')``; ``_metadata`` published by an exclusive
    create and a write (no atomic publish); deletes with ``fs.rm``; copies with ``fs.copy``.
    """

    local = False
    thread_bound = False

    def client_options(self, options: dict[str, Any]) -> dict[str, Any]:
        for key in REFERENCE_OPTION_KEYS:  # the reference's own keys, not the client's
            options.pop(key, None)
        return options

    def instantiate(self, scheme: str, options: Mapping[str, Any]) -> Any:
        return fsspec.filesystem(scheme, **copy_options(options))

    def connected(self, fs: Any) -> bool:
        return True

    def exclusive_mode(self, fs: Any) -> str:
        """The mode that creates a file exclusively for writing on ``fs``."""
        return "xb"

    def open_exclusive_write(self, fs: Any, path: StoragePath) -> IO[bytes]:
        return cast(IO[bytes], fs.open(path.fs_path, self.exclusive_mode(fs)))

    def sync_and_close(self, writer: IO[bytes], path: StoragePath) -> None:
        writer.close()

    def publish(self, fs: Any, path: StoragePath, data: bytes, probe_dir: StoragePath) -> None:
        """Create ``path`` exclusively and write ``data`` (file systems without an atomic
        publish, such as SFTP); a failure after the create deletes the half-written file,
        which is this call's own (the exclusive create made it)."""
        out = fs.open(path.fs_path, self.exclusive_mode(fs))
        try:
            with out:
                out.write(data)
        except BaseException:
            with contextlib.suppress(Exception):
                fs.rm_file(path.fs_path)
            raise

    def probe_conditional_writes(self, fs: Any, directory: StoragePath) -> str:
        return CONDITIONAL_WRITES_NATIVE

    def conditional_write_mode(self, fs: Any, path: StoragePath) -> str:
        return CONDITIONAL_WRITES_NATIVE

    def misreading(self, fs: Any, path: StoragePath) -> str | None:
        return None

    def delete_tree(self, fs: Any, path: StoragePath) -> None:
        try:
            fs.rm(path.fs_path, recursive=True)
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                return
            raise

    def remove_empty_directory(self, fs: Any, path: StoragePath) -> bool:
        """Directory file systems: ``rmdir`` when ``ls`` finds nothing (never recursive)."""
        if fs.ls(path.fs_path, detail=False):
            return False
        fs.rmdir(path.fs_path)
        return True

    def open_for_read(self, fs: Any, path: StoragePath, size: int) -> BinaryIO:
        return cast(BinaryIO, fs.open(path.fs_path, "rb"))

    def copy_exclusive(self, fs: Any, source: StoragePath, target: StoragePath, size: int) -> None:
        fs.copy(source.fs_path, target.fs_path)

    def list_open_uploads(self, fs: Any, directory: StoragePath) -> list[dict[str, Any]] | None:
        return None
