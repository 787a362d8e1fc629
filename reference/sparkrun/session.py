"""A SparkSession's life: built for its master, its executors awaited, stopped with its JVM.

For local masters (``local``, ``local[N]``, ``local-cluster[E,C,M]``) the session stays on
loopback (``SPARK_LOCAL_IP`` and the driver's host and bind address are 127.0.0.1) and its
executors run this interpreter with this process's import path, so whatever is importable
here is importable there. Their JVMs (driver and executors) compile with the client compiler
only and collect with the serial collector (:data:`LOCAL_JVM_OPTIONS`): a local session lives for
seconds or minutes on a shared machine, where the server compiler's optimisations never repay
their CPU (it halves a short session's CPU time). For a cluster URL the cluster's own
configuration applies.

The JVM inherits file descriptor 2 when it is spawned; :func:`jvm_output_to` points it at a
log file meanwhile, so Spark's banner, the JVM's module warnings and Hadoop's native-library
notice go there and not to the user's terminal (:func:`jvm_log_path` picks the file).
"""

from __future__ import annotations

import contextlib
import os
import re
import site
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = [
    "LOCAL_JVM_OPTIONS",
    "ExecutorsMissingError",
    "await_executors",
    "build_session",
    "is_local_master",
    "jvm_log_path",
    "jvm_output_to",
    "own_import_path",
    "stop_session",
]

#: JVM options of a local master's driver and executors (module docstring); Spark's
#: ``defaultJavaOptions``, so ``spark.driver.extraJavaOptions`` and
#: ``spark.executor.extraJavaOptions`` still add to them (later options win).
LOCAL_JVM_OPTIONS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"

_LOCAL_CLUSTER = re.compile(r"^local-cluster\[\s*(\d+)\s*,")


class ExecutorsMissingError(Exception):
    """Fewer executors registered than the master promised, within the time allowed."""


def is_local_master(master: str) -> bool:
    """Whether the master runs on this machine (``local``, ``local[N]``, ``local-cluster[...]``)."""
    return master == "local" or master.startswith(("local[", "local-cluster["))


def own_import_path() -> list[str]:
    """Directories on ``sys.path`` that the executors' interpreter would not have by itself."""
    builtin = {
        os.path.realpath(p)
        for p in (
            *site.getsitepackages(),
            site.getusersitepackages(),
            sysconfig.get_path("stdlib"),
            sysconfig.get_path("platstdlib"),
            sysconfig.get_path("purelib"),
            sysconfig.get_path("platlib"),
        )
        if p
    }
    paths = []
    for entry in sys.path:
        path = os.path.realpath(entry or os.getcwd())
        if os.path.isdir(path) and path not in builtin and not path.endswith(".zip"):
            paths.append(path)
    return list(dict.fromkeys(paths))


def jvm_log_path(variable: str, prefix: str) -> str | None:
    """Where the JVM's output goes: the file ``$variable`` names, ``None`` (this process's
    stderr) when it is ``-``, else a new temporary file whose name starts with ``prefix``."""
    chosen = os.environ.get(variable)
    if chosen == "-":
        return None
    if chosen:
        return chosen
    handle, path = tempfile.mkstemp(prefix=prefix, suffix=".log")
    os.close(handle)
    return path


@contextlib.contextmanager
def jvm_output_to(path: str | None) -> Iterator[None]:
    """Point file descriptor 2 at ``path`` while the JVM is spawned (it inherits it and keeps
    it), then give this process its stderr back; ``None`` changes nothing."""
    if path is None:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    log = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.dup2(log, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(log)


def build_session(master: str, app_name: str, settings: Mapping[str, str]) -> Any:
    """A SparkSession on ``master`` with the UI off, the local-master settings (module
    docstring) and ``settings`` on top; its log level ERROR."""
    from pyspark.sql import SparkSession

    local = is_local_master(master)
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.executorEnv.PYTHONPATH", os.pathsep.join(own_import_path()))
    )
    if local:
        builder = (
            builder.config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.executorEnv.PYSPARK_PYTHON", os.environ["PYSPARK_PYTHON"])
            .config("spark.driver.defaultJavaOptions", LOCAL_JVM_OPTIONS)
            .config("spark.executor.defaultJavaOptions", LOCAL_JVM_OPTIONS)
        )
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def await_executors(session: Any, master: str, timeout: float) -> list[str]:
    """Wait until the executors have registered (all of a ``local-cluster``, one of a
    cluster; none for ``local[N]``, whose driver runs the tasks) and return their ids.

    Raises :class:`ExecutorsMissingError` after ``timeout`` seconds: a cluster without free
    resources would otherwise leave every job waiting for ever."""
    if master == "local" or master.startswith("local["):
        return []
    match = _LOCAL_CLUSTER.match(master)
    expected = int(match.group(1)) if match else 1
    deadline = time.monotonic() + timeout
    while True:
        ids = session.sparkContext._jsc.sc().getExecutorIds()
        if ids.size() >= expected:
            return sorted(str(ids.apply(i)) for i in range(ids.size()))
        if time.monotonic() > deadline:
            raise ExecutorsMissingError(
                f"{ids.size()} of {expected} executors registered within {timeout:.0f} s"
            )
        time.sleep(0.2)


def stop_session(session: Any) -> None:
    """Stop ``session`` (``None``: only the gateway) and end py4j's JVM, which
    ``SparkSession.stop`` leaves running until this process exits; a failing stop is
    swallowed, so that it cannot hide the result of what ran."""
    if session is not None:
        with contextlib.suppress(Exception):
            session.stop()
    try:
        from pyspark import SparkContext
    except ImportError:
        return
    gateway = getattr(SparkContext, "_gateway", None)
    if gateway is None:
        return
    process = getattr(gateway, "proc", None)
    with contextlib.suppress(Exception):
        gateway.shutdown()
    if process is not None:
        try:
            if process.stdin is not None:
                process.stdin.close()
            process.wait(timeout=20)
        except Exception:
            process.kill()
    SparkContext._gateway = None
    SparkContext._jvm = None
