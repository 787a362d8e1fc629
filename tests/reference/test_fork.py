"""A forked child uses the storage although a thread of its parent held a lock at the fork.

The child of ``os.fork`` has only the forking thread; a lock that another thread of the parent
held stays held in the child forever. Every lock of the registry (``ckptstore.stores.registry``),
of the conditional-write answers (``ckptstore.stores.s3``) and fsspec's lock around its event loop
is made anew in the child, and the child makes its own file-system instances (the parent's
clients, sessions and event loop are not usable there). PySpark's daemon and
multiprocessing's fork start method fork workers so.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import fsspec.asyn
import pytest

from ckptstore.api import CheckpointedStateScope, JobID
from ckptstore.filesystem.storage import FileSystemCheckpointStorage
from ckptstore.paths import parse_storage_path
from ckptstore.stores import memory, registry
from ckptstore.stores import s3 as s3_module
from tests.reference._fsroot import FsRoot
from tests.reference._moto import S3Root

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

#: How long a child may take: a deadlocked child is killed and fails the test.
CHILD_SECONDS = 30.0


def _in_child(work: Callable[[], object]) -> str:
    """Run ``work`` in a forked child; "ok", the child's error, or "deadlocked"."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        code = 1
        try:
            work()
            os.write(write, b"ok")
            code = 0
        except BaseException as exc:
            os.write(write, f"{type(exc).__name__}: {exc}".encode()[:2000])
        finally:
            os._exit(code)
    os.close(write)
    done = threading.Event()
    threading.Thread(target=lambda: (os.waitpid(pid, 0), done.set()), daemon=True).start()
    if not done.wait(CHILD_SECONDS):
        os.kill(pid, 9)
        done.wait(10)
        os.close(read)
        return "deadlocked"
    with os.fdopen(read, "rb") as pipe:
        return pipe.read().decode()


@contextmanager
def held_by_another_thread(lock: Any) -> Iterator[None]:
    """``lock`` held by a thread of this process for the block (as at a fork during I/O)."""
    taken, release = threading.Event(), threading.Event()

    def hold() -> None:
        with lock:
            taken.set()
            release.wait(60)

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    assert taken.wait(10)
    try:
        yield
    finally:
        release.set()
        thread.join(10)


def _round_trip(root: str, storage_options: dict[str, Any] | None = None) -> None:
    """What a forked worker does: an access, a state stream, its handle read back."""
    storage = FileSystemCheckpointStorage(
        root, file_state_size_threshold=0, storage_options=storage_options
    )
    access = storage.create_checkpoint_storage(JobID.generate())
    access.initialize_base_locations_for_checkpoint()
    factory = access.initialize_location_for_checkpoint(1)
    stream = factory.create_checkpoint_state_output_stream(CheckpointedStateScope.EXCLUSIVE)
    stream.write(b"state of the child")
    handle = stream.close_and_get_handle()
    with handle.open_input_stream() as reader:
        assert reader.read() == b"state of the child"


@pytest.mark.parametrize(("module", "lock_name"), [(registry, "_LOCK"), (memory, "MEMORY_LOCK")])
def test_a_child_forked_while_a_registry_lock_is_held_uses_the_storage(
    fsroot: FsRoot, module: Any, lock_name: str
) -> None:
    _round_trip(fsroot.url)
    with held_by_another_thread(getattr(module, lock_name)):
        outcome = _in_child(lambda: _round_trip(fsroot.url))
    assert outcome == "ok"


def test_a_child_forked_while_fsspec_makes_its_loop_gets_a_loop() -> None:
    """fsspec resets its loop in a child but not the lock that guards making one."""
    with held_by_another_thread(fsspec.asyn.get_lock()):
        outcome = _in_child(fsspec.asyn.get_loop)
    assert outcome == "ok"


def test_a_child_forked_during_a_probe_probes_and_publishes(s3: S3Root) -> None:
    """The probe's lock (held during its requests) and the answers' lock are made anew."""
    storage = FileSystemCheckpointStorage(
        s3.sub("checkpoints"), storage_options=s3.storage_options, file_state_size_threshold=0
    )
    access = storage.create_checkpoint_storage(JobID.generate())
    access.initialize_base_locations_for_checkpoint()
    key = next(iter(s3_module._MODES))
    probe_lock = s3_module._MODE_LOCKS.setdefault(key, threading.Lock())

    def publish() -> None:
        location = access.initialize_location_for_checkpoint(7)
        metadata = location.create_metadata_output_stream()
        metadata.write(b"metadata of the child")
        completed = metadata.close_and_finalize_checkpoint()
        with completed.metadata_handle.open_input_stream() as reader:
            assert reader.read() == b"metadata of the child"
        s3_module.probe_conditional_writes(
            registry.filesystem_for(parse_storage_path(s3.url)),
            parse_storage_path(s3.sub("elsewhere")),
        )

    with held_by_another_thread(s3_module._MODES_LOCK), held_by_another_thread(probe_lock):
        outcome = _in_child(publish)
    assert outcome == "ok"


def test_a_child_gets_its_own_file_system_instance(s3: S3Root) -> None:
    """The parent's S3 client (its session, its event loop) is never used in the child."""
    storage = FileSystemCheckpointStorage(
        s3.sub("checkpoints"), storage_options=s3.storage_options, file_state_size_threshold=0
    )
    directory = parse_storage_path(storage.get_checkpoint_path())
    parent_fs = registry.filesystem_for(directory)
    parent_fs.ls(s3.url.removeprefix("s3://").split("/")[0])  # connected

    def child() -> None:
        child_fs = registry.filesystem_for(directory)
        assert child_fs is not parent_fs
        assert child_fs.loop is not parent_fs._loop
        _round_trip(s3.sub("from-child"), s3.storage_options)

    assert _in_child(child) == "ok"


def test_making_a_file_system_does_not_hold_the_registry(fsroot: FsRoot, monkeypatch) -> None:
    """A file system that takes long to make (an SFTP client connects) keeps nobody else
    waiting: another thread's lookup of another store goes on meanwhile."""
    started, finish = threading.Event(), threading.Event()
    original = registry._instantiate

    def slow(scheme: str, options: Any) -> Any:
        if scheme == "s3":
            started.set()
            finish.wait(30)
        return original(scheme, options)

    monkeypatch.setattr(registry, "_instantiate", slow)
    options = {"endpoint_url": "http://127.0.0.1:1", "key": "k", "secret": uuid.uuid4().hex}
    token = registry.register_filesystem("s3", options)  # options of its own: not cached
    slow_thread = threading.Thread(target=lambda: registry.get_filesystem("s3", token), daemon=True)
    slow_thread.start()
    try:
        assert started.wait(10)
        other = threading.Thread(
            target=lambda: registry.filesystem_for(parse_storage_path(fsroot.url)),
            daemon=True,
        )
        other.start()
        other.join(10)
        assert not other.is_alive(), "a lookup waited for another store's file system"
    finally:
        finish.set()
        slow_thread.join(30)
