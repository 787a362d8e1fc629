"""The Spark leg: one SparkSession per run, on which the ``SPK`` clauses run their workloads.

The leg runs when ``--backend`` selects ``spark`` (as its default does).
``--spark-master`` picks the cluster (default ``local-cluster[2,1,1024]``: two executor JVMs,
each with its own Python workers; ``local[N]`` and any cluster URL work too; ``none`` turns the
leg off). The session starts on first use, is shared by every Spark test of the run and is
stopped, JVM included, when the run ends.

How the session is set up, and why:

- Every task runs in a fresh Python worker (``spark.python.worker.reuse=false``): forked by the
  executor's PySpark daemon, it has never seen a storage, so no task inherits another's
  configuration, caches or registries. That is the hardest case a storage meets on a cluster.
  A load run (``ckptconform budget``) asks for ``reuse_python_workers``: its own session reuses
  them, as a TaskManager keeps its subtasks' process.
- ``spark.task.maxFailures=1``: a failing task fails its job at once; Spark retrying it would
  hide a flaky storage.
- Local masters stay on loopback (``SPARK_LOCAL_IP`` and the driver's host and bind address are
  127.0.0.1) and use this interpreter for their Python workers, with this process's import path
  (so a target importable here, say from the working directory, is importable on executors).
  For a cluster URL the cluster's own configuration applies: install the target there and set
  ``PYSPARK_PYTHON`` as for any PySpark job; ``--spark-conf KEY=VALUE`` adds settings.

Tasks are module-level functions of ``ckptconform.workload`` applied to one item each (one
partition per item); they return values, failures included, so a job fails only when Spark
itself does (``SparkJobError``, with the first lines of the worker's exception).
``run_together`` is a checkpoint's burst: one barrier-mode stage (``RDD.barrier()``) of one
partition per slot, each playing its share of the subtasks on threads
(``workload.play_together``), released when every partition has passed
``BarrierTaskContext.barrier()``; with a slot per subtask, each partition is one subtask.

The JVM's own output (Spark's log4j banner, the JVM's module warnings, Hadoop's native-library
notice) goes to a log file, not the terminal: ``$CKPTCONFORM_SPARK_LOG``, else a temporary file
that a start-up failure names (removed when a session that started is stopped);
``CKPTCONFORM_SPARK_LOG=-`` leaves it on the terminal.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import sparkrun
from sparkrun import is_local_master

__all__ = [
    "DEFAULT_MASTER",
    "DISABLED",
    "SparkJobError",
    "SparkLeg",
    "SparkUnavailableError",
    "is_local_master",
    "parse_spark_conf",
    "spark_scheduler",
    "split_evenly",
]

DEFAULT_MASTER = "local-cluster[2,1,1024]"
#: The suite's modules whose tests run on the Spark leg (the ``spark`` fixture): with
#: ``--dist loadgroup`` they all go to one worker, one cluster per run.
SPARK_MODULES = ("test_spk.py",)
#: ``--spark-master=none`` turns the Spark leg off.
DISABLED = "none"
#: How long to wait for the executors of a ``local-cluster`` master to register.
EXECUTOR_WAIT_SECONDS = 90.0
#: How long one workload job may run before it is cancelled.
JOB_TIMEOUT_SECONDS = 300.0

_T = TypeVar("_T")
_R = TypeVar("_R")


class SparkUnavailableError(Exception):
    """The Spark leg cannot run here; ``str(exc)`` is the one-line reason."""


class SparkJobError(Exception):
    """A Spark job failed in Spark itself (not a task's own, reported, failure)."""


def parse_spark_conf(values: Sequence[str]) -> dict[str, str]:
    """``KEY=VALUE`` strings into a mapping; a value without ``=`` is a ``ValueError``."""
    conf: dict[str, str] = {}
    for value in values:
        key, sep, setting = value.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--spark-conf wants KEY=VALUE, got {value!r}")
        conf[key.strip()] = setting
    return conf


class SparkLeg:
    """The run's SparkSession: started once on first use, stopped at the end of the run."""

    def __init__(
        self,
        master: str = DEFAULT_MASTER,
        conf: Mapping[str, str] | None = None,
        *,
        reuse_python_workers: bool = False,
    ):
        self.master = (master or DEFAULT_MASTER).strip()
        self.conf = dict(conf or {})
        self.reuse_python_workers = reuse_python_workers
        self.tasks_run = 0
        self.jobs_run = 0
        self.executor_ids: list[str] = []
        #: where the JVM's output goes (``jvm_log_path``), chosen when the session starts
        self.jvm_log: str | None = None
        self.python_workers: set[int] = set()
        self.startup_seconds: float | None = None
        self._lock = threading.Lock()
        self._session: Any = None
        self._start_error: str | None = None
        self._availability: str | bool | None = False  # False: not asked yet

    # ------------------------------------------------------------------ lifecycle

    @property
    def enabled(self) -> bool:
        return self.master.lower() != DISABLED

    def availability(self) -> str | None:
        """``None`` when the leg can start here, else a one-line reason (asked once)."""
        if self._availability is False:
            self._availability = self._check()
        return self._availability  # type: ignore[return-value]

    def _check(self) -> str | None:
        if not self.enabled:
            return f"the Spark leg is turned off (--spark-master={self.master})"
        if importlib.util.find_spec("pyspark") is None:
            return "pyspark is not installed; pip install 'checkpoint-conformance[spark]'"
        return sparkrun.spark_unavailable_reason()

    @property
    def started(self) -> bool:
        return self._session is not None

    @property
    def start_failed(self) -> bool:
        """Whether a start was tried and failed (``start`` raises the same reason again)."""
        return self._start_error is not None

    def start(self) -> None:
        """Start the session once; a failure is remembered and raised again."""
        with self._lock:
            if self._session is not None:
                return
            if self._start_error is None:
                self._start_error = self.availability()
            if self._start_error is None:
                began = time.monotonic()
                self.jvm_log = jvm_log_path()
                try:
                    with sparkrun.jvm_output_to(self.jvm_log):
                        self._session = self._build_session()
                    self.executor_ids = sparkrun.await_executors(
                        self._session, self.master, EXECUTOR_WAIT_SECONDS
                    )
                except Exception as exc:
                    self._start_error = (
                        f"Spark master {self.master} did not start: {type(exc).__name__}: "
                        + _first_lines(str(exc), 3)
                        + (f" (the JVM's output: {self.jvm_log})" if self.jvm_log else "")
                    )
                    self._stop_session()
                else:
                    self.startup_seconds = time.monotonic() - began
                    return
            raise SparkUnavailableError(self._start_error)

    def _build_session(self) -> Any:
        settings = {
            "spark.python.worker.reuse": str(self.reuse_python_workers).lower(),
            "spark.task.maxFailures": "1",
            **self.conf,
        }
        return sparkrun.build_session(self.master, "ckptconform", settings)

    def stop(self) -> None:
        """Stop the session and its JVM (idempotent; also when never started)."""
        with self._lock:
            self._stop_session()
            if (
                self._start_error is None
                and self.jvm_log
                and "CKPTCONFORM_SPARK_LOG" not in os.environ
            ):
                with contextlib.suppress(OSError):  # a run that went well leaves no log behind
                    os.unlink(self.jvm_log)

    def _stop_session(self) -> None:
        session, self._session = self._session, None
        sparkrun.stop_session(session)

    # ------------------------------------------------------------------ jobs

    def run(
        self,
        function: Callable[[_T], _R],
        items: Sequence[_T],
        timeout: float = JOB_TIMEOUT_SECONDS,
    ) -> list[_R]:
        """Apply ``function`` to every item in its own Spark task; results in item order.

        A job that runs longer than ``timeout`` seconds is cancelled and raises
        ``SparkJobError``: a storage that retries forever must not hang the run.
        """
        self.start()
        if not items:
            return []
        indexed = list(enumerate(items))

        def apply(pairs: Any) -> Any:
            for index, item in pairs:
                yield index, function(item)

        context = self._session.sparkContext
        rdd = context.parallelize(indexed, len(indexed)).mapPartitions(apply)
        return self._collect(rdd, len(indexed), timeout)

    def run_together(
        self,
        function: Callable[[_T, Callable[[], None]], _R],
        items: Sequence[_T],
        timeout: float = JOB_TIMEOUT_SECONDS,
    ) -> list[_R]:
        """Every item's subtask at once: a barrier stage of one partition per slot.

        Each partition plays its share of the items on threads (``play_together``), released
        when all of them are ready and every partition has reached the stage's barrier.
        """
        self.start()
        if not items:
            return []
        groups = split_evenly(list(enumerate(items)), min(self.slots(), len(items)))

        def apply(partition: Any) -> Any:
            from pyspark import BarrierTaskContext

            from ckptconform.workload import play_together

            barrier = BarrierTaskContext.get().barrier
            for group in partition:
                results = play_together(function, [item for _, item in group], barrier)
                yield from zip((index for index, _ in group), results, strict=True)

        context = self._session.sparkContext
        rdd = context.parallelize(groups, len(groups)).barrier().mapPartitions(apply)
        return self._collect(rdd, len(items), timeout)

    def slots(self) -> int:
        """How many tasks the cluster runs at once (its default parallelism)."""
        self.start()
        return max(1, int(self._session.sparkContext.defaultParallelism))

    def _collect(self, rdd: Any, tasks: int, timeout: float) -> list[Any]:
        """Collect ``(index, result)`` pairs of one job, cancelled after ``timeout`` seconds."""
        context = self._session.sparkContext
        group = f"ckptconform-{self.jobs_run + 1}-{id(rdd):x}"
        outcome: dict[str, Any] = {}

        def collect() -> None:
            context.setJobGroup(group, "ckptconform workload", interruptOnCancel=True)
            try:
                outcome["pairs"] = rdd.collect()
            except Exception as exc:
                outcome["error"] = exc

        worker = threading.Thread(target=collect, name=group, daemon=True)
        worker.start()
        worker.join(timeout)
        if worker.is_alive():
            context.cancelJobGroup(group)
            worker.join(30)
            raise SparkJobError(
                f"Spark job on {self.master} did not finish within {timeout:.0f} s and was "
                "cancelled"
            )
        if "error" in outcome:
            exc = outcome["error"]
            raise SparkJobError(
                f"Spark job on {self.master} failed: {type(exc).__name__}: "
                + _python_error(str(exc))
            )
        with self._lock:
            self.jobs_run += 1
            self.tasks_run += tasks
        results = [result for _, result in sorted(outcome["pairs"], key=lambda pair: pair[0])]
        for result in results:
            pid = getattr(result, "pid", None)
            if isinstance(pid, int):
                self.python_workers.add(pid)
        return results

    # ------------------------------------------------------------------ reporting

    def describe(self) -> str:
        """One line for the run header."""
        if not self.started:
            return f"master {self.master} (started on first use)"
        return (
            f"master {self.master}, {len(self.executor_ids)} executor(s) "
            f"{','.join(self.executor_ids) or '-'}, started in {self.startup_seconds or 0:.1f} s"
        )

    def info(self) -> dict[str, Any]:
        """What the report header says about the leg."""
        return {
            "master": self.master,
            "conf": dict(self.conf),
            "started": self.startup_seconds is not None,
            "executors": list(self.executor_ids),
            "jobs": self.jobs_run,
            "tasks": self.tasks_run,
            "python_workers": len(self.python_workers),
            "startup_seconds": (
                None if self.startup_seconds is None else round(self.startup_seconds, 1)
            ),
        }


def split_evenly(items: Sequence[_T], parts: int) -> list[list[_T]]:
    """``items`` in ``parts`` contiguous groups whose sizes differ by at most one."""
    size, extra = divmod(len(items), max(1, parts))
    groups, start = [], 0
    for part in range(max(1, parts)):
        end = start + size + (1 if part < extra else 0)
        groups.append(list(items[start:end]))
        start = end
    return [group for group in groups if group]


def spark_scheduler(config: Any, log: Any) -> Any:
    """pytest-xdist's scheduler for ``--dist loadgroup``: each test a unit of its own, but
    the tests of :data:`SPARK_MODULES` one unit (one worker, one cluster)."""
    from xdist.scheduler import LoadGroupScheduling  # type: ignore[import-untyped]

    class SparkOnOneWorker(LoadGroupScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.partition("::")[0].rpartition("/")[2]
            return "spark leg" if module in SPARK_MODULES else nodeid

    return SparkOnOneWorker(config, log)


def jvm_log_path() -> str | None:
    """Where the JVM's output goes (module docstring); ``None``: to this process's stderr."""
    return sparkrun.jvm_log_path("CKPTCONFORM_SPARK_LOG", "ckptconform-spark-")


def _first_lines(text: str, count: int) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[:count])


def _python_error(text: str) -> str:
    """The worker's own exception out of a PySpark error text (its last non-frame lines)."""
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    tail = [line for line in lines if not line.startswith((" ", "\t", "Traceback"))]
    return " | ".join(tail[-3:]) if tail else _first_lines(text, 3)
