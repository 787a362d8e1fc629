"""The process-wide registry of fsspec file systems: which options reach which store.

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
(fsspec's precedence), as the scheme's adapter completes them (``ckptstore.stores.adapters``;
on S3 with the bounded defaults of the retry budget, ``ckptstore.stores.retry``: an
unreachable endpoint fails in seconds, not after minutes of retries). Instances are cached per
options and per process id, so a forked worker builds its own (s3fs keeps an event loop and
sessions that must not cross a fork, paramiko's SFTP client a connection); the cache key is a
salted digest (a per-process random salt), so not even an unsalted hash of a secret is kept.
No lock is held while an instance is made, and a forked child makes every lock anew
(:func:`_rearm_after_fork`): a worker forked while its parent's threads did I/O uses the
storage (PySpark's daemon and multiprocessing's fork start method fork workers so).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import sys
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ckptstore.errors import ConfigurationError, UnsupportedSchemeError
from ckptstore.io_errors import (
    contract_class,
    contract_error,
    describe_endpoint,
    endpoint_option,
    public_endpoint,
    region_option,
)
from ckptstore.paths import StoragePath
from ckptstore.redaction import redact_text
from ckptstore.stores import protocol
from ckptstore.stores.adapters import DIRECTORY_SCHEMES, adapter_for, authority_of
from ckptstore.stores.protocol import family_of as _family

__all__ = [
    "filesystem_for",
    "filesystem_options",
    "get_filesystem",
    "is_available_scheme",
    "register_filesystem",
    "register_path",
    "require_available_schemes",
    "store_token",
]


def filesystem_options(scheme: str, storage_options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The fsspec options actually used for ``scheme``: fsspec's configuration for the scheme
    updated by ``storage_options``, as the scheme's adapter completes them (``file`` and
    ``memory`` take none: the user's connection options are meant for the remote store; S3
    gets the bounded defaults and the retry budget, ``ckptstore.stores.retry``; other clients
    never see the reference's own keys)."""
    configured = protocol.configured_options(scheme, storage_options)
    return adapter_for(scheme).client_options(configured)


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
    """A new file system of the scheme's adapter, on a copy of ``options``."""
    return adapter_for(scheme).instantiate(scheme, protocol.copy_options(options))


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
    adapter = adapter_for(scheme)
    # one SFTP/FTP client per thread: their clients (paramiko, ftplib) serve one thread
    thread = threading.get_ident() if adapter.thread_bound else None
    cache_key = (registration.key, os.getpid(), thread)
    with _LOCK:
        fs = _INSTANCES.get(cache_key)
    if fs is not None and thread is not None and not adapter.connected(fs):
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
    global _LOCK
    _LOCK = threading.Lock()
    asyn = sys.modules.get("fsspec.asyn")
    reset_lock = getattr(asyn, "reset_lock", None)
    if callable(reset_lock):
        reset_lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_rearm_after_fork)


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
