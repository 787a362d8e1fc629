"""The one place that turns file-system failures into the contract's ``OSError`` subclasses.

fsspec file systems fail in many ways: built-in ``OSError`` subclasses (``FileNotFoundError``
from s3fs for a missing key, ``PermissionError`` for a 403), but also the client library's own
exceptions (botocore's ``EndpointConnectionError`` or ``ParamValidationError`` are no
``OSError``), aiohttp errors and timeouts. The contract promises ``OSError`` for any I/O problem
and ``FileNotFoundError`` for something that does not exist, so every storage operation that
touches a file system runs in :func:`io_errors` (the raw operations of
``ckptstore.stores.registry``: whatever a file-system call raises is its failure), which raises:

* ``CheckpointNotFoundError`` (a ``FileNotFoundError``) for a missing file or object,
* ``CheckpointFileExistsError`` (a ``FileExistsError``) for a file that an exclusive create
  found (nothing is overwritten),
* ``EndpointUnreachableError`` (a ``ConnectionError``) when the endpoint could not be reached
  at all (refused, unresolvable host, connect timeout),
* ``CheckpointIOError`` (an ``OSError``) for every other failure of the file system or its
  client library (timeout, access denied, server error, a misconfigured client),

with a message that names the operation, the path and the endpoint, passed through
``ckptstore.redaction`` (no userinfo, no secret query parameter, no known secret value of the
file system's options). The original exception is the ``__cause__``; its ``errno`` is kept.
Client libraries quote what they were given (botocore refuses an endpoint URL by quoting it,
query string and all), so the texts of the cause and of every exception chained to it are
redacted in place as well: the chain keeps its types and attributes, and shows no secret.
Errors the storage raises on purpose (``CheckpointStorageError``) pass unchanged, and so do
``BaseException``s that are no ``Exception`` (``KeyboardInterrupt``); :func:`io_errors` wraps
file-system calls only, so a bug of the storage's own code is never taken for an I/O failure.

Readers returned by :func:`guarded_reader` and writers returned by :func:`guarded_writer`
translate the same way on every call: on S3 the GET happens at the first ``read()`` and the
PUT at ``close()``.

How long a failure may take is bounded by the retry budget of the file system's options
(``ckptstore.stores.retry.retry_budget``).

This module does no I/O and imports only the standard library and ``ckptstore``'s own
``errors``, ``redaction`` and ``paths``; file systems are inspected by duck typing.
"""

from __future__ import annotations

import contextlib
import errno
import io
from collections.abc import Iterator, Mapping
from typing import IO, Any, BinaryIO, NoReturn, cast
from urllib.parse import urlsplit

from ckptstore.calls import public_call
from ckptstore.errors import (
    ArgumentOutOfRangeError,
    CheckpointFileExistsError,
    CheckpointIOError,
    CheckpointNotFoundError,
    CheckpointStorageError,
    EndpointUnreachableError,
    StateSizeMismatchError,
    StreamClosedError,
)
from ckptstore.paths import StoragePath
from ckptstore.redaction import SECRET_MARKERS, redact_text, secret_values

__all__ = [
    "ENDPOINT_OPTIONS",
    "SECRET_MARKERS",
    "causal_chain",
    "contract_class",
    "contract_error",
    "describe_endpoint",
    "endpoint_label",
    "endpoint_option",
    "guarded_reader",
    "guarded_writer",
    "host_endpoint",
    "io_errors",
    "is_unreachable",
    "public_endpoint",
    "region_option",
    "size_mismatch",
    "translate_io_error",
    "unwrap_writer",
    "with_context",
]

_MAX_REASON = 400
# Exception class names (any module) of a connection that could not be established.
_UNREACHABLE = frozenset(
    {
        "EndpointConnectionError",
        "ConnectTimeoutError",
        "ClientConnectorError",
        "ClientConnectorDNSError",
        "ProxyConnectionError",
        "ConnectionTimeoutError",
        "ConnectTimeout",
        "NewConnectionError",
        "NameResolutionError",
        "gaierror",
        "NoValidConnectionsError",
    }
)


def public_endpoint(url: Any) -> str | None:
    """An endpoint URL as it may be shown and hashed: no userinfo, query or fragment.

    ``https://user:pw@Host:9000/base/?X-Amz-Signature=...`` becomes
    ``https://host:9000/base``. A value without a scheme is taken as ``host[:port]``.
    ``None`` or an empty value gives ``None``.
    """
    if url is None:
        return None
    text = str(url).strip()
    if not text:
        return None
    if "://" not in text:
        text = "//" + text
    try:
        parts = urlsplit(text)
        host = (parts.hostname or "").lower()
        port = parts.port
    except ValueError:
        return "<unparsable endpoint>"
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port is None else f"{host}:{port}"
    scheme = f"{parts.scheme.lower()}://" if parts.scheme else ""
    return f"{scheme}{netloc}{parts.path.rstrip('/')}"


#: Options that name an endpoint, in the spellings of fsspec's file systems: s3fs and gcsfs
#: ``endpoint_url``, others ``endpoint``, adlfs ``account_url`` or ``account_name``.
ENDPOINT_OPTIONS = ("endpoint_url", "endpoint", "account_url", "account_name")


def endpoint_option(options: Mapping[str, Any]) -> Any:
    """The endpoint that fsspec storage ``options`` name, as given (``None``: the default).

    One of :data:`ENDPOINT_OPTIONS`, the ``host[:port]`` of file systems that reach a host
    (SFTP, FTP, SMB, HDFS), or s3fs's ``client_kwargs["endpoint_url"]``.
    """
    for name in ENDPOINT_OPTIONS:
        if options.get(name):
            return options[name]
    if options.get("host"):
        return host_endpoint(options)
    client_kwargs = options.get("client_kwargs")
    if isinstance(client_kwargs, Mapping) and client_kwargs.get("endpoint_url"):
        return client_kwargs["endpoint_url"]
    return None


def region_option(options: Mapping[str, Any]) -> Any:
    """The region of s3fs's ``client_kwargs`` (``None``: not set)."""
    client_kwargs = options.get("client_kwargs")
    return client_kwargs.get("region_name") if isinstance(client_kwargs, Mapping) else None


def host_endpoint(options: Mapping[str, Any]) -> str | None:
    """``host[:port]`` of options that name a host (SFTP, FTP, SMB, HDFS), or ``None``."""
    host = options.get("host")
    if not host:
        return None
    port = options.get("port")
    return f"{host}:{port}" if port else str(host)


def describe_endpoint(scheme: str, options: Mapping[str, Any]) -> str:
    """Where a file system of ``scheme`` with ``options`` sends its requests, for messages:
    the local or memory file system, the endpoint without userinfo, query or fragment, or
    the scheme's default endpoint (with the region where one is set). Never credentials."""
    if scheme == "file":
        return "local file system"
    if scheme == "memory":
        return "memory file system"
    shown = public_endpoint(endpoint_option(options))
    if shown is not None:
        return shown
    region = region_option(options)
    where = f", region {region}" if region else ""
    return f"the default {scheme} endpoint{where}"


def endpoint_label(fs: Any, scheme: str) -> str:
    """:func:`describe_endpoint` of the options ``fs`` was made with."""
    options = getattr(fs, "storage_options", None)
    return describe_endpoint(scheme, options if isinstance(options, Mapping) else {})


def _secret_values(fs: Any) -> list[str]:
    """The secrets of the options ``fs`` was made with (:func:`redaction.secret_values`).

    The reference makes every file system from its storage options, so they hold every
    credential it has; a file system's attributes (s3fs's ``key``, gcsfs's ``token``) are
    those options again, or modes such as ``"anon"`` that are no secret."""
    return secret_values(getattr(fs, "storage_options", None) or {})


def _scrub(text: str, secrets: list[str]) -> str:
    return redact_text(text, secrets, limit=_MAX_REASON)


def causal_chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc``, then what it wraps: its cause, else its context, and so on (once each)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _linked_exceptions(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and every exception linked to it as a cause or a context (once each)."""
    seen: set[int] = set()
    pending: list[BaseException] = [exc]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        pending.extend(e for e in (current.__context__, current.__cause__) if e is not None)


def is_unreachable(exc: BaseException) -> bool:
    """True when ``exc`` (or an exception it wraps) says the request never reached the server."""
    return any(
        isinstance(current, ConnectionRefusedError | EndpointUnreachableError)
        or any(cls.__name__ in _UNREACHABLE for cls in type(current).__mro__)
        for current in causal_chain(exc)
    )


def translate_io_error(
    exc: BaseException,
    action: str,
    path: StoragePath,
    fs: Any = None,
    *,
    message: str | None = None,
) -> BaseException:
    """The exception to raise instead of ``exc``, the failure of a file-system call (``exc``
    itself when the storage raised it on purpose, or when it is no ``Exception``).

    ``action`` is a verb phrase ("read", "delete", "create the directory"), the message reads
    ``Could not <action> <url> (endpoint <endpoint>): <reason>``; ``message`` replaces the
    part before the endpoint (for Flink's own wording).
    """
    if isinstance(exc, CheckpointStorageError) or not isinstance(exc, Exception):
        return exc
    endpoint = endpoint_label(fs, path.scheme)
    cls, code = contract_class(exc)
    if cls is CheckpointNotFoundError:
        reason = "no such file or object"
    elif cls is CheckpointFileExistsError:
        reason = "it exists already (nothing was overwritten)"
    elif cls is EndpointUnreachableError:
        reason = f"the endpoint could not be reached ({type(exc).__name__}: {exc})"
    else:
        reason = f"{type(exc).__name__}: {exc}"
    lead = message if message is not None else f"Could not {action} {path.url}"
    return _contract_error(cls, lead, reason, endpoint, fs=fs, code=code, cause=exc)


def contract_class(exc: BaseException) -> tuple[type[CheckpointIOError], int]:
    """The contract's class for the I/O failure ``exc`` and the errno it carries (one that
    Python's ``OSError`` maps to that class, BAD-14): a missing file is
    ``CheckpointNotFoundError`` (ENOENT), an existing one ``CheckpointFileExistsError``
    (EEXIST), an unreachable endpoint ``EndpointUnreachableError`` (the failure's own
    connection errno, else ECONNREFUSED), anything else ``CheckpointIOError`` (the
    failure's errno where Python's ``OSError`` keeps that errno a plain ``OSError``, else
    EIO: ENOTDIR would make a ``NotADirectoryError``, which a ``CheckpointIOError`` is not;
    the failure itself stays the error's cause)."""
    if isinstance(exc, FileNotFoundError):
        return CheckpointNotFoundError, errno.ENOENT
    if isinstance(exc, FileExistsError):
        return CheckpointFileExistsError, errno.EEXIST
    unreachable = is_unreachable(exc)
    own = exc.errno if isinstance(exc, OSError) and exc.errno else None
    if unreachable:
        return EndpointUnreachableError, own or errno.ECONNREFUSED
    if own is not None and type(OSError(own, "")) is not OSError:
        own = None
    return CheckpointIOError, own or errno.EIO


def _contract_error(
    cls: type[CheckpointIOError],
    lead: str,
    reason: str,
    endpoint: str | None,
    *,
    fs: Any,
    code: int,
    cause: BaseException,
) -> CheckpointIOError:
    """``cls`` saying ``<lead> (endpoint <endpoint>): <reason>``, redacted, with ``errno``
    ``code`` and ``cause`` as its ``__cause__``.

    Both texts are redacted against ``fs``'s secrets; ``reason`` (a client library's text) is
    also cut at ``_MAX_REASON`` characters (:func:`contract_error` makes the error).
    """
    secrets = _secret_values(fs)
    where = "" if endpoint is None else f" (endpoint {endpoint})"
    text = f"{redact_text(lead, secrets, limit=None)}{where}: {_scrub(reason, secrets)}"
    error = contract_error(cls, text, code)
    error.__cause__ = _scrubbed_chain(cause, secrets)
    return error


def contract_error(cls: type[CheckpointIOError], text: str, code: int | None) -> CheckpointIOError:
    """``cls`` saying ``text`` with errno ``code``. ``str(error)`` stays ``text``: no strerror
    or filename is set. A subclass with another constructor falls back to
    ``CheckpointIOError``."""
    try:
        error = cls(text)
    except TypeError:
        error = CheckpointIOError(text)
    error.errno = code
    return error


def _scrubbed_chain(exc: BaseException, secrets: list[str]) -> BaseException:
    """``exc`` with the texts of it and of its causes and contexts redacted, in place."""
    for linked in _linked_exceptions(exc):
        _scrub_texts(linked, secrets)
    return exc


def _scrub_texts(exc: BaseException, secrets: list[str]) -> None:
    """Redact the strings an exception shows: its ``args`` and an ``OSError``'s fields."""
    if isinstance(exc, OSError):
        for name in ("strerror", "filename", "filename2"):
            value = getattr(exc, name, None)
            if isinstance(value, str):
                setattr(exc, name, redact_text(value, secrets, limit=None))
    args = exc.args
    scrubbed = tuple(
        redact_text(arg, secrets, limit=None) if isinstance(arg, str) else arg for arg in args
    )
    if scrubbed != args:
        exc.args = scrubbed


def with_context(
    exc: BaseException, message: str, path: StoragePath, fs: Any = None
) -> CheckpointIOError:
    """A contract ``OSError`` that starts with ``message`` and ends with what ``exc`` says.

    For the places where Flink has its own wording ("Could not flush to file and close the
    file system output stream to ..."): the class is the one :func:`translate_io_error`
    gives (``EndpointUnreachableError``, ``CheckpointFileExistsError``... or
    ``CheckpointIOError``), the message keeps the endpoint and reason, redacted; the cause is
    ``exc``. ``message`` names the path already, so the translated text says "it" for it:
    a path of thousands of characters would otherwise push the endpoint and the reason past
    the reason's length limit.
    """
    translated = translate_io_error(exc, "write", path, fs)
    cls: type[CheckpointIOError] = (
        type(translated) if isinstance(translated, CheckpointIOError) else CheckpointIOError
    )
    code = getattr(translated, "errno", None)
    reason = str(translated)
    for spelling in dict.fromkeys((path.url, path.shown)):
        reason = reason.replace(spelling, "it")
    return _contract_error(
        cls,
        message,
        reason,
        None,
        fs=fs,
        code=code if isinstance(code, int) else errno.EIO,
        cause=exc,
    )


@contextlib.contextmanager
def io_errors(
    action: str,
    path: StoragePath,
    fs: Any = None,
    *,
    message: str | None = None,
) -> Iterator[None]:
    """Run a file-system call; raise its failure as the contract's ``OSError`` type."""
    try:
        yield
    except Exception as exc:
        _raise_translated(exc, action, path, fs, message=message)


def _raise_translated(
    exc: Exception,
    action: str,
    path: StoragePath,
    fs: Any = None,
    *,
    message: str | None = None,
) -> NoReturn:
    """Raise what :func:`translate_io_error` makes of ``exc``: ``exc`` itself unchanged, or
    the contract's error caused by it (what :func:`io_errors` does, for ``try`` blocks)."""
    translated = translate_io_error(exc, action, path, fs, message=message)
    if translated is exc:
        raise exc
    raise translated from exc


class _GuardedReader(io.BufferedIOBase):
    """A binary reader whose I/O failures come out through :func:`translate_io_error`."""

    def __init__(self, inner: BinaryIO, path: StoragePath, fs: Any) -> None:
        super().__init__()
        self._inner = inner
        self._path = path
        self._fs = fs

    def _fail(self, exc: Exception) -> NoReturn:
        """Raise for a failed call: a closed reader, or the contract's ``OSError`` type.

        Each call has a ``try`` rather than :func:`io_errors`: reads are the hot path of a
        restore, and an ``except`` costs nothing until something fails.
        """
        if self._inner.closed:  # Python's ValueError for a closed file, and an OSError
            raise StreamClosedError(f"the reader of {self._path.shown} is closed") from exc
        _raise_translated(exc, "read", self._path, self._fs)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return bool(self._inner.seekable())

    @public_call
    def read(self, size: int | None = -1, /) -> bytes:
        try:
            return self._inner.read(-1 if size is None else size)
        except Exception as exc:
            self._fail(exc)

    @public_call
    def read1(self, size: int = -1, /) -> bytes:
        """At most ``size`` bytes: a plain read, which every file system's reader has (a
        short read is what read1 allows, not what it demands)."""
        try:
            return self._inner.read(size)
        except Exception as exc:
            self._fail(exc)

    @public_call
    def readinto(self, buffer: Any, /) -> int:
        """The reader's own readinto (fsspec's buffered files, Python's local and in-memory
        files all have one)."""
        inner: Any = self._inner  # typing.BinaryIO leaves readinto out
        try:
            return int(inner.readinto(buffer))
        except Exception as exc:
            self._fail(exc)

    @public_call
    def seek(self, offset: int, whence: int = 0, /) -> int:
        """The reader's seek; the new position also where it returns None (paramiko's SFTP
        files do), as ``io`` promises.

        A seek to before the start raises ``ArgumentOutOfRangeError`` (a ``ValueError``, as
        ``io`` raises for a negative position) and leaves the position where it was: paramiko's
        SFTP files accept any position and would read from it later."""
        try:
            before = self._inner.tell()
            position = self._inner.seek(offset, whence)
            landed = int(self._inner.tell() if position is None else position)
            if landed < 0:
                self._inner.seek(before)
        except Exception as exc:
            self._fail(exc)
        if landed < 0:
            raise ArgumentOutOfRangeError(
                f"negative seek position {landed} on the reader of {self._path.shown}"
            )
        return landed

    def tell(self) -> int:
        return int(self._inner.tell())

    def fileno(self) -> int:
        return int(self._inner.fileno())

    @property
    def closed(self) -> bool:
        return bool(self._inner.closed)

    def close(self) -> None:
        if self._inner.closed:
            return
        with io_errors("read", self._path, self._fs):
            self._inner.close()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_inner", "_path", "_fs"):
            raise AttributeError(name)
        return getattr(self._inner, name)

    def __repr__(self) -> str:
        return f"<reader of {self._path.shown}>"


class _SizedReader(_GuardedReader):
    """A :class:`_GuardedReader` of a file that must hold exactly ``size`` bytes.

    It follows the position itself (reads and seeks) and raises ``StateSizeMismatchError``
    instead of returning bytes when a read shows the file to be shorter (the end comes before
    ``size``: an empty read there, a read of everything or a ``read(n)``/``readinto`` that
    returns less) or longer (bytes beyond ``size``: a bounded read that reaches ``size``
    exactly asks for one byte more, which costs nothing where the reader knows the size).
    """

    def __init__(self, inner: BinaryIO, path: StoragePath, fs: Any, size: int) -> None:
        super().__init__(inner, path, fs)
        self._size = size
        self._position = 0

    def read(self, size: int | None = -1, /) -> bytes:
        wanted = -1 if size is None else size
        data = super().read(wanted)
        self._advance(len(data), wanted, whole=True)
        return data

    def read1(self, size: int = -1, /) -> bytes:
        data = super().read1(size)
        self._advance(len(data), size, whole=False)
        return data

    def readinto(self, buffer: Any, /) -> int:
        count = super().readinto(buffer)
        self._advance(count, memoryview(buffer).nbytes, whole=True)
        return count

    def seek(self, offset: int, whence: int = 0, /) -> int:
        self._position = super().seek(offset, whence)
        return self._position

    def _advance(self, count: int, wanted: int, *, whole: bool) -> None:
        """Move past ``count`` bytes read for a request of ``wanted`` (-1: everything);
        ``whole``: the call returns fewer than ``wanted`` only at the end of the file."""
        end = self._position = self._position + count
        if count and end >= self._size and (end > self._size or (wanted >= 0 and self._more())):
            self._mismatch(f"it holds bytes beyond byte {self._size}")
        if end < self._size and wanted != 0:
            short = count < wanted if whole else count == 0
            if wanted < 0 or short:
                self._mismatch(f"it ends at byte {end}")

    def _more(self) -> bool:
        """Whether the file goes on after the state's last byte (a read that reached it
        exactly asks for one byte more: the end of the file reads nothing)."""
        try:
            return bool(self._inner.read(1))
        except Exception as exc:
            self._fail(exc)

    def _mismatch(self, found: str) -> NoReturn:
        raise size_mismatch(self._path, self._size, found)


def size_mismatch(path: StoragePath, size: int, found: str) -> StateSizeMismatchError:
    """The error of a read that found the state file ``path`` not ``size`` bytes long
    (``found`` says how: "it ends at byte 50000")."""
    return StateSizeMismatchError(
        f"The state file {path.shown} does not hold the {size} bytes its handle names: "
        f"{found}. It was truncated, extended or replaced behind the storage's back; its "
        "bytes are not the state that was written."
    )


def guarded_reader(inner: BinaryIO, path: StoragePath, fs: Any, size: int = -1) -> BinaryIO:
    """Wrap a reader so that a failing ``read``/``seek`` raises like :func:`io_errors`; with a
    known ``size`` (not -1) a read that finds the file shorter or longer than ``size`` raises
    ``StateSizeMismatchError`` instead of returning bytes."""
    if size < 0:
        return cast(BinaryIO, _GuardedReader(inner, path, fs))
    return cast(BinaryIO, _SizedReader(inner, path, fs, size))


class _GuardedWriter:
    """A binary writer whose failures come out through :func:`translate_io_error`.

    ``write``, ``flush`` and ``close`` are guarded (on S3 the upload happens at ``close``);
    :func:`unwrap_writer` gives back the file system's own writer for cleanup paths.
    """

    def __init__(self, inner: IO[bytes], path: StoragePath, fs: Any) -> None:
        self._inner = inner
        self._path = path
        self._fs = fs

    def _guard(self) -> contextlib.AbstractContextManager[None]:
        if self._inner.closed:
            raise StreamClosedError(f"the writer of {self._path.shown} is closed")
        return io_errors("write", self._path, self._fs)

    @property
    def inner(self) -> IO[bytes]:
        return self._inner

    @property
    def closed(self) -> bool:
        return bool(self._inner.closed)

    def write(self, data: Any, /) -> int:
        with self._guard():
            written = self._inner.write(data)
        return len(memoryview(data)) if written is None else int(written)

    def flush(self) -> None:
        with self._guard():
            self._inner.flush()

    def fileno(self) -> int:
        return int(self._inner.fileno())

    def close(self) -> None:
        if self._inner.closed:
            return
        with self._guard():
            self._inner.close()

    def __enter__(self) -> _GuardedWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<writer of {self._path.shown}>"


def guarded_writer(inner: IO[bytes], path: StoragePath, fs: Any) -> IO[bytes]:
    """Wrap a writer: a failing ``write``, ``flush`` or ``close`` raises like :func:`io_errors`."""
    return cast(IO[bytes], _GuardedWriter(inner, path, fs))


def unwrap_writer(writer: IO[bytes]) -> IO[bytes]:
    """The file system's own writer behind a :func:`guarded_writer` (else ``writer``)."""
    return writer.inner if isinstance(writer, _GuardedWriter) else writer
