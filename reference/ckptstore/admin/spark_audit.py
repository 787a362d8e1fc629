"""``ckptstore audit --spark-master``: the audit's steps on a Spark cluster, the same result.

What runs where (``ckptstore.admin.audit`` defines the steps):

- the driver lists the root's top levels (:func:`ckptstore.admin.partitioned_listing.
  plan_listing`: on S3 a delimited listing per level) and cuts the rest into units: jobs,
  savepoints, and on S3 key ranges of a job's ``shared/`` when ``shared_ranges`` > 1;
- executors list the units (one task each: on S3 ListObjectsV2 pages, never a HEAD), read
  each ``_metadata`` with the audit's own :func:`~ckptstore.admin.audit.read_checkpoint` (one
  GET each) and check the files referenced from outside the root
  (:func:`~ckptstore.admin.audit.check_outside`);
- Spark joins what was listed against what is referenced (RDD joins keyed by
  :func:`~ckptstore.admin.audit.store_key`): the referenced files that exist go to their
  checkpoint, whose verdict :func:`~ckptstore.admin.audit.join` gives on an executor; the
  listed files no reference names (``subtractByKey``) are classified as orphans there; the
  in-flight directories are summed there (``reduceByKey``);
- the driver collects the small answers (verdicts, orphans, in-flight sums, the reads the
  deletion checks against) into :class:`~ckptstore.admin.audit.AuditRun`, the type
  :func:`~ckptstore.admin.audit.run_audit` returns: for the same tree both give equal
  ``to_dict()`` values but for ``audited_at``.

Storage options travel inside the tasks (pickled with them, never logged: :class:`_Job` shows
only the root) and each executor registers them (``ckptstore.stores.registry``), so the
executors reach the store as the driver does. ``memory://`` roots live in one process and are
refused. pyspark is imported here only, when a session is made.

:func:`spark_session` builds a session: for local masters (``local[N]``,
``local-cluster[E,C,M]``) on loopback, with this interpreter as the executors' Python and this
process's import path as theirs; the UI off; the JVM's own output to a log file
(``$CKPTSTORE_SPARK_LOG``, else a temporary file named when the start fails and removed after a
clean stop; ``-`` leaves it on the terminal). For a cluster URL the cluster's configuration
applies (``ckptstore`` installed on its executors, ``PYSPARK_PYTHON``), ``conf`` adds settings.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import os
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import sparkrun
from ckptstore.admin import model
from ckptstore.admin.audit import (
    AuditResult,
    AuditRun,
    CheckpointAudit,
    CheckpointRead,
    InFlight,
    Orphan,
    OutsideFile,
    Progress,
    check_outside,
    join,
    outside_urls,
    read_checkpoint,
    store_key,
    url_prefix,
)
from ckptstore.admin.listing import ListedFile
from ckptstore.admin.partitioned_listing import ListingUnit, list_unit, plan_listing
from ckptstore.admin.references import MovedTree
from ckptstore.errors import CheckpointIOError, ConfigurationError, InvalidArgumentError
from ckptstore.paths import StoragePath, parse_storage_path
from ckptstore.redaction import redact_text
from ckptstore.stores.registry import filesystem_for, register_path

__all__ = [
    "MINIMUM_JAVA",
    "SparkAuditError",
    "SparkUnavailableError",
    "run_spark_audit",
    "spark_session",
    "spark_unavailable_reason",
]

MINIMUM_JAVA = sparkrun.MINIMUM_JAVA
#: How long a new session waits for its executors to register (a cluster without free
#: resources would otherwise leave every job waiting for ever).
EXECUTOR_WAIT_SECONDS = 120.0
#: Tasks of one listing stage at most (units are grouped beyond).
MAX_LISTING_TASKS = 4096
#: Rows per shuffle partition of the join (at least one partition per slot).
SHUFFLE_ROWS = 200_000


class SparkUnavailableError(ConfigurationError):
    """Spark cannot run here (no pyspark, no Java 17, a master that does not start)."""


class SparkAuditError(CheckpointIOError):
    """A Spark job of the audit failed (an executor could not list or read); the message
    holds the executor's own error."""


# ------------------------------------------------------------------------------ session


def spark_unavailable_reason() -> str | None:
    """``None`` when a Spark session can start here, else one sentence why not."""
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed (pip install 'checkpoint-conformance[spark]')"
    return sparkrun.spark_unavailable_reason()


@contextlib.contextmanager
def spark_session(
    master: str,
    conf: Mapping[str, str] | None = None,
    *,
    executor_wait: float = EXECUTOR_WAIT_SECONDS,
) -> Iterator[Any]:
    """A SparkSession on ``master`` (module docstring), stopped with its JVM afterwards.

    Raises :class:`SparkUnavailableError` (one sentence, the JVM's log named) when Spark
    cannot run here, the master does not start or its executors do not register within
    ``executor_wait`` seconds (all of a ``local-cluster``, one of a cluster)."""
    reason = spark_unavailable_reason()
    if reason is not None:
        raise SparkUnavailableError(reason)
    log = sparkrun.jvm_log_path("CKPTSTORE_SPARK_LOG", "ckptstore-spark-")
    session = None
    try:
        with sparkrun.jvm_output_to(log):
            session = sparkrun.build_session(master.strip(), "ckptstore-audit", dict(conf or {}))
        sparkrun.await_executors(session, master.strip(), executor_wait)
    except Exception as exc:
        text = _first_line(exc)  # a py4j error asks the JVM for its text: before the stop
        sparkrun.stop_session(session)
        where = f" (the JVM's output: {log})" if log else ""
        raise SparkUnavailableError(
            f"Spark master {master} did not start: {type(exc).__name__}: {text}{where}"
        ) from None
    clean = False
    try:
        yield session
        clean = True
    finally:
        sparkrun.stop_session(session)
        if clean and log and "CKPTSTORE_SPARK_LOG" not in os.environ:
            with contextlib.suppress(OSError):
                os.unlink(log)


def _first_line(exc: BaseException) -> str:
    try:
        text = str(exc).strip()
    except Exception:  # py4j's text comes from the JVM, which may be gone
        return "(no message)"
    return redact_text(text.splitlines()[0] if text else "", limit=300)


# ------------------------------------------------------------------------- on executors


@dataclass(frozen=True, slots=True, repr=False)
class _Job:
    """What every task needs: the root, the storage options (secrets included: pickled into
    the tasks, shown nowhere), where the tree was written."""

    root_url: str
    options: Mapping[str, Any] | None
    moved_from: str | None

    def __repr__(self) -> str:
        return f"<audit job {parse_storage_path(self.root_url).shown}>"

    def store(self) -> tuple[StoragePath, Any, str]:
        """The root, its file system in this process and its store token."""
        root = parse_storage_path(self.root_url)
        token = register_path(root, self.options)
        return root, filesystem_for(root, token), token


def _list_units(job: _Job, units: Iterable[ListingUnit]) -> Iterator[ListedFile]:
    root, fs, _ = job.store()
    for unit in units:
        yield from list_unit(fs, root, unit)


def _read_metadata(job: _Job, files: Iterable[ListedFile]) -> Iterator[CheckpointRead]:
    root, fs, _ = job.store()
    moved = None
    if job.moved_from is not None:
        moved = MovedTree(parse_storage_path(job.moved_from), root)
    for metadata in files:
        yield read_checkpoint(fs, root, metadata, moved)


def _check_outside(job: _Job, urls: Iterable[str]) -> Iterator[tuple[str, OutsideFile]]:
    _, _, token = job.store()
    yield from check_outside(list(urls), token).items()


def _references(read: CheckpointRead) -> Iterator[tuple[str, str]]:
    """(comparison key, checkpoint directory) of each file ``read`` references."""
    if read.references is not None:
        for ref in read.references.files:
            yield store_key(ref.url), read.directory


def _verdict(
    root_url: str, outside: Mapping[str, OutsideFile], group: tuple[Any, Any]
) -> CheckpointAudit:
    """One checkpoint's verdict: :func:`join` of its read and the referenced files Spark
    found listed (the rest are missing)."""
    reads, found = group[1]
    (read,) = list(reads)
    return join(parse_storage_path(root_url), list(found), [read], outside).checkpoints[0]


def _orphan(prefix: str, completed: frozenset[str], listed: ListedFile) -> Orphan | None:
    """An unreferenced listed file as an orphan; ``None`` for a completed ``_metadata``."""
    relative = listed.url[len(prefix) :]
    if relative.rpartition("/")[2] == model.METADATA and model.parent_of(relative) in completed:
        return None
    kind = model.orphan_kind(relative, completed)
    return Orphan(listed.url, relative, kind, listed.size, listed.modified)


@dataclass(slots=True)
class _Summary:
    """What one pass over the listed files tells, per partition and merged on the driver."""

    files: int = 0
    bytes: int = 0
    metadata: list[ListedFile] = dataclasses.field(default_factory=list)
    #: per ``chk-<n>`` or ``savepoint-*`` directory holding files: (files, bytes); the ones
    #: without ``_metadata`` are the in-flight ones
    directories: dict[str, tuple[int, int]] = dataclasses.field(default_factory=dict)
    #: what :func:`model.root_kind` looks at (:func:`_shape`)
    shapes: set[str] = dataclasses.field(default_factory=set)

    def add(self, other: _Summary) -> _Summary:
        self.files += other.files
        self.bytes += other.bytes
        self.metadata.extend(other.metadata)
        for directory, sums in other.directories.items():
            self.directories[directory] = _add(self.directories.get(directory, (0, 0)), sums)
        self.shapes |= other.shapes
        return self


def _summarize(prefix: str, files: Iterable[ListedFile]) -> Iterator[_Summary]:
    summary = _Summary()
    for listed in files:
        relative = listed.url[len(prefix) :]
        summary.files += 1
        summary.bytes += listed.size
        if relative.rpartition("/")[2] == model.METADATA:
            summary.metadata.append(listed)
        directory = model.in_flight_directory(relative, ())
        if directory is not None:
            sums = summary.directories.get(directory, (0, 0))
            summary.directories[directory] = _add(sums, (1, listed.size))
        summary.shapes.add(_shape(relative))
    yield summary


def _shape(relative: str) -> str:
    """What :func:`model.root_kind` looks at of a path: its first two segments, whether it
    goes deeper, whether a top-level file is ``_metadata``."""
    parts = relative.split("/")
    if len(parts) == 1:
        return parts[0] if parts[0] == model.METADATA else "-"
    return "/".join(parts[:2]) + ("/-" if len(parts) > 2 else "")


def _add(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    return a[0] + b[0], a[1] + b[1]


# ------------------------------------------------------------------------------ driver


class _Silent:
    def step(self, phase: str, done: int, total: int | None = None) -> None:
        return None


def run_spark_audit(
    session: Any,
    root_url: str,
    storage_options: Mapping[str, Any] | None = None,
    *,
    moved_from: str | None = None,
    progress: Progress | None = None,
    shared_ranges: int = 1,
) -> AuditRun:
    """The audit of ``root_url`` on ``session``'s cluster (module docstring): the result
    :func:`~ckptstore.admin.audit.run_audit` gives. A root that cannot be listed raises the
    contract's errors as there; a failing Spark job raises :class:`SparkAuditError`."""
    report = progress or _Silent()
    root = parse_storage_path(root_url)
    if root.scheme == "memory":
        raise InvalidArgumentError(
            "memory:// lives in one process: executors cannot see it (audit it without "
            "--spark-master)"
        )
    moved = None if moved_from is None else parse_storage_path(moved_from).url
    fs = filesystem_for(root, register_path(root, storage_options))
    audited_at = time.time()
    plan = plan_listing(fs, root, shared_ranges=shared_ranges)
    job = _Job(root.url, dict(storage_options or {}), moved)
    prefix = url_prefix(root)
    context = session.sparkContext
    try:
        return _run(context, job, root, prefix, plan.files, plan.units, report, audited_at)
    except (CheckpointIOError, InvalidArgumentError):
        raise
    except Exception as exc:
        if type(exc).__module__.startswith(("pyspark", "py4j")):
            message = f"the Spark audit of {root.shown} failed: {_worker_error(exc)}"
            raise SparkAuditError(message) from None
        raise


def _run(
    context: Any,
    job: _Job,
    root: StoragePath,
    prefix: str,
    top_files: tuple[ListedFile, ...],
    units: tuple[ListingUnit, ...],
    report: Progress,
    audited_at: float,
) -> AuditRun:
    slots = max(1, int(context.defaultParallelism))
    listed = context.parallelize(list(top_files), 1)
    if units:
        tasks = min(len(units), MAX_LISTING_TASKS)
        below = context.parallelize(list(units), tasks).mapPartitions(
            lambda part: _list_units(job, part)
        )
        listed = listed.union(below)
    listed = listed.persist()
    try:
        summary = _Summary()
        for part in listed.mapPartitions(lambda files: _summarize(prefix, files)).collect():
            summary.add(part)
        report.step("listed", summary.files, summary.files)
        metadata = sorted(summary.metadata, key=lambda f: f.url)
        reads_rdd = (
            context.parallelize(metadata, max(1, min(len(metadata), slots * 4)))
            .mapPartitions(lambda part: _read_metadata(job, part))
            .persist()
        )
        try:
            reads = sorted(reads_rdd.collect(), key=lambda r: r.directory)
            report.step("read _metadata", len(reads), len(metadata))
            outside = _outside(context, job, root, reads, slots)
            if outside:
                report.step("checked outside files", len(outside), len(outside))
            shuffle = max(slots, min(MAX_LISTING_TASKS, summary.files // SHUFFLE_ROWS))
            verdicts, orphans = _joined(context, listed, reads_rdd, root, reads, outside, shuffle)
        finally:
            reads_rdd.unpersist()
    finally:
        listed.unpersist()
    completed = {read.directory for read in reads}
    return AuditRun(
        AuditResult(
            root=root.url,
            moved_from=job.moved_from,
            kind=model.root_kind(sorted(summary.shapes), root.name),
            audited_at=audited_at,
            files_listed=summary.files,
            bytes_listed=summary.bytes,
            checkpoints=verdicts,
            in_flight=tuple(
                InFlight(d, model.job_of(d), files, size)
                for d, (files, size) in sorted(summary.directories.items())
                if d not in completed
            ),
            orphans=orphans,
        ),
        tuple(reads),
    )


def _outside(
    context: Any, job: _Job, root: StoragePath, reads: list[CheckpointRead], slots: int
) -> dict[str, OutsideFile]:
    urls = sorted(outside_urls(root, reads))
    if not urls:
        return {}
    rdd = context.parallelize(urls, max(1, min(len(urls), slots * 4)))
    return dict(rdd.mapPartitions(lambda part: _check_outside(job, part)).collect())


def _joined(
    context: Any,
    listed: Any,
    reads_rdd: Any,
    root: StoragePath,
    reads: list[CheckpointRead],
    outside: dict[str, OutsideFile],
    partitions: int,
) -> tuple[tuple[CheckpointAudit, ...], tuple[Orphan, ...]]:
    """Listed against referenced, by Spark, in one job of two shuffles (module docstring):
    listed and referenced files cogrouped by comparison key, which sends each unreferenced
    file to the orphans and each referenced one to its checkpoints; those cogrouped with
    their reads by directory, for the verdicts."""
    completed = frozenset(read.directory for read in reads)
    root_url = root.url
    prefix = url_prefix(root)
    if listed.getNumPartitions() > partitions:
        listed = listed.coalesce(partitions)
    by_key = listed.keyBy(lambda f: store_key(f.url))
    matched = by_key.cogroup(reads_rdd.flatMap(_references), partitions).flatMap(_matched)
    orphans = (
        matched.filter(lambda pair: pair[0] is None)
        .map(lambda pair: _orphan(prefix, completed, pair[1]))
        .filter(lambda orphan: orphan is not None)
    )
    verdicts = (
        reads_rdd.keyBy(lambda r: r.directory)
        .cogroup(matched.filter(lambda pair: pair[0] is not None), partitions)
        .map(lambda group: _verdict(root_url, outside, group))
    )
    answers = verdicts.union(orphans).collect()
    return (
        tuple(sorted((a for a in answers if isinstance(a, CheckpointAudit)), key=_relative)),
        tuple(sorted((a for a in answers if isinstance(a, Orphan)), key=_relative)),
    )


def _matched(group: tuple[str, Any]) -> Iterator[tuple[str | None, ListedFile]]:
    """A listed file under each directory that references it, or under ``None`` when none
    does (an orphan candidate); references to files not listed yield nothing (missing)."""
    listed, directories = group[1]
    files = list(listed)
    names = set(directories)
    for listed_file in files:
        if not names:
            yield None, listed_file
        for directory in sorted(names):
            yield directory, listed_file


def _relative(value: CheckpointAudit | Orphan) -> str:
    return value.relative


def _worker_error(exc: BaseException) -> str:
    """The executor's own exception out of a Spark error (its last non-frame lines)."""
    lines = [line.rstrip() for line in str(exc).splitlines() if line.strip()]
    tail = [line for line in lines if not line.startswith((" ", "\t", "Traceback", "at "))]
    text = " | ".join(tail[-3:]) if tail else " | ".join(lines[:3])
    return redact_text(f"{type(exc).__name__}: {text}", limit=600)
