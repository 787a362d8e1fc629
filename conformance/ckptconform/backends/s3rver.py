"""s3rver (npm, a real and independent S3 server in Node.js) on 127.0.0.1, behind a counting proxy.

A second S3 implementation proves that the suite's counts are the storage's, not moto's: the
same workload gives the same operation counts on both servers. s3rver is installed on first use
with npm into a cache directory (``$CKPTCONFORM_CACHE`` or ``~/.cache/ckptconform``; about 5 s,
14 MB) and started as ``node s3rver.js -a 127.0.0.1 -p 0 --silent`` on a temporary directory; it
prints its port and is up in well under a second. Without Node.js and npm the leg is skipped
with that reason.

Known limits of s3rver 3.7, declared so that the suite knows them:

* it ignores conditional writes (``If-None-Match: *``): ``conditional_writes`` is False, so the
  suite passes ``allow_unconditional_metadata`` to every test, skips the racing parts of MD-3
  and MD-11 (no storage can create ``_metadata`` exclusively there) and checks MD-13 instead;
* it keeps each object as a file named by its key below its data directory, and a key past
  the file system's limits (PATH_MAX) crashes the whole server (an unhandled ENAMETOOLONG):
  ``max_key_bytes`` is S3's own limit of 1024 bytes, and the counting proxy answers longer keys
  as S3 does (400 KeyTooLongError) without passing them on;
* it does not implement ListMultipartUploads (501): the suite's own clean-up of open uploads
  warns once that it cannot find them there.

Should the server die anyway, ``server_problem()`` says so (its exit code and last output) and
the plugin skips the leg's later tests with that message.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections import deque
from pathlib import Path
from typing import Any, ClassVar

from ckptconform.backends.base import BackendUnavailableError
from ckptconform.backends.s3 import S3Backend, s3_missing_packages

__all__ = ["S3RVER_VERSION", "S3rverBackend", "cache_dir"]

S3RVER_VERSION = "3.7.1"
_LISTENING = re.compile(r"S3rver listening on ([0-9.]+):(\d+)")
_STARTUP_SECONDS = 30.0
#: How many of s3rver's last output lines ``server_problem`` keeps, and of what width.
_TAIL_LINES = 12
_TAIL_WIDTH = 300


def cache_dir() -> Path:
    """Where s3rver is installed (``$CKPTCONFORM_CACHE`` or ``~/.cache/ckptconform``)."""
    base = os.environ.get("CKPTCONFORM_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ckptconform"
    )
    return Path(base) / f"s3rver-{S3RVER_VERSION}"


class S3rverBackend(S3Backend):
    """The ``s3rver`` leg: s3rver on a free loopback port, requests counted by a proxy."""

    name = "s3rver"
    has_ledger = True
    ledger_via_proxy = True
    #: s3rver checks signatures against its one built-in key pair.
    accepts_any_credentials = False
    #: s3rver 3.7 ignores If-None-Match.
    conditional_writes = False
    #: S3's limit; s3rver itself crashes on keys its file system cannot hold.
    max_key_bytes: ClassVar[int | None] = 1024
    planned_endpoint: ClassVar[str] = "s3rver on 127.0.0.1, free port, started on first use"

    _process: subprocess.Popen[str] | None = None
    _data: tempfile.TemporaryDirectory[str] | None = None
    #: the last lines s3rver printed (for ``server_problem``)
    _output: deque[str] | None = None

    def availability(self) -> str | None:
        missing = s3_missing_packages()
        if missing:
            return f"s3rver: {missing}"
        if shutil.which("node") is None:
            return "s3rver: Node.js is not installed (node not on the PATH)"
        if not self._script().exists() and shutil.which("npm") is None:
            return "s3rver: npm is not installed, and s3rver is not in the cache " + str(
                cache_dir()
            )
        return None

    @staticmethod
    def _script() -> Path:
        return cache_dir() / "node_modules" / "s3rver" / "bin" / "s3rver.js"

    def _install(self) -> None:
        """Install s3rver into the cache once, atomically: test workers start the leg at the
        same moment, so one installs under a file lock into a fresh directory and renames it
        into place; the others wait and find it there (never a half-installed tree)."""
        target = cache_dir()
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target.parent / f"{target.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                if not self._script().exists():
                    self._install_into(target)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _install_into(self, target: Path) -> None:
        staging = Path(tempfile.mkdtemp(prefix=f"{target.name}-", dir=target.parent))
        try:
            completed = subprocess.run(
                ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix",
                 str(staging), f"s3rver@{S3RVER_VERSION}"],
                capture_output=True, text=True, timeout=600, check=False,
            )  # fmt: skip
            script = staging / self._script().relative_to(target)
            if completed.returncode != 0 or not script.exists():
                output = (completed.stderr or completed.stdout).strip()[-500:]
                raise BackendUnavailableError(
                    f"s3rver: npm install s3rver@{S3RVER_VERSION} failed (exit code "
                    f"{completed.returncode}): {output or 'npm printed nothing'}"
                )
            if target.exists():  # an incomplete tree left by an interrupted install
                shutil.rmtree(target)
            os.rename(staging, target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def _start(self) -> None:
        if not self._script().exists():
            self._install()
        self.bucket = self.settings.s3_bucket
        self._key, self._secret = "S3RVER", "S3RVER"
        self._data = tempfile.TemporaryDirectory(prefix="ckptconform-s3rver-")
        self._process = subprocess.Popen(
            ["node", str(self._script()), "-d", self._data.name, "-a", "127.0.0.1", "-p", "0",
             "--configure-bucket", self.bucket],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        upstream = self._await_port()
        self._start_behind_proxy(upstream)

    def _await_port(self) -> str:
        """Read s3rver's output until it says where it listens; keep draining it afterwards."""
        assert self._process is not None
        assert self._process.stdout is not None
        found: dict[str, str] = {}
        ready = threading.Event()
        seen: list[str] = []
        tail: deque[str] = deque(maxlen=_TAIL_LINES)
        self._output = tail

        def pump(stream: Any) -> None:
            for line in stream:
                tail.append(line.rstrip()[:_TAIL_WIDTH])
                if not ready.is_set():
                    seen.append(line.rstrip())
                    match = _LISTENING.search(line)
                    if match:
                        found["url"] = f"http://{match.group(1)}:{match.group(2)}"
                        ready.set()
            ready.set()

        threading.Thread(target=pump, args=(self._process.stdout,), daemon=True).start()
        ready.wait(_STARTUP_SECONDS)
        if "url" not in found:
            raise BackendUnavailableError(
                "s3rver did not start: " + " | ".join(seen[-5:] or ["no output"])
            )
        return found["url"]

    def server_problem(self) -> str | None:
        """s3rver's process has exited (with its exit code and last output), or its port
        refuses connections."""
        process = self._process
        if process is not None and process.poll() is not None:
            last = " | ".join(line for line in (self._output or ()) if line.strip())
            return f"s3rver exited with code {process.returncode}; its last output: {last[-600:]}"
        return super().server_problem()

    def _stop(self) -> None:
        self._stop_proxy()
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=10)
            self._process = None
        if self._data is not None:
            self._data.cleanup()
            self._data = None
