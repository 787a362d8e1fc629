"""A small job driver and the helpers the clause tests share.

``JobDriver`` plays both roles of a Flink job against one storage: the coordinator
(initialize base locations and checkpoint locations, write and finalize ``_metadata``) and the
worker (resolve the location from its reference, write state in either scope). Everything goes
through ``ckptstore.api`` only; the backend is inspected through the plugin's ``sandbox`` (raw
access that bypasses the implementation).

Failure messages must stand alone: ``fail_message`` puts the clause id, the operation with its
inputs and, where a sandbox is given, a listing of the test's root into one string. A test that
checks several clauses runs each part inside ``tagged(clause, ...)``: a failure there is raised
as a ``ClauseFailure`` that names the clause (the reports read the ids, never the text).
"""

from __future__ import annotations

import inspect
import os
import pickle
import signal
import socket
import subprocess
import sys
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

import pytest

from ckptconform.backends.base import BackendUnavailableError, random_name
from ckptconform.backends.s3 import abort_open_uploads, s3_error_code
from ckptconform.failures import ClauseFailure, promise_listing
from ckptconform.metadata_file import PlacedState, encode_metadata, master_state
from ckptconform.sandbox import UNCONDITIONAL_METADATA
from ckptconform.workload import payload
from ckptstore.api import (
    CheckpointedStateScope,
    CheckpointStorageLocationReference,
    JobID,
)

__all__ = [
    "CHECKPOINT_DIRS",
    "DEFAULT_REF",
    "EXCLUSIVE",
    "S3_ENDPOINT_VARIABLE",
    "SHARED",
    "JobDriver",
    "assert_same_bytes",
    "chunk",
    "driver_with",
    "endpointless_options",
    "expect_error",
    "fail_message",
    "file_options",
    "file_path",
    "files_below",
    "is_dir",
    "is_inline",
    "job_metadata",
    "join",
    "metadata_handles",
    "move_tree",
    "open_uploads_below",
    "parent",
    "payload",
    "put_file",
    "read_handle",
    "rel_paths",
    "require",
    "require_conditional_writes",
    "roundtrip",
    "routed_options",
    "same_location",
    "second_bucket",
    "second_route",
    "tagged",
    "under_file_size_limit",
    "unconditional_options",
    "unconditional_route",
    "write_chunks",
    "write_state",
    "within",
]

EXCLUSIVE = CheckpointedStateScope.EXCLUSIVE
SHARED = CheckpointedStateScope.SHARED
DEFAULT_REF = CheckpointStorageLocationReference.default()


# --------------------------------------------------------------------------- messages


def fail_message(clause: str, operation: str, sandbox: Any = None, **inputs: Any) -> str:
    """A self-contained failure message: clause, operation, inputs and the sandbox listing
    (taken when the failure is reported, not now: ``ckptconform.failures.promise_listing``)."""
    shown = ", ".join(f"{k}={_short(v)}" for k, v in inputs.items())
    text = f"[{clause}] {operation}({shown})"
    if sandbox is not None:
        text += f"\nsandbox {sandbox.root}:\n{promise_listing(sandbox)}"
    return text


def _short(value: Any) -> str:
    if isinstance(value, bytes | bytearray) and len(value) > 40:
        return f"<{len(value)} bytes>"
    text = repr(value)
    return text if len(text) <= 300 else text[:297] + "..."


def expect_error(
    errors: type[BaseException] | tuple[type[BaseException], ...],
    clause: str,
    operation: str,
    call: Callable[[], Any],
    sandbox: Any = None,
    **inputs: Any,
) -> BaseException:
    """Run ``call`` and require one of ``errors`` (subclasses accepted); return the error."""
    expected = errors if isinstance(errors, tuple) else (errors,)
    names = " or ".join(e.__name__ for e in expected)
    try:
        result = call()
    except expected as exc:
        return exc
    except Exception as exc:
        raise ClauseFailure(
            (clause,),
            fail_message(clause, operation, sandbox, **inputs)
            + f"\nexpected {names}, got {type(exc).__name__}: {exc}",
        ) from exc
    raise ClauseFailure(
        (clause,),
        fail_message(clause, operation, sandbox, **inputs)
        + f"\nexpected {names}, but it returned {_short(result)}",
    )


def require(ok: bool, clause: str, message: str) -> None:
    """Fail ``clause`` with ``message`` (which stands alone) unless ``ok``."""
    if not ok:
        raise ClauseFailure((clause,), message)


@contextmanager
def tagged(clause: str, operation: str, sandbox: Any = None, **inputs: Any) -> Iterator[None]:
    """Raise any failure of the block as a ``ClauseFailure`` of ``clause``, with context.

    A failed ``assert`` keeps pytest's explanation below the clause's message; an unexpected
    exception of the implementation is named with its type. A ``ClauseFailure`` of a nested
    block passes unchanged, so the innermost clause is the one blamed.
    """
    try:
        yield
    except ClauseFailure:
        raise
    except AssertionError as exc:
        text = str(exc)
        if not text.startswith(f"[{clause}]"):  # its message is not already the clause's own
            text = fail_message(clause, operation, sandbox, **inputs) + f"\n{text}"
        raise ClauseFailure((clause,), text) from exc
    except Exception as exc:
        raise ClauseFailure(
            (clause,),
            fail_message(clause, operation, sandbox, **inputs)
            + f"\nraised {type(exc).__name__}: {exc}",
        ) from exc


def roundtrip(
    obj: Any, clause: str, what: str, dumps: Callable[[Any], bytes] = pickle.dumps
) -> Any:
    """``pickle.loads(dumps(obj))``; a failure fails ``clause`` (a SER clause)."""
    with tagged(clause, f"pickle round trip of {what}", obj=obj):
        return pickle.loads(dumps(obj))


# --------------------------------------------------------------------------- data and handles


def chunk(data: bytes, sizes: Sequence[int] | None) -> list[bytes]:
    """Cut ``data`` into pieces of ``sizes`` (the rest in one last piece); None: one piece."""
    if not sizes:
        return [data] if data else []
    pieces, pos = [], 0
    for size in sizes:
        if pos >= len(data):
            break
        pieces.append(data[pos : pos + size])
        pos += size
    if pos < len(data):
        pieces.append(data[pos:])
    return pieces


def write_chunks(stream: Any, data: bytes, sizes: Sequence[int] | None = None) -> None:
    for piece in chunk(data, sizes):
        stream.write(piece)


def write_state(
    factory: Any,
    data: bytes,
    scope: CheckpointedStateScope = EXCLUSIVE,
    sizes: Sequence[int] | None = None,
) -> Any:
    """Write ``data`` through a new stream of ``factory`` and return the handle."""
    stream = factory.create_checkpoint_state_output_stream(scope)
    try:
        write_chunks(stream, data, sizes)
        return stream.close_and_get_handle()
    except BaseException:
        stream.close()
        raise


def read_handle(handle: Any) -> bytes:
    """All bytes of a handle, read from its start."""
    stream = handle.open_input_stream()
    try:
        parts = []
        while True:
            piece = stream.read()
            if not piece:
                break
            parts.append(piece)
        return b"".join(parts)
    finally:
        stream.close()


def assert_same_bytes(got: bytes, want: bytes, msg: str) -> None:
    """Fail with ``msg`` and where ``got`` (read back) departs from ``want`` (written).

    For states of megabytes, instead of ``assert got == want``: pytest explains a failed
    ``==`` of bytes with a diff of both reprs in full when the ``CI`` variable is set, which
    for 15 MiB is minutes of CPU and hundreds of megabytes of report."""
    if got == want:
        return
    common = min(len(got), len(want))
    ends = [(i, min(i + 4096, common)) for i in range(0, common, 4096)]
    block = next(((i, j) for i, j in ends if got[i:j] != want[i:j]), None)
    if block is None:
        where = f"the first {common:,} bytes are the same"
    else:
        offset = next(i for i in range(*block) if got[i] != want[i])
        where = (
            f"the first differing byte is at offset {offset:,} "
            f"(read {got[offset : offset + 8].hex()}, written {want[offset : offset + 8].hex()})"
        )
    raise AssertionError(f"{msg}\n{len(got):,} bytes read back, {len(want):,} written; {where}")


def job_metadata(checkpoint_id: int, states: Sequence[tuple[str, Any]]) -> bytes:
    """Flink's ``_metadata`` of one subtask's states, ``(kind, handle)`` each (a chain of one
    operator per state; ``ckptconform.metadata_file``), the handles pickled in it as the
    master state ``ckptconform`` for :func:`metadata_handles`."""
    placed = [PlacedState(i, 0, kind, h) for i, (kind, h) in enumerate(states) if h is not None]
    return encode_metadata(checkpoint_id, 1, placed, pickle.dumps([h for _, h in states]))


def metadata_handles(metadata: bytes) -> list[Any]:
    """The handles :func:`job_metadata` put into a ``_metadata``, in their order."""
    return list(pickle.loads(master_state(metadata)))


def file_path(handle: Any) -> str | None:
    """The file URL of a file-backed handle, else None."""
    path = getattr(handle, "file_path", None)
    return path if isinstance(path, str) and path else None


def is_inline(handle: Any) -> bool:
    return file_path(handle) is None and handle.as_bytes_if_in_memory() is not None


def file_options(target: Any) -> dict[str, Any]:
    """Options that make state go to files when the target has a threshold (inline-state)."""
    return {"inline_threshold": 0} if "inline-state" in target.capabilities else {}


def within(seconds: float, work: Callable[[], None], name: str = "ckptconform-step") -> bool:
    """Run ``work`` in a daemon thread; False if it has not finished after ``seconds`` (the
    thread is abandoned: a step that hangs cannot hang the suite)."""
    done = threading.Event()

    def run() -> None:
        try:
            work()
        finally:
            done.set()

    threading.Thread(target=run, name=name, daemon=True).start()
    return done.wait(seconds)


def call_outcome(call: Callable[[], object]) -> str:
    """What ``call`` did, for a clause that wants an OSError: "returned", "OSError <text>", or
    the other exception's type and text (which fails the clause)."""
    try:
        call()
    except OSError as exc:
        return f"OSError {exc}"
    except Exception as exc:  # the clause wants an OSError; anything else fails it
        return f"{type(exc).__name__}: {exc}"
    return "returned"


def outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    """("returned", result), ("OSError", text) or ("raised", text) of ``call``."""
    try:
        return ("returned", call())
    except OSError as error:
        return ("OSError", f"{type(error).__name__}: {error}")
    except Exception as error:
        return ("raised", f"{type(error).__name__}: {error}")


def _first_checkpoint(box: dict[str, Any]) -> tuple[Any, Any]:
    """Checkpoint 1 of ``box["storage"]`` for job ``box["job_id"]``, its base locations set
    up: its location and its stream factory."""
    access = box["storage"].create_checkpoint_storage(box["job_id"])
    access.initialize_base_locations_for_checkpoint()
    location = access.initialize_location_for_checkpoint(1)
    return location, access.resolve_checkpoint_storage_location(1, location.location_reference)


#: What a child process of :func:`under_file_size_limit` runs before its script: ``box`` (the
#: pickle on its stdin), ``limit_file_size(n)`` (from then on a write beyond byte ``n`` of a
#: local file fails with EFBIG, as on a full disk; SIGXFSZ is ignored), ``outcome(call)``,
#: ``_first_checkpoint(box)`` and ``CheckpointedStateScope``.
LIMITED_CHILD_PRELUDE = (
    """
from __future__ import annotations

import pickle, resource, signal, sys

from ckptstore.api import CheckpointedStateScope

def limit_file_size(size):
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, hard))

"""
    + inspect.getsource(outcome)
    + "\n"
    + inspect.getsource(_first_checkpoint)
    + """
box = pickle.load(sys.stdin.buffer)
"""
)


def under_file_size_limit(
    clause: str, sandbox: Any, script: str, box: dict[str, Any]
) -> dict[str, Any]:
    """Run ``script`` in a fresh interpreter after :data:`LIMITED_CHILD_PRELUDE`, with this
    process's import path, and return the dict it pickles to its stdout (``out``).

    A file size limit (``RLIMIT_FSIZE``) makes writes of local files fail part-way, as a full
    disk does, without root; it holds for the child's own writes only, so only the local
    backend's can fail this way (elsewhere: a skip with the reason)."""
    if sandbox.backend.scheme != "file" or not hasattr(signal, "SIGXFSZ"):
        pytest.skip("a file size limit of a child process fails writes of local files only")
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    script += "\nsys.stdout.buffer.write(pickle.dumps(out))\n"
    child = subprocess.run(
        [sys.executable, "-c", LIMITED_CHILD_PRELUDE + script],
        input=pickle.dumps(box),
        capture_output=True,
        env=environ,
        timeout=180,
        check=False,
    )
    require(
        child.returncode == 0,
        clause,
        fail_message(clause, "a child process under a file size limit", sandbox)
        + "\nchild stderr:\n"
        + child.stderr.decode(errors="replace")[-4000:],
    )
    return dict(pickle.loads(child.stdout))


def closed_port() -> int:
    """A port on 127.0.0.1 that nobody listens on (bound, then released): an endpoint there
    refuses connections."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --------------------------------------------------------------------------- backend paths


def join(url: str, *parts: str) -> str:
    return "/".join([url.rstrip("/"), *(p.strip("/") for p in parts)])


def parent(url: str) -> str:
    """The URL of the directory that holds ``url`` (a trailing '/' on ``url`` is ignored)."""
    return url.rstrip("/").rsplit("/", 1)[0]


def _raw(sandbox: Any, url: str) -> str:
    return str(sandbox.raw_path(url)).rstrip("/")


def same_location(sandbox: Any, a: str, b: str) -> bool:
    """Whether two URLs name the same place on the backend."""
    return _raw(sandbox, a) == _raw(sandbox, b)


def files_below(sandbox: Any, url: str) -> list[str]:
    """Raw paths of every file below ``url`` (empty when nothing is there)."""
    try:
        return sorted(_raw(sandbox, f) for f in sandbox.files(url))
    except FileNotFoundError:
        return []


#: Backends already warned that their server cannot list multipart uploads.
_NO_UPLOAD_LISTING: set[str] = set()


def open_uploads_below(sandbox: Any, url: str) -> list[str]:
    """The keys of multipart uploads still open below ``url`` on an S3 backend (s3fs's raw
    client), aborted here so that none outlives the test; [] on other backends, and on a
    server without ListMultipartUploads (s3rver: 501), said once per backend in a warning."""
    backend = sandbox.backend
    raw = backend.raw
    if backend.scheme != "s3" or not hasattr(raw, "call_s3"):
        return []
    bucket, key, _ = raw.split_path(sandbox.raw_path(url))
    try:
        return abort_open_uploads(raw, bucket, key.rstrip("/") + "/")
    except OSError as exc:
        if s3_error_code(exc) not in ("NotImplemented", "MethodNotAllowed"):
            raise
    if backend.name not in _NO_UPLOAD_LISTING:
        _NO_UPLOAD_LISTING.add(backend.name)
        warnings.warn(
            f"ckptconform: the {backend.name} server does not implement ListMultipartUploads: "
            "open multipart uploads can be neither found nor aborted there, so the checks "
            "that none is left open hold vacuously on this leg",
            stacklevel=2,
        )
    return []


def rel_paths(sandbox: Any, url: str) -> tuple[list[str], list[str]]:
    """Files and directories below ``url``, relative to it (directories: only where they exist)."""
    base = _raw(sandbox, url)
    files = [p[len(base) + 1 :] for p in files_below(sandbox, url) if p.startswith(base + "/")]
    dirs: list[str] = []
    if not sandbox.backend.object_store:
        try:
            found = sandbox.backend.raw.find(base, withdirs=True, detail=True)
        except FileNotFoundError:
            found = {}
        for path, info in found.items():
            path = str(path).rstrip("/")
            if info.get("type") == "directory" and path.startswith(base + "/"):
                dirs.append(path[len(base) + 1 :])
    return sorted(files), sorted(dirs)


@contextmanager
def second_route(backend: Any) -> Iterator[Any]:
    """``backend.open_route()``: a second endpoint to the backend's server for one block (a
    counting proxy with its own ledger), or a skip with its reason where the backend has none."""
    if not hasattr(backend, "open_route"):
        pytest.skip(f"the {backend.name} backend offers no second route to its server")
    with backend.open_route() as route:
        yield route


@contextmanager
def second_bucket(backend: Any, prefix: str = "ckptconform-") -> Iterator[str]:
    """``backend.fresh_bucket(prefix)``: the URL of a new, empty bucket on the backend's server
    for one block, removed afterwards; a skip with the reason where the backend offers none
    (local, memory, sftp) or may not create one (credentials without that right)."""
    fresh = getattr(backend, "fresh_bucket", None)
    if fresh is None:
        pytest.skip(f"the {backend.name} backend offers no second bucket on its server")
    with ExitStack() as stack:
        try:
            name = stack.enter_context(fresh(prefix))
        except BackendUnavailableError as exc:
            pytest.skip(f"no second bucket: {exc}")
        yield backend.url_of(name)


def routed_options(backend: Any, route: Any) -> dict[str, Any]:
    """``make_storage`` options that reach the backend's server through ``route``."""
    return {"storage_options": {**backend.storage_options, "endpoint_url": route.url}}


@contextmanager
def unconditional_route(backend: Any) -> Iterator[Any]:
    """:func:`second_route` to the backend's server whose ledger removes If-None-Match: a
    server that ignores conditional writes (only where the backend accepts any credentials,
    as the header is signed)."""
    with second_route(backend) as route, route.ledger.ignoring_conditional_writes():
        yield route


def unconditional_options(backend: Any, route: Any) -> dict[str, Any]:
    """:func:`routed_options`, opted in to finalizing where conditional writes are ignored."""
    return {**routed_options(backend, route), UNCONDITIONAL_METADATA: True}


def require_conditional_writes(backend: Any) -> None:
    """Skip, with the reason, where the backend's server ignores conditional writes: no
    storage can create _metadata exclusively there, so racing finalizations cannot all be
    decided (MD-13 says what holds there instead)."""
    if backend.conditional_writes is False:
        pytest.skip(
            f"the {backend.name} server ignores conditional writes (If-None-Match): no storage "
            "can create _metadata exclusively there (MD-13 holds instead)"
        )


#: botocore's own setting for the endpoint of every S3 client, read when a client is made.
S3_ENDPOINT_VARIABLE = "AWS_ENDPOINT_URL_S3"


def process_wide_configuration(backend: Any, route: str) -> tuple[dict[str, str], str | None]:
    """Environment variables that configure the backend's scheme for a whole process to reach
    its server through ``route`` (fsspec's ``FSSPEC_<SCHEME>_<OPTION>``; for S3 botocore's
    :data:`S3_ENDPOINT_VARIABLE` and keys as well), and the access key that then signs the
    requests: a key of their own where the server accepts any, else ``None`` (the backend's).
    """
    options = backend.storage_options
    key, secret, expected = options.get("key"), options.get("secret"), None
    if backend.accepts_any_credentials:
        key = expected = f"ckptconform-env-{random_name(8)}"
        secret = random_name(24)
    scheme = backend.scheme.upper()
    environ = {f"FSSPEC_{scheme}_ENDPOINT_URL": route}
    if key is not None and secret is not None:
        environ.update({f"FSSPEC_{scheme}_KEY": key, f"FSSPEC_{scheme}_SECRET": secret})
    if backend.scheme == "s3":
        environ[S3_ENDPOINT_VARIABLE] = route
        if key is not None and secret is not None:
            environ.update(AWS_ACCESS_KEY_ID=key, AWS_SECRET_ACCESS_KEY=secret)
    return environ, expected


def check_reads_took_route(
    clause: str,
    sandbox: Any,
    via_route: Any,
    at_server: Any,
    files: int,
    signing_key: str | None,
    **inputs: Any,
) -> None:
    """Every GetObject of ``files`` file-backed handles went through the configured route
    (its ledger ``via_route`` counts as many as the server's ``at_server``, at least one per
    file), signed with ``signing_key`` where one is expected."""
    gets = via_route.filter(operation="GetObject")
    where = (
        f"\n{len(gets)} GetObject through the configured route, "
        f"{at_server.count(operation='GetObject')} at the server, for {files} file-backed "
        f"handles\nat the server:\n{at_server.summary()}"
    )
    with tagged(clause, "which endpoint the reads took", sandbox, **inputs):
        assert len(gets) >= files, where
        assert at_server.count(operation="GetObject") == len(gets), where
    if signing_key is not None and gets:
        keys = {request.access_key for request in gets}
        with tagged(clause, "which credentials signed the reads", sandbox, **inputs):
            assert keys == {signing_key}, (
                f"signed with {sorted(map(str, keys))}, the configured key is {signing_key}"
            )


def endpointless_options(backend: Any, *, own_key: bool = False) -> dict[str, Any]:
    """The backend's storage_options with no endpoint in them (neither ``endpoint_url`` nor
    ``client_kwargs['endpoint_url']``): an S3 client then takes its endpoint from botocore's
    configuration, such as :data:`S3_ENDPOINT_VARIABLE`.

    With ``own_key`` they carry a key and secret of their own: an implementation may keep one
    file system per options, and the environment is no option, so options that no other test
    uses keep a file system made under another value of the variable from serving them.
    """
    options = dict(backend.storage_options)
    options.pop("endpoint_url", None)
    client_kwargs = dict(options.pop("client_kwargs", None) or {})
    client_kwargs.pop("endpoint_url", None)
    if client_kwargs:
        options["client_kwargs"] = client_kwargs
    if own_key:
        options.update(key=f"ckptconform-env-{random_name(8)}", secret=random_name(24))
    return options


def put_file(sandbox: Any, url: str, data: bytes) -> None:
    """Write a file on the backend, raw (bypassing the implementation), with its directories
    on file systems that have them."""
    raw = sandbox.backend.raw
    if not sandbox.backend.object_store:
        raw.makedirs(sandbox.raw_path(parent(url)), exist_ok=True)
    raw.pipe_file(sandbox.raw_path(url), data)


def move_tree(sandbox: Any, source: str, destination: str) -> None:
    """Move a directory on the backend (raw copy of every file, then delete the source)."""
    raw = sandbox.backend.raw
    base = sandbox.raw_path(source)
    for path in files_below(sandbox, source):
        put_file(sandbox, join(destination, path[len(base) + 1 :]), raw.cat_file(path))
    raw.rm(base, recursive=True)


def is_dir(sandbox: Any, url: str) -> bool:
    try:
        return bool(sandbox.backend.raw.isdir(_raw(sandbox, url)))
    except FileNotFoundError:
        return False


# --------------------------------------------------------------------------- the driver


class JobDriver:
    """One job on one storage: coordinator and worker steps, with the inputs remembered."""

    def __init__(
        self,
        sandbox: Any,
        storage: Any = None,
        job_id: JobID | None = None,
        **options: Any,
    ) -> None:
        self.sandbox = sandbox
        self.options = dict(options)
        self.storage = storage if storage is not None else sandbox.make_storage(**options)
        self.job_id = job_id or JobID.generate()
        self.access = self.storage.create_checkpoint_storage(self.job_id)
        self.checkpoint_dir = options.get("checkpoint_dir", sandbox.checkpoint_dir)
        self.savepoint_dir = options.get("savepoint_dir", sandbox.savepoint_dir)

    # -- layout (meaningful for targets that claim file-layout)
    @property
    def job_dir(self) -> str:
        return join(self.checkpoint_dir, str(self.job_id))

    def chk_dir(self, checkpoint_id: int) -> str:
        return join(self.job_dir, f"chk-{checkpoint_id}")

    # -- coordinator
    def init_base(self) -> None:
        self.access.initialize_base_locations_for_checkpoint()

    def location(self, checkpoint_id: int) -> Any:
        return self.access.initialize_location_for_checkpoint(checkpoint_id)

    def finalize(self, location: Any, metadata: bytes) -> Any:
        stream = location.create_metadata_output_stream()
        try:
            write_chunks(stream, metadata)
            return stream.close_and_finalize_checkpoint()
        except BaseException:
            stream.close()
            raise

    # -- worker
    def worker(self, checkpoint_id: int, reference: Any = None) -> Any:
        """The worker's factory for a checkpoint, resolved from a reference (default: default)."""
        return self.access.resolve_checkpoint_storage_location(
            checkpoint_id, DEFAULT_REF if reference is None else reference
        )

    def write(
        self,
        factory: Any,
        data: bytes,
        scope: CheckpointedStateScope = EXCLUSIVE,
        sizes: Sequence[int] | None = None,
    ) -> Any:
        return write_state(factory, data, scope, sizes)

    def task_owned(self, data: bytes, sizes: Sequence[int] | None = None) -> Any:
        stream = self.access.create_task_owned_state_stream()
        try:
            write_chunks(stream, data, sizes)
            return stream.close_and_get_handle()
        except BaseException:
            stream.close()
            raise

    # -- whole checkpoints
    def checkpoint(
        self,
        checkpoint_id: int,
        exclusive: Iterable[bytes] = (),
        shared: Iterable[bytes] = (),
        metadata: bytes | None = None,
    ) -> tuple[Any, list[tuple[Any, bytes]]]:
        """Initialize, write state as a worker, finalize; return (completed, [(handle, bytes)]).

        ``_metadata`` is ``metadata``, else Flink's metadata of the written state
        (:func:`job_metadata`)."""
        location = self.location(checkpoint_id)
        factory = self.worker(checkpoint_id, location.location_reference)
        states = [(EXCLUSIVE, self.write(factory, d, EXCLUSIVE), d) for d in exclusive]
        states += [(SHARED, self.write(factory, d, SHARED), d) for d in shared]
        written = [(h, d) for _, h, d in states]
        meta = metadata
        if meta is None:
            meta = job_metadata(checkpoint_id, [(scope.value, h) for scope, h, _ in states])
        completed = self.finalize(location, meta)
        return completed, written

    def fresh_storage(self) -> Any:
        """A new storage instance from the same configuration (no state shared in memory)."""
        return self.sandbox.make_storage(**self.options)

    def pickled_storage(self) -> Any:
        return roundtrip(self.storage, "SER-1", "the storage")


#: The two ways a test's storage can be made: with the sandbox's checkpoint directory, and
#: without one (checkpoint_dir=None, capability in-memory-checkpoints: Flink's
#: JobManagerCheckpointStorage then keeps completed checkpoints in memory).
CHECKPOINT_DIRS = (
    "configured",
    pytest.param("none", marks=pytest.mark.requires("in-memory-checkpoints")),
)


def driver_with(sandbox: Any, target: Any, checkpoint_dir: str, **options: Any) -> JobDriver:
    """A ``JobDriver`` on a storage made with the sandbox's checkpoint directory
    (``"configured"``) or without one (``"none"``)."""
    options = {**file_options(target), **options}
    if checkpoint_dir == "none":
        options["checkpoint_dir"] = None
    return JobDriver(sandbox, **options)
