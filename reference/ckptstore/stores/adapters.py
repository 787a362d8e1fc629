"""Which adapter serves a scheme, and the traits the storage may assume about its stores.

``file`` is :class:`LocalStore`, ``memory`` :class:`MemoryStore`, ``s3``/``s3a``
:class:`S3Store`, the schemes of file systems on hosts (``paths.HOST_SCHEMES``)
:class:`RemoteStore` (thread-bound clients for SFTP and FTP), any other scheme plain fsspec
(:class:`FsspecStore`), whose stores are taken for object stores.

Traits: object stores (``s3``, ``gs``, ``az``, ...) have no real directories, so nobody sends
a request for a directory there (S1, ACC5, ACC6). ``file``, ``memory`` and the file systems on
hosts have directories, which the coordinator creates with ``makedirs``.
"""

from __future__ import annotations

from ckptstore.paths import HOST_SCHEMES, S3_SCHEMES, StoragePath
from ckptstore.stores.local import LocalStore
from ckptstore.stores.memory import MemoryStore
from ckptstore.stores.protocol import FsspecStore, SchemeTraits, StoreAdapter
from ckptstore.stores.remote import THREAD_BOUND_SCHEMES, RemoteStore
from ckptstore.stores.s3 import S3Store

__all__ = [
    "DIRECTORY_SCHEMES",
    "OBJECT_STORE_SCHEMES",
    "S3_SCHEMES",
    "THREAD_BOUND_SCHEMES",
    "adapter_for",
    "authority_of",
    "traits_for",
]

OBJECT_STORE_SCHEMES = frozenset(
    S3_SCHEMES | {"gs", "gcs", "az", "abfs", "abfss", "adl", "oss", "r2", "b2", "wasb", "wasbs"}
)
#: Local schemes: real directories, and no connection options (the user's are meant for the
#: remote store). Remote file systems with directories are ``paths.HOST_SCHEMES``.
DIRECTORY_SCHEMES = frozenset({"file", "memory"})
_COPY_SCHEMES = frozenset(S3_SCHEMES | {"file", "memory"})

_S3 = S3Store()
_ADAPTERS: dict[str, StoreAdapter] = {
    "file": LocalStore(),
    "memory": MemoryStore(),
    **dict.fromkeys(S3_SCHEMES, _S3),
    **{scheme: RemoteStore(thread_bound=scheme in THREAD_BOUND_SCHEMES) for scheme in HOST_SCHEMES},
}
_PLAIN = FsspecStore()


def adapter_for(scheme: str) -> StoreAdapter:
    """The adapter of a canonical scheme's store family (plain fsspec for unknown ones)."""
    return _ADAPTERS.get(scheme.lower(), _PLAIN)


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


def authority_of(path: StoragePath) -> str | None:
    """The bucket (first segment) of an object-store path; ``None`` for file and memory."""
    if path.scheme in DIRECTORY_SCHEMES or not path.has_authority:
        return None
    return path.path.split("/", 1)[0] or None
