"""Random names for state files and inline handles: the text of a version-4 UUID.

Flink names every state file and inline handle ``UUID.randomUUID()`` (S11). Python's
``str(uuid.uuid4())`` reads ``os.urandom`` (a system call) and builds a ``UUID`` object on
the way: several microseconds, a large part of the cost of a small inline state. The names
only need to be unique, not secret (they are listed by anyone who can read the store), so
this module formats 122 bits of the ``random`` module's generator, which Python seeds from
``os.urandom`` at start and reseeds in a forked child (two processes never share a
sequence). The text has the form of ``str(uuid.uuid4())``.

Inline handles, the most frequent thing a storage makes, take :func:`unique_name` instead:
the same form, where a random prefix (74 bits, drawn once per process and again in a forked
child) is followed by a 48-bit counter. It costs a third of a random name and is never
repeated within a process; two processes repeat a name only if they drew the same prefix.
"""

from __future__ import annotations

import itertools
import os
from random import getrandbits

__all__ = ["random_uuid4", "unique_name"]

#: The version (4) and variant (RFC 4122) bits: cleared by the mask, then set.
_FIXED_MASK = ~(0xF << 76) & ~(0xC << 60)
_FIXED_BITS = (0x4 << 76) | (0x8 << 60)


def random_uuid4() -> str:
    """A fresh random UUID (version 4, RFC 4122 variant) as 36 characters of lowercase text."""
    # bytes.hex formats 16 bytes faster than an int's format spec does (a name per state)
    text = ((getrandbits(128) & _FIXED_MASK) | _FIXED_BITS).to_bytes(16).hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


_prefix = ""
_counter = itertools.count()


def _draw_prefix() -> None:
    """A fresh random prefix and counter: at import and in every forked child."""
    global _prefix, _counter
    _prefix = random_uuid4()[:24]
    # hex() of 2**48 + n is '0x1' and n's 12 digits: cheaper than a format spec
    _counter = itertools.count(1 << 48)


def unique_name() -> str:
    """A name in the form of a version-4 UUID, unique within the process (a counter, 2**48
    names) and across processes (a random prefix). ``next`` on the counter is atomic under
    the GIL, so threads never share a name."""
    return _prefix + hex(next(_counter))[3:]


_draw_prefix()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_draw_prefix)
