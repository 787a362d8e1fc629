"""The one place that turns file-system failures into the contract's ``OSError`` subclasses.

fsspec file systems fail in many ways: built-in ``OSError`` subclasses (``FileNotFoundError``
from s3fs for a missing key, ``PermissionError`` for a 403), but also the client library's own
exceptions (botocore's ``EndpointConnectionError`` is no ``OSError``), aiohttp errors and
timeouts. The contract promises ``OSError`` for any I/O problem and ``FileNotFoundError`` for
something that does not exist, so every storage operation that touches a file system runs in
:func:`io_errors`, which raises:

* ``CheckpointNotFoundError`` (a ``FileNotFoundError``) for a missing file or object,
* ``CheckpointIOError`` (an ``OSError``) for every other failure of the file system or its
  client library (unreachable endpoint, timeout, access denied, server error),

with a message that names the operation, the path and the endpoint (without userinfo, query
or any secret; known secret values are blanked out of the client's own text too). The
original exception is the ``__cause__``. Errors the storage raises on purpose
(``CheckpointStorageError``) pass unchanged, and so do exceptions that are not I/O at all
(a ``TypeError`` from a bug stays a ``TypeError``).

Readers returned by :func:`guarded_reader` translate the same way on ``read()``: on S3 the
GET happens at the first read, not at open.

This module does no I/O and imports only the standard library and ``ckptstore``'s own
``errors`` and ``paths``; file systems are inspected by duck typing.
"""

from __future__ import annotations

import contextlib
import errno
import io
import re
from collections.abc import Iterator, Mapping
from typing import Any, BinaryIO, cast
from urllib.parse import urlsplit

from ckptstore.errors import CheckpointIOError, CheckpointNotFoundError, CheckpointStorageError
from ckptstore.paths import StoragePath

__all__ = [
    "SECRET_MARKERS",
    "endpoint_label",
    "guarded_reader",
    "io_errors",
    "is_unreachable",
    "public_endpoint",
    "translate_io_error",
]

#: Option names whose values are treated as secrets (``redact_options``, error messages).
SECRET_MARKERS = ("key", "secret", "token", "password", "passwd", "session", "credential",
                  "auth", "sas", "signature", "private")

# Exceptions of these packages are I/O failures of a file system or its client.
_IO_MODULES = ("botocore", "aiobotocore", "aiohttp", "urllib3", "requests", "s3fs", "fsspec",
               "gcsfs", "adlfs", "azure", "google", "ocifs", "ossfs")
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)[^/@\s\"']*@")
# The query of any URL in a client's message (presigned or odd endpoints carry signatures).
_URL_QUERY = re.compile(r"(?P<url>[A-Za-z][A-Za-z0-9+.\-]*://[^\s\"'`?]*)\?[^\s\"'`]*")
_MAX_REASON = 400
# Exception class names (any module) of a connection that could not be established.
_UNREACHABLE = frozenset({"EndpointConnectionError", "ConnectTimeoutError",
                          "ClientConnectorError", "ProxyConnectionError"})


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


def endpoint_label(fs: Any, scheme: str) -> str:
    """Where ``fs`` sends its requests, for messages (never userinfo or credentials)."""
    if scheme == "file":
        return "local file system"
    if scheme == "memory":
        return "memory file system"
    options = getattr(fs, "storage_options", None)
    options = options if isinstance(options, Mapping) else {}
    client_kwargs = getattr(fs, "client_kwargs", None) or options.get("client_kwargs") or {}
    endpoint = (
        getattr(fs, "endpoint_url", None)
        or options.get("endpoint_url")
        or (client_kwargs.get("endpoint_url") if isinstance(client_kwargs, Mapping) else None)
        or options.get("endpoint")
        or options.get("account_url")
    )
    shown = public_endpoint(endpoint)
    if shown is not None:
        return shown
    region = client_kwargs.get("region_name") if isinstance(client_kwargs, Mapping) else None
    where = f", region {region}" if region else ""
    return f"the default {scheme} endpoint{where}"


def _secret_values(fs: Any) -> list[str]:
    """Values of secret-looking options and credential attributes of ``fs``."""
    found: list[str] = []

    def collect(options: Mapping[str, Any]) -> None:
        for name, value in options.items():
            if isinstance(value, Mapping):
                collect(value)
            elif isinstance(value, str) and any(m in str(name).lower() for m in SECRET_MARKERS):
                found.append(value)

    options = getattr(fs, "storage_options", None)
    if isinstance(options, Mapping):
        collect(options)
    for attribute in ("key", "secret", "token", "password"):
        value = getattr(fs, attribute, None)
        if isinstance(value, str):
            found.append(value)
    return [v for v in found if len(v) >= 3]


def _scrub(text: str, secrets: list[str]) -> str:
    text = _USERINFO.sub(r"\g<scheme>", text)
    text = _URL_QUERY.sub(r"\g<url>", text)
    for secret in sorted(set(secrets), key=len, reverse=True):
        text = text.replace(secret, "***")
    if len(text) > _MAX_REASON:
        text = text[:_MAX_REASON] + "..."
    return text


def _is_io_failure(exc: BaseException) -> bool:
    if isinstance(exc, OSError):  # includes TimeoutError, ConnectionError, asyncio timeouts
        return True
    return any(
        (getattr(cls, "__module__", "") or "").split(".")[0] in _IO_MODULES
        for cls in type(exc).__mro__[:-1]
    )


def is_unreachable(exc: BaseException) -> bool:
    """True when ``exc`` says the request never reached the server (connect failed)."""
    return isinstance(exc, ConnectionRefusedError) or any(
        cls.__name__ in _UNREACHABLE for cls in type(exc).__mro__
    )


def translate_io_error(
    exc: BaseException,
    action: str,
    path: StoragePath,
    fs: Any = None,
    *,
    any_exception: bool = False,
) -> BaseException:
    """The exception to raise instead of ``exc`` (``exc`` itself when it is no I/O failure).

    ``action`` is a verb phrase ("read", "delete", "resolve the checkpoint pointer"), the
    message reads ``Could not <action> <url> (endpoint <endpoint>): <reason>``. With
    ``any_exception`` every ``Exception`` counts as an I/O failure (for callers that already
    know the file system failed, whatever it raised).
    """
    if isinstance(exc, CheckpointStorageError):
        return exc
    if not (_is_io_failure(exc) or (any_exception and isinstance(exc, Exception))):
        return exc
    endpoint = endpoint_label(fs, path.scheme)
    if isinstance(exc, FileNotFoundError):
        reason = "no such file or object"
        cls: type[CheckpointIOError] = CheckpointNotFoundError
        code = errno.ENOENT
    else:
        reason = f"{type(exc).__name__}: {_scrub(str(exc), _secret_values(fs))}"
        cls = CheckpointIOError
        code = exc.errno if isinstance(exc, OSError) and exc.errno else errno.EIO
    error = cls(f"Could not {action} {path.url} (endpoint {endpoint}): {reason}")
    error.errno = code  # str(error) stays the message (no strerror/filename set)
    error.__cause__ = exc
    return error


@contextlib.contextmanager
def io_errors(action: str, path: StoragePath, fs: Any = None) -> Iterator[None]:
    """Run a file-system operation; raise its failure as the contract's ``OSError`` type."""
    try:
        yield
    except Exception as exc:
        translated = translate_io_error(exc, action, path, fs)
        if translated is exc:
            raise
        raise translated from exc


class _GuardedReader(io.BufferedIOBase):
    """A binary reader whose I/O failures come out through :func:`translate_io_error`."""

    def __init__(self, inner: BinaryIO, path: StoragePath, fs: Any) -> None:
        super().__init__()
        self._inner = inner
        self._path = path
        self._fs = fs

    def _guard(self) -> contextlib.AbstractContextManager[None]:
        return io_errors("read", self._path, self._fs)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return bool(self._inner.seekable())

    def read(self, size: int | None = -1, /) -> bytes:
        with self._guard():
            return self._inner.read(-1 if size is None else size)

    def read1(self, size: int = -1, /) -> bytes:
        with self._guard():
            read1 = getattr(self._inner, "read1", None)
            return bytes(read1(size) if callable(read1) else self._inner.read(size))

    def readinto(self, buffer: Any, /) -> int:
        with self._guard():
            readinto = getattr(self._inner, "readinto", None)
            if callable(readinto):
                return int(readinto(buffer))
            view = memoryview(buffer).cast("B")
            data = self._inner.read(len(view))
            view[: len(data)] = data
            return len(data)

    def seek(self, offset: int, whence: int = 0, /) -> int:
        with self._guard():
            return int(self._inner.seek(offset, whence))

    def tell(self) -> int:
        return int(self._inner.tell())

    def fileno(self) -> int:
        return int(self._inner.fileno())

    @property
    def closed(self) -> bool:
        return bool(self._inner.closed)

    def close(self) -> None:
        with self._guard():
            self._inner.close()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_inner", "_path", "_fs"):
            raise AttributeError(name)
        return getattr(self._inner, name)

    def __repr__(self) -> str:
        return f"<reader of {self._path.url}>"


def guarded_reader(inner: BinaryIO, path: StoragePath, fs: Any) -> BinaryIO:
    """Wrap a reader so that a failing ``read``/``seek`` raises like :func:`io_errors`."""
    return cast(BinaryIO, _GuardedReader(inner, path, fs))
