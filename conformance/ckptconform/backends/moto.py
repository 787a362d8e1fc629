"""moto's S3 server on 127.0.0.1, served through the request ledger.

``moto.server.ThreadedMotoServer`` builds its WSGI app internally, so the suite assembles the
same pieces itself (moto's dispatcher app and request handler on a threaded werkzeug server) and
puts ``RequestLedger`` in front. Every request from any process is then recorded.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from ckptconform.backends.s3 import S3Backend, s3_missing_packages
from ckptconform.ledger import RequestLedger

__all__ = ["MotoBackend"]


class MotoBackend(S3Backend):
    name = "moto"
    has_ledger = True
    accepts_any_credentials = True

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
        self.ledger = RequestLedger(DomainDispatcherApplication(create_backend_app))
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
