"""Random state names (ckptstore.names): the form of a version-4 UUID, unique, fork-safe."""

from __future__ import annotations

import os
import threading
import uuid

import pytest

from ckptstore.api import ByteStreamStateHandle
from ckptstore.names import random_uuid4, unique_name


@pytest.mark.parametrize("make", [random_uuid4, unique_name])
def test_names_are_version_4_uuids_in_canonical_text(make):
    for _ in range(2000):
        text = make()
        parsed = uuid.UUID(text)
        assert str(parsed) == text
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122


@pytest.mark.parametrize("make", [random_uuid4, unique_name])
def test_names_do_not_repeat(make):
    names = {make() for _ in range(100_000)}
    assert len(names) == 100_000


def test_threads_never_share_a_unique_name():
    drawn: list[list[str]] = [[] for _ in range(4)]

    def draw(names: list[str]) -> None:
        names.extend(unique_name() for _ in range(20_000))

    threads = [threading.Thread(target=draw, args=(names,)) for names in drawn]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({name for names in drawn for name in names}) == 80_000


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.parametrize("make", [random_uuid4, unique_name])
def test_a_forked_child_does_not_repeat_its_parents_names(make):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next names, to the parent
        os.close(read)
        os.write(write, "\n".join(make() for _ in range(100)).encode())
        os._exit(0)
    os.close(write)
    parent = {make() for _ in range(100)}
    with os.fdopen(read, "rb") as pipe:
        child = set(pipe.read().decode().split("\n"))
    os.waitpid(pid, 0)
    assert len(child) == 100
    assert not parent & child


def test_byte_stream_handle_of_equals_the_checked_constructor():
    fast = ByteStreamStateHandle.of("name", b"bytes")
    assert fast == ByteStreamStateHandle("name", b"bytes")
    assert (fast.handle_name, fast.data, fast.state_size) == ("name", b"bytes", 5)
