"""The reference's own exception classes.

Every class subclasses the built-in exception that Flink's Java exception maps to
(NullPointerException -> TypeError, IllegalArgumentException -> ValueError,
FileNotFoundException -> FileNotFoundError, IOException -> OSError), so code written
against the contract can catch built-ins and never needs to import anything of ours.
``CheckpointStorageError`` is a common base for callers that want "anything from ckptstore".

This module does no I/O and imports nothing but the standard library.
"""

from __future__ import annotations

__all__ = [
    "CheckpointIOError",
    "CheckpointNotFoundError",
    "CheckpointStorageError",
    "ConfigurationError",
    "DuplicationNotSupportedError",
    "InvalidArgumentError",
    "InvalidHandleError",
    "InvalidPointerError",
    "InvalidReferenceError",
    "MetadataExistsError",
    "MissingArgumentError",
    "StateSizeExceededError",
    "StreamClosedError",
    "UnsupportedSchemeError",
]


class CheckpointStorageError(Exception):
    """Base of every error the reference raises on purpose."""


class MissingArgumentError(CheckpointStorageError, TypeError):
    """A required argument was ``None`` (Flink: NullPointerException)."""


class InvalidArgumentError(CheckpointStorageError, ValueError):
    """An argument has an invalid value (Flink: IllegalArgumentException)."""


class ConfigurationError(InvalidArgumentError):
    """A storage or checkpoint configuration value is invalid."""


class InvalidReferenceError(InvalidArgumentError):
    """A CheckpointStorageLocationReference cannot be decoded (REF3)."""


class InvalidHandleError(InvalidArgumentError):
    """A state handle is unusable here, e.g. a relative path that leaves its directory."""


class CheckpointIOError(CheckpointStorageError, OSError):
    """An I/O operation on checkpoint storage failed (Flink: IOException)."""


class CheckpointNotFoundError(CheckpointIOError, FileNotFoundError):
    """A checkpoint, savepoint or its ``_metadata`` does not exist (PTR5, PTR6, PTR10)."""


class InvalidPointerError(CheckpointIOError):
    """An external pointer cannot be parsed as a path (PTR3)."""


class UnsupportedSchemeError(CheckpointIOError):
    """A pointer or reference names a URL scheme this storage may not open (PTR4)."""


class MetadataExistsError(CheckpointIOError, FileExistsError):
    """``_metadata`` already exists for this location (MD2, T-BASE4)."""


class StreamClosedError(CheckpointIOError, ValueError):
    """An operation on a closed stream (S14).

    It is both an ``OSError`` (Flink's IOException) and a ``ValueError`` (what Python's own
    ``io`` module raises for closed files), like ``io.UnsupportedOperation``.
    """


class StateSizeExceededError(CheckpointIOError):
    """State is larger than the JobManager storage's maximum (MEM5)."""


class DuplicationNotSupportedError(CheckpointIOError):
    """The toolset or file system cannot duplicate state (TO5)."""
