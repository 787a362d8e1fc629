"""A counting reverse proxy on 127.0.0.1 that puts a ``RequestLedger`` in front of any S3 server.

The moto backend serves moto's WSGI app through the ledger in-process. For a server the suite
does not run itself (``--backend=s3 --s3-endpoint=URL``, the MinIO container) the suite starts
this proxy instead and hands the implementation the proxy's URL as ``endpoint_url``. Every
request from any process then passes the same ledger middleware, so request counts, ``record()``
blocks, injected faults and rate limits behave exactly as on moto::

    with CountingProxy("http://127.0.0.1:9000") as proxy:
        fs = s3fs.S3FileSystem(endpoint_url=proxy.url, key=..., secret=...)
        with proxy.ledger.record() as rec:
            fs.pipe("bucket/key", b"data")
        assert rec.count(operation="PutObject") == 1

How requests are forwarded: method, request target (the exact bytes the client sent, so the
percent-encoding it signed is kept), every header with its original spelling (S3 metadata names
may contain underscores, which WSGI would drop) and the body, streamed: a ``Content-Length``
body is copied as is, a ``Transfer-Encoding: chunked`` body is de-chunked by werkzeug and
re-chunked towards the upstream. ``aws-chunked`` is a *content* encoding (chunk signatures and
trailing checksums are part of the body bytes), so it passes through untouched. Hop-by-hop
headers and ``Expect`` are not forwarded (werkzeug already answered ``100 Continue``; none of
them is covered by a SigV4 signature). Responses come back with status, headers and a streamed
body. Each request uses its own upstream connection, closed when its response is done.

Signatures and the ``Host`` header: SigV4 signs the ``Host`` header, and the client signed the
proxy's ``127.0.0.1:<port>``. Re-writing it would break the signature, so the proxy forwards the
client's ``Host`` unchanged. That works with servers that verify the signature over the ``Host``
they received and do not route on it: moto (which does not check signatures strictly), MinIO
(it accepts any ``Host`` for path-style requests and verifies the signature over the value the
client sent), s3rver, Ceph RGW and most self-hosted servers. It does NOT work with servers that
route on ``Host`` -- AWS S3 itself and hosted services behind a load balancer: they see a
foreign host name and refuse the request. The S3 backends detect that (the bucket check through
the proxy fails while a direct one works) and then run without a ledger. An upstream ``https://``
endpoint is reached over TLS with the default certificate store (or ``AWS_CA_BUNDLE``); the
proxy itself speaks plain HTTP on loopback.
"""

from __future__ import annotations

import contextlib
import http.client
import logging
import os
import socket
import ssl
import threading
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import quote, urlsplit

from werkzeug.serving import ThreadedWSGIServer, WSGIRequestHandler

from ckptconform.servers.ledger import EXACT_HEADERS_KEY, RequestLedger, StartResponse

__all__ = ["CountingProxy"]

_log = logging.getLogger(__name__)

#: environ key under which the handler passes the request's headers with their exact spelling.
_HEADERS_KEY = EXACT_HEADERS_KEY
_BLOCK = 1 << 16

# Connection-level headers (RFC 9110 section 7.6.1) and Expect: never forwarded either way.
_HOP_BY_HOP = frozenset(
    {
        "connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
        "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "expect",
    }
)  # fmt: skip


class _ProxyRequestHandler(WSGIRequestHandler):
    """werkzeug's handler, quiet, and passing the raw header list on to the app."""

    def make_environ(self) -> dict[str, Any]:
        environ = super().make_environ()
        environ[_HEADERS_KEY] = list(self.headers.items())
        return environ

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass

    def log(self, type: str, message: str, *args: Any) -> None:
        _log.debug("proxy %s: " + message, type, *args)


class _ProxyServer(ThreadedWSGIServer):
    """A threaded WSGI server that knows its open client connections, to close them on stop."""

    def __init__(self, app: Any) -> None:
        self._conn_lock = threading.Lock()
        self._active: dict[threading.Thread, socket.socket] = {}
        super().__init__("127.0.0.1", 0, app, handler=_ProxyRequestHandler)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        current = threading.current_thread()
        with self._conn_lock:
            self._active[current] = request
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._conn_lock:
                self._active.pop(current, None)

    def close_connections(self, timeout: float) -> None:
        """Shut down every open client connection and wait for the handler threads."""
        with self._conn_lock:
            active = list(self._active.items())
        for _, sock in active:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        for thread, _ in active:
            thread.join(timeout)


class _Forwarder:
    """The WSGI app: sends each request to the upstream server and streams the answer back."""

    def __init__(self, upstream: str, timeout: float, max_key_bytes: int | None = None) -> None:
        parts = urlsplit(upstream)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"upstream must be an http:// or https:// URL, not {upstream!r}")
        self.scheme = parts.scheme
        self.netloc = parts.netloc.rpartition("@")[2]
        self.host = parts.hostname
        self.port = parts.port
        self.timeout = timeout
        self.prefix = parts.path.rstrip("/")
        self.max_key_bytes = max_key_bytes
        self._lock = threading.Lock()
        self._open: set[http.client.HTTPConnection] = set()

    def _connect(self) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection
        if self.scheme == "https":
            context = ssl.create_default_context(cafile=os.environ.get("AWS_CA_BUNDLE") or None)
            conn = http.client.HTTPSConnection(
                self.host, self.port, timeout=self.timeout, context=context
            )
        else:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        with self._lock:
            self._open.add(conn)
        return conn

    def _release(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            self._open.discard(conn)
        conn.close()

    def close_all(self) -> None:
        """Close every upstream connection still open (requests in flight fail)."""
        with self._lock:
            conns = list(self._open)
            self._open.clear()
        for conn in conns:
            with contextlib.suppress(Exception):
                if conn.sock is not None:
                    conn.sock.shutdown(socket.SHUT_RDWR)
            conn.close()

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        method = environ["REQUEST_METHOD"]
        if self._key_too_long(environ):
            return _key_too_long(environ, start_response, method, self.max_key_bytes or 0)
        target = _request_target(environ)
        headers: list[tuple[str, str]] = environ.get(_HEADERS_KEY) or _environ_headers(environ)
        chunked = bool(environ.get("wsgi.input_terminated"))
        conn = self._connect()
        try:
            conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
            has_host = False
            for name, value in headers:
                lower = name.lower()
                if lower in _HOP_BY_HOP or (chunked and lower == "content-length"):
                    continue
                has_host = has_host or lower == "host"
                conn.putheader(name, value)
            if not has_host:
                conn.putheader("Host", self.netloc)
            if chunked:
                conn.putheader("Transfer-Encoding", "chunked")
            conn.endheaders()
            _send_body(conn, environ, chunked)
            response = conn.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            self._release(conn)
            return _bad_gateway(start_response, method, f"{type(exc).__name__}: {exc}")
        out = [(k, v) for k, v in response.getheaders() if k.lower() not in _HOP_BY_HOP]
        start_response(f"{response.status} {response.reason}", out)
        return _ResponseBody(response, conn, self._release)

    def _key_too_long(self, environ: dict[str, Any]) -> bool:
        """Whether the request names an object key longer than ``max_key_bytes``."""
        if self.max_key_bytes is None:
            return False
        path = str(environ.get("PATH_INFO", "") or "/")[len(self.prefix) :]
        key = path.lstrip("/").partition("/")[2]
        # WSGI hands the path over as latin-1 text of its bytes
        return len(key.encode("latin-1", "replace")) > self.max_key_bytes


class _ResponseBody:
    """The upstream response body as a WSGI iterable; ``close()`` frees the connection."""

    def __init__(
        self, response: http.client.HTTPResponse, conn: http.client.HTTPConnection, release: Any
    ) -> None:
        self._response = response
        self._conn = conn
        self._release = release

    def __iter__(self) -> Iterator[bytes]:
        while True:
            block = self._response.read(_BLOCK)
            if not block:
                return
            yield block

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._response.close()
        self._release(self._conn)


def _request_target(environ: dict[str, Any]) -> str:
    raw = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    if raw:
        # werkzeug hands it over latin-1 decoded; http.client encodes it back the same way.
        return str(raw)
    path = quote(environ.get("PATH_INFO", "") or "/", safe="/~")
    query = environ.get("QUERY_STRING", "")
    return f"{path}?{query}" if query else path


def _environ_headers(environ: dict[str, Any]) -> list[tuple[str, str]]:
    """Headers rebuilt from a plain WSGI environ (used when not served by our handler)."""
    headers = []
    for key, value in environ.items():
        if key.startswith("HTTP_"):
            headers.append((key[5:].replace("_", "-").title(), value))
        elif key in ("CONTENT_TYPE", "CONTENT_LENGTH") and value:
            headers.append((key.replace("_", "-").title(), value))
    return headers


def _content_length(environ: dict[str, Any]) -> int:
    """The request's Content-Length (0 where it is missing or no number)."""
    try:
        return int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0


def _send_body(conn: http.client.HTTPConnection, environ: dict[str, Any], chunked: bool) -> None:
    stream = environ.get("wsgi.input")
    if stream is None:
        return
    if chunked:
        while block := stream.read(_BLOCK):
            conn.send(b"%x\r\n%s\r\n" % (len(block), block))
        conn.send(b"0\r\n\r\n")
        return
    remaining = _content_length(environ)
    while remaining > 0:
        block = stream.read(min(remaining, _BLOCK))
        if not block:
            raise ConnectionError("the client closed the connection in the middle of the body")
        conn.send(block)
        remaining -= len(block)


def _discard_body(environ: dict[str, Any]) -> None:
    """Read the request's body (as :func:`_send_body` would send it) and drop it."""
    stream = environ.get("wsgi.input")
    if stream is None:
        return
    if environ.get("wsgi.input_terminated"):
        while stream.read(_BLOCK):
            pass
        return
    remaining = _content_length(environ)
    while remaining > 0:
        block = stream.read(min(remaining, _BLOCK))
        if not block:
            return
        remaining -= len(block)


def _key_too_long(
    environ: dict[str, Any], start_response: StartResponse, method: str, limit: int
) -> list[bytes]:
    """S3's answer to a key longer than it holds (400 KeyTooLongError), given by the proxy for
    a server that would fail on such a key worse (s3rver 3.7 crashes); the body is read."""
    _discard_body(environ)
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        "<Error><Code>KeyTooLongError</Code><Message>Your key is too long (ckptconform proxy: "
        f"more than {limit} bytes)</Message></Error>"
    ).encode()
    headers = [
        ("Content-Type", "application/xml"),
        ("Content-Length", "0" if method == "HEAD" else str(len(body))),
    ]
    start_response("400 Bad Request", headers)
    return [] if method == "HEAD" else [body]


def _bad_gateway(start_response: StartResponse, method: str, reason: str) -> list[bytes]:
    message = reason.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<Error><Code>BadGateway</Code><Message>ckptconform proxy: upstream failed: {message}"
        "</Message></Error>"
    ).encode()
    headers = [
        ("Content-Type", "application/xml"),
        ("Content-Length", "0" if method == "HEAD" else str(len(body))),
    ]
    start_response("502 Bad Gateway", headers)
    return [] if method == "HEAD" else [body]


class CountingProxy:
    """A reverse proxy to ``upstream`` on a free 127.0.0.1 port, with a request ledger.

    ``start()`` returns the URL clients use instead of ``upstream`` (it keeps the upstream's
    path prefix, so the request targets the client signs are the ones the upstream expects).
    With ``max_key_bytes`` a request that names a longer object key is answered by the proxy
    as S3 answers it (400 KeyTooLongError) and never reaches the upstream.
    ``stop()`` stops accepting, closes every open client and upstream connection and joins the
    server thread; it is idempotent. Also a context manager.
    """

    def __init__(
        self,
        upstream: str,
        ledger: RequestLedger | None = None,
        *,
        timeout: float = 300.0,
        max_key_bytes: int | None = None,
    ) -> None:
        self.upstream = upstream.rstrip("/")
        self._forwarder = _Forwarder(self.upstream, timeout, max_key_bytes)
        self.ledger = (ledger or RequestLedger()).wrap(self._forwarder)
        self._server: _ProxyServer | None = None
        self._thread: threading.Thread | None = None
        self.url: str | None = None

    @property
    def port(self) -> int | None:
        return None if self._server is None else int(self._server.server_address[1])

    def start(self) -> str:
        """Start serving (once); returns the proxy URL."""
        if self._server is not None:
            assert self.url is not None
            return self.url
        server = _ProxyServer(self.ledger)
        port = server.server_address[1]
        thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.1},
            name=f"ckptconform-proxy-{port}",
            daemon=True,
        )
        thread.start()
        self._server, self._thread = server, thread
        self.url = f"http://127.0.0.1:{port}{urlsplit(self.upstream).path}"
        return self.url

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving; close all connections; join the threads."""
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        self._forwarder.close_all()
        server.close_connections(timeout)
        if thread is not None:
            thread.join(timeout)

    def __enter__(self) -> CountingProxy:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = self.url or "not started"
        return f"CountingProxy({self.upstream!r} via {where})"
