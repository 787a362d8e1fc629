"""Hypothesis strategies of checkpoint metadata values that Flink 2.3.0 could have written.

Realistic, not merely well formed: 16-byte operator ids, 1 <= parallelism <= max parallelism
<= 128, subtask indices below the parallelism, key-group ranges inside the max parallelism with
one non-decreasing offset per key group, UUID backend ids and state handle ids, paths in Flink's
canonical spelling (``file:/...``, ``s3://bucket/...``: Flink's ``Path`` rewrites others),
partition names unique within a handle (Flink keeps them in a map), the checkpoint properties
bytes Flink wrote (taken from the fixture tree), and per format version only what it can hold
(operator names from 5, merged channel state from 6). Shared by the unit tests and the Flink
leg (``tests/flink/test_flink_metadata.py``).
"""

from __future__ import annotations

import uuid

from hypothesis import strategies as st

from flinkmeta import values as v

# CheckpointProperties as Flink 2.3.0 serialized them: a checkpoint's and a canonical savepoint's
# (the tails of the fixture tree's chk-9 and savepoint _metadata files).
PROPERTIES: list[bytes] = []

TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), max_codepoint=0x1F600), max_size=12
)
NAMES = st.text(
    alphabet=st.characters(whitelist_categories=("L", "N"), whitelist_characters=" :-_[]"),
    min_size=1,
    max_size=24,
)
UUIDS = st.builds(lambda n: str(uuid.UUID(int=n, version=4)), st.integers(0, 2**128 - 1))
SIZES = st.integers(0, 2**40)
FILE_NAMES = st.builds(lambda n: str(uuid.UUID(int=n, version=4)), st.integers(0, 2**128 - 1))
DIRS = st.sampled_from(
    [
        "file:/tmp/flink/checkpoints/28035f78a330f28ba4ff4840f31b71d0/shared",
        "file:/data/ckpt/job/taskowned",
        "s3://bucket/flink/checkpoints/0123456789abcdef0123456789abcdef/shared",
        "hdfs://namenode:8020/flink/chk",
    ]
)


def with_properties(blobs: list[bytes]) -> None:
    """Give the strategies the properties bytes Flink wrote (called once by the tests)."""
    PROPERTIES[:] = blobs


@st.composite
def file_handles(draw: st.DrawFn) -> v.FileHandle:
    return v.FileHandle(f"{draw(DIRS)}/{draw(FILE_NAMES)}", draw(SIZES))


@st.composite
def relative_handles(draw: st.DrawFn) -> v.RelativeFileHandle:
    return v.RelativeFileHandle(draw(FILE_NAMES), draw(SIZES))


@st.composite
def byte_handles(draw: st.DrawFn) -> v.ByteStreamHandle:
    return v.ByteStreamHandle(draw(FILE_NAMES), draw(st.binary(max_size=64)))


@st.composite
def segment_handles(draw: st.DrawFn) -> v.SegmentFileHandle:
    return v.SegmentFileHandle(
        f"{draw(DIRS)}/{draw(FILE_NAMES)}",
        draw(st.integers(0, 2**32)),
        draw(SIZES),
        draw(st.sampled_from(v.StateScope)),
        draw(UUIDS),
    )


def stream_handles() -> st.SearchStrategy[v.StreamHandle]:
    return st.one_of(
        file_handles(),
        relative_handles(),
        byte_handles(),
        segment_handles(),
        st.just(v.EmptySegmentFileHandle()),
    )


def plain_streams() -> st.SearchStrategy[v.StreamHandle]:
    """Streams where Flink writes plain ones (file, relative or inline)."""
    return st.one_of(file_handles(), relative_handles(), byte_handles())


@st.composite
def key_group_span(draw: st.DrawFn, max_parallelism: int) -> tuple[int, int]:
    start = draw(st.integers(0, max_parallelism - 1))
    count = draw(st.integers(1, min(8, max_parallelism - start)))
    return start, count


@st.composite
def offsets(draw: st.DrawFn, count: int) -> tuple[int, ...]:
    steps = draw(st.lists(st.integers(0, 5000), min_size=count, max_size=count))
    total, result = 0, []
    for step in steps:
        total += step
        result.append(total)
    return tuple(result)


@st.composite
def key_groups_handles(draw: st.DrawFn, max_parallelism: int) -> v.KeyGroupsHandle:
    start, count = draw(key_group_span(max_parallelism))
    savepoint = draw(st.booleans())
    handle_id = None if savepoint else draw(st.one_of(st.none(), UUIDS))
    delegate = draw(plain_streams())
    return v.KeyGroupsHandle(start, draw(offsets(count)), delegate, handle_id, savepoint)


@st.composite
def incremental_handles(draw: st.DrawFn, max_parallelism: int) -> v.IncrementalHandle:
    start, count = draw(key_group_span(max_parallelism))
    sst = st.builds(
        lambda n, h: v.HandleAndLocalPath(f"{n:06d}.sst", h),
        st.integers(0, 999_999),
        st.one_of(file_handles(), byte_handles()),
    )
    private = st.builds(
        v.HandleAndLocalPath,
        st.sampled_from(["MANIFEST-000004", "CURRENT", "OPTIONS-000007"]),
        st.one_of(file_handles(), byte_handles()),
    )
    v2 = draw(st.booleans())
    return v.IncrementalHandle(
        draw(st.integers(1, 10**6)),
        draw(UUIDS),
        start,
        count,
        draw(st.one_of(file_handles(), byte_handles())),
        tuple(draw(st.lists(sst, max_size=4))),
        tuple(draw(st.lists(private, max_size=3))),
        draw(SIZES) if v2 else None,
        draw(UUIDS) if v2 else None,
    )


@st.composite
def in_memory_changelogs(draw: st.DrawFn, max_parallelism: int) -> v.InMemoryChangelogHandle:
    start, count = draw(key_group_span(max_parallelism))
    changes = st.builds(
        v.StateChange,
        st.one_of(st.just(-1), st.integers(start, start + count - 1)),
        st.binary(min_size=1, max_size=16),
    )
    first = draw(st.integers(0, 10**6))
    return v.InMemoryChangelogHandle(
        start,
        count,
        first,
        first + draw(st.integers(0, 100)),
        tuple(draw(st.lists(changes, max_size=3))),
        draw(UUIDS),
    )


@st.composite
def changelog_streams(draw: st.DrawFn, max_parallelism: int) -> v.ChangelogStreamHandle:
    start, count = draw(key_group_span(max_parallelism))
    pairs = st.tuples(st.one_of(file_handles(), byte_handles()), st.integers(0, 2**20))
    return v.ChangelogStreamHandle(
        start,
        count,
        tuple(draw(st.lists(pairs, max_size=3))),
        draw(SIZES),
        draw(SIZES),
        draw(UUIDS),
        draw(st.sampled_from([None, "filesystem"])),
    )


@st.composite
def changelog_backends(draw: st.DrawFn, max_parallelism: int) -> v.ChangelogBackendHandle:
    start, count = draw(key_group_span(max_parallelism))
    materialized = st.one_of(
        key_groups_handles(max_parallelism), incremental_handles(max_parallelism)
    )
    changelog = st.one_of(in_memory_changelogs(max_parallelism), changelog_streams(max_parallelism))
    materialization = draw(st.integers(0, 1000))
    v2 = draw(st.booleans())
    return v.ChangelogBackendHandle(
        start,
        count,
        draw(SIZES),
        tuple(draw(st.lists(materialized, max_size=2))),
        tuple(draw(st.lists(changelog, max_size=2))),
        materialization,
        draw(UUIDS),
        materialization + draw(st.integers(0, 1000)) if v2 else None,
    )


def keyed_handles(max_parallelism: int) -> st.SearchStrategy[v.KeyedHandle]:
    return st.one_of(
        key_groups_handles(max_parallelism),
        incremental_handles(max_parallelism),
        changelog_backends(max_parallelism),
        in_memory_changelogs(max_parallelism),
        changelog_streams(max_parallelism),
    )


@st.composite
def operator_handles(draw: st.DrawFn) -> v.OperatorStateHandle:
    names = draw(st.lists(NAMES, unique=True, max_size=3))
    partitions = []
    for name in names:
        count = draw(st.integers(0, 4))
        partitions.append(
            v.PartitionOffsets(
                name, draw(st.sampled_from(v.DistributionMode)), draw(offsets(count))
            )
        )
    if draw(st.booleans()):
        empty = draw(st.booleans())
        delegate: v.StreamHandle = v.EmptySegmentFileHandle() if empty else draw(segment_handles())
        merging = v.FileMergingDirectories(
            "file:/data/ckpt/job/taskowned/tm-1", "file:/data/ckpt/job/shared/op-1", empty
        )
        return v.OperatorStateHandle(tuple(partitions), delegate, merging)
    return v.OperatorStateHandle(tuple(partitions), draw(plain_streams()))


@st.composite
def channel_handles(
    draw: st.DrawFn, subtask: int, inputs: bool, version: int
) -> v.ChannelStateHandle:
    delegate = draw(plain_streams())
    size = draw(SIZES)
    if version >= 6 and draw(st.booleans()):
        serialized = draw(st.binary(max_size=32))
        kind = v.MergedInputChannelHandle if inputs else v.MergedResultSubpartitionHandle
        return kind(subtask, size, delegate, serialized)
    count = draw(st.integers(0, 3))
    kind2 = v.InputChannelHandle if inputs else v.ResultSubpartitionHandle
    return kind2(
        subtask,
        draw(st.integers(0, 3)),
        draw(st.integers(0, 7)),
        draw(offsets(count)),
        size,
        delegate,
    )


@st.composite
def subtask_states(
    draw: st.DrawFn, subtask: int, max_parallelism: int, version: int
) -> v.SubtaskState:
    maybe_op = st.one_of(st.none(), operator_handles())
    maybe_keyed = st.one_of(st.none(), keyed_handles(max_parallelism))
    inputs = draw(st.lists(channel_handles(subtask, True, version), max_size=2))
    outputs = draw(st.lists(channel_handles(subtask, False, version), max_size=2))
    return v.SubtaskState(
        draw(maybe_op),
        draw(maybe_op),
        draw(maybe_keyed),
        draw(maybe_keyed),
        tuple(inputs),  # type: ignore[arg-type]
        tuple(outputs),  # type: ignore[arg-type]
    )


@st.composite
def operators(draw: st.DrawFn, version: int) -> v.OperatorState:
    max_parallelism = draw(st.sampled_from([1, 2, 4, 128]))
    parallelism = draw(st.integers(1, min(4, max_parallelism)))
    named = version >= 5
    name = draw(st.one_of(st.none(), NAMES)) if named else None
    uid = draw(st.one_of(st.none(), NAMES)) if named else None
    operator_id = draw(st.binary(min_size=16, max_size=16))
    if draw(st.integers(0, 9)) == 0:
        return v.OperatorState(operator_id, parallelism, max_parallelism, None, None, name, uid)
    indices = draw(st.lists(st.integers(0, parallelism - 1), unique=True))
    entries = []
    for index in sorted(indices):
        finished = draw(st.integers(0, 5)) == 0
        state = None if finished else draw(subtask_states(index, max_parallelism, version))
        entries.append(v.SubtaskEntry(index, state))
    coordinator = draw(st.one_of(st.none(), byte_handles()))
    return v.OperatorState(
        operator_id, parallelism, max_parallelism, coordinator, tuple(entries), name, uid
    )


@st.composite
def checkpoint_metadata(
    draw: st.DrawFn, versions: tuple[int, ...] = (3, 4, 5, 6)
) -> v.CheckpointMetadata:
    version = draw(st.sampled_from(versions))
    masters = st.builds(v.MasterState, TEXT, st.integers(0, 3), st.binary(max_size=16))
    ops = draw(st.lists(operators(version), max_size=3, unique_by=lambda o: o.operator_id))
    properties = None
    if version >= 4:
        properties = draw(st.sampled_from(PROPERTIES)) if PROPERTIES else b"\xac\xed\x00\x05p"
    return v.CheckpointMetadata(
        version,
        draw(st.integers(0, 2**40)),
        tuple(draw(st.lists(masters, max_size=2))),
        tuple(ops),
        properties,
    )
