"""What a root is and where each file in it belongs, from a listing alone (no I/O).

Flink's layout (``ckptstore.filesystem.layout``): a base directory holds one directory per job
(32 hex characters), each with ``chk-<n>`` per checkpoint, ``shared/`` and ``taskowned/``; a
savepoint directory holds ``savepoint-<job prefix>-<random>`` directories. A directory holding
``_metadata`` is a completed checkpoint (``chk-<n>``) or savepoint (any other name); a
``chk-<n>`` or ``savepoint-*`` directory without one was in flight (failed, cancelled or still
being written). The audit reads the completed ones and joins; this module names the parts:

* :func:`root_kind`: ``job`` (the root holds ``chk-<n>``, ``shared`` or ``taskowned``),
  ``jobs`` (its directories are jobs), ``savepoints`` (its directories are savepoints),
  ``jobs and savepoints``, ``checkpoint`` or ``savepoint`` (the root holds ``_metadata``),
  ``empty``, or ``tree`` (checkpoints deeper down, in no layout of Flink's);
* :func:`orphan_kind`: ``in-flight`` (in a ``chk-<n>`` or ``savepoint-*`` directory without
  ``_metadata``), ``shared`` (below a ``shared/``), ``task-owned`` (below a ``taskowned/``),
  ``other`` (anything else, an unreferenced file in a completed checkpoint too).

Paths here are relative to the root, ``/``-separated, without a leading ``/``.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable

__all__ = [
    "METADATA",
    "ORPHAN_KINDS",
    "checkpoint_kind",
    "in_flight_directory",
    "is_checkpoint_name",
    "job_of",
    "metadata_directories",
    "orphan_kind",
    "parent_of",
    "root_kind",
    "settled_kind",
]

METADATA = "_metadata"
#: The kinds of orphans, in the order reports show them.
ORPHAN_KINDS = ("in-flight", "shared", "task-owned", "other")

_CHECKPOINT = re.compile(r"chk-[0-9]+")
_JOB = re.compile(r"[0-9a-f]{32}")
_JOB_PARTS = ("shared", "taskowned")


def is_checkpoint_name(name: str) -> bool:
    """``chk-<n>``: a checkpoint's exclusive directory."""
    return _CHECKPOINT.fullmatch(name) is not None


def _is_savepoint_name(name: str) -> bool:
    return name.startswith("savepoint-")


def parent_of(relative: str) -> str:
    """The directory of a relative path (``""`` for the root itself)."""
    return relative.rpartition("/")[0]


def metadata_directories(relatives: Iterable[str]) -> set[str]:
    """The directories (relative) that hold a ``_metadata``: the completed checkpoints and
    savepoints."""
    return {parent_of(r) for r in relatives if r.rpartition("/")[2] == METADATA}


def checkpoint_kind(directory: str, root_name: str = "") -> str:
    """``checkpoint`` for a ``chk-<n>`` directory, else ``savepoint`` (``directory`` ``""``
    is the root itself, named ``root_name``)."""
    name = directory.rpartition("/")[2] if directory else root_name
    return "checkpoint" if is_checkpoint_name(name) else "savepoint"


def job_of(directory: str) -> str | None:
    """The job directory (relative) of a ``chk-<n>`` directory: its parent; ``None`` for a
    savepoint (a savepoint belongs to no job directory) and for the root itself."""
    if not directory or checkpoint_kind(directory) != "checkpoint":
        return None
    return parent_of(directory)


def in_flight_directory(relative: str, completed: Collection[str]) -> str | None:
    """The ``chk-<n>`` or ``savepoint-*`` directory without ``_metadata`` that holds
    ``relative`` (the deepest one), ``None`` when there is none."""
    parts = relative.split("/")[:-1]
    for end in range(len(parts), 0, -1):
        name = parts[end - 1]
        if is_checkpoint_name(name) or _is_savepoint_name(name):
            directory = "/".join(parts[:end])
            return None if directory in completed else directory
    return None


def orphan_kind(relative: str, completed: Collection[str]) -> str:
    """The kind of an unreferenced file (module docstring)."""
    if in_flight_directory(relative, completed) is not None:
        return "in-flight"
    return settled_kind(relative)


def settled_kind(relative: str) -> str:
    """The kind of an unreferenced file that lies in no in-flight directory (``shared``,
    ``task-owned`` or ``other``): :func:`orphan_kind` once that is known."""
    parts = relative.split("/")[:-1]
    for name in reversed(parts):
        if is_checkpoint_name(name) or _is_savepoint_name(name):
            return "other"
        if name == "shared":
            return "shared"
        if name == "taskowned":
            return "task-owned"
    return "other"


def root_kind(relatives: Iterable[str], root_name: str = "") -> str:
    """What the root (named ``root_name``) is, from the relative paths of its files (module
    docstring)."""
    tops: dict[str, set[str]] = {}
    metadata_at_root = False
    seconds: dict[str, set[str]] = {}
    any_file = False
    for relative in relatives:
        any_file = True
        parts = relative.split("/", 2)
        if len(parts) == 1:
            metadata_at_root = metadata_at_root or parts[0] == METADATA
            continue
        tops.setdefault(parts[0], set()).add(parts[1])
        if len(parts) > 2:
            seconds.setdefault(parts[0], set()).add(parts[1])
    if not any_file:
        return "empty"
    if metadata_at_root:
        return checkpoint_kind("", root_name)
    if any(is_checkpoint_name(top) or top in _JOB_PARTS for top in tops):
        return "job"
    jobs = {t for t in tops if _JOB.fullmatch(t) and _looks_like_job(seconds.get(t, set()))}
    savepoints = {t for t, names in tops.items() if METADATA in names}
    if tops and set(tops) <= jobs | savepoints:
        if jobs and savepoints:
            return "jobs and savepoints"
        return "jobs" if jobs else "savepoints"
    return "tree"


def _looks_like_job(directories: set[str]) -> bool:
    return any(is_checkpoint_name(d) or d in _JOB_PARTS for d in directories)
