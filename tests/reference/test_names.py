"""Random state names (ckptstore.names): the form of a version-4 UUID, unique, fork-safe."""

from __future__ import annotations

import os
import uuid

import pytest

from ckptstore.api import ByteStreamStateHandle
from ckptstore.names import random_uuid4


def test_names_are_version_4_uuids_in_canonical_text():
    for _ in range(2000):
        text = random_uuid4()
        parsed = uuid.UUID(text)
        assert str(parsed) == text
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122


def test_names_do_not_repeat():
    names = {random_uuid4() for _ in range(100_000)}
    assert len(names) == 100_000


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_does_not_repeat_its_parents_names():
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next names, to the parent
        os.close(read)
        os.write(write, "\n".join(random_uuid4() for _ in range(100)).encode())
        os._exit(0)
    os.close(write)
    parent = {random_uuid4() for _ in range(100)}
    with os.fdopen(read, "rb") as pipe:
        child = set(pipe.read().decode().split("\n"))
    os.waitpid(pid, 0)
    assert len(child) == 100
    assert not parent & child


def test_byte_stream_handle_of_equals_the_checked_constructor():
    fast = ByteStreamStateHandle.of("name", b"bytes")
    assert fast == ByteStreamStateHandle("name", b"bytes")
    assert (fast.handle_name, fast.data, fast.state_size) == ("name", b"bytes", 5)
