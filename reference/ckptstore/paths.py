"""Storage URLs: parsing, normalisation, joining (Flink's ``Path`` rules, spec section 0).

A location is a :class:`StoragePath`: a canonical *scheme* (``file`` for every local form,
``memory``, ``s3``, ...) plus its path: ``/abs/dir`` for ``file`` and ``memory``,
``bucket/key`` for object stores, ``host[:port]/abs/dir`` for remote file systems whose
authority is a host (:data:`HOST_SCHEMES`: SFTP, HDFS...). Its ``url`` is the canonical string
used in external pointers and handles: ``file:///abs/dir``, ``memory:///dir``,
``s3://bucket/key``, ``sftp://host:22/abs/dir``; its ``fs_path`` what the scheme's fsspec file
system takes (the path, without the host of a host authority).

Normalisation follows Flink's Path: backslashes become ``/``, runs of ``/`` collapse to one,
a trailing ``/`` is dropped (except at a root), and ``.`` and ``..`` segments are resolved
(Flink's Path ends in ``java.net.URI.normalize()``): ``/ckpt/job/chk-1/../chk-1`` is
``/ckpt/job/chk-1``. Where Java would keep a ``..`` that climbs above the root (``/../x``)
or, on an object store, above the bucket, the reference refuses the path
(``InvalidPathError``): it can only be a mistake or an attack. Relative local paths are made
absolute against the working directory (Flink resolves them against the default local file
system).

Before any of that, the text passes ``ckptstore.validation.require_url_text`` (a string, no
control characters, UTF-8, at most ``MAX_URL_LENGTH`` characters), and an S3 bucket must be
a name S3 can have (``[A-Za-z0-9._-]``, 1-255 characters: botocore's own rule, which would
otherwise fail later with a ``ParamValidationError``). After it, the path may hold none of
:data:`CLIENT_SYNTAX`, what the file systems' clients read as something other than characters
of a name: fsspec expands ``*``, ``?`` and ``[`` as glob patterns in ``rm``, ``copy`` and
``expand_path`` (a directory ``/a/*`` deletes every sibling), s3fs cuts a key at
``?versionId=`` (``s3://b/victim?versionId=/chk-5`` is the key ``victim``: each state file
and each deletion below it would land on the whole of ``victim/``), and fsspec chains URLs
at ``::``. Such a path is an ``InvalidPathError`` before any request (Flink's Path keeps
these characters as part of the name, and its file systems neither glob nor cut keys; through
fsspec's clients the reference cannot, so it refuses them). This module does no I/O.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from ckptstore.errors import InvalidArgumentError, InvalidPathError, MissingArgumentError
from ckptstore.redaction import redact_text
from ckptstore.validation import require_url_text

__all__ = [
    "CLIENT_SYNTAX",
    "HOST_SCHEMES",
    "LOCAL_SCHEMES",
    "S3_SCHEMES",
    "StoragePath",
    "canonical_scheme",
    "parse_storage_path",
    "remove_dot_segments",
]

#: Spellings of the local file system; ``local`` is fsspec's alias of ``file``.
LOCAL_SCHEMES = frozenset({"file", "local"})
#: Spellings of S3 (``s3n`` is Hadoop's old native S3 file system: no fsspec file system
#: serves it, so the reference accepts it nowhere; see ``ckptstore.stores.registry``).
S3_SCHEMES = frozenset({"s3", "s3a"})
#: Remote file systems whose URL authority is a host (``sftp://host:port/dir``): their fsspec
#: file systems take the URL's path alone (``/dir``) and reach the host their options name.
HOST_SCHEMES = frozenset({"sftp", "ssh", "ftp", "hdfs", "webhdfs", "smb"})

#: Character sequences a file system's client reads as syntax, not as part of a name (see the
#: module docstring); ``?`` covers s3fs's ``?versionId=``.
CLIENT_SYNTAX = ("*", "?", "[", "::")

# A URL scheme per RFC 3986; a single letter is a Windows drive, not a scheme.
_SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+):(.*)$", re.DOTALL)
# botocore's rule for bucket names (access-point ARNs aside)
_S3_BUCKET_RE = re.compile(r"^[A-Za-z0-9._\-]{1,255}$")


def canonical_scheme(scheme: str) -> str:
    """Lower-case the scheme and fold the local aliases into ``file``."""
    lowered = scheme.lower()
    return "file" if lowered in LOCAL_SCHEMES else lowered


def remove_dot_segments(path: str, *, shown: str) -> str:
    """Normalise a ``/``-separated path as Flink's Path does (its URI is normalised, RFC 3986).

    Empty and ``.`` segments go (runs of ``/`` collapse, a trailing ``/`` is dropped), and a
    ``..`` removes the segment before it. ``path`` is absolute (``/a/b``) or starts with an
    authority (``bucket/a``, the first segment is kept and never climbed over). A ``..`` that
    would climb above the root or the authority raises ``InvalidPathError``, naming ``shown``
    (the text the caller was given) with its credentials removed. Redaction happens only then:
    parsing is on every handle's path, and a redaction costs more than the parse.
    """
    head, *segments = path.split("/")  # head: "" before an absolute path's '/', or the authority
    if head in (".", ".."):
        raise InvalidPathError(f"{redact_text(shown)!r} has no bucket or authority")
    kept: list[str] = []
    for segment in segments:
        if segment == "..":
            if not kept:
                raise InvalidPathError(
                    f"{redact_text(shown)!r} climbs above its {'bucket' if head else 'root'} "
                    "with '..'"
                )
            kept.pop()
        elif segment not in ("", "."):
            kept.append(segment)
    return "/".join([head, *kept]) or "/"


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
    def shown(self) -> str:
        """The URL as it may be shown: credentials removed (``ckptstore.redaction``)."""
        return redact_text(self.url, limit=None)

    @property
    def fs_path(self) -> str:
        """The path the scheme's fsspec file system takes: ``path``, without the host of a
        :data:`HOST_SCHEMES` URL (``127.0.0.1:22/dir`` -> ``/dir``)."""
        if self.scheme in HOST_SCHEMES and self.has_authority:
            return "/" + self.path.partition("/")[2]
        return self.path

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
        """``self / name``, joined as it is: ``name`` is one or more segments the reference
        made (a job id, ``chk-<n>``, a UUID, ``_metadata``) or a file system listed."""
        base = "" if self.path == "/" else self.path
        return StoragePath(self.scheme, f"{base}/{name}")

    def __str__(self) -> str:
        return self.url

    def __repr__(self) -> str:
        return f"<StoragePath {self.shown}>"


def parse_storage_path(url: str | StoragePath | os.PathLike[str]) -> StoragePath:
    """Parse a URL or local path into a normalised :class:`StoragePath`.

    Accepts ``/x``, ``x`` (relative to the working directory), ``file:/x``, ``file:///x``
    (a file URL with a host, even ``localhost``, is refused, as Flink does), ``local:///x``,
    ``memory://x``, ``memory:///x``, ``s3://bucket/key`` and any other
    ``scheme://authority/path``. Raises ``MissingArgumentError`` for ``None``,
    ``InvalidArgumentTypeError`` for a non-string, ``InvalidPathError`` for text that cannot
    name a location safely (see the module docstring) and ``InvalidArgumentError`` for an
    empty string or a URL without a usable path. Messages never show a credential.
    """
    if url is None:
        raise MissingArgumentError("path must not be None")
    if isinstance(url, StoragePath):
        return url
    text = require_url_text(url, "path").strip()
    if not text:
        raise InvalidArgumentError("Can not create a Path from an empty string")
    path = _parse(text)
    _require_no_client_syntax(path, shown=text)
    return path


def _require_no_client_syntax(path: StoragePath, *, shown: str) -> None:
    """Refuse a path holding :data:`CLIENT_SYNTAX` (the host of an SFTP URL aside: an IPv6
    literal is ``[::1]``)."""
    name = path.fs_path if path.scheme in HOST_SCHEMES else path.path
    found = [syntax for syntax in CLIENT_SYNTAX if syntax in name]
    if found:
        raise InvalidPathError(
            f"URL {redact_text(shown)!r} holds {', '.join(repr(s) for s in found)}: the file "
            "system's client would read it as a glob pattern, a version id ('?versionId=') or "
            "a chained URL ('::'), so requests and deletions would reach other paths; "
            f"paths with {', '.join(repr(s) for s in CLIENT_SYNTAX)} are refused"
        )


def _parse(text: str) -> StoragePath:
    """The normalised path of a non-empty URL or local path (``parse_storage_path``)."""
    match = _SCHEME_RE.match(text)
    if match is None:
        return _local(text, shown=text)
    scheme = canonical_scheme(match.group(1))
    rest = match.group(2)
    if not rest:
        raise InvalidArgumentError(f"URL {redact_text(text)!r} names no path")
    if scheme == "file":
        if rest.startswith("//"):
            authority, _, remainder = rest[2:].partition("/")
            if authority:
                raise InvalidArgumentError(
                    f"Found local file path with authority {redact_text(authority)!r} in "
                    f"{redact_text(text)!r} (file:///path, file:/path or /path name a local file)"
                )
            rest = "/" + remainder
        return _local(rest, shown=text)
    if scheme == "memory":
        body = remove_dot_segments("/" + rest.replace("\\", "/"), shown=text)
        return StoragePath("memory", body)
    if not rest.startswith("//"):
        raise InvalidArgumentError(
            f"URL {redact_text(text)!r} has no authority (expected {scheme}://...)"
        )
    body = rest[2:].replace("\\", "/").strip("/")
    if not body:
        raise InvalidArgumentError(f"URL {redact_text(text)!r} names no bucket or path")
    body = remove_dot_segments(body, shown=text)
    if scheme in S3_SCHEMES or scheme == "s3n":
        bucket = body.split("/", 1)[0]
        if not _S3_BUCKET_RE.match(bucket):
            raise InvalidPathError(
                f"URL {redact_text(text)!r} names the bucket {redact_text(bucket)!r}, which is no "
                "valid S3 bucket name (letters, digits, '.', '-' and '_', 1 to 255 characters)"
            )
    return StoragePath(scheme, body)


def _local(text: str, *, shown: str) -> StoragePath:
    text = text.replace("\\", "/")
    if not text.startswith("/"):
        text = f"{os.getcwd()}/{text}"
    return StoragePath("file", remove_dot_segments(text, shown=shown))
