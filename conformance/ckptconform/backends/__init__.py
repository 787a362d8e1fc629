"""The suite's storage backends, by name, and the session-wide set of started ones.

``--backend`` takes, for each leg, a built-in name (``BACKENDS``), a name registered in the
entry-point group ``ckptconform.backends``, or ``module:Class`` (a ``Backend`` subclass
importable here). ``resolve_backend`` turns one of them into the class; the leg is named by the
class's ``name``.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Iterable, Iterator
from importlib import metadata

from ckptconform.backends.base import Backend, BackendSettings, BackendUnavailableError, random_name
from ckptconform.backends.local import LocalBackend
from ckptconform.backends.memory import MemoryBackend
from ckptconform.backends.minio import MinioBackend
from ckptconform.backends.moto import MotoBackend
from ckptconform.backends.s3 import S3EndpointBackend
from ckptconform.backends.s3rver import S3rverBackend
from ckptconform.backends.sftp import SftpBackend

__all__ = [
    "BACKENDS",
    "DEFAULT_BACKENDS",
    "ENTRY_POINT_GROUP",
    "Backend",
    "BackendError",
    "BackendPool",
    "BackendSettings",
    "BackendUnavailableError",
    "random_name",
    "resolve_backend",
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
        SftpBackend,
    )
}
DEFAULT_BACKENDS = ("local", "memory", "moto")
#: Entry-point group in which other packages register backends (name -> ``module:Class``).
ENTRY_POINT_GROUP = "ckptconform.backends"


class BackendError(Exception):
    """A ``--backend`` value that names no usable backend (a usage error)."""


def resolve_backend(spec: str) -> type[Backend]:
    """The backend class ``spec`` names: built-in, registered entry point, or ``module:Class``."""
    spec = spec.strip()
    if spec in BACKENDS:
        return BACKENDS[spec]
    registered = {e.name: e for e in metadata.entry_points(group=ENTRY_POINT_GROUP)}
    if spec in registered:
        try:
            loaded = registered[spec].load()
        except Exception as exc:
            raise BackendError(
                f"--backend={spec}: loading entry point {registered[spec].value} failed: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        return _checked(spec, loaded)
    module_name, sep, attr = spec.partition(":")
    if not sep:
        known = ", ".join([*BACKENDS, *sorted(registered)])
        raise BackendError(
            f"--backend: unknown backend {spec!r}; known: {known}; or give MODULE:CLASS"
        )
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise BackendError(
            f"--backend={spec}: cannot import {module_name}: {type(exc).__name__}: {exc}"
        ) from exc
    if not hasattr(module, attr):
        raise BackendError(f"--backend={spec}: module {module_name} has no attribute {attr!r}")
    return _checked(spec, getattr(module, attr))


def _checked(spec: str, value: object) -> type[Backend]:
    if not (isinstance(value, type) and issubclass(value, Backend)):
        raise BackendError(
            f"--backend={spec}: {value!r} is not a subclass of ckptconform.backends.base.Backend"
        )
    problems = [attr for attr in ("name", "scheme") if not getattr(value, attr, "")]
    if problems:
        raise BackendError(f"--backend={spec}: {value.__name__} sets no {', '.join(problems)}")
    return value


class BackendPool:
    """The backends selected for a run: created up front, started on first use, all stopped once."""

    def __init__(self, specs: Iterable[str], settings: BackendSettings) -> None:
        self.backends: dict[str, Backend] = {}
        #: the ``--backend`` value each leg came from (its name, or ``module:Class``)
        self.specs: dict[str, str] = {}
        for spec in specs:
            cls = resolve_backend(spec)
            if cls.name in self.backends:
                raise BackendError(f"--backend names the leg {cls.name!r} twice")
            self.backends[cls.name] = cls(settings)
            self.specs[cls.name] = spec.strip()
        self._lock = threading.Lock()

    @property
    def names(self) -> list[str]:
        """The legs' names, in ``--backend`` order."""
        return list(self.backends)

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
