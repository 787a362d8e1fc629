"""ckptstore.validation: the one argument check of every public constructor and method.

The cases of issue 10 (bad arguments that used to be accepted or crashed with an untyped
error) first, then the helpers themselves. Every error is one of ckptstore.errors' classes and
an instance of the built-in the contract names (TypeError for None, ValueError otherwise).
"""

from __future__ import annotations

import datetime
import pathlib
import pickle
from typing import Any

import pytest

from ckptstore import FileSystemCheckpointStorage, JobManagerCheckpointStorage
from ckptstore.api import (
    ByteStreamStateHandle,
    CheckpointedStateScope,
    CheckpointStorageLocationReference,
    JobID,
    decode_path_from_reference,
    encode_path_as_reference,
)
from ckptstore.config import CheckpointConfig
from ckptstore.errors import (
    ArgumentOutOfRangeError,
    CheckpointStorageError,
    ConfigurationError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    InvalidPathError,
    MissingArgumentError,
)
from ckptstore.filesystem.handles import FileStateHandle, RelativeFileStateHandle
from ckptstore.validation import (
    JAVA_LONG_MAX,
    MAX_URL_LENGTH,
    MAX_WRITE_BUFFER_SIZE,
    describe,
    require_bytes,
    require_checkpoint_id,
    require_duration,
    require_handle,
    require_handles,
    require_int,
    require_job_id,
    require_scheme_names,
    require_storage_options,
    require_url_text,
)
from tests.reference._fsroot import FsRoot

JOB = JobID.from_hex("0123456789abcdef0123456789abcdef")


def _typed(error: BaseException, builtin: type[BaseException]) -> None:
    assert isinstance(error, CheckpointStorageError), repr(error)
    assert isinstance(error, builtin), repr(error)


# --------------------------------------------------------------------------- issue 10, case 2


@pytest.mark.parametrize("value", ["no", "yes", "false", 0, 1, None, [], "True"])
def test_create_subdir_must_be_a_bool(fsroot: FsRoot, value: Any) -> None:
    """create_subdir='no' used to mean True (a truthy string)."""
    builtin = TypeError if value is None else ValueError
    with pytest.raises(builtin) as caught:
        FileSystemCheckpointStorage(fsroot.sub("c"), create_subdir=value)
    _typed(caught.value, builtin)
    assert "create_subdir" in str(caught.value)


@pytest.mark.parametrize(
    ("value", "builtin", "error"),
    [
        (None, TypeError, MissingArgumentError),
        (-1, ValueError, ArgumentOutOfRangeError),
        ("x", TypeError, InvalidArgumentTypeError),
        ("1", TypeError, InvalidArgumentTypeError),
        (1.0, TypeError, InvalidArgumentTypeError),
        (True, TypeError, InvalidArgumentTypeError),
        (JAVA_LONG_MAX + 1, ValueError, ArgumentOutOfRangeError),
        (2**100, ValueError, ArgumentOutOfRangeError),
    ],
)
@pytest.mark.parametrize("storage", ["fs", "jm"])
def test_checkpoint_and_savepoint_ids(
    fsroot: FsRoot, value: Any, builtin: type[BaseException], error: type[Exception], storage: str
) -> None:
    """Ids are non-negative Java longs for checkpoints, savepoints and worker locations."""
    if storage == "fs":
        made: Any = FileSystemCheckpointStorage(fsroot.sub("c"), savepoint_path=fsroot.sub("s"))
    else:
        made = JobManagerCheckpointStorage(fsroot.sub("c"), savepoint_path=fsroot.sub("s"))
    access = made.create_checkpoint_storage(JOB)
    before = fsroot.files()
    calls = [
        lambda: access.initialize_location_for_checkpoint(value),
        lambda: access.initialize_location_for_savepoint(value),
        lambda: access.initialize_location_for_savepoint(value, fsroot.sub("target")),
        lambda: access.resolve_checkpoint_storage_location(
            value, CheckpointStorageLocationReference.default()
        ),
    ]
    for call in calls:
        with pytest.raises(builtin) as caught:
            call()
        assert isinstance(caught.value, error)
        _typed(caught.value, builtin)
    assert fsroot.files() == before
    assert not fsroot.exists(fsroot.sub("s"))
    assert not fsroot.exists(fsroot.sub("target"))


def test_largest_java_long_is_accepted(fsroot: FsRoot) -> None:
    access = FileSystemCheckpointStorage(fsroot.sub("c")).create_checkpoint_storage(JOB)
    location = access.resolve_checkpoint_storage_location(
        JAVA_LONG_MAX, CheckpointStorageLocationReference.default()
    )
    assert location.checkpoint_directory.endswith(f"/chk-{JAVA_LONG_MAX}")
    with pytest.raises(ValueError, match=r"^Illegal negative checkpoint id: -1\.$"):
        access.initialize_location_for_checkpoint(-1)


@pytest.mark.parametrize(
    "schemes", [[None], [b"s3"], ["s3n"], ["no such scheme"], [""], ["1x"], [3], {"file": 1}, 5]
)
def test_allowed_schemes(fsroot: FsRoot, schemes: Any) -> None:
    """allowed_schemes=[None] used to become the scheme 'none'; s3n was allowed."""
    for make in (
        lambda: FileSystemCheckpointStorage(fsroot.sub("c"), allowed_schemes=schemes),
        lambda: JobManagerCheckpointStorage(allowed_schemes=schemes),
    ):
        with pytest.raises(ValueError) as caught:
            make()
        _typed(caught.value, ValueError)
        assert "allowed_schemes" in str(caught.value)


def test_s3n_is_served_by_nothing() -> None:
    with pytest.raises(ConfigurationError, match="s3n"):
        FileSystemCheckpointStorage("s3n://bucket/ckpt")
    storage = FileSystemCheckpointStorage("s3://bucket/ckpt")
    assert "s3n" not in storage._all_allowed_schemes()
    with pytest.raises(OSError, match="'s3n' is not allowed"):
        storage.resolve_checkpoint("s3n://bucket/ckpt/job/chk-1")


@pytest.mark.parametrize("size", [2**40, MAX_WRITE_BUFFER_SIZE + 1, 2**31, -2])
def test_write_buffer_size_is_bounded(fsroot: FsRoot, size: int) -> None:
    """write_buffer_size=2**40 used to be accepted (and allocated as state was written)."""
    with pytest.raises(ValueError) as caught:
        FileSystemCheckpointStorage(fsroot.sub("c"), 0, size)
    _typed(caught.value, ValueError)
    assert FileSystemCheckpointStorage(fsroot.sub("c"), 0, MAX_WRITE_BUFFER_SIZE)


@pytest.mark.parametrize("reference", [b"abc", "abc", 1, object(), bytearray(b"x")])
def test_reference_must_be_a_reference(fsroot: FsRoot, reference: Any) -> None:
    """resolve_checkpoint_storage_location(1, b'abc') used to raise AttributeError."""
    for storage in (
        FileSystemCheckpointStorage(fsroot.sub("c")),
        JobManagerCheckpointStorage(fsroot.sub("c")),
    ):
        access = storage.create_checkpoint_storage(JOB)
        with pytest.raises(TypeError) as caught:
            access.resolve_checkpoint_storage_location(1, reference)
        _typed(caught.value, ValueError)
        assert "reference" in str(caught.value)


@pytest.mark.parametrize("handle", ["abc", b"abc", 1, None, object(), {"file_path": "/x"}])
def test_resolve_handle_wants_a_handle(fsroot: FsRoot, handle: Any) -> None:
    """resolve_handle('abc') used to return 'abc'."""
    access = FileSystemCheckpointStorage(fsroot.sub("c")).create_checkpoint_storage(JOB)
    access.initialize_base_locations_for_checkpoint()
    location = access.initialize_location_for_checkpoint(1)
    with location.create_metadata_output_stream() as out:
        out.write(b"m")
        completed = out.close_and_finalize_checkpoint()
    builtin = TypeError
    with pytest.raises(builtin) as caught:
        completed.resolve_handle(handle)
    _typed(caught.value, builtin)


# --------------------------------------------------------------------------- other arguments


def test_storage_options_are_checked(fsroot: FsRoot) -> None:
    bad: list[Any] = [
        "endpoint=x",
        {1: "x"},
        {"retries": 0},
        {"retries": 2.5},
        {"retries": True},
        {"config_kwargs": "x"},
        {"config_kwargs": {"connect_timeout": -1}},
        {"config_kwargs": {"connect_timeout": float("nan")}},
        {"config_kwargs": {"read_timeout": 10**9}},
        {"config_kwargs": {"retries": {"max_attempts": 100}}},
        {"config_kwargs": {"retries": 3}},
        {"client_kwargs": []},
        {"endpoint_url": "::::"},
        {"endpoint_url": "ftp://host"},
        {"endpoint_url": 9000},
        {"endpoint_url": "http://host:notaport"},
        {"client_kwargs": {"endpoint_url": "localhost:9000"}},
        {"allow_unconditional_metadata": "yes"},
        {"allow_unconditional_metadata": 1},
    ]
    for options in bad:
        for make in (
            lambda o=options: FileSystemCheckpointStorage("s3://b/c", storage_options=o),
            lambda o=options: JobManagerCheckpointStorage(storage_options=o),
        ):
            with pytest.raises(ValueError) as caught:
                make()
            _typed(caught.value, ValueError)
    good = {
        "endpoint_url": "http://127.0.0.1:9",
        "retries": 3,
        "config_kwargs": {"connect_timeout": 0.5, "retries": {"max_attempts": 0}},
        "allow_unconditional_metadata": True,
    }
    assert require_storage_options(good) == good


def test_job_ids(fsroot: FsRoot) -> None:
    storage = FileSystemCheckpointStorage(fsroot.sub("c"))
    for bad, builtin in (
        (None, TypeError),
        ("zz" * 16, ValueError),
        ("ab", ValueError),
        (123, TypeError),
        (b"0" * 16, TypeError),
        (JOB.bytes_, TypeError),
    ):
        with pytest.raises(builtin) as caught:
            storage.create_checkpoint_storage(bad)
        _typed(caught.value, builtin)
    assert storage.create_checkpoint_storage(str(JOB)).job_id == JOB


def test_value_types_of_the_contract() -> None:
    cases: list[tuple[Any, type[BaseException]]] = [
        (lambda: JobID(b"short"), ValueError),
        (lambda: JobID("0" * 16), TypeError),
        (lambda: JobID.from_hex(123), TypeError),
        (lambda: CheckpointStorageLocationReference("abc"), TypeError),
        (lambda: CheckpointStorageLocationReference(b""), ValueError),
        (lambda: encode_path_as_reference(b"/x"), TypeError),
        (lambda: encode_path_as_reference("\udcff"), ValueError),
        (lambda: decode_path_from_reference(b"abc"), TypeError),
        (lambda: ByteStreamStateHandle("n", 10**12), TypeError),
        (lambda: ByteStreamStateHandle(5, b""), TypeError),
        (lambda: FileStateHandle("/x", -2), ValueError),
        (lambda: FileStateHandle("/x", "3"), TypeError),
        (lambda: FileStateHandle(b"/x", 3), TypeError),
        (lambda: FileStateHandle("/x\x00y", 3), ValueError),
        (lambda: FileStateHandle("/x", 2**64), ValueError),
        (lambda: RelativeFileStateHandle("/x/y", 3, relative_path="../y"), ValueError),
        (lambda: RelativeFileStateHandle("/x/y", 3, relative_path="a/b"), ValueError),
    ]
    for make, builtin in cases:
        with pytest.raises(builtin) as caught:
            make()
        _typed(caught.value, builtin)


def test_stream_write_arguments(fsroot: FsRoot) -> None:
    """write() takes bytes-like objects only: str, int, None are typed errors; the stream
    stays usable after a refused write."""
    for storage in (
        FileSystemCheckpointStorage(fsroot.sub("c"), 0),
        JobManagerCheckpointStorage(fsroot.sub("c")),
    ):
        access = storage.create_checkpoint_storage(JOB)
        access.initialize_base_locations_for_checkpoint()
        location = access.initialize_location_for_checkpoint(1)
        factory = access.resolve_checkpoint_storage_location(1, location.location_reference)
        streams: list[Any] = [
            factory.create_checkpoint_state_output_stream(CheckpointedStateScope.EXCLUSIVE),
            access.create_task_owned_state_stream(),
            location.create_metadata_output_stream(),
        ]
        for stream in streams:
            for bad, builtin in (
                ("text", TypeError),
                (None, TypeError),
                (5, TypeError),
                ([1, 2], TypeError),
            ):
                with pytest.raises(builtin) as caught:
                    stream.write(bad)
                _typed(caught.value, builtin)
            assert stream.write(b"ok") == 2
            stream.close()
        for bad in ("exclusive", None, 0, "private"):
            with pytest.raises(TypeError) as caught:
                factory.create_checkpoint_state_output_stream(bad)
            _typed(caught.value, TypeError)


def test_checkpoint_config_longs_and_ints() -> None:
    config = CheckpointConfig()
    for call in (
        lambda: config.set_checkpoint_interval(JAVA_LONG_MAX + 1),
        lambda: config.set_checkpoint_timeout(2**70),
        lambda: config.set_min_pause_between_checkpoints(2**64),
        lambda: config.set_max_concurrent_checkpoints(2**31),
        lambda: config.set_tolerable_checkpoint_failure_number(2**31),
    ):
        with pytest.raises(ArgumentOutOfRangeError):
            call()
    with pytest.raises(InvalidArgumentError, match="larger than or equal to 10"):
        config.set_checkpoint_interval(9)


# --------------------------------------------------------------------------- the helpers


def test_errors_name_argument_value_and_range_and_pickle() -> None:
    with pytest.raises(ArgumentOutOfRangeError) as caught:
        require_int(99, "answer", minimum=0, maximum=42)
    error = caught.value
    assert str(error) == "answer must be an integer in [0, 42], got 99"
    assert (error.argument, error.value, error.accepted) == (  # type: ignore[attr-defined]
        "answer",
        "99 (int)",
        "an integer in [0, 42]",
    )
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is ArgumentOutOfRangeError
    assert copy.argument == "answer"  # type: ignore[attr-defined]


def test_require_int_accepts_index_types_but_not_bools_floats_or_strings() -> None:
    class Index:
        def __index__(self) -> int:
            return 7

    assert require_int(Index(), "n") == 7
    for bad in (True, 7.0, "7", b"7", None):
        with pytest.raises(TypeError):
            require_int(bad, "n")


def test_require_checkpoint_id_bounds() -> None:
    assert require_checkpoint_id(0) == 0
    assert require_checkpoint_id(JAVA_LONG_MAX) == JAVA_LONG_MAX
    with pytest.raises(ArgumentOutOfRangeError, match="Java long"):
        require_checkpoint_id(JAVA_LONG_MAX + 1)


def test_require_url_text() -> None:
    assert require_url_text("s3://b/k", "p") == "s3://b/k"
    for bad, error in (
        ("/a\x00b", InvalidPathError),
        ("/a\nb", InvalidPathError),
        ("/a\x7f", InvalidPathError),
        ("\udc80", InvalidPathError),
        ("/" + "a" * MAX_URL_LENGTH, InvalidPathError),
        (b"/x", InvalidArgumentTypeError),
        (None, MissingArgumentError),
    ):
        with pytest.raises(error):
            require_url_text(bad, "p")


def test_require_url_text_takes_path_likes_up_to_the_limit() -> None:
    """The reference's conveniences beyond the contract's strings: os.PathLike paths, and
    text of exactly MAX_URL_LENGTH characters (the limit itself is accepted)."""
    longest = "/" + "a" * (MAX_URL_LENGTH - 1)
    assert require_url_text(pathlib.PurePosixPath("/x/y"), "p") == "/x/y"
    assert require_url_text(longest, "p") == longest


def test_require_job_id_takes_its_hex_text() -> None:
    assert require_job_id("0123456789abcdef0123456789abcdef") == JOB
    assert require_job_id(JOB) is JOB


def test_require_bytes_and_handles() -> None:
    assert bytes(require_bytes(memoryview(b"ab"))) == b"ab"
    assert bytes(require_bytes(memoryview(bytes(8)).cast("Q"))) == bytes(8)
    inline = ByteStreamStateHandle("n", b"x")
    assert require_handle(inline) is inline
    assert require_handles((inline,)) == [inline]
    for bad in ("abc", b"abc", {"a": inline}, 5, None):
        with pytest.raises(TypeError):
            require_handles(bad)
    with pytest.raises(TypeError, match=r"handles\[1\]"):
        require_handles([inline, "x"])


def test_require_scheme_names_and_duration() -> None:
    assert require_scheme_names("S3://") == ("s3",)
    assert require_scheme_names(None) == ()
    assert require_duration(datetime.timedelta(minutes=1), "d") == 60.0
    for bad in (-1, float("inf"), "1", True, None):
        with pytest.raises((TypeError, ValueError)):
            require_duration(bad, "d")


def test_describe_redacts_and_survives_hostile_reprs() -> None:
    assert "pw" not in describe("http://user:pw@host/")

    class Hostile:
        def __repr__(self) -> str:
            raise RuntimeError("no")

    assert describe(Hostile()).startswith("<Hostile>")
    assert len(describe("x" * 1000)) < 100
