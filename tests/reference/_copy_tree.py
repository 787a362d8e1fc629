"""A checkpoint whose ``_metadata`` references files inside and outside its directory.

Written with the reference's metadata writer and plain fsspec (never ``ckptstore.admin``), so
the copy tests judge the code under test by what is on the stores. Below ``base``:

```
job/chk-5/_metadata
job/chk-5/keyed-state            RelativeFileHandle (key groups of subtask 1)
job/chk-5/MANIFEST-000004        RelativeFileHandle (a private file of the incremental handle)
job/chk-5/raw-operator           FileHandle, absolute, inside the checkpoint's directory
job/chk-5/leftover               referenced by nothing: a copy leaves it behind
job/shared/sst-1, sst-2          FileHandle (shared files of the incremental handle)
job/shared/op-1/merged-1         two SegmentFileHandles (file merging), its directories named
job/taskowned/channel-1          FileHandle shared by three channel state handles, at offsets
job/changelog/log-1              FileHandle of a changelog stream handle
other/shared/sst-9               FileHandle of another job's file (a CLAIM-mode restore)
```

Absolute paths are spelled as Flink spells them (``file:/...``, ``memory:/...``,
``s3://bucket/...``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from ckptstore.flink_metadata import values as v
from ckptstore.flink_metadata import write_metadata
from ckptstore.paths import StoragePath, parse_storage_path

__all__ = ["NULL_PROPERTIES", "SourceTree", "build_tree", "flink_path"]

#: Java serialization of ``null``: the checkpoint properties of a metadata made in tests.
NULL_PROPERTIES = b"\xac\xed\x00\x05p"
CHECKPOINT_ID = 5
OPERATOR_A = bytes(range(16))
OPERATOR_B = bytes(range(16, 32))

#: relative path below the base -> size
FILES = {
    "job/chk-5/keyed-state": 300,
    "job/chk-5/MANIFEST-000004": 40,
    "job/chk-5/raw-operator": 70,
    "job/chk-5/leftover": 5,
    "job/shared/sst-1": 1000,
    "job/shared/sst-2": 2000,
    "job/shared/op-1/merged-1": 60,
    "job/taskowned/channel-1": 100,
    "job/changelog/log-1": 90,
    "other/shared/sst-9": 500,
}
UNREFERENCED = {"job/chk-5/leftover"}
#: the files of the checkpoint's own directory that it references (relative to chk-5)
INSIDE = {"keyed-state", "MANIFEST-000004", "raw-operator"}


@dataclass(frozen=True)
class SourceTree:
    """What ``build_tree`` wrote."""

    base: StoragePath
    metadata: v.CheckpointMetadata
    #: every file written (``_metadata`` aside), by path relative to ``base``
    contents: dict[str, bytes]

    @property
    def pointer(self) -> str:
        return self.base.child("job/chk-5").url

    @property
    def directory(self) -> StoragePath:
        return self.base.child("job/chk-5")

    def url(self, relative: str) -> str:
        return self.base.child(relative).url


def flink_path(location: StoragePath) -> str:
    """As Flink's ``Path.toString`` spells it (written independently of the code under test)."""
    if location.scheme in ("file", "memory"):
        return f"{location.scheme}:{location.path}"
    return location.url


def build_tree(raw: Any, base_url: str, properties: bytes = NULL_PROPERTIES) -> SourceTree:
    """Write the tree of the module docstring below ``base_url`` through the raw fs ``raw``."""
    base = parse_storage_path(base_url)
    rng = random.Random(base_url)
    contents = {name: rng.randbytes(size) for name, size in FILES.items()}
    for name, data in contents.items():
        path = base.child(name).path
        raw.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
        raw.pipe_file(path, data)

    def absolute(name: str) -> str:
        return flink_path(base.child(name))

    def file(name: str) -> v.FileHandle:
        return v.FileHandle(absolute(name), FILES[name])

    channel = file("job/taskowned/channel-1")
    incremental = v.IncrementalHandle(
        checkpoint_id=CHECKPOINT_ID,
        backend_id="0e2c1a4c-6f1e-4b7a-9b0e-4f1f1d1a2b3c",
        key_group_start=0,
        key_group_count=64,
        metadata=v.ByteStreamHandle("rocks-meta", b"meta-bytes"),
        shared=(
            v.HandleAndLocalPath("000011.sst", file("job/shared/sst-1")),
            v.HandleAndLocalPath("000012.sst", file("job/shared/sst-2")),
            v.HandleAndLocalPath("000009.sst", file("other/shared/sst-9")),
        ),
        private=(
            v.HandleAndLocalPath(
                "MANIFEST-000004",
                v.RelativeFileHandle("MANIFEST-000004", FILES["job/chk-5/MANIFEST-000004"]),
            ),
        ),
        checkpointed_size=3540,
        handle_id="7d4f8c0e-2a51-4f7e-8a1b-3c9d2e6f5a40",
    )
    changelog = v.ChangelogBackendHandle(
        key_group_start=64,
        key_group_count=64,
        checkpointed_size=90,
        materialized=(),
        non_materialized=(
            v.ChangelogStreamHandle(
                64, 64, ((file("job/changelog/log-1"), 0),), 90, 90, "cl-1", "filesystem"
            ),
        ),
        materialization_id=3,
        handle_id="cb-1",
        checkpoint_id=CHECKPOINT_ID,
    )
    subtask_0 = v.SubtaskState(
        managed_keyed=incremental,
        input_channels=(
            v.InputChannelHandle(0, 0, 0, (0,), 30, channel),
            v.InputChannelHandle(0, 0, 1, (30,), 30, channel),
        ),
        result_subpartitions=(v.ResultSubpartitionHandle(0, 0, 0, (60,), 40, channel),),
    )
    subtask_1 = v.SubtaskState(
        managed_keyed=v.KeyGroupsHandle(
            64,
            tuple(range(0, 64 * 4, 4)),
            v.RelativeFileHandle("keyed-state", FILES["job/chk-5/keyed-state"]),
        ),
        raw_keyed=changelog,
    )
    merging = v.FileMergingDirectories(
        absolute("job/taskowned/tm-1"), absolute("job/shared/op-1"), False
    )
    merged = absolute("job/shared/op-1/merged-1")
    partitions = (v.PartitionOffsets("buffer", v.DistributionMode.SPLIT_DISTRIBUTE, (0,)),)
    operator_b = (
        v.SubtaskEntry(
            0,
            v.SubtaskState(
                managed_operator=v.OperatorStateHandle(
                    partitions,
                    v.SegmentFileHandle(merged, 0, 10, v.StateScope.SHARED, "seg-0"),
                    merging,
                ),
                raw_operator=v.OperatorStateHandle(partitions, file("job/chk-5/raw-operator")),
            ),
        ),
        v.SubtaskEntry(
            1,
            v.SubtaskState(
                managed_operator=v.OperatorStateHandle(
                    partitions,
                    v.SegmentFileHandle(merged, 10, 30, v.StateScope.SHARED, "seg-1"),
                    merging,
                ),
            ),
        ),
    )
    metadata = v.CheckpointMetadata(
        version=6,
        checkpoint_id=CHECKPOINT_ID,
        master_states=(v.MasterState("hook", 1, b"master"),),
        operators=(
            v.OperatorState(
                OPERATOR_A,
                2,
                128,
                None,
                (v.SubtaskEntry(0, subtask_0), v.SubtaskEntry(1, subtask_1)),
                "keyed",
                "keyed-uid",
            ),
            v.OperatorState(
                OPERATOR_B,
                2,
                128,
                v.ByteStreamHandle("coordinator", b"coordinator-state"),
                operator_b,
                "source",
                None,
            ),
        ),
        properties=properties,
    )
    raw.pipe_file(base.child("job/chk-5/_metadata").path, write_metadata(metadata))
    return SourceTree(base, metadata, contents)
