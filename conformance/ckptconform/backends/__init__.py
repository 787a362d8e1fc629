"""The suite's storage backends, by name, and the session-wide set of started ones."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator

from ckptconform.backends.base import Backend, BackendSettings, BackendUnavailableError, random_name
from ckptconform.backends.local import LocalBackend
from ckptconform.backends.memory import MemoryBackend
from ckptconform.backends.minio import MinioBackend
from ckptconform.backends.moto import MotoBackend
from ckptconform.backends.s3 import S3EndpointBackend
from ckptconform.backends.s3rver import S3rverBackend

__all__ = [
    "BACKENDS",
    "DEFAULT_BACKENDS",
    "Backend",
    "BackendPool",
    "BackendSettings",
    "BackendUnavailableError",
    "random_name",
]

BACKENDS: dict[str, type[Backend]] = {
    cls.name: cls
    for cls in (
        LocalBackend,
        MemoryBackend,
        MotoBackend,
        MinioBackend,
        S3rverBackend,
        S3EndpointBackend,
    )
}
DEFAULT_BACKENDS = ("local", "memory", "moto")


class BackendPool:
    """The backends selected for a run: created up front, started on first use, all stopped once."""

    def __init__(self, names: Iterable[str], settings: BackendSettings) -> None:
        self.backends: dict[str, Backend] = {name: BACKENDS[name](settings) for name in names}
        self._lock = threading.Lock()

    def __getitem__(self, name: str) -> Backend:
        return self.backends[name]

    def __iter__(self) -> Iterator[Backend]:
        return iter(self.backends.values())

    def get_started(self, name: str) -> Backend:
        """The backend, started; raises ``BackendUnavailableError`` with the reason."""
        backend = self.backends[name]
        backend.start()
        return backend

    def stop_all(self) -> None:
        """Stop every backend that was started (idempotent)."""
        with self._lock:
            for backend in self.backends.values():
                backend.stop()
