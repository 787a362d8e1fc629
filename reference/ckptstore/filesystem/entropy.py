"""Entropy injection (E1-E7): spreading data files over S3 key prefixes.

A storage configured with ``entropy_key`` (for example ``_entropy_``) whose checkpoint path
contains that key writes each *data file* with the first occurrence of the key replaced by
``entropy_length`` random characters from ``[0-9A-Za-z]`` (E2, E3), so its objects land on
different S3 key prefixes (E5). Directories keep the literal key (L7). The metadata file and
the external pointer have the key removed, with the empty segment collapsed, so pointers stay
predictable (E4, E7).

Only the URL's path component is rewritten: an object store's bucket (its authority) is never
touched. Entropy makes sense only on object stores (and ``memory``, for tests); a directory
file system would just get a new directory per file, so the storage rejects it there.
"""

from __future__ import annotations

import re
import secrets
import string
from dataclasses import dataclass

from ckptstore.errors import ConfigurationError, InvalidArgumentTypeError, MissingArgumentError
from ckptstore.paths import StoragePath, remove_dot_segments
from ckptstore.validation import MAX_ENTROPY_LENGTH, describe

__all__ = ["ENTROPY_ALPHABET", "EntropyInjector", "validate_entropy_options"]

ENTROPY_ALPHABET = string.digits + string.ascii_uppercase + string.ascii_lowercase
# Characters Flink's S3 factory refuses in s3.entropy.key (E2).
_FORBIDDEN = re.compile(r'[~#@*+%{}<>\[\]|"\\]')


def validate_entropy_options(key: str | None, length: int) -> None:
    """Check ``entropy_key``/``entropy_length`` with Flink's messages (E2).

    Beyond Flink: the key must be printable (no control characters or whitespace, at most 255
    characters)
    and the length at most ``MAX_ENTROPY_LENGTH`` (64); a wrong type raises
    ``InvalidArgumentTypeError``.
    """
    if key is None:
        return
    if not isinstance(key, str):
        raise InvalidArgumentTypeError(
            f"Invalid value for s3.entropy.key : expected a string, got {describe(key)}"
        )
    if not key or len(key) > 255 or not key.isprintable() or any(c.isspace() for c in key):
        raise ConfigurationError(f"Invalid value for s3.entropy.key : {key!r}")
    if _FORBIDDEN.search(key) or "/" in key:
        raise ConfigurationError(f"Invalid character in value for s3.entropy.key : {key}")
    if length is None:
        raise MissingArgumentError("s3.entropy.length must not be None; expected an integer")
    if isinstance(length, bool) or not isinstance(length, int):
        raise InvalidArgumentTypeError(
            f"s3.entropy.length must be an integer, got {describe(length)}"
        )
    if length <= 0:
        raise ConfigurationError("s3.entropy.length must configure a value > 0")
    if length > MAX_ENTROPY_LENGTH:
        raise ConfigurationError(
            f"s3.entropy.length must be at most {MAX_ENTROPY_LENGTH}, got {length}"
        )


@dataclass(frozen=True, slots=True)
class EntropyInjector:
    """Rewrites paths for one entropy key (``key=None``: disabled, every call is identity)."""

    key: str | None
    length: int = 4

    def __post_init__(self) -> None:
        validate_entropy_options(self.key, self.length)

    def generate(self) -> str:
        """``length`` random characters from ``[0-9A-Za-z]``."""
        return "".join(secrets.choice(ENTROPY_ALPHABET) for _ in range(self.length))

    def is_active(self, path: StoragePath) -> bool:
        """True when a key is configured and the path's path component contains it (E6)."""
        return self.key is not None and self.key in _split(path)[1]

    def inject(self, path: StoragePath) -> StoragePath:
        """Replace the first occurrence of the key by fresh entropy (data files, E3, E4)."""
        if not self.is_active(path):
            return path
        assert self.key is not None
        authority, rest = _split(path)
        return StoragePath(path.scheme, authority + rest.replace(self.key, self.generate(), 1))

    def remove(self, path: StoragePath) -> StoragePath:
        """Remove the first occurrence of the key and collapse the empty segment (E3, E7)."""
        if not self.is_active(path):
            return path
        assert self.key is not None
        authority, rest = _split(path)
        rest = remove_dot_segments(rest.replace(self.key, "", 1), shown=path.url)
        if authority and rest == "/":
            rest = ""
        return StoragePath(path.scheme, authority + rest)


def _split(path: StoragePath) -> tuple[str, str]:
    """(authority, path component): ``("bucket", "/a/b")`` for object stores, ``("", p)`` else."""
    if not path.has_authority:
        return "", path.path
    bucket, sep, rest = path.path.partition("/")
    return bucket, sep + rest
