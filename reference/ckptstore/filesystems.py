"""The process-wide registry of fsspec file systems, scheme traits and the few raw operations.

Why a registry: storages are picklable configuration and handles are small values, so neither
may carry a file-system instance or credentials. A handle carries a *store token*: a short
hash of the store's identity (canonical scheme family plus endpoint URL without userinfo,
query or fragment; the region only when no endpoint is set, as it then picks AWS's endpoint).
The token is never derived from credentials, so two processes that reach the same store with
different secrets agree on it.

Registration: every storage (when constructed or unpickled) and every access registers its
``storage_options`` here, for the store they name and for the *authorities* (buckets) of its
checkpoint directory, savepoint directory and the savepoint targets and pointers it uses. No
I/O. A handle read or discard in any process resolves its file system by these rules
(:func:`get_filesystem`, the rule ``ckptstore.api`` states for all implementations):

1. the options registered for the handle's store (same token); among several, the most recent
   registration that also named the handle's bucket, else the most recent for the store;
2. else the most recent options registered for the handle's scheme and bucket (a storage
   unpickled here that reaches the same data through another endpoint URL or secret);
3. else the process-wide fsspec configuration for the scheme (``FSSPEC_S3_ENDPOINT_URL``,
   ``FSSPEC_S3_KEY``, ... or ``FSSPEC_CONFIG_DIR``), as ``fsspec.filesystem(scheme)`` applies it.

Options are always fsspec's configuration for the scheme updated by the storage's own options
(fsspec's precedence), with bounded S3 defaults below both (:data:`S3_DEFAULTS`): an
unreachable endpoint fails in seconds, not after minutes of retries. Instances are cached per
options and per process id, so a forked worker builds its own (s3fs keeps an event loop and
sessions that must not cross a fork, paramiko's SFTP client a connection); the cache key is a
salted digest (a per-process random salt), so not even an unsalted hash of a secret is kept.
No lock is held while an instance is made, and a forked child makes every lock anew
(:func:`_rearm_after_fork`): a worker forked while its parent's threads did I/O uses the
storage (PySpark's daemon and multiprocessing's fork start method fork workers so).

Retry budget (S3): how long an operation may keep trying is set by documented
``storage_options`` keys, all with bounded defaults (:data:`S3_DEFAULTS`) and range-checked by
``ckptstore.validation.require_storage_options``. The two storage-agnostic keys come first
(``ckptstore.s3``; the conformance target's options of the same names become them); when
either is set it replaces s3fs's ``retries`` and botocore's ``config_kwargs['retries']``, and
``retry_seconds`` caps ``read_timeout`` (``ckptstore.s3.apply_retry_budget``):

==========================================  ========  ===========================================
key                                         default   meaning
==========================================  ========  ===========================================
``retry_attempts``                          (3)       requests per operation (int in [1, 20])
``retry_seconds``                           (none)    seconds per public call (in (0, 3600])
``retries``                                 1         s3fs's own retry loop: one pass, so it
                                                      never multiplies botocore's attempts
``config_kwargs['connect_timeout']``        2 s       botocore: wait for a TCP connection
``config_kwargs['retries']``                (none)    botocore's own retries: replace the
                                                      reference's policy (``ckptstore.s3``)
``config_kwargs['read_timeout']``           20 s      botocore: wait for response bytes
==========================================  ========  ===========================================

:func:`retry_budget` computes the worst cases from them. By default a request is sent at most
3 times (botocore's standard mode: 5xx, timeouts and dropped connections are retried with
exponential backoff and jitter, at most 1 s and 2 s), so an operation under a persistent
server fault fails in a few seconds; throttling answers (S3's 503 SlowDown) get up to 10
requests within 10 s (``ckptstore.s3.DEFAULT_POLICY``); an *unreachable*
endpoint (refused, unresolvable, connect timeout) within ``3 * connect_timeout`` plus backoff:
about 9 s; an endpoint that accepts connections but never answers within ``3 *
read_timeout`` plus backoff (about a minute; set ``retry_seconds`` for less).
``AWS_MAX_ATTEMPTS``/``AWS_RETRY_MODE`` in the environment, like ``config_kwargs['retries']``,
hand the retries to botocore's own handler.

Traits: object stores (``s3``, ``gs``, ``az``, ...) have no real directories, so nobody sends
a request for a directory there (S1, ACC5, ACC6). ``file`` and ``memory`` have directories,
which the coordinator creates with ``makedirs``.

The raw operations here are the only places that touch a file system's quirks: exclusive
file creation, the atomic exclusive publish of ``_metadata`` (on S3 with the conditional-write
probe of ``ckptstore.s3``: :func:`probe_conditional_writes`, :func:`conditional_write_mode`),
deletes that tolerate a missing target (on S3 a directory's delete also aborts its open
multipart uploads), a GET-only read on S3 and server-side copies. Failures leave them as the
contract's ``OSError`` subclasses through ``ckptstore.io_errors``.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import io
import json
import os
import secrets
import shutil
import sys
import threading
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import IO, Any, BinaryIO, cast

import fsspec
import fsspec.config

from ckptstore import s3
from ckptstore.errors import (
    CheckpointFileExistsError,
    ConfigurationError,
    DisposalRefusedError,
    MetadataExistsError,
    UnsupportedSchemeError,
)
from ckptstore.io_errors import (
    contract_class,
    contract_error,
    describe_endpoint,
    endpoint_option,
    guarded_reader,
    guarded_writer,
    io_errors,
    is_unreachable,
    public_endpoint,
    region_option,
    translate_io_error,
    unwrap_writer,
)
from ckptstore.paths import HOST_SCHEMES, S3_SCHEMES, StoragePath
from ckptstore.redaction import redact_text

__all__ = [
    "DIRECTORY_SCHEMES",
    "OBJECT_STORE_PART_SIZE",
    "OBJECT_STORE_SCHEMES",
    "OBJECT_STORE_UPLOAD_BUFFER",
    "S3_DEFAULTS",
    "S3_SCHEMES",
    "THREAD_BOUND_SCHEMES",
    "OpenUpload",
    "RetryBudget",
    "SchemeTraits",
    "abort_open_upload",
    "authority_of",
    "conditional_write_mode",
    "copy_exclusive",
    "delete_file",
    "delete_tree",
    "discard_writer",
    "exclusive_mode",
    "existing_size",
    "file_info",
    "filesystem_for",
    "filesystem_options",
    "get_filesystem",
    "is_available_scheme",
    "list_directory",
    "list_open_uploads",
    "make_directories",
    "make_directory_exclusive",
    "open_exclusive_write",
    "open_for_read",
    "path_is_s3",
    "probe_conditional_writes",
    "publish_exclusive",
    "register_filesystem",
    "register_path",
    "remove_empty_directory",
    "require_available_schemes",
    "retry_budget",
    "store_token",
    "sync_and_close",
    "traits_for",
]

OBJECT_STORE_SCHEMES = frozenset(
    S3_SCHEMES | {"gs", "gcs", "az", "abfs", "abfss", "adl", "oss", "r2", "b2", "wasb", "wasbs"}
)
#: Schemes whose fsspec clients must not be shared by threads (paramiko's SFTP client mixes
#: up the answers of concurrent requests and hangs): each thread gets its own connection.
THREAD_BOUND_SCHEMES = frozenset({"sftp", "ssh", "ftp"})
#: Local schemes: real directories, and no connection options (the user's are meant for the
#: remote store). Remote file systems with directories are :data:`HOST_SCHEMES`.
DIRECTORY_SCHEMES = frozenset({"file", "memory"})
#: Bytes of one S3 state upload held in memory at most (``ckptstore.s3.ExclusiveUpload``):
#: a state up to this size is one PutObject; a larger one a multipart upload of a first part
#: this size and then parts of :data:`OBJECT_STORE_PART_SIZE`. With the interpreter's own
#: allocations a stream stays within the write buffer + 64 MiB that issue 13 sets, and no
#: state file of up to 48 MiB pays for a multipart upload (s3fs itself buffers 50 MiB blocks
#: and holds three copies of one while it sends it).
OBJECT_STORE_UPLOAD_BUFFER = 48 * 1024 * 1024
#: Parts after the first: half the buffer, so one can fill while the other is in flight.
OBJECT_STORE_PART_SIZE = OBJECT_STORE_UPLOAD_BUFFER // 2
_COPY_SCHEMES = frozenset(S3_SCHEMES | {"file", "memory"})
#: The largest object one S3 CopyObject request copies (larger ones need a multipart copy).
MAX_COPY_OBJECT_SIZE = 5 * 2**30
# Writers that are plain local/in-memory files: closing them is all the cleanup they need.
_LOCAL_FILE_TYPES: tuple[type, ...] = (io.BufferedWriter, io.FileIO, io.BytesIO)

#: Bounded S3 defaults, used unless the storage options or fsspec's configuration set them:
#: ``retries`` is s3fs's own retry loop (the reference applies it to the instance; s3fs takes
#: it as a class attribute, default 5): one pass, so botocore alone retries and the attempts
#: are not multiplied; ``config_kwargs`` go to botocore: a 2 s connect timeout and a 20 s read
#: timeout (botocore's own is 60 s). The retries are the reference's policy
#: (``ckptstore.s3.policy_of``: 3 attempts). A connection-refused endpoint then fails in about
#: 1-3 s; one that drops packets within about 3 x 2 s plus backoff (see :func:`retry_budget`).
S3_DEFAULTS: Mapping[str, Any] = {
    "use_listings_cache": False,
    "retries": 1,
    "config_kwargs": {
        "connect_timeout": 2,
        "read_timeout": 20,
    },
}
# fsspec applies its configuration for every protocol name of the implementation class.
_CONFIG_PROTOCOLS = {"s3": ("s3", "s3a")}


@dataclass(frozen=True, slots=True)
class SchemeTraits:
    """What the storage may assume about a scheme's file system."""

    scheme: str
    #: no real directories: never mkdir, never ask whether a directory exists
    object_store: bool
    #: directories must be created (``makedirs``) before files are written into them
    real_directories: bool
    #: ``fs.copy`` is a server-side copy (S3 CopyObject) or a cheap local link/copy
    server_side_copy: bool
    #: entropy injection makes sense (object stores; memory for tests) (E1)
    entropy_allowed: bool
    #: reads can skip the HEAD when the size is known (``open(..., size=n)``)
    read_with_size_hint: bool


def traits_for(scheme: str) -> SchemeTraits:
    """Traits of a canonical scheme; unknown schemes are treated as object stores."""
    scheme = scheme.lower()
    directories = scheme in DIRECTORY_SCHEMES or scheme in HOST_SCHEMES
    return SchemeTraits(
        scheme=scheme,
        object_store=not directories,
        real_directories=directories,
        server_side_copy=scheme in _COPY_SCHEMES,
        entropy_allowed=scheme in OBJECT_STORE_SCHEMES or scheme == "memory",
        read_with_size_hint=scheme in S3_SCHEMES,
    )


def _family(scheme: str) -> str:
    """Spellings of one store share it: ``s3``/``s3a``."""
    return "s3" if scheme in S3_SCHEMES else scheme


def authority_of(path: StoragePath) -> str | None:
    """The bucket (first segment) of an object-store path; ``None`` for file and memory."""
    if path.scheme in DIRECTORY_SCHEMES or not path.has_authority:
        return None
    return path.path.split("/", 1)[0] or None


def _fsspec_configuration(scheme: str) -> dict[str, Any]:
    """fsspec's process-wide configuration for ``scheme`` (environment and config dir)."""
    merged: dict[str, Any] = {}
    for protocol in _CONFIG_PROTOCOLS.get(_family(scheme), (scheme,)):
        merged.update(_copy_options(fsspec.config.conf.get(protocol, {})))
    return merged


def _copy_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """A copy with nested dicts copied (values such as a user's session object are shared)."""
    return {
        name: _copy_options(value) if isinstance(value, dict) else value
        for name, value in options.items()
    }


def filesystem_options(scheme: str, storage_options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The fsspec options actually used for ``scheme``.

    ``file`` and ``memory`` take none (the user's connection options are meant for the
    remote store). Otherwise: fsspec's configuration for the scheme, updated by
    ``storage_options`` (fsspec's own precedence: explicit options win, key by key), then
    the bounded :data:`S3_DEFAULTS` for whatever neither set. For S3 the listings cache is
    off unless asked for: a cached listing would hide other processes' writes.
    """
    if scheme in DIRECTORY_SCHEMES:
        return {}
    options = _fsspec_configuration(scheme)
    options.update(_copy_options(storage_options or {}))
    if scheme not in S3_SCHEMES:  # the reference's own keys, not the client's
        options.pop(s3.RETRY_ATTEMPTS, None)
        options.pop(s3.RETRY_SECONDS, None)
        options.pop(s3.ALLOW_UNCONDITIONAL_METADATA, None)
    if scheme in S3_SCHEMES:
        for name, value in S3_DEFAULTS.items():
            if name != "config_kwargs":
                options.setdefault(name, value)
        config = dict(options.get("config_kwargs") or {})
        defaults = S3_DEFAULTS["config_kwargs"]
        config.setdefault("connect_timeout", defaults["connect_timeout"])
        config.setdefault("read_timeout", defaults["read_timeout"])
        options["config_kwargs"] = config
        s3.apply_retry_budget(options)
    return options


def is_available_scheme(scheme: str) -> bool:
    """True when an fsspec file system serves ``scheme`` (registered or known to fsspec).

    Only fsspec's registry is consulted: nothing is imported. ``s3n`` (Hadoop's old native
    S3) is served by nothing and is refused.
    """
    from fsspec.registry import known_implementations, registry

    name = str(scheme).lower()
    return name in registry or name in known_implementations


def require_available_schemes(schemes: Iterable[str], setting: str = "allowed_schemes") -> None:
    """Raise ``ConfigurationError`` naming the first scheme no file system serves."""
    for scheme in schemes:
        if not is_available_scheme(scheme):
            raise ConfigurationError(
                f"{setting}: no file system serves the scheme {scheme!r} (fsspec knows no "
                f"implementation for it); use one of the schemes fsspec supports, such as "
                "'file', 'memory', 's3', 's3a', 'gs' or 'az'"
            )


@dataclass(frozen=True, slots=True)
class RetryBudget:
    """How long S3 requests keep trying, from ``storage_options`` (module docstring)."""

    #: s3fs's retry loop (read timeouts, throttling; not connection failures): 1 by default
    retries: int
    #: botocore's retries after the first attempt (standard mode)
    max_attempts: int
    connect_timeout: float
    read_timeout: float
    #: ``retry_seconds``: the deadline of one public call, all of its requests and retries
    #: included (``None``: none)
    seconds: float | None = None
    #: requests while the server throttles (503 SlowDown), when more than ``attempts``
    throttle_attempts: int | None = None
    #: how long throttling answers are retried (``None``: ``seconds``)
    throttle_seconds: float | None = None

    @property
    def attempts_per_request(self) -> int:
        """botocore's attempts for one request (the first one and its retries)."""
        return self.max_attempts + 1

    @property
    def attempts(self) -> int:
        """Requests one operation sends at most (s3fs's passes times botocore's attempts)."""
        return self.retries * self.attempts_per_request

    def _capped(self, seconds: float) -> float:
        return seconds if self.seconds is None else min(seconds, self.seconds)

    @property
    def unreachable_seconds(self) -> float:
        """Worst case for an unreachable endpoint: botocore's attempts, each a connect
        timeout, plus standard-mode backoff (at most 2**n s after attempt n)."""
        backoff = sum(min(2.0**n, 20.0) for n in range(self.max_attempts))
        return self._capped(self.attempts_per_request * self.connect_timeout + backoff)

    @property
    def failing_seconds(self) -> float:
        """Worst case for an endpoint that answers every request with an error at once
        (a persistent 500 or throttling): the backoff between the attempts."""
        backoff = sum(min(2.0**n, 20.0) for n in range(self.max_attempts))
        s3fs_backoff = sum(min(1.7**n * 0.1, 15.0) for n in range(self.retries))
        return self._capped(self.retries * backoff + s3fs_backoff)

    @property
    def throttled_seconds(self) -> float:
        """Worst case for an endpoint that throttles every request (503 SlowDown)."""
        if self.throttle_attempts is None or self.throttle_attempts <= self.attempts:
            return self.failing_seconds
        backoff = sum(min(2.0**n, 20.0) for n in range(self.throttle_attempts - 1))
        limit = self.throttle_seconds if self.throttle_seconds is not None else self.seconds
        return backoff if limit is None else min(backoff, limit)

    @property
    def unresponsive_seconds(self) -> float:
        """Worst case for an endpoint that accepts connections and never answers."""
        backoff = sum(min(2.0**n, 20.0) for n in range(self.max_attempts))
        s3fs_backoff = sum(min(1.7**n * 0.1, 15.0) for n in range(self.retries))
        per_try = self.attempts_per_request * self.read_timeout + backoff
        return self._capped(self.retries * per_try + s3fs_backoff)


def retry_budget(storage_options: Mapping[str, Any] | None = None) -> RetryBudget:
    """The S3 retry budget that ``storage_options`` give (defaults: :data:`S3_DEFAULTS`).

    The attempts are the retry policy's (``ckptstore.s3.policy_of``); where the user
    configured botocore's own retries instead, botocore's (:func:`_botocore_attempts`).
    """
    options = filesystem_options("s3", storage_options)
    config = options["config_kwargs"]
    policy = s3.policy_of(options)
    attempts = policy.attempts if policy is not None else _botocore_attempts(config["retries"])
    return RetryBudget(
        retries=max(1, int(options.get("retries", 1))),
        max_attempts=attempts - 1,
        connect_timeout=float(config["connect_timeout"]),
        read_timeout=float(config["read_timeout"]),
        seconds=None if policy is None else policy.seconds,
        throttle_attempts=None if policy is None else policy.throttle_attempts,
        throttle_seconds=None if policy is None else policy.throttle_seconds,
    )


def _botocore_attempts(retries: Mapping[str, Any]) -> int:
    """The requests per call of botocore's own retries as the user configured them
    (``config_kwargs['retries']``, where ``ckptstore.s3.with_environment_retries`` has folded
    in the environment's): ``max_attempts`` retries or ``total_max_attempts``, else botocore's
    standard mode's 3."""
    if "max_attempts" in retries:
        return int(retries["max_attempts"]) + 1
    if "total_max_attempts" in retries:
        return max(1, int(retries["total_max_attempts"]))
    return s3.DEFAULT_RETRY_ATTEMPTS


# A per-process salt: instance cache keys are digests of the full options (secrets
# included); salted, they reveal nothing even to someone who sees one.
_SALT = secrets.token_bytes(32)


def _digest(value: Any, *, salted: bool = False) -> str:
    blob = json.dumps(value, default=repr, sort_keys=True).encode("utf-8")
    if salted:
        return hmac.new(_SALT, blob, hashlib.sha256).hexdigest()
    return hashlib.sha256(blob).hexdigest()


def _identity(scheme: str, options: Mapping[str, Any]) -> str:
    family = _family(scheme)
    if scheme in DIRECTORY_SCHEMES:
        parts: list[Any] = [family]
    else:
        endpoint = public_endpoint(endpoint_option(options))
        parts = [family, endpoint]
        if endpoint is None:
            parts.append(str(region_option(options) or ""))
    return "fs-" + _digest(parts)[:16]


def store_token(scheme: str, storage_options: Mapping[str, Any] | None = None) -> str:
    """The token of the store that ``storage_options`` reach for ``scheme`` (no secrets).

    A short hash of the scheme family and the endpoint without userinfo, query or fragment
    (the region when no endpoint is set); credentials play no part. No registration.
    """
    return _identity(scheme, filesystem_options(scheme, storage_options))


@dataclass(frozen=True, slots=True)
class _Registration:
    scheme: str
    family: str
    options: dict[str, Any]
    #: salted digest of the full options (secrets included): the instance cache key,
    #: never shown, meaningless outside this process
    key: str


_LOCK = threading.Lock()
_REGISTRATIONS: dict[str, _Registration] = {}
#: store token -> key of its most recent registration (rule 1)
_BY_STORE: dict[str, str] = {}
#: (store token, authority) -> key of the most recent registration naming both (rule 1)
_BY_STORE_AUTHORITY: dict[tuple[str, str], str] = {}
#: (scheme family, authority) -> key of the most recent registration naming it (rule 2)
_BY_AUTHORITY: dict[tuple[str, str], str] = {}
#: (options key, pid) -> file system instance
_INSTANCES: dict[tuple[str, int, int | None], Any] = {}
_MEMORY_LOCK = threading.Lock()


def _registration(scheme: str, options: dict[str, Any]) -> _Registration:
    return _Registration(scheme, _family(scheme), options, _digest([scheme, options], salted=True))


def register_filesystem(
    scheme: str,
    storage_options: Mapping[str, Any] | None = None,
    *,
    authorities: Iterable[str | None] = (),
) -> str:
    """Register ``storage_options`` for ``scheme`` (and the given buckets); return the token.

    Thread-safe, no I/O. Registering again makes these options the most recent ones for
    their store and for every authority named (so a rotated secret wins over the old one).
    """
    options = filesystem_options(scheme, storage_options)
    token = _identity(scheme, options)
    registration = _registration(scheme, options)
    with _LOCK:
        _REGISTRATIONS[registration.key] = registration
        _BY_STORE[token] = registration.key
        if scheme not in DIRECTORY_SCHEMES:
            for authority in authorities:
                if authority:
                    _BY_STORE_AUTHORITY[(token, authority)] = registration.key
                    _BY_AUTHORITY[(registration.family, authority)] = registration.key
    return token


def register_path(path: StoragePath, storage_options: Mapping[str, Any] | None = None) -> str:
    """``register_filesystem`` for the scheme and bucket of ``path``."""
    return register_filesystem(path.scheme, storage_options, authorities=(authority_of(path),))


def _lookup(scheme: str, token: str | None, authority: str | None) -> _Registration | None:
    """Rules 1 and 2 of the module docstring (call with ``_LOCK`` held)."""
    family = _family(scheme)
    keys: list[str | None] = []
    if token:
        if authority:
            keys.append(_BY_STORE_AUTHORITY.get((token, authority)))
        keys.append(_BY_STORE.get(token))
    if authority and scheme not in DIRECTORY_SCHEMES:
        keys.append(_BY_AUTHORITY.get((family, authority)))
    for key in keys:
        registration = _REGISTRATIONS.get(key) if key else None
        if registration is not None and registration.family == family:
            return registration
    return None


def _instantiate(scheme: str, options: Mapping[str, Any]) -> Any:
    kwargs = _copy_options(options)
    if scheme in S3_SCHEMES:
        # s3fs with the retry budget; ``retries`` (s3fs keeps it as an attribute: its
        # __init__ passes unknown names on to the botocore session) on a private instance
        return s3.instantiate(kwargs)
    if scheme in THREAD_BOUND_SCHEMES:
        kwargs["skip_instance_cache"] = True  # fsspec's cache would share it between threads
    return fsspec.filesystem(scheme, **kwargs)


def get_filesystem(scheme: str, token: str | None = None, *, authority: str | None = None) -> Any:
    """The fsspec file system for a store token and bucket, by the rules of this module.

    Rule 1 (``token``'s own registrations), rule 2 (``authority``'s), rule 3 (fsspec's
    configuration for ``scheme``). Instances are cached per options and per process id.
    The registry's lock is never held while a file system is made: an SFTP client connects
    when it is made, and neither the other threads nor a child forked meanwhile
    (:func:`_rearm_after_fork`) may wait for that.
    """
    with _LOCK:
        registration = _lookup(scheme, token, authority)
    if registration is None:
        registration = _registration(scheme, filesystem_options(scheme, None))
    # one SFTP/FTP client per thread: their clients (paramiko, ftplib) serve one thread
    thread = threading.get_ident() if scheme in THREAD_BOUND_SCHEMES else None
    cache_key = (registration.key, os.getpid(), thread)
    with _LOCK:
        fs = _INSTANCES.get(cache_key)
    if fs is not None and thread is not None and not _connected(fs):
        fs = None  # the server dropped this thread's connection: connect anew (REQ-12)
    if fs is None:
        made = _instantiate_or_fail(registration.scheme, registration.options)
        with _LOCK:
            if thread is None:  # another thread may have made one meanwhile: the first wins
                fs = _INSTANCES.setdefault(cache_key, made)
            else:  # a thread-bound key is this thread's alone
                fs = _INSTANCES[cache_key] = made
    return fs


def _rearm_after_fork() -> None:
    """In a forked child: fresh locks, and fsspec's loop lock too.

    A thread of the parent may have held a lock at the fork; the child has only the forking
    thread, so nobody would ever release the child's copy. The registrations stay (they are
    configuration the child needs). The parent's file-system instances stay referenced but
    unused (the cache is keyed by process id): their clients' connections, sessions and event
    loop belong to the parent, and dropping them would run their finalizers in the child
    (s3fs closes its session through the parent's loop).

    fsspec resets its event loop in a child but not the lock that guards making one
    (``fsspec.asyn.reset_lock`` does both).
    """
    global _LOCK, _MEMORY_LOCK
    _LOCK = threading.Lock()
    _MEMORY_LOCK = threading.Lock()
    asyn = sys.modules.get("fsspec.asyn")
    reset_lock = getattr(asyn, "reset_lock", None)
    if callable(reset_lock):
        reset_lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_rearm_after_fork)


def _connected(fs: Any) -> bool:
    """Whether the connection of a thread-bound client (paramiko's, fsspec's ``sftp``) is
    still up; True for clients that do not say."""
    transport = getattr(getattr(fs, "client", None), "get_transport", None)
    if not callable(transport):
        return True
    active = transport()
    return active is not None and bool(active.is_active())


def _instantiate_or_fail(scheme: str, options: Mapping[str, Any]) -> Any:
    """``_instantiate``; a failure is ``UnsupportedSchemeError`` or a ``CheckpointIOError``.

    No file system for the scheme (unknown protocol, its package not installed) is PTR4's
    "Cannot access file system"; options the file system rejects are a misconfigured store;
    a server that cannot be reached (SFTP's clients connect when they are made) is an
    ``EndpointUnreachableError`` (``io_errors.contract_class``).
    """
    try:
        return _instantiate(scheme, options)
    except (ImportError, ValueError) as exc:
        if isinstance(exc, ImportError) or "protocol" in str(exc).lower():
            raise UnsupportedSchemeError(
                f"Cannot access file system for scheme '{scheme}': "
                f"{redact_text(str(exc), limit=300)}"
            ) from exc
        failure: Exception = exc
    except Exception as exc:
        failure = exc
    text = (
        f"Cannot create the '{scheme}' file system (endpoint "
        f"{describe_endpoint(scheme, options)}): "
        f"{type(failure).__name__}: {redact_text(str(failure), limit=300)}"
    )
    cls, code = contract_class(failure)
    raise contract_error(cls, text, code) from failure


def filesystem_for(path: StoragePath, token: str | None = None) -> Any:
    """``get_filesystem`` for the scheme and bucket of ``path``."""
    return get_filesystem(path.scheme, token, authority=authority_of(path))


# --------------------------------------------------------------------------- directories


#: ``makedirs`` calls of :func:`make_directories`: a checkpoint's deepest directory is a few
#: levels below one that exists, so a few lost races at most.
_MAKEDIRS_ATTEMPTS = 4


def make_directories(fs: Any, path: StoragePath) -> None:
    """``makedirs(path, exist_ok=True)`` on directory file systems; nothing on object stores.

    A directory that another writer created meanwhile is no failure, also where the file
    system reports it as a generic error (SFTP's and FTP's clients: "File exists"), and also
    where it was a parent (``makedirs`` creates them one by one): then it tries again, as
    often as there could be parents to lose the race for.
    """
    if not traits_for(path.scheme).real_directories:
        return
    with io_errors("create the directory", path, fs):
        for attempt in range(_MAKEDIRS_ATTEMPTS):
            try:
                fs.makedirs(path.fs_path, exist_ok=True)
                return
            except FileExistsError:
                return
            except OSError:
                if _is_directory(fs, path):
                    return
                if attempt == _MAKEDIRS_ATTEMPTS - 1:
                    raise


def make_directory_exclusive(fs: Any, path: StoragePath) -> bool:
    """Create ``path`` (parents as needed); False if it already existed.

    On object stores there is nothing to create and the answer is True: uniqueness rests on
    the random name (as in Flink, whose ``mkdirs`` also returns true for existing dirs).
    """
    if not traits_for(path.scheme).real_directories:
        return True
    make_directories(fs, path.parent)
    with io_errors("create the directory", path, fs):
        try:
            fs.mkdir(path.fs_path, create_parents=False)
        except FileExistsError:
            return False
        except OSError:
            if _is_directory(fs, path):
                return False
            raise
    return True


def _is_directory(fs: Any, path: StoragePath) -> bool:
    """Whether ``path`` is a directory now (asked only after a failed creation)."""
    try:
        return bool(fs.isdir(path.fs_path))
    except Exception:
        return False


def list_directory(fs: Any, path: StoragePath) -> list[dict[str, Any]]:
    """The entries directly in ``path`` (fsspec ``ls(detail=True)``); missing gives ``[]``.

    Used only by the crash-leftover scan (``ckptstore.filesystem.leftovers``), never on the
    checkpoint path: on S3 it is one ListObjectsV2 per page.
    """
    with io_errors("list", path, fs):
        try:
            entries = fs.ls(path.fs_path, detail=True)
        except (FileNotFoundError, NotADirectoryError):
            return []
    return [entry for entry in entries if isinstance(entry, dict)]


def remove_empty_directory(fs: Any, path: StoragePath) -> bool:
    """Remove ``path`` if it is an empty directory (directory file systems only).

    Never recursive: a directory that got a file meanwhile stays. True if it was removed.
    """
    if not traits_for(path.scheme).real_directories:
        return False
    try:
        if path.scheme == "file":
            os.rmdir(path.fs_path)
        else:
            with _MEMORY_LOCK:
                if fs.ls(path.fs_path, detail=False):
                    return False
                fs.rmdir(path.fs_path)
    except OSError:
        return False
    return True


# --------------------------------------------------------------------------- files


def open_exclusive_write(fs: Any, path: StoragePath) -> IO[bytes]:
    """Create ``path`` exclusively and return a binary writer (S11).

    Local files use the built-in ``open(..., 'xb')`` (atomic ``O_EXCL``, ``fileno`` for
    fsync). S3 gets a ``ckptstore.s3.ExclusiveUpload`` (:func:`_s3_upload`): one PutObject
    with ``If-None-Match: *`` at close for a state of up to :data:`OBJECT_STORE_UPLOAD_BUFFER`,
    a multipart upload completed with that header for a larger one. Other file systems get
    ``fs.open(path, 'xb')`` (:func:`exclusive_mode`) with their own buffering; object stores
    among them (gcsfs, adlfs) likewise create nothing until the file is committed, and a
    discarded writer uploads nothing. The writer
    raises the contract's errors (``ckptstore.io_errors.guarded_writer``); an existing file
    raises ``CheckpointFileExistsError``.
    """
    with io_errors("create", path, fs):
        if path.scheme == "file":
            writer: IO[bytes] = open(path.fs_path, "xb")  # noqa: SIM115 (returned open)
        elif path.scheme == "memory":
            with _MEMORY_LOCK:
                writer = cast(IO[bytes], fs.open(path.fs_path, "xb"))
        elif path.scheme in S3_SCHEMES:
            writer = cast(IO[bytes], _s3_upload(fs, path))
        else:
            writer = cast(IO[bytes], fs.open(path.fs_path, exclusive_mode(fs)))
            pipelined = getattr(writer, "set_pipelined", None)
            if callable(pipelined):  # paramiko's SFTP files: writes need not wait for acks
                pipelined(True)
    return guarded_writer(writer, path, fs)


def exclusive_mode(fs: Any) -> str:
    """The mode that creates a file exclusively for writing on ``fs``: ``"xb"``, but
    ``"wxb"`` for fsspec's SFTP file system, whose client (paramiko) does not take ``x`` to
    mean writing (it opens ``O_CREAT | O_EXCL`` without ``O_WRONLY``: every write fails)."""
    return "wxb" if "sftp" in getattr(fs, "protocol", ()) else "xb"


def _s3_upload(fs: Any, path: StoragePath) -> s3.ExclusiveUpload:
    """The writer of an S3 state file: :data:`OBJECT_STORE_UPLOAD_BUFFER` in memory at most.

    Storage options that size s3fs's writes are kept: ``default_block_size`` (other than
    s3fs's own 50 MiB) is both the buffer and the part size, as for s3fs's own files, and
    ``fixed_upload_size`` (stores that want equal parts) makes the first part a regular one.
    """
    bucket, key, _ = fs.split_path(path.fs_path)
    if not key:
        raise ValueError(f"not an object's path: {path.url}")
    limit, part = OBJECT_STORE_UPLOAD_BUFFER, OBJECT_STORE_PART_SIZE
    block = getattr(fs, "default_block_size", None)
    if isinstance(block, int) and block != getattr(type(fs), "default_block_size", block):
        limit = part = block
    elif getattr(fs, "fixed_upload_size", False):
        limit = part
    return s3.ExclusiveUpload(fs, str(bucket), str(key), buffer_limit=limit, part_size=part)


def discard_writer(writer: IO[bytes]) -> None:
    """Abandon a writer from :func:`open_exclusive_write` without committing it.

    For buffered remote files (s3fs) ``discard()`` aborts a multipart upload and drops the
    buffer, so ``close()`` uploads nothing. Errors are swallowed: this runs on cleanup paths.
    """
    writer = unwrap_writer(writer)
    discard = getattr(writer, "discard", None)
    if callable(discard) and not isinstance(writer, _LOCAL_FILE_TYPES):
        with contextlib.suppress(Exception):
            discard()
        # s3fs: after discard() the buffer is gone; mark closed so close() does not commit
        with contextlib.suppress(Exception):
            writer.closed = True  # type: ignore[misc]
    with contextlib.suppress(Exception):
        writer.close()


def sync_and_close(writer: IO[bytes], path: StoragePath) -> None:
    """Flush, fsync (local files) and close a writer, committing it (FLINK-36421)."""
    if path.scheme == "file":
        writer.flush()
        with io_errors("sync", path):
            os.fsync(writer.fileno())
    writer.close()


def publish_exclusive(
    fs: Any, path: StoragePath, data: bytes, *, probe_dir: StoragePath | None = None
) -> None:
    """Make ``path`` hold ``data`` at once and only if it does not exist (MD2).

    Local: temp file in the same directory + ``os.link`` (atomic, never overwrites).
    Memory: check-and-create under a lock. S3: ``ckptstore.s3.publish_metadata``: one
    PutObject with ``If-None-Match: *`` where the server honours it; where it does not,
    ``ConditionalWritesUnsupportedError``, or claim-then-write where the storage options
    allow unconditional metadata; the server is probed first if this process has not yet
    (under ``probe_dir``, default: the directory above ``path``'s;
    :func:`probe_conditional_writes`); a lost answer whose write committed is recognised by
    its bytes. Others: ``open(path, 'xb')``. An existing target raises
    ``MetadataExistsError``; any other failure the contract's ``OSError`` types
    (``ckptstore.io_errors``).

    A failure removes whatever the publish staged (a temporary file, a half-written target it
    created): nothing of it stays on the backend, so the next attempt finds a clean directory.
    Only a crash between the temp file's creation and its removal leaves
    ``._metadata.<hex>.inprogress`` behind (``ckptstore.filesystem.leftovers`` finds and removes
    it).
    """
    try:
        if path.scheme == "file":
            _publish_local(path, data)
        elif path.scheme == "memory":
            with _MEMORY_LOCK:
                if fs.exists(path.fs_path):
                    raise FileExistsError(errno.EEXIST, "exists", path.url)
                fs.pipe_file(path.fs_path, data)  # the whole file in one step
        elif path.scheme in S3_SCHEMES:
            s3.publish_metadata(fs, path, data, probe_dir or _probe_dir_for(path))
        else:
            _publish_created(fs, path, data)
    except (FileExistsError, CheckpointFileExistsError) as exc:
        if isinstance(exc, MetadataExistsError):
            raise
        raise MetadataExistsError(f"Target file {path.url} already exists.") from exc
    except Exception as exc:
        error = translate_io_error(exc, "publish", path, fs)
        raise error from exc


def _probe_dir_for(path: StoragePath) -> StoragePath:
    """Where a lazy probe goes: the directory that holds ``path``'s directory (``<job>`` for
    ``<job>/chk-<n>/_metadata``), or ``path``'s own directory right below a bucket."""
    directory = path.parent
    above = directory.parent
    return (
        above if above != directory and authority_of(above) and "/" in above.path else (directory)
    )


def probe_conditional_writes(fs: Any, directory: StoragePath) -> str:
    """Find out whether the store honours exclusive creates, once per process and store.

    S3: ``ckptstore.s3.probe_conditional_writes`` (three requests under ``directory`` the
    first time per endpoint and bucket, none afterwards). Other file systems create files
    exclusively by themselves: nothing is sent. Returns :func:`conditional_write_mode`.
    """
    if path_is_s3(directory):
        with io_errors("probe conditional writes in", directory, fs):
            return s3.probe_conditional_writes(fs, directory)
    return s3.CONDITIONAL_WRITES_NATIVE


def conditional_write_mode(fs: Any, path: StoragePath) -> str:
    """How ``_metadata`` is kept from being overwritten at ``path``'s store (no I/O).

    ``"honoured"`` (S3 servers that refuse a second ``If-None-Match: *`` create; local and
    memory file systems, whose exclusive create is native); on S3 servers that ignore the
    header ``"ignored: finalization refused"``, or ``"ignored: claim-then-write"`` where the
    storage options allow unconditional metadata (``ckptstore.s3``); or
    ``"unknown: not probed yet"`` on S3 before this process probed the server.
    """
    if path_is_s3(path):
        return s3.conditional_write_mode(fs, path)
    return s3.CONDITIONAL_WRITES_NATIVE


def path_is_s3(path: StoragePath) -> bool:
    """True for ``s3://``/``s3a://`` paths."""
    return path.scheme in S3_SCHEMES


#: The staging files of :func:`publish_exclusive` on local disks: ``.<name>.<hex>.inprogress``.
STAGING_SUFFIX = ".inprogress"


def _publish_local(path: StoragePath, data: bytes) -> None:
    """Write ``data`` to a staging file, fsync it and link it to ``path`` (never overwrites).

    Whatever fails (the write on a full disk or over the file size limit, the fsync, the
    link), the staging file is removed before the failure is raised.
    """
    directory = path.parent.path
    temp = f"{directory}/.{path.name}.{uuid.uuid4().hex}{STAGING_SUFFIX}"
    out = open(temp, "xb")  # noqa: SIM115 (closed below, before the staging file is removed)
    try:
        with out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.link(temp, path.fs_path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temp)
    with contextlib.suppress(OSError):
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def _publish_created(fs: Any, path: StoragePath, data: bytes) -> None:
    """Create ``path`` exclusively and write ``data`` (file systems without an atomic
    publish, such as SFTP); a failure after the create deletes the half-written file, which
    is this call's own (the exclusive create made it)."""
    out = fs.open(path.fs_path, exclusive_mode(fs))
    try:
        with out:
            out.write(data)
    except BaseException:
        with contextlib.suppress(Exception):
            fs.rm_file(path.fs_path)
        raise


#: What fsspec expands as a glob pattern (``fsspec.utils``' ``has_magic``) in ``rm``.
GLOB_CHARACTERS = ("*", "?", "[")


def client_reading(fs: Any, path: StoragePath) -> str | None:
    """Why ``fs`` would act on another path than ``path`` names, or ``None`` if it would not.

    fsspec's ``rm`` expands ``*``, ``?`` and ``[`` as glob patterns; s3fs's ``split_path``
    cuts a key at ``?versionId=`` (and reads ARNs as buckets). ``parse_storage_path`` refuses
    such paths already; this is the check at the deletion itself, whatever path reaches it
    (a listed name, a path made by another route).
    """
    if any(character in path.fs_path for character in GLOB_CHARACTERS):
        return "fsspec reads '*', '?' and '[' in it as a glob pattern"
    split_path = getattr(fs, "split_path", None)  # s3fs's; a client without one reads keys as given
    if path_is_s3(path) and split_path is not None:
        bucket, _, key = path.path.partition("/")
        read_bucket, read_key, version = split_path(path.path)
        if (read_bucket, read_key, version) != (bucket, key, None):
            return f"s3fs reads it as the key {redact_text(read_key)!r} of {read_bucket!r}"
    return None


def require_literal_path(fs: Any, path: StoragePath, action: str) -> None:
    """Raise ``DisposalRefusedError`` (nothing deleted) when ``fs`` would read ``path`` as
    another path (:func:`client_reading`): a deletion never reaches beyond what it names."""
    reason = client_reading(fs, path)
    if reason is not None:
        raise DisposalRefusedError(
            f"refused to {action} {path.shown}: {reason}, so the deletion could reach other "
            "paths. Nothing was deleted."
        )


def delete_file(fs: Any, path: StoragePath) -> None:
    """Delete one file; a missing file is fine; never touch the parent (H2, T-FSH2..5).

    When the delete succeeds nothing else is asked. When it fails, one existence check
    decides: gone means success, still there raises ``CheckpointIOError``. When the endpoint
    could not be reached at all, the check is skipped (it could not be answered either) and
    the failure is raised at once. A path the client would read as another one is refused
    (:func:`require_literal_path`).
    """
    require_literal_path(fs, path, "delete")
    try:
        fs.rm_file(path.fs_path)
        return
    except FileNotFoundError:
        return
    except Exception as exc:
        failure: Exception = exc
    if not is_unreachable(failure):
        try:
            still_there = bool(fs.exists(path.fs_path))
        except Exception:
            still_there = True
        if not still_there:
            return
    error = translate_io_error(failure, "delete", path, fs)
    raise error from failure


def delete_tree(fs: Any, path: StoragePath) -> None:
    """Delete a directory and everything below it; missing is fine (MD6, MD7, T-CCL1).

    S3: ``ckptstore.s3.delete_below``: the open multipart uploads below the directory are
    aborted (ListMultipartUploads), then one ListObjectsV2 and one DeleteObjects per 1000
    keys; a bucket's root is refused. Elsewhere ``fs.rm(recursive=True)``. Callers confine it
    to directories the storage's layout names (``ckptstore.filesystem.layout``); a path the client
    would read as another one is refused (:func:`require_literal_path`).
    """
    require_literal_path(fs, path, "delete")
    with io_errors("delete", path, fs):
        if path_is_s3(path):
            s3.delete_below(fs, path)
            return
        try:
            fs.rm(path.fs_path, recursive=True)
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                return
            raise


@dataclass(frozen=True, slots=True)
class OpenUpload:
    """An S3 multipart upload that was started and neither completed nor aborted."""

    path: StoragePath
    upload_id: str
    #: when it was started (UTC), as the server reports it
    initiated: Any


def list_open_uploads(fs: Any, directory: StoragePath) -> list[OpenUpload] | None:
    """The open multipart uploads below ``directory`` (S3: ListMultipartUploads per 1000).

    ``None`` where there are none to find (other file systems) or the server does not
    implement the listing (s3rver answers 501).
    """
    if not path_is_s3(directory):
        return None
    with io_errors("list the open uploads below", directory, fs):
        found = s3.list_open_uploads(fs, directory)
    if found is None:
        return None
    bucket = authority_of(directory)
    uploads = []
    for item in found:
        key = str(item.get("Key", ""))
        if key:
            path = StoragePath(directory.scheme, f"{bucket}/{key}")
            uploads.append(OpenUpload(path, str(item.get("UploadId", "")), item.get("Initiated")))
    return uploads


def abort_open_upload(fs: Any, upload: OpenUpload) -> None:
    """Abort an open multipart upload (S3 AbortMultipartUpload); a finished one is fine."""
    bucket, _, key = upload.path.path.partition("/")  # the listed key as it is
    with io_errors("abort the upload of", upload.path, fs):
        s3.abort_upload(fs, bucket, key, upload.upload_id)


def existing_size(fs: Any, path: StoragePath) -> int | None:
    """The size of the S3 object ``path``, ``None`` when it does not exist (one HEAD).

    Raises the client's exception when it cannot tell (callers decide).
    """
    info = s3.head_object(fs, path)
    return None if info is None else int(info.get("ContentLength", -1))


def file_info(fs: Any, path: StoragePath) -> dict[str, Any] | None:
    """``fs.info(path)`` or ``None`` when it does not exist (one HEAD on S3 for a file)."""
    with io_errors("look up", path, fs):
        try:
            return cast(dict[str, Any], fs.info(path.fs_path))
        except (FileNotFoundError, NotADirectoryError):
            return None


def open_for_read(fs: Any, path: StoragePath, size: int) -> BinaryIO:
    """Open a file for reading; with a known size, S3 costs one GET and no HEAD.

    The reader raises the contract's errors (``ckptstore.io_errors``) on open and on read:
    on S3 the GET happens at the first ``read()``. With a known ``size`` (not -1) the file
    must hold exactly that many bytes: a read that finds it shorter or longer raises
    ``StateSizeMismatchError`` instead of returning bytes, on every file system (on S3 each
    GET also compares the object's size the answer names, so a reader that never asks
    beyond ``size`` notices an object that grew).
    """
    with io_errors("read", path, fs):
        reader = _open_for_read(fs, path, size)
    return guarded_reader(reader, path, fs, size)


def _open_for_read(fs: Any, path: StoragePath, size: int) -> BinaryIO:
    if path.scheme == "file":
        return open(path.fs_path, "rb")
    if size >= 0 and traits_for(path.scheme).read_with_size_hint:
        return cast(BinaryIO, s3.open_sized(fs, path, size))
    return cast(BinaryIO, fs.open(path.fs_path, "rb"))


def copy_exclusive(fs: Any, source: StoragePath, target: StoragePath, size: int = -1) -> None:
    """Copy a file to a new ``target``, never overwriting, without moving the bytes through
    this process, on the file systems whose traits claim a server-side copy (local, memory,
    S3; nothing else calls it).

    Local: a hard link (``os.link`` never overwrites), else an exclusive ``open('xb')`` copy
    (across devices). Memory: check-and-copy under a lock. S3: one CopyObject (no HEAD) for
    files up to 5 GiB of known size, else s3fs's multipart copy; S3's CopyObject cannot be
    made exclusive everywhere, so callers pick fresh random target names. An existing target
    raises ``CheckpointFileExistsError``, a missing source ``CheckpointNotFoundError``, any
    other failure ``CheckpointIOError``.
    """
    message = f"Could not copy {source.url} to {target.url}"
    with io_errors("copy", target, fs, message=message):
        if source.scheme == "file":
            _copy_local_exclusive(source, target)
        elif source.scheme == "memory":
            with _MEMORY_LOCK:
                if fs.exists(target.fs_path):
                    raise FileExistsError(errno.EEXIST, "exists", target.url)
                fs.copy(source.fs_path, target.fs_path)
        elif 0 <= size <= MAX_COPY_OBJECT_SIZE:
            from fsspec.asyn import sync

            sync(fs.loop, fs._copy_basic, source.fs_path, target.fs_path)
        else:
            fs.copy(source.fs_path, target.fs_path)


def _copy_local_exclusive(source: StoragePath, target: StoragePath) -> None:
    try:
        os.link(source.fs_path, target.fs_path)
        return
    except FileExistsError:
        raise
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            raise
    # no hard links here (another device, a file system without them): an exclusive copy
    with open(source.fs_path, "rb") as src:
        try:
            with open(target.fs_path, "xb") as dst:
                shutil.copyfileobj(src, dst)
        except FileExistsError:
            raise
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(target.fs_path)
            raise
