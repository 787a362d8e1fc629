"""MinIO in a container (testcontainers), bound to 127.0.0.1; skipped when no Docker engine answers.

The availability check pings the Docker engine, which fails in milliseconds on a machine
without one, so the leg is skipped with a one-line reason instead of hanging. Requests are
counted by a ``CountingProxy`` on 127.0.0.1 in front of the container (see ``backends.s3``):
MinIO verifies SigV4 over the ``Host`` header the client sent, which the proxy forwards
unchanged, so signed requests through the proxy are accepted.
"""

from __future__ import annotations

import os
from typing import Any

from ckptconform.backends.s3 import S3Backend, s3_missing_packages

__all__ = ["MinioBackend", "docker_problem"]

MINIO_PORT = 9000
_INSTALL = "pip install 'checkpoint-conformance[minio]'"


def docker_problem(exc: BaseException) -> str:
    """Why the Docker engine did not answer, in a few words: the operating system's error
    found in the exception's chain (docker-py wraps it in requests' and urllib3's), with the
    address it tried; else the exception's first line."""
    host = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    for cause in _chain(exc):
        if isinstance(cause, OSError) and cause.strerror:
            return f"{cause.strerror.lower()} at {host}"
    first_line = (str(exc).splitlines() or [""])[0].strip()
    return first_line or type(exc).__name__


def _chain(exc: BaseException) -> list[BaseException]:
    """The exception, its causes and contexts and the exceptions among their arguments."""
    seen: list[BaseException] = []
    pending = [exc]
    while pending:
        current = pending.pop(0)
        if any(current is known for known in seen):
            continue
        seen.append(current)
        pending += [e for e in (current.__cause__, current.__context__) if e is not None]
        pending += [arg for arg in current.args if isinstance(arg, BaseException)]
    return seen


class MinioBackend(S3Backend):
    name = "minio"
    has_ledger = True
    ledger_via_proxy = True

    _container: Any = None

    planned_endpoint = "MinIO container on 127.0.0.1, started on first use"

    def availability(self) -> str | None:
        try:
            import docker
        except ImportError as exc:
            return f"minio: docker is not installed ({exc}); {_INSTALL}"
        try:
            client = docker.from_env(timeout=5)
            try:
                client.ping()
            finally:
                client.close()
        except Exception as exc:
            return f"minio: no Docker engine answers (docker.from_env(): {docker_problem(exc)})"
        try:
            from testcontainers.community.minio import MinioContainer  # noqa: F401
        except ImportError as exc:
            return f"minio: testcontainers[minio] is not installed ({exc}); {_INSTALL}"
        missing = s3_missing_packages()
        return f"minio: {missing}" if missing else None

    def _start(self) -> None:
        from testcontainers.community.minio import MinioContainer

        container = MinioContainer(port=MINIO_PORT)
        container.with_bind_ports(MINIO_PORT, ("127.0.0.1", None))  # type: ignore[arg-type]
        self._container = container.start()
        try:
            host = container.get_container_host_ip()
            if host in ("localhost", "0.0.0.0"):
                host = "127.0.0.1"
            upstream = f"http://{host}:{container.get_exposed_port(MINIO_PORT)}"
            self.bucket = self.settings.s3_bucket
            self._key, self._secret = container.access_key, container.secret_key
            self._start_behind_proxy(upstream)
        except BaseException:
            # Backend.start() does not call _stop() for every failure: never leave a container.
            self._stop()
            raise

    def _stop(self) -> None:
        self._stop_proxy()
        if self._container is not None:
            self._container.stop()
            self._container = None
