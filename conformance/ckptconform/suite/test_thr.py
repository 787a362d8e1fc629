"""THR: thread safety (seed 000/003: "Multiple threads may be creating streams concurrently").

Threads start together behind a barrier so that stream creation really overlaps; every worker
writes bytes that only it writes, so a mix-up shows as wrong bytes. THR-4 forks processes
while threads of the test process do I/O, as PySpark's daemon and multiprocessing's fork
start method fork workers: a child runs only its own work and leaves with ``os._exit``.
"""

from __future__ import annotations

import contextlib
import functools
import os
import pickle
import signal
import threading
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ckptconform.suite._driver import (
    EXCLUSIVE,
    SHARED,
    JobDriver,
    fail_message,
    file_options,
    file_path,
    files_below,
    payload,
    read_handle,
    require,
    write_state,
)
from ckptconform.suite._strategies import capped, thread_counts

#: How long the threads of one THR-1 or THR-2 run may take together: a storage that
#: deadlocks under concurrency fails its clause instead of hanging the suite.
THREADS_SECONDS = 120.0


def _run_all(n: int, work, clause: str, sandbox, **inputs) -> list:
    """``work(i)`` on ``n`` daemon threads that start together; their results in order, or
    the first failure by thread index. Threads still running after :data:`THREADS_SECONDS`
    fail ``clause`` and are abandoned (daemons: they cannot keep the run from ending)."""
    barrier = threading.Barrier(n)
    results: list = [None] * n
    failures: dict[int, BaseException] = {}

    def run(i: int) -> None:
        try:
            barrier.wait(timeout=60)
            results[i] = work(i)
        except BaseException as exc:  # handed to the test's thread below
            failures[i] = exc

    threads = [
        threading.Thread(target=run, args=(i,), name=f"ckptconform-{clause}-{i}", daemon=True)
        for i in range(n)
    ]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + THREADS_SECONDS
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    stuck = [thread.name for thread in threads if thread.is_alive()]
    if stuck:  # the message lists the sandbox: I/O that only a failure needs
        msg = fail_message(clause, f"{n} threads at once", sandbox, **inputs)
        msg += f"\n{len(stuck)} of {n} threads still running after {THREADS_SECONDS:g} s "
        msg += f"(a deadlock?): {', '.join(stuck)}"
        require(False, clause, msg)
    if failures:
        raise failures[min(failures)]
    return results


@pytest.mark.clause("THR-1")
@capped(8)
@given(
    threads=thread_counts,
    streams=st.integers(min_value=1, max_value=4),
    size=st.sampled_from([1, 300, 5000, 40_000]),
)
def test_concurrent_streams_keep_their_bytes(sandbox, target, threads, streams, size):
    """THR-1: concurrent streams on one storage, access and factory read back their own bytes
    and share no file."""
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    location = drv.location(1)
    shared_factory = drv.worker(1, location.location_reference)

    def work(i: int):
        out = []
        for j in range(streams):
            # alternate: the shared factory, a factory resolved now, the task-owned stream
            blob = payload(size + i, seed=i * 100 + j)
            kind = (i + j) % 3
            if kind == 0:
                handle = write_state(shared_factory, blob, EXCLUSIVE if j % 2 else SHARED)
            elif kind == 1:
                factory = drv.access.resolve_checkpoint_storage_location(
                    1, location.location_reference
                )
                handle = write_state(factory, blob, SHARED)
            else:
                stream = drv.access.create_task_owned_state_stream()
                stream.write(blob)
                handle = stream.close_and_get_handle()
            out.append((handle, blob))
        return out

    inputs = {"threads": threads, "streams": streams, "size": size}
    results = [
        pair for chunk in _run_all(threads, work, "THR-1", sandbox, **inputs) for pair in chunk
    ]
    for handle, blob in results:
        msg = fail_message(
            "THR-1", "concurrent write + read back", sandbox, handle=handle, **inputs
        )
        assert handle is not None, msg
        assert read_handle(handle) == blob, msg
    paths = [file_path(h) for h, _ in results if file_path(h) is not None]
    assert len(paths) == len(set(paths)), fail_message(
        "THR-1", "two streams share a file", sandbox, paths=sorted(paths), **inputs
    )
    if "file-layout" in target.capabilities:
        on_backend = files_below(sandbox, drv.job_dir)
        assert len(on_backend) == len(paths), fail_message(
            "THR-1",
            "files on the backend vs file handles",
            sandbox,
            handles=len(paths),
            files=len(on_backend),
            **inputs,
        )


@pytest.mark.clause("THR-2")
@capped(5)
@given(threads=thread_counts)
def test_concurrent_coordinator_and_worker_calls(sandbox, target, threads):
    """THR-2: create_checkpoint_storage, locations, finalization and resolve_checkpoint called
    from many threads at once behave as if called one at a time."""
    storage = sandbox.make_storage(**file_options(target))

    def work(i: int):
        drv = JobDriver(sandbox, storage=storage)
        drv.init_base()
        completed, written = drv.checkpoint(
            i,
            exclusive=[payload(3000, seed=i)],
            shared=[payload(20, seed=i)],
            metadata=b"thread-%d" % i,
        )
        resolved = storage.resolve_checkpoint(completed.external_pointer)
        return drv, completed, resolved, written

    for i, (_, completed, resolved, written) in enumerate(
        _run_all(threads, work, "THR-2", sandbox, threads=threads)
    ):
        msg = fail_message(
            "THR-2",
            "concurrent checkpoint + resolve",
            sandbox,
            thread=i,
            threads=threads,
            pointer=completed.external_pointer,
        )
        assert read_handle(resolved.metadata_handle) == b"thread-%d" % i, msg
        for handle, blob in written:
            assert read_handle(resolved.resolve_handle(handle)) == blob, msg

    # one access, distinct checkpoint ids, concurrently
    drv = JobDriver(sandbox, storage=storage)
    drv.init_base()
    completed = _run_all(
        threads,
        lambda i: drv.checkpoint(100 + i, metadata=b"id-%d" % i)[0],
        "THR-2",
        sandbox,
        threads=threads,
    )
    pointers = [c.external_pointer for c in completed]
    assert len(set(pointers)) == threads, fail_message(
        "THR-2", "distinct pointers", sandbox, pointers=pointers
    )
    for i, pointer in enumerate(pointers):
        got = read_handle(storage.resolve_checkpoint(pointer).metadata_handle)
        assert got == b"id-%d" % i, fail_message("THR-2", "resolve", sandbox, pointer=pointer)


@pytest.mark.clause("THR-3")
@pytest.mark.parametrize("scope", [EXCLUSIVE, SHARED])
def test_close_from_another_thread(sandbox, target, scope):
    """THR-3: close() from another thread during writes ends the stream and leaves no file."""
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    factory = drv.worker(1, drv.location(1).location_reference)
    before = files_below(sandbox, sandbox.root)
    stream = factory.create_checkpoint_state_output_stream(scope)
    started, outcome = threading.Event(), {}

    def writer():
        piece = payload(4096)
        deadline = time.monotonic() + 20
        try:
            while time.monotonic() < deadline:
                stream.write(piece)
                started.set()
            outcome["result"] = "no error within 20 s"
        except (OSError, ValueError) as exc:
            outcome["result"] = exc
        finally:
            started.set()

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    assert started.wait(30)
    closer = threading.Thread(target=stream.close, daemon=True)
    closer.start()
    closer.join(30)
    assert not closer.is_alive(), fail_message(
        "THR-3", "close() did not return within 30 s", scope=scope
    )
    thread.join(30)
    msg = fail_message(
        "THR-3",
        "close() while another thread writes",
        sandbox,
        scope=scope,
        writer=outcome.get("result"),
    )
    assert stream.closed, msg
    assert isinstance(outcome.get("result"), OSError | ValueError), msg
    assert files_below(sandbox, sandbox.root) == before, msg + "\nthe stream's file remains"


#: THR-4: children forked while threads of the test process write and read state, and how
#: long each may take: a child that deadlocks on a lock a parent thread held at the fork
#: fails the clause instead of hanging the run (it is killed).
FORKED_CHILDREN = 6
CHILD_SECONDS = 60.0
#: Threads of the test process that keep writing and reading state while it forks.
LOAD_THREADS = 4


def _load(work, stop: threading.Event, errors: list[BaseException]) -> None:
    """``work(n)`` for n = 1, 2, ... until ``stop``, each on a new thread (clients bound to a
    thread then connect anew): threads that hold the storage's I/O, and whatever the storage
    locks for it, at the moment of a fork."""
    n = 0
    while not stop.is_set() and not errors:
        n += 1
        step = threading.Thread(target=_step, args=(work, n, errors), daemon=True)
        step.start()
        step.join()


def _step(work, n: int, errors: list[BaseException]) -> None:
    try:
        work(n)
    except BaseException as exc:  # reported by the test's thread
        errors.append(exc)


def _in_child(work, report_fd: int) -> None:
    """Run ``work`` in a forked child and leave with ``os._exit``: 0 on success, else 1 after
    writing what went wrong to ``report_fd`` (nothing of the test process runs in the child:
    no pytest, no atexit)."""
    code = 1
    try:
        work()
        code = 0
    except BaseException as exc:
        with contextlib.suppress(BaseException):
            os.write(report_fd, f"{type(exc).__name__}: {exc}"[:2000].encode("utf-8", "replace"))
    finally:
        os._exit(code)


def _wait_children(children: dict[int, int], deadline: float) -> dict[int, str]:
    """Wait for every child until ``deadline``; kill the ones still running. The outcome of
    each child: "ok", "exit <code>: <its report>" or "still running ...: killed"."""
    outcomes: dict[int, str] = {}
    while len(outcomes) < len(children) and time.monotonic() < deadline:
        for pid in children:
            if pid not in outcomes:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    outcomes[pid] = _exit_outcome(status, children[pid])
        time.sleep(0.05)
    for pid in children:
        if pid not in outcomes:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            outcomes[pid] = f"still running after {CHILD_SECONDS:g} s: killed (a deadlock?)"
    for read_fd in children.values():
        os.close(read_fd)
    return outcomes


def _exit_outcome(status: int, read_fd: int) -> str:
    code = os.waitstatus_to_exitcode(status)
    if code == 0:
        return "ok"
    report = os.read(read_fd, 4000).decode("utf-8", "replace")
    return f"exit {code}: {report or '(no report)'}"


@pytest.mark.clause("THR-4")
@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork on this platform")
def test_a_process_forked_during_io_uses_the_storage(sandbox, target):
    """THR-4: a process forked while threads of its parent write and read state uses the
    storage, its pickled copy and a handle of the parent: it creates an access, writes a stream
    and reads it and the handle back, within 60 seconds."""
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    reference = drv.location(1).location_reference
    factory = drv.worker(1, reference)
    before = payload(5000, seed=4)
    parent_handle = write_state(factory, before)
    pickled = pickle.dumps(drv.storage)

    def busy(n: int) -> None:
        read_handle(write_state(factory, payload(2000 + n % 50, seed=n), SHARED))
        drv.worker(1, reference)
        drv.storage.create_checkpoint_storage(drv.job_id)

    stop, errors = threading.Event(), []
    load = [
        threading.Thread(target=_load, args=(busy, stop, errors), daemon=True)
        for _ in range(LOAD_THREADS)
    ]
    for thread in load:
        thread.start()

    def child_work(i: int) -> None:
        storage = drv.storage if i % 2 == 0 else pickle.loads(pickled)
        access = storage.create_checkpoint_storage(drv.job_id)
        child_factory = access.resolve_checkpoint_storage_location(1, reference)
        blob = payload(4000 + i, seed=100 + i)
        handle = write_state(child_factory, blob, SHARED)
        if read_handle(handle) != blob:
            raise AssertionError("the child's own state does not read its bytes")
        if read_handle(parent_handle) != before:
            raise AssertionError("the parent's handle does not read its bytes in the child")

    children: dict[int, int] = {}
    try:
        time.sleep(0.3)  # the threads are busy with I/O
        for i in range(FORKED_CHILDREN):
            read_fd, write_fd = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(read_fd)
                _in_child(functools.partial(child_work, i), write_fd)
            os.close(write_fd)
            children[pid] = read_fd
            time.sleep(0.05 + 0.05 * i)
    finally:
        stop.set()
        outcomes = _wait_children(children, time.monotonic() + CHILD_SECONDS)
        for thread in load:
            thread.join(THREADS_SECONDS)
    failed = {pid: text for pid, text in outcomes.items() if text != "ok"}
    msg = fail_message(
        "THR-4",
        f"fork {FORKED_CHILDREN} processes while {LOAD_THREADS} threads write and read state",
    )
    msg += f"\n{len(outcomes) - len(failed)} of {len(outcomes)} children finished: " + "; ".join(
        f"child {pid}: {text}" for pid, text in failed.items()
    )
    assert not failed, msg
    assert not errors, msg + f"\nthe parent's threads failed: {errors[0]!r}"
