"""BAD: unreachable and refusing stores fail fast, typed and named; errnos agree with
their class; paths past the file system's limit fail typed.
"""

from __future__ import annotations

import errno
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pytest

from ckptconform.backends.base import random_name
from ckptconform.suite._bad_inputs import (
    show,
)
from ckptconform.suite._bad_world import (
    CONNECTION_ERRNOS,
    errno_disagreement,
    report,
)
from ckptconform.suite._driver import (
    EXCLUSIVE,
    S3_ENDPOINT_VARIABLE,
    JobDriver,
    closed_port,
    endpointless_options,
    file_options,
    file_path,
    join,
    payload,
    put_file,
    read_handle,
    require,
    tagged,
    within,
    write_state,
)
from ckptstore.api import JobID

# --------------------------------------------------------------------------- BAD-10, BAD-11

#: BAD-10's bound on each step through an endpoint that refuses connections (SPK-6's).
UNREACHABLE_STEP_SECONDS = 15.0


#: BAD-10's large state on object stores, and the part size (default_block_size) it gets
LARGE_STATE_BYTES = 12 * 1024 * 1024


LARGE_PART_BYTES = 5 * 1024 * 1024


@dataclass
class Step:
    """One call through an unreachable endpoint: what it returned or raised, and how long."""

    name: str
    seconds: float
    finished: bool
    must_fail: bool
    result: Any = None
    error: BaseException | None = None

    @property
    def ok(self) -> bool:
        return self.finished and self.error is None

    def said(self) -> str:
        return f"{type(self.error).__name__}: {show(str(self.error), 240)}"


class StoreRun:
    """Steps against a store that cannot serve them, each timed and bounded.

    The store is an endpoint that refuses connections (BAD-10, BAD-11) or a server that
    answers every request with an error (BAD-13). Each step either returns or raises; the
    tests judge the record: whether the failures are OSErrors naming the endpoint in time and
    whether the steps that need the store failed, and whether they are ConnectionErrors.
    """

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.steps: list[Step] = []

    def step(self, name: str, call: Callable[[], Any], *, must_fail: bool = False) -> Step:
        box: dict[str, Any] = {}

        def work() -> None:
            try:
                box["result"] = call()
            except Exception as exc:
                box["error"] = exc

        started = time.monotonic()
        finished = within(UNREACHABLE_STEP_SECONDS, work, "ckptconform-unreachable")
        seconds = time.monotonic() - started
        done = Step(name, seconds, finished, must_fail, box.get("result"), box.get("error"))
        self.steps.append(done)
        return done

    def untyped_or_unnamed(self) -> list[str]:
        """Steps that hung, returned where they must fail, or failed untyped, unnamed or late."""
        found = []
        for step in self.steps:
            if not step.finished:
                found.append(f"  {step.name}: still running after {step.seconds:.0f} s")
            elif step.error is None:
                if step.must_fail:
                    found.append(
                        f"  {step.name}: returned {show(step.result)}, although the store "
                        "served none of its requests"
                    )
            elif not isinstance(step.error, OSError):
                found.append(f"  {step.name}: not an OSError: {step.said()}")
            elif (unnamed := self.unnamed(str(step.error))) is not None:
                found.append(f"  {step.name}: {unnamed}: " + step.said())
            elif step.seconds > UNREACHABLE_STEP_SECONDS:
                found.append(f"  {step.name}: failed only after {step.seconds:.1f} s")
        return found

    def unnamed(self, message: str) -> str | None:
        """Why ``message`` does not name the endpoint (None: it does). A bracketed IPv6 host
        must be named with its brackets wherever its port is: a bare '::1:<port>' reads as
        another IPv6 address."""
        if self.endpoint not in message:
            return f"the message does not name the endpoint {self.endpoint}"
        host, _, port = self.endpoint.rpartition(":")
        if not host.startswith("["):
            return None
        for found in re.finditer(rf":{re.escape(port)}(?!\d)", message):
            if not message[: found.start()].endswith(host):
                spelt = message[max(0, found.start() - 24) : found.end()]
                return f"the message names port {port} as {spelt!r}, not as {self.endpoint}"
        return None

    def not_connection_errors(self) -> list[str]:
        """Steps that failed with an OSError that is no ConnectionError."""
        return [
            f"  {step.name}: an OSError, not a ConnectionError: {step.said()}"
            for step in self.steps
            if isinstance(step.error, OSError) and not isinstance(step.error, ConnectionError)
        ]


#: How BAD-10's endpoint is given: the backend's own way at 127.0.0.1 (an object store's
#: endpoint_url, an SFTP server's port), an object store's endpoint_url at [::1], or only
#: botocore's AWS_ENDPOINT_URL_S3 (storage_options that name no endpoint)
REFUSING_ROUTES = ("127.0.0.1", "ipv6", S3_ENDPOINT_VARIABLE)


#: BAD-11's endpoint whose host does not resolve (RFC 2606 reserves .invalid)
UNRESOLVABLE_ENDPOINT = "ckptconform.invalid:9000"


def _unreachable_run(
    sandbox: Any,
    target: Any,
    backend: Any,
    route: str = "127.0.0.1",
    monkeypatch: pytest.MonkeyPatch | None = None,
) -> StoreRun:
    """The steps on a storage whose endpoint cannot be reached, given as ``route`` (one of
    :data:`REFUSING_ROUTES`, through ``monkeypatch`` for the variable, or ``"unresolvable"``:
    an object store's endpoint_url at :data:`UNRESOLVABLE_ENDPOINT`); skips on backends that
    reach no server or cannot be given the endpoint that way."""
    port = closed_port()
    routed = backend.unreachable_options(port)
    if routed is None:
        pytest.skip(f"backend {backend.name} reaches no server: no endpoint can refuse it")
    endpoint = f"127.0.0.1:{port}"
    if route in ("ipv6", "unresolvable"):
        if not (backend.object_store and routed.get("endpoint_url")):
            pytest.skip(f"backend {backend.name} is no object store: no {route} endpoint_url")
        # the suite never listens on ::1; .invalid names no host anywhere
        endpoint = f"[::1]:{port}" if route == "ipv6" else UNRESOLVABLE_ENDPOINT
        scheme = urlsplit(str(routed["endpoint_url"])).scheme or "http"
        routed = {**routed, "endpoint_url": f"{scheme}://{endpoint}"}
    elif route == S3_ENDPOINT_VARIABLE:
        if backend.scheme != "s3":
            pytest.skip(f"{S3_ENDPOINT_VARIABLE} routes S3 clients only, not {backend.scheme}")
        if monkeypatch is None:
            raise TypeError(f"the {route} route sets a variable: it needs the monkeypatch")
        monkeypatch.setenv(S3_ENDPOINT_VARIABLE, f"http://{endpoint}")
        routed = endpointless_options(backend, own_key=True)
    options, writes_files = _store_run_options(target)
    large = backend.object_store and writes_files
    if large:  # s3fs's part size: a large state starts its multipart upload while written
        routed = {**routed, "default_block_size": LARGE_PART_BYTES}
    run = StoreRun(endpoint)
    dirs = {
        name: backend.unreachable_url(url, port)
        for name, url in (
            ("checkpoint_dir", sandbox.checkpoint_dir),
            ("savepoint_dir", sandbox.savepoint_dir),
        )
    }
    storage = run.step(
        "make_storage", lambda: sandbox.make_storage(storage_options=routed, **dirs, **options)
    )
    if storage.ok:
        pointer = join(dirs["checkpoint_dir"], random_name(8), "chk-1")
        _unreachable_steps(run, storage.result, pointer, writes_files, large)
    return run


def _store_run_options(target: Any) -> tuple[dict[str, Any], bool]:
    """make_storage's options for BAD-10's and BAD-13's steps (3000 bytes of state go to a file
    where there is a threshold), and whether closing a state stream must reach the store."""
    options = {"inline_threshold": 1024} if "inline-state" in target.capabilities else {}
    return options, bool({"inline-state", "file-layout"} & set(target.capabilities))


def _require_none(
    clause: str,
    findings: list[str],
    run: StoreRun,
    what: str = "steps through an unreachable endpoint",
) -> None:
    require(
        not findings,
        clause,
        report(clause, what, findings, len(run.steps), "steps", endpoint=run.endpoint),
    )  # fmt: skip


@pytest.mark.clause("BAD-10")
@pytest.mark.parametrize("route", REFUSING_ROUTES)
def test_unreachable_store_fails_fast_typed_and_named(sandbox, target, backend, route, monkeypatch):
    """BAD-10: through an endpoint that refuses connections, the steps that need the store
    raise an OSError naming the endpoint within 15 s; an IPv6 endpoint, an object store's
    endpoint_url at [::1], is named as [::1]:<port>; an S3 endpoint given only by
    AWS_ENDPOINT_URL_S3 (storage_options with keys only) as 127.0.0.1:<port>."""
    run = _unreachable_run(sandbox, target, backend, route, monkeypatch)
    _require_none("BAD-10", run.untyped_or_unnamed(), run)


@pytest.mark.clause("BAD-11")
def test_unreachable_store_is_a_connection_error(sandbox, target, backend):
    """BAD-11: an error caused by the refused connection is a ConnectionError."""
    run = _unreachable_run(sandbox, target, backend)
    _require_none("BAD-11", run.not_connection_errors(), run)


@pytest.mark.clause("BAD-11")
def test_an_unresolvable_store_is_a_connection_error(sandbox, target, backend):
    """BAD-11: through an object store's endpoint_url whose host does not resolve
    (ckptconform.invalid), the steps that need the store raise an OSError naming the
    endpoint within 15 s, and every error is a ConnectionError."""
    run = _unreachable_run(sandbox, target, backend, "unresolvable")
    _require_none("BAD-11", run.untyped_or_unnamed() + run.not_connection_errors(), run)


def _unreachable_steps(
    run: StoreRun, storage: Any, pointer: str, writes_files: bool, large: bool = False
) -> None:
    """BAD-10's steps after make_storage: a stream (and, with ``large``, one of 12 MiB), a
    finalization and ``pointer``."""
    access = run.step(
        "create_checkpoint_storage", lambda: storage.create_checkpoint_storage(JobID.generate())
    )
    if access.ok:
        # an access whose base locations failed still serves a location, as a worker's does
        run.step(
            "initialize_base_locations_for_checkpoint",
            access.result.initialize_base_locations_for_checkpoint,
        )
        location = run.step(
            "initialize_location_for_checkpoint(1)",
            lambda: access.result.initialize_location_for_checkpoint(1),
        )
        if location.ok:
            _state_and_metadata_steps(run, location.result, writes_files)
        if location.ok and large:
            stream = run.step(
                "create_checkpoint_state_output_stream(EXCLUSIVE) for 12 MiB",
                lambda: location.result.create_checkpoint_state_output_stream(EXCLUSIVE),
            )
            if stream.ok:
                _close_after_write(run, stream.result, "", True, payload(LARGE_STATE_BYTES))
    run.step("resolve_checkpoint", lambda: storage.resolve_checkpoint(pointer), must_fail=True)


def _state_and_metadata_steps(run: StoreRun, location: Any, writes_files: bool) -> None:
    """A state stream of the checkpoint's location and its _metadata stream, each written and
    closed for its result (the state stream's close must fail only where it writes a file)."""
    stream = run.step(
        "create_checkpoint_state_output_stream(EXCLUSIVE)",
        lambda: location.create_checkpoint_state_output_stream(EXCLUSIVE),
    )
    if stream.ok:
        _close_after_write(run, stream.result, "", writes_files)
    metadata = run.step("create_metadata_output_stream", location.create_metadata_output_stream)
    if metadata.ok:
        _close_after_write(run, metadata.result, "metadata ", True)


def _close_after_write(
    run: StoreRun, stream: Any, kind: str, must_fail: bool, data: bytes | None = None
) -> None:
    """Write into a state (or metadata) stream, close it for its result, then close() it."""
    if data is None:
        data = b"metadata" if kind else payload(3000)
    wrote = run.step(f"{kind}write({len(data)} bytes)", lambda: stream.write(data))
    if wrote.ok:
        closing = "close_and_finalize_checkpoint" if kind else "close_and_get_handle"
        run.step(closing, getattr(stream, closing), must_fail=must_fail)
    run.step(f"{kind}close()", stream.close)


# --------------------------------------------------------------------------- BAD-13


def host_and_port(url: str) -> str:
    """``host:port`` of an endpoint URL (just the host where the URL gives no port)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    return f"{host}:{parts.port}" if parts.port else host


@pytest.mark.clause("BAD-13")
@pytest.mark.parametrize("given_as", ["endpoint_url", "client_kwargs"])
def test_server_errors_name_the_endpoint(sandbox, target, backend, ledger, given_as):
    """BAD-13: while the server answers every request 403 AccessDenied, closing a stream,
    finalizing _metadata, reading a handle and resolve_checkpoint each raise an OSError whose
    message names the endpoint's host and port, given as endpoint_url or in client_kwargs."""
    run = _denied_run("BAD-13", sandbox, target, backend, ledger, given_as)
    _require_none(
        "BAD-13", run.untyped_or_unnamed(), run, "steps while every request is refused with 403"
    )


def _denied_run(
    clause: str,
    sandbox: Any,
    target: Any,
    backend: Any,
    ledger: Any,
    given_as: str = "endpoint_url",
) -> StoreRun:
    """BAD-13's steps while the server answers every request 403 AccessDenied (for
    ``clause``, which a failure before the fault blames), the endpoint given as s3fs's
    ``endpoint_url`` or as ``client_kwargs['endpoint_url']``."""
    url = str(backend.storage_options.get("endpoint_url", ""))
    options, writes_files = _store_run_options(target)
    if given_as == "client_kwargs":
        routed = {k: v for k, v in backend.storage_options.items() if k != "endpoint_url"}
        routed["client_kwargs"] = {**routed.get("client_kwargs", {}), "endpoint_url": url}
        options["storage_options"] = routed
    endpoint = host_and_port(url)
    with tagged(clause, "a completed checkpoint and a handle, before any fault", sandbox):
        drv = JobDriver(sandbox, **options)
        drv.init_base()
        completed, written = drv.checkpoint(2, exclusive=[payload(3000, 13)])
        location = drv.location(1)
    run = StoreRun(endpoint)
    ledger.inject(status=403, code="AccessDenied", message="Access Denied", times=None)
    try:
        _state_and_metadata_steps(run, location, writes_files)
        for handle, _ in written:
            run.step(
                "read a handle written before the fault",
                lambda h=handle: read_handle(h),
                must_fail=file_path(handle) is not None,
            )
        run.step(
            "resolve_checkpoint of a completed checkpoint",
            lambda: drv.storage.resolve_checkpoint(completed.external_pointer),
            must_fail=True,
        )
        _cleanup_steps(run, drv, target, location, completed, [h for h, _ in written])
    finally:
        ledger.clear_faults()
    return run


def _cleanup_steps(
    run: StoreRun, drv: JobDriver, target: Any, location: Any, completed: Any, handles: list[Any]
) -> None:
    """BAD-13's steps that copy or delete: duplicating a file-backed handle (where
    fast-duplicate is claimed), discarding it, and both disposals; each may succeed."""
    files = [h for h in handles if file_path(h) is not None]
    if files and "fast-duplicate" in target.capabilities:
        factory = drv.worker(1, location.location_reference)
        run.step(
            "duplicate a file-backed handle written before",
            lambda: factory.duplicate(files[:1], EXCLUSIVE),
        )
    for handle in files[:1]:
        run.step("discard_state of a file-backed handle written before", handle.discard_state)
    run.step("dispose_on_failure of the checkpoint's location", location.dispose_on_failure)
    run.step(
        "dispose_storage_location of a completed checkpoint", completed.dispose_storage_location
    )


# --------------------------------------------------------------------------- BAD-14


def _errno_findings(run: StoreRun, wanted: Callable[[OSError], str | None]) -> list[str]:
    """The failed steps of ``run`` whose errno disagrees with their class or with ``wanted``."""
    found = []
    for step in run.steps:
        if not isinstance(step.error, OSError):
            continue
        why = errno_disagreement(step.error) or wanted(step.error)
        if why:
            found.append(f"  {step.name}: {why}: {step.said()}")
    return found


@pytest.mark.clause("BAD-14")
def test_a_removed_state_is_enoent(sandbox, target):
    """BAD-14: reading a file-backed handle whose file was discarded raises FileNotFoundError
    with errno ENOENT."""
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    handle = write_state(drv.worker(1, drv.location(1).location_reference), payload(3000))
    if file_path(handle) is None:
        pytest.skip("the state is inline: there is no file to remove (DIS-6 reads it)")
    handle.discard_state()
    run = StoreRun("")
    run.step("open and read the handle after discard_state", lambda: read_handle(handle))
    findings = _errno_findings(
        run,
        lambda e: None if isinstance(e, FileNotFoundError) and e.errno == errno.ENOENT
        else "not a FileNotFoundError with errno ENOENT",
    )  # fmt: skip
    if not run.steps[0].error:
        findings.append("  the removed state was read without an error")
    _require_none("BAD-14", findings, run, "a read of a removed state")


@pytest.mark.clause("BAD-14")
@pytest.mark.requires("savepoints")
@pytest.mark.backend_traits(object_store=False)
@pytest.mark.parametrize("where", ["the-file", "below-the-file"])
def test_a_savepoint_target_at_a_file_keeps_errno_and_class(sandbox, target, where):
    """BAD-14: a savepoint target that is an existing file, or lies below one, raises OSErrors
    whose errno Python's OSError maps to their class (ENOTDIR only on a NotADirectoryError)."""
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    blocker = join(sandbox.root, f"not-a-directory-{random_name(6)}")
    put_file(sandbox, blocker, b"a file, not a directory")
    target_dir = blocker if where == "the-file" else join(blocker, "savepoints")

    def savepoint() -> None:
        location = drv.access.initialize_location_for_savepoint(1, target_dir)
        drv.finalize(location, b"savepoint metadata")

    run = StoreRun("")
    run.step(f"a savepoint to {target_dir}", savepoint)
    _require_none("BAD-14", _errno_findings(run, lambda e: None), run, "a savepoint at a file")


@pytest.mark.clause("BAD-14")
def test_a_refused_connection_is_econnrefused(sandbox, target, backend):
    """BAD-14: through an endpoint that refuses connections every OSError carries errno
    ECONNREFUSED."""
    run = _unreachable_run(sandbox, target, backend)
    findings = _errno_findings(
        run, lambda e: None if e.errno == errno.ECONNREFUSED else "errno is not ECONNREFUSED"
    )
    _require_none("BAD-14", findings, run)


@pytest.mark.clause("BAD-14")
def test_a_denied_request_is_no_connection_error(sandbox, target, backend, ledger):
    """BAD-14: while the server answers every request 403 AccessDenied, no error is a
    ConnectionError or carries a connection's errno."""
    run = _denied_run("BAD-14", sandbox, target, backend, ledger)

    def connection_like(error: OSError) -> str | None:
        if isinstance(error, ConnectionError) or error.errno in CONNECTION_ERRNOS:
            return "a refused request reported as a failed connection"
        return None

    _require_none("BAD-14", _errno_findings(run, connection_like), run, "steps under 403")


# --------------------------------------------------------------------------- BAD-15, BAD-16

#: BAD-15's checkpoint directories: URLs this long (at most the 4096 characters below which
#: a storage must take a path), in segments of at most 200 characters, so that the paths made
#: below them pass Linux's PATH_MAX (4096 bytes) at different steps: the state files and the
#: temporary names of a publish (4030), the job's directories (4075).
LONG_CHECKPOINT_DIRS = (4030, 4075)


#: The longest segment of such a directory (NAME_MAX is 255).
LONG_SEGMENT = 200


#: BAD-15's steps that create directories or files (BAD-16 judges their errors).
CREATING_STEPS = (
    "initialize_base_locations_for_checkpoint",
    "initialize_location_for_checkpoint(1)",
    "close a stream of 3000 bytes",
    "finalize _metadata",
    "a savepoint at the default directory",
)


def long_directory(root: str, length: int) -> str:
    """``root`` with segments of at most :data:`LONG_SEGMENT` characters appended until the
    URL is ``length`` characters long."""
    url = root.rstrip("/")
    while len(url) < length:
        url = join(url, "d" * min(LONG_SEGMENT, length - len(url) - 1))
    return url


def _long_path_run(sandbox: Any, target: Any, length: int, endpoint: str = "") -> StoreRun:
    """BAD-15's steps with a checkpoint and savepoint directory ``length`` characters long
    (``endpoint``: the server the steps reach, which their errors name; "" for none).

    Each step runs whether or not the ones before it failed, with what they made: a
    storage refused at make_storage ends the run (refusing a path up front is allowed)."""
    directory = long_directory(join(sandbox.root, "long"), length)
    run = StoreRun(endpoint)
    made = run.step(
        "make_storage and create_checkpoint_storage",
        lambda: JobDriver(
            sandbox, checkpoint_dir=directory, savepoint_dir=directory, **file_options(target)
        ),
    )
    drv = made.result
    if drv is None:
        return run
    base, checkpoint, stream, metadata, savepoint_step = CREATING_STEPS
    run.step(base, drv.init_base)
    location = run.step(checkpoint, lambda: drv.location(1)).result
    if location is not None:
        factory = drv.worker(1, location.location_reference)
        run.step(stream, lambda: write_state(factory, payload(3000)))
        run.step(metadata, lambda: drv.finalize(location, b"long path"))

    def savepoint() -> Any:
        savepoint_location = drv.access.initialize_location_for_savepoint(2, None)
        return drv.finalize(savepoint_location, b"long path savepoint")

    run.step(savepoint_step, savepoint)
    pointer = drv.chk_dir(1)
    run.step(
        f"resolve_checkpoint of {show(pointer, 40)}",
        lambda: drv.fresh_storage().resolve_checkpoint(pointer),
    )
    return run


def _refused_creations(run: StoreRun) -> list[tuple[Step, OSError]]:
    """The steps of ``run`` that create directories or files and failed with an OSError other
    than FileNotFoundError (a missing file is ENOENT and names no refusal), with the error:
    what BAD-16's errno and BAD-13's naming judge."""
    return [
        (step, step.error)
        for step in run.steps
        if step.name in CREATING_STEPS
        and isinstance(step.error, OSError)
        and not isinstance(step.error, FileNotFoundError)
    ]


@pytest.mark.clause("BAD-15")
@pytest.mark.parametrize("length", LONG_CHECKPOINT_DIRS)
def test_paths_past_the_file_systems_limit(sandbox, target, length):
    """BAD-15: with checkpoint and savepoint directories so long that the paths made below
    them pass the file system's limit, every step succeeds or raises OSError or ValueError."""
    run = _long_path_run(sandbox, target, length)
    findings = [
        f"  {step.name}: neither an OSError nor a ValueError: {step.said()}"
        for step in run.steps
        if step.error is not None and not isinstance(step.error, OSError | ValueError)
    ]
    _require_none("BAD-15", findings, run, f"steps with a {length}-character checkpoint path")


@pytest.mark.clause("BAD-16")
@pytest.mark.backend_traits(object_store=False)
@pytest.mark.parametrize("length", LONG_CHECKPOINT_DIRS)
def test_a_name_too_long_keeps_its_errno(sandbox, target, backend, length):
    """BAD-16: on the local file system, with checkpoint paths past its limit, every OSError
    but a FileNotFoundError of the steps that create directories or files carries errno
    ENAMETOOLONG, the file system's own."""
    if backend.scheme != "file":
        pytest.skip(f"the {backend.name} leg is no local file system: its limits are its own")
    run = _long_path_run(sandbox, target, length)
    findings = [
        f"  {step.name}: errno {error.errno}, not ENAMETOOLONG: {step.said()}"
        for step, error in _refused_creations(run)
        if error.errno != errno.ENAMETOOLONG
    ]
    _require_none("BAD-16", findings, run, f"steps with a {length}-character checkpoint path")


def server_endpoint(backend: Any) -> str | None:
    """``host:port`` of the server a backend's storage_options reach (an endpoint_url, or an
    SFTP server's host and port); None for a store in this process or on this machine."""
    options = backend.storage_options
    if options.get("endpoint_url"):
        return host_and_port(str(options["endpoint_url"]))
    if options.get("host"):
        port = options.get("port")
        return f"{options['host']}:{port}" if port else str(options["host"])
    return None


@pytest.mark.clause("BAD-13")
@pytest.mark.parametrize("length", LONG_CHECKPOINT_DIRS)
def test_a_servers_refusal_of_a_long_path_names_it(sandbox, target, backend, length):
    """BAD-13: on backends that reach a server, with checkpoint paths past its limits, every
    OSError but a FileNotFoundError of the steps that create directories or files names the
    server's host and port."""
    endpoint = server_endpoint(backend)
    if endpoint is None:
        pytest.skip(f"the {backend.name} leg reaches no server: there is no endpoint to name")
    run = _long_path_run(sandbox, target, length, endpoint)
    findings = [
        f"  {step.name}: {unnamed}: {step.said()}"
        for step, error in _refused_creations(run)
        if (unnamed := run.unnamed(str(error))) is not None
    ]
    _require_none("BAD-13", findings, run, f"steps with a {length}-character checkpoint path")
