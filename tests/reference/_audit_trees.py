"""A small checkpoint root for the tests of ``ckptstore audit`` and ``inspect``, on any store.

Written with Flink's format (``ckptstore.flink_metadata.write_metadata``) through raw access
(``put(url, bytes)``), never through the code under test. One job with two completed
incremental checkpoints sharing ``shared/sst-a``, chk-2 also referencing a file outside the
root, an in-flight chk-3, a savepoint with relative handles, and one orphan of each kind.
:data:`ORPHANS` and :data:`REFERENCED` are the truth the tests compare with.
"""

from __future__ import annotations

import functools
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ckptstore.admin.relocation import flink_spelling
from ckptstore.flink_metadata import read_metadata, write_metadata
from ckptstore.flink_metadata import values as v
from ckptstore.paths import parse_storage_path

ARCHIVE = Path(__file__).resolve().parents[2] / "fixtures/flink/flink-2.3.0-hashmap-inline0.tar.gz"

JOB = "0123456789abcdef0123456789abcdef"
SAVEPOINT = "savepoints/savepoint-012345-abcdefabcdef"

#: relative path -> size of every state file (``_metadata`` aside)
FILES = {
    f"{JOB}/shared/sst-a": 100,
    f"{JOB}/shared/sst-b": 200,
    f"{JOB}/shared/sst-old": 50,
    f"{JOB}/taskowned/leftover": 30,
    f"{JOB}/chk-1/private-1": 10,
    f"{JOB}/chk-1/op-1": 20,
    f"{JOB}/chk-2/private-2": 11,
    f"{JOB}/chk-2/op-2": 21,
    f"{JOB}/chk-3/half-written": 40,
    f"{SAVEPOINT}/data-1": 60,
    "notes.txt": 5,
}
#: relative path of each orphan -> its kind
ORPHANS = {
    f"{JOB}/chk-3/half-written": "in-flight",
    f"{JOB}/shared/sst-old": "shared",
    f"{JOB}/taskowned/leftover": "task-owned",
    "notes.txt": "other",
}
#: the outside file chk-2 references (relative to the ``outside`` URL) and its size
OUTSIDE_FILE = ("other-job/shared/sst-x", 70)
#: completed checkpoints and savepoints (relative directories) -> checkpoint id
COMPLETED = {f"{JOB}/chk-1": 1, f"{JOB}/chk-2": 2, SAVEPOINT: 5}
OPERATOR = bytes(range(16))


@dataclass(frozen=True)
class Tree:
    root: str
    outside: str

    def url(self, relative: str) -> str:
        return f"{self.root}/{relative}"


def _spelled(url: str) -> str:
    """A URL as Flink writes it into a handle (``file:/x`` for local files)."""
    return flink_spelling(parse_storage_path(url))


def _incremental(
    tree: Tree, checkpoint: int, shared: list[tuple[str, str, int]], private: str, size: int
) -> v.IncrementalHandle:
    return v.IncrementalHandle(
        checkpoint,
        "backend-0",
        0,
        64,
        v.FileHandle(_spelled(tree.url(private)), size),
        tuple(
            v.HandleAndLocalPath(name, v.FileHandle(_spelled(url), n)) for name, url, n in shared
        ),
        (v.HandleAndLocalPath("MANIFEST-000004", v.ByteStreamHandle("inline-manifest", b"m" * 7)),),
        1000,
        f"handle-{checkpoint}",
    )


def _operator_state(name: str, size: int) -> v.OperatorStateHandle:
    partitions = (v.PartitionOffsets("list", v.DistributionMode.SPLIT_DISTRIBUTE, (0,)),)
    return v.OperatorStateHandle(partitions, v.RelativeFileHandle(name, size))


@functools.cache
def flink_properties(savepoint: bool) -> bytes:
    """The checkpoint properties Flink 2.3.0 wrote for a checkpoint or a canonical savepoint
    (from the fixture: Java serialization bytes, kept as they are)."""
    with tarfile.open(ARCHIVE) as archive:
        for member in archive.getmembers():
            if member.name.endswith("/_metadata") and ("savepoint-" in member.name) == savepoint:
                handle = archive.extractfile(member)
                assert handle is not None
                properties = read_metadata(handle.read()).properties
                assert properties is not None
                return properties
    raise AssertionError("the fixture holds no such _metadata")


def _checkpoint(
    checkpoint: int,
    keyed: v.IncrementalHandle | v.KeyGroupsHandle,
    operator: v.OperatorStateHandle,
    savepoint: bool = False,
) -> bytes:
    subtasks = (
        v.SubtaskEntry(0, v.SubtaskState(managed_keyed=keyed)),
        v.SubtaskEntry(1, v.SubtaskState(managed_operator=operator)),
    )
    state = v.OperatorState(OPERATOR, 2, 128, None, subtasks, "counter", "counter-uid")
    properties = flink_properties(savepoint)
    return write_metadata(v.CheckpointMetadata(6, checkpoint, (), (state,), properties))


def build_tree(root: str, outside: str, put: Callable[[str, bytes], None]) -> Tree:
    """Write the tree below ``root`` (and its one outside file below ``outside``)."""
    tree = Tree(root.rstrip("/"), outside.rstrip("/"))
    for relative, size in FILES.items():
        put(tree.url(relative), bytes([len(relative) % 251]) * size)
    outside_url = f"{tree.outside}/{OUTSIDE_FILE[0]}"
    put(outside_url, b"x" * OUTSIDE_FILE[1])
    sst_a = ("000001.sst", tree.url(f"{JOB}/shared/sst-a"), 100)
    sst_b = ("000002.sst", tree.url(f"{JOB}/shared/sst-b"), 200)
    sst_x = ("000003.sst", outside_url, OUTSIDE_FILE[1])
    chk1 = _checkpoint(
        1, _incremental(tree, 1, [sst_a], f"{JOB}/chk-1/private-1", 10), _operator_state("op-1", 20)
    )
    chk2 = _checkpoint(
        2,
        _incremental(tree, 2, [sst_a, sst_b, sst_x], f"{JOB}/chk-2/private-2", 11),
        _operator_state("op-2", 21),
    )
    keyed = v.KeyGroupsHandle(0, (0,) * 64, v.RelativeFileHandle("data-1", 60), savepoint=True)
    savepoint = _checkpoint(5, keyed, _operator_state("data-1", 60), savepoint=True)
    put(tree.url(f"{JOB}/chk-1/_metadata"), chk1)
    put(tree.url(f"{JOB}/chk-2/_metadata"), chk2)
    put(tree.url(f"{SAVEPOINT}/_metadata"), savepoint)
    return tree
