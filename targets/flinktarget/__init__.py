"""Apache Flink 2.3.0's own Java checkpoint storages as conformance targets.

``pytest --impl=flink`` runs the suite against Flink's ``FileSystemCheckpointStorage``;
``--impl=flink-jobmanager`` against its ``JobManagerCheckpointStorage`` (with the checkpoint
directory set, so completed checkpoints are addressable). Both drive the Java classes through
a py4j gateway to one JVM per process (``flinktarget.gateway``) that runs the jars of the
``apache-flink-libraries`` 2.3.0 wheel, fetched with pip on first use and cached
(``flinktarget.jars``). Install with ``pip install 'checkpoint-conformance[flink]'``; Java 11 or
newer must be on the PATH (or in JAVA_HOME).

The entry points are callables: loading the target checks Java and py4j and fetches the jars,
so a machine without Java gets one sentence (a usage error of the run), not a stack trace.

Capabilities, claimed only where Flink 2.3.0 has the behaviour on the local file system (the
wheel ships no S3 file system, so ``schemes`` is ``file`` and the S3 legs are skipped with
that reason):

- ``flink``: ``file-layout``, ``inline-state`` (``state.storage.fs.memory-threshold`` and
  ``write-buffer-size`` as constructor arguments), ``savepoints``, ``relocatable-savepoints``
  (exclusive state in relative handles), ``task-owned-state``. Not ``fast-duplicate``: Flink's
  local file system is no ``PathsCopyingFileSystem``, so its toolset is the
  ``NotDuplicatingCheckpointStateToolset``; not ``entropy-injection`` (only Flink's S3 file
  systems inject entropy); not ``retry-budget`` or ``redacts-secrets`` (no such options or
  redaction in Flink).
- ``flink-jobmanager``: ``savepoints``, ``relocatable-savepoints``, ``memory-limit``
  (``maxStateSize``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ckptstore.api import CheckpointStorage

__all__ = [
    "FlinkTarget",
    "conformance_target",
    "filesystem_target",
    "jobmanager_target",
    "jobmanager_target_unchecked",
    "target_unchecked",
]

__version__ = "2.3.0"

_NOT_RECURSIVE = (
    "Flink bug FLINK-38909: Flink 2.3.0's disposeStorageLocation deletes the checkpoint "
    "directory non-recursively (IOException 'Directory ... is not empty') while state files or "
    "_metadata are still in it"
)
_DISPOSE_ORDER = (
    "the test disposes a checkpoint directory that still holds state or _metadata, which "
    "Flink 2.3.0 refuses (FLINK-38909, see DIS-2); Flink itself discards the state handles and "
    "the metadata handle first (MD6)"
)
_STAGING_LEAK = (
    "Flink bug: close() of an unfinalized metadata stream leaves the recoverable writer's "
    "staging file ._metadata.inprogress.<uuid> (RecoverableStreamWrapper.cleanup() does "
    "nothing, LocalRecoverableFsDataOutputStream.close() keeps the file)"
)
_BEYOND_RELATIVE = (
    "beyond Flink: Flink's metadata deserializer rebases a relative path unchecked "
    "(new Path(exclusiveDir, relativePath)), so '../victim' names a file outside the checkpoint"
)
_BEYOND_DUPLICATE_NONE = (
    "beyond Flink: duplicate(None) reaches Flink, which answers 'unsupported' before it looks "
    "at the argument (IllegalArgumentException from the stream factory, "
    "UnsupportedEncodingException, an IOException, from NotDuplicatingCheckpointStateToolset)"
)
_BEYOND_BLANK_TARGET = (
    "beyond Flink: Flink takes a blank savepoint target (' ', '\\t') as a relative path and "
    "writes the savepoint below the working directory"
)

#: Clauses that Flink 2.3.0 fails on the local file system (strict xfail): each reason says
#: whether Flink has a bug there or the suite asks more than Flink does. BAD-1 is not listed:
#: its hypothesis sample passes or fails by chance (toolset.duplicate with None, as BAD-2).
_FS_KNOWN = {
    "DIS-2": _NOT_RECURSIVE,
    "DIS-3": _DISPOSE_ORDER,
    "DIS-4": _DISPOSE_ORDER,
    "TOW-3": _DISPOSE_ORDER,
    "MD-2": _STAGING_LEAK,
    "LAY-7": _STAGING_LEAK,
    "BAD-6": _STAGING_LEAK + "; BAD-1's corpus closes metadata streams unfinalized",
    "MD-7": _BEYOND_RELATIVE,
    "BAD-2": _BEYOND_DUPLICATE_NONE,
    "BAD-5": _BEYOND_BLANK_TARGET,
}
_JM_KNOWN = {
    **_FS_KNOWN,
    "STR-5": (
        "Flink bug: MemoryCheckpointOutputStream.write() does not check whether the stream "
        "is closed; writes after close() or closeAndGetHandle() succeed"
    ),
    "THR-3": (
        "Flink bug: MemoryCheckpointOutputStream.write() does not check whether the stream "
        "is closed, so a writer never learns that another thread closed its stream"
    ),
}

#: suite option key -> FlinkConfig field
_FS_OPTIONS = {
    "inline_threshold": "file_state_size_threshold",
    "write_buffer_size": "write_buffer_size",
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
            "inline-state",
            "savepoints",
            "relocatable-savepoints",
            "task-owned-state",
        }
    ),
    supported_options=_FS_OPTIONS,
    known_failures=_FS_KNOWN,
)

#: Flink's JobManagerCheckpointStorage with a checkpoint directory.
jobmanager_target_unchecked = FlinkTarget(
    name="flink-jobmanager",
    kind="jobmanager",
    capabilities=frozenset({"savepoints", "relocatable-savepoints", "memory-limit"}),
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
