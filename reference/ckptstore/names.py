"""Random names for state files and inline handles: the text of a version-4 UUID.

Flink names every state file and inline handle ``UUID.randomUUID()`` (S11). Python's
``str(uuid.uuid4())`` reads ``os.urandom`` (a system call) and builds a ``UUID`` object on
the way: several microseconds, a large part of the cost of a small inline state. The names
only need to be unique, not secret (they are listed by anyone who can read the store), so
this module formats 122 bits of the ``random`` module's generator, which Python seeds from
``os.urandom`` at start and reseeds in a forked child (two processes never share a
sequence). The text has the form of ``str(uuid.uuid4())``.
"""

from __future__ import annotations

from random import getrandbits

__all__ = ["random_uuid4"]

#: The version (4) and variant (RFC 4122) bits: cleared by the mask, then set.
_FIXED_MASK = ~(0xF << 76) & ~(0xC << 60)
_FIXED_BITS = (0x4 << 76) | (0x8 << 60)


def random_uuid4() -> str:
    """A fresh random UUID (version 4, RFC 4122 variant) as 36 characters of lowercase text."""
    bits = (getrandbits(128) & _FIXED_MASK) | _FIXED_BITS
    text = f"{bits:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"
