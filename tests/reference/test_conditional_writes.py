"""Servers that ignore conditional writes (issue 9, case 4; MD-13), on moto and on s3rver.

s3rver 3.7 (a real, independent S3 server in Node.js) ignores ``If-None-Match: *``: without
care a second ``_metadata`` for the same checkpoint silently replaces the first (the suite's
MD-3), and racing finalizations all return while all but one lose their bytes (MD-13). The
storage probes once per process per endpoint and bucket, during the coordinator's setup. Where
the server ignores the condition it refuses every finalization (an ``OSError`` that names
conditional writes and the option), unless the storage options set
``allow_unconditional_metadata``: then claim-then-write (a claim object, one listing, the
PUT, the claim's delete), of which racing finalizations let at most one write. On servers
that honour it, the per-checkpoint path keeps its single PutObject. s3rver runs only where
Node.js is (it is installed with npm on first use); otherwise those cases skip with the
backend's reason.

Also here: the same dispose costs the same requests on moto and s3rver (issue 9, case 3).
"""

from __future__ import annotations

import errno
import logging
import os
import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

import pytest

from ckptstore import FileSystemCheckpointStorage
from ckptstore.api import CheckpointedStateScope, JobID
from ckptstore.errors import ConditionalWritesUnsupportedError, MetadataExistsError
from ckptstore.paths import parse_storage_path
from ckptstore.stores import s3 as s3_module
from tests.reference._moto import PROBE_KEY, S3Root, new_root, reset_process_state

pytest.importorskip("s3fs")
pytest.importorskip("moto.server")

EXCLUSIVE = CheckpointedStateScope.EXCLUSIVE
SHARED = CheckpointedStateScope.SHARED
HONOURED = "honoured"
IGNORED = "ignored"
REFUSED = "ignored: finalization refused"
CLAIMED = "ignored: claim-then-write"
#: the requests of one claim-then-write publish, and of one that finds a rival
CLAIM_THEN_WRITE = ["PutObject", "ListObjectsV2", "PutObject", "DeleteObject"]
CLAIM_REFUSED = ["PutObject", "ListObjectsV2", "DeleteObject"]


@pytest.fixture(scope="module")
def s3rver_backend() -> Iterator[Any]:
    """s3rver on 127.0.0.1 behind the counting proxy, for this module; always stopped."""
    from ckptconform.backends.base import BackendUnavailableError
    from ckptconform.backends.s3rver import S3rverBackend

    backend = S3rverBackend()
    reason = backend.availability()
    if reason is not None:
        pytest.skip(reason)
    try:
        backend.start()
    except BackendUnavailableError as exc:
        pytest.skip(str(exc))
    try:
        yield backend
    finally:
        backend.stop()


@pytest.fixture
def s3rver(s3rver_backend: Any) -> Iterator[S3Root]:
    """A fresh root on s3rver and a fresh process state (no probe answer)."""
    root = new_root(s3rver_backend)
    reset_process_state()
    try:
        yield root
    finally:
        reset_process_state()
        root.cleanup()


def _storage(root: S3Root, allow: bool | None = None) -> FileSystemCheckpointStorage:
    """A storage below ``root``; ``allow``: its ``allow_unconditional_metadata``."""
    options = dict(root.storage_options)
    if allow is not None:
        options["allow_unconditional_metadata"] = allow
    return FileSystemCheckpointStorage(root.sub("checkpoints"), storage_options=options)


def _finalize(location: Any, data: bytes) -> Any:
    stream = location.create_metadata_output_stream()
    try:
        stream.write(data)
        return stream.close_and_finalize_checkpoint()
    finally:
        stream.close()


def _probes(root: S3Root) -> list[str]:
    """Keys of conditional-write probe objects below the root."""
    keys = root.keys()
    return [k for k in keys if PROBE_KEY in "/" + k.rsplit("/", 1)[-1]]


def _read(handle: Any) -> bytes:
    with handle.open_input_stream() as stream:
        return bytes(stream.read())


def _setup(root: S3Root, allow: bool | None = None) -> tuple[Any, Any]:
    """A job's access after its setup, and the setup's recording."""
    access = _storage(root, allow).create_checkpoint_storage(JobID.generate())
    assert access.conditional_writes == "unknown: not probed yet"
    with root.record() as rec:
        access.initialize_base_locations_for_checkpoint()
    return access, rec


def test_moto_honours_conditional_writes(s3: S3Root) -> None:
    """moto refuses the probe's second create (412): mode "honoured", the probe is gone, and
    a second _metadata is refused by the conditional PUT itself."""
    access, setup = _setup(s3)
    assert access.conditional_writes == HONOURED
    assert [(r.operation, r.status) for r in setup.requests] == [
        ("PutObject", 200),
        ("PutObject", 412),
        ("DeleteObject", 204),
    ], setup.summary()
    location = access.initialize_location_for_checkpoint(1)
    with s3.record() as rec:
        first = _finalize(location, b"first")
    assert rec.operations() == {"PutObject": 1}, rec.summary()
    with pytest.raises(MetadataExistsError):
        _finalize(access.initialize_location_for_checkpoint(1), b"second, longer")
    assert _read(first.metadata_handle) == b"first"
    assert not _probes(s3)


def test_s3rver_refuses_finalization_without_the_option(
    s3rver: S3Root, caplog: pytest.LogCaptureFixture
) -> None:
    """MD-13 on s3rver: the probe's second create succeeds (the server ignores the
    condition), a warning names the limitation and the option once, and without the option
    every finalization raises ConditionalWritesUnsupportedError (an OSError naming conditional
    writes and the option) before a single request: nothing is written."""
    with caplog.at_level(logging.WARNING, logger="ckptstore.stores.s3"):
        access, setup = _setup(s3rver)
        _storage(s3rver).create_checkpoint_storage(JobID.generate())
        access.initialize_base_locations_for_checkpoint()  # answered from the cache
    assert access.conditional_writes == REFUSED
    assert [(r.operation, r.status) for r in setup.requests] == [
        ("PutObject", 200),
        ("PutObject", 200),
        ("DeleteObject", 204),
    ], setup.summary()
    warnings = [r for r in caplog.records if "ignores conditional writes" in r.getMessage()]
    assert len(warnings) == 1, caplog.text
    assert s3rver.backend.endpoint in warnings[0].getMessage()
    assert "allow_unconditional_metadata" in warnings[0].getMessage()
    location = access.initialize_location_for_checkpoint(5)
    with s3rver.record() as rec, pytest.raises(ConditionalWritesUnsupportedError) as refused:
        _finalize(location, b"first metadata")
    assert len(rec) == 0, rec.summary()
    assert isinstance(refused.value, OSError)
    assert refused.value.errno == errno.EOPNOTSUPP
    for named in ("conditional writes", "If-None-Match", "allow_unconditional_metadata=True"):
        assert named in str(refused.value)
    assert s3rver.keys() == []


def test_s3rver_claims_then_writes_with_the_option(s3rver: S3Root) -> None:
    """MD-3 and MD-13 on s3rver with allow_unconditional_metadata: every publish is a claim,
    one listing of the keys that begin with _metadata's own, the PUT and the claim's delete; a
    second _metadata (same location or a new one) finds the first in the listing, writes
    nothing and deletes its claim; no claim is left."""
    access, _ = _setup(s3rver, allow=True)
    assert access.conditional_writes == CLAIMED
    location = access.initialize_location_for_checkpoint(5)
    with s3rver.record() as rec:
        first = _finalize(location, b"first metadata")
    assert [r.operation for r in rec.requests] == CLAIM_THEN_WRITE, rec.summary()
    listing = rec.filter(operation="ListObjectsV2")[0]
    assert s3rver.key_of(first.metadata_handle.file_path) in unquote(listing.query)
    for again in (location, access.initialize_location_for_checkpoint(5)):
        with s3rver.record() as rec, pytest.raises(MetadataExistsError):
            _finalize(again, b"second metadata, longer than the first")
        assert [r.operation for r in rec.requests] == CLAIM_REFUSED, rec.summary()
    resolved = _storage(s3rver).resolve_checkpoint(first.external_pointer)
    assert _read(resolved.metadata_handle) == b"first metadata"
    keys = s3rver.keys()
    assert [k.rsplit("/", 1)[-1] for k in keys] == ["_metadata"]


def test_racing_finalizations_on_s3rver_let_at_most_one_write(s3rver: S3Root) -> None:
    """MD-13: eight finalizations of one checkpoint started together, round after round, on
    s3rver with the option: at most one returns, the others raise MetadataExistsError, the
    _metadata holds the bytes of the one that returned, and no claim is left."""
    access, _ = _setup(s3rver, allow=True)
    for round_ in range(4):
        outcomes = _race(access, 10 + round_, racers=8)
        won = [i for i, result in outcomes.items() if not isinstance(result, BaseException)]
        assert len(won) <= 1, outcomes
        lost = [result for i, result in outcomes.items() if i not in won]
        assert all(isinstance(result, MetadataExistsError) for result in lost), outcomes
        if won:
            assert _read(outcomes[won[0]].metadata_handle) == _racer_bytes(won[0])
    keys = s3rver.keys()
    assert not [k for k in keys if k.endswith(".inprogress")]


def _racer_bytes(racer: int) -> bytes:
    return b"metadata of racer %d;" % racer * 16


def _race(access: Any, checkpoint_id: int, racers: int) -> dict[int, Any]:
    """``racers`` threads finalize ``checkpoint_id`` at once, each through its own location:
    racer -> the completed location or the exception raised."""
    streams = []
    for racer in range(racers):
        location = access.initialize_location_for_checkpoint(checkpoint_id)
        stream = location.create_metadata_output_stream()
        stream.write(_racer_bytes(racer))
        streams.append(stream)
    start = threading.Barrier(racers)
    outcomes: dict[int, Any] = {}

    def finalize(racer: int) -> None:
        start.wait()
        try:
            outcomes[racer] = streams[racer].close_and_finalize_checkpoint()
        except Exception as exc:
            outcomes[racer] = exc

    threads = [threading.Thread(target=finalize, args=(i,)) for i in range(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return outcomes


def test_claim_then_write_on_moto(s3: S3Root, monkeypatch: pytest.MonkeyPatch) -> None:
    """Claim-then-write without s3rver: a server taken for one that ignores conditions, with
    the option: four requests per publish; a claim of another finalization already there makes
    this one give way (MetadataExistsError naming it) without writing _metadata, deleting only
    its own claim."""
    monkeypatch.setattr(s3_module, "_probe", lambda fs, directory: IGNORED)
    access = _storage(s3, allow=True).create_checkpoint_storage(JobID.generate())
    with s3.record() as rec:
        access.initialize_base_locations_for_checkpoint()
    assert len(rec) == 0
    assert access.conditional_writes == CLAIMED
    with s3.record() as rec:
        first = _finalize(access.initialize_location_for_checkpoint(2), b"first")
    assert [r.operation for r in rec.requests] == CLAIM_THEN_WRITE, rec.summary()
    assert _read(first.metadata_handle) == b"first"
    rival = first.external_pointer.replace("/chk-2", "/chk-3") + "/_metadata." + "a" * 32
    s3.raw.pipe_file(parse_storage_path(rival + ".inprogress").path, b"")
    with s3.record() as rec, pytest.raises(MetadataExistsError, match="another finalization"):
        _finalize(access.initialize_location_for_checkpoint(3), b"second")
    assert [r.operation for r in rec.requests] == CLAIM_REFUSED, rec.summary()
    keys = s3.keys()
    left = [k.rsplit("/", 2)[-2:] for k in keys if "/chk-3/" in k]
    assert left == [["chk-3", "_metadata." + "a" * 32 + ".inprogress"]]


def test_a_claim_left_by_a_crash_is_a_leftover(s3: S3Root, monkeypatch: pytest.MonkeyPatch) -> None:
    """A claim whose delete never came (a coordinator that died) is found and removed by the
    leftover cleaner as a metadata staging file."""
    monkeypatch.setattr(s3_module, "_probe", lambda fs, directory: IGNORED)
    monkeypatch.setattr(s3_module, "_drop_claim", lambda fs, claim: None)
    storage = _storage(s3, allow=True)
    job = JobID.generate()
    access = storage.create_checkpoint_storage(job)
    _finalize(access.initialize_location_for_checkpoint(4), b"metadata")
    keys = s3.keys()
    claims = [k for k in keys if k.endswith(".inprogress")]
    assert len(claims) == 1
    found = storage.find_leftovers(job, older_than=0)
    assert [(i.kind, s3.key_of(i.url)) for i in found] == [("metadata-staging", claims[0])]
    assert storage.clean_leftovers(job, older_than=0) == found
    keys = s3.keys()
    assert [k.rsplit("/", 1)[-1] for k in keys] == ["_metadata"]


def test_a_probe_that_cannot_be_deleted_is_a_leftover(
    s3: S3Root, caplog: pytest.LogCaptureFixture
) -> None:
    """The probe's delete is refused: the setup still succeeds (the answer is known), a
    warning says so, and the leftover cleaner finds and removes the probe object."""
    storage = _storage(s3)
    job = JobID.generate()
    access = storage.create_checkpoint_storage(job)
    s3.ledger.inject(
        "DeleteObject", status=403, code="AccessDenied", times=1, key_contains=PROBE_KEY
    )
    try:
        with caplog.at_level(logging.WARNING, logger="ckptstore.stores.s3"):
            access.initialize_base_locations_for_checkpoint()
    finally:
        s3.ledger.clear_faults()
    assert access.conditional_writes == HONOURED
    assert "conditional-write probe" in caplog.text
    probes = _probes(s3)
    assert len(probes) == 1
    found = storage.find_leftovers(job, older_than=0)
    assert [(i.kind, s3.key_of(i.url)) for i in found] == [("write-probe", probes[0])]
    assert storage.find_leftovers(job) == []  # younger than the grace period: left alone
    assert storage.clean_leftovers(job, older_than=0) == found
    assert s3.keys() == []


def _dispose_workload(root: S3Root) -> list[Counter[str]]:
    """A checkpoint with three state files, disposed; an empty location, disposed (with the
    option, so that s3rver finalizes too)."""
    access = _storage(root, allow=True).create_checkpoint_storage(JobID.generate())
    access.initialize_base_locations_for_checkpoint()
    location = access.initialize_location_for_checkpoint(7)
    for scope in (EXCLUSIVE, EXCLUSIVE, EXCLUSIVE, SHARED):
        stream = location.create_checkpoint_state_output_stream(scope)
        stream.write(os.urandom(30000))
        stream.close_and_get_handle()
    completed = _finalize(location, b"metadata")
    counts = []
    for dispose in (
        completed.dispose_storage_location,
        access.initialize_location_for_checkpoint(8).dispose_on_failure,
    ):
        with root.record() as rec:
            dispose()
        retried = rec.retries()
        assert all(r.operation == "DeleteObjects" for r in retried), (
            rec.summary()
        )  # see the docstring of the test below
        counts.append(Counter(r.operation for r in rec.requests if r not in retried))
    keys = root.keys()
    assert [k for k in keys if "/chk-7/" in k] == []
    return counts


def test_dispose_costs_the_same_on_moto_and_s3rver(s3: S3Root, s3rver: S3Root) -> None:
    """The reference's own delete: ListMultipartUploads (s3rver answers 501: tolerated), one
    ListObjectsV2, one DeleteObjects, on both servers; an empty directory: the two listings.

    Found on the way: s3rver 3.7.1 answers the first DeleteObjects of several keys in one
    directory with 500 (its store deletes the keys in parallel and races on removing the
    emptied directory: ENOENT from readdirSync), and botocore retries it. That retried
    request was the "extra DeleteObjects" s3fs's ``rm`` seemed to send; it is the server's,
    so retries of server errors are left out of the comparison (and must be DeleteObjects).
    """
    on_moto = _dispose_workload(s3)
    on_s3rver = _dispose_workload(s3rver)
    assert on_moto == on_s3rver
    assert on_moto == [
        Counter({"ListMultipartUploads": 1, "ListObjectsV2": 1, "DeleteObjects": 1}),
        Counter({"ListMultipartUploads": 1, "ListObjectsV2": 1}),
    ]
