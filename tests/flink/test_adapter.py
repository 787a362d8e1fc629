"""The Flink adapter against Flink 2.3.0's Java classes (skipped where the JVM cannot run)."""

from __future__ import annotations

import pickle
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ckptstore.api import (
    ByteStreamStateHandle,
    CheckpointedStateScope,
    CheckpointStorageLocationReference,
    FileStateHandle,
    JobID,
    RelativeFileStateHandle,
)

EXCLUSIVE = CheckpointedStateScope.EXCLUSIVE
SHARED = CheckpointedStateScope.SHARED


def _write(factory, data: bytes, scope=EXCLUSIVE):  # type: ignore[no-untyped-def]
    stream = factory.create_checkpoint_state_output_stream(scope)
    stream.write(data)
    return stream.close_and_get_handle()


def _read(handle) -> bytes:  # type: ignore[no-untyped-def]
    with handle.open_input_stream() as stream:
        return stream.read()


def test_checkpoint_round_trip(flink_storage, root: Path):
    job = JobID.generate()
    access = flink_storage.create_checkpoint_storage(job)
    access.initialize_base_locations_for_checkpoint()
    location = access.initialize_location_for_checkpoint(7)
    assert location.location_reference.is_default
    factory = access.resolve_checkpoint_storage_location(7, location.location_reference)
    small = _write(factory, b"tiny")
    big = _write(factory, b"x" * 5000)
    shared = _write(factory, b"s" * 300, SHARED)
    assert isinstance(small, ByteStreamStateHandle)
    assert isinstance(big, RelativeFileStateHandle)
    assert isinstance(shared, FileStateHandle)
    assert not isinstance(shared, RelativeFileStateHandle)
    chk = root / "checkpoints" / str(job) / "chk-7"
    assert big.file_path == f"file:{chk}/{big.relative_path}"  # Flink's Path spelling
    assert (_read(small), _read(big), _read(shared)) == (b"tiny", b"x" * 5000, b"s" * 300)
    with location.create_metadata_output_stream() as meta:
        meta.write(b"metadata bytes")
        assert meta.tell() == 14
        completed = meta.close_and_finalize_checkpoint()
    assert completed.external_pointer == f"file:{chk}"
    assert _read(completed.metadata_handle) == b"metadata bytes"
    resolved = flink_storage.resolve_checkpoint(str(chk / "_metadata"))
    assert resolved.external_pointer == completed.external_pointer
    assert _read(resolved.resolve_handle(big)) == b"x" * 5000


def test_errors_are_the_contracts_types(flink_storage, root: Path):
    from flinktarget.gateway import JavaError

    access = flink_storage.create_checkpoint_storage(JobID.generate())
    with pytest.raises(ValueError, match="IllegalArgumentException") as negative:
        access.initialize_location_for_checkpoint(-1)
    assert isinstance(negative.value, JavaError)
    assert negative.value.java_class == "java.lang.IllegalArgumentException"
    with pytest.raises(FileNotFoundError, match="FileNotFoundException"):
        flink_storage.resolve_checkpoint((root / "nothing-here").as_uri())
    with pytest.raises(TypeError):
        flink_storage.create_checkpoint_storage(None)
    with pytest.raises((TypeError, ValueError), match="Java long"):
        access.initialize_location_for_checkpoint("1")
    with pytest.raises(ValueError, match="not UTF-8"):
        flink_storage.resolve_checkpoint("\udcff")


def test_flink_checks_its_own_configuration(flink_ready, root: Path):
    from flinktarget import target_unchecked

    with pytest.raises(ValueError, match="threshold for file state size"):
        target_unchecked.make_storage(
            checkpoint_dir=root.as_uri(), savepoint_dir=None, options={"inline_threshold": 2 << 20}
        )


def test_create_subdir_reaches_flinks_configuration(flink_ready, root: Path):
    """create_subdir=False is Flink's execution.checkpointing.create-subdir: no job directory;
    a value that is no Java boolean is refused before the JVM sees it."""
    from flinktarget import target_unchecked

    flat = target_unchecked.make_storage(
        checkpoint_dir=root.as_uri(), savepoint_dir=None, options={"create_subdir": False}
    )
    access = flat.create_checkpoint_storage(JobID.generate())
    location = access.initialize_location_for_checkpoint(3)
    assert location.location_reference.is_default
    completed = _finalize(location, b"flat")
    assert completed.external_pointer.rstrip("/").endswith(f"{root.name}/chk-3")
    with pytest.raises(TypeError, match="Java boolean"):
        target_unchecked.make_storage(
            checkpoint_dir=root.as_uri(), savepoint_dir=None, options={"create_subdir": "no"}
        )


def _finalize(location, data: bytes):  # type: ignore[no-untyped-def]
    stream = location.create_metadata_output_stream()
    stream.write(data)
    return stream.close_and_finalize_checkpoint()


def test_storage_pickles_to_its_configuration(flink_storage):
    data = pickle.dumps(flink_storage)
    assert len(data) < 1024
    assert b"py4j" not in data
    copy = pickle.loads(data)
    assert copy.config == flink_storage.config


def test_savepoint_with_target_moves_and_restores(flink_storage, root: Path):
    access = flink_storage.create_checkpoint_storage(JobID.generate())
    assert access.has_default_savepoint_location()
    target = root / "elsewhere"
    location = access.initialize_location_for_savepoint(3, target.as_uri())
    reference = location.location_reference
    assert not reference.is_default
    factory = access.resolve_checkpoint_storage_location(3, pickle.loads(pickle.dumps(reference)))
    handle = _write(factory, b"p" * 4000)
    with location.create_metadata_output_stream() as meta:
        meta.write(b"sp")
        completed = meta.close_and_finalize_checkpoint()
    (directory,) = target.iterdir()
    assert directory.name.startswith("savepoint-")
    moved = root / "moved" / directory.name
    moved.parent.mkdir()
    shutil.move(str(directory), moved)
    restored = flink_storage.resolve_checkpoint(moved.as_uri())
    assert _read(restored.metadata_handle) == b"sp"
    assert _read(restored.resolve_handle(handle)) == b"p" * 4000
    assert completed.external_pointer != restored.external_pointer


def test_task_owned_state_and_no_duplication(flink_storage):
    access = flink_storage.create_checkpoint_storage(JobID.generate())
    access.initialize_base_locations_for_checkpoint()
    stream = access.create_task_owned_state_stream()
    stream.write(b"w" * 1000)
    handle = stream.close_and_get_handle()
    assert "/taskowned/" in handle.file_path
    toolset = access.create_task_owned_checkpoint_state_toolset()
    assert toolset.can_fast_duplicate(handle) is False  # local FS: NotDuplicatingToolset
    with pytest.raises(OSError, match="does not support duplication"):
        toolset.duplicate([handle])
    handle.discard_state()
    assert not Path(handle.file_path.removeprefix("file:")).exists()


def test_completed_location_pickles_through_java_serialization(flink_storage):
    access = flink_storage.create_checkpoint_storage(JobID.generate())
    access.initialize_base_locations_for_checkpoint()
    location = access.initialize_location_for_checkpoint(1)
    with location.create_metadata_output_stream() as meta:
        meta.write(b"m")
        completed = meta.close_and_finalize_checkpoint()
    copy = pickle.loads(pickle.dumps(completed))
    assert copy.external_pointer == completed.external_pointer
    assert _read(copy.metadata_handle) == b"m"


def test_objects_work_in_a_fresh_process(flink_storage, tmp_path: Path):
    """The receiving process builds its own JVM and Java objects from the pickles."""
    access = flink_storage.create_checkpoint_storage(JobID.generate())
    access.initialize_base_locations_for_checkpoint()
    factory = access.resolve_checkpoint_storage_location(
        2, access.initialize_location_for_checkpoint(2).location_reference
    )
    handle = _write(factory, b"f" * 500)
    blob = tmp_path / "objects.pickle"
    default = CheckpointStorageLocationReference.default()
    blob.write_bytes(pickle.dumps((flink_storage, handle, default)))
    code = textwrap.dedent(
        f"""
        import pickle, sys
        from ckptstore.api import JobID, CheckpointedStateScope
        storage, handle, ref = pickle.loads(open({str(blob)!r}, "rb").read())
        assert handle.open_input_stream().read() == b"f" * 500
        access = storage.create_checkpoint_storage(JobID.generate())
        location = access.initialize_location_for_checkpoint(1)
        stream = location.create_checkpoint_state_output_stream(CheckpointedStateScope.SHARED)
        stream.write(b"from the child")
        sys.stdout.buffer.write(pickle.dumps(stream.close_and_get_handle()))
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    assert _read(pickle.loads(done.stdout)) == b"from the child"


def test_jobmanager_limit_and_inline_state(jobmanager_storage):
    access = jobmanager_storage.create_checkpoint_storage(JobID.generate())
    location = access.initialize_location_for_checkpoint(1)
    factory = access.resolve_checkpoint_storage_location(1, location.location_reference)
    handle = _write(factory, b"a" * 1000)  # exactly the limit passes (MEM5)
    assert isinstance(handle, ByteStreamStateHandle)
    assert _read(handle) == b"a" * 1000
    with pytest.raises(OSError, match="Size of the state is larger than the maximum"):
        _write(factory, b"a" * 1001)
    with location.create_metadata_output_stream() as meta:
        meta.write(b"jm")
        completed = meta.close_and_finalize_checkpoint()
    assert completed.external_pointer.endswith("/chk-1")
    assert access.supports_highly_available_storage()


def test_one_jvm_per_process_stopped_on_request(flink_ready):
    from flinktarget import gateway

    first = gateway.gateway()
    assert gateway.gateway() is first
    process = gateway._current.process  # type: ignore[union-attr]
    gateway.stop()
    assert process.poll() is not None  # the JVM ended
    assert gateway.jvm().java.lang.Math.max(2, 3) == 3  # a new one starts on demand


def test_objects_of_a_stopped_gateway_fail_quietly(flink_ready, caplog):
    """After stop(), a Java object left in Python neither logs from its finalizer nor hangs."""
    import gc

    from flinktarget import gateway

    stale = gateway.jvm().java.util.ArrayList()
    gateway.stop()
    with pytest.raises(OSError, match="gateway"), gateway.java_errors("use a stale object"):
        stale.size()
    del stale
    gc.collect()
    assert [r for r in caplog.records if r.name.startswith("py4j")] == []


def test_flinks_answers_bypass_the_hook_of_pyspark(flink_storage, root: Path, monkeypatch):
    """In a process that made a SparkSession, PySpark's hook on py4j looks every Java exception
    up in Spark's JVM: without Spark running, Flink's exceptions and the end of py4j's
    iterators became AssertionErrors."""
    import py4j.java_gateway
    from pyspark.errors.exceptions.captured import install_exception_handler

    from flinktarget import gateway

    monkeypatch.setattr(py4j.java_gateway, "get_return_value", py4j.java_gateway.get_return_value)
    install_exception_handler()  # what SparkSession() does
    with pytest.raises(FileNotFoundError, match="FileNotFoundException"):
        flink_storage.resolve_checkpoint((root / "nothing-here").as_uri())
    listed = gateway.jvm().java.util.ArrayList()
    listed.add(7)
    install_exception_handler()  # a second SparkSession puts the hook back
    with gateway.java_errors("iterate"):
        assert list(listed) == [7]
