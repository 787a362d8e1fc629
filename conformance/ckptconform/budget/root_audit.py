"""The budget run's last step: an audit of its root.

When the run is over, the subsumed checkpoints were disposed (their directories by the
coordinator, their task-owned state by the tasks that alone used it), so every file below the
run's root must be one the retained checkpoints or the savepoint reference, or their
``_metadata``. Anything else is an orphan: a file a storage left behind that nobody will ever
delete, and that a bucket accumulates checkpoint after checkpoint.

What the retained checkpoints reference is read from their ``_metadata`` in Flink's format
(``flinkmeta``): file handles by absolute path, relative handles against the metadata's
directory, segments of merged files by their file. Files are compared as ``bucket/key`` (an
object store's URL without its scheme, so ``s3a://`` and ``s3://`` match). The listing and the
reads are the kit's own raw requests, which the ledger leaves out of every count.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from flinkmeta import (
    FileHandle,
    MetadataFormatError,
    RelativeFileHandle,
    SegmentFileHandle,
    read_metadata,
    stream_handles,
)

__all__ = [
    "METADATA",
    "RootAudit",
    "audit_backend_root",
    "audit_root",
    "referenced_keys",
    "store_key",
]

METADATA = "_metadata"
#: Orphans named in the report (all are counted).
SHOWN = 20


def store_key(url: str) -> str:
    """``url`` as compared here: without its scheme and a trailing ``/``."""
    _, sep, rest = url.partition("://")
    return (rest if sep else url).rstrip("/")


def referenced_keys(metadata: bytes, directory: str) -> set[str]:
    """The files a ``_metadata`` read from ``directory`` references (``MetadataFormatError``
    when it is not Flink's format)."""
    keys: set[str] = set()
    base = store_key(directory)
    for handle in stream_handles(read_metadata(metadata)):
        if isinstance(handle, (FileHandle, SegmentFileHandle)):
            keys.add(store_key(handle.path))
        elif isinstance(handle, RelativeFileHandle):
            keys.add(f"{base}/{handle.relative_path}")
    return keys


@dataclass(frozen=True, slots=True)
class RootAudit:
    """What lies below the run's root against what the retained checkpoints reference."""

    root: str
    listed: int
    #: pointers of the checkpoints and savepoints kept (their ``_metadata`` read)
    retained: tuple[str, ...]
    referenced: int
    #: URLs of the files no retained checkpoint references, sorted
    orphans: tuple[str, ...]
    #: why the audit could not be made (a listing or a ``_metadata`` that failed)
    error: str | None = None

    @property
    def clean(self) -> bool:
        return self.error is None and not self.orphans

    def describe(self) -> str:
        """One line for the terminal and the report."""
        if self.error is not None:
            return f"root audit: not made: {self.error}"
        kept = f"{len(self.retained)} retained checkpoint(s) and savepoint(s)"
        if not self.orphans:
            return f"root audit: {self.listed} file(s) below the root, each one the {kept} need"
        shown = ", ".join(self.orphans[:SHOWN])
        more = f" and {len(self.orphans) - SHOWN} more" if len(self.orphans) > SHOWN else ""
        return (
            f"root audit: {len(self.orphans)} orphan(s) of {self.listed} file(s) below the root, "
            f"referenced by none of the {kept}: {shown}{more}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "listed": self.listed,
            "retained": list(self.retained),
            "referenced": self.referenced,
            "orphan_count": len(self.orphans),
            "orphans": list(self.orphans[:SHOWN]),
            "error": self.error,
            "clean": self.clean,
            "text": self.describe(),
        }


def audit_root(root: str, listed: Iterable[str], retained: Mapping[str, bytes]) -> RootAudit:
    """Orphans below ``root``: of the ``listed`` file URLs, those that no ``_metadata`` of
    ``retained`` (pointer -> its bytes) references and that are not such a ``_metadata``."""
    files = sorted(set(listed))
    needed: set[str] = set()
    for pointer, metadata in sorted(retained.items()):
        needed.add(f"{store_key(pointer)}/{METADATA}")
        try:
            needed |= referenced_keys(metadata, pointer)
        except MetadataFormatError as exc:
            return RootAudit(root, len(files), tuple(sorted(retained)), 0, (), f"{pointer}: {exc}")
    keys = {url: store_key(url) for url in files}
    orphans = tuple(url for url in files if keys[url] not in needed)
    referenced = sum(1 for key in keys.values() if key in needed)
    return RootAudit(root, len(files), tuple(sorted(retained)), referenced, orphans)


def audit_backend_root(backend: Any, root: str, pointers: Iterable[str]) -> RootAudit:
    """:func:`audit_root` of ``root`` on a backend of the suite, read with its raw file system
    (the kit's own requests, outside every phase's count)."""
    pointers = list(pointers)
    raw = backend.raw
    try:
        raw.invalidate_cache()  # the raw file system's listings are cached
        listed = [backend.url_of(path) for path in raw.find(backend.raw_path(root))]
        retained = {
            pointer: bytes(raw.cat_file(backend.raw_path(f"{pointer.rstrip('/')}/{METADATA}")))
            for pointer in pointers
        }
    except Exception as exc:  # the audit is reported as not made, the run goes on
        error = f"{type(exc).__name__}: {exc}"[:500]
        return RootAudit(root, 0, tuple(sorted(pointers)), 0, (), error)
    return audit_root(root, listed, retained)
