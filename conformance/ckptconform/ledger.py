"""The S3 request ledger: a WSGI middleware that sees every request reaching an S3 server.

The suite serves moto through this middleware, so it counts requests from any process (a
subprocess, a Spark executor) and not only the ones the test's own client sends. Each request is
classified into an S3 operation from its method, path and query (path-style addressing: the
bucket is the first path segment). Tests count inside a block::

    with ledger.record() as rec:
        stream.close_and_get_handle()
    assert rec.count(operation="PutObject") == 1, rec.summary()

The ledger also injects faults (S3-style XML errors, dropped connections) and emulates
per-operation rate limits. Requests sent by the suite's own raw file system carry the
``RAW_USER_AGENT`` marker: they are recorded (``Recording.all_requests``) but left out of
``Recording.requests`` and counts, and faults never hit them, so inspecting or cleaning the
backend cannot disturb a measurement. The middleware speaks plain WSGI and needs only the
standard library.
"""

from __future__ import annotations

import contextlib
import itertools
import re
import socket
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote

__all__ = [
    "OPERATIONS",
    "RAW_USER_AGENT",
    "Fault",
    "Recording",
    "Request",
    "RequestLedger",
    "access_key_of",
    "classify",
]

#: Marker in the User-Agent of the suite's own raw file system (see ``backends.base``).
RAW_USER_AGENT = "ckptconform-raw"

OPERATIONS = (
    "PutObject",
    "GetObject",
    "HeadObject",
    "HeadBucket",
    "ListObjectsV2",
    "ListObjects",
    "DeleteObject",
    "DeleteObjects",
    "CopyObject",
    "CreateMultipartUpload",
    "UploadPart",
    "CompleteMultipartUpload",
    "AbortMultipartUpload",
    "CreateBucket",
    "Other",
)

# Sub-resources that turn a bucket or object request into an operation we do not track.
_OTHER_SUBRESOURCES = frozenset(
    {
        "acl", "accelerate", "analytics", "cors", "encryption", "intelligent-tiering",
        "inventory", "legal-hold", "lifecycle", "location", "logging", "metrics",
        "notification", "object-lock", "ownershipControls", "policy", "policyStatus",
        "publicAccessBlock", "replication", "requestPayment", "restore", "retention",
        "select", "tagging", "torrent", "versioning", "versions", "website", "attributes",
    }
)  # fmt: skip

StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


@dataclass(frozen=True, slots=True)
class Request:
    """One HTTP request as the server saw it."""

    time: float
    method: str
    bucket: str | None
    key: str | None
    query: str
    operation: str
    client: str = ""
    raw: bool = False
    pid: int | None = None
    fault: str | None = None
    #: the access key id the request was signed with (never the secret), when it was signed
    access_key: str | None = None

    def __str__(self) -> str:
        where = "/" + "/".join(p for p in (self.bucket, self.key) if p is not None)
        query = f"?{self.query}" if self.query else ""
        flags = " [raw]" if self.raw else ""
        flags += f" [fault: {self.fault}]" if self.fault else ""
        return f"{self.operation:<24} {self.method:<6} {where}{query}{flags}"


def classify(
    method: str, path: str, query: str, headers: dict[str, str] | None = None
) -> tuple[str | None, str | None, str]:
    """Return ``(bucket, key, operation)`` of a path-style S3 request.

    ``path`` is the decoded URL path, ``query`` the raw query string, ``headers`` lower-case
    header names to values (only ``x-amz-copy-source`` matters).
    """
    headers = headers or {}
    method = method.upper()
    trimmed = path.lstrip("/")
    bucket, _, key = trimmed.partition("/")
    bucket_or_none = bucket or None
    key_or_none = key if "/" in trimmed and key != "" else None
    params = parse_qs(query, keep_blank_values=True)
    if bucket_or_none is None:
        return None, None, "Other"
    if params.keys() & _OTHER_SUBRESOURCES:
        return bucket_or_none, key_or_none, "Other"
    if key_or_none is None:
        operation = _bucket_operation(method, params)
    else:
        operation = _object_operation(method, params, "x-amz-copy-source" in headers)
    return bucket_or_none, key_or_none, operation


_SIGV4_CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/")
_SIGV2 = re.compile(r"^AWS ([^:\s]+):")


def access_key_of(authorization: str, query: str = "") -> str | None:
    """The access key id of a SigV4 or SigV2 ``Authorization`` header or presigned query."""
    match = _SIGV4_CREDENTIAL.search(authorization) or _SIGV2.match(authorization)
    if match:
        return match.group(1)
    credential = parse_qs(query).get("X-Amz-Credential")
    if credential:
        return credential[0].split("/", 1)[0] or None
    return None


def _bucket_operation(method: str, params: dict[str, list[str]]) -> str:
    if method == "HEAD":
        return "HeadBucket"
    if method == "GET":
        if "uploads" in params:
            return "Other"
        return "ListObjectsV2" if params.get("list-type") == ["2"] else "ListObjects"
    if method == "PUT":
        return "CreateBucket" if not params else "Other"
    if method == "POST" and "delete" in params:
        return "DeleteObjects"
    return "Other"


def _object_operation(method: str, params: dict[str, list[str]], copy: bool) -> str:
    if method == "GET":
        return "Other" if "uploadId" in params else "GetObject"
    if method == "HEAD":
        return "HeadObject"
    if method == "PUT":
        if "partNumber" in params:
            return "Other" if copy else "UploadPart"
        return "CopyObject" if copy else "PutObject"
    if method == "POST":
        if "uploads" in params:
            return "CreateMultipartUpload"
        if "uploadId" in params:
            return "CompleteMultipartUpload"
        return "Other"
    if method == "DELETE":
        return "AbortMultipartUpload" if "uploadId" in params else "DeleteObject"
    return "Other"


@dataclass
class Recording:
    """The requests seen while a ``RequestLedger.record()`` block was open."""

    all_requests: list[Request] = field(default_factory=list)
    include_raw: bool = False

    @property
    def requests(self) -> list[Request]:
        """The requests of the block, without the suite's own raw ones (unless ``include_raw``)."""
        if self.include_raw:
            return list(self.all_requests)
        return [r for r in self.all_requests if not r.raw]

    def count(
        self,
        operation: str | Iterable[str] | None = None,
        method: str | None = None,
        key_contains: str | None = None,
    ) -> int:
        """How many requests match: an operation (or several), a method, a key substring."""
        return len(self.filter(operation, method, key_contains))

    def filter(
        self,
        operation: str | Iterable[str] | None = None,
        method: str | None = None,
        key_contains: str | None = None,
    ) -> list[Request]:
        """The matching requests, in arrival order."""
        ops = _operation_set(operation)
        return [
            r
            for r in self.requests
            if (ops is None or r.operation in ops)
            and (method is None or r.method == method.upper())
            and (key_contains is None or (r.key is not None and key_contains in r.key))
        ]

    def operations(self) -> Counter[str]:
        """Counts per operation."""
        return Counter(r.operation for r in self.requests)

    def summary(self, limit: int = 60) -> str:
        """A readable list of the requests, for assertion messages."""
        shown = self.all_requests if self.include_raw else self.requests
        if not shown:
            return "no requests reached the server"
        counts = ", ".join(
            f"{op}={n}" for op, n in sorted(Counter(r.operation for r in shown).items())
        )
        lines = [f"{len(shown)} request(s): {counts}"]
        lines += [f"  {i:>3}. {r}" for i, r in enumerate(shown[:limit], 1)]
        if len(shown) > limit:
            lines.append(f"  ... {len(shown) - limit} more")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def __len__(self) -> int:
        return len(self.requests)


def _operation_set(operation: str | Iterable[str] | None) -> frozenset[str] | None:
    if operation is None:
        return None
    ops = frozenset([operation] if isinstance(operation, str) else operation)
    unknown = ops - set(OPERATIONS)
    if unknown:
        raise ValueError(
            f"unknown S3 operation(s) {sorted(unknown)}; known: {', '.join(OPERATIONS)}"
        )
    return ops


@dataclass
class Fault:
    """An injected fault: which requests it hits, what it answers, how often."""

    operation: frozenset[str] | None
    method: str | None
    key_contains: str | None
    status: int
    code: str
    message: str
    times: int | None
    drop_connection: bool = False
    hits: int = 0

    def matches(self, request: Request) -> bool:
        return (
            (self.operation is None or request.operation in self.operation)
            and (self.method is None or request.method == self.method)
            and (self.key_contains is None or (request.key or "").find(self.key_contains) >= 0)
        )

    @property
    def exhausted(self) -> bool:
        return self.times is not None and self.hits >= self.times


@dataclass
class _RateLimit:
    operations: frozenset[str] | None
    per_second: float
    recent: deque[float] = field(default_factory=deque)


class RequestLedger:
    """Records, classifies and optionally sabotages every request to the wrapped WSGI app."""

    def __init__(self, app: WSGIApp | None = None) -> None:
        self.app = app
        self._lock = threading.Lock()
        self._log: list[Request] = []
        self._recordings: list[Recording] = []
        self._faults: list[Fault] = []
        self._limits: list[_RateLimit] = []
        self._ids = itertools.count(1)

    # ------------------------------------------------------------------ recording

    @property
    def requests(self) -> list[Request]:
        """Every request since the ledger started (or was cleared), raw ones included."""
        with self._lock:
            return list(self._log)

    def clear(self) -> None:
        """Forget the request log (open recordings keep what they have)."""
        with self._lock:
            self._log.clear()

    @contextlib.contextmanager
    def record(self, include_raw: bool = False) -> Iterator[Recording]:
        """Collect the requests that arrive while the block runs."""
        recording = Recording(include_raw=include_raw)
        with self._lock:
            self._recordings.append(recording)
        try:
            yield recording
        finally:
            with self._lock:
                self._recordings.remove(recording)

    # ------------------------------------------------------------------ faults

    def inject(
        self,
        operation: str | Iterable[str] | None = None,
        method: str | None = None,
        status: int = 503,
        code: str = "SlowDown",
        times: int | None = 1,
        *,
        key_contains: str | None = None,
        message: str | None = None,
        drop_connection: bool = False,
    ) -> Fault:
        """Answer the next ``times`` matching requests with an error (``None``: until cleared).

        The answer is an S3-style XML error with ``status`` and ``code``, or, with
        ``drop_connection``, a closed connection and no answer at all. Raw requests of the suite
        are never hit. Note that S3 clients retry 5xx answers on their own.
        """
        fault = Fault(
            operation=_operation_set(operation),
            method=method.upper() if method else None,
            key_contains=key_contains,
            status=status,
            code=code,
            message=message or f"injected by ckptconform: {code}",
            times=times,
            drop_connection=drop_connection,
        )
        with self._lock:
            self._faults.append(fault)
        return fault

    def rate_limit(self, per_second: float, operation: str | Iterable[str] | None = None) -> None:
        """Answer 503 SlowDown to matching requests beyond ``per_second`` in any one second."""
        if per_second <= 0:
            raise ValueError("per_second must be positive")
        with self._lock:
            self._limits.append(_RateLimit(_operation_set(operation), per_second))

    def clear_faults(self) -> None:
        """Remove every injected fault and rate limit."""
        with self._lock:
            self._faults.clear()
            self._limits.clear()

    # ------------------------------------------------------------------ WSGI

    def wrap(self, app: WSGIApp) -> RequestLedger:
        """Set the app this middleware serves; returns self."""
        self.app = app
        return self

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "") or "/"
        if self.app is None:
            raise RuntimeError("RequestLedger has no WSGI app to serve")
        if path.startswith("/moto-api"):
            return self.app(environ, start_response)
        method = environ.get("REQUEST_METHOD", "GET")
        query = environ.get("QUERY_STRING", "")
        headers = {"x-amz-copy-source": ""} if "HTTP_X_AMZ_COPY_SOURCE" in environ else {}
        # WSGI hands the path as latin-1 decoded bytes; S3 keys are UTF-8.
        decoded = unquote(path.encode("latin-1").decode("utf-8", "replace"))
        bucket, key, operation = classify(method, decoded, query, headers)
        raw = RAW_USER_AGENT in environ.get("HTTP_USER_AGENT", "")
        client = f"{environ.get('REMOTE_ADDR', '')}:{environ.get('REMOTE_PORT', '')}"
        request = Request(
            time.time(), method, bucket, key, query, operation, client, raw,
            access_key=access_key_of(environ.get("HTTP_AUTHORIZATION", ""), query),
        )  # fmt: skip
        with self._lock:
            fault = None if raw else self._take_fault(request)
            if fault is not None:
                request = _with_fault(request, fault)
            self._log.append(request)
            for recording in self._recordings:
                recording.all_requests.append(request)
        if fault is None:
            return self.app(environ, start_response)
        _drain(environ)
        if fault.drop_connection:
            sock = environ.get("werkzeug.socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            raise ConnectionAbortedError("connection dropped by an injected fault")
        return _error_response(start_response, fault, request, next(self._ids))

    def _take_fault(self, request: Request) -> Fault | None:
        for fault in self._faults:
            if not fault.exhausted and fault.matches(request):
                fault.hits += 1
                return fault
        now = time.monotonic()
        for limit in self._limits:
            if limit.operations is not None and request.operation not in limit.operations:
                continue
            while limit.recent and now - limit.recent[0] >= 1.0:
                limit.recent.popleft()
            if len(limit.recent) >= limit.per_second:
                return Fault(None, None, None, 503, "SlowDown", "rate limit (ckptconform)", None)
            limit.recent.append(now)
        return None


def _with_fault(request: Request, fault: Fault) -> Request:
    label = "dropped connection" if fault.drop_connection else f"{fault.status} {fault.code}"
    return Request(
        request.time, request.method, request.bucket, request.key, request.query,
        request.operation, request.client, request.raw, request.pid, label, request.access_key,
    )  # fmt: skip


def _drain(environ: dict[str, Any]) -> None:
    """Read the request body so the connection stays in a clean state."""
    stream = environ.get("wsgi.input")
    if stream is None:
        return
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    with contextlib.suppress(OSError, ValueError):
        if length > 0:
            while length > 0:
                chunk = stream.read(min(length, 1 << 16))
                if not chunk:
                    break
                length -= len(chunk)
        elif environ.get("wsgi.input_terminated"):
            while stream.read(1 << 16):
                pass


def _error_response(
    start_response: StartResponse, fault: Fault, request: Request, request_id: int
) -> list[bytes]:
    resource = "/" + "/".join(p for p in (request.bucket, request.key) if p)
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<Error><Code>{_xml(fault.code)}</Code><Message>{_xml(fault.message)}</Message>"
        f"<Resource>{_xml(resource)}</Resource>"
        f"<RequestId>ckptconform-{request_id}</RequestId></Error>"
    ).encode()
    reason = {500: "Internal Server Error", 503: "Service Unavailable"}.get(fault.status, "Error")
    headers = [
        ("Content-Type", "application/xml"),
        ("Content-Length", "0" if request.method == "HEAD" else str(len(body))),
        ("x-amz-request-id", f"ckptconform-{request_id}"),
        ("Connection", "close"),
    ]
    start_response(f"{fault.status} {reason}", headers)
    return [] if request.method == "HEAD" else [body]


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
