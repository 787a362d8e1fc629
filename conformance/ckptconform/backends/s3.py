"""S3 backends: the shared S3 plumbing, and the ``s3`` leg for any endpoint (``--s3-endpoint``).

Credentials come from ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY`` (and ``AWS_SESSION_TOKEN``,
``AWS_REGION``); the bucket from ``--s3-bucket`` (default ``ckptconform``) and it is created if
missing. Tests that need a bucket of their own (SER-4's savepoint in a second bucket, LAY-8's
entropy cases) get one from ``S3Backend.fresh_bucket``: made and removed around the test with
the same credentials; where those may not create buckets, the tests skip with the server's
answer. The raw file system is s3fs with no instance or listings cache, and it tags its requests
with ``ledger.RAW_USER_AGENT`` so a request ledger leaves them out of counts.

Servers the suite does not run in-process (``s3``, ``minio``) get their request ledger from a
``CountingProxy`` on 127.0.0.1: ``storage_options["endpoint_url"]`` is the proxy's URL, so every
request of the implementation, from any process, passes the ledger. The raw file system talks to
the proxy too: its requests are recorded but marked raw (left out of counts, never faulted),
exactly as on moto, and the suite and the implementation see the server through the same door.
``--s3-endpoint`` keeps naming the real server; the proxy is an implementation detail of the
suite. When the server refuses requests through the proxy (servers that route on the ``Host``
header, such as AWS S3 itself: see ``ckptconform.servers.proxy``) while a direct bucket check
works, the leg runs directly against the server without a ledger, with a warning; counting
clauses skip.

At start the backend also finds out, with raw requests, whether the server honours
conditional writes (``conditional_writes``: a probe object created twice with
``If-None-Match: *``); where it does not, the suite opts every storage in to finalizing there
(``allow_unconditional_metadata``) and skips what needs exclusive creates (MD-13). A second
route (``open_route``) forwards to the backend's own counting proxy, so the backend's ledger
counts what reaches the server by any route. After a failed test ``server_problem()`` tells
whether the server behind the proxy still accepts connections.

The suite never hangs on a server that does not answer: the raw client has a connect timeout
and a small retry budget (``RAW_CLIENT_LIMITS``), and ``--s3-endpoint`` is probed with one TCP
connect before the run (``availability``), so an endpoint that cannot be reached is a skip with
the reason or, with ``--require-legs=s3``, a usage error within seconds.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import time
import warnings
from collections.abc import Iterator
from typing import Any, ClassVar
from urllib.parse import urlsplit

from ckptconform.backends.base import Backend, BackendUnavailableError, random_name
from ckptconform.servers.ledger import RAW_USER_AGENT

__all__ = [
    "PROBE_TIMEOUT_SECONDS",
    "RAW_CLIENT_LIMITS",
    "S3Backend",
    "S3EndpointBackend",
    "endpoint_unreachable",
    "s3_error_code",
    "s3_missing_packages",
]

#: The raw client's bounds: a refused or silent server fails within seconds, not minutes.
#: botocore: ``connect_timeout`` in seconds and ``max_attempts`` retries; s3fs: ``retries``.
RAW_CLIENT_LIMITS: dict[str, Any] = {
    "connect_timeout": 3,
    "retries": {"max_attempts": 2},
    "s3fs_retries": 2,
}
#: What S3 accepts as a bucket name (without dots, which virtual-host addressing breaks on).
_BUCKET_NAME = re.compile(r"[a-z0-9][a-z0-9-]{1,61}[a-z0-9]")
#: How long the TCP probe of ``--s3-endpoint`` waits for a connection.
PROBE_TIMEOUT_SECONDS = 3.0


def endpoint_unreachable(url: str, timeout: float = PROBE_TIMEOUT_SECONDS) -> str | None:
    """``None`` when a TCP connection to ``url``'s host and port opens, else why not.

    The reason names the endpoint as scheme://host:port (never userinfo) and the error.
    """
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        return f"invalid endpoint URL: {exc}"
    if not parts.hostname or parts.scheme not in ("http", "https"):
        return "the endpoint must be an http:// or https:// URL with a host"
    shown = f"{parts.scheme}://{parts.hostname}:{port}"
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout):
            return None
    except OSError as exc:
        why = "timed out" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
        return f"cannot connect to {shown} within {timeout:g} s: {why}"


def s3_missing_packages() -> str | None:
    """A reason when s3fs is not installed, else ``None``."""
    try:
        import s3fs  # noqa: F401
    except ImportError as exc:
        return f"s3fs is not installed ({exc}); pip install 'checkpoint-conformance[s3]'"
    return None


def abort_open_uploads(raw: Any, bucket: str, prefix: str | None = None) -> list[str]:
    """Abort the multipart uploads open in ``bucket`` (below ``prefix``) through s3fs's raw
    client ``raw``; return their keys, sorted. One page of the listing (1000 uploads): a test
    leaves far fewer."""
    where = {"Bucket": bucket} if prefix is None else {"Bucket": bucket, "Prefix": prefix}
    uploads = raw.call_s3("list_multipart_uploads", **where).get("Uploads", [])
    for upload in uploads:
        raw.call_s3(
            "abort_multipart_upload", Bucket=bucket, Key=upload["Key"], UploadId=upload["UploadId"]
        )
    return sorted(upload["Key"] for upload in uploads)


def s3_error_code(exc: BaseException) -> str | None:
    """The S3 error code of the botocore error behind ``exc`` (s3fs raises its own error from
    it), if any."""
    seen: BaseException | None = exc
    while seen is not None:
        error = getattr(seen, "response", {}).get("Error", {}) if hasattr(seen, "response") else {}
        if error.get("Code"):
            return str(error["Code"])
        seen = seen.__cause__ or seen.__context__
    return None


class S3Backend(Backend):
    """Common code of the S3 legs: options, raw s3fs, bucket creation."""

    scheme = "s3"
    object_store = True
    cross_process = True

    endpoint: str | None = None
    #: Where the endpoint will be, for the run header before the backend starts.
    planned_endpoint: ClassVar[str] = ""
    bucket: str = "ckptconform"
    region: str = "us-east-1"
    _key: str | None = None
    _secret: str | None = None
    _token: str | None = None
    #: The real server behind the counting proxy (``None`` when clients talk to it directly).
    upstream: str | None = None
    #: Why the leg runs without its counting proxy (``None`` when it has one or never needs one).
    proxy_problem: str | None = None
    _proxy: Any = None
    #: True when the backend puts a ``CountingProxy`` in front of its server.
    ledger_via_proxy: ClassVar[bool] = False
    #: Found out at start (:meth:`_probe_conditional_writes`) unless a subclass knows it.
    conditional_writes: bool | None = None

    @property
    def storage_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {}
        if self.region != "us-east-1":
            # us-east-1 is the default; naming it makes s3fs send an invalid LocationConstraint.
            options["client_kwargs"] = {"region_name": self.region}
        if self.endpoint:
            options["endpoint_url"] = self.endpoint
        if self._key is not None:
            options["key"] = self._key
        if self._secret is not None:
            options["secret"] = self._secret
        if self._token is not None:
            options["token"] = self._token
        return options

    def _make_raw(self) -> Any:
        import s3fs

        options = self.storage_options
        config = {
            **options.pop("config_kwargs", {}),
            "user_agent_extra": RAW_USER_AGENT,
            "connect_timeout": RAW_CLIENT_LIMITS["connect_timeout"],
            "retries": dict(RAW_CLIENT_LIMITS["retries"]),
        }
        fs = s3fs.S3FileSystem(
            skip_instance_cache=True, use_listings_cache=False, config_kwargs=config, **options
        )
        fs.retries = RAW_CLIENT_LIMITS["s3fs_retries"]  # s3fs's own retry loop (default 5)
        return fs

    def _ensure_bucket(self) -> None:
        fs = self._make_raw()
        try:
            if not fs.exists(self.bucket):
                fs.mkdir(self.bucket)
        except Exception as exc:
            raise BackendUnavailableError(
                f"{self.name}: cannot use bucket {self.bucket!r} at {self.endpoint}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        self._fs = fs

    def _start_behind_proxy(self, upstream: str) -> None:
        """Reach ``upstream`` through a counting proxy (sets ``endpoint`` and ``ledger``)."""
        from ckptconform.servers.proxy import CountingProxy

        self.upstream = upstream
        self.proxy_problem = None
        self._proxy = CountingProxy(upstream, max_key_bytes=self.max_key_bytes)
        self.endpoint = self._proxy.start()
        self.ledger = self._proxy.ledger
        try:
            self._ensure_bucket()
        except BackendUnavailableError as through_proxy:
            self._stop_proxy()
            self.endpoint = upstream
            self._ensure_bucket()  # a direct failure too: the server itself is the problem
            self.proxy_problem = (
                f"the server refuses requests through the counting proxy ({through_proxy}); "
                "running without a request ledger"
            )
            warnings.warn(f"ckptconform: {self.name}: {self.proxy_problem}", stacklevel=2)
        self._probe_conditional_writes()

    def _probe_conditional_writes(self) -> None:
        """Find out whether the server honours ``If-None-Match: *`` (raw requests, left out of
        counts): a probe object created twice with it, the second refused where it holds."""
        if self.conditional_writes is not None:
            return
        key = f"{self.bucket}/.ckptconform-probe-{random_name(16)}"
        bucket, name, _ = self._fs.split_path(key)
        put = {"Bucket": bucket, "Key": name, "Body": b"", "IfNoneMatch": "*"}
        try:
            self._fs.call_s3("put_object", **put)
            try:
                self._fs.call_s3("put_object", **put)
                self.conditional_writes = False
            except OSError as exc:
                refused = s3_error_code(exc) in ("PreconditionFailed", "412")
                self.conditional_writes = True if refused else None
        except OSError as exc:
            self.conditional_writes = False if s3_error_code(exc) == "NotImplemented" else None
        finally:
            with contextlib.suppress(Exception):
                self._fs.call_s3("delete_object", Bucket=bucket, Key=name)

    def server_problem(self) -> str | None:
        """The server behind the counting proxy refuses connections, three times in a row."""
        server = self.upstream
        if server is None or not self.started:
            return None
        for attempt in range(3):
            why = endpoint_unreachable(server, timeout=2.0)
            if why is None:
                return None
            if attempt < 2:
                time.sleep(0.5)
        return f"the {self.name} server no longer accepts connections: {why}"

    @contextlib.contextmanager
    def open_route(self) -> Iterator[Any]:
        """A second way to the same server: a counting proxy with its own ledger, for one test.

        Yields the started ``CountingProxy`` (``.url`` for ``endpoint_url``, ``.ledger`` to see
        which requests took this route); it is stopped when the block ends. It forwards to the
        backend's own endpoint (its counting proxy, where it has one), so the backend's ledger
        counts what reaches the server by any route, as moto's in-server ledger does.
        """
        from ckptconform.servers.proxy import CountingProxy

        self.start()
        server = self.endpoint
        assert server is not None  # set by _start
        proxy = CountingProxy(server)
        proxy.start()
        try:
            yield proxy
        finally:
            proxy.stop()

    @contextlib.contextmanager
    def fresh_bucket(self, prefix: str = "ckptconform-") -> Iterator[str]:
        """A new, empty bucket on the backend's server for one block; yields its name.

        The name is ``prefix`` and 16 random lowercase letters and digits (S3's rules: 3 to 63
        lowercase letters, digits and '-'), so a test can choose what the name holds. The
        bucket is made with the backend's own credentials; when the server refuses (keys that
        may not create buckets) it raises ``BackendUnavailableError`` with the reason, before
        the block runs. When the block ends, everything in the bucket (objects and open
        multipart uploads) and the bucket itself are removed; a removal that fails is a
        warning naming the bucket, never the test's failure. Raw requests: a request ledger
        leaves them out of counts.
        """
        self.start()
        name = prefix + random_name(16)
        if not _BUCKET_NAME.fullmatch(name):
            raise ValueError(f"{prefix!r} cannot begin an S3 bucket name (at most 47 of a-z0-9-)")
        try:
            self.raw.mkdir(name)
        except Exception as exc:
            raise BackendUnavailableError(
                f"{self.name}: cannot create a bucket at {self.upstream or self.endpoint} "
                f"with the backend's credentials: {type(exc).__name__}: {exc}"
            ) from exc
        try:
            yield name
        finally:
            self._remove_bucket(name)

    def _remove_bucket(self, name: str) -> None:
        """Delete every object and open multipart upload in bucket ``name``, then the bucket;
        a failure is a warning (the bucket is left behind, and named)."""
        raw = self.raw
        try:
            with contextlib.suppress(Exception):  # servers without the listing: no uploads
                abort_open_uploads(raw, name)
            keys = raw.find(name)
            if keys:
                raw.rm(keys)
            raw.call_s3("delete_bucket", Bucket=name)
        except Exception as exc:
            warnings.warn(
                f"ckptconform: {self.name}: could not remove the test bucket {name!r}: "
                f"{type(exc).__name__}: {exc}",
                stacklevel=3,
            )

    def _stop_proxy(self) -> None:
        self._fs = None
        self.ledger = None
        if self._proxy is not None:
            self._proxy.stop()
            self._proxy = None

    @property
    def base_url(self) -> str:
        return f"s3://{self.bucket}"

    def url_of(self, raw_path: str) -> str:
        return "s3://" + raw_path.lstrip("/")

    def describe(self) -> str:
        ledger = ", request ledger" if self.has_ledger else ""
        bucket = self.bucket if self.started else self.settings.s3_bucket
        where = (
            self.upstream
            or self.endpoint
            or self.planned_endpoint
            or self.settings.s3_endpoint
            or "no endpoint"
        )
        if self.ledger_via_proxy:
            if self.proxy_problem is not None:
                ledger = f", no request ledger: {self.proxy_problem}"
            elif self._proxy is not None:
                where += f" via counting proxy {self._proxy.url}"
            else:
                ledger = ", request ledger via counting proxy"
        return f"{self.name} (s3, {where}, bucket {bucket}{ledger})"


class S3EndpointBackend(S3Backend):
    """Any running S3 endpoint given with ``--s3-endpoint``."""

    name = "s3"
    has_ledger = True
    ledger_via_proxy = True

    def availability(self) -> str | None:
        if not self.settings.s3_endpoint:
            return "s3: no endpoint given (use --s3-endpoint=URL)"
        missing = s3_missing_packages()
        if missing is not None:
            return missing
        unreachable = endpoint_unreachable(self.settings.s3_endpoint)
        return None if unreachable is None else f"s3: --s3-endpoint: {unreachable}"

    def _start(self) -> None:
        assert self.settings.s3_endpoint is not None  # availability() checked it
        self.bucket = self.settings.s3_bucket
        self.region = (
            os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
        )
        self._key = os.environ.get("AWS_ACCESS_KEY_ID")
        self._secret = os.environ.get("AWS_SECRET_ACCESS_KEY")
        self._token = os.environ.get("AWS_SESSION_TOKEN")
        self._start_behind_proxy(self.settings.s3_endpoint)

    def _stop(self) -> None:
        self._stop_proxy()
