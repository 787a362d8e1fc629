"""What a completed checkpoint or savepoint holds, summarised from its ``_metadata``.

:func:`summarize` answers with a :class:`CheckpointSummary`, a plain value (``to_dict()`` for
JSON): the checkpoint id, the format version, whether Flink took it as a checkpoint or a
savepoint (from the checkpoint properties), per operator its id, name and uid (format 5 on),
parallelism, maximum parallelism, subtasks and which of them hold state, the kinds of state it
holds, and every file the metadata names, by where it lies: ``exclusive`` (in the checkpoint's
own directory), ``shared`` and ``task-owned`` (its job's ``shared/`` and ``taskowned/``),
``outside`` (anywhere else: another job's directory after a CLAIM restore), with the bytes
each must hold; inline state is counted apart. Sizes are what the metadata claims
(``ckptstore.admin.audit`` checks the files). ``ckptstore inspect`` is
``ckptstore.admin.inspect_command``.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from dataclasses import dataclass
from typing import Any, cast

from ckptstore.admin import model
from ckptstore.admin.audit import url_prefix
from ckptstore.admin.references import MovedTree, checkpoint_references
from ckptstore.flink_metadata import (
    ByteStreamHandle,
    ChangelogBackendHandle,
    ChangelogStreamHandle,
    CheckpointMetadata,
    IncrementalHandle,
    InMemoryChangelogHandle,
    KeyGroupsHandle,
    MetadataFormatError,
    OperatorState,
    SubtaskState,
    stream_handles,
)
from ckptstore.paths import StoragePath
from flinkmeta._wire import Input
from flinkmeta.javaser import JavaEnum, JavaObject, read_object

__all__ = [
    "FILE_CATEGORIES",
    "CheckpointSummary",
    "FileSummary",
    "OperatorSummary",
    "summarize",
]

#: Where a referenced file lies, in the order reports show them (``inline`` holds no file).
FILE_CATEGORIES = ("exclusive", "shared", "task-owned", "outside", "inline")


@dataclass(frozen=True, slots=True)
class OperatorSummary:
    operator_id: str
    name: str | None
    uid: str | None
    parallelism: int
    max_parallelism: int
    #: subtasks recorded; ``None`` when the operator had fully finished
    subtasks: int | None
    subtasks_with_state: int
    #: kind of state -> how many handles of it (``keyed (full)``, ``keyed (incremental)``,
    #: ``keyed (changelog)``, ``operator``, ``channel (input)``, ``channel (output)``,
    #: ``coordinator``, ``inline``)
    state_kinds: dict[str, int]
    incremental_shared_files: int
    incremental_private_files: int
    files: int
    file_bytes: int
    inline_bytes: int


@dataclass(frozen=True, slots=True)
class FileSummary:
    url: str
    category: str
    needed_bytes: int
    handles: int


@dataclass(frozen=True, slots=True)
class CheckpointSummary:
    metadata_url: str
    metadata_bytes: int
    checkpoint_id: int
    format_version: int
    #: ``Checkpoint``, ``Savepoint (CANONICAL)``...; ``None`` when the metadata has no
    #: properties (format 3) or they could not be read
    snapshot_type: str | None
    master_states: int
    operators: tuple[OperatorSummary, ...]
    files: tuple[FileSummary, ...]
    inline_bytes: int
    unresolved: tuple[str, ...]

    def totals(self) -> dict[str, dict[str, int]]:
        """Per file category: ``files`` and ``bytes`` (``inline``: handles' bytes)."""
        totals = {c: {"files": 0, "bytes": 0} for c in FILE_CATEGORIES}
        for f in self.files:
            totals[f.category]["files"] += 1
            totals[f.category]["bytes"] += f.needed_bytes
        totals["inline"]["bytes"] = self.inline_bytes
        return totals

    def to_dict(self) -> dict[str, Any]:
        value = dataclasses.asdict(self)
        value["totals"] = self.totals()
        return cast(dict[str, Any], json.loads(json.dumps(value)))


def summarize(
    metadata: CheckpointMetadata,
    directory: StoragePath,
    *,
    metadata_bytes: int = 0,
    moved: MovedTree | None = None,
) -> CheckpointSummary:
    """The summary of ``metadata`` read from ``directory``/``_metadata`` (no I/O)."""
    references = checkpoint_references(metadata, directory, moved)
    job = directory.parent if model.is_checkpoint_name(directory.name) else None
    files = tuple(
        FileSummary(f.url, _category(f.url, f.relative, directory, job), f.needed_bytes, f.handles)
        for f in references.files
    )
    operators = tuple(_operator(op, metadata, directory, moved) for op in metadata.operators)
    return CheckpointSummary(
        metadata_url=directory.child(model.METADATA).url,
        metadata_bytes=metadata_bytes,
        checkpoint_id=metadata.checkpoint_id,
        format_version=metadata.version,
        snapshot_type=_snapshot_type(metadata.properties),
        master_states=len(metadata.master_states),
        operators=operators,
        files=files,
        inline_bytes=references.inline_bytes,
        unresolved=references.unresolved,
    )


def _below(url: str, directory: StoragePath) -> bool:
    return url.startswith(url_prefix(directory))


def _category(url: str, relative: bool, directory: StoragePath, job: StoragePath | None) -> str:
    if relative or _below(url, directory):
        return "exclusive"
    if job is not None and _below(url, job.child("shared")):
        return "shared"
    if job is not None and _below(url, job.child("taskowned")):
        return "task-owned"
    return "outside"


def _operator(
    operator: OperatorState,
    metadata: CheckpointMetadata,
    directory: StoragePath,
    moved: MovedTree | None,
) -> OperatorSummary:
    alone = dataclasses.replace(metadata, operators=(operator,))
    references = checkpoint_references(alone, directory, moved)
    kinds: Counter[str] = Counter()
    shared = private = with_state = 0
    if operator.coordinator_state is not None:
        kinds["coordinator"] += 1
    for entry in operator.subtasks or ():
        if entry.state is None:
            continue
        found = _subtask_kinds(entry.state)
        with_state += bool(found)
        kinds.update(found)
        for keyed in (entry.state.managed_keyed, entry.state.raw_keyed):
            if isinstance(keyed, IncrementalHandle):
                shared += len(keyed.shared)
                private += len(keyed.private)
    kinds["inline"] = sum(isinstance(h, ByteStreamHandle) for h in stream_handles(alone))
    return OperatorSummary(
        operator_id=operator.operator_id_hex,
        name=operator.name,
        uid=operator.uid,
        parallelism=operator.parallelism,
        max_parallelism=operator.max_parallelism,
        subtasks=None if operator.subtasks is None else len(operator.subtasks),
        subtasks_with_state=with_state,
        state_kinds={k: n for k, n in sorted(kinds.items()) if n},
        incremental_shared_files=shared,
        incremental_private_files=private,
        files=len(references.files),
        file_bytes=references.referenced_bytes,
        inline_bytes=references.inline_bytes,
    )


def _subtask_kinds(state: SubtaskState) -> Counter[str]:
    kinds: Counter[str] = Counter()
    for keyed in (state.managed_keyed, state.raw_keyed):
        if isinstance(keyed, KeyGroupsHandle):
            kinds["keyed (full)"] += 1
        elif isinstance(keyed, IncrementalHandle):
            kinds["keyed (incremental)"] += 1
        elif isinstance(
            keyed, (ChangelogBackendHandle, ChangelogStreamHandle, InMemoryChangelogHandle)
        ):
            kinds["keyed (changelog)"] += 1
    for operator_handle in (state.managed_operator, state.raw_operator):
        if operator_handle is not None:
            kinds["operator"] += 1
    kinds["channel (input)"] += len(state.input_channels)
    kinds["channel (output)"] += len(state.result_subpartitions)
    return +kinds


def _snapshot_type(properties: bytes | None) -> str | None:
    """``CheckpointProperties.checkpointType``'s name, with a savepoint's format."""
    if properties is None:
        return None
    try:
        value = read_object(Input(properties))
    except (MetadataFormatError, ValueError, IndexError):
        return None
    kind = value.fields.get("checkpointType") if isinstance(value, JavaObject) else None
    if not isinstance(kind, JavaObject):
        return None
    name = str(kind.fields.get("name", kind.class_name.rpartition(".")[2]))
    form = kind.fields.get("formatType")
    return f"{name} ({form.constant})" if isinstance(form, JavaEnum) else name
