"""Storage URLs: parsing, normalisation, joining (Flink's ``Path`` rules, spec section 0).

A location is a :class:`StoragePath`: a canonical *scheme* (``file`` for every local form,
``memory``, ``s3``, ...) plus the path in the form the scheme's fsspec file system expects
(``/abs/dir`` for ``file`` and ``memory``, ``bucket/key`` for object stores). Its ``url`` is
the canonical string used in external pointers and handles: ``file:///abs/dir``,
``memory:///dir``, ``s3://bucket/key``.

Normalisation follows Flink's Path: backslashes become ``/``, runs of ``/`` collapse to one,
a trailing ``/`` is dropped (except at a root). Relative local paths are made absolute
against the working directory (Flink resolves them against the default local file system).
This module does no I/O.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from ckptstore.errors import InvalidArgumentError, MissingArgumentError

__all__ = [
    "LOCAL_SCHEMES",
    "StoragePath",
    "canonical_scheme",
    "is_local_url",
    "normalise_path_text",
    "parse_storage_path",
    "scheme_of",
]

#: Spellings of the local file system; ``local`` is fsspec's alias of ``file``.
LOCAL_SCHEMES = frozenset({"file", "local"})

# A URL scheme per RFC 3986; a single letter is a Windows drive, not a scheme.
_SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+):(.*)$", re.DOTALL)
_MULTI_SLASH_RE = re.compile(r"/{2,}")


def canonical_scheme(scheme: str) -> str:
    """Lower-case the scheme and fold the local aliases into ``file``."""
    lowered = scheme.lower()
    return "file" if lowered in LOCAL_SCHEMES else lowered


def normalise_path_text(text: str) -> str:
    """Flink's Path rules: backslash -> ``/``, collapse ``//``, strip a trailing ``/``."""
    text = text.replace("\\", "/")
    text = _MULTI_SLASH_RE.sub("/", text)
    if len(text) > 1 and text.endswith("/"):
        text = text.rstrip("/") or "/"
    return text


def scheme_of(url: str) -> str:
    """The canonical scheme of a URL or path (``file`` for scheme-less local paths)."""
    match = _SCHEME_RE.match(url)
    return canonical_scheme(match.group(1)) if match else "file"


def is_local_url(url: str) -> bool:
    """True for ``/x``, ``x``, ``file:/x``, ``file:///x`` and ``local://x``."""
    return scheme_of(url) == "file"


@dataclass(frozen=True, slots=True)
class StoragePath:
    """A normalised location: canonical scheme + the fsspec path of that scheme.

    For object stores the first segment of ``path`` is the bucket (the URL's authority);
    for ``file`` and ``memory`` the path is absolute and starts with ``/``.
    """

    scheme: str
    path: str

    @property
    def url(self) -> str:
        """The canonical URL (used for pointers, handles and references)."""
        return f"{self.scheme}://{self.path}"

    @property
    def has_authority(self) -> bool:
        """Object-store paths start with the bucket; local and memory paths with ``/``."""
        return not self.path.startswith("/")

    @property
    def name(self) -> str:
        """The last segment (the file or directory name)."""
        return self.path.rstrip("/").rsplit("/", 1)[-1]

    @property
    def parent(self) -> StoragePath:
        """The containing directory (a root or bucket is its own parent)."""
        head, sep, _ = self.path.rstrip("/").rpartition("/")
        if not sep:
            return self
        if not head:
            return StoragePath(self.scheme, "/")
        return StoragePath(self.scheme, head)

    def child(self, name: str) -> StoragePath:
        """``self / name`` (``name`` may hold several segments; it is normalised)."""
        name = normalise_path_text(name).strip("/")
        if not name:
            return self
        base = self.path.rstrip("/")
        return StoragePath(self.scheme, f"{base}/{name}" if base else f"/{name}")

    def is_parent_of(self, other: StoragePath) -> bool:
        """True when ``other`` lies directly in this directory."""
        return self.scheme == other.scheme and other.parent.path == self.path

    def __str__(self) -> str:
        return self.url


def parse_storage_path(url: str) -> StoragePath:
    """Parse a URL or local path into a normalised :class:`StoragePath`.

    Accepts ``/x``, ``x`` (relative to the working directory), ``file:/x``, ``file:///x``,
    ``local:///x``, ``memory://x``, ``memory:///x``, ``s3://bucket/key`` and any other
    ``scheme://authority/path``. Raises ``MissingArgumentError`` for ``None`` and
    ``InvalidArgumentError`` for an empty string or a URL without a usable path.
    """
    if url is None:
        raise MissingArgumentError("path must not be None")
    if not isinstance(url, str):
        url = os.fspath(url)
        if not isinstance(url, str):
            raise InvalidArgumentError(f"path must be a string, got {type(url).__name__}")
    text = url.strip()
    if not text:
        raise InvalidArgumentError("Can not create a Path from an empty string")
    match = _SCHEME_RE.match(text)
    if match is None:
        return _local(text)
    scheme = canonical_scheme(match.group(1))
    rest = match.group(2).replace("\\", "/")
    if scheme == "file":
        if rest.startswith("//"):
            authority, _, remainder = rest[2:].partition("/")
            if authority not in ("", "localhost"):
                raise InvalidArgumentError(
                    f"Cannot use a remote host in a local file URL: {url!r}"
                )
            rest = "/" + remainder
        return _local(rest)
    if scheme == "memory":
        body = normalise_path_text("/" + rest.lstrip("/"))
        return StoragePath("memory", body)
    if not rest.startswith("//"):
        raise InvalidArgumentError(f"URL {url!r} has no authority (expected {scheme}://...)")
    body = normalise_path_text(rest[2:]).strip("/")
    if not body:
        raise InvalidArgumentError(f"URL {url!r} names no bucket or path")
    return StoragePath(scheme, body)


def _local(text: str) -> StoragePath:
    text = normalise_path_text(text)
    if not text.startswith("/"):
        text = normalise_path_text(os.path.abspath(text).replace("\\", "/"))
    return StoragePath("file", text)
