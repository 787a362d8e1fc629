"""``ckptconform bench --peer flink``: Apache Flink 2.3.0's Java streams beside the target.

The peer is a small Java driver (``ckptconform/data/FlinkStreamBench.java``) that drives
Flink's own ``FsCheckpointStreamFactory`` (``createCheckpointStateOutputStream(EXCLUSIVE)``,
an ``FsCheckpointStateOutputStream``) and times it inside the JVM (``System.nanoTime``), so
neither the pipe nor Python is in Flink's figures. It is compiled with ``javac`` at first use
into the cache directory of Flink's jars (``ckptconform.flink.jars``: the jars of the
``apache-flink-libraries`` 2.3.0 wheel, fetched with pip on first use) and runs as one JVM for
the whole bench, answering one command per line with one JSON object per line.

The bench asks it for one repetition at a time, as one more variant of a figure
(``ckptconform.bench.measure``): its repetitions interleave with the target's, and the ratio
``target / flink`` is taken per repetition like every other ratio. Figures with a Flink
variant: file-backed writes on the local leg (Flink's wheel has no S3 file system), with the
JVM's own ``FileOutputStream`` + ``getFD().sync()`` beside it (``java+fsync``), and the inline
path (same state size, write size, threshold and write buffer as the target's).

What Flink syncs is measured, not assumed: ``probe`` writes one file-backed and one inline
state through a factory on a ``LocalFileSystem`` that counts its streams' ``flush``, ``sync``
and ``close`` calls. Flink 2.3.0's ``closeAndGetHandle()`` calls ``sync()`` on the file stream
before closing it (FLINK-36421, merged for Flink 2.0; seen in 2.3.0's bytecode), and
``LocalDataOutputStream.sync()`` is ``FileOutputStream.getFD().sync()``, an ``fsync(2)``: every
file-backed state is fsync-ed, as the reference does; inline state writes no file. The
comparison is therefore at the same durability; ``sync_note`` words what the probe found.

Without Java 17, a ``javac`` or Flink's jars, ``FlinkPeer.start`` raises
``PeerUnavailableError`` with one sentence, and the bench runs without the peer.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import IO, Any

__all__ = [
    "DRIVER",
    "FLINK",
    "JAVA_FSYNC",
    "MINIMUM_JAVA",
    "FlinkPeer",
    "PeerError",
    "PeerUnavailableError",
    "parse_reply",
    "sync_note",
]

FLINK = "flink"
JAVA_FSYNC = "java+fsync"
DRIVER = "FlinkStreamBench"
MINIMUM_JAVA = 17
#: seconds the JVM may take to start and answer its first line
START_TIMEOUT = 120.0
#: seconds one command may take (one repetition of a figure)
COMMAND_TIMEOUT = 600.0


class PeerUnavailableError(Exception):
    """The peer cannot run here; the message is the one-sentence reason."""


class PeerError(Exception):
    """A command of the peer failed (its answer had an ``error``, or the JVM went away)."""


def parse_reply(line: str) -> dict[str, Any]:
    """One answer of the driver: a JSON object; ``PeerError`` for an ``error`` answer."""
    try:
        reply = json.loads(line)
    except ValueError:
        raise PeerError(
            f"the Flink driver answered something that is not JSON: {line[:200]!r}"
        ) from None
    if not isinstance(reply, dict):
        raise PeerError(f"the Flink driver answered a JSON {type(reply).__name__}, not an object")
    if "error" in reply:
        raise PeerError(f"Flink driver: {reply['error']}")
    return reply


def seconds_of(reply: Mapping[str, Any]) -> float:
    """The ``seconds`` of a timed command's answer."""
    value = reply.get("seconds")
    if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
        raise PeerError(f"the Flink driver's answer has no seconds: {dict(reply)!r}")
    return float(value)


def sync_note(probe: Mapping[str, Any] | None) -> str:
    """What Flink syncs, in words, from the ``probe`` answer (or what could not be seen)."""
    if not probe:
        return "not probed"
    file_backed = probe.get("file_backed") or {}
    inline = probe.get("inline") or {}
    files = int(file_backed.get("files", 0))
    syncs = int(file_backed.get("sync", 0))
    stream = str(probe.get("local_stream", "")).rsplit(".", 1)[-1] or "the file stream"
    if files and syncs >= files:
        head = (
            "Flink fsyncs every file-backed state: closeAndGetHandle() calls sync() before "
            f"close (FLINK-36421), and {stream}.sync() is FileDescriptor.sync(), fsync(2) "
            f"(counted: {syncs / files:g} per state file); the reference fsyncs at close too, "
            "so both are compared at the same durability"
        )
    elif files:
        head = (
            f"Flink does not sync file-backed state ({syncs} sync() for {files} state files): "
            "compare it with fsspec, not fsspec+fsync"
        )
    else:
        head = "the probe's file-backed state wrote no file"
    inline_files = int(inline.get("files", 0))
    tail = (
        "; inline state writes no file (a ByteStreamStateHandle)"
        if not inline_files
        else f"; inline state opened {inline_files} file(s)"
    )
    return head + tail + "; neither fsyncs a state file's directory"


def _driver_source() -> bytes:
    return (resources.files("ckptconform.data") / f"{DRIVER}.java").read_bytes()


def _javac(java: str) -> str | None:
    """The ``javac`` next to ``java`` (a JDK), else the one on the PATH."""
    beside = Path(java).resolve().parent / "javac"
    if os.access(beside, os.X_OK):
        return str(beside)
    home = os.environ.get("JAVA_HOME")
    if home and os.access(Path(home) / "bin" / "javac", os.X_OK):
        return str(Path(home) / "bin" / "javac")
    return shutil.which("javac")


def _java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and os.access(Path(home) / "bin" / "java", os.X_OK):
        return str(Path(home) / "bin" / "java")
    return shutil.which("java")


class FlinkPeer:
    """One JVM running the driver for the whole bench; ``start`` first, ``close`` at the end."""

    name = FLINK

    def __init__(self) -> None:
        self.process: subprocess.Popen[str] | None = None
        self.hello: dict[str, Any] = {}
        self.opened: dict[str, Any] = {}
        self.probe: dict[str, Any] | None = None
        self.error: str | None = None
        self.classpath: str = ""
        self._answers: queue.Queue[str | None] = queue.Queue()
        self._noise: list[str] = []
        self._stderr: IO[bytes] | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ start

    def start(self) -> FlinkPeer:
        """Compile the driver if needed and start the JVM; ``PeerUnavailableError`` if not."""
        java = _java()
        from ckptconform.flink import jars
        from sparkrun import java_major_version

        major = java_major_version()
        if java is None or major is None:
            raise PeerUnavailableError(
                f"--peer flink needs Java {MINIMUM_JAVA} or newer on the PATH (or in "
                "JAVA_HOME); no java was found."
            )
        if major < MINIMUM_JAVA:
            raise PeerUnavailableError(
                f"--peer flink needs Java {MINIMUM_JAVA} or newer; found Java {major}."
            )
        javac = _javac(java)
        if javac is None:
            raise PeerUnavailableError(
                "--peer flink compiles its driver with javac, and there is no javac here "
                "(a JRE without the JDK)."
            )
        try:
            flink_jars = [str(p) for p in jars.ensure_jars()]
        except Exception as exc:  # FlinkUnavailableError or anything pip/zip raised
            raise PeerUnavailableError(f"--peer flink: {exc}") from None
        classes = self._compile(javac, flink_jars, jars.cache_dir() / "bench")
        self.classpath = os.pathsep.join([*flink_jars, str(classes)])
        self._launch(java)
        return self

    def _compile(self, javac: str, flink_jars: list[str], cache: Path) -> Path:
        source = _driver_source()
        digest = hashlib.sha256(source).hexdigest()[:16]
        classes = cache / f"{DRIVER}-{digest}"
        if (classes / f"{DRIVER}.class").is_file():
            return classes
        cache.mkdir(parents=True, exist_ok=True)
        with open(cache / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if (classes / f"{DRIVER}.class").is_file():
                return classes
            with tempfile.TemporaryDirectory(prefix="compile-", dir=cache) as tmp:
                src = Path(tmp) / f"{DRIVER}.java"
                src.write_bytes(source)
                out = Path(tmp) / "classes"
                out.mkdir()
                command = [javac, "--release", str(MINIMUM_JAVA), "-nowarn", "-cp",
                           os.pathsep.join(flink_jars), "-d", str(out), str(src)]  # fmt: skip
                try:
                    done = subprocess.run(
                        command, capture_output=True, text=True, timeout=300, check=False
                    )
                except (OSError, subprocess.TimeoutExpired) as exc:
                    raise PeerUnavailableError(f"--peer flink: javac failed: {exc}") from None
                if done.returncode != 0 or not (out / f"{DRIVER}.class").is_file():
                    first = (done.stderr or done.stdout).strip().splitlines()[:1] or ["?"]
                    raise PeerUnavailableError(
                        f"--peer flink: javac could not compile the driver: {first[0]}"
                    )
                shutil.rmtree(classes, ignore_errors=True)
                out.rename(classes)
        return classes

    def _launch(self, java: str) -> None:
        # the JVM's stderr (Flink's logging, a crash): kept for the error message; closed in
        # close(), as the process outlives this method
        self._stderr = tempfile.TemporaryFile(prefix="flink-peer-")  # noqa: SIM115
        try:
            self.process = subprocess.Popen(
                [java, "-Xms256m", "-cp", self.classpath, DRIVER],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                text=True,
                encoding="utf-8",
                bufsize=1,
            )
        except OSError as exc:
            raise PeerUnavailableError(f"--peer flink: java did not start: {exc}") from None
        reader = threading.Thread(
            target=self._read, args=(self.process,), name="flink-peer-reader", daemon=True
        )
        reader.start()
        try:
            self.hello = self._next(START_TIMEOUT)
        except PeerError as exc:
            self.close()
            raise PeerUnavailableError(
                f"--peer flink: the JVM did not start the driver: {exc}"
            ) from None

    def _read(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            text = line.strip()
            if text.startswith("{"):
                self._answers.put(text)
            elif text:
                self._noise.append(text)
        self._answers.put(None)

    def _next(self, timeout: float) -> dict[str, Any]:
        try:
            line = self._answers.get(timeout=timeout)
        except queue.Empty:
            raise PeerError(f"the Flink driver did not answer within {timeout:.0f} s") from None
        if line is None:
            self._answers.put(None)  # every later request sees the end too
            raise PeerError(f"the Flink driver's JVM ended{self._stderr_tail()}")
        return parse_reply(line)

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        with contextlib.suppress(OSError, ValueError):
            self._stderr.seek(0)
            lines = self._stderr.read().decode("utf-8", "replace").strip().splitlines()
            if lines:
                return ": " + " / ".join(lines[-3:])[:400]
        return ""

    # ------------------------------------------------------------------ commands

    def request(self, command: str, timeout: float = COMMAND_TIMEOUT) -> dict[str, Any]:
        """Send one command line and return its answer (``PeerError`` for an error)."""
        process = self.process
        if process is None or process.stdin is None:
            raise PeerError("the Flink driver is not running")
        with self._lock:
            try:
                process.stdin.write(command + "\n")
                process.stdin.flush()
            except (OSError, ValueError) as exc:
                raise PeerError(f"the Flink driver's JVM is gone: {exc}") from None
            return self._next(timeout)

    def open(self, directory: str, threshold: int, write_buffer: int) -> dict[str, Any]:
        """A factory writing under ``directory`` (local), with Flink's threshold and buffer."""
        if "\n" in directory:
            raise PeerError("a directory with a newline cannot be sent to the driver")
        self.opened = self.request(f"open {int(threshold)} {int(write_buffer)} {directory}")
        return self.opened

    def write(self, size: int, count: int, chunk: int) -> float:
        return seconds_of(self.request(f"write {size} {count} {chunk}"))

    def raw_write(self, size: int, count: int, chunk: int) -> float:
        return seconds_of(self.request(f"raw {size} {count} {chunk}"))

    def inline(self, size: int, write: int, count: int) -> float:
        return seconds_of(self.request(f"inline {size} {write} {count}"))

    def warm_up(self, seconds: float) -> float:
        return seconds_of(self.request(f"warmup {seconds}"))

    def run_probe(self) -> dict[str, Any]:
        self.probe = self.request("probe")
        return self.probe

    # ------------------------------------------------------------------ end

    def describe(self) -> dict[str, Any]:
        """The peer's entry in ``bench.json``."""
        entry: dict[str, Any] = {
            "name": FLINK,
            "what": "Apache Flink's FsCheckpointStreamFactory (FsCheckpointStateOutputStream), "
            "timed inside the JVM",
            "flink": self.hello.get("flink"),
            "java": self.hello.get("java"),
            "vm": self.hello.get("vm"),
            "threshold": self.opened.get("threshold"),
            "write_buffer": self.opened.get("buffer"),
            "probe": self.probe,
            "syncs": sync_note(self.probe),
        }
        if self.error:
            entry["error"] = self.error
        return entry

    def close(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        with contextlib.suppress(Exception):  # the figures are in; a stuck JVM is killed
            if process.stdin is not None:
                process.stdin.write("quit\n")
                process.stdin.close()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
