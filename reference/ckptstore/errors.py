"""The reference's own exception classes.

Every class subclasses the built-in exception that Flink's Java exception maps to
(NullPointerException -> TypeError, IllegalArgumentException -> ValueError,
FileNotFoundException -> FileNotFoundError, IOException -> OSError), so code written
against the contract can catch built-ins and never needs to import anything of ours.
``CheckpointStorageError`` is a common base for callers that want "anything from ckptstore".

Argument errors (raised by ``ckptstore.validation``, the one validation layer of every public
constructor and method) name the argument, the rejected value (secrets redacted) and what is
accepted; they also carry these as attributes ``argument``, ``value`` and ``accepted``:

* ``MissingArgumentError`` (``TypeError``): the argument is ``None``;
* ``InvalidArgumentTypeError`` (``ValueError`` *and* ``TypeError``): wrong type, e.g. a
  string where an int is expected; a ``ValueError`` like every invalid argument (Flink's
  IllegalArgumentException) and a ``TypeError`` as Python code expects;
* ``ArgumentOutOfRangeError`` (``ValueError``): a number outside its accepted range;
* ``InvalidPathError`` (``ValueError``): a path or URL that cannot name a location safely
  (control characters, ``..`` above the root, too long, invalid bucket name, characters the
  file system's client reads as a glob pattern, a version id or a chained URL);
* ``ConfigurationError``, ``InvalidReferenceError``, ``InvalidHandleError`` (``ValueError``).

I/O errors (raised through ``ckptstore.io_errors``, the one mapping of file-system and client
library failures) are ``CheckpointIOError`` (``OSError``) and its subclasses; their messages
name the action, the path and the endpoint, never a credential. Each carries an errno that
Python's ``OSError(errno, text)`` maps to its own built-in class (BAD-14): the failure's own
where ``ckptstore.io_errors`` keeps it, else its class's ``default_errno`` (EIO for a plain
``CheckpointIOError``, ENOENT for a missing file, EEXIST for an existing one...).

This module does no I/O and imports nothing but the standard library.
"""

from __future__ import annotations

import errno
from typing import ClassVar

__all__ = [
    "ArgumentOutOfRangeError",
    "CheckpointFileExistsError",
    "CheckpointIOError",
    "CheckpointNotFoundError",
    "CheckpointStorageError",
    "ConditionalWritesUnsupportedError",
    "ConfigurationError",
    "DisposalRefusedError",
    "DuplicationNotSupportedError",
    "EndpointUnreachableError",
    "InvalidArgumentError",
    "InvalidArgumentTypeError",
    "InvalidHandleError",
    "InvalidPathError",
    "InvalidPointerError",
    "InvalidReferenceError",
    "MetadataExistsError",
    "MissingArgumentError",
    "StateSizeExceededError",
    "StateSizeMismatchError",
    "StreamClosedError",
    "StreamFailedError",
    "UnsupportedSchemeError",
]


class CheckpointStorageError(Exception):
    """Base of every error the reference raises on purpose."""


class MissingArgumentError(CheckpointStorageError, TypeError):
    """A required argument was ``None`` (Flink: NullPointerException)."""


class InvalidArgumentError(CheckpointStorageError, ValueError):
    """An argument has an invalid value (Flink: IllegalArgumentException)."""


class InvalidArgumentTypeError(InvalidArgumentError, TypeError):
    """An argument has the wrong type: a ``ValueError`` (Flink's IAE) and a ``TypeError``."""


class ArgumentOutOfRangeError(InvalidArgumentError):
    """A numeric argument lies outside its accepted range (e.g. an id beyond a Java long)."""


class InvalidPathError(InvalidArgumentError):
    """A path or URL cannot name a location safely.

    Control characters, ``..`` segments that climb above the root or bucket, text that is not
    encodable as UTF-8, a URL longer than ``ckptstore.validation.MAX_URL_LENGTH``, an invalid
    S3 bucket name, or ``ckptstore.paths.CLIENT_SYNTAX`` (``*``, ``?``, ``[``, ``::``).
    """


class ConfigurationError(InvalidArgumentError):
    """A storage or checkpoint configuration value is invalid."""


class InvalidReferenceError(InvalidArgumentError):
    """A CheckpointStorageLocationReference cannot be decoded (REF3)."""


class InvalidHandleError(InvalidArgumentError):
    """A state handle is unusable here, e.g. a relative path that leaves its directory."""


class CheckpointIOError(CheckpointStorageError, OSError):
    """An I/O operation on checkpoint storage failed (Flink: IOException).

    Raised with a message only, it carries its class's ``default_errno``; ``str()`` stays
    the message.
    """

    default_errno: ClassVar[int] = errno.EIO

    def __init__(self, *args: object) -> None:
        super().__init__(*args)
        if self.errno is None:
            self.errno = self.default_errno


class EndpointUnreachableError(CheckpointIOError, ConnectionError):
    """The store's endpoint could not be reached (refused, unresolvable, connect timeout)."""

    default_errno = errno.ECONNREFUSED


class CheckpointNotFoundError(CheckpointIOError, FileNotFoundError):
    """A checkpoint, savepoint or its ``_metadata`` does not exist (PTR5, PTR6, PTR10)."""

    default_errno = errno.ENOENT


class InvalidPointerError(CheckpointIOError):
    """An external pointer cannot be parsed as a path (PTR3)."""

    default_errno = errno.EINVAL


class UnsupportedSchemeError(CheckpointIOError):
    """A pointer or reference names a URL scheme this storage may not open (PTR4)."""

    default_errno = errno.EINVAL


class CheckpointFileExistsError(CheckpointIOError, FileExistsError):
    """A file the storage creates exclusively exists already; nothing was overwritten."""

    default_errno = errno.EEXIST


class MetadataExistsError(CheckpointFileExistsError):
    """``_metadata`` already exists for this location (MD2, T-BASE4)."""


class ConditionalWritesUnsupportedError(CheckpointIOError):
    """The S3 server ignores conditional writes, so ``_metadata`` cannot be published
    exclusively, and the storage options do not allow publishing it without them
    (``allow_unconditional_metadata``, ``ckptstore.stores.s3``); nothing was written."""

    default_errno = errno.EOPNOTSUPP


class StreamClosedError(CheckpointIOError, ValueError):
    """An operation on a closed stream (S14).

    It is both an ``OSError`` (Flink's IOException) and a ``ValueError`` (what Python's own
    ``io`` module raises for closed files), like ``io.UnsupportedOperation``.
    """

    default_errno = errno.EBADF


class StateSizeExceededError(CheckpointIOError):
    """State is larger than the JobManager storage's maximum (MEM5)."""

    default_errno = errno.EFBIG


class StateSizeMismatchError(CheckpointIOError):
    """A state file holds fewer or more bytes than its handle's ``state_size`` says.

    The file was truncated, extended or replaced behind the storage's back: its bytes are not
    the state that was written, so a read raises this instead of returning them.
    """


class StreamFailedError(CheckpointIOError):
    """A state stream whose write or flush failed is used again (it holds no whole state).

    Its ``errno`` is the original failure's; the failure is its ``__cause__``.
    """


class DuplicationNotSupportedError(CheckpointIOError):
    """The toolset or file system cannot duplicate state (TO5)."""

    default_errno = errno.EOPNOTSUPP


class DisposalRefusedError(CheckpointIOError, PermissionError):
    """A disposal would delete something this storage's layout does not name; nothing was deleted.

    Completed and aborted locations delete only ``chk-<n>`` and ``savepoint-<job>-<suffix>``
    directories (``ckptstore.filesystem.layout``); a location resolved from a pointer to any other
    directory (or to a file in one) refuses to be disposed instead of deleting siblings.
    """

    default_errno = errno.EACCES
