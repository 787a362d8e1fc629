"""A process that has imported pytest and the suite's heavy dependencies once, and forks a
fresh child for each suite run the meta-tests ask for.

A suite run of a broken implementation takes a second or two, and more than half of it was
starting an interpreter and importing hypothesis, moto's server, s3fs and pytest again: about
1.1 s of CPU per run, for some 240 runs per CI. Here a child forked from a process that holds
those imports runs ``pytest.main`` as ``python -m pytest`` would: in its own working directory
and environment, with ``PYTHONPATH`` and the working directory on ``sys.path``, its output to a
file, its exit handlers run, its exit code returned. Nothing of the kit or the reference is
imported before the fork (the kit reads its environment when it is imported), and the server
runs no thread, so a child starts from a clean, single-threaded interpreter.

Run as a script, it speaks JSON lines on stdin/stdout: a request ``{"args", "cwd", "env",
"output"}`` is answered by ``{"pid"}`` once the child is forked, then ``{"exit"}`` when it
ended (a negative number: killed by that signal). End of input ends the server.
:class:`ForkServer` is the client; ``CKPTCONFORM_META_FORK=0`` makes the meta-tests start a
new interpreter per run instead (``tests/meta/suite_runner.py``).
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

#: What a suite run imports that costs time and reads no environment at import.
PRELOAD = (
    "pytest",
    "_pytest.python",
    "hypothesis",
    "hypothesis.strategies",
    "fsspec",
    "s3fs",
    "botocore.session",
    "aiobotocore.session",
    "moto.server",
    "platformdirs",
    "py4j.java_gateway",
    "pyspark",
    "xdist.plugin",
)


class ForkServerError(RuntimeError):
    """The fork server died or answered what it should not."""


# ------------------------------------------------------------------------------ the server


def _child(request: dict[str, Any]) -> None:
    """In the forked child: become ``python -m pytest ARGS`` (module docstring); never returns."""
    code = 1
    try:
        os.setsid()  # its own process group: a timeout kills the run and what it started
        out = os.open(request["output"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.close(out)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        extra = [p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
        sys.path[:] = [request["cwd"], *extra, *sys.path[1:]]
        sys.argv = [sys.executable, "-m", "pytest", *request["args"]]
        import pytest

        code = int(pytest.main(list(request["args"])))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        with contextlib.suppress(BaseException):
            atexit._run_exitfuncs()
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def serve() -> None:
    """The server's loop: one request at a time, until end of input."""
    for name in PRELOAD:
        with contextlib.suppress(ImportError):
            __import__(name)
    # What the imports made is never garbage: the collector of a child skips it instead of
    # walking it in each full collection (pytest's unraisableexception plugin makes two as a
    # run ends, where a run does not leave that plugin out).
    gc.freeze()
    reply = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request)
        reply.write(json.dumps({"pid": pid}) + "\n")
        reply.flush()
        _, status = os.waitpid(pid, 0)
        reply.write(json.dumps({"exit": os.waitstatus_to_exitcode(status)}) + "\n")
        reply.flush()


# ------------------------------------------------------------------------------ the client


class ForkServer:
    """One server per process that asks (an xdist worker runs one test at a time)."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._pending = b""  # what was read of the server's answers beyond the last line
        atexit.register(self.stop)

    def _started(self) -> subprocess.Popen[bytes]:
        if self._process is None or self._process.poll() is not None:
            self._process = subprocess.Popen(
                [sys.executable, str(Path(__file__).resolve())],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                bufsize=0,
            )
            self._pending = b""
        return self._process

    def run(
        self, args: list[str], cwd: Path, env: dict[str, str], timeout: float
    ) -> tuple[int, str]:
        """Run ``python -m pytest ARGS`` in a forked child; its exit code and output. A run
        longer than ``timeout`` seconds is killed (with its process group) and raises
        ``subprocess.TimeoutExpired``, as ``subprocess.run`` would."""
        process = self._started()
        assert process.stdin is not None
        handle, name = tempfile.mkstemp(prefix="suite-output-", suffix=".txt")
        os.close(handle)
        output = Path(name)
        request = {"args": args, "cwd": str(cwd), "env": env, "output": str(output)}
        process.stdin.write(json.dumps(request).encode() + b"\n")
        pid = self._answer(process, "pid", time.monotonic() + 60)
        try:
            code = self._answer(process, "exit", time.monotonic() + timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
            self._answer(process, "exit", time.monotonic() + 60)
            raise subprocess.TimeoutExpired(args, timeout) from None
        try:
            return code, output.read_text(encoding="utf-8", errors="replace")
        finally:
            output.unlink()

    def _answer(self, process: subprocess.Popen[bytes], key: str, deadline: float) -> int:
        assert process.stdout is not None
        while b"\n" not in self._pending:
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(key, 0)
            ready, _, _ = select.select([process.stdout], [], [], min(left, 1.0))
            if ready:
                chunk = os.read(process.stdout.fileno(), 4096)
                if not chunk:
                    raise ForkServerError(f"the fork server ended (exit {process.wait()})")
                self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        answer = json.loads(line)
        if key not in answer:
            raise ForkServerError(f"the fork server answered {answer}, not {key}")
        return int(answer[key])

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            assert process.stdin is not None
            process.stdin.close()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


if __name__ == "__main__":
    serve()
