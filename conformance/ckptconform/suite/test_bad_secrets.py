"""BAD: secrets are never shown, in errors, reprs and log records, whatever fails."""

from __future__ import annotations

import contextlib
import logging
import secrets
import string
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pytest

from ckptconform.backends.base import random_name
from ckptconform.sandbox import UNCONDITIONAL_METADATA
from ckptconform.suite._bad_inputs import (
    show,
)
from ckptconform.suite._bad_world import (
    report,
)
from ckptconform.suite._driver import (
    DEFAULT_REF,
    EXCLUSIVE,
    SHARED,
    JobDriver,
    closed_port,
    file_options,
    join,
    payload,
    read_handle,
    tagged,
    unconditional_route,
    within,
)
from ckptstore.api import JobID

# --------------------------------------------------------------------------- BAD-8: secrets


def _chain(error: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and all(current is not e for e in seen):
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


class SecretWatch:
    """Collects the text the implementation shows (reprs, strs, error messages) per step."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self.secrets = [s for s in secrets if s]
        self.leaks: list[str] = []
        self.steps = 0

    def text(self, step: str, what: str, text: str) -> None:
        found = [s for s in self.secrets if s in text]
        if found:
            self.leaks.append(f"  {step}: {what} shows {found}: {show(text, 240)}")

    def obj(self, step: str, value: Any) -> None:
        for what, render in (("repr", repr), ("str", str)):
            try:
                text = render(value)
            except Exception as exc:
                self.leaks.append(f"  {step}: {what}() of {type(value).__name__} raised "
                                  f"{type(exc).__name__} instead of returning text")  # fmt: skip
                self.error(f"{step} ({what})", exc)
                continue
            self.text(step, f"{what}() of {type(value).__name__}", text)

    def error(self, step: str, error: BaseException) -> None:
        for link in _chain(error):
            self.text(step, f"error {type(link).__name__}", f"{link!s} {link!r}")

    def run(self, step: str, call: Callable[[], Any]) -> Any:
        """Call, and watch what comes back or what is raised (errors are allowed here)."""
        self.steps += 1
        try:
            result = call()
        except Exception as exc:
            self.error(step, exc)
            return None
        if result is not None:
            self.obj(step, result)
        return result


def _exercise(watch: SecretWatch, sandbox: Any, target: Any, storage: Any, reachable: bool) -> None:
    """Every kind of object and error of the contract, with the watch on."""
    watch.obj("the storage", storage)
    access = watch.run(
        "create_checkpoint_storage", lambda: storage.create_checkpoint_storage(JobID.generate())
    )
    if access is None:
        return
    watch.run(
        "initialize_base_locations_for_checkpoint", access.initialize_base_locations_for_checkpoint
    )
    location = watch.run(
        "initialize_location_for_checkpoint", lambda: access.initialize_location_for_checkpoint(1)
    )
    factory = watch.run(
        "resolve_checkpoint_storage_location",
        lambda: access.resolve_checkpoint_storage_location(1, DEFAULT_REF),
    )
    handles = []
    for scope_name, make in (
        ("exclusive", lambda: factory.create_checkpoint_state_output_stream(EXCLUSIVE)),
        ("shared", lambda: factory.create_checkpoint_state_output_stream(SHARED)),
        ("task-owned", access.create_task_owned_state_stream),
    ):
        if scope_name != "task-owned" and factory is None:
            continue
        for size in (10, 3000):
            stream = watch.run(f"a {scope_name} stream", make)
            if stream is None:
                continue
            watch.run(
                f"{scope_name} write({size} bytes)", lambda s=stream, n=size: s.write(payload(n))
            )
            handle = watch.run(f"{scope_name} close_and_get_handle", stream.close_and_get_handle)
            watch.run(f"{scope_name} close", stream.close)
            if handle is not None:
                handles.append(handle)
    watch.run("the task-owned toolset", access.create_task_owned_checkpoint_state_toolset)
    completed = None
    if location is not None:
        metadata = watch.run(
            "create_metadata_output_stream", location.create_metadata_output_stream
        )
        if metadata is not None:
            watch.run("metadata write", lambda: metadata.write(b"secret-free metadata"))
            completed = watch.run(
                "close_and_finalize_checkpoint", metadata.close_and_finalize_checkpoint
            )
            watch.run("metadata close", metadata.close)
    if completed is not None:
        watch.obj("metadata_handle", completed.metadata_handle)
        resolved = watch.run(
            "resolve_checkpoint", lambda: storage.resolve_checkpoint(completed.external_pointer)
        )
        for handle in handles:
            if resolved is not None:
                watch.run("resolve_handle", lambda h=handle: resolved.resolve_handle(h))
            watch.run("read a handle", lambda h=handle: read_handle(h))
    watch.run(
        "resolve_checkpoint of a missing checkpoint",
        lambda: storage.resolve_checkpoint(join(sandbox.checkpoint_dir, "missing", "chk-1")),
    )
    if "savepoints" in target.capabilities:
        watch.run(
            "initialize_location_for_savepoint",
            lambda: access.initialize_location_for_savepoint(2, join(sandbox.root, "sp-secret")),
        )
    if completed is not None and reachable:
        watch.run("dispose_storage_location", completed.dispose_storage_location)


class _Collected(logging.Handler):
    """Keeps every record it is handed."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextlib.contextmanager
def own_log_records(*owners: Any) -> Iterator[list[logging.LogRecord]]:
    """The records, at every level, of the loggers named under the top-level packages of
    ``owners``' classes (the target's and the storage's: the implementation's own loggers,
    not its client libraries')."""
    packages = dict.fromkeys(type(owner).__module__.split(".")[0] for owner in owners)
    collected = _Collected()
    loggers = [logging.getLogger(package) for package in packages]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(collected)
        logger.setLevel(logging.DEBUG)
    try:
        yield collected.records
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.removeHandler(collected)
            logger.setLevel(level)


def _watch_records(watch: SecretWatch, records: list[logging.LogRecord]) -> None:
    for record in records:
        try:
            text = record.getMessage()
        except Exception:  # a broken format string: its parts are still shown by logging
            text = f"{record.msg} {record.args}"
        watch.text(f"log record of {record.name}", f"a {record.levelname} record", text)


#: How long the unreachable phase may take before its remaining steps are abandoned (bounding
#: the time of requests is SPK-6's and the REQ clauses' business, not this clause's).
UNREACHABLE_PHASE_SECONDS = 20.0


@pytest.mark.clause("BAD-8")
@pytest.mark.backend_traits(object_store=True)
def test_no_secret_is_shown(sandbox, target, backend):
    """BAD-8: reprs and error messages never show the configuration's secrets."""
    # an apostrophe may stand unencoded in userinfo (RFC 3986 sub-delims): patterns that
    # look for userinfo stop there, only the value itself finds the rest
    password = f"ckptconform-pass'word-{random_name(12)}"
    proxy_password = f"ckptconform-proxy-{random_name(12)}"
    secret = f"ckptconform-secret-{random_name(12)}"
    token = f"ckptconform-token-{random_name(12)}"
    query_token = f"ckptconform-query-token-{random_name(12)}"
    query_sig = f"ckptconform-query-sig-{random_name(12)}"
    # four characters, the shortest secret a redaction by value must still find
    short_password = f"{secrets.choice(string.digits)}'{random_name(2)}"
    # a password that holds another secret (the session token) and sorts before it: blanking
    # the token first would leave the rest of the password, this tail, in the text
    overlap_tail = f"-ckptconform-tail-{random_name(12)}"
    overlapping = f"{secrets.choice(string.digits)}'{token}{overlap_tail}"
    watch = SecretWatch(
        [password, proxy_password, secret, token, query_token, query_sig, short_password,
         overlapping, overlap_tail]
    )  # fmt: skip
    endpoint = f"127.0.0.1:{closed_port()}"
    proxy = f"http://ckptconform:{proxy_password}@127.0.0.1:{closed_port()}"
    base = dict(backend.storage_options)
    with_secrets = {
        **base,
        "key": f"ckptconform-key-{random_name(8)}",
        "secret": secret,
        "client_kwargs": {**base.get("client_kwargs", {}), "aws_session_token": token},
    }
    options = dict(file_options(target))
    if "retry-budget" in target.capabilities:
        options.update(retry_attempts=1, retry_seconds=5)  # refused requests end quickly
    unreachable = {
        **with_secrets,
        "endpoint_url": f"http://ckptconform:{password}@{endpoint}",
        "config_kwargs": {
            **base.get("config_kwargs", {}),
            "proxies": {"http": proxy, "https": proxy},
        },
    }
    phases = {
        "secrets in storage_options": unreachable,
        # the shape of presigned and SAS URLs: secrets in the endpoint's query string
        "secrets in the endpoint's query": {
            **with_secrets,
            "endpoint_url": f"http://{endpoint}/?X-Amz-Security-Token={query_token}"
            f"&sig={query_sig}",
        },
        # unsigned requests reach the socket, and the client's error quotes the whole URL
        "unsigned requests to an endpoint with userinfo": {
            **with_secrets,
            "anon": True,
            "endpoint_url": f"http://ckptconform:{short_password}@{endpoint}",
        },
        "unsigned requests to an endpoint whose password holds the session token": {
            **with_secrets,
            "anon": True,
            "endpoint_url": f"http://ckptconform:{overlapping}@{endpoint}",
        },
    }
    notes = []
    for phase, storage_options in phases.items():
        with tagged("BAD-8", f"make_storage with {phase}", endpoint=endpoint):
            storage = sandbox.make_storage(storage_options=storage_options, **options)
        with own_log_records(target, storage) as records:
            if not within(
                UNREACHABLE_PHASE_SECONDS,
                lambda made=storage: _exercise(watch, sandbox, target, made, False),
            ):
                notes.append(f"(steps with {phase} abandoned after "
                             f"{UNREACHABLE_PHASE_SECONDS:g} s)")  # fmt: skip
            _watch_records(watch, records)
    leaks = list(watch.leaks)
    if backend.accepts_any_credentials:
        reachable = with_secrets
    else:  # the server's own secret, where the suite has one (a key id is not a secret)
        reachable = base
        watch.secrets += [str(base[k]) for k in ("secret", "token") if base.get(k)]
        watch.secrets = [s for s in watch.secrets if s != str(base.get("key"))]
    watch.leaks = []
    with tagged("BAD-8", "make_storage with secrets on the backend's endpoint"):
        storage = sandbox.make_storage(storage_options=reachable, **options)
    with own_log_records(target, storage) as records:
        _exercise(watch, sandbox, target, storage, reachable=True)
        _watch_records(watch, records)
    leaks += watch.leaks
    assert not leaks, report(
        "BAD-8", "reprs and errors with secrets configured", leaks + notes, watch.steps, "steps",
        endpoint=endpoint,
    )  # fmt: skip


#: storage_options keys whose values are a backend's own secrets (BAD-8 on every leg)
BACKEND_SECRET_KEYS = ("password", "secret", "token")


@pytest.mark.clause("BAD-8")
def test_reprs_are_text_without_the_backends_secret(sandbox, target, backend):
    """BAD-8: on every backend, with the backend's own settings, reprs and errors of the
    contract's objects are text and show none of the backend's secrets."""
    watch = SecretWatch(
        str(value)
        for key, value in backend.storage_options.items()
        if any(part in key.lower() for part in BACKEND_SECRET_KEYS) and value
    )
    with tagged("BAD-8", "make_storage with the backend's settings"):
        storage = sandbox.make_storage(**file_options(target))
    with own_log_records(target, storage) as records:
        _exercise(watch, sandbox, target, storage, reachable=True)
        _watch_records(watch, records)
    assert not watch.leaks, report(
        "BAD-8", "reprs and errors with the backend's settings", watch.leaks, watch.steps,
        "steps",
    )  # fmt: skip


def _watch_formatted_records(watch: SecretWatch, records: list[logging.LogRecord]) -> None:
    """Like :func:`_watch_records`, but a record whose getMessage() raises is a finding: the
    handler that formats it would print a traceback in its place."""
    for record in records:
        try:
            text = record.getMessage()
        except Exception as exc:
            watch.leaks.append(f"  log record of {record.name}: getMessage() of a "
                               f"{record.levelname} record raised {type(exc).__name__}: "
                               f"{show(str(exc), 120)}")  # fmt: skip
            continue
        watch.text(f"log record of {record.name}", f"a {record.levelname} record", text)


def _recover_lost_answer_and_unlisted_uploads(drv: JobDriver, ledger: Any) -> None:
    """REQ-4's fault (the first PutObject of _metadata committed, its answer lost) at the
    finalization of checkpoint 1, then REQ-11's (ListMultipartUploads answered 501) at its
    disposal; both are recovered from, so both calls must succeed."""
    with tagged("BAD-8", "finalize while the answer to _metadata's PutObject is lost"):
        drv.init_base()
        location = drv.location(1)
        ledger.inject(
            "PutObject", drop_connection=True, after_commit=True, times=1, key_contains="_metadata"
        )
        try:
            completed = drv.finalize(location, b"metadata of a lost answer")
        finally:
            ledger.clear_faults()
    with tagged("BAD-8", "dispose while ListMultipartUploads is answered 501"):
        ledger.inject("ListMultipartUploads", status=501, code="NotImplemented", times=None)
        try:
            completed.dispose_storage_location()
        finally:
            ledger.clear_faults()


def _finalize_where_conditional_writes_are_ignored(
    sandbox: Any, target: Any, backend: Any, storage_options: dict[str, Any]
) -> None:
    """A checkpoint finalized through a second route to the server, one that the storage has
    not used yet, which ignores conditional writes (what MD-3 asks a storage to notice)."""
    with (
        unconditional_route(backend) as route,
        tagged("BAD-8", "finalize where conditional writes are ignored"),
    ):
        routed = {**storage_options, "endpoint_url": route.url}
        drv = JobDriver(
            sandbox,
            storage_options=routed,
            **file_options(target),
            **{UNCONDITIONAL_METADATA: True},
        )
        drv.init_base()
        drv.finalize(drv.location(2), b"metadata where conditional writes are ignored")


@pytest.mark.clause("BAD-8")
@pytest.mark.backend_traits(object_store=True, any_credentials=True, ledger=True)
def test_no_secret_in_the_records_of_recovered_faults(sandbox, target, backend, ledger):
    """BAD-8: with a secret key and session token in the storage options, the records of the
    implementation's own loggers, at every level, while it recovers from a lost answer, an
    unimplemented ListMultipartUploads and a server that ignores conditional writes, are
    formatted without error and show neither secret."""
    secret = f"ckptconform-secret-{random_name(12)}"
    token = f"ckptconform-token-{random_name(12)}"
    watch = SecretWatch([secret, token])
    base = dict(backend.storage_options)
    with_secrets = {
        **base,
        "key": f"ckptconform-key-{random_name(8)}",
        "secret": secret,
        "client_kwargs": {**base.get("client_kwargs", {}), "aws_session_token": token},
    }
    with tagged("BAD-8", "make_storage with a secret key and session token"):
        drv = JobDriver(sandbox, storage_options=with_secrets, **file_options(target))
    with own_log_records(target, drv.storage) as records:
        _recover_lost_answer_and_unlisted_uploads(drv, ledger)
        _finalize_where_conditional_writes_are_ignored(sandbox, target, backend, with_secrets)
        _watch_formatted_records(watch, records)
    levels = sorted({record.levelname for record in records})
    assert not watch.leaks, report(
        "BAD-8", "log records while faults are recovered from, with secrets configured",
        watch.leaks, len(records), f"record(s) of the implementation's own loggers {levels}",
    )  # fmt: skip
