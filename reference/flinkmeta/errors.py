"""The one error of the metadata format: where in the bytes it broke, and what was expected there.

``MetadataFormatError`` is a ``ValueError`` (bad input, as Flink's loader answers it with an
``IOException`` or worse): empty or truncated bytes, a wrong magic number, a version this module
does not read, an unknown handle tag, a count that the remaining bytes cannot hold, malformed
modified UTF-8, trailing bytes. The writer raises it too for a value it cannot encode (a string
over 65535 encoded bytes, a number out of its Java type's range), with ``offset`` -1. A plain
``ValueError`` subclass: this package depends on nothing but the standard library.
"""

from __future__ import annotations

__all__ = ["MetadataFormatError"]


class MetadataFormatError(ValueError):
    """Bytes that are not Flink checkpoint metadata, or a value that cannot be written as such.

    ``offset`` is the byte offset in the metadata where reading failed (-1 when writing),
    ``expected`` what the format requires there (for example ``"a stream state handle tag (0,
    1, 2, 3, 6, 15, 16)"``) and ``found`` what was there, if anything.
    """

    def __init__(self, offset: int, expected: str, found: str = "") -> None:
        where = f"at byte {offset}" if offset >= 0 else "when writing"
        detail = f", found {found}" if found else ""
        super().__init__(f"not Flink checkpoint metadata {where}: expected {expected}{detail}")
        self.offset = offset
        self.expected = expected
        self.found = found
