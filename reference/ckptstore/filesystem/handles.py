"""File state handles: ``FileStateHandle`` and ``RelativeFileStateHandle`` (H1-H3, H6).

A handle is a small picklable value: the file's canonical URL, its size and the token of the
store it was written to (``ckptstore.stores.registry``: a short hash of scheme and endpoint, never
of credentials). It never holds a file system instance or credentials. Reading or discarding,
in whatever process, looks the file system up by the registry's rules: the options registered
in this process for the same store, else for the file's scheme and bucket, else fsspec's
process-wide configuration for the scheme. Failures raise the contract's ``OSError`` types
(``CheckpointNotFoundError`` for a missing file, ``CheckpointIOError`` otherwise) naming the
endpoint and the path.

Equality follows Flink: a ``FileStateHandle`` compares by path only; a relative handle also
compares its relative path.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from ckptstore.calls import public_call
from ckptstore.errors import InvalidArgumentTypeError, MissingArgumentError
from ckptstore.paths import StoragePath, parse_storage_path
from ckptstore.redaction import redact_text
from ckptstore.stores.adapters import authority_of
from ckptstore.stores.operations import delete_file, open_for_read
from ckptstore.stores.registry import get_filesystem
from ckptstore.validation import JAVA_LONG_MAX, require_file_name, require_int, require_url_text

__all__ = ["FileStateHandle", "RelativeFileStateHandle"]


@functools.lru_cache(maxsize=4096)
def _parsed(url: str) -> StoragePath:
    """``parse_storage_path`` of a handle's URL, remembered: a restore reads each file once,
    but opens, discards and rebases parse the same canonical URLs again (``StoragePath`` is
    immutable, and a canonical URL does not depend on the working directory)."""
    return parse_storage_path(url)


@dataclass(frozen=True, slots=True, eq=False)
class FileStateHandle:
    """State in one file, addressed by an absolute URL (``file:///...``, ``s3://b/k``)."""

    file_path: str
    state_size: int
    fs_token: str | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        if self.file_path is None:
            raise MissingArgumentError("file_path must not be None")
        size = require_int(
            self.state_size,
            "state_size",
            minimum=-1,
            maximum=JAVA_LONG_MAX,
            below_message=f"state size must be an int >= -1 (-1: unknown), got {self.state_size!r}",
        )
        object.__setattr__(self, "state_size", size)
        if self.fs_token is not None and not isinstance(self.fs_token, str):
            raise InvalidArgumentTypeError(
                f"fs_token must be a string or None, got {type(self.fs_token).__name__}"
            )
        path = parse_storage_path(require_url_text(self.file_path, "file_path"))
        object.__setattr__(self, "file_path", path.url)

    @classmethod
    def of(cls, path: StoragePath, state_size: int, *, fs_token: str | None) -> FileStateHandle:
        """The handle of a file the caller wrote: its path parsed, its size counted.

        What a stream calls for every file-backed state: it skips the constructor's checks
        and its parse of the URL, so the caller vouches for the values.
        """
        handle = object.__new__(cls)
        object.__setattr__(handle, "file_path", path.url)
        object.__setattr__(handle, "state_size", state_size)
        object.__setattr__(handle, "fs_token", fs_token)
        return handle

    @property
    def storage_path(self) -> StoragePath:
        """The parsed location of the file."""
        return _parsed(self.file_path)

    def _filesystem(self, path: StoragePath) -> Any:
        return get_filesystem(path.scheme, self.fs_token, authority=authority_of(path))

    @public_call
    def open_input_stream(self) -> BinaryIO:
        """Open the file for reading; on S3 one GET (the size is known: no HEAD).

        A local file is opened with Python's own ``open``: it needs no file system instance
        (looking one up costs more than opening the file). With a known ``state_size`` a read
        that finds the file shorter or longer raises ``StateSizeMismatchError`` (an
        ``OSError``) instead of returning bytes that are not the state
        (``stores.operations.open_for_read``).
        """
        path = self.storage_path
        fs = None if path.scheme == "file" else self._filesystem(path)
        return open_for_read(fs, path, self.state_size)

    def as_bytes_if_in_memory(self) -> bytes | None:
        return None

    @public_call
    def discard_state(self) -> None:
        """Delete the file (never its directory); a missing file is not an error (H2)."""
        path = self.storage_path
        delete_file(self._filesystem(path), path)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, FileStateHandle)
        return self.file_path == other.file_path

    def __hash__(self) -> int:
        return hash(self.file_path)

    def __repr__(self) -> str:
        return f"File State: {redact_text(self.file_path)} [{self.state_size} bytes]"


@dataclass(frozen=True, slots=True, eq=False)
class RelativeFileStateHandle(FileStateHandle):
    """A file of a checkpoint directory, also remembered by its bare file name (H3, H6).

    ``relative_path`` is one path segment; a completed location rebases the handle onto its
    own directory (``resolve_handle``), which is what makes a moved savepoint restorable.
    """

    relative_path: str = field(kw_only=True)

    def __post_init__(self) -> None:
        FileStateHandle.__post_init__(self)
        if self.relative_path is None:
            raise MissingArgumentError("relative_path must not be None")
        require_file_name(self.relative_path)

    @classmethod
    def of(
        cls, path: StoragePath, state_size: int, *, fs_token: str | None
    ) -> RelativeFileStateHandle:
        """The handle of a file the caller wrote into a checkpoint directory; its relative
        path is the file's name (see ``FileStateHandle.of``)."""
        handle = super(RelativeFileStateHandle, cls).of(path, state_size, fs_token=fs_token)
        object.__setattr__(handle, "relative_path", path.name)
        return handle  # type: ignore[return-value]

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, RelativeFileStateHandle)
        return self.file_path == other.file_path and self.relative_path == other.relative_path

    def __hash__(self) -> int:
        return 17 * hash(self.file_path) + hash(self.relative_path)

    def __repr__(self) -> str:
        return (
            f"RelativeFileStateHandle State: {redact_text(self.file_path)}, {self.relative_path} "
            f"[{self.state_size} bytes]"
        )
