"""Apache Flink 2.3.0's own Java checkpoint storages as conformance targets.

``pytest --impl=flink`` runs the suite against Flink's ``FileSystemCheckpointStorage``;
``--impl=flink-jobmanager`` against its ``JobManagerCheckpointStorage`` (with the checkpoint
directory set, so completed checkpoints are addressable). Both drive the Java classes through
a py4j gateway to one JVM per process (the kit's ``ckptconform.flink.gateway``, re-exported
as ``flinktarget.gateway``) that runs the jars of the ``apache-flink-libraries`` 2.3.0 wheel,
fetched with pip on first use and cached (``flinktarget.jars``). Install with
``pip install 'checkpoint-conformance[flink]'``; Java 11 or newer must be on the PATH (or in
JAVA_HOME).

The entry points are callables: loading the target checks Java and py4j and fetches the jars,
so a machine without Java gets one sentence (a usage error of the run), not a stack trace.

Capabilities, claimed only where Flink 2.3.0 has the behaviour on the local file system (the
wheel ships no S3 file system, so ``schemes`` is ``file`` and the S3 legs are skipped with
that reason):

- ``flink``: ``file-layout``, ``flat-layout`` (``execution.checkpointing.create-subdir`` in
  the configuration), ``inline-state`` (``state.storage.fs.memory-threshold`` and
  ``write-buffer-size`` as constructor arguments), ``savepoints``, ``relocatable-savepoints``
  (exclusive state in relative handles), ``task-owned-state``. Not ``fast-duplicate``: Flink's
  local file system is no ``PathsCopyingFileSystem``, so its toolset is the
  ``NotDuplicatingCheckpointStateToolset``; not ``entropy-injection`` (only Flink's S3 file
  systems inject entropy); not ``retry-budget`` or ``redacts-secrets`` (no such options or
  redaction in Flink).
- ``flink-jobmanager``: ``savepoints``, ``relocatable-savepoints``, ``memory-limit``
  (``maxStateSize``).

Where Flink 2.3.0 fails a clause, ``DEVIATIONS`` says why: a Flink bug, or a clause that goes
beyond Flink on purpose (its rationale says so and why), each with its reproducer in
tests/flink/test_flink_deviations.py. The targets' ``known_failures`` (strict xfail) are made
from them, and ``scripts/flink_outcomes.py`` turns them and the runs' reports into
CONFORMANCE.md's Flink columns. The targets' ``version`` is Flink's, so the run header says
which Flink ran (not the version of this adapter's distribution).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ckptstore.api import CheckpointStorage

__all__ = [
    "BEYOND_FLINK",
    "DEVIATIONS",
    "FLINK_BUG",
    "Deviation",
    "FlinkTarget",
    "conformance_target",
    "filesystem_target",
    "jobmanager_target",
    "jobmanager_target_unchecked",
    "target_unchecked",
]

__version__ = "2.3.0"

#: The kinds of deviation: Flink is wrong (a bug, with a reproducer), or the clause goes beyond
#: Flink on purpose (its rationale says so and why).
FLINK_BUG = "flink-bug"
BEYOND_FLINK = "beyond-flink"
DEVIATION_KINDS = (FLINK_BUG, BEYOND_FLINK)
#: The module of the reproducers (``Deviation.reproducer`` names a test in it).
REPRODUCERS = "tests/flink/test_flink_deviations.py"


@dataclass(frozen=True)
class Deviation:
    """A clause that Flink 2.3.0 fails: why, and the test that reproduces Flink's behaviour."""

    kind: str
    reason: str
    reproducer: str

    def known_failure(self) -> str:
        """The reason as ``known_failures`` gives it (and the run's xfail reason shows it)."""
        label = "Flink bug" if self.kind == FLINK_BUG else "beyond Flink"
        return f"{label}: {self.reason} (reproducer: {REPRODUCERS}::{self.reproducer})"


_NOT_RECURSIVE = Deviation(
    FLINK_BUG,
    "FLINK-38909: Flink 2.3.0's disposeStorageLocation deletes the checkpoint directory "
    "non-recursively (IOException 'Directory ... is not empty') while state files or _metadata "
    "are still in it, so anything left there (a tool's file, a handle nobody discarded) keeps "
    "the chk-<n> directory forever",
    "test_dis2_dispose_is_not_recursive",
)
_STAGING_LEAK = Deviation(
    FLINK_BUG,
    "close() of an unfinalized metadata stream leaves the recoverable writer's staging file "
    "._metadata.inprogress.<uuid> (RecoverableStreamWrapper.cleanup() does nothing, "
    "LocalRecoverableFsDataOutputStream.close() keeps the file): a leak MD5 means to prevent",
    "test_md2_close_without_finalize_leaves_a_staging_file",
)
_RELATIVE_UNCHECKED = Deviation(
    BEYOND_FLINK,
    "Flink's metadata deserializer rebases a relative path unchecked (new Path(exclusiveDir, "
    "relativePath)), so '../victim' in a crafted or damaged _metadata names a file outside the "
    "checkpoint, which a restore reads and a discard deletes",
    "test_md7_relative_paths_are_rebased_unchecked",
)
_BLANK_TARGET = Deviation(
    BEYOND_FLINK,
    "Flink's Path rejects an empty savepoint target but not a blank one (' ', '\\t'), which "
    "becomes a whitespace-named directory below the working directory of the process",
    "test_bad5_blank_savepoint_target_is_a_relative_directory",
)
_WRITE_AFTER_CLOSE = Deviation(
    FLINK_BUG,
    "MemoryCheckpointOutputStream.write() does not check whether the stream is closed: writes "
    "after close() or closeAndGetHandle() succeed, where the file streams raise IOException "
    "(S14), and a writer never learns that another thread closed its stream",
    "test_str5_memory_stream_takes_writes_after_close",
)
_METADATA_WRITE_AFTER_FINALIZE = Deviation(
    FLINK_BUG,
    "without a checkpoint directory, the metadata stream of "
    "NonPersistentMetadataCheckpointStorageLocation does not check whether it is closed in "
    "write(): writes after closeAndFinalizeCheckpoint() succeed into a buffer nobody reads, "
    "where FsCheckpointMetadataOutputStream raises IOException (MD4); its completed location "
    "also rebases relative handles unchecked, as for MD-7",
    "test_md10_in_memory_metadata_takes_writes_after_finalize",
)
_EMPTY_WRITE = Deviation(
    FLINK_BUG,
    "an empty write marks MemoryCheckpointOutputStream non-empty, so closeAndGetHandle() "
    "returns a 0-byte ByteStreamStateHandle where the file streams return null (FLINK-5218)",
    "test_str3_memory_stream_counts_an_empty_write",
)

_OVERLAPPING_FINALIZATIONS = Deviation(
    BEYOND_FLINK,
    "Flink 2.3.0 checks for an existing _metadata only when a metadata stream is made and "
    "commits it by an atomic rename, which replaces a _metadata committed meanwhile: a second "
    "stream made before the first finalized, or one racing it, also finalizes, and the "
    "checkpoint the first reported complete silently gets the other's metadata (Flink's own "
    "coordinator never finalizes one checkpoint twice; two coordinators or a tool sharing the "
    "storage can)",
    "test_md11_a_stream_made_before_replaces_the_finalized_metadata",
)

_SIZE_UNCHECKED = Deviation(
    BEYOND_FLINK,
    "Flink's FileStateHandle opens its file and reads whatever it holds (H1), never comparing "
    "the bytes with its state size: a state file or _metadata truncated, extended or replaced "
    "behind the storage's back restores as other bytes, without an error",
    "test_str16_a_handle_reads_whatever_its_file_holds",
)

_QUADRATIC_NORMALISATION = Deviation(
    FLINK_BUG,
    "Flink's Path normalises with java.net.URI.normalize(), whose removal of '..' segments "
    "scans back over the segments it removed already: a pointer of 'x/' and '../' repeated "
    "takes time quadratic in its length (about 20 s for a megabyte), on the caller's thread, "
    "with no limit on the length before it",
    "test_bad17_dot_segments_take_quadratic_time",
)

#: Clauses that Flink 2.3.0's FileSystemCheckpointStorage fails on the local file system (and
#: on the Spark leg, where it runs: SPK-3).
FS_DEVIATIONS: Mapping[str, Deviation] = {
    "DIS-2": _NOT_RECURSIVE,
    "SPK-3": _NOT_RECURSIVE,  # the Spark leg disposes a subsumed checkpoint with its _metadata
    "MD-2": _STAGING_LEAK,
    "LAY-7": _STAGING_LEAK,
    "BAD-6": _STAGING_LEAK,  # BAD-1's corpus writes to metadata streams and closes them
    "MD-7": _RELATIVE_UNCHECKED,
    "MD-11": _OVERLAPPING_FINALIZATIONS,
    "BAD-5": _BLANK_TARGET,
    "STR-16": _SIZE_UNCHECKED,
    "BAD-17": _QUADRATIC_NORMALISATION,
}
#: Those of its JobManagerCheckpointStorage (metadata and savepoints on the file system).
JM_DEVIATIONS: Mapping[str, Deviation] = {
    # LAY-7 needs file-layout, which the JobManager target does not claim (never runs there)
    **{cid: d for cid, d in FS_DEVIATIONS.items() if cid != "LAY-7"},
    "STR-3": _EMPTY_WRITE,
    "STR-5": _WRITE_AFTER_CLOSE,
    "THR-3": _WRITE_AFTER_CLOSE,
    "MD-10": _METADATA_WRITE_AFTER_FINALIZE,
}
#: Target name -> its deviations (CONFORMANCE.md's Flink columns are built from these).
DEVIATIONS: Mapping[str, Mapping[str, Deviation]] = {
    "flink": FS_DEVIATIONS,
    "flink-jobmanager": JM_DEVIATIONS,
}

#: Clauses that Flink 2.3.0 fails on the local file system (strict xfail), with the reasons.
_FS_KNOWN = {cid: d.known_failure() for cid, d in FS_DEVIATIONS.items()}
_JM_KNOWN = {cid: d.known_failure() for cid, d in JM_DEVIATIONS.items()}

#: suite option key -> FlinkConfig field
_FS_OPTIONS = {
    "inline_threshold": "file_state_size_threshold",
    "write_buffer_size": "write_buffer_size",
    "create_subdir": "create_subdir",
}
_JM_OPTIONS = {"max_state_size": "max_state_size"}


@dataclass(frozen=True)
class FlinkTarget:
    """A conformance target backed by one of Flink's Java storages."""

    name: str
    kind: str
    capabilities: frozenset[str]
    supported_options: Mapping[str, str] = field(repr=False)
    schemes: frozenset[str] | None = frozenset({"file"})
    known_failures: Mapping[str, str] | None = None
    #: the version of the storage under test (the run header shows it): Flink's
    version: str = __version__

    @property
    def options(self) -> frozenset[str]:
        return frozenset(self.supported_options)

    def make_storage(
        self,
        *,
        checkpoint_dir: str | None,
        savepoint_dir: str | None,
        options: Mapping[str, Any] | None,
    ) -> CheckpointStorage:
        from flinktarget.storage import FlinkCheckpointStorage, FlinkConfig

        options = dict(options or {})
        unknown = sorted(k for k in options if k not in self.supported_options)
        if unknown:
            raise ValueError(
                f"target {self.name!r} does not support the option(s) {', '.join(unknown)}; "
                f"supported: {', '.join(sorted(self.supported_options)) or 'none'}"
            )
        kwargs = {self.supported_options[k]: v for k, v in options.items() if v is not None}
        config = FlinkConfig(
            kind=self.kind, checkpoint_dir=checkpoint_dir, savepoint_dir=savepoint_dir, **kwargs
        )
        return FlinkCheckpointStorage(config)


#: Flink's FileSystemCheckpointStorage (no availability check: see ``conformance_target``).
target_unchecked = FlinkTarget(
    name="flink",
    kind="filesystem",
    capabilities=frozenset(
        {
            "file-layout",
            "flat-layout",
            "inline-state",
            "savepoints",
            "relocatable-savepoints",
            "task-owned-state",
        }
    ),
    supported_options=_FS_OPTIONS,
    known_failures=_FS_KNOWN,
)

#: Flink's JobManagerCheckpointStorage, with the checkpoint directory the suite gives or none.
jobmanager_target_unchecked = FlinkTarget(
    name="flink-jobmanager",
    kind="jobmanager",
    capabilities=frozenset(
        {"savepoints", "relocatable-savepoints", "memory-limit", "in-memory-checkpoints"}
    ),
    supported_options=_JM_OPTIONS,
    known_failures=_JM_KNOWN,
)


def _checked(target: FlinkTarget) -> FlinkTarget:
    from flinktarget.jars import FlinkUnavailableError, unavailable_reason

    reason = unavailable_reason(download=True)
    if reason is not None:
        raise FlinkUnavailableError(reason)
    return target


def conformance_target() -> FlinkTarget:
    """``--impl=flink``: Flink's FileSystemCheckpointStorage, after checking Java and the jars."""
    return _checked(target_unchecked)


def jobmanager_target() -> FlinkTarget:
    """``--impl=flink-jobmanager``: Flink's JobManagerCheckpointStorage, checked likewise."""
    return _checked(jobmanager_target_unchecked)


filesystem_target = conformance_target
