"""A pure checker of Flink's checkpoint and savepoint directory layout (LAY, SAV-4).

It works on lists of paths relative to a checkpoint base directory (or a savepoint base
directory), so the same code checks a tree on the local file system (files and directories),
a tree on an object store (file keys only: directories do not exist there) and the trees that
Apache Flink itself wrote (``ckptconform/data/flink-2.3.0-hashmap-inline0.tar.gz``).

It checks what Flink's layout makes normative and nothing else: directory names, where
``_metadata`` lives, and that files lie directly in their directory. State file names are not
checked (Flink uses UUIDs, but no reader depends on that).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = [
    "CHK_RE",
    "JOB_RE",
    "METADATA",
    "SAVEPOINT_RE",
    "CheckpointTree",
    "SavepointTree",
    "check_checkpoint_tree",
    "check_savepoint_tree",
]

JOB_RE = re.compile(r"[0-9a-f]{32}")
CHK_RE = re.compile(r"chk-(0|[1-9][0-9]*)")
SAVEPOINT_RE = re.compile(r"savepoint-([0-9a-f]{6})-([0-9a-f]{12})")
METADATA = "_metadata"
SHARED = "shared"
TASKOWNED = "taskowned"


@dataclass
class JobTree:
    """What one job directory holds: checkpoints by id, shared and task-owned file names."""

    checkpoints: dict[int, list[str]] = field(default_factory=dict)
    shared: list[str] = field(default_factory=list)
    taskowned: list[str] = field(default_factory=list)

    def completed(self) -> list[int]:
        """Checkpoint ids whose directory holds ``_metadata``."""
        return sorted(n for n, names in self.checkpoints.items() if METADATA in names)


@dataclass
class CheckpointTree:
    jobs: dict[str, JobTree] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


@dataclass
class SavepointTree:
    savepoints: dict[str, list[str]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def _segments(path: str) -> list[str]:
    return [s for s in path.replace("\\", "/").split("/") if s]


def check_checkpoint_tree(files: Iterable[str], dirs: Iterable[str] = ()) -> CheckpointTree:
    """Check a checkpoint base directory: ``<job>/{chk-<n>,shared,taskowned}/<file>``."""
    tree = CheckpointTree()

    def job(name: str, where: str) -> JobTree | None:
        if not JOB_RE.fullmatch(name):
            tree.problems.append(f"{where}: '{name}' is not a job id (32 lowercase hex characters)")
            return None
        return tree.jobs.setdefault(name, JobTree())

    def kind(name: str, where: str) -> str | None:
        if name in (SHARED, TASKOWNED) or CHK_RE.fullmatch(name):
            return name
        tree.problems.append(
            f"{where}: '{name}' is not chk-<n> (decimal, no zero padding), shared or taskowned"
        )
        return None

    for path in sorted(set(dirs)):
        parts = _segments(path)
        if not parts:
            continue
        entry = job(parts[0], path)
        if len(parts) >= 2:
            sub = kind(parts[1], path)
            if entry is not None and sub is not None and sub.startswith("chk-"):
                entry.checkpoints.setdefault(int(sub[4:]), [])
        if len(parts) > 2:
            tree.problems.append(f"{path}: a directory below {parts[0]}/{parts[1]} (L3)")

    for path in sorted(set(files)):
        parts = _segments(path)
        if len(parts) != 3:
            tree.problems.append(
                f"{path}: files lie in <job>/<chk-n|shared|taskowned>/<file>, not at depth "
                f"{len(parts)}"
            )
            continue
        entry, sub = job(parts[0], path), kind(parts[1], path)
        if entry is None or sub is None:
            continue
        if sub == SHARED:
            entry.shared.append(parts[2])
        elif sub == TASKOWNED:
            entry.taskowned.append(parts[2])
        else:
            entry.checkpoints.setdefault(int(sub[4:]), []).append(parts[2])
    for name, entry in tree.jobs.items():
        for where, names in ((SHARED, entry.shared), (TASKOWNED, entry.taskowned)):
            if METADATA in names:
                tree.problems.append(f"{name}/{where}/{METADATA}: metadata outside chk-<n>")
    return tree


def check_savepoint_tree(
    files: Iterable[str], dirs: Iterable[str] = (), job_id: str | None = None
) -> SavepointTree:
    """Check a savepoint base directory: ``savepoint-<job[0:6]>-<12 hex>/<file>``."""
    tree = SavepointTree()

    def savepoint(name: str, where: str) -> list[str] | None:
        match = SAVEPOINT_RE.fullmatch(name)
        if match is None:
            tree.problems.append(
                f"{where}: '{name}' is not savepoint-<6 hex of the job id>-<12 of [0-9a-f]>"
            )
            return None
        if job_id is not None and match.group(1) != job_id[:6]:
            tree.problems.append(f"{where}: '{name}' does not start with job id {job_id[:6]}")
        return tree.savepoints.setdefault(name, [])

    for path in sorted(set(dirs)):
        parts = _segments(path)
        if parts:
            savepoint(parts[0], path)
        if len(parts) > 1:
            tree.problems.append(f"{path}: a directory inside a savepoint directory (L3, ACC8)")
    for path in sorted(set(files)):
        parts = _segments(path)
        if len(parts) != 2:
            tree.problems.append(
                f"{path}: files lie directly in savepoint-<...>/, not at depth {len(parts)}"
            )
            continue
        names = savepoint(parts[0], path)
        if names is not None:
            names.append(parts[1])
    return tree


# --------------------------------------------------------------------------- Flink's own trees

#: The Flink 2.3.0 fixture (see fixtures/README.md): a job directory and a savepoint.
FLINK_TARBALL = "flink-2.3.0-hashmap-inline0.tar.gz"
FLINK_JOB_ID = "28035f78a330f28ba4ff4840f31b71d0"
FLINK_CHECKPOINT_BASE = "flinkckpt"
FLINK_SAVEPOINT_BASE = "flinksp"
FLINK_SAVEPOINT = "savepoint-28035f-1a44b3786f30"
FLINK_COMPLETED = (9, 11, 12)
FLINK_IN_FLIGHT = 13


def extract_flink_trees(dest: str) -> str:
    """Unpack the packaged Flink trees into ``dest`` (a local directory); return ``dest``."""
    import tarfile
    from importlib import resources

    source = resources.files("ckptconform").joinpath("data", FLINK_TARBALL)
    with source.open("rb") as raw, tarfile.open(fileobj=raw, mode="r:gz") as archive:
        try:
            archive.extractall(dest, filter="data")
        except TypeError:  # Python < 3.11.4 has no extraction filters; the archive is ours
            archive.extractall(dest)
    return dest
