"""The S3 request ledger: a WSGI middleware that sees every request reaching an S3 server.

The suite serves moto through this middleware, so it counts requests from any process (a
subprocess, a Spark executor) and not only the ones the test's own client sends. Each request is
classified into an S3 operation from its method, path and query (path-style addressing: the
bucket is the first path segment). Tests count inside a block::

    with ledger.record() as rec:
        stream.close_and_get_handle()
    assert rec.count(operation="PutObject") == 1, rec.summary()

The ledger also injects faults (S3-style XML errors, dropped connections, before or after the
server carried the request out, at a rate; DeleteObjects answered with an error per key, as S3
reports objects it could not delete), throttles like S3, with a token bucket per key prefix
answering S3's own 503 SlowDown, and answers listings in small pages (``small_pages``, see
``ckptconform.servers.listing_pages``). Requests sent by the suite's own raw file system carry the
``RAW_USER_AGENT`` marker: they are recorded (``Recording.all_requests``) but left out of
``Recording.requests`` and counts, and faults never hit them, so inspecting or cleaning the
backend cannot disturb a measurement. The middleware speaks plain WSGI and needs only the
standard library.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import random
import re
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import parse_qs

from ckptconform.servers.listing_pages import PAGED_OPERATIONS, ListingPager

__all__ = [
    "EXACT_HEADERS_KEY",
    "OPERATIONS",
    "RAW_USER_AGENT",
    "SLOW_DOWN_CODE",
    "SLOW_DOWN_MESSAGE",
    "Fault",
    "Recording",
    "Request",
    "RequestLedger",
    "Throttle",
    "access_key_of",
    "classify",
    "region_of",
    "request_prefix",
]

#: Marker in the User-Agent of the suite's own raw file system (see ``backends.base``).
RAW_USER_AGENT = "ckptconform-raw"
#: environ key under which the counting proxy passes a request's headers with their exact
#: spelling (``ckptconform.servers.proxy``); what it forwards.
EXACT_HEADERS_KEY = "ckptconform.proxy.headers"
#: The conditional-write headers a server that ignores conditional writes never sees.
_CONDITIONAL_HEADERS = ("if-none-match", "if-match")

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
    "ListMultipartUploads",
    "ListParts",
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
    #: the region a SigV4 request was signed for (its credential scope), when it was so signed
    region: str | None = None
    #: the HTTP status answered (None: no answer, e.g. a dropped connection)
    status: int | None = None
    #: bytes of the request body and of the answer's body (Content-Length)
    bytes_in: int = 0
    bytes_out: int = 0

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
#: SigV4's credential scope: ``Credential=<key>/<date>/<region>/<service>/aws4_request``
_SIGV4_SCOPE = re.compile(r"Credential=[^/,\s]+/[^/,\s]+/([^/,\s]+)/")
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


def region_of(authorization: str, query: str = "") -> str | None:
    """The region a SigV4 ``Authorization`` header or presigned query was signed for (the
    third part of its credential scope); ``None`` for SigV2 and unsigned requests, which
    name no region."""
    match = _SIGV4_SCOPE.search(authorization)
    if match:
        return match.group(1)
    credential = parse_qs(query).get("X-Amz-Credential")
    if credential:
        scope = credential[0].split("/")
        return (scope[2] or None) if len(scope) >= 5 else None
    return None


def _bucket_operation(method: str, params: dict[str, list[str]]) -> str:
    if method == "HEAD":
        return "HeadBucket"
    if method == "GET":
        if "uploads" in params:
            return "ListMultipartUploads"
        return "ListObjectsV2" if params.get("list-type") == ["2"] else "ListObjects"
    if method == "PUT":
        return "CreateBucket" if not params else "Other"
    if method == "POST" and "delete" in params:
        return "DeleteObjects"
    return "Other"


def _object_operation(method: str, params: dict[str, list[str]], copy: bool) -> str:
    if method == "GET":
        return "ListParts" if "uploadId" in params else "GetObject"
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

    # ------------------------------------------------------------------ load figures

    def bytes_moved(self) -> tuple[int, int]:
        """Bytes sent to the server (request bodies) and received from it (answer bodies)."""
        requests = self.requests
        return sum(r.bytes_in for r in requests), sum(r.bytes_out for r in requests)

    def faulted(self) -> list[Request]:
        """Requests that got no answer or an error answer (5xx, throttling, injected faults)."""
        return [r for r in self.requests if r.fault or r.status is None or r.status >= 500]

    def retries(self) -> list[Request]:
        """Requests that repeat an earlier failed request (same method, bucket, key, operation)."""
        failed: Counter[tuple[str, str | None, str | None, str]] = Counter()
        repeated = []
        for request in self.requests:
            signature = (request.method, request.bucket, request.key, request.operation)
            if failed[signature] > 0:
                repeated.append(request)
                failed[signature] -= 1
            if request.fault or request.status is None or request.status >= 500:
                failed[signature] += 1
        return repeated

    def retried(self) -> int:
        """How many requests repeat an earlier failed one (``retries``)."""
        return len(self.retries())

    def per_second(
        self, by: Callable[[Request], str] | None = None, start: float | None = None
    ) -> dict[str, Counter[int]]:
        """Requests per whole second since ``start`` (default: the first request), per group.

        ``by`` groups requests (default: their operation); the counters map a second's offset
        to the number of requests that arrived in it.
        """
        requests = self.requests
        if not requests:
            return {}
        origin = min(r.time for r in requests) if start is None else start
        key = by or (lambda request: request.operation)
        series: dict[str, Counter[int]] = {}
        for request in requests:
            series.setdefault(key(request), Counter())[int(request.time - origin)] += 1
        return series

    def peak_per_second(self, by: Callable[[Request], str] | None = None) -> dict[str, int]:
        """The busiest second's request count per group (default: per operation)."""
        return {
            group: max(counts.values()) for group, counts in self.per_second(by).items() if counts
        }


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
    """An injected fault: which requests it hits, what it answers, how often.

    ``rate`` is the chance that a matching request is hit (1.0: every one, until ``times`` hits).
    ``after_commit`` lets the server carry the request out first and loses its answer afterwards
    (a dropped connection, or an error answer for a write that did happen): the client cannot
    tell whether its request took effect.
    """

    operation: frozenset[str] | None
    method: str | None
    key_contains: str | None
    status: int
    code: str
    message: str
    times: int | None
    drop_connection: bool = False
    after_commit: bool = False
    rate: float = 1.0
    #: a DeleteObjects answered 200 with an ``<Error>`` of ``code`` for every key (nothing
    #: deleted, or, with ``after_commit``, everything deleted all the same)
    per_key: bool = False
    #: False: the error answer has no body (no XML, so a client sees only the status)
    body: bool = True
    #: seconds the server hangs before it answers normally (a slow or stuck endpoint); a hang
    #: ends early when the faults are cleared
    delay: float = 0.0
    #: the hang of ``delay`` comes after the answer's headers and the first byte of its body
    stall_body: bool = False
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

    @property
    def label(self) -> str:
        what = "dropped connection" if self.drop_connection else f"{self.status} {self.code}"
        if self.per_key:
            what = f"{self.code} for every key"
        elif not self.body:
            what = f"{self.status} without a body"
        if self.delay:
            what = f"answer delayed {self.delay:g} s"
            if self.stall_body:
                what = f"body stalled {self.delay:g} s after its first byte"
        return f"{what} after commit" if self.after_commit else what


#: S3's own answer when a prefix is throttled (status 503).
SLOW_DOWN_CODE = "SlowDown"
SLOW_DOWN_MESSAGE = "Please reduce your request rate."


@dataclass
class Throttle:
    """A token bucket per key prefix, as S3 throttles: ``per_second`` tokens refill each second.

    ``prefix_depth`` chooses the prefix a request counts against: ``None`` its key's directory
    (everything up to the last ``/``), ``0`` the whole bucket, ``n`` the first ``n`` segments.
    A request that finds its bucket empty is answered with S3's 503 SlowDown.
    """

    operations: frozenset[str] | None
    per_second: float
    burst: float
    prefix_depth: int | None = None
    throttled: int = 0
    _tokens: dict[str, tuple[float, float]] = field(default_factory=dict, repr=False)

    def prefix_of(self, request: Request) -> str:
        return request_prefix(request, self.prefix_depth)

    def admit(self, request: Request, now: float) -> bool:
        """Take a token for ``request``; False when its prefix is out of tokens."""
        if self.operations is not None and request.operation not in self.operations:
            return True
        prefix = self.prefix_of(request)
        tokens, updated = self._tokens.get(prefix, (self.burst, now))
        tokens = min(self.burst, tokens + (now - updated) * self.per_second)
        if tokens >= 1.0:
            self._tokens[prefix] = (tokens - 1.0, now)
            return True
        self._tokens[prefix] = (tokens, now)
        self.throttled += 1
        return False


def request_prefix(request: Request, depth: int | None = None) -> str:
    """A request's key prefix: its directory (``None``), the bucket (0) or ``depth`` segments."""
    bucket = request.bucket or ""
    parts = (request.key or "").split("/")
    kept = parts[:-1] if depth is None or depth >= len(parts) else parts[: max(0, depth)]
    return "/".join([bucket, *kept]) + "/"


class RequestLedger:
    """Records, classifies and optionally sabotages every request to the wrapped WSGI app."""

    def __init__(self, app: WSGIApp | None = None, seed: int | None = None) -> None:
        self.app = app
        self._lock = threading.Lock()
        self._log: list[Request] = []
        self._recordings: list[Recording] = []
        self._faults: list[Fault] = []
        self._throttles: list[Throttle] = []
        self._ids = itertools.count(1)
        self._random = random.Random(seed)
        self._pager: ListingPager | None = None
        self._cleared = threading.Event()
        self._unconditional = False

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

    def seed(self, seed: int) -> None:
        """Make the choice of requests hit by faults at a ``rate`` repeatable."""
        with self._lock:
            self._random.seed(seed)

    def inject(
        self,
        operation: str | Iterable[str] | None = None,
        method: str | None = None,
        status: int = 503,
        code: str = SLOW_DOWN_CODE,
        times: int | None = 1,
        *,
        key_contains: str | None = None,
        message: str | None = None,
        drop_connection: bool = False,
        after_commit: bool = False,
        rate: float = 1.0,
        per_key: bool = False,
        delay: float = 0.0,
        body: bool = True,
        stall_body: bool = False,
    ) -> Fault:
        """Answer the next ``times`` matching requests with an error (``None``: until cleared).

        The answer is an S3-style XML error with ``status`` and ``code``, or, with
        ``drop_connection``, a closed connection and no answer at all; ``after_commit`` lets the
        server carry the request out first. ``per_key`` (DeleteObjects only) answers 200 with a
        ``<DeleteResult>`` that reports an ``<Error>`` of ``code`` for every key of the request
        and deletes nothing, as S3 does for objects it may not delete; with ``after_commit`` the
        server deletes the keys first (as servers that report keys already gone as
        ``NoSuchKey`` answer). ``body=False`` sends the error answer's status and headers
        without its XML body (a client then knows only the status). ``delay`` makes the server
        hang that many seconds and then answer normally (a stuck endpoint; ``clear_faults``
        ends every hang at once); with ``stall_body`` the hang comes after the answer's headers
        and the first byte of its body (a transfer that stops). ``rate`` hits only that
        share of the matching requests, at random (``seed``). Raw requests of the suite are
        never hit. Note that S3 clients retry 5xx answers on their own.
        """
        if not 0.0 < rate <= 1.0:
            raise ValueError(f"rate must be in (0, 1], got {rate!r}")
        if per_key and drop_connection:
            raise ValueError("per_key answers the request: no dropped connection")
        if not body and (per_key or drop_connection):
            raise ValueError("body=False is for error answers")
        if delay < 0 or (delay and (per_key or drop_connection or after_commit or not body)):
            raise ValueError("delay is seconds >= 0 before a normal answer, alone")
        if stall_body and not delay:
            raise ValueError("stall_body needs the seconds of the stall (delay)")
        default_message = (
            SLOW_DOWN_MESSAGE if code == SLOW_DOWN_CODE else f"injected by ckptconform: {code}"
        )
        fault = Fault(
            operation=_operation_set(operation),
            method=method.upper() if method else None,
            key_contains=key_contains,
            status=status,
            code=code,
            message=message or default_message,
            times=times,
            drop_connection=drop_connection,
            after_commit=after_commit,
            rate=rate,
            per_key=per_key,
            delay=float(delay),
            body=body,
            stall_body=stall_body,
        )
        if per_key:
            fault = replace(fault, operation=frozenset({"DeleteObjects"}), status=200)
        with self._lock:
            self._faults.append(fault)
        return fault

    def throttle(
        self,
        per_second: float,
        operation: str | Iterable[str] | None = None,
        *,
        prefix_depth: int | None = None,
        burst: float | None = None,
    ) -> Throttle:
        """Throttle matching requests per key prefix like S3 (503 SlowDown beyond the rate)."""
        if per_second <= 0:
            raise ValueError("per_second must be positive")
        throttle = Throttle(
            _operation_set(operation),
            float(per_second),
            float(burst if burst is not None else per_second),
            prefix_depth,
        )
        with self._lock:
            self._throttles.append(throttle)
        return throttle

    @contextlib.contextmanager
    def small_pages(self, size: int = 2) -> Iterator[ListingPager]:
        """Answer listings (not the suite's raw ones) in pages of at most ``size`` entries."""
        pager = ListingPager(size)
        with self._lock:
            self._pager = pager
        try:
            yield pager
        finally:
            with self._lock:
                self._pager = None

    @contextlib.contextmanager
    def ignoring_conditional_writes(self) -> Iterator[None]:
        """Serve as a server that ignores conditional writes (s3rver, older MinIO and Ceph).

        ``If-None-Match`` and ``If-Match`` are removed from every request before the server
        sees it, so a PUT that should be refused overwrites. Only for servers that check no
        signature (a backend that accepts any credentials): both headers are signed.
        """
        with self._lock:
            self._unconditional = True
        try:
            yield
        finally:
            with self._lock:
                self._unconditional = False

    def clear_faults(self) -> None:
        """Remove every injected fault and throttle."""
        with self._lock:
            self._faults.clear()
            self._throttles.clear()
            cleared, self._cleared = self._cleared, threading.Event()
        cleared.set()  # hangs of delay faults end now

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
        # PATH_INFO is already percent-decoded (PEP 3333), as latin-1 characters of the bytes;
        # S3 keys are UTF-8. Decoding once more would turn a key's literal "%2f" into "/".
        decoded = path.encode("latin-1").decode("utf-8", "replace")
        bucket, key, operation = classify(method, decoded, query, headers)
        request = Request(
            time.time(), method, bucket, key, query, operation,
            client=f"{environ.get('REMOTE_ADDR', '')}:{environ.get('REMOTE_PORT', '')}",
            raw=RAW_USER_AGENT in environ.get("HTTP_USER_AGENT", ""),
            access_key=access_key_of(environ.get("HTTP_AUTHORIZATION", ""), query),
            region=region_of(environ.get("HTTP_AUTHORIZATION", ""), query),
            bytes_in=_content_length(environ),
        )  # fmt: skip
        with self._lock:
            fault = None if request.raw else self._take_fault(request)
            pager = None if request.raw else self._pager
            if self._unconditional:
                _drop_headers(environ, _CONDITIONAL_HEADERS)
        if fault is None:
            if pager is not None and operation in PAGED_OPERATIONS:
                return self._serve_paged(pager, request, environ, start_response)
            return self._serve(request, environ, start_response)
        if fault.delay:
            with self._lock:
                cleared = self._cleared
            if fault.stall_body:
                answer = self._serve(replace(request, fault=fault.label), environ, start_response)
                return _stalled(answer, cleared, fault.delay)
            cleared.wait(fault.delay)
            return self._serve(replace(request, fault=fault.label), environ, start_response)
        if fault.per_key:
            sent = _drain(environ)
            if fault.after_commit:
                self._carry_out({**environ, "wsgi.input": io.BytesIO(sent)})
            keys = re.findall(rb"<Key>(.*?)</Key>", sent, re.DOTALL)
            body = _delete_result(keys, fault)
            self._log_request(replace(request, fault=fault.label, status=200, bytes_out=len(body)))
            return _xml_answer(start_response, body)
        if fault.after_commit:
            self._carry_out(environ)
        else:
            _drain(environ)
        if fault.drop_connection:
            self._log_request(replace(request, fault=fault.label))
            sock = environ.get("werkzeug.socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            raise ConnectionAbortedError("connection dropped by an injected fault")
        request = replace(request, fault=fault.label, status=fault.status)
        self._log_request(request)
        return _error_response(start_response, fault, request, next(self._ids))

    def _serve(
        self, request: Request, environ: dict[str, Any], start_response: StartResponse
    ) -> Iterable[bytes]:
        answer: dict[str, Any] = {}

        def capture(status: str, response_headers: list[tuple[str, str]], *exc: Any) -> Any:
            answer["status"] = status
            answer["headers"] = response_headers
            return start_response(status, response_headers, *exc)

        try:
            body = self.app(environ, capture)  # type: ignore[misc]
        except BaseException:
            self._log_request(request)
            raise
        self._log_request(_answered(request, answer))
        return body

    def _serve_paged(
        self,
        pager: ListingPager,
        request: Request,
        environ: dict[str, Any],
        start_response: StartResponse,
    ) -> Iterable[bytes]:
        """A listing through ``pager``: from its snapshot, or the server's answer cut to a page."""
        page = pager.answer(request.operation, request.bucket, request.query)
        if page is not None:
            _drain(environ)
            self._log_request(replace(request, status=200, bytes_out=len(page)))
            return _xml_answer(start_response, page)
        answer: dict[str, Any] = {}

        def capture(status: str, response_headers: list[tuple[str, str]], *exc: Any) -> Any:
            answer["status"], answer["headers"] = status, response_headers
            return lambda data: None

        try:
            body = _joined(self.app(environ, capture))  # type: ignore[misc]
        except BaseException:
            self._log_request(request)
            raise
        answered = _answered(request, answer)
        page = pager.first_page(
            request.operation, request.bucket, request.query, answered.status, body
        )
        if page is None:
            start_response(answer["status"], answer["headers"])
            self._log_request(answered)
            return [body]
        self._log_request(replace(answered, bytes_out=len(page)))
        return _xml_answer(start_response, page)

    def _carry_out(self, environ: dict[str, Any]) -> None:
        """Let the server execute the request and throw its answer away."""
        assert self.app is not None
        body = self.app(environ, lambda *args, **kwargs: lambda data: None)
        try:
            for _ in body:
                pass
        finally:
            close = getattr(body, "close", None)
            if callable(close):
                close()

    def _log_request(self, request: Request) -> None:
        with self._lock:
            self._log.append(request)
            for recording in self._recordings:
                recording.all_requests.append(request)

    def _take_fault(self, request: Request) -> Fault | None:
        for fault in self._faults:
            if fault.exhausted or not fault.matches(request):
                continue
            if fault.rate < 1.0 and self._random.random() >= fault.rate:
                continue
            fault.hits += 1
            return fault
        now = time.monotonic()
        for throttle in self._throttles:
            if not throttle.admit(request, now):
                return Fault(None, None, None, 503, SLOW_DOWN_CODE, SLOW_DOWN_MESSAGE, None)
        return None


def _content_length(environ: dict[str, Any]) -> int:
    try:
        return max(0, int(environ.get("CONTENT_LENGTH") or 0))
    except ValueError:
        return 0


def _answered(request: Request, answer: dict[str, Any]) -> Request:
    status_line = str(answer.get("status") or "")
    status = int(status_line.split(" ", 1)[0]) if status_line[:3].isdigit() else None
    size = 0
    for name, value in answer.get("headers") or ():
        if name.lower() == "content-length" and str(value).isdigit():
            size = int(value)
    return replace(request, status=status, bytes_out=0 if request.method == "HEAD" else size)


def _joined(parts: Iterable[bytes]) -> bytes:
    """A WSGI answer's whole body, its iterable closed as PEP 3333 asks."""
    try:
        return b"".join(parts)
    finally:
        close = getattr(parts, "close", None)
        if callable(close):
            close()


def _stalled(body: Iterable[bytes], cleared: threading.Event, seconds: float) -> Iterator[bytes]:
    """``body`` with a hang of ``seconds`` after its first byte (setting ``cleared`` ends it)."""
    data = _joined(body)
    yield data[:1]
    cleared.wait(seconds)
    yield data[1:]


def _drain(environ: dict[str, Any]) -> bytes:
    """Read the request body so the connection stays in a clean state; returns what was read."""
    stream = environ.get("wsgi.input")
    if stream is None:
        return b""
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    read: list[bytes] = []
    with contextlib.suppress(OSError, ValueError):
        if length > 0:
            while length > 0:
                chunk = stream.read(min(length, 1 << 16))
                if not chunk:
                    break
                read.append(chunk)
                length -= len(chunk)
        elif environ.get("wsgi.input_terminated"):
            while chunk := stream.read(1 << 16):
                read.append(chunk)
    return b"".join(read)


def _drop_headers(environ: dict[str, Any], names: tuple[str, ...]) -> None:
    """Remove request headers (lower-case ``names``) from ``environ`` and the proxy's copy."""
    for name in names:
        environ.pop("HTTP_" + name.upper().replace("-", "_"), None)
    exact = environ.get(EXACT_HEADERS_KEY)
    if exact is not None:
        environ[EXACT_HEADERS_KEY] = [(n, v) for n, v in exact if n.lower() not in names]


def _xml_answer(start_response: StartResponse, body: bytes) -> list[bytes]:
    start_response(
        "200 OK", [("Content-Type", "application/xml"), ("Content-Length", str(len(body)))]
    )
    return [body]


def _delete_result(keys: list[bytes], fault: Fault) -> bytes:
    """S3's DeleteObjects answer reporting an ``<Error>`` for each of ``keys``."""
    errors = "".join(
        f"<Error><Key>{key.decode('utf-8', 'replace')}</Key><Code>{_xml(fault.code)}</Code>"
        f"<Message>{_xml(fault.message)}</Message></Error>"
        for key in keys
    )  # the keys come XML-escaped from the request and go back as they came
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<DeleteResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
        f"{errors}</DeleteResult>"
    ).encode()


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
    if request.method == "HEAD" or not fault.body:
        body = b""
    headers = [
        ("Content-Type", "application/xml"),
        ("Content-Length", str(len(body))),
        ("x-amz-request-id", f"ckptconform-{request_id}"),
        ("Connection", "close"),
    ]
    start_response(f"{fault.status} {reason}", headers)
    return [body] if body else []


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
