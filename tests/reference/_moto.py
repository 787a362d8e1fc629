"""moto's S3 server with a server-side request ledger, for the reference's S3 acceptance tests.

The server is the conformance kit's own (``ckptconform.backends.moto.MotoBackend``): moto's
WSGI app behind ``ckptconform.servers.ledger.RequestLedger`` on a threaded werkzeug server bound to
127.0.0.1 on a free port. The ledger classifies every request that reaches the server, from
this process or any other, so the counts here are what S3 would bill, not what a client-side
spy believes it sent. Requests of the backend's own raw file system carry a marker and are
left out of the counts.

``reset_filesystem_caches()`` gives a test a fresh process state: it drops the reference's
per-process file-system instances and s3fs's instance cache, so no client built by an earlier
test (and no cache it may hold) can hide or add a request. ``reset_process_state()`` also
forgets what this process learned about the servers' conditional writes (``ckptstore.stores.s3``),
so the next setup (or first ``_metadata`` publish) probes again: the ``s3`` fixture starts every
test with it, which makes the probe's three requests deterministic.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ckptconform.backends.moto import MotoBackend
from ckptconform.servers.ledger import Recording, RequestLedger
from ckptstore.paths import parse_storage_path
from ckptstore.stores import registry, s3

__all__ = [
    "DIRECTORY_PROBES",
    "PROBE_KEY",
    "S3Root",
    "new_root",
    "reset_filesystem_caches",
    "reset_process_state",
    "running_moto",
]

#: Requests that look at directories or existence (S1): never on the worker path.
DIRECTORY_PROBES = ("HeadObject", "HeadBucket", "ListObjects", "ListObjectsV2")
#: What the key of a conditional-write probe object contains (``ckptstore.stores.s3``).
PROBE_KEY = "/.ckptstore-probe."


@contextlib.contextmanager
def running_moto() -> Iterator[MotoBackend]:
    """Start moto on 127.0.0.1 (free port) with a request ledger; always stop it."""
    backend = MotoBackend()
    try:
        backend.start()
        yield backend
    finally:
        backend.stop()


def reset_filesystem_caches() -> None:
    """Forget every file-system instance this process holds (reference registry and s3fs).

    The registry of options (tokens) stays: it holds configuration, not connections.
    """
    import s3fs

    registry._INSTANCES.clear()
    s3fs.S3FileSystem.clear_instance_cache()


def reset_process_state() -> None:
    """``reset_filesystem_caches`` and forget the conditional-write probe answers."""

    reset_filesystem_caches()
    s3.reset_conditional_write_modes()


@dataclass
class S3Root:
    """A fresh, random prefix in the moto bucket, with raw (ledger-invisible) access."""

    backend: MotoBackend
    url: str

    @property
    def ledger(self) -> RequestLedger:
        ledger = self.backend.ledger
        assert ledger is not None
        return ledger

    @property
    def storage_options(self) -> dict[str, Any]:
        return self.backend.storage_options

    @property
    def raw(self) -> Any:
        return self.backend.raw

    def sub(self, *parts: str) -> str:
        return "/".join([self.url, *parts])

    def key_of(self, url: str) -> str:
        """The object key (without bucket) of an ``s3://`` URL."""
        return parse_storage_path(url).path.partition("/")[2]

    def keys(self) -> list[str]:
        """Every object key below the root, sorted (raw listing, no cache)."""
        prefix = parse_storage_path(self.url).path
        try:
            found = self.raw.find(prefix)
        except FileNotFoundError:
            return []
        return sorted(str(p).partition("/")[2] for p in found)

    def read(self, url: str) -> bytes:
        return bytes(self.raw.cat_file(parse_storage_path(url).path))

    def put(self, url: str, data: bytes) -> None:
        """Write an object raw (the ledger does not count it)."""
        self.raw.pipe_file(parse_storage_path(url).path, data)

    def exists(self, url: str) -> bool:
        return bool(self.raw.exists(parse_storage_path(url).path))

    @contextlib.contextmanager
    def record(self) -> Iterator[Recording]:
        """Count the requests of the block, starting from a fresh process state."""
        reset_filesystem_caches()
        with self.ledger.record() as recording:
            yield recording

    def cleanup(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            path = parse_storage_path(self.url).path
            if self.raw.find(path):
                self.raw.rm(path, recursive=True)


def new_root(backend: MotoBackend) -> S3Root:
    """A root URL no other test uses."""
    return S3Root(backend, f"s3://{backend.bucket}/ref-{uuid.uuid4().hex[:16]}")
