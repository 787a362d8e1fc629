"""One JVM per process, started on first use through py4j, stopped when the process exits.

``jvm()`` returns the py4j view of a JVM that runs Flink 2.3.0's jars (``ckptconform.flink.jars``):
the gateway listens on 127.0.0.1 with an auth token, the JVM ends when its stdin closes
(``--die-on-broken-pipe``), and an ``atexit`` hook closes the gateway, closes that stdin and
waits. py4j's sockets do not survive a fork: a process that finds a gateway started by another
process id (a forked child) starts its own and leaves the parent's alone. At the fork the child
also cuts its copy of the parent's gateway off (its sockets are never shut down there, and
the gateway counts as disconnected): a Java object the child inherited then raises instead of
talking to the parent's JVM, where a command, or the release py4j sends when the child's copy
of an object is collected, would act on the parent's objects. Whoever keeps Java objects (the
Flink targets' storages and handles) makes them anew in a process of another id.

``java_errors(action)`` turns Java exceptions into the built-in exception types that the
contract (``ckptstore.api``) names, by the Java class hierarchy: ``NullPointerException`` ->
``TypeError``, ``IllegalArgumentException`` -> ``ValueError``, ``FileNotFoundException`` /
``NoSuchFileException`` -> ``FileNotFoundError``, ``FileAlreadyExistsException`` ->
``FileExistsError``, any other ``IOException`` -> ``OSError``, ``IllegalStateException`` ->
``ValueError``, ``UnsupportedOperationException`` -> both ``OSError`` and ``ValueError`` (like
Python's ``io.UnsupportedOperation``); anything else -> ``RuntimeError``. The message names the
action, the Java class and its message (and the first cause's).

The JVM's stderr (log4j at WARN) goes to ``$CKPTCONFORM_FLINK_LOG`` when that is set, else
nowhere.
"""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

from ckptconform.flink import jars

__all__ = [
    "JavaError",
    "JavaIOError",
    "JavaTypeError",
    "gateway",
    "java_errors",
    "jvm",
    "stop",
]


class JavaError(Exception):
    """A Java exception thrown by Flink, re-raised as the contract's built-in type."""

    java_class: str = ""
    java_message: str | None = None


class JavaIOError(JavaError, OSError):
    """``java.io.IOException`` (and anything else the gateway cannot do)."""


class JavaFileNotFoundError(JavaError, FileNotFoundError):
    """``java.io.FileNotFoundException`` / ``java.nio.file.NoSuchFileException``."""


class JavaFileExistsError(JavaError, FileExistsError):
    """``java.nio.file.FileAlreadyExistsException``."""


class JavaNullPointerError(JavaError, TypeError):
    """``java.lang.NullPointerException``: Flink's ``checkNotNull``."""


class JavaIllegalArgumentError(JavaError, ValueError):
    """``java.lang.IllegalArgumentException``: Flink's ``checkArgument``."""


class JavaIllegalStateError(JavaError, ValueError):
    """``java.lang.IllegalStateException``: Flink's ``checkState``."""


class JavaUnsupportedOperationError(JavaError, OSError, ValueError):
    """``java.lang.UnsupportedOperationException`` (like ``io.UnsupportedOperation``)."""


class JavaRuntimeError(JavaError, RuntimeError):
    """Any other Java exception."""


class JavaTypeError(JavaError, TypeError, ValueError):
    """A Python value that the Java signature cannot take (a str for a ``long``, ...)."""


#: Java class -> Python class; the first class of the thrown exception's hierarchy wins.
_MAPPING: dict[str, type[JavaError]] = {
    "java.io.FileNotFoundException": JavaFileNotFoundError,
    "java.nio.file.NoSuchFileException": JavaFileNotFoundError,
    "java.nio.file.FileAlreadyExistsException": JavaFileExistsError,
    "java.io.IOException": JavaIOError,
    "java.lang.NullPointerException": JavaNullPointerError,
    "java.lang.IllegalArgumentException": JavaIllegalArgumentError,
    "java.lang.IllegalStateException": JavaIllegalStateError,
    "java.lang.UnsupportedOperationException": JavaUnsupportedOperationError,
}


@dataclass
class _Gateway:
    gateway: Any
    process: subprocess.Popen[bytes]
    pid: int
    log: Any


_lock = threading.Lock()
_current: _Gateway | None = None
_registered = False


_collect_connection: Any = None


def _before_fork() -> None:
    """py4j shuts a connection's socket down when the connection is collected: in a child,
    its copies of the parent's connections (the idle ones, and those of threads that do not
    exist there) must not be, or the parent's sockets would be shut down under it."""
    global _collect_connection
    py4j: Any = sys.modules.get("py4j.java_gateway")
    if py4j is not None and py4j._garbage_collect_connection is not None:
        _collect_connection = py4j._garbage_collect_connection
        py4j._garbage_collect_connection = None


def _after_fork_in_parent() -> None:
    py4j: Any = sys.modules.get("py4j.java_gateway")
    if py4j is not None and _collect_connection is not None:
        py4j._garbage_collect_connection = _collect_connection


def _after_fork_in_child() -> None:
    """Leave the parent's JVM to the parent (see the module docstring)."""
    global _lock
    _lock = threading.Lock()
    current = _current
    if current is not None:
        client = current.gateway._gateway_client
        _inherited.extend(client.deque)  # kept: collected, they would shut sockets down
        client.deque = type(client.deque)()
        client.is_connected = False


_inherited: list[Any] = []
os.register_at_fork(
    before=_before_fork,
    after_in_parent=_after_fork_in_parent,
    after_in_child=_after_fork_in_child,
)


def _log4j_config() -> str:
    path = jars.cache_dir() / "log4j2-ckptconform.properties"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(
            "rootLogger.level = WARN\n"
            "rootLogger.appenderRef.stderr.ref = stderr\n"
            "appender.stderr.name = stderr\n"
            "appender.stderr.type = Console\n"
            "appender.stderr.target = SYSTEM_ERR\n"
            "appender.stderr.layout.type = PatternLayout\n"
            "appender.stderr.layout.pattern = %d{HH:mm:ss,SSS} %-5p %c{1} - %m%n\n"
        )
        tmp.replace(path)
    return str(path)


def _start() -> _Gateway:
    reason = jars.unavailable_reason(download=True)
    if reason is not None:
        raise jars.FlinkUnavailableError(reason)
    from py4j.java_gateway import GatewayParameters, JavaGateway, launch_gateway

    classpath = os.pathsep.join(str(p) for p in jars.ensure_jars())
    java_home = os.environ.get("JAVA_HOME")
    java = os.path.join(java_home, "bin", "java") if java_home else "java"
    if java_home and not os.access(java, os.X_OK):
        java = "java"
    log_path = os.environ.get("CKPTCONFORM_FLINK_LOG")
    log = open(log_path, "ab") if log_path else subprocess.DEVNULL  # noqa: SIM115
    port, token, process = launch_gateway(
        port=0,
        jarpath=jars.py4j_jar() or "",
        classpath=classpath,
        javaopts=[
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-Xms32m",
            "-Xmx1g",
            f"-Dlog4j2.configurationFile={_log4j_config()}",
            "-Dlog4j2.statusLoggerLevel=OFF",
        ],
        die_on_exit=True,
        redirect_stderr=log,
        enable_auth=True,
        java_path=java,
        return_proc=True,
    )
    gw = JavaGateway(
        gateway_parameters=GatewayParameters(
            port=port, auth_token=token, auto_convert=True, eager_load=True
        )
    )
    return _Gateway(gateway=gw, process=process, pid=os.getpid(), log=log)


def gateway() -> Any:
    """This process's ``JavaGateway``, started on first use."""
    global _current, _registered
    _keep_pyspark_hook_off()
    current = _current
    if current is not None and current.pid == os.getpid():
        return current.gateway
    with _lock:
        current = _current
        if current is None or current.pid != os.getpid():
            # a forked child never touches the parent's sockets: it starts its own JVM
            current = _start()
            _current = current
            if not _registered:
                atexit.register(stop)
                _registered = True
        return current.gateway


def _keep_pyspark_hook_off() -> None:
    """Let this gateway's answers bypass the hook PySpark puts on py4j in a process that made a
    SparkSession: that hook looks Java exceptions up in Spark's JVM, so one of Flink's would turn
    into an ``AssertionError`` (no Spark running) or be asked about in the wrong JVM, and
    py4j's iterators, which end on a Java exception, would fail. Checked on every use, as
    each new SparkSession puts the hook back; other gateways still go through it."""
    import py4j.java_gateway
    import py4j.protocol

    hooked = py4j.java_gateway.get_return_value
    if hooked is py4j.protocol.get_return_value or getattr(hooked, "_ckptconform", False):
        return
    plain = py4j.protocol.get_return_value

    def get_return_value(answer: str, gateway_client: Any, *args: Any) -> Any:
        current = _current
        ours = current is not None and gateway_client is current.gateway._gateway_client
        return (plain if ours else hooked)(answer, gateway_client, *args)

    get_return_value._ckptconform = True  # type: ignore[attr-defined]
    py4j.java_gateway.get_return_value = get_return_value


def jvm() -> Any:
    """The py4j ``JVMView`` of this process's JVM."""
    return gateway().jvm


def stop() -> None:
    """Close the gateway and end the JVM this process started (idempotent)."""
    global _current
    with _lock:
        current = _current
        if current is None or current.pid != os.getpid():
            return
        _current = None
    client = getattr(current.gateway, "_gateway_client", None)
    with suppress(Exception):
        current.gateway.close(keep_callback_server=False, close_callback_server_connections=True)
    if client is not None:
        # py4j's close() leaves is_connected set: Java objects still alive in Python would then
        # try to release themselves through a JVM that is gone (connection refused, logged as
        # errors from finalizers); disconnected, they stay quiet and calls raise OSError.
        client.is_connected = False
    try:
        if current.process.stdin is not None:
            current.process.stdin.close()  # --die-on-broken-pipe: the JVM ends
        current.process.wait(timeout=10)
    except Exception:
        current.process.kill()
        current.process.wait(timeout=10)
    if current.log is not subprocess.DEVNULL:
        current.log.close()


def _hierarchy(java_exception: Any) -> list[str]:
    names: list[str] = []
    cls = java_exception.getClass()
    while cls is not None and len(names) < 12:
        names.append(str(cls.getName()))
        cls = cls.getSuperclass()
    return names


def translate(action: str, error: BaseException) -> BaseException:
    """The contract's exception for a py4j error raised by ``action``."""
    from py4j.protocol import Py4JError, Py4JJavaError, Py4JNetworkError

    if isinstance(error, Py4JJavaError):
        java_exception = error.java_exception
        try:
            hierarchy = _hierarchy(java_exception)
            message = java_exception.getMessage()
            cause = java_exception.getCause()
            cause_text = (
                f" (caused by {cause.getClass().getName()}: {cause.getMessage()})"
                if cause is not None
                else ""
            )
        except Exception:  # the gateway is gone: say what we know
            return JavaIOError(f"{action}: {error}")
        kind: type[JavaError] = JavaRuntimeError
        for name in hierarchy:
            if name in _MAPPING:
                kind = _MAPPING[name]
                break
        mapped = kind(f"{action}: {hierarchy[0]}: {message}{cause_text}")
        mapped.java_class = hierarchy[0]
        mapped.java_message = None if message is None else str(message)
        return mapped
    if isinstance(error, Py4JNetworkError):
        return JavaIOError(f"{action}: the JVM gateway failed: {error}")
    if isinstance(error, Py4JError):
        return JavaRuntimeError(f"{action}: py4j: {error}")
    return error


@contextmanager
def java_errors(action: str) -> Iterator[None]:
    """Re-raise py4j errors of the block as the contract's built-in exception types."""
    from py4j.protocol import Py4JError

    _keep_pyspark_hook_off()
    try:
        yield
    except Py4JError as exc:
        raise translate(action, exc) from None
