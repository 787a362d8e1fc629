"""moto's S3 server on 127.0.0.1, served through the request ledger.

``moto.server.ThreadedMotoServer`` builds its WSGI app internally, so the suite assembles the
same pieces itself (moto's dispatcher app and request handler on a threaded werkzeug server) and
puts ``RequestLedger`` in front. Every request from any process is then recorded.

moto checks a write's condition (If-None-Match, If-Match) and then writes, in two steps that
concurrent requests interleave: two conditional creates of one key can both succeed. S3
decides a conditional write atomically, so the suite serializes the writes that carry a
condition (``AtomicConditionalWrites``); MD-11's races on every backend rely on it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

from ckptconform.backends.s3 import S3Backend, s3_missing_packages
from ckptconform.servers.ledger import RequestLedger

__all__ = ["AtomicConditionalWrites", "MotoBackend"]

#: the WSGI names of the headers that make a write conditional
_CONDITIONS = ("HTTP_IF_NONE_MATCH", "HTTP_IF_MATCH")


class AtomicConditionalWrites:
    """WSGI middleware: conditional writes (PUT or POST with If-None-Match or If-Match) are
    served one at a time, so that moto's check and write of each are one step, as at S3."""

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        self._lock = threading.Lock()

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        conditional = environ.get("REQUEST_METHOD") in ("PUT", "POST") and any(
            name in environ for name in _CONDITIONS
        )
        if not conditional:
            return self.app(environ, start_response)
        with self._lock:
            return list(self.app(environ, start_response))


class MotoBackend(S3Backend):
    name = "moto"
    has_ledger = True
    accepts_any_credentials = True
    #: moto refuses a second If-None-Match create (AtomicConditionalWrites makes it atomic).
    conditional_writes = True

    _server: Any = None
    _thread: threading.Thread | None = None

    planned_endpoint = "moto server on 127.0.0.1, free port, started on first use"

    def availability(self) -> str | None:
        try:
            import moto.server  # noqa: F401
            import werkzeug  # noqa: F401
        except ImportError as exc:
            install = "pip install 'checkpoint-conformance[s3]'"
            return f"moto: moto[server] is not installed ({exc}); {install}"
        missing = s3_missing_packages()
        return f"moto: {missing}" if missing else None

    def _start(self) -> None:
        from moto.moto_server.werkzeug_app import (
            DomainDispatcherApplication,
            MotoRequestHandler,
            create_backend_app,
        )
        from werkzeug.serving import make_server

        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        moto_app = DomainDispatcherApplication(create_backend_app)
        self.ledger = RequestLedger(AtomicConditionalWrites(moto_app))
        self._server = make_server(
            "127.0.0.1", 0, self.ledger, threaded=True, request_handler=MotoRequestHandler
        )
        port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, name=f"ckptconform-moto-{port}", daemon=True
        )
        self._thread.start()
        self.endpoint = f"http://127.0.0.1:{port}"
        self.bucket = self.settings.s3_bucket
        self._key, self._secret = "testing", "testing"
        self._ensure_bucket()

    def _stop(self) -> None:
        self._fs = None
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
