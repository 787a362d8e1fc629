"""A generated checkpoint root for the audit's benchmark: what ``scripts/audit_bench.py`` audits.

The shape of a base directory of RocksDB jobs with incremental checkpoints, as Flink 2.3
leaves it (``Shape``): per job, ``subtasks`` keyed subtasks, ``retained`` completed
checkpoints ``chk-N`` (each a ``_metadata`` written by ``ckptstore.flink_metadata.write_metadata``
with, per subtask, an incremental handle naming its ``live`` SST files in ``shared/`` by
absolute path, its RocksDB meta file and an operator state file in ``chk-N`` by relative path,
and an inline MANIFEST); each checkpoint adds ``turnover`` SST files per subtask, so a shared
file is referenced by several retained checkpoints. Then what a bucket collects: one in-flight
``chk-N`` per job (its meta files, no ``_metadata``; its new SST files in ``shared/``), SST
files leaked by crashes (``leaked`` per subtask, older than every retained checkpoint) and
``taskowned/`` files, which pad the root to exactly ``objects`` objects. The first job was
restored in CLAIM mode from a job whose directory lies outside the root: its first subtask's
checkpoints also name ``outside`` SST files there.

:func:`plan_tree` yields every object (URL, bytes) below a root URL and the outside URL (the
metadata names absolute URLs); :func:`truth` says what an audit must find. Not in the wheel.
"""

from __future__ import annotations

import functools
import random
import tarfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ckptstore.admin.relocation import flink_spelling
from ckptstore.flink_metadata import read_metadata, write_metadata
from ckptstore.flink_metadata import values as v
from ckptstore.paths import parse_storage_path

__all__ = ["Shape", "Truth", "plan_tree", "shape_for", "truth"]

ARCHIVE = Path(__file__).resolve().parents[1] / "fixtures/flink/flink-2.3.0-hashmap-inline0.tar.gz"
OPERATOR = bytes(range(16))
#: every file's size (bytes): the listing's cost does not depend on it
FILE_BYTES = 64


@dataclass(frozen=True)
class Shape:
    """How many of each (module docstring); ``objects`` is the root's exact object count."""

    objects: int
    jobs: int
    subtasks: int = 32
    retained: int = 3
    live: int = 200
    turnover: int = 25
    leaked: int = 25
    outside: int = 8

    def per_job_fixed(self) -> int:
        """Objects per job before the ``taskowned/`` padding."""
        checkpoints = self.retained * (1 + 2 * self.subtasks)
        shared = self.subtasks * (self.live + (self.retained - 1) * self.turnover)
        in_flight = self.subtasks + self.subtasks * self.turnover
        return checkpoints + shared + in_flight + self.subtasks * self.leaked

    def padding(self) -> list[int]:
        """``taskowned/`` files per job, so that the root holds exactly ``objects``."""
        left = self.objects - self.jobs * self.per_job_fixed()
        if left < 0:
            raise ValueError(f"{self} holds more than {self.objects} objects before padding")
        return [left // self.jobs + (1 if j < left % self.jobs else 0) for j in range(self.jobs)]


def shape_for(objects: int) -> Shape:
    """About 10,000 objects per job; below that, one job with fewer subtasks."""
    jobs = max(1, objects // 10_000)
    subtasks = max(1, min(32, objects // jobs // 310))
    return Shape(objects=objects, jobs=jobs, subtasks=subtasks)


@dataclass(frozen=True)
class Truth:
    """What an audit of the generated root must report."""

    objects: int
    checkpoints: int
    in_flight: int
    outside: int
    orphans_by_kind: dict[str, int]


def truth(shape: Shape) -> Truth:
    padding = shape.padding()
    return Truth(
        objects=shape.objects,
        checkpoints=shape.jobs * shape.retained,
        in_flight=shape.jobs,
        outside=shape.outside,
        orphans_by_kind={
            "in-flight": shape.jobs * shape.subtasks,
            "shared": shape.jobs * shape.subtasks * (shape.turnover + shape.leaked),
            "task-owned": sum(padding),
            "other": 0,
        },
    )


@functools.cache
def _properties() -> bytes:
    """The checkpoint properties Flink 2.3.0 wrote for a checkpoint (Java serialization
    bytes, from the repository's fixture)."""
    with tarfile.open(ARCHIVE) as archive:
        for member in archive.getmembers():
            if member.name.endswith("/_metadata") and "savepoint-" not in member.name:
                handle = archive.extractfile(member)
                if handle is not None:
                    properties = read_metadata(handle.read()).properties
                    if properties is not None:
                        return properties
    raise RuntimeError(f"{ARCHIVE} holds no checkpoint _metadata")


def _job_ids(shape: Shape, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [f"{rng.getrandbits(128):032x}" for _ in range(shape.jobs)]


def _sst_names(rng: random.Random, count: int) -> list[str]:
    return [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(count)]


def plan_tree(
    root_url: str, outside_url: str, shape: Shape, seed: int = 1
) -> Iterator[tuple[str, bytes]]:
    """Every object (URL, bytes): below ``root_url`` the root, below ``outside_url`` the files
    the first job references outside it; ``_metadata`` names absolute URLs as Flink does."""
    root = parse_storage_path(root_url)
    body = b"s" * FILE_BYTES
    properties = _properties()
    outside = []
    for name in _sst_names(random.Random(f"{seed}/outside"), shape.outside):
        location = parse_storage_path(outside_url).child(f"claimed/shared/{name}")
        outside.append(flink_spelling(location))
        yield location.url, body
    for job_index, (job, padding) in enumerate(
        zip(_job_ids(shape, seed), shape.padding(), strict=True)
    ):
        rng = random.Random(f"{seed}/{job}")
        first = 1 + shape.leaked // max(shape.turnover, 1) + 1
        per_subtask = []
        for _ in range(shape.subtasks):
            # SST k of a subtask was written by checkpoint first + (k - live) // turnover
            total = shape.leaked + shape.live + shape.retained * shape.turnover
            per_subtask.append(_sst_names(rng, total))
        sst_url = {}
        for names in per_subtask:
            for name in names:
                location = root.child(f"{job}/shared/{name}")
                sst_url[name] = flink_spelling(location)
                yield location.url, body
        for n in range(shape.retained):
            checkpoint = first + n
            directory = f"{job}/chk-{checkpoint}"
            subtasks = []
            for s, names in enumerate(per_subtask):
                start = shape.leaked + n * shape.turnover
                live = [sst_url[name] for name in names[start : start + shape.live]]
                if job_index == 0 and s == 0:
                    live += outside
                keyed = v.IncrementalHandle(
                    checkpoint,
                    f"backend-{s}",
                    s * 4,
                    4,
                    v.RelativeFileHandle(f"meta-{s}", FILE_BYTES),
                    tuple(
                        v.HandleAndLocalPath(f"{i:06d}.sst", v.FileHandle(url, FILE_BYTES))
                        for i, url in enumerate(live)
                    ),
                    (
                        v.HandleAndLocalPath(
                            "MANIFEST-000004", v.ByteStreamHandle(f"m-{s}", b"m" * 40)
                        ),
                    ),
                    FILE_BYTES * len(live),
                    f"handle-{checkpoint}-{s}",
                )
                partitions = (
                    v.PartitionOffsets("list", v.DistributionMode.SPLIT_DISTRIBUTE, (0,)),
                )
                operator = v.OperatorStateHandle(
                    partitions, v.RelativeFileHandle(f"op-{s}", FILE_BYTES)
                )
                subtasks.append(
                    v.SubtaskEntry(
                        s, v.SubtaskState(managed_operator=operator, managed_keyed=keyed)
                    )
                )
                yield root.child(f"{directory}/meta-{s}").url, body
                yield root.child(f"{directory}/op-{s}").url, body
            state = v.OperatorState(
                OPERATOR,
                shape.subtasks,
                shape.subtasks * 4,
                None,
                tuple(subtasks),
                "agg",
                "agg-uid",
            )
            metadata = v.CheckpointMetadata(6, checkpoint, (), (state,), properties)
            yield root.child(f"{directory}/_metadata").url, write_metadata(metadata)
        in_flight = f"{job}/chk-{first + shape.retained}"
        for s in range(shape.subtasks):
            yield root.child(f"{in_flight}/meta-{s}").url, body
        for p in range(padding):
            yield root.child(f"{job}/taskowned/{p:08d}").url, body
