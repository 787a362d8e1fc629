"""Handles read in another process find the right store, or fail fast and clearly (issue 8).

A checkpoint (two file-backed state handles and ``_metadata``) is written through a storage on
the moto server. A fresh Python process then reads it back from the pickled completed
location and handles, the way a Spark executor or a restarted coordinator would, with:

(a) a storage unpickled for the same endpoint but other credentials: rule 1 (same store), and
    the requests are signed with the child's key;
(b) a storage unpickled for another endpoint URL to the same data (a ``CountingProxy`` in
    front of moto): rule 2 (same scheme and bucket), and the proxy's ledger sees the GETs;
(c) no storage, but ``FSSPEC_S3_*`` in the environment: rule 3 (fsspec's configuration);
(d) a storage unpickled for an endpoint nobody listens on: every read and discard raises a
    ``CheckpointIOError`` within ``UNREACHABLE_BOUND`` seconds, naming that endpoint and the
    path and no secret, and nothing reaches the store the handles were written to.

In one process, two storages with the same bucket on two endpoints keep their handles apart
(rule 1 beats rule 2), whatever the order of registration. Every server a test starts is
stopped by the test; everything binds 127.0.0.1 only.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ckptconform.servers.ledger import RAW_USER_AGENT
from ckptconform.servers.proxy import CountingProxy
from ckptstore import FileSystemCheckpointStorage
from ckptstore.api import CheckpointedStateScope, CheckpointStorageLocationReference, JobID
from ckptstore.errors import CheckpointIOError, CheckpointNotFoundError
from ckptstore.filesystem.handles import FileStateHandle, RelativeFileStateHandle
from ckptstore.stores import registry
from tests.reference import _handles_child
from tests.reference._moto import DIRECTORY_PROBES, S3Root, reset_filesystem_caches

pytest.importorskip("s3fs")
pytest.importorskip("moto.server")

CHILD = Path(_handles_child.__file__)
WRITER_KEY, WRITER_SECRET = "xp-writer-key", "xp-writer-S3cr3t-41a7"
CHILD_KEY, CHILD_SECRET = "xp-child-key", "xp-child-S3cr3t-93bd"
#: A read or discard against an unreachable endpoint fails within this many seconds
#: (measured: 1-3 s with the bounded S3 defaults; the bound leaves room for a slow CI).
UNREACHABLE_BOUND = 8.0
FILE_SIZE = 30000  # above the default inline threshold: one file per stream


@pytest.fixture(autouse=True)
def isolated_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Registrations made by a test (a proxy endpoint, a dead one) end with the test."""
    for name in ("_REGISTRATIONS", "_BY_STORE", "_BY_STORE_AUTHORITY", "_BY_AUTHORITY"):
        monkeypatch.setattr(registry, name, dict(getattr(registry, name)))


@dataclass
class Written:
    completed: Any
    handles: list[FileStateHandle]
    data: list[bytes]
    metadata: bytes


def make_storage(s3: S3Root, **options: Any) -> FileSystemCheckpointStorage:
    return FileSystemCheckpointStorage(
        s3.sub("checkpoints"), savepoint_path=s3.sub("savepoints"), storage_options=options
    )


def writer_storage(s3: S3Root) -> FileSystemCheckpointStorage:
    return make_storage(s3, **{**s3.storage_options, "key": WRITER_KEY, "secret": WRITER_SECRET})


def write_checkpoint(storage: FileSystemCheckpointStorage, checkpoint_id: int = 7) -> Written:
    """An exclusive (relative) and a shared (absolute) file handle, and ``_metadata``."""
    access = storage.create_checkpoint_storage(JobID.generate())
    location = access.initialize_location_for_checkpoint(checkpoint_id)
    worker = access.resolve_checkpoint_storage_location(
        checkpoint_id, CheckpointStorageLocationReference.default()
    )
    handles: list[FileStateHandle] = []
    data: list[bytes] = []
    for scope in (CheckpointedStateScope.EXCLUSIVE, CheckpointedStateScope.SHARED):
        payload = os.urandom(FILE_SIZE)
        stream = worker.create_checkpoint_state_output_stream(scope)
        stream.write(payload)
        handle = stream.close_and_get_handle()
        assert isinstance(handle, FileStateHandle), handle
        handles.append(handle)
        data.append(payload)
    assert isinstance(handles[0], RelativeFileStateHandle)
    metadata = pickle.dumps(handles)
    with location.create_metadata_output_stream() as out:
        out.write(metadata)
        completed = out.close_and_finalize_checkpoint()
    return Written(completed, handles, data, metadata)


def child_env(tmp: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """No AWS or fsspec settings but ``extra``: only the pickles (or ``extra``) configure it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "FSSPEC_"))}
    env["AWS_CONFIG_FILE"] = os.devnull
    env["AWS_SHARED_CREDENTIALS_FILE"] = os.devnull
    empty = tmp / "fsspec-config"
    empty.mkdir(exist_ok=True)
    env["FSSPEC_CONFIG_DIR"] = str(empty)
    env.update(extra or {})
    return env


def run_child(
    tmp: Path,
    written: Written,
    storage: FileSystemCheckpointStorage | None = None,
    *,
    env: dict[str, str] | None = None,
    discard: bool = False,
) -> dict[str, Any]:
    payload = {
        "completed": written.completed,
        "handles": written.handles,
        "discard": written.handles if discard else [],
    }
    payload_file = tmp / "payload.bin"
    blob = pickle.dumps(payload)
    for secret in (WRITER_KEY, WRITER_SECRET):
        assert secret.encode() not in blob  # handles and locations carry no credentials
    payload_file.write_bytes(blob)
    args = [sys.executable, str(CHILD), str(payload_file)]
    if storage is not None:
        storage_file = tmp / "storage.bin"
        storage_file.write_bytes(pickle.dumps(storage))
        args.append(str(storage_file))
    done = subprocess.run(
        args,
        capture_output=True,
        text=True,
        timeout=120,
        env=child_env(tmp, env),
        cwd=tmp,
        check=False,
    )
    assert done.returncode == 0, f"child failed:\n{done.stdout}\n{done.stderr}"
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def assert_read_back(result: dict[str, Any], written: Written) -> None:
    import hashlib

    assert result["metadata"].get("sha256") == hashlib.sha256(written.metadata).hexdigest(), result[
        "metadata"
    ]
    assert [r.get("sha256") for r in result["reads"]] == [
        hashlib.sha256(d).hexdigest() for d in written.data
    ], result["reads"]


@contextlib.contextmanager
def signing_keys(backend: Any) -> Iterator[list[str]]:
    """The access key ids that signed the (non-raw) requests reaching moto in the block."""
    ledger = backend.ledger
    inner = ledger.app
    keys: list[str] = []

    def app(environ: dict[str, Any], start_response: Any) -> Any:
        found = re.search(r"Credential=([^/,\s]+)/", environ.get("HTTP_AUTHORIZATION", ""))
        if found and RAW_USER_AGENT not in environ.get("HTTP_USER_AGENT", ""):
            keys.append(found.group(1))
        return inner(environ, start_response)

    ledger.app = app
    try:
        yield keys
    finally:
        ledger.app = inner


def unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --------------------------------------------------------------------------- other processes


def test_a_same_endpoint_other_credentials(moto: Any, s3: S3Root, tmp_path: Path) -> None:
    """Rule 1: the child's storage for the same store is used, with the child's credentials."""
    written = write_checkpoint(writer_storage(s3))
    child_storage = make_storage(
        s3, **{**s3.storage_options, "key": CHILD_KEY, "secret": CHILD_SECRET}
    )
    with signing_keys(moto) as keys, s3.ledger.record() as rec:
        result = run_child(tmp_path, written, child_storage)
    assert_read_back(result, written)
    assert rec.operations() == {"GetObject": 3}, rec.summary()  # one GET per handle, no HEAD
    assert set(keys) == {CHILD_KEY}, keys


def test_b_other_endpoint_to_the_same_data(moto: Any, s3: S3Root, tmp_path: Path) -> None:
    """Rule 2: the child's storage reaches the bucket through a proxy; the handles use it."""
    written = write_checkpoint(writer_storage(s3))
    with CountingProxy(moto.endpoint) as proxy:
        assert proxy.url is not None
        child_storage = make_storage(s3, **{**s3.storage_options, "endpoint_url": proxy.url})
        with proxy.ledger.record() as via_proxy, s3.ledger.record() as at_server:
            result = run_child(tmp_path, written, child_storage)
    assert_read_back(result, written)
    assert via_proxy.operations() == {"GetObject": 3}, via_proxy.summary()
    assert at_server.operations() == {"GetObject": 3}, at_server.summary()


def test_c_no_storage_but_fsspec_environment(moto: Any, s3: S3Root, tmp_path: Path) -> None:
    """Rule 3: no storage in the child; FSSPEC_S3_* configure the scheme as for any URL."""
    written = write_checkpoint(writer_storage(s3))
    env = {
        "FSSPEC_S3_ENDPOINT_URL": moto.endpoint,
        "FSSPEC_S3_KEY": "xp-env-key",
        "FSSPEC_S3_SECRET": "xp-env-S3cr3t",
    }
    with signing_keys(moto) as keys, s3.ledger.record() as rec:
        result = run_child(tmp_path, written, env=env)
    assert_read_back(result, written)
    assert rec.operations() == {"GetObject": 3}, rec.summary()
    assert set(keys) == {"xp-env-key"}, keys


def test_d_unreachable_endpoint_fails_fast_and_names_it(
    moto: Any, s3: S3Root, tmp_path: Path
) -> None:
    """An unreachable endpoint: CheckpointIOError (an OSError) in seconds, endpoint named,
    no secret shown; nothing goes to the store the handles were written to."""
    written = write_checkpoint(writer_storage(s3))
    endpoint = f"http://127.0.0.1:{unused_port()}"
    dead = make_storage(s3, endpoint_url=endpoint, key=CHILD_KEY, secret=CHILD_SECRET)
    with s3.ledger.record() as rec:
        result = run_child(tmp_path, written, dead, discard=True)
    assert len(rec) == 0, rec.summary()
    outcomes = [
        ("metadata", result["metadata"], written.completed.metadata_handle.file_path),
        *(("read", r, h.file_path) for r, h in zip(result["reads"], written.handles, strict=True)),
        *(
            ("discard", r, h.file_path)
            for r, h in zip(result["discards"], written.handles, strict=True)
        ),
    ]
    assert len(outcomes) == 5
    for what, outcome, path in outcomes:
        assert "CheckpointIOError" in outcome.get("mro", []), (what, outcome)
        assert "OSError" in outcome["mro"], (what, outcome)
        assert outcome["seconds"] < UNREACHABLE_BOUND, (what, outcome)
        message = outcome["message"]
        assert endpoint in message, (what, message)
        assert path in message, (what, message)
        for secret in (CHILD_KEY, CHILD_SECRET, WRITER_KEY, WRITER_SECRET):
            assert secret not in message, (what, message)
    for handle in written.handles:
        assert s3.exists(handle.file_path)  # the failed discards removed nothing


# --------------------------------------------------------------------------- one process


def test_two_stores_with_one_bucket_keep_their_handles_apart(moto: Any, s3: S3Root) -> None:
    """Rule 1 beats rule 2: a handle reads through the store it was written to, even when a
    storage for the same bucket on another endpoint was registered later (either order)."""
    direct = make_storage(s3, **s3.storage_options)
    with CountingProxy(moto.endpoint) as proxy:
        assert proxy.url is not None
        via = make_storage(s3, **{**s3.storage_options, "endpoint_url": proxy.url})
        a = write_checkpoint(direct, 1).handles[1]
        b = write_checkpoint(via, 2).handles[1]
        assert a.fs_token != b.fs_token
        assert "127.0.0.1" not in str(a.fs_token)
        for last in (direct, via, direct):
            pickle.loads(pickle.dumps(last))  # unpickling registers: `last` is the most recent
            for handle, through_proxy in ((a, 0), (b, 1)):
                copy = pickle.loads(pickle.dumps(handle))
                with (
                    proxy.ledger.record() as p,
                    s3.ledger.record() as m,
                    copy.open_input_stream() as stream,
                ):
                    assert len(stream.read()) == FILE_SIZE
                assert m.operations() == {"GetObject": 1}, m.summary()
                assert p.count(operation="GetObject") == through_proxy, p.summary()
                assert p.count(operation=DIRECTORY_PROBES) == 0, p.summary()


def test_missing_object_raises_not_found_naming_endpoint_and_path(s3: S3Root) -> None:
    """A handle whose object is gone: CheckpointNotFoundError (a FileNotFoundError)."""
    handle = write_checkpoint(writer_storage(s3)).handles[1]
    handle.discard_state()
    with pytest.raises(CheckpointNotFoundError) as caught, handle.open_input_stream() as stream:
        stream.read()
    assert isinstance(caught.value, FileNotFoundError)
    message = str(caught.value)
    assert handle.file_path in message
    assert s3.storage_options["endpoint_url"] in message
    assert WRITER_SECRET not in message


def test_resolve_checkpoint_on_unreachable_endpoint_fails_fast(s3: S3Root) -> None:
    """resolve_checkpoint goes through the same mapping: OSError in seconds, endpoint named."""
    endpoint = f"http://127.0.0.1:{unused_port()}"
    storage = make_storage(s3, endpoint_url=endpoint, key=CHILD_KEY, secret=CHILD_SECRET)
    reset_filesystem_caches()
    start = time.monotonic()
    with pytest.raises(CheckpointIOError) as caught:
        storage.resolve_checkpoint(s3.sub("checkpoints", "some-job", "chk-1"))
    assert time.monotonic() - start < UNREACHABLE_BOUND
    message = str(caught.value)
    assert endpoint in message
    assert s3.sub("checkpoints", "some-job", "chk-1") in message
    assert CHILD_SECRET not in message
    assert CHILD_KEY not in message
