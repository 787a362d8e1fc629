"""flinkmeta: Flink's ``_metadata`` format read and written in Python (no JVM).

Against the fixture tree written by Flink 2.3.0 (``fixtures/flink/README.md``): the known facts,
every file the metadata names exists with the size it claims, writing back gives Flink's bytes.
Hypothesis: ``read_metadata(write_metadata(x)) == x``. Robustness: empty bytes, a real file cut
at every byte, random and corrupted bytes, a wrong magic number, unknown versions and tags, counts
the file cannot hold, nesting without end: each a ``MetadataFormatError`` naming the offset and
what was expected, within a second, never another exception. The agreement with Flink's own
loader is in ``tests/flink/test_flink_metadata.py``.
"""

from __future__ import annotations

import contextlib
import random
import struct
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

import ckptstore.flink_metadata
from ckptstore.errors import CheckpointStorageError
from flinkmeta import (
    ByteStreamHandle,
    CheckpointMetadata,
    FileHandle,
    KeyGroupsHandle,
    MetadataFormatError,
    OperatorState,
    OperatorStateHandle,
    RelativeFileHandle,
    SubtaskEntry,
    SubtaskState,
    read_metadata,
    stream_handles,
    write_metadata,
)
from flinkmeta._wire import decode_modified_utf8, encode_modified_utf8
from tests.reference import _flink_metadata_strategies as strategies

REPO = Path(__file__).resolve().parents[2]
ARCHIVE = REPO / "fixtures" / "flink" / "flink-2.3.0-hashmap-inline0.tar.gz"
JOB_DIR = "flinkckpt/28035f78a330f28ba4ff4840f31b71d0"
SAVEPOINT_DIR = "flinksp/savepoint-28035f-1a44b3786f30"
EXPECTED_IDS = {f"{JOB_DIR}/chk-9": 9, f"{JOB_DIR}/chk-11": 11, f"{JOB_DIR}/chk-12": 12}
EXPECTED_IDS[SAVEPOINT_DIR] = 10
OPERATORS = {
    "cbc357ccb763df2852fee8c4fc7d55f2": "Source: gen[1]",
    "0da08f51eaa85fc298e176a139b3649a": "KEYED PROCESS, Filter",
    "570f707193e0fe32f4d86d067aba243b": "TableToDataStream",
    "bd33605c130570ce6a6dfc89f7ba1b8d": "Sink: Print to Std. Out",
    "d0c72dd2b6af78b6a6a76d6c646280a9": "Map, _stream_key_by_map_operator",
}
#: "Within a second": of this process's CPU time (parsing is pure computation), so that a
#: loaded machine does not fail the bound while the algorithm keeps it.
SECOND = 1.0


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("flink-tree")
    with tarfile.open(ARCHIVE) as archive:
        archive.extractall(root, filter="data")
    return root


@pytest.fixture(scope="module")
def metadata_files(tree: Path) -> dict[str, bytes]:
    return {d: (tree / d / "_metadata").read_bytes() for d in EXPECTED_IDS}


@pytest.fixture(scope="module", autouse=True)
def flink_properties(metadata_files: dict[str, bytes]) -> None:
    strategies.with_properties(
        sorted({read_metadata(b).properties or b"" for b in metadata_files.values()})
    )


# -- the fixture tree ------------------------------------------------------------------------


def test_the_fixture_metadata_reads_as_flink_wrote_it(metadata_files: dict[str, bytes]) -> None:
    for directory, data in metadata_files.items():
        metadata = read_metadata(data)
        assert metadata.version == 6
        assert metadata.checkpoint_id == EXPECTED_IDS[directory]
        assert metadata.master_states == ()
        assert {op.operator_id_hex: op.name for op in metadata.operators} == OPERATORS
        assert {(op.parallelism, op.max_parallelism) for op in metadata.operators} == {(2, 128)}
        uids = {op.uid for op in metadata.operators}
        assert uids == {None, "counter", "tolong"}
        keyed = next(op for op in metadata.operators if op.uid == "counter")
        assert [entry.index for entry in keyed.subtasks or ()] == [0, 1]
        properties = metadata.properties or b""
        assert properties.startswith(b"\xac\xed\x00\x05")
        kind = b"Savepoint" if directory == SAVEPOINT_DIR else b"FORWARD_BACKWARD"
        assert kind in properties


def test_writing_the_fixture_values_gives_flinks_bytes(metadata_files: dict[str, bytes]) -> None:
    for data in metadata_files.values():
        assert write_metadata(read_metadata(data)) == data


def test_every_file_the_fixture_metadata_names_exists_with_its_size(
    tree: Path, metadata_files: dict[str, bytes]
) -> None:
    for directory, data in metadata_files.items():
        named = [
            h for h in stream_handles(read_metadata(data)) if isinstance(h, RelativeFileHandle)
        ]
        assert len(named) == 2
        files = {p.name for p in (tree / directory).iterdir()} - {"_metadata"}
        assert {h.relative_path for h in named} == files
        for handle in named:
            assert (tree / directory / handle.relative_path).stat().st_size == handle.state_size
        key_groups = [
            h for h in stream_handles(read_metadata(data)) if isinstance(h, KeyGroupsHandle)
        ]
        assert sum(h.key_group_count for h in key_groups) == 128


# -- round trip --------------------------------------------------------------------------------

#: nested checkpoints take a while to draw, longer on a loaded machine: not a defect of the code
_SLOW_DRAWS = [HealthCheck.too_slow]


@settings(suppress_health_check=_SLOW_DRAWS)
@given(strategies.checkpoint_metadata())
def test_reading_what_the_writer_wrote_gives_the_value_back(metadata: CheckpointMetadata) -> None:
    data = write_metadata(metadata)
    assert read_metadata(data) == metadata
    assert write_metadata(read_metadata(data)) == data


def test_modified_utf8_is_javas() -> None:
    assert encode_modified_utf8("a\x00b") == b"a\xc0\x80b"
    assert encode_modified_utf8("\U0001f600") == bytes.fromhex("eda0bdedb880")
    assert encode_modified_utf8("é€") == "é€".encode()
    for text in ("", "a\x00b", "\U0001f600 ok", "é€", "\uffff"):
        assert decode_modified_utf8(encode_modified_utf8(text)) == text


# -- bad metadata ------------------------------------------------------------------------------


def _fails(data: bytes) -> MetadataFormatError:
    start = time.process_time()
    with pytest.raises(MetadataFormatError) as caught:
        read_metadata(data)
    assert time.process_time() - start < SECOND
    error = caught.value
    assert isinstance(error, ValueError)
    assert 0 <= error.offset <= len(data)
    assert error.expected
    assert str(error.offset) in str(error)
    return error


def test_empty_metadata_is_a_format_error() -> None:
    error = _fails(b"")
    assert error.offset == 0
    assert "magic" in error.expected


def test_a_wrong_magic_number_is_a_format_error(metadata_files: dict[str, bytes]) -> None:
    data = next(iter(metadata_files.values()))
    error = _fails(b"\x49\x60\x67\x2e" + data[4:])
    assert (error.offset, error.found) == (0, "0x4960672e")


@pytest.mark.parametrize("version", [0, 1, 2, 7, -1, 2**31 - 1])
def test_an_unknown_version_is_a_format_error(
    metadata_files: dict[str, bytes], version: int
) -> None:
    data = next(iter(metadata_files.values()))
    error = _fails(data[:4] + struct.pack(">i", version) + data[8:])
    assert error.offset == 4
    assert "version" in error.expected


def test_a_real_file_cut_at_every_byte_is_a_format_error(metadata_files: dict[str, bytes]) -> None:
    for data in metadata_files.values():
        for length in range(len(data)):
            _fails(data[:length])


def test_trailing_bytes_are_a_format_error(metadata_files: dict[str, bytes]) -> None:
    data = next(iter(metadata_files.values()))
    error = _fails(data + b"\x00")
    assert error.offset == len(data)


def test_random_and_corrupted_bytes_raise_only_format_errors(
    metadata_files: dict[str, bytes],
) -> None:
    rng = random.Random(37)
    real = list(metadata_files.values())
    for _ in range(2000):
        data = bytearray(rng.choice(real))
        for _ in range(rng.randint(1, 6)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        _read_or_format_error(bytes(data))
    for _ in range(500):
        noise = bytes(rng.randrange(256) for _ in range(rng.randint(0, 400)))
        _read_or_format_error(rng.choice([b"", real[0][:8]]) + noise)


def _read_or_format_error(data: bytes) -> None:
    start = time.process_time()
    with contextlib.suppress(MetadataFormatError):
        read_metadata(data)
    assert time.process_time() - start < SECOND


def _one_operator(state: SubtaskState) -> CheckpointMetadata:
    operator = OperatorState(b"\x01" * 16, 1, 128, None, (SubtaskEntry(0, state),))
    return CheckpointMetadata(3, 7, (), (operator,))


def test_unknown_handle_tags_are_format_errors() -> None:
    file = FileHandle("file:/tmp/x", 3)
    cases = {
        "keyed": SubtaskState(managed_keyed=KeyGroupsHandle(0, (0,), file, "id")),
        "stream": SubtaskState(managed_keyed=KeyGroupsHandle(0, (0,), file, "id")),
        "operator": SubtaskState(managed_operator=OperatorStateHandle((), file)),
    }
    for kind, state in cases.items():
        data = bytearray(write_metadata(_one_operator(state)))
        # the handle's tag: the first byte after the subtask header (or its delegate's)
        offset = data.index(b"file:/tmp/x") - 11 if kind == "stream" else _handle_offset(kind)
        for tag in (18, 99, 200, 0x7F):
            data[offset] = tag
            error = _fails(bytes(data))
            assert error.offset == offset
            assert "tag" in error.expected
            assert kind in error.expected
            assert error.found


def _handle_offset(kind: str) -> int:
    header = 4 + 4 + 8 + 4 + 4  # magic, version, id, masters, operators
    operator = 16 + 4 + 4 + 1 + 4 + 4  # id, parallelisms, no coordinator, count, index
    flags = 4 if kind == "operator" else 4 + 4  # the managed flag (then the raw one)
    return header + operator + flags


def test_counts_the_file_cannot_hold_fail_at_once() -> None:
    header = struct.pack(">iiq", 0x4960672D, 6, 1)
    for rest in (struct.pack(">i", 2**31 - 1), struct.pack(">ii", 0, 2**31 - 1)):
        error = _fails(header + rest + b"\x00" * 64)
        assert "bytes left" in error.expected


def test_handles_nested_without_end_are_a_format_error() -> None:
    file = FileHandle("file:/tmp/x", 3)
    handle: KeyGroupsHandle | FileHandle = file
    for _ in range(200):
        handle = KeyGroupsHandle(0, (0,), handle)
    state = SubtaskState(managed_keyed=KeyGroupsHandle(0, (0,), handle, "id"))
    error = _fails(write_metadata(_one_operator(state)))
    assert "nested" in error.expected


def test_a_negative_checkpoint_id_is_a_format_error() -> None:
    error = _fails(struct.pack(">iiqii", 0x4960672D, 3, -1, 0, 0))
    assert (error.offset, error.found) == (8, "-1")


# -- what the writer refuses ------------------------------------------------------------------


@pytest.mark.parametrize(
    "metadata",
    [
        CheckpointMetadata(2, 1, (), ()),
        CheckpointMetadata(4, 1, (), ()),  # no properties from version 4 on
        CheckpointMetadata(3, 1, (), (), b"\xac\xed\x00\x05p"),
        CheckpointMetadata(3, -1, (), ()),
        CheckpointMetadata(3, 2**63, (), ()),
        CheckpointMetadata(3, 1, (), (OperatorState(b"\x01" * 15, 1, 1),)),
        CheckpointMetadata(4, 1, (), (OperatorState(b"\x01" * 16, 1, 1, name="x"),), b""),
        CheckpointMetadata(5, 1, (), (OperatorState(b"\x01" * 16, 1, 1, name=""),), b""),
        CheckpointMetadata(5, 1, (), (OperatorState(b"\x01" * 16, 1, 1, name="x" * 70000),), b""),
        CheckpointMetadata(
            3, 1, (), (OperatorState(b"\x01" * 16, 1, 1, ByteStreamHandle("c", b""), None),)
        ),
    ],
)
def test_the_writer_refuses_what_the_version_cannot_hold(metadata: CheckpointMetadata) -> None:
    with pytest.raises(MetadataFormatError) as caught:
        write_metadata(metadata)
    assert caught.value.offset == -1


@settings(max_examples=20, suppress_health_check=_SLOW_DRAWS)
@given(strategies.checkpoint_metadata(versions=(6,)))
def test_stream_handles_lists_every_delegate(metadata: CheckpointMetadata) -> None:
    listed = list(stream_handles(metadata))
    for handle in listed:
        if isinstance(handle, KeyGroupsHandle) and handle.delegate is not None:
            assert handle.delegate in listed


def test_flinkmeta_imports_nothing_of_the_reference_or_the_kit() -> None:
    code = "import sys, flinkmeta; print(sorted(m for m in sys.modules if m.startswith('ckpt')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_ckptstore_flink_metadata_raises_the_references_error() -> None:
    """The reference's name for the format keeps its errors under ``CheckpointStorageError``."""
    with pytest.raises(CheckpointStorageError) as caught:
        ckptstore.flink_metadata.read_metadata(b"\x49\x60")
    assert isinstance(caught.value, MetadataFormatError)
    assert caught.value.offset == 0
    with pytest.raises(ckptstore.flink_metadata.MetadataFormatError):
        ckptstore.flink_metadata.write_metadata(CheckpointMetadata(2, 1, (), ()))
    assert ckptstore.flink_metadata.FileHandle is FileHandle
