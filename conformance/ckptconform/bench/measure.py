"""The measurements of ``ckptconform bench``: a target side by side with raw fsspec and the disk.

Every figure is a set of *variants* timed over the same repetitions, interleaved: each
repetition runs every figure once, and within a figure the variants in a rotating order, so
a variant never owns a quiet or a busy moment of a shared machine, and the ratio of two
variants is taken per repetition (``ckptconform.bench.stats.paired_ratios``).

Figures (``Bench.figures``):

- ``write``: file-backed state of each size written in 1 MiB writes through one stream,
  closed (``close_and_get_handle``), on each leg; states smaller than 16 MiB are timed in
  batches of 16 MiB per repetition (the time of each state's writes and close, summed).
  Variants: ``target``; raw fsspec with the reference's durability (``fsspec+fsync``: local
  files are flushed and ``os.fsync``-ed before close, as ``ckptstore`` does for every state
  file; an S3 PUT is durable once
  answered, so on S3 the same-durability baseline is plain ``fsspec``); ``fsspec`` without a
  sync (local, for context); and the disk's limit (``disk``: ``os.write`` and
  ``os.fdatasync`` on a plain file descriptor).
- ``read``: the same sizes read back in 1 MiB reads: ``target`` (its handle's
  ``open_input_stream``) and ``fsspec`` (``fs.open(path, 'rb')``).
- ``inline``: states per second of a small state (1000 bytes in 100-byte writes, below the
  inline threshold), against the same writes into ``io.BytesIO``.
- ``threads``: N states written by one thread and by ``threads`` threads at once, on the
  local leg and, where Linux's ``/dev/shm`` is there, on a RAM disk (``threads-ramdisk``):
  every state ends in an ``fsync``, so on a disk that one thread already keeps busy more
  threads add little; on a RAM disk the sync is free and the figure shows whether the target
  holds a lock around its I/O.

With a peer (``--peer flink``, ``ckptconform.bench.peer``), the local leg's write figures and
the inline figure get a ``flink`` variant, Flink 2.3.0's own ``FsCheckpointStreamFactory``
timed inside a JVM, one repetition per request, rotated with the other variants like any
of them, and the ratio ``target / flink``; the write figures also get ``java+fsync`` (the
JVM's ``FileOutputStream`` with ``getFD().sync()``: what the disk gives Java).

Peak RSS (``ckptconform.bench.rss``), the S3 requests per checkpoint (``requests_per_checkpoint``,
on ``ckptconform.budget.phases``) and the suite's wall time (``ckptconform.bench.suite_time``) are
measured by their own modules. Nothing here imports the reference: the target is reached through
``--impl`` and ``ckptstore.api`` values only.
"""

from __future__ import annotations

import contextlib
import io
import os
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ckptconform.backends.local import LocalBackend
from ckptconform.bench.stats import Summary, paired_ratios, rates
from ckptstore.api import CheckpointedStateScope, JobID

__all__ = [
    "CHUNK",
    "MIB",
    "Bench",
    "Case",
    "Figure",
    "Leg",
    "requests_per_checkpoint",
    "run_interleaved",
]

MIB = 1 << 20
GIB = 1 << 30
#: the write and read size of the file-backed figures
CHUNK = MIB
#: a repetition of a file-backed figure moves at least this much (small states in a batch)
BATCH_BYTES = 16 * MIB
EXCLUSIVE = CheckpointedStateScope.EXCLUSIVE

TARGET = "target"
FSSPEC = "fsspec"
FSSPEC_FSYNC = "fsspec+fsync"
DISK = "disk"
BYTES_IO = "io.BytesIO"
#: the peer's variants (``ckptconform.bench.peer``: Flink's Java streams, the JVM's fsync)
PEER = "flink"
JAVA_FSYNC = "java+fsync"


# --------------------------------------------------------------------------- figures


@dataclass
class Figure:
    """One figure: variants timed over the same repetitions, and the ratios between them.

    ``amount`` is what one repetition moves (bytes or states); ``scale`` turns amount per
    second into ``unit`` (bytes/s into GiB/s). ``ratios`` name pairs of variants
    ``(numerator, denominator)`` compared per repetition.
    """

    id: str
    group: str
    label: str
    unit: str
    amount: float
    scale: float = 1.0
    leg: str | None = None
    size: int | None = None
    ratios: dict[str, tuple[str, str]] = field(default_factory=dict)
    baseline: str | None = None
    seconds: dict[str, list[float]] = field(default_factory=dict)
    error: str | None = None
    note: str = ""

    def rates(self, variant: str) -> list[float]:
        return [r * self.scale for r in rates(self.amount, self.seconds.get(variant, []))]

    def value(self, variant: str) -> Summary | None:
        samples = self.rates(variant)
        return Summary.of(samples) if samples else None

    def ratio(self, name: str) -> Summary | None:
        numerator, denominator = self.ratios[name]
        a, b = self.rates(numerator), self.rates(denominator)
        if not a or len(a) != len(b):
            return None
        return paired_ratios(a, b)

    def to_json(self) -> dict[str, Any]:
        values = {v: s.to_json() for v in self.seconds if (s := self.value(v)) is not None}
        ratios = {n: r.to_json() for n in self.ratios if (r := self.ratio(n)) is not None}
        return {
            "id": self.id,
            "group": self.group,
            "label": self.label,
            "leg": self.leg,
            "size": self.size,
            "unit": self.unit,
            "amount": self.amount,
            "baseline": self.baseline,
            "seconds": {v: list(s) for v, s in self.seconds.items()},
            "values": values,
            "ratios": ratios,
            "ratio_variants": {n: list(p) for n, p in self.ratios.items()},
            "error": self.error,
            "note": self.note,
        }


@dataclass
class Case:
    """One variant of a figure: ``run()`` does one repetition and returns its seconds (None:
    no sample, e.g. a peer that failed; the figure goes on).

    ``prepare``, when set, runs once before the repetitions, untimed (a warm-up, the files a
    read figure reads, a calibration).
    """

    figure: Figure
    variant: str
    run: Callable[[], float | None]
    prepare: Callable[[], object] | None = None


def run_interleaved(
    groups: Sequence[Sequence[Case]],
    reps: int,
    *,
    on_step: Callable[[str], None] | None = None,
) -> None:
    """Run ``reps`` repetitions of every group (a figure's variants), interleaved.

    Repetition ``r`` runs every group once, in order, and a group's cases rotated by ``r``, so
    each variant runs first, second, ... equally often. Every case's ``prepare`` runs once
    before the first repetition. The first exception of a figure ends that figure (its
    ``error``), not the run.
    """
    for cases in groups:
        for case in cases:
            if case.prepare is not None and case.figure.error is None:
                _attempt(case, case.prepare)
    for rep in range(reps):
        for cases in groups:
            if not cases:
                continue
            shift = rep % len(cases)
            for case in [*cases[shift:], *cases[:shift]]:
                figure = case.figure
                if figure.error is not None:
                    break
                seconds = _attempt(case, case.run)
                if isinstance(seconds, float):
                    figure.seconds.setdefault(case.variant, []).append(seconds)
            if on_step is not None:
                on_step(f"{cases[0].figure.label} ({rep + 1}/{reps})")


def _attempt(case: Case, step: Callable[[], object]) -> object:
    try:
        return step()
    except Exception as exc:
        message = f"{case.variant}: {type(exc).__name__}: {exc}"
        case.figure.error = message[:500]
        return None


# --------------------------------------------------------------------------- legs

#: Where Linux keeps a RAM disk (tmpfs) that every user may write to.
RAMDISK = "/dev/shm"


class RamDiskBackend(LocalBackend):
    """The local backend with its directory on the RAM disk (for the threads figure only)."""

    name = "ramdisk"
    parent_dir = RAMDISK


@dataclass
class Leg:
    """A backend the figures run on: the target's location there and raw fsspec beside it."""

    name: str
    backend: Any
    target: Any
    options: dict[str, Any]
    root: str = ""
    storage: Any = None
    access: Any = None
    location: Any = None
    raw: Any = None
    raw_dir: str = ""
    local_dir: str | None = None

    @property
    def object_store(self) -> bool:
        return bool(self.backend.object_store)

    def open(self) -> Leg:
        """Start the backend, create the target's checkpoint location and the raw directory."""
        self.root = self.backend.new_root()
        self.storage = self.target.make_storage(
            checkpoint_dir=f"{self.root}/checkpoints",
            savepoint_dir=f"{self.root}/savepoints",
            options=self.options,
        )
        self.access = self.storage.create_checkpoint_storage(JobID.generate())
        self.access.initialize_base_locations_for_checkpoint()
        self.location = self.access.initialize_location_for_checkpoint(1)
        self.raw = self._raw_filesystem()
        self.raw_dir = self.backend.raw_path(f"{self.root}/raw")
        if not self.object_store:
            self.raw.makedirs(self.raw_dir, exist_ok=True)
            if self.backend.scheme == "file":
                self.local_dir = self.raw_dir
        return self

    def _raw_filesystem(self) -> Any:
        """Plain fsspec with the options the target was given (no caches, no marker)."""
        import fsspec

        options = dict(self.backend.storage_options)
        if self.backend.scheme == "s3":
            options["use_listings_cache"] = False
        return fsspec.filesystem(self.backend.scheme, skip_instance_cache=True, **options)

    def raw_path(self) -> str:
        return f"{self.raw_dir}/{uuid.uuid4()}"

    def close(self) -> None:
        with contextlib.suppress(Exception):  # cleanup must not hide the figures
            self.backend.remove(self.root)


# --------------------------------------------------------------------------- workloads


def _chunk(size: int) -> bytes:
    """``size`` bytes that do not compress to nothing (a repeated pattern of 256 values)."""
    return bytes(range(256)) * (size // 256) + bytes(range(size % 256))


def target_write(location: Any, size: int, chunk: bytes) -> tuple[float, Any]:
    """Write ``size`` bytes through one state stream; seconds and the handle."""
    writes, tail = divmod(size, len(chunk))
    started = time.perf_counter()
    stream = location.create_checkpoint_state_output_stream(EXCLUSIVE)
    try:
        for _ in range(writes):
            stream.write(chunk)
        if tail:
            stream.write(chunk[:tail])
        handle = stream.close_and_get_handle()
    except BaseException:
        stream.close()
        raise
    return time.perf_counter() - started, handle


def fsspec_write(fs: Any, path: str, size: int, chunk: bytes, *, sync: bool) -> float:
    """The same bytes through ``fs.open(path, 'xb')``; ``sync``: flush and fsync before close."""
    writes, tail = divmod(size, len(chunk))
    started = time.perf_counter()
    with fs.open(path, "xb") as out:
        for _ in range(writes):
            out.write(chunk)
        if tail:
            out.write(chunk[:tail])
        if sync:
            out.flush()
            os.fsync(out.fileno())
    return time.perf_counter() - started


def disk_write(path: str, size: int, chunk: bytes) -> float:
    """The disk's limit: ``os.write`` on a new file, ``os.fdatasync``, close."""
    view = memoryview(chunk)
    started = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        left = size
        while left:
            done = os.write(fd, view[: min(left, len(view))])
            left -= done
        os.fdatasync(fd)
    finally:
        os.close(fd)
    return time.perf_counter() - started


def drain(stream: Any, chunk: int = CHUNK) -> int:
    """Read ``stream`` to its end in ``chunk`` reads; the byte count."""
    total = 0
    while True:
        piece = stream.read(chunk)
        if not piece:
            return total
        total += len(piece)


def target_read(handle: Any, size: int) -> float:
    started = time.perf_counter()
    stream = handle.open_input_stream()
    try:
        got = drain(stream)
    finally:
        stream.close()
    seconds = time.perf_counter() - started
    if got != size:
        raise OSError(f"read {got} bytes of a {size}-byte state")
    return seconds


def fsspec_read(fs: Any, path: str, size: int) -> float:
    started = time.perf_counter()
    with fs.open(path, "rb") as stream:
        got = drain(stream)
    seconds = time.perf_counter() - started
    if got != size:
        raise OSError(f"read {got} bytes of a {size}-byte file")
    return seconds


def inline_states(factory: Any, pieces: Sequence[bytes], count: int) -> float:
    """``count`` small states through the target: create, write ``pieces``, close."""
    started = time.perf_counter()
    for _ in range(count):
        stream = factory.create_checkpoint_state_output_stream(EXCLUSIVE)
        for piece in pieces:
            stream.write(piece)
        stream.close_and_get_handle()
    return time.perf_counter() - started


def bytesio_states(pieces: Sequence[bytes], count: int) -> float:
    """The same writes into ``io.BytesIO`` (the floor of any in-memory buffer)."""
    started = time.perf_counter()
    for _ in range(count):
        buffer = io.BytesIO()
        for piece in pieces:
            buffer.write(piece)
        buffer.getvalue()
    return time.perf_counter() - started


# --------------------------------------------------------------------------- the bench


@dataclass(frozen=True)
class Plan:
    """What ``Bench`` measures (the command line's choices)."""

    sizes: tuple[int, ...] = (1 * MIB, 16 * MIB, 256 * MIB)
    reps: int = 5
    inline_size: int = 1000
    inline_write: int = 100
    inline_threshold: int = 1024
    inline_seconds: float = 0.3
    threads: int = 8
    thread_states: int = 32
    thread_state_size: int = 4 * MIB
    write_buffer_size: int = 4096
    #: seconds of untimed JIT warm-up of the peer's JVM before its first repetition
    peer_warmup: float = 2.0


class Bench:
    """Builds the figures of a plan on the given legs and runs them interleaved."""

    def __init__(self, plan: Plan, legs: Sequence[Leg], inline: bool, peer: Any = None) -> None:
        self.plan = plan
        self.legs = list(legs)
        self.inline = inline
        #: a started ``ckptconform.bench.peer.FlinkPeer`` (or a stand-in), or None
        self.peer = peer
        self.peer_leg: Leg | None = None
        self.figures: list[Figure] = []
        self.groups: list[list[Case]] = []
        self._cleanup: list[Callable[[], None]] = []
        self.chunk = _chunk(CHUNK)

    def build(self) -> None:
        self._open_peer()
        for leg in self.legs:
            for size in self.plan.sizes:
                self._write_figure(leg, size)
        for leg in self.legs:
            for size in self.plan.sizes:
                self._read_figure(leg, size)
        local = next((leg for leg in self.legs if leg.local_dir is not None), None)
        if self.inline and self.legs:
            self._inline_figure(local or self.legs[0])
        if local is not None and self.plan.threads > 1:
            self._threads_figure(local)
            ramdisk = self._ramdisk_leg(local)
            if ramdisk is not None:
                self._threads_figure(ramdisk, figure_id="threads-ramdisk")

    def _ramdisk_leg(self, local: Leg) -> Leg | None:
        """The local leg's target again, on a RAM disk (None where there is none)."""
        if not os.path.isdir(RAMDISK) or not os.access(RAMDISK, os.W_OK):
            return None
        backend = RamDiskBackend()
        backend.start()
        self._cleanup.append(backend.stop)
        leg = Leg("ramdisk", backend, local.target, local.options)
        try:
            return leg.open()
        except Exception:  # no figure rather than no bench
            return None

    def run(self, on_step: Callable[[str], None] | None = None) -> None:
        try:
            run_interleaved(self.groups, self.plan.reps, on_step=on_step)
        finally:
            self.cleanup()

    @property
    def steps(self) -> int:
        return len(self.groups) * self.plan.reps

    def cleanup(self) -> None:
        while self._cleanup:
            action = self._cleanup.pop()
            with contextlib.suppress(Exception):  # cleanup must not hide the figures
                action()

    def _open_peer(self) -> None:
        """Point the peer at the local leg (its factory's directory, threshold, buffer)."""
        if self.peer is None:
            return
        local = next((leg for leg in self.legs if leg.local_dir is not None), None)
        if not self.legs:
            self.peer.error = "the target has no file-backed figures to compare with"
            return
        if local is None:
            self.peer.error = "the peer writes to the local file system: add local to --backend"
            return
        plan = self.plan
        try:
            self.peer.open(
                os.path.join(os.path.dirname(str(local.local_dir)), PEER),
                plan.inline_threshold,
                max(plan.write_buffer_size, plan.inline_threshold),
            )
            self.peer.run_probe()
            self.peer.warm_up(plan.peer_warmup)
        except Exception as exc:
            self.peer.error = f"{type(exc).__name__}: {exc}"[:500]
            return
        self.peer_leg = local

    def _peer_run(self, run: Callable[[], float]) -> Callable[[], float | None]:
        """A peer variant's repetition: a failing peer ends its own variants, not the figure
        (the target's samples stay; the peer's error is reported with the peer)."""

        def attempt() -> float | None:
            peer = self.peer
            if peer is None or peer.error:
                return None
            try:
                return run()
            except Exception as exc:
                peer.error = f"{type(exc).__name__}: {exc}"[:500]
                return None

        return attempt

    # ------------------------------------------------------------------ builders

    def _add(self, figure: Figure, cases: list[Case]) -> None:
        self.figures.append(figure)
        self.groups.append(cases)

    def _write_figure(self, leg: Leg, size: int) -> None:
        chunk = self.chunk
        same = FSSPEC if leg.object_store else FSSPEC_FSYNC
        batch = batch_of(size)
        figure = Figure(
            id=f"write/{leg.name}/{size // MIB}MiB",
            group="write",
            label=f"write {_size(size)}, {leg.name}",
            unit="GiB/s",
            amount=size * batch,
            scale=1 / GIB,
            leg=leg.name,
            size=size,
            baseline=same,
            ratios={f"{TARGET} / {same}": (TARGET, same)},
        )

        def run_target() -> float:
            total = 0.0
            for _ in range(batch):
                seconds, handle = target_write(leg.location, size, chunk)
                handle.discard_state()  # not timed
                total += seconds
            return total

        def run_fsspec(sync: bool) -> Callable[[], float]:
            def run() -> float:
                total = 0.0
                for _ in range(batch):
                    path = leg.raw_path()
                    try:
                        total += fsspec_write(leg.raw, path, size, chunk, sync=sync)
                    finally:
                        leg.raw.rm_file(path)
                return total

            return run

        cases = [Case(figure, TARGET, run_target)]
        if leg.object_store:
            cases.append(Case(figure, FSSPEC, run_fsspec(False)))
            figure.note = "an S3 PUT is durable once answered: the baseline does not sync"
        else:
            cases.append(Case(figure, FSSPEC_FSYNC, run_fsspec(True)))
            cases.append(Case(figure, FSSPEC, run_fsspec(False)))
            figure.ratios[f"{TARGET} / {FSSPEC}"] = (TARGET, FSSPEC)
            if leg.local_dir is not None:
                local_dir = leg.local_dir

                def run_disk() -> float:
                    total = 0.0
                    for _ in range(batch):
                        path = f"{local_dir}/{uuid.uuid4()}"
                        try:
                            total += disk_write(path, size, chunk)
                        finally:
                            os.unlink(path)
                    return total

                cases.append(Case(figure, DISK, run_disk))
                figure.ratios[f"{TARGET} / {DISK}"] = (TARGET, DISK)
            figure.note = "the target fsyncs each state file at close; so does fsspec+fsync"
            if self.peer is not None and leg is self.peer_leg:
                peer = self.peer
                cases.append(
                    Case(figure, PEER, self._peer_run(lambda: peer.write(size, batch, CHUNK)))
                )
                cases.append(
                    Case(figure, JAVA_FSYNC,
                         self._peer_run(lambda: peer.raw_write(size, batch, CHUNK)))
                )  # fmt: skip
                figure.ratios[f"{TARGET} / {PEER}"] = (TARGET, PEER)
                figure.note += (
                    f"; {PEER}: Flink's FsCheckpointStateOutputStream, timed in the JVM; "
                    f"{JAVA_FSYNC}: the JVM's FileOutputStream + getFD().sync()"
                )
        if size <= 16 * MIB:  # a warm-up run of each variant (large ones warm up by themselves)
            for case in cases:
                case.prepare = case.run
        self._add(figure, cases)

    def _read_figure(self, leg: Leg, size: int) -> None:
        chunk = self.chunk
        batch = batch_of(size)
        figure = Figure(
            id=f"read/{leg.name}/{size // MIB}MiB",
            group="read",
            label=f"read {_size(size)}, {leg.name}",
            unit="GiB/s",
            amount=size * batch,
            scale=1 / GIB,
            leg=leg.name,
            size=size,
            baseline=FSSPEC,
            ratios={f"{TARGET} / {FSSPEC}": (TARGET, FSSPEC)},
        )
        state: dict[str, Any] = {}

        def prepare() -> None:
            if "handle" not in state:
                _, state["handle"] = target_write(leg.location, size, chunk)
                self._cleanup.append(state["handle"].discard_state)
                path = leg.raw_path()
                fsspec_write(leg.raw, path, size, chunk, sync=False)
                state["path"] = path
                self._cleanup.append(lambda: leg.raw.rm_file(path))

        def run_target() -> float:
            return sum(target_read(state["handle"], size) for _ in range(batch))

        def run_fsspec() -> float:
            return sum(fsspec_read(leg.raw, state["path"], size) for _ in range(batch))

        self._add(
            figure,
            [Case(figure, TARGET, run_target, prepare), Case(figure, FSSPEC, run_fsspec, prepare)],
        )

    def _inline_figure(self, leg: Leg) -> None:
        plan = self.plan
        data = _chunk(plan.inline_size)
        pieces = [data[i : i + plan.inline_write] for i in range(0, len(data), plan.inline_write)]
        figure = Figure(
            id="inline",
            group="inline",
            label=f"inline {plan.inline_size} B in {plan.inline_write} B writes",
            unit="states/s",
            amount=0.0,
            leg=leg.name,
            size=plan.inline_size,
            baseline=BYTES_IO,
            ratios={f"{BYTES_IO} / {TARGET}": (BYTES_IO, TARGET)},
            note=f"inline threshold {plan.inline_threshold}; cost = time per state / io.BytesIO's",
        )
        location = leg.location

        def calibrate() -> float:
            # warm-up, untimed: sets how many states one repetition writes
            seconds = inline_states(location, pieces, 200)
            per_state = seconds / 200
            count = int(plan.inline_seconds / per_state) if per_state > 0 else 200_000
            figure.amount = float(min(max(count, 20), 200_000))
            return seconds

        def run_target() -> float:
            return inline_states(location, pieces, int(figure.amount))

        def run_bytesio() -> float:
            return bytesio_states(pieces, int(figure.amount))

        cases = [Case(figure, TARGET, run_target, calibrate), Case(figure, BYTES_IO, run_bytesio)]
        if self.peer is not None and self.peer_leg is not None:
            peer = self.peer

            def run_peer() -> float:
                return float(peer.inline(plan.inline_size, plan.inline_write, int(figure.amount)))

            cases.append(Case(figure, PEER, self._peer_run(run_peer)))
            figure.ratios[f"{TARGET} / {PEER}"] = (TARGET, PEER)
            figure.note += (
                f"; {PEER}: Flink's FsCheckpointStreamFactory (threshold "
                f"{plan.inline_threshold}), the same states, timed in the JVM"
            )
        self._add(figure, cases)

    def _threads_figure(self, leg: Leg, figure_id: str = "threads") -> None:
        plan = self.plan
        many = plan.threads
        figure = Figure(
            id=figure_id,
            group="threads",
            label=(
                f"{plan.thread_states} x {_size(plan.thread_state_size)} states, "
                f"1 vs {many} threads, {leg.name}"
            ),
            unit="GiB/s",
            amount=plan.thread_states * plan.thread_state_size,
            scale=1 / GIB,
            leg=leg.name,
            size=plan.thread_state_size,
            ratios={
                f"{TARGET} {many} / 1": (f"{TARGET} x{many}", f"{TARGET} x1"),
                f"{FSSPEC_FSYNC} {many} / 1": (f"{FSSPEC_FSYNC} x{many}", f"{FSSPEC_FSYNC} x1"),
            },
            note="no lock may be held around I/O; fsspec+fsync shows what this machine allows",
        )
        chunk = self.chunk
        size = plan.thread_state_size

        def one_target(index: int) -> None:
            _, handle = target_write(leg.location, size, chunk)
            handle.discard_state()

        def one_fsspec(index: int) -> None:
            path = leg.raw_path()
            try:
                fsspec_write(leg.raw, path, size, chunk, sync=True)
            finally:
                leg.raw.rm_file(path)

        def runner(work: Callable[[int], None], threads: int) -> Callable[[], float]:
            def run() -> float:
                started = time.perf_counter()
                if threads == 1:
                    for i in range(plan.thread_states):
                        work(i)
                else:
                    with ThreadPoolExecutor(max_workers=threads) as pool:
                        list(pool.map(work, range(plan.thread_states)))
                return time.perf_counter() - started

            return run

        cases = [
            Case(figure, f"{TARGET} x1", runner(one_target, 1)),
            Case(figure, f"{TARGET} x{many}", runner(one_target, many)),
            Case(figure, f"{FSSPEC_FSYNC} x1", runner(one_fsspec, 1)),
            Case(figure, f"{FSSPEC_FSYNC} x{many}", runner(one_fsspec, many)),
        ]
        self._add(figure, cases)


def batch_of(size: int) -> int:
    """States per repetition of a file-backed figure: enough for ``BATCH_BYTES`` (a 1 MiB
    state takes about a millisecond, too short to time alone on a busy machine)."""
    return max(1, BATCH_BYTES // size)


def _size(size: int) -> str:
    if size >= GIB and size % GIB == 0:
        return f"{size // GIB} GiB"
    if size >= MIB and size % MIB == 0:
        return f"{size // MIB} MiB"
    return f"{size} B"


# --------------------------------------------------------------------------- requests


def requests_per_checkpoint(figures: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per checkpoint of a budget run: requests sent (first attempts) and the minimum.

    A checkpoint is its ``location``, ``tasks`` and ``metadata`` phases. The minimum on an
    object store: one PutObject per file-backed stream (inline state costs nothing) and one
    for ``_metadata``; an object store needs no directories. Restores are listed with their
    own minimum: one request that finds ``_metadata`` (resolving a pointer must fail when
    nothing is there, PTR-5, so it cannot wait for the read), one GET of it and one GET per
    file-backed handle.
    """
    from ckptconform.budget.limits import first_attempts

    rows: list[dict[str, Any]] = []
    by_checkpoint: dict[int, list[dict[str, Any]]] = {}
    for phase in figures:
        name = str(phase["name"])
        if name.startswith("checkpoint ") and phase["checkpoint_id"] is not None:
            by_checkpoint.setdefault(int(phase["checkpoint_id"]), []).append(phase)
    for checkpoint_id, phases in sorted(by_checkpoint.items()):
        operations: dict[str, int] = {}
        for phase in phases:
            for op, n in first_attempts(phase).items():
                operations[op] = operations.get(op, 0) + n
        file_streams = sum(int(p.get("file_streams", 0)) for p in phases)
        rows.append(
            {
                "what": f"checkpoint {checkpoint_id}",
                "kind": "checkpoint",
                "requests": sum(operations.values()),
                "minimum": file_streams + 1,
                "file_streams": file_streams,
                "operations": dict(sorted(operations.items())),
                "completed": all(p["completed"] for p in phases),
            }
        )
    restores: dict[str, list[dict[str, Any]]] = {}
    for phase in figures:
        if str(phase["kind"]).startswith("restore_"):
            restores.setdefault(str(phase["name"]).rsplit(":", 1)[0], []).append(phase)
    for name, phases in restores.items():
        operations = {}
        for phase in phases:
            for op, n in first_attempts(phase).items():
                operations[op] = operations.get(op, 0) + n
        handles = sum(int(p.get("file_handles", 0)) for p in phases)
        rows.append(
            {
                "what": name,
                "kind": "restore",
                "requests": sum(operations.values()),
                "minimum": handles + 2,
                "file_streams": handles,
                "operations": dict(sorted(operations.items())),
                "completed": all(p["completed"] for p in phases),
            }
        )
    return rows
