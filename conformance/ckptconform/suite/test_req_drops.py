"""REQ-12: a connection the server drops mid-request (remote file systems: the sftp leg).

The server of the sftp leg drops the client's connection, once, instead of answering a chosen
request on a chosen file (``SftpBackend.dropping_connection``); backends whose server cannot
do that skip with that reason. The reads run on one thread, so that the read after the drop
shows whether the storage connects anew where it keeps a connection per thread.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from urllib.parse import urlsplit

import pytest

from ckptconform.suite._driver import (
    JobDriver,
    call_outcome,
    fail_message,
    file_options,
    file_path,
    read_handle,
    tagged,
    write_state,
)
from ckptconform.workload import payload

#: REQ-12's bound on each read through a dropped connection, and on the read after it
DROPPED_READ_SECONDS = 15.0


@pytest.mark.clause("REQ-12")
@pytest.mark.parametrize("operation", ["open", "read", "close"])
def test_a_dropped_connection_is_an_oserror(sandbox, target, backend, operation):
    """REQ-12: a connection dropped at the OPEN, a READ or the CLOSE of a state's file fails
    the read with an OSError naming the server (or, at the CLOSE, lets it return the bytes),
    and the same thread's next read returns the bytes."""
    dropping = getattr(backend, "dropping_connection", None)
    if dropping is None:
        pytest.skip(f"backend {backend.name} cannot drop a client's connection (sftp can)")
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    blob = payload(3000, 12)
    with tagged("REQ-12", "write a state before the fault", sandbox):
        handle = write_state(drv.worker(1, drv.location(1).location_reference), blob)
    if file_path(handle) is None:
        pytest.skip("the state is inline: no file to read through a connection")
    endpoint = urlsplit(sandbox.root).netloc
    msg = fail_message("REQ-12", f"read a handle, the connection dropped at {operation}", sandbox)
    with concurrent.futures.ThreadPoolExecutor(1, "ckptconform-req12") as thread:
        with dropping(operation, file_path(handle).rsplit("/", 1)[1]) as drop:
            outcome = _outcome_within(thread, lambda: read_handle(handle))
        assert drop.hits == 1, msg + f"\nthe connection was not dropped (outcome: {outcome})"
        if not (operation == "close" and outcome == "returned"):
            assert outcome.startswith("OSError"), msg + f"\noutcome: {outcome}"
            assert endpoint in outcome, msg + f"\nthe error does not name {endpoint}: {outcome}"
        again: list[bytes] = []
        after = _outcome_within(thread, lambda: again.append(read_handle(handle)))
    assert after == "returned", msg + f"\nthe next read in the same thread: {after}"
    assert again == [blob], msg + "\nthe next read returned other bytes"


def _outcome_within(thread: concurrent.futures.Executor, call: Callable[[], object]) -> str:
    """What ``call`` did on ``thread``: "returned", "OSError <text>", the other exception's
    type and text, or "still running" after REQ-12's bound."""
    future = thread.submit(call_outcome, call)
    try:
        return future.result(timeout=DROPPED_READ_SECONDS)
    except concurrent.futures.TimeoutError:
        return f"still running after {DROPPED_READ_SECONDS:g} s"
