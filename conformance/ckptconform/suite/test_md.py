"""MD: the metadata stream and finalization (Flink MD1-MD7, T-MOS1-3, T-BASE4; pain point P7).

"Visible" means visible on the backend through raw access, and resolvable through a fresh
storage. The metadata's final path is taken from the completed location after finalization
(``metadata_handle.file_path``), so these checks need no knowledge of the layout.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from ckptconform.sandbox import UNCONDITIONAL_METADATA
from ckptconform.suite._driver import (
    EXCLUSIVE,
    JobDriver,
    driver_with,
    expect_error,
    fail_message,
    file_options,
    file_path,
    files_below,
    join,
    open_uploads_below,
    parent,
    payload,
    read_handle,
    require,
    require_conditional_writes,
    routed_options,
    second_route,
    tagged,
    unconditional_options,
    unconditional_route,
    under_file_size_limit,
    write_chunks,
)
from ckptstore.api import NON_ADDRESSABLE_POINTER, ByteStreamStateHandle

CLOSED_ERRORS = (OSError, ValueError)


@pytest.mark.clause("MD-1")
@pytest.mark.parametrize("size", [10, 70_000])
def test_metadata_never_half_visible(sandbox, target, size):
    """MD-1: before finalization nothing exists at the metadata's final path."""
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    location = drv.location(1)
    data = payload(size)
    stream = location.create_metadata_output_stream()
    stream.write(data[: size // 2])
    stream.flush()
    seen = set(files_below(sandbox, sandbox.root))
    stream.write(data[size // 2 :])
    stream.flush()
    seen_later = set(files_below(sandbox, sandbox.root))
    completed = stream.close_and_finalize_checkpoint()
    final = sandbox.raw_path(file_path(completed.metadata_handle) or "")
    msg = fail_message(
        "MD-1", "metadata stream before finalize", sandbox, size=size, metadata=final
    )
    assert final not in seen, msg + "\n_metadata was visible after half the bytes"
    assert final not in seen_later, msg + "\n_metadata was visible before finalization"


@pytest.mark.clause("MD-1", "MD-2")
def test_unfinalized_checkpoint_does_not_resolve(sandbox, target):
    """MD-1: before finalization the checkpoint does not resolve; MD-2: close() without
    finalizing leaves no file and the checkpoint does not resolve."""
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    location = drv.location(2)
    before = files_below(sandbox, sandbox.root)
    stream = location.create_metadata_output_stream()
    stream.write(payload(5000))
    stream.flush()
    if "file-layout" in target.capabilities:
        expect_error(
            FileNotFoundError,
            "MD-1",
            "resolve_checkpoint before finalize",
            lambda: drv.fresh_storage().resolve_checkpoint(drv.chk_dir(2)),
            sandbox,
        )
    with tagged("MD-2", "metadata stream closed without finalize", sandbox):
        stream.close()
        assert stream.closed, "`closed` is false after close()"
        stream.close()
        assert files_below(sandbox, sandbox.root) == before
    if "file-layout" in target.capabilities:
        expect_error(
            FileNotFoundError,
            "MD-2",
            "resolve_checkpoint after close without finalize",
            lambda: drv.fresh_storage().resolve_checkpoint(drv.chk_dir(2)),
            sandbox,
            pointer=drv.chk_dir(2),
        )


def _finalized_once(sandbox: Any, target: Any, how: str) -> tuple[JobDriver, Any, Any]:
    """Checkpoint 5 finalized with b"first metadata", and the location a second metadata
    stream comes from: the same one, or one initialized again for the id (MD-3, MD-9)."""
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    location = drv.location(5)
    completed = drv.finalize(location, b"first metadata")
    return drv, completed, location if how == "same-location" else drv.location(5)


@pytest.mark.clause("MD-3")
@pytest.mark.parametrize("how", ["same-location", "new-location"])
def test_no_second_metadata(sandbox, target, how):
    """MD-3: a second metadata stream for a finalized checkpoint fails; the first stays."""
    drv, completed, again = _finalized_once(sandbox, target, how)

    def second():
        stream = again.create_metadata_output_stream()
        try:
            stream.write(b"second metadata, longer than the first")
            return stream.close_and_finalize_checkpoint()
        finally:
            stream.close()

    expect_error(
        OSError, "MD-3", "second create_metadata_output_stream + finalize", second, sandbox, how=how
    )
    loc = drv.fresh_storage().resolve_checkpoint(completed.external_pointer)
    assert read_handle(loc.metadata_handle) == b"first metadata", fail_message(
        "MD-3", "first _metadata after the second attempt", sandbox, how=how
    )


def _stream_or_refusal(location: Any) -> Any:
    """A new metadata stream of ``location``, or None where its creation raised OSError (MD-11
    allows a second stream to fail at creation already, as a storage that creates _metadata
    with the stream does)."""
    try:
        return location.create_metadata_output_stream()
    except OSError:
        return None


@pytest.mark.clause("MD-11")
@pytest.mark.parametrize("how", ["same-location", "new-location"])
def test_no_second_metadata_from_a_stream_made_before(sandbox, target, how):
    """MD-11: a second metadata stream made before the first finalizes (of the same location,
    or of one initialized again) fails with OSError, at creation or at the latest when it is
    finalized after the first; the first _metadata stays unchanged."""
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    location = drv.location(5)
    again = location if how == "same-location" else drv.location(5)
    first = location.create_metadata_output_stream()
    with tagged("MD-11", "create a second metadata stream before the first finalizes", sandbox):
        second = _stream_or_refusal(again)
    first.write(b"first metadata")
    if second is not None:
        second.write(b"second metadata, longer than the first")
    with tagged("MD-11", "finalize the first of two open metadata streams", sandbox, how=how):
        completed = first.close_and_finalize_checkpoint()
    if second is not None:

        def finalize_second() -> Any:
            try:
                return second.close_and_finalize_checkpoint()
            finally:
                second.close()

        expect_error(
            OSError,
            "MD-11",
            "finalize the second metadata stream after the first",
            finalize_second,
            sandbox,
            how=how,
        )
    loc = drv.fresh_storage().resolve_checkpoint(completed.external_pointer)
    assert read_handle(loc.metadata_handle) == b"first metadata", fail_message(
        "MD-11", "first _metadata after the second stream's finalization", sandbox, how=how
    )


@pytest.mark.clause("MD-3")
@pytest.mark.backend_traits(object_store=True, any_credentials=True)
@pytest.mark.parametrize("how", ["same-location", "new-location"])
def test_no_second_metadata_where_conditional_writes_are_ignored(sandbox, target, backend, how):
    """MD-3: on a server that ignores conditional writes (a second route to the backend whose
    ledger removes If-None-Match; with allow_unconditional_metadata) a second metadata stream
    still fails; the first stays."""
    with unconditional_route(backend) as route:
        drv = JobDriver(sandbox, **unconditional_options(backend, route), **file_options(target))
        with tagged("MD-3", "finalize once where If-None-Match is ignored", sandbox, how=how):
            drv.init_base()
            location = drv.location(5)
            completed = drv.finalize(location, b"first metadata")
        again = location if how == "same-location" else drv.location(5)
        expect_error(
            OSError,
            "MD-3",
            "second metadata stream + finalize where If-None-Match is ignored",
            lambda: drv.finalize(again, b"second metadata, longer than the first"),
            sandbox,
            how=how,
        )
        loc = drv.fresh_storage().resolve_checkpoint(completed.external_pointer)
        assert read_handle(loc.metadata_handle) == b"first metadata", fail_message(
            "MD-3", "first _metadata where If-None-Match is ignored", sandbox, how=how
        )


#: MD-3's race: how long the server holds the first finalization's PutObject of _metadata
RACE_HOLD_SECONDS = 2.0


@pytest.mark.clause("MD-3")
@pytest.mark.backend_traits(object_store=True, ledger=True)
def test_racing_finalizations_leave_one_metadata(sandbox, target, backend):
    """MD-3: two finalizations of one checkpoint racing (the first's PutObject of _metadata
    held by the server while the second is sent), on a route the storage has not used yet:
    exactly one returns, the other raises OSError, and _metadata holds the returned one's
    bytes (where the server honours conditional writes)."""
    require_conditional_writes(backend)
    with second_route(backend) as route:
        drv = JobDriver(sandbox, **routed_options(backend, route), **file_options(target))
        with tagged("MD-3", "initialize a checkpoint twice on a fresh route", sandbox):
            drv.init_base()
            first, second = drv.location(5), drv.location(5)
        hold = route.ledger.inject(
            "PutObject", delay=RACE_HOLD_SECONDS, times=1, key_contains="_metadata"
        )
        outcomes: dict[str, Any] = {}

        def finalize(name: str, location: Any) -> None:
            try:
                outcomes[name] = drv.finalize(location, name.encode() * 8)
            except Exception as exc:
                outcomes[name] = exc

        racer = threading.Thread(target=finalize, args=("first", first), daemon=True)
        racer.start()
        deadline = time.monotonic() + 30
        while not hold.hits and racer.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        finalize("second", second)
        racer.join(30)
        route.ledger.clear_faults()
        msg = fail_message("MD-3", "two finalizations racing", sandbox, outcomes=outcomes)
        assert hold.hits == 1, msg + "\nthe first finalization's PutObject was never held"
        won = [name for name, result in outcomes.items() if not isinstance(result, BaseException)]
        lost = [result for result in outcomes.values() if isinstance(result, BaseException)]
        assert len(won) == 1, msg + "\nnot exactly one finalization returned"
        assert len(lost) == 1, msg
        assert isinstance(lost[0], OSError), msg + f"\nthe loser raised {lost[0]!r}"
        loc = drv.fresh_storage().resolve_checkpoint(outcomes[won[0]].external_pointer)
        assert read_handle(loc.metadata_handle) == won[0].encode() * 8, (
            msg + "\n_metadata does not hold the bytes of the finalization that returned"
        )


#: MD-11's races on every backend: rounds, and the finalizations that race in each round
RACE_ROUNDS = 12
RACERS = 12
#: how long a step of a race may take (a racer that hangs fails the test)
RACE_STEP_SECONDS = 30.0
#: the interpreter's thread switch interval during a race (seconds): tiny, so that a
#: check-then-write without a lock is interrupted between the check and the write
RACE_SWITCH_INTERVAL = 1e-6
#: how long the racers spin with that interval before the start
RACE_SETTLE_SECONDS = 0.005


def _racer_bytes(racer: int) -> bytes:
    return b"metadata of racer %d;" % racer * 8


def _open_stream(location: Any, racer: int) -> Any:
    """A metadata stream of ``location`` with the racer's bytes written, or the exception."""
    try:
        stream = location.create_metadata_output_stream()
    except BaseException as exc:
        return exc
    try:
        stream.write(_racer_bytes(racer))
    except BaseException as exc:
        stream.close()
        return exc
    return stream


def _finalize_on_start(stream: Any, ready: Any, start: threading.Event) -> Any:
    """Say ``ready``, spin until ``start``, finalize ``stream``: the completed location, or the
    exception raised. A spinning racer is running when the start comes (a sleeping one would
    wake too late to race)."""
    ready.release()
    deadline = time.monotonic() + RACE_STEP_SECONDS
    while not start.is_set() and time.monotonic() < deadline:
        pass
    try:
        return stream.close_and_finalize_checkpoint()
    except BaseException as exc:
        return exc
    finally:
        stream.close()


def _race(drv: JobDriver, rounds: int, racers: int) -> list[dict[int, Any]]:
    """Round after round, ``racers`` threads (the same ones each round) finalize checkpoint
    ``round + 1``, each through its own location (initialized again) and metadata stream,
    started together with the thread switch interval tiny: per round, racer -> the completed
    location or the exception it raised.

    The racers open their streams first, then wait asleep for each other (a spinning thread
    would starve a server running in this process), then spin for the start.
    """
    outcomes: list[dict[int, Any]] = [{} for _ in range(rounds)]
    locations: list[Any] = []
    gate = threading.Barrier(racers + 1, timeout=RACE_STEP_SECONDS)
    ready = threading.Semaphore(0)
    starts = [threading.Event() for _ in range(rounds)]

    def racer(index: int) -> None:
        with contextlib.suppress(threading.BrokenBarrierError):
            for round_ in range(rounds):
                gate.wait()  # the round's locations are set
                stream = _open_stream(locations[index], index)
                gate.wait()  # every racer's stream is open
                if isinstance(stream, BaseException):
                    ready.release()
                    outcomes[round_][index] = stream
                else:
                    outcomes[round_][index] = _finalize_on_start(stream, ready, starts[round_])
                gate.wait()  # every outcome of the round is in

    threads = [
        threading.Thread(target=racer, args=(i,), name=f"md11-racer-{i}", daemon=True)
        for i in range(racers)
    ]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(RACE_SWITCH_INTERVAL)
    try:
        for thread in threads:
            thread.start()
        for round_ in range(rounds):
            locations[:] = [drv.location(round_ + 1) for _ in range(racers)]
            gate.wait()
            gate.wait()
            for _ in range(racers):
                ready.acquire(timeout=RACE_STEP_SECONDS)
            time.sleep(RACE_SETTLE_SECONDS)  # every racer spins
            starts[round_].set()
            gate.wait()
    finally:
        sys.setswitchinterval(interval)
        for start in starts:
            start.set()
        gate.abort()
    return outcomes


@pytest.mark.clause("MD-11")
def test_racing_finalizations_on_every_backend(sandbox, target):
    """MD-11: 12 finalizations of one checkpoint racing on every backend (threads started
    together, round after round, each with its own location initialized again): exactly one
    returns, the others raise OSError, and _metadata holds the bytes of the one that
    returned (but on a server that ignores conditional writes)."""
    require_conditional_writes(sandbox.backend)
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    with tagged("MD-11", "finalizations racing", sandbox, rounds=RACE_ROUNDS, racers=RACERS):
        rounds = _race(drv, RACE_ROUNDS, RACERS)
    for round_, outcomes in enumerate(rounds):
        msg = fail_message(
            "MD-11", "finalizations racing", sandbox, round=round_, outcomes=outcomes
        )
        require(len(outcomes) == RACERS, "MD-11", msg + "\na racer did not finish in time")
        won = [r for r, result in outcomes.items() if not isinstance(result, BaseException)]
        lost = [result for result in outcomes.values() if isinstance(result, BaseException)]
        require(len(won) == 1, "MD-11", msg + "\nnot exactly one finalization returned")
        wrong = [exc for exc in lost if not isinstance(exc, OSError)]
        require(not wrong, "MD-11", msg + f"\na loser raised something else: {wrong!r}")
        with tagged("MD-11", "resolve the winner's checkpoint", sandbox, round=round_):
            loc = drv.fresh_storage().resolve_checkpoint(outcomes[won[0]].external_pointer)
            data = read_handle(loc.metadata_handle)
        require(
            data == _racer_bytes(won[0]),
            "MD-11",
            msg + f"\n_metadata holds {data!r}, not the bytes of racer {won[0]}, which returned",
        )


#: MD-13's races: rounds of RACERS finalizations where conditional writes are ignored
UNCONDITIONAL_ROUNDS = 4


@contextlib.contextmanager
def _without_conditional_writes(backend: Any) -> Iterator[dict[str, Any]]:
    """Options that reach a server that ignores conditional writes: the backend's own where
    its server does (s3rver), else a second route whose ledger removes If-None-Match (object
    stores that accept any credentials, as the header is signed); a skip elsewhere."""
    if backend.conditional_writes is False:
        yield {}
        return
    if not (backend.object_store and backend.accepts_any_credentials):
        pytest.skip(
            f"the {backend.name} store creates files exclusively and offers no route to a "
            "server that ignores conditional writes"
        )
    with unconditional_route(backend) as route:
        yield routed_options(backend, route)


@pytest.mark.clause("MD-13")
@pytest.mark.options(UNCONDITIONAL_METADATA)
def test_finalization_refused_without_conditional_writes(sandbox, target, backend):
    """MD-13: where the server ignores conditional writes, finalizing without
    allow_unconditional_metadata raises OSError naming conditional writes and leaves no
    _metadata."""
    with _without_conditional_writes(backend) as options:
        drv = JobDriver(
            sandbox, **options, **file_options(target), **{UNCONDITIONAL_METADATA: False}
        )
        with tagged("MD-13", "initialize a checkpoint where conditional writes are ignored"):
            drv.init_base()
            location = drv.location(5)
        error = expect_error(
            OSError,
            "MD-13",
            "finalize without allow_unconditional_metadata",
            lambda: drv.finalize(location, b"metadata that must not be published"),
            sandbox,
        )
    msg = fail_message("MD-13", "finalize without allow_unconditional_metadata", sandbox)
    text = str(error).lower()
    assert "conditional" in text or "if-none-match" in text, (
        msg + f"\nthe OSError does not name conditional writes: {error}"
    )
    published = [f for f in files_below(sandbox, sandbox.root) if f.endswith("/_metadata")]
    assert not published, msg + f"\na _metadata was written: {published}"


@pytest.mark.clause("MD-13")
@pytest.mark.options(UNCONDITIONAL_METADATA)
def test_racing_finalizations_without_conditional_writes(sandbox, target, backend):
    """MD-13: where the server ignores conditional writes, with allow_unconditional_metadata,
    of 12 finalizations of one checkpoint racing (round after round) at most one returns, the
    others raise OSError, and _metadata holds its bytes."""
    with _without_conditional_writes(backend) as options:
        drv = JobDriver(
            sandbox, **options, **file_options(target), **{UNCONDITIONAL_METADATA: True}
        )
        with tagged("MD-13", "finalizations racing", sandbox, rounds=UNCONDITIONAL_ROUNDS):
            drv.init_base()
            rounds = _race(drv, UNCONDITIONAL_ROUNDS, RACERS)
        for round_, outcomes in enumerate(rounds):
            msg = fail_message(
                "MD-13", "finalizations racing", sandbox, round=round_, outcomes=outcomes
            )
            require(len(outcomes) == RACERS, "MD-13", msg + "\na racer did not finish in time")
            won = [r for r, result in outcomes.items() if not isinstance(result, BaseException)]
            wrong = [e for e in outcomes.values() if isinstance(e, BaseException)]
            wrong = [e for e in wrong if not isinstance(e, OSError)]
            require(len(won) <= 1, "MD-13", msg + "\nmore than one finalization returned")
            require(not wrong, "MD-13", msg + f"\na loser raised something else: {wrong!r}")
            if not won:
                continue
            with tagged("MD-13", "resolve the winner's checkpoint", sandbox, round=round_):
                loc = drv.fresh_storage().resolve_checkpoint(outcomes[won[0]].external_pointer)
                data = read_handle(loc.metadata_handle)
            require(
                data == _racer_bytes(won[0]),
                "MD-13",
                msg + f"\n_metadata holds {data!r}, not the bytes of racer {won[0]}",
            )


@pytest.mark.clause("MD-9")
@pytest.mark.parametrize("how", ["same-location", "new-location"])
def test_second_metadata_exists_already(sandbox, target, how):
    """MD-9 (SHOULD): the second metadata stream's error is a FileExistsError."""
    drv, _, again = _finalized_once(sandbox, target, how)
    expect_error(
        FileExistsError,
        "MD-9",
        "second create_metadata_output_stream + finalize",
        lambda: drv.finalize(again, b"second metadata"),
        sandbox,
        how=how,
    )


#: How S3 servers refuse an exclusive create of an object that exists: 412 PreconditionFailed,
#: and AWS's 409 ConditionalRequestConflict for conditional writes of one key at once.
REFUSED_CREATES = (("PreconditionFailed", 412), ("ConditionalRequestConflict", 409))


@pytest.mark.clause("MD-9")
@pytest.mark.backend_traits(object_store=True, ledger=True)
@pytest.mark.parametrize(("code", "status"), REFUSED_CREATES)
def test_refused_exclusive_create_is_file_exists(sandbox, target, backend, code, status):
    """MD-9 (SHOULD): where the object store refuses the second exclusive create of _metadata
    with 412 PreconditionFailed or 409 ConditionalRequestConflict, the error is a
    FileExistsError and the first metadata stays (where the server has exclusive creates)."""
    require_conditional_writes(backend)
    drv, completed, again = _finalized_once(sandbox, target, "new-location")
    refusal = backend.ledger.inject(
        "PutObject", status=status, code=code, times=None, key_contains="_metadata"
    )
    try:
        expect_error(
            FileExistsError,
            "MD-9",
            f"second finalization, the store answering {status} {code}",
            lambda: drv.finalize(again, b"second metadata"),
            sandbox,
            refused_puts=refusal.hits,
        )
    finally:
        backend.ledger.clear_faults()
    loc = drv.fresh_storage().resolve_checkpoint(completed.external_pointer)
    assert read_handle(loc.metadata_handle) == b"first metadata", fail_message(
        "MD-9", f"first _metadata after a {status} {code}", sandbox
    )


def _check_finalization_result(sandbox, drv, sizes, clause):
    """tell() counts the metadata bytes from 0, and the completed location reads them back."""
    location = drv.location(3)
    pieces = [payload(n, seed=i) for i, n in enumerate(sizes)]
    stream = location.create_metadata_output_stream()
    written = 0
    with tagged(clause, "tell() of a new metadata stream", sizes=sizes):
        assert stream.tell() == 0
    for piece in pieces:
        stream.write(piece)
        written += len(piece)
        with tagged(clause, "metadata tell", sizes=sizes, expected=written):
            assert stream.tell() == written
    completed = stream.close_and_finalize_checkpoint()
    with tagged(clause, "close_and_finalize_checkpoint", sandbox, sizes=sizes):
        assert isinstance(completed.external_pointer, str)
        assert completed.external_pointer
        assert read_handle(completed.metadata_handle) == b"".join(pieces)
        assert completed.metadata_handle.state_size in (written, -1)


@pytest.mark.clause("MD-4")
@pytest.mark.parametrize("sizes", [[1], [3, 0, 4000], [70_000, 1]])
def test_finalization_result(sandbox, target, sizes):
    """MD-4: tell() counts the metadata bytes and the completed location reads them back."""
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    _check_finalization_result(sandbox, drv, sizes, "MD-4")


@pytest.mark.clause("MD-5")
def test_empty_metadata(sandbox, target):
    """MD-5: empty metadata still finalizes into a resolvable checkpoint of zero bytes."""
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    completed = drv.finalize(drv.location(4), b"")
    loc = drv.fresh_storage().resolve_checkpoint(completed.external_pointer)
    msg = fail_message(
        "MD-5", "finalize empty metadata", sandbox, pointer=completed.external_pointer
    )
    assert read_handle(loc.metadata_handle) == b"", msg
    assert read_handle(completed.metadata_handle) == b"", msg


def _check_after_finalization(sandbox, drv, clause):
    """After finalization: closed, write() and a second finalize fail, close() is harmless and
    the metadata still reads (through the pointer when the checkpoint is addressable)."""
    stream = drv.location(6).create_metadata_output_stream()
    stream.write(b"metadata six")
    completed = stream.close_and_finalize_checkpoint()
    require(stream.closed, clause, fail_message(clause, "closed after finalize"))
    expect_error(CLOSED_ERRORS, clause, "write after finalize", lambda: stream.write(b"x"))
    expect_error(
        CLOSED_ERRORS,
        clause,
        "second close_and_finalize_checkpoint",
        stream.close_and_finalize_checkpoint,
    )
    stream.close()
    stream.close()
    kept = completed.metadata_handle
    if completed.external_pointer != NON_ADDRESSABLE_POINTER:
        kept = drv.fresh_storage().resolve_checkpoint(completed.external_pointer).metadata_handle
    with tagged(clause, "close() after finalize", sandbox, pointer=completed.external_pointer):
        assert read_handle(kept) == b"metadata six"


@pytest.mark.clause("MD-6")
def test_after_finalization(sandbox, target):
    """MD-6: write and a second finalize fail after finalization; close() keeps the checkpoint."""
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    _check_after_finalization(sandbox, drv, "MD-6")


class ForeignRelativeHandle:
    """A duck-typed relative file handle, as another implementation might pickle it."""

    def __init__(self, file_path: str, relative_path: str, state_size: int) -> None:
        self.file_path, self.relative_path, self.state_size = file_path, relative_path, state_size

    def open_input_stream(self):
        raise AssertionError("the suite's fake relative handle must never be read directly")

    def as_bytes_if_in_memory(self):
        return None

    def discard_state(self):
        raise AssertionError("the suite's fake relative handle must never be discarded")


def _check_resolve_handle(sandbox, drv, clause):
    """resolve_handle() keeps the bytes of own, shared, task-owned and inline handles, and
    raises ValueError for a relative_path that is not one file name inside the directory."""
    completed, written = drv.checkpoint(
        7, exclusive=[payload(4000, 1), payload(9, 2)], shared=[payload(6000, 3)]
    )
    inline = ByteStreamStateHandle("suite-inline", b"inline bytes")
    # task-owned state that the checkpoint references (Flink's changelog files)
    owned = [(drv.task_owned(blob), blob) for blob in (payload(5000, 4), payload(9, 5))]
    for handle, blob in [*written, *owned, (inline, b"inline bytes")]:
        with tagged(clause, "resolve_handle, then read", sandbox, handle=handle):
            assert read_handle(completed.resolve_handle(handle)) == blob
    victim = join(parent(completed.external_pointer), "victim")
    # not one file name inside the directory ('a\\b' is one on POSIX and S3: not rejected)
    for bad in ("../victim", "..", ".", "", "a/b", "/etc/passwd", "../../x"):
        fake = ForeignRelativeHandle(victim, bad, 3)
        expect_error(
            ValueError,
            clause,
            "resolve_handle(relative handle leaving the directory)",
            lambda f=fake: completed.resolve_handle(f),
            relative_path=bad,
        )


@pytest.mark.clause("MD-7")
def test_resolve_handle(sandbox, target):
    """MD-7: resolve_handle() keeps the bytes of own, shared, task-owned, inline and absolute
    file handles, and raises ValueError for a relative_path that is not one file name inside
    the directory."""
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    _check_resolve_handle(sandbox, drv, "MD-7")


@pytest.mark.clause("MD-10")
def test_checkpoints_kept_in_memory(sandbox, target):
    """MD-10: on a storage made without a checkpoint directory, the metadata stream and the
    completed location behave as for the others; close() without finalizing, also repeated,
    leaves the stream closed, and write() and close_and_finalize_checkpoint() then raise."""
    drv = driver_with(sandbox, target, "none")
    drv.init_base()
    _check_finalization_result(sandbox, drv, [3, 0, 4000], "MD-10")
    _check_after_finalization(sandbox, drv, "MD-10")
    _check_closed_without_finalization(sandbox, drv, "MD-10")
    _check_resolve_handle(sandbox, drv, "MD-10")


def _check_closed_without_finalization(sandbox, drv, clause):
    """close() without finalizing, twice: closed, and write() and a finalization then fail."""
    stream = drv.location(7).create_metadata_output_stream()
    stream.write(b"metadata seven")
    stream.close()
    stream.close()
    require(stream.closed, clause, fail_message(clause, "closed after close()", sandbox))
    expect_error(CLOSED_ERRORS, clause, "write after close()", lambda: stream.write(b"x"))
    expect_error(
        CLOSED_ERRORS,
        clause,
        "close_and_finalize_checkpoint after close()",
        stream.close_and_finalize_checkpoint,
    )


@pytest.mark.clause("MD-8")
@pytest.mark.parametrize("checkpoint_id", [-1, -177])
def test_negative_checkpoint_ids(sandbox, target, checkpoint_id):
    """MD-8: initialize_location_for_checkpoint with a negative id raises ValueError."""
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    expect_error(
        ValueError,
        "MD-8",
        "initialize_location_for_checkpoint",
        lambda: drv.location(checkpoint_id),
        sandbox,
        checkpoint_id=checkpoint_id,
    )


#: MD-12's child: a checkpoint's setup, then a file size limit of LIMIT bytes, then a
#: finalization and two state streams whose bytes pass the limit: a small state that the
#: stream may buffer until close_and_get_handle(), a large one written in chunks (a write
#: fails part-way, then close()).
MD12_CHILD = """
location, factory = _first_checkpoint(box)
small = factory.create_checkpoint_state_output_stream(CheckpointedStateScope.EXCLUSIVE)
large = factory.create_checkpoint_state_output_stream(CheckpointedStateScope.SHARED)
metadata = location.create_metadata_output_stream()
limit_file_size(box["limit"])
out = {}
metadata.write(box["metadata"])
out["close_and_finalize_checkpoint()"] = outcome(metadata.close_and_finalize_checkpoint)
metadata.close()
small.write(box["small"])
out["close_and_get_handle() of a small state"] = outcome(small.close_and_get_handle)
small.close()
for start in range(0, len(box["large"]), 4096):
    wrote = outcome(lambda: large.write(box["large"][start : start + 4096]))
    if wrote[0] != "returned":
        out["write() of a large state, then close()"] = wrote
        break
else:
    out["close_and_get_handle() of a large state"] = outcome(large.close_and_get_handle)
large.close()
"""
FILE_SIZE_LIMIT = 1024
#: Why a fault reached none of a target's writes (a skip's reason).
NOT_REACHED = (
    "the target's bytes did not meet the fault (kept in memory, or written by another process, "
    "such as a JVM, that the test's file size limit does not reach)"
)


@pytest.mark.clause("MD-12")
def test_failed_writes_under_a_file_size_limit_leave_nothing(sandbox, target):
    """MD-12: under a file size limit, a failed close_and_finalize_checkpoint(), a failed
    close_and_get_handle() and a failed write followed by close() leave no temporary, staging
    or partial file on the backend."""
    drv = JobDriver(sandbox, **file_options(target))
    before = set(files_below(sandbox, sandbox.root))
    box = {
        "storage": drv.storage,
        "job_id": drv.job_id,
        "limit": FILE_SIZE_LIMIT,
        "metadata": payload(3 * FILE_SIZE_LIMIT, seed=1),
        "small": payload(3 * FILE_SIZE_LIMIT, seed=2),
        "large": payload(200 * FILE_SIZE_LIMIT, seed=3),
    }
    out = under_file_size_limit("MD-12", sandbox, MD12_CHILD, box)
    _check_nothing_staged_left(sandbox, out, before, f"a file size limit of {FILE_SIZE_LIMIT}")


def _check_nothing_staged_left(
    sandbox: Any, out: dict[str, tuple[str, Any]], before: set[str], how: str
) -> None:
    """MD-12: after the failures of ``out`` (call -> (outcome, result)), the backend holds no
    file that was not there ``before``, but for those of the results that returned."""
    if all(kind == "returned" for kind, _ in out.values()):
        pytest.skip(f"nothing failed under {how}: {NOT_REACHED}")
    kept = set()
    for kind, result in out.values():
        if kind == "returned" and result is not None:
            handle = getattr(result, "metadata_handle", result)
            if file_path(handle) is not None:
                kept.add(sandbox.raw_path(file_path(handle)).rstrip("/"))
    left = sorted(set(files_below(sandbox, sandbox.root)) - before - kept)
    uploads = open_uploads_below(sandbox, sandbox.root)  # aborted here: none outlives the test
    shown = "\n".join(f"  {call}: {kind} {result!r}"[:400] for call, (kind, result) in out.items())
    msg = fail_message("MD-12", f"failed writes under {how}", sandbox) + f"\noutcomes:\n{shown}"
    assert not left, msg + f"\nleft on the backend: {left}"
    assert not uploads, msg + f"\nopen multipart uploads left: {uploads}"


MIB = 1024 * 1024


@pytest.mark.clause("MD-12")
@pytest.mark.backend_traits(object_store=True, ledger=True)
def test_refused_uploads_leave_nothing_staged(sandbox, target, backend):
    """MD-12: when the server refuses the upload of _metadata, of a small state and of a state
    in a multipart upload, close_and_finalize_checkpoint() and close_and_get_handle() fail and
    leave no staging or partial file and no open multipart upload."""
    options = {**file_options(target)}
    options["storage_options"] = {**backend.storage_options, "default_block_size": 5 * MIB}
    if "memory-limit" in target.capabilities:
        options["max_state_size"] = 32 * MIB
    drv = JobDriver(sandbox, **options)
    drv.init_base()
    location = drv.location(1)
    factory = drv.worker(1, location.location_reference)
    before = set(files_below(sandbox, sandbox.root))
    metadata = location.create_metadata_output_stream()
    metadata.write(payload(3000, seed=1))
    out = {
        "close_and_finalize_checkpoint()": _refused(
            backend, "PutObject", "/_metadata", metadata.close_and_finalize_checkpoint
        )
    }
    metadata.close()
    for name, size, operation in (
        ("a small state", 3000, "PutObject"),
        ("a state of 12 MiB in parts", 12 * MIB, "CompleteMultipartUpload"),
    ):
        stream = factory.create_checkpoint_state_output_stream(EXCLUSIVE)
        write_chunks(stream, payload(size, seed=size), [MIB] * (size // MIB))
        out[f"close_and_get_handle() of {name}"] = _refused(
            backend, operation, None, stream.close_and_get_handle
        )
        stream.close()
    _check_nothing_staged_left(sandbox, out, before, "refused uploads")


def _refused(backend: Any, operation: str, key_part: str | None, call: Any) -> tuple[str, Any]:
    """``call``'s outcome while the server refuses every ``operation`` (403 AccessDenied, not
    retried) on keys holding ``key_part``: ("returned", result) or (error kind, text)."""
    backend.ledger.inject(
        operation, status=403, code="AccessDenied", times=None, key_contains=key_part
    )
    try:
        return ("returned", call())
    except OSError as error:
        return ("OSError", f"{type(error).__name__}: {error}")
    except Exception as error:  # another clause's business; here only what is left counts
        return ("raised", f"{type(error).__name__}: {error}")
    finally:
        backend.ledger.clear_faults()
