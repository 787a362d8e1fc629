"""Java's ``DataInputStream``/``DataOutputStream`` encodings over bytes in memory.

``Input`` reads big-endian integers, booleans, byte arrays and modified UTF-8 strings, each
read checked against the bytes left, so a truncated or corrupt file ends in a
``MetadataFormatError`` naming the offset, never in ``struct.error`` or an allocation the
file's counts ask for. ``Output`` writes the same encodings and refuses values their Java type
cannot hold.
"""

from __future__ import annotations

import struct

from flinkmeta.errors import MetadataFormatError

__all__ = ["Input", "Output", "decode_modified_utf8", "encode_modified_utf8"]

_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")
_SHORT = struct.Struct(">H")

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


class Input:
    """A read position in metadata bytes."""

    __slots__ = ("data", "end", "pos")

    def __init__(self, data: bytes, pos: int = 0, end: int | None = None) -> None:
        self.data = data
        self.pos = pos
        self.end = len(data) if end is None else end

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def fail(self, expected: str, found: str = "", at: int | None = None) -> MetadataFormatError:
        return MetadataFormatError(self.pos if at is None else at, expected, found)

    def take(self, count: int, what: str) -> bytes:
        start = self.pos
        stop = start + count
        if stop > self.end:
            raise self.fail(what, f"end of data ({self.remaining} bytes left, {count} needed)")
        self.pos = stop
        return self.data[start:stop]

    def u8(self, what: str) -> int:
        return self.take(1, what)[0]

    def i8(self, what: str) -> int:
        value = self.u8(what)
        return value - 256 if value > 127 else value

    def boolean(self, what: str) -> bool:
        return self.u8(what) != 0

    def i32(self, what: str) -> int:
        value: int = _INT.unpack(self.take(4, what))[0]
        return value

    def i64(self, what: str) -> int:
        value: int = _LONG.unpack(self.take(8, what))[0]
        return value

    def count(self, what: str, min_item_bytes: int) -> int:
        """A non-negative int32 count of items of at least ``min_item_bytes`` each, that the
        bytes left can hold (so no count in the file can make the reader loop or allocate)."""
        at = self.pos
        value = self.i32(f"the number of {what}")
        if value < 0:
            raise self.fail(f"a non-negative number of {what}", str(value), at)
        if value * max(min_item_bytes, 1) > self.remaining:
            raise self.fail(
                f"a number of {what} that the {self.remaining} bytes left can hold", str(value), at
            )
        return value

    def sized_bytes(self, what: str) -> bytes:
        """An int32 length, then that many bytes."""
        return self.take(self.count(f"bytes of {what}", 1), what)

    def utf(self, what: str) -> str:
        """``readUTF``: an unsigned 16-bit length, then modified UTF-8."""
        at = self.pos + 2
        if at > self.end:
            self.take(2, f"the length of {what}")  # raises: the error names what is missing
        length = _SHORT.unpack_from(self.data, self.pos)[0]
        self.pos = at
        raw = self.take(length, what)
        try:
            return decode_modified_utf8(raw)
        except ValueError as exc:
            raise self.fail(f"{what} in modified UTF-8", str(exc), at) from None


class Output:
    """Metadata bytes being written."""

    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def getvalue(self) -> bytes:
        return b"".join(self.parts)

    def raw(self, data: bytes) -> None:
        self.parts.append(bytes(data))

    def u8(self, value: int) -> None:
        self.parts.append(bytes((value & 0xFF,)))

    def boolean(self, value: bool) -> None:
        self.u8(1 if value else 0)

    def i32(self, value: int, what: str) -> None:
        _check_range(value, INT_MIN, INT_MAX, what, "an int32")
        self.parts.append(_INT.pack(value))

    def i64(self, value: int, what: str) -> None:
        _check_range(value, LONG_MIN, LONG_MAX, what, "an int64")
        self.parts.append(_LONG.pack(value))

    def sized_bytes(self, data: bytes, what: str) -> None:
        self.i32(len(data), f"the length of {what}")
        self.raw(data)

    def utf(self, text: str, what: str) -> None:
        if not isinstance(text, str):
            raise MetadataFormatError(-1, f"{what} as a str", type(text).__name__)
        encoded = encode_modified_utf8(text)
        if len(encoded) > 0xFFFF:
            raise MetadataFormatError(
                -1, f"{what} of at most 65535 bytes in modified UTF-8", f"{len(encoded)} bytes"
            )
        self.parts.append(_SHORT.pack(len(encoded)))
        self.parts.append(encoded)


def _check_range(value: int, low: int, high: int, what: str, kind: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise MetadataFormatError(-1, f"{what} as {kind}", repr(value))


def encode_modified_utf8(text: str) -> bytes:
    """Java's modified UTF-8: NUL as two bytes, characters beyond U+FFFF as two surrogates of
    three bytes each."""
    if text.isascii() and "\x00" not in text:
        return text.encode("ascii")  # the common case: one byte per character, as in UTF-8
    out = bytearray()
    for char in text:
        code = ord(char)
        if code > 0xFFFF:
            code -= 0x10000
            for unit in (0xD800 | (code >> 10), 0xDC00 | (code & 0x3FF)):
                out += bytes((0xE0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3F), 0x80 | unit & 0x3F))
        elif 0 < code < 0x80:
            out.append(code)
        elif code < 0x800:
            out += bytes((0xC0 | (code >> 6), 0x80 | (code & 0x3F)))
        else:
            out += bytes((0xE0 | (code >> 12), 0x80 | ((code >> 6) & 0x3F), 0x80 | (code & 0x3F)))
    return bytes(out)


def decode_modified_utf8(raw: bytes) -> str:
    """The inverse of ``encode_modified_utf8``, as strict as Java's ``readUTF`` (which refuses
    four-byte forms and bad continuation bytes); surrogate pairs become one character."""
    if raw.isascii():
        return raw.decode("ascii")  # the common case (paths, names): one character per byte
    units: list[int] = []
    i, n = 0, len(raw)
    while i < n:
        first = raw[i]
        if first < 0x80:
            units.append(first)
            i += 1
        elif first >> 5 == 0b110:
            if i + 1 >= n or raw[i + 1] >> 6 != 0b10:
                raise ValueError(f"a malformed two-byte sequence at {i}")
            units.append(((first & 0x1F) << 6) | (raw[i + 1] & 0x3F))
            i += 2
        elif first >> 4 == 0b1110:
            if i + 2 >= n or raw[i + 1] >> 6 != 0b10 or raw[i + 2] >> 6 != 0b10:
                raise ValueError(f"a malformed three-byte sequence at {i}")
            units.append(((first & 0x0F) << 12) | ((raw[i + 1] & 0x3F) << 6) | (raw[i + 2] & 0x3F))
            i += 3
        else:
            raise ValueError(f"byte 0x{first:02x} at {i} starts no modified UTF-8 sequence")
    return _join_surrogates(units)


def _join_surrogates(units: list[int]) -> str:
    chars: list[str] = []
    i = 0
    while i < len(units):
        unit = units[i]
        if 0xD800 <= unit < 0xDC00 and i + 1 < len(units) and 0xDC00 <= units[i + 1] < 0xE000:
            chars.append(chr(0x10000 + ((unit - 0xD800) << 10) + (units[i + 1] - 0xDC00)))
            i += 2
        else:
            chars.append(chr(unit))
            i += 1
    return "".join(chars)
