"""What every storage backend of the suite provides, and the per-test sandbox on it.

A backend is a place where checkpoints go (a temp directory, fsspec's memory file system, an S3
server). It gives the tests a base URL, the ``storage_options`` an implementation needs to reach
it, raw access that bypasses the implementation (an fsspec file system with no caches, so it
never hides requests or sees stale listings), and, where the suite controls the server, a
request ledger. Backends start lazily, once per session, and the plugin stops them at the end.

Writing a backend for a store the kit does not ship (``--backend=mymodule:MyBackend``, or a
name registered in the entry-point group ``ckptconform.backends``): subclass ``Backend`` and

- set ``name`` (the leg's name in reports and ``--require-legs``) and ``scheme`` (the URL
  scheme targets see; a target whose ``schemes`` lack it skips the leg with that reason);
- set the traits the clauses read: ``object_store`` (no real directories: the coordinator
  creates none, LAY-6), ``cross_process`` (other processes see the data: SER-4 and the Spark
  leg run), ``shows_unclosed_files`` (a file's bytes can be read while its writer is still
  open, as on a POSIX file system: STR-11 runs), ``has_ledger`` (``self.ledger`` is a
  ``ckptconform.servers.ledger.RequestLedger`` once
  started: request-counting clauses run), ``accepts_any_credentials`` (tests may sign with
  made-up keys), ``conditional_writes`` (``False`` where the server ignores conditional
  writes, If-None-Match: the suite then passes the option ``allow_unconditional_metadata``
  to every test and skips the racing parts of MD-3 and MD-11 with that reason; ``None``
  until a backend that finds out at start has started) and ``max_key_bytes`` (the longest
  object key the server holds, where the suite knows one: the backend's counting proxy
  answers longer keys as S3 does, ``400 KeyTooLongError``, so a server that would crash on
  them never sees them);
- offer ``server_problem()`` where the server can die or stop answering under the suite (a
  process of its own, a remote endpoint): after a failed test the plugin asks it, and when it
  names a problem the leg's later tests are skipped with that one message (printed once at
  the end of the run) instead of each failing on a server that is gone;
- implement ``_start`` (set ``self._fs``, the raw fsspec file system the suite inspects with,
  and anything ``base_url`` needs), ``_stop`` (stop and delete what ``_start`` made) and
  ``base_url``; override ``storage_options`` when implementations need options to reach the
  store, ``availability`` to skip with a one-line reason where the store cannot run (a missing
  package or service), ``raw_path``/``url_of`` when the raw file system spells paths
  differently from the URLs, and ``unreachable_options``/``unreachable_url`` when the store's
  server is named otherwise than by an object store's ``endpoint_url`` (the unreachable-store
  clauses run where they give a route to a closed port); a backend whose server can drop a
  client's connection mid-request offers ``dropping_connection(operation, path_part)``, a
  context manager (REQ-12 runs where it exists; see ``ckptconform.backends.sftp``); a
  backend whose server holds several buckets offers ``fresh_bucket(prefix="...")``, a context
  manager yielding the name of a new, empty bucket (``prefix`` and random characters; the
  tests reach it as ``url_of(name)``) that it removes with everything in it when the block
  ends, and raising ``BackendUnavailableError`` with the reason where it may not create one
  (SER-4's savepoint in a second bucket and LAY-8's buckets of their own run where it exists,
  and skip with that reason elsewhere; see ``ckptconform.backends.s3``).

The shipped legs: ``local`` (``file://`` under a temporary directory; directories; other
processes see it; files show their bytes while they are written),
``memory`` (fsspec's shared in-process memory file system, inspected through
fsspec: an implementation must store into that same file system to pass there; it has real
directories, and no other process sees it), ``moto`` (moto's S3 server on 127.0.0.1 behind the
ledger; an object store; any credentials), ``s3rver`` (the npm S3 server, behind the counting
proxy), ``minio`` (testcontainers, behind the counting proxy), ``s3`` (any endpoint, behind
the counting proxy) and ``sftp`` (an asyncssh SFTP server on 127.0.0.1, reached through
fsspec's ``sftp``: real directories, a host in the URL's authority, other processes reach it;
no ledger).
"""

from __future__ import annotations

import contextlib
import secrets
import string
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from ckptconform.servers.ledger import RequestLedger

__all__ = ["Backend", "BackendSettings", "BackendUnavailableError", "random_name"]

_ALPHABET = string.ascii_lowercase + string.digits


def random_name(length: int = 16) -> str:
    """A random name that is safe as a path segment and an S3 key part."""
    return "".join(secrets.choice(_ALPHABET) for _ in range(length))


class BackendUnavailableError(Exception):
    """The backend cannot run here; ``str(exc)`` is the one-line reason."""


@dataclass(frozen=True)
class BackendSettings:
    """Command-line settings that backends read."""

    s3_endpoint: str | None = None
    s3_bucket: str = "ckptconform"


class Backend:
    """Base class: lifecycle, raw access helpers. Subclasses set the class attributes."""

    name: ClassVar[str] = ""
    scheme: ClassVar[str] = ""
    #: True when the store has no real directories (the coordinator creates none there).
    object_store: ClassVar[bool] = False
    #: True when another process sees the data (memory:// is per process).
    cross_process: ClassVar[bool] = True
    #: True when a file's bytes can be read while its writer is still open (POSIX files; not
    #: object stores or fsspec's memory file system, which commit a file when it is closed).
    shows_unclosed_files: ClassVar[bool] = False
    #: True when the backend records requests (``self.ledger`` is set once started).
    has_ledger: ClassVar[bool] = False
    #: True when the server accepts any credentials (moto): tests may sign with made-up keys.
    accepts_any_credentials: ClassVar[bool] = False
    #: False when the server ignores conditional writes (If-None-Match), so that no file can
    #: be created exclusively there; None until a backend that finds out at start has started.
    conditional_writes: bool | None = True
    #: The longest object key, in UTF-8 bytes, the server holds (None: no limit the suite knows).
    max_key_bytes: ClassVar[int | None] = None

    def __init__(self, settings: BackendSettings | None = None) -> None:
        self.settings = settings or BackendSettings()
        self.ledger: RequestLedger | None = None
        self._lock = threading.Lock()
        self._started = False
        self._start_error: str | None = None

    # ------------------------------------------------------------------ lifecycle

    def availability(self) -> str | None:
        """``None`` when the backend can run, else a one-line reason; cheap, no side effects."""
        return None

    def start(self) -> None:
        """Start once; a failure is remembered and raised again as ``BackendUnavailableError``."""
        with self._lock:
            if self._started:
                return
            if self._start_error is not None:
                raise BackendUnavailableError(self._start_error)
            reason = self.availability()
            if reason is None:
                try:
                    self._start()
                except BackendUnavailableError as exc:
                    reason = str(exc)
                    self._safe_stop()  # _start may have started a server before it gave up
                except Exception as exc:
                    reason = f"{self.name}: failed to start: {type(exc).__name__}: {exc}"
                    self._safe_stop()
            if reason is not None:
                self._start_error = reason
                raise BackendUnavailableError(reason)
            self._started = True

    def stop(self) -> None:
        """Stop and clean up; safe to call more than once, also when never started."""
        with self._lock:
            if self._started:
                self._started = False
                self._safe_stop()

    @property
    def started(self) -> bool:
        return self._started

    def server_problem(self) -> str | None:
        """Why the started backend's server no longer answers (its process exited, it refuses
        connections), or ``None``: asked after a failed test, so it may take a few seconds."""
        return None

    def _safe_stop(self) -> None:
        # A failing stop must not hide the run's result.
        with contextlib.suppress(Exception):
            self._stop()

    def _start(self) -> None:
        raise NotImplementedError

    def _stop(self) -> None:
        raise NotImplementedError

    # ------------------------------------------------------------------ access

    @property
    def storage_options(self) -> dict[str, Any]:
        """fsspec-style options an implementation needs to reach this backend (a copy)."""
        return {}

    def unreachable_options(self, port: int) -> dict[str, Any] | None:
        """``storage_options`` that reach this kind of store at ``127.0.0.1:<port>``, a port
        that refuses connections (BAD-10, BAD-11, BAD-14), with the backend's credentials;
        ``None`` where the backend reaches no server (local files, fsspec's memory).

        The default serves object stores (``endpoint_url``); a backend that names its server
        otherwise overrides it, and :meth:`unreachable_url` where URLs name the server too.
        """
        if not self.object_store:
            return None
        return {**self.storage_options, "endpoint_url": f"http://127.0.0.1:{port}"}

    def unreachable_url(self, url: str, port: int) -> str:
        """``url`` (of this backend) at the server :meth:`unreachable_options` names: the URL
        itself where URLs do not name a server (object stores' name their bucket)."""
        return url

    #: set by ``_start``: the file system behind ``raw``
    _fs: Any = None

    @property
    def raw(self) -> Any:
        """An fsspec file system for the suite's own inspection (bypasses the implementation).

        Starts the backend on first use.
        """
        if self._fs is None:
            self.start()
        return self._fs

    @property
    def base_url(self) -> str:
        """The URL under which the sandboxes of this run live."""
        raise NotImplementedError

    def describe(self) -> str:
        """One line for the run header (never shows secrets)."""
        return f"{self.name} ({self.scheme})"

    def new_root(self) -> str:
        """A fresh, random root URL for one test."""
        return f"{self.base_url}/{random_name(16)}"

    def raw_path(self, url: str) -> str:
        """The path of ``url`` as ``raw`` understands it."""
        return str(self.raw._strip_protocol(url)).rstrip("/")

    def url_of(self, raw_path: str) -> str:
        """The URL of a path that ``raw`` returned (inverse of ``raw_path``)."""
        return f"{self.scheme}://{raw_path}"

    def remove(self, url: str) -> None:
        """Delete everything below ``url`` (missing is fine)."""
        path = self.raw_path(url)
        try:
            if self.raw.exists(path):
                self.raw.rm(path, recursive=True)
        except FileNotFoundError:
            pass
