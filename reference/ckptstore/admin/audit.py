"""``ckptstore audit``'s steps: list a root, read each ``_metadata``, join listed and referenced.

Three steps, each a function of plain values, so that a distributed run can do the first two
on executors and the third as a join, and compare its result with this one's:

1. :func:`ckptstore.admin.listing.list_files`: every file below the root with its size and
   age (on S3 the listing pages only);
2. :func:`read_checkpoint` per completed checkpoint or savepoint (a directory holding
   ``_metadata``): one read of the ``_metadata`` (on S3 one GET: its size comes from the
   listing), resolved to the files it needs (``ckptstore.admin.references``); a metadata that
   cannot be read or parsed is this checkpoint's ``error``, never the audit's;
   :func:`check_outside`: one existence and size request per file referenced from outside the
   root (a restore needs them too);
3. :func:`join`: per checkpoint intact or broken (each missing or short file named), the
   orphans (listed files no completed checkpoint or savepoint under the root references, and
   no ``_metadata`` of a completed one) by kind (``ckptstore.admin.model``).

The result, :class:`AuditResult`, is a value: ``to_dict()`` is JSON-serialisable and equal for
equal audits. :func:`run_audit` chains the steps in one process.

What an audit of a root cannot see: files below the root that a checkpoint *outside* it
references (another job restored from this one in CLAIM mode) look like orphans here.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ckptstore.admin import model
from ckptstore.admin.listing import ListedFile, list_files
from ckptstore.admin.references import (
    CheckpointReferences,
    MovedTree,
    checkpoint_references,
)
from ckptstore.errors import CheckpointStorageError
from ckptstore.flink_metadata import MetadataFormatError, read_metadata
from ckptstore.paths import S3_SCHEMES, StoragePath, parse_storage_path
from ckptstore.redaction import redact_text
from ckptstore.stores.operations import existing_size, file_info, open_for_read, path_is_s3
from ckptstore.stores.registry import filesystem_for, register_path

__all__ = [
    "INTACT",
    "OUTSIDE_WARNING",
    "AuditResult",
    "CheckpointAudit",
    "CheckpointRead",
    "FileProblem",
    "InFlight",
    "Orphan",
    "OutsideFile",
    "Progress",
    "check_outside",
    "join",
    "outside_urls",
    "read_checkpoint",
    "run_audit",
    "store_key",
    "url_prefix",
]

INTACT = "intact"
#: What every report says about what an audit cannot see.
OUTSIDE_WARNING = (
    "Files below this root that a checkpoint OUTSIDE it references (a job restored in CLAIM "
    "mode from one of these checkpoints) are invisible to this audit: they show as orphans."
)


class Progress(Protocol):
    """Where the steps report how far they are (``ckptstore.admin.report``)."""

    def step(self, phase: str, done: int, total: int | None = None) -> None: ...


class _Silent:
    def step(self, phase: str, done: int, total: int | None = None) -> None:
        return None


# ---------------------------------------------------------------------------------- values


@dataclass(frozen=True, slots=True)
class CheckpointRead:
    """Step 2's answer for one completed checkpoint or savepoint."""

    #: its directory, relative to the root (``""``: the root itself)
    directory: str
    metadata_url: str
    metadata_bytes: int
    references: CheckpointReferences | None
    format_version: int | None = None
    #: why the metadata could not be read or parsed (``references`` is then ``None``)
    error: str | None = None


@dataclass(frozen=True, slots=True)
class OutsideFile:
    """Step 2's answer for one file referenced from outside the root."""

    url: str
    #: its size, ``None`` when it does not exist or could not be asked (``error``)
    size: int | None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class FileProblem:
    """A file a checkpoint needs that is not there as needed."""

    url: str
    needed_bytes: int
    #: the bytes it holds, ``None`` when missing
    found_bytes: int | None
    #: ``missing``, ``short`` or ``unchecked: <why>`` (an outside file that could not be asked)
    problem: str
    outside: bool


@dataclass(frozen=True, slots=True)
class CheckpointAudit:
    """One completed checkpoint or savepoint under the root."""

    directory: str
    relative: str
    #: ``checkpoint`` (``chk-<n>``) or ``savepoint``
    kind: str
    #: the job directory, relative to the root (checkpoints only)
    job: str | None
    checkpoint_id: int | None
    format_version: int | None
    #: ``intact``; ``broken`` (a file missing or short); ``unreadable`` (the metadata);
    #: ``unverified`` (nothing found wrong, but some paths no store reaches)
    status: str
    error: str | None
    metadata_bytes: int
    files: int
    referenced_bytes: int
    inline_bytes: int
    problems: tuple[FileProblem, ...]
    #: files referenced outside the root (checked one request each)
    outside: tuple[str, ...]
    unresolved: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Orphan:
    url: str
    relative: str
    kind: str
    size: int
    modified: float | None


@dataclass(frozen=True, slots=True)
class InFlight:
    """A ``chk-<n>`` or ``savepoint-*`` directory without ``_metadata``."""

    relative: str
    job: str | None
    files: int
    bytes: int


@dataclass(frozen=True, slots=True)
class AuditResult:
    root: str
    moved_from: str | None
    #: what the root is (``ckptstore.admin.model.root_kind``)
    kind: str
    audited_at: float
    files_listed: int
    bytes_listed: int
    checkpoints: tuple[CheckpointAudit, ...]
    in_flight: tuple[InFlight, ...]
    orphans: tuple[Orphan, ...]

    @property
    def not_intact(self) -> tuple[CheckpointAudit, ...]:
        return tuple(c for c in self.checkpoints if c.status != INTACT)

    def orphan_totals(self) -> dict[str, dict[str, int]]:
        """Per orphan kind (every kind, in report order): ``files`` and ``bytes``."""
        totals = {kind: {"files": 0, "bytes": 0} for kind in model.ORPHAN_KINDS}
        for orphan in self.orphans:
            totals[orphan.kind]["files"] += 1
            totals[orphan.kind]["bytes"] += orphan.size
        return totals

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable value, equal for equal audits."""
        value = _plain(dataclasses.asdict(self))
        value["orphan_totals"] = self.orphan_totals()
        value["warning"] = OUTSIDE_WARNING
        return dict(value)


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


# ----------------------------------------------------------------------------------- steps


def store_key(url: str) -> str:
    """A URL as compared within an audit: ``s3a://`` and ``s3://`` name the same objects."""
    if url.startswith("s3://") or not url.startswith("s3"):  # as they are (S3_SCHEMES: s3*)
        return url
    scheme, sep, rest = url.partition("://")
    return f"s3://{rest}" if sep and scheme in S3_SCHEMES else url


def url_prefix(root: StoragePath) -> str:
    """What every URL below ``root`` starts with (``root.url`` and a ``/``, at a root too)."""
    return root.child("x").url[:-1]


def read_checkpoint(
    fs: Any,
    root: StoragePath,
    metadata: ListedFile,
    moved: MovedTree | None = None,
) -> CheckpointRead:
    """Read one ``_metadata`` listed below ``root`` and resolve what it needs (step 2).

    One read with the listed size (on S3 one GET). Whatever fails (the read, the format) is
    the answer's ``error``."""
    location = parse_storage_path(metadata.url)
    directory = location.parent
    relative = model.parent_of(metadata.url[len(url_prefix(root)) :])
    try:
        with open_for_read(fs, location, metadata.size) as reader:
            data = reader.read()
        parsed = read_metadata(data)
    except (OSError, MetadataFormatError, CheckpointStorageError) as exc:
        error = f"{type(exc).__name__}: {redact_text(str(exc), limit=500)}"
        return CheckpointRead(relative, metadata.url, metadata.size, None, error=error)
    references = checkpoint_references(parsed, directory, moved)
    return CheckpointRead(relative, metadata.url, metadata.size, references, parsed.version)


def outside_urls(root: StoragePath, reads: Iterable[CheckpointRead]) -> set[str]:
    """The files the reads reference that do not lie below ``root``."""
    prefix = store_key(url_prefix(root))
    return {
        f.url
        for read in reads
        if read.references is not None
        for f in read.references.files
        if not store_key(f.url).startswith(prefix)
    }


def check_outside(urls: Iterable[str], token: str | None = None) -> dict[str, OutsideFile]:
    """One existence and size request per URL (on S3 one HEAD); a failure is the answer's
    ``error``. ``token`` names the store whose options reach these files (the root's)."""
    found: dict[str, OutsideFile] = {}
    for url in sorted(urls):
        try:
            path = parse_storage_path(url)
            fs = filesystem_for(path, token)
            if path_is_s3(path):
                size = existing_size(fs, path)
            else:
                info = file_info(fs, path)
                size = None if info is None or info.get("type") == "directory" else info["size"]
            found[url] = OutsideFile(url, None if size is None else int(size))
        except Exception as exc:  # reported per file: the audit goes on
            message = f"{type(exc).__name__}: {redact_text(str(exc), limit=300)}"
            found[url] = OutsideFile(url, None, message)
    return found


def join(
    root: StoragePath,
    listed: Iterable[ListedFile],
    reads: Iterable[CheckpointRead],
    outside: Mapping[str, OutsideFile],
    *,
    moved_from: str | None = None,
    audited_at: float = 0.0,
) -> AuditResult:
    """Step 3: listed against referenced (module docstring). No I/O."""
    prefix = url_prefix(root)
    files = {store_key(f.url): f for f in listed}
    relatives = {key: f.url[len(prefix) :] for key, f in files.items()}
    completed = model.metadata_directories(relatives.values())
    reads = sorted(reads, key=lambda r: r.directory)
    referenced: set[str] = set()
    audits = []
    for read in reads:
        audits.append(_audit_one(root, read, files, outside))
        if read.references is not None:
            referenced.update(store_key(f.url) for f in read.references.files)
    orphans = []
    in_flight: dict[str, list[ListedFile]] = {}
    # where a file belongs follows from its directory: each directory is classified once
    places: dict[str, tuple[str | None, str]] = {}
    for key, relative in sorted(relatives.items(), key=lambda item: item[1]):
        listed_file = files[key]
        parent, _, name = relative.rpartition("/")
        place = places.get(parent)
        if place is None:
            directory = model.in_flight_directory(relative, completed)
            kind = "in-flight" if directory is not None else model.settled_kind(relative)
            place = places[parent] = (directory, kind)
        directory, kind = place
        if directory is not None:
            in_flight.setdefault(directory, []).append(listed_file)
        if key in referenced:
            continue
        if name == model.METADATA and parent in completed:
            continue
        orphans.append(
            Orphan(listed_file.url, relative, kind, listed_file.size, listed_file.modified)
        )
    return AuditResult(
        root=root.url,
        moved_from=moved_from,
        kind=model.root_kind(relatives.values(), root.name),
        audited_at=audited_at,
        files_listed=len(files),
        bytes_listed=sum(f.size for f in files.values()),
        checkpoints=tuple(audits),
        in_flight=tuple(
            InFlight(d, model.job_of(d), len(fs_), sum(f.size for f in fs_))
            for d, fs_ in sorted(in_flight.items())
        ),
        orphans=tuple(orphans),
    )


def _audit_one(
    root: StoragePath,
    read: CheckpointRead,
    files: Mapping[str, ListedFile],
    outside: Mapping[str, OutsideFile],
) -> CheckpointAudit:
    refs = read.references
    problems: list[FileProblem] = []
    outside_files: list[str] = []
    for ref in refs.files if refs is not None else ():
        answer = outside.get(ref.url)
        if answer is not None:
            outside_files.append(ref.url)
            problem = _outside_problem(ref.url, ref.needed_bytes, answer)
        else:
            problem = _listed_problem(ref.url, ref.needed_bytes, files.get(store_key(ref.url)))
        if problem is not None:
            problems.append(problem)
    if refs is None:
        status = "unreadable"
    elif problems:
        status = "broken"
    elif refs.unresolved:
        status = "unverified"
    else:
        status = INTACT
    return CheckpointAudit(
        directory=read.metadata_url.rpartition("/")[0],
        relative=read.directory,
        kind=model.checkpoint_kind(read.directory, root.name),
        job=model.job_of(read.directory),
        checkpoint_id=None if refs is None else refs.checkpoint_id,
        format_version=read.format_version,
        status=status,
        error=read.error,
        metadata_bytes=read.metadata_bytes,
        files=0 if refs is None else len(refs.files),
        referenced_bytes=0 if refs is None else refs.referenced_bytes,
        inline_bytes=0 if refs is None else refs.inline_bytes,
        problems=tuple(problems),
        outside=tuple(outside_files),
        unresolved=() if refs is None else refs.unresolved,
    )


def _listed_problem(url: str, needed: int, found: ListedFile | None) -> FileProblem | None:
    if found is None:
        return FileProblem(url, needed, None, "missing", False)
    if found.size < needed:
        return FileProblem(url, needed, found.size, "short", False)
    return None


def _outside_problem(url: str, needed: int, answer: OutsideFile) -> FileProblem | None:
    if answer.error is not None:
        return FileProblem(url, needed, None, f"unchecked: {answer.error}", True)
    if answer.size is None:
        return FileProblem(url, needed, None, "missing", True)
    if answer.size < needed:
        return FileProblem(url, needed, answer.size, "short", True)
    return None


# ----------------------------------------------------------------------------- one process


@dataclass(frozen=True, slots=True)
class AuditRun:
    """An audit's result and what it read (the deletion checks against every reference)."""

    result: AuditResult
    reads: tuple[CheckpointRead, ...]

    @property
    def referenced(self) -> frozenset[str]:
        """The comparison keys (:func:`store_key`) of every file a read references."""
        return frozenset(
            store_key(f.url)
            for read in self.reads
            if read.references is not None
            for f in read.references.files
        )


def run_audit(
    root_url: str,
    storage_options: Mapping[str, Any] | None = None,
    *,
    moved_from: str | None = None,
    progress: Progress | None = None,
) -> AuditRun:
    """The three steps in this process. A root that cannot be listed raises the contract's
    errors (``CheckpointNotFoundError``, ``EndpointUnreachableError``...)."""
    report = progress or _Silent()
    root = parse_storage_path(root_url)
    moved = None
    if moved_from is not None:
        moved = MovedTree(parse_storage_path(moved_from), root)
    token = register_path(root, storage_options)
    fs = filesystem_for(root, token)
    audited_at = time.time()
    listed = []
    for listed_file in list_files(fs, root):
        listed.append(listed_file)
        report.step("listed", len(listed))
    report.step("listed", len(listed), len(listed))
    prefix = url_prefix(root)
    metadata_files = [
        f for f in listed if f.url.rpartition("/")[2] == model.METADATA and f.url.startswith(prefix)
    ]
    reads = []
    for done, metadata in enumerate(metadata_files, 1):
        reads.append(read_checkpoint(fs, root, metadata, moved))
        report.step("read _metadata", done, len(metadata_files))
    outside = check_outside(outside_urls(root, reads), token)
    if outside:
        report.step("checked outside files", len(outside), len(outside))
    result = join(
        root,
        listed,
        reads,
        outside,
        moved_from=None if moved is None else moved.source.url,
        audited_at=audited_at,
    )
    return AuditRun(result, tuple(sorted(reads, key=lambda r: r.directory)))
