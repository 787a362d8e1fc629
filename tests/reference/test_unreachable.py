"""Unreachable or misconfigured stores: every public method fails with an OSError, in time.

Issue 10, case 1: with an unreachable S3 endpoint, library exceptions (botocore's
EndpointConnectionError, ParamValidationError) escaped the contract after 10-15 s of
retries. Now every public method that sends a request raises one of the contract's OSError
subclasses within the retry budget (``ckptstore.stores.retry.retry_budget``), naming the
endpoint and the path and never a secret. Methods that send nothing to an object store
(``initialize_location_*`` on S3, ``resolve_checkpoint_storage_location``) succeed, as they must
(S1); the once-per-job setup ``initialize_base_locations_for_checkpoint`` probes conditional
writes on S3 (issue 9), so it fails like the others.

Most cases run with a one-attempt budget (``max_attempts: 0``) to stay fast; a few run with
the defaults to check the default bound, and one against an endpoint that never accepts a
connection (a full accept queue) to check the connect-timeout bound.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ckptstore import FileSystemCheckpointStorage, JobManagerCheckpointStorage
from ckptstore.api import CheckpointedStateScope, JobID
from ckptstore.errors import CheckpointIOError, EndpointUnreachableError
from ckptstore.filesystem.handles import FileStateHandle, RelativeFileStateHandle
from ckptstore.filesystem.metadata import FsCompletedCheckpointStorageLocation
from ckptstore.stores.registry import register_filesystem
from ckptstore.stores.retry import retry_budget
from tests.reference._moto import reset_filesystem_caches

KEY = "AKIAUNREACHABLE"
SECRET = "unreachable-S3cr3t-91"
BUCKET = "unreachable-bucket"
EXCLUSIVE = CheckpointedStateScope.EXCLUSIVE
SHARED = CheckpointedStateScope.SHARED


def _free_port() -> int:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = int(probe.getsockname()[1])
    probe.close()
    return port


@pytest.fixture
def refused() -> Iterator[str]:
    """An endpoint on 127.0.0.1 whose port refuses connections."""
    reset_filesystem_caches()
    yield f"http://127.0.0.1:{_free_port()}"
    reset_filesystem_caches()


def _options(endpoint: str, **config: Any) -> dict[str, Any]:
    options: dict[str, Any] = {"endpoint_url": endpoint, "key": KEY, "secret": SECRET}
    if config:
        options["config_kwargs"] = config
    return options


FAST = {"retries": {"max_attempts": 0}}


def _operations(endpoint: str, options: dict[str, Any]) -> list[tuple[str, Callable[[], Any]]]:
    """Every public operation that sends a request to the store, as (name, call)."""
    base = f"s3://{BUCKET}/ckpt"
    storage = FileSystemCheckpointStorage(
        base, 0, savepoint_path=f"s3://{BUCKET}/sp", storage_options=options
    )
    job = JobID.generate()
    access = storage.create_checkpoint_storage(job)
    location = access.initialize_location_for_checkpoint(1)  # nothing to send on S3 (S1)
    savepoint = access.initialize_location_for_savepoint(1)
    factory = access.resolve_checkpoint_storage_location(1, location.location_reference)
    token = register_filesystem("s3", options, authorities=[BUCKET])
    handle = FileStateHandle(f"{base}/{job}/shared/f", 10, fs_token=token)
    relative = RelativeFileStateHandle(f"{base}/x/chk-1/r", 3, relative_path="r", fs_token=token)
    completed = FsCompletedCheckpointStorageLocation(
        f"{base}/{job}/chk-1",
        FileStateHandle(f"{base}/{job}/chk-1/_metadata", 1, fs_token=token),
        f"{base}/{job}/chk-1",
        fs_token=token,
    )
    jm = JobManagerCheckpointStorage(
        f"s3://{BUCKET}/jm", savepoint_path=f"s3://{BUCKET}/jmsp", storage_options=options
    )
    jm_access = jm.create_checkpoint_storage(job)
    jm_location = jm_access.initialize_location_for_checkpoint(2)

    def write(stream: Any, size: int = 100) -> Any:
        stream.write(b"x" * size)
        return stream.close_and_get_handle()

    def finalize(target: Any) -> Any:
        out = target.create_metadata_output_stream()
        out.write(b"metadata")
        return out.close_and_finalize_checkpoint()

    def big_write() -> Any:
        stream = factory.create_checkpoint_state_output_stream(SHARED)
        try:
            stream.write(b"y" * (6 * 2**20))  # beyond s3fs's 5 MiB block: a multipart upload
            stream.flush()
            return stream.close_and_get_handle()
        finally:
            stream.close()

    return [
        (
            "access.initialize_base_locations_for_checkpoint (conditional-write probe)",
            access.initialize_base_locations_for_checkpoint,
        ),
        (
            "jobmanager initialize_base_locations_for_checkpoint (conditional-write probe)",
            jm_access.initialize_base_locations_for_checkpoint,
        ),
        ("storage.resolve_checkpoint", lambda: storage.resolve_checkpoint(f"{base}/j/chk-1")),
        ("access.resolve_checkpoint", lambda: access.resolve_checkpoint(f"{base}/j/chk-1")),
        (
            "exclusive stream close_and_get_handle",
            lambda: write(factory.create_checkpoint_state_output_stream(EXCLUSIVE)),
        ),
        ("shared stream write/flush (multipart)", big_write),
        (
            "task-owned stream close_and_get_handle",
            lambda: write(access.create_task_owned_state_stream()),
        ),
        (
            "savepoint stream close_and_get_handle",
            lambda: write(savepoint.create_checkpoint_state_output_stream(EXCLUSIVE)),
        ),
        ("metadata close_and_finalize_checkpoint", lambda: finalize(location)),
        ("location.dispose_on_failure", location.dispose_on_failure),
        ("savepoint.dispose_on_failure", savepoint.dispose_on_failure),
        ("completed.dispose_storage_location", completed.dispose_storage_location),
        ("handle.open_input_stream + read", lambda: handle.open_input_stream().read()),
        ("handle.discard_state", handle.discard_state),
        (
            "resolved relative handle read",
            lambda: completed.resolve_handle(relative).open_input_stream().read(),
        ),
        ("factory.duplicate", lambda: factory.duplicate([handle], SHARED)),
        (
            "toolset.duplicate",
            lambda: access.create_task_owned_checkpoint_state_toolset().duplicate([handle]),
        ),
        ("storage.find_leftovers", lambda: storage.find_leftovers(job)),
        ("storage.clean_leftovers", lambda: storage.clean_leftovers(job)),
        ("jobmanager.resolve_checkpoint", lambda: jm.resolve_checkpoint(f"s3://{BUCKET}/jm/x")),
        ("jobmanager metadata finalize", lambda: finalize(jm_location)),
        ("jobmanager dispose_on_failure", jm_location.dispose_on_failure),
    ]


def _check(name: str, call: Callable[[], Any], endpoint: str, bound: float) -> float:
    start = time.monotonic()
    with pytest.raises(OSError) as caught:
        call()
    elapsed = time.monotonic() - start
    error = caught.value
    assert isinstance(error, CheckpointIOError), (name, repr(error))
    message = str(error)
    assert endpoint in message, (name, message)
    assert SECRET not in message, (name, message)
    assert KEY not in message, (name, message)
    assert elapsed < bound, (name, elapsed)
    return elapsed


def test_every_public_method_maps_an_unreachable_endpoint(refused: str) -> None:
    """One attempt per request: each operation fails at once with a contract OSError."""
    timings = {
        name: _check(name, call, refused, bound=5.0)
        for name, call in _operations(refused, _options(refused, **FAST))
    }
    assert len(timings) == 22


def test_unreachable_is_a_connection_error(refused: str) -> None:
    storage = FileSystemCheckpointStorage(
        f"s3://{BUCKET}/ckpt", storage_options=_options(refused, **FAST)
    )
    with pytest.raises(EndpointUnreachableError) as caught:
        storage.resolve_checkpoint(f"s3://{BUCKET}/ckpt/j/chk-1")
    assert isinstance(caught.value, ConnectionError)


@pytest.mark.parametrize(
    "name",
    ["storage.resolve_checkpoint", "exclusive stream close_and_get_handle", "handle.discard_state"],
)
def test_default_budget_is_under_15_seconds(refused: str, name: str) -> None:
    """With the bounded defaults (10d38f9) a refused endpoint fails well within 15 s."""
    budget = retry_budget(None)
    assert budget.unreachable_seconds < 15
    operations = dict(_operations(refused, _options(refused)))
    _check(name, operations[name], refused, bound=min(15.0, budget.unreachable_seconds + 2))


def test_connect_timeouts_stay_within_the_configured_budget() -> None:
    """An endpoint that never accepts a connection (its accept queue is full): connect
    timeouts, bounded by (max_attempts + 1) * connect_timeout plus backoff."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    port = server.getsockname()[1]
    fillers: list[socket.socket] = []
    try:
        for _ in range(8):  # fill the accept queue; later SYNs are dropped
            filler = socket.socket()
            filler.settimeout(0.3)
            try:
                filler.connect(("127.0.0.1", port))
            except OSError:
                filler.close()
                break
            fillers.append(filler)
        endpoint = f"http://127.0.0.1:{port}"
        reset_filesystem_caches()
        options = _options(endpoint, connect_timeout=0.5, retries={"max_attempts": 1})
        budget = retry_budget(options)
        assert budget.unreachable_seconds == pytest.approx(2 * 0.5 + 1)
        storage = FileSystemCheckpointStorage(f"s3://{BUCKET}/ckpt", storage_options=options)
        _check(
            "resolve (connect timeout)",
            lambda: storage.resolve_checkpoint(f"s3://{BUCKET}/ckpt/j/chk-1"),
            endpoint,
            bound=budget.unreachable_seconds + 1.5,
        )
    finally:
        for filler in fillers:
            filler.close()
        server.close()
        reset_filesystem_caches()


def test_misconfigured_client_is_an_os_error(refused: str) -> None:
    """A client that fails before any request (here: botocore rejects the region) is an
    OSError naming the endpoint, not a botocore exception."""
    options = {**_options(refused, **FAST), "client_kwargs": {"region_name": "not a region!"}}
    storage = FileSystemCheckpointStorage(f"s3://{BUCKET}/ckpt", storage_options=options)
    with pytest.raises(CheckpointIOError) as caught:
        storage.resolve_checkpoint(f"s3://{BUCKET}/ckpt/j/chk-1")
    assert refused in str(caught.value)
    assert SECRET not in str(caught.value)


def test_local_failures_are_os_errors(tmp_path: Path) -> None:
    """Local: a checkpoint path below a regular file; every I/O method raises OSError."""
    blocker = tmp_path / "file"
    blocker.write_bytes(b"x")
    storage = FileSystemCheckpointStorage(
        str(blocker / "ckpt"), 0, savepoint_path=str(blocker / "sp")
    )
    access = storage.create_checkpoint_storage(JobID.generate())
    calls: list[Callable[[], Any]] = [
        access.initialize_base_locations_for_checkpoint,
        lambda: access.initialize_location_for_checkpoint(1),
        lambda: access.initialize_location_for_savepoint(1),
        lambda: storage.resolve_checkpoint(str(blocker / "ckpt" / "chk-1")),
    ]
    location = access.resolve_checkpoint_storage_location(
        1,
        storage.create_checkpoint_storage(access.job_id)
        .resolve_checkpoint_storage_location(1, _default())
        .location_reference,
    )
    stream = location.create_checkpoint_state_output_stream(EXCLUSIVE)
    stream.write(b"z" * 10)
    calls.append(stream.close_and_get_handle)
    task_owned = access.create_task_owned_state_stream()
    task_owned.write(b"z" * 10)
    calls.append(task_owned.close_and_get_handle)
    for call in calls:
        with pytest.raises(OSError) as caught:
            call()
        assert isinstance(caught.value, CheckpointIOError), repr(caught.value)
    assert blocker.read_bytes() == b"x"


def _default() -> Any:
    from ckptstore.api import CheckpointStorageLocationReference

    return CheckpointStorageLocationReference.default()
