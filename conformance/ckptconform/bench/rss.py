"""Peak memory of one large state stream, measured in a child process.

``measure(job)`` starts ``python -m ckptconform.bench.rss`` with the job as JSON on stdin (so
no secret appears in a process listing), and the child

1. loads the target (``--impl`` spec) and creates a checkpoint location on the given URL, or,
   for the ``fsspec`` variant, an fsspec file system with the same options, and writes one
   2 MiB state (or file) and discards it, so that clients, connection pools and lazy imports
   exist before the measurement: the figure is what one large write needs, not first use;
2. resets the peak-RSS counter (``/proc/self/clear_refs``, Linux) and reads its RSS;
3. writes ``size`` bytes in 1 MiB writes of one reused buffer through one stream and closes
   it (``close_and_get_handle``, or ``close`` for fsspec);
4. reads its peak RSS (``VmHWM``; ``ru_maxrss`` where the counter cannot be reset), discards
   the state and prints ``{"baseline": bytes, "peak": bytes, "seconds": s}``.

The figure is ``peak - baseline``: memory the write itself needed, beyond the interpreter and
the imports. The S3 server (moto) runs in the parent, so its memory is not counted.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping
from typing import Any

__all__ = ["RssError", "main", "measure"]

MIB = 1 << 20


class RssError(Exception):
    """The child process failed; the message carries its last lines of output."""


def measure(job: Mapping[str, Any], timeout: float = 900.0) -> dict[str, Any]:
    """Run one job in a child process; its figures (``baseline``, ``peak``, ``seconds``)."""
    env = dict(os.environ)
    paths = [p for p in sys.path if p]
    env["PYTHONPATH"] = os.pathsep.join([*paths, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "ckptconform.bench.rss"],
            input=json.dumps(dict(job)),
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise RssError(f"the child did not finish within {timeout:g} s") from exc
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-6:])
        raise RssError(f"the child exited with {done.returncode}: {tail}")
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def _status(field: str) -> int | None:
    """A ``/proc/self/status`` memory field in bytes (``None`` off Linux)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _reset_peak() -> bool:
    """Reset ``VmHWM`` to the current RSS (Linux >= 4.0); False where that is not possible."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as refs:
            refs.write("5")
        return True
    except OSError:
        return False


def _peak(reset: bool) -> int:
    hwm = _status("VmHWM") if reset else None
    if hwm is not None:
        return hwm
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


WARM_UP = 2 * MIB


def _target_writer(job: Mapping[str, Any]) -> tuple[Any, Any]:
    from ckptconform.target import load_target
    from ckptstore.api import CheckpointedStateScope, JobID

    target = load_target(str(job["impl"]))
    storage = target.make_storage(
        checkpoint_dir=str(job["checkpoint_dir"]), savepoint_dir=None, options=job["options"]
    )
    access = storage.create_checkpoint_storage(JobID.generate())
    access.initialize_base_locations_for_checkpoint()
    location = access.initialize_location_for_checkpoint(1)
    warm = location.create_checkpoint_state_output_stream(CheckpointedStateScope.EXCLUSIVE)
    warm.write(b"w" * WARM_UP)
    warm_handle = warm.close_and_get_handle()
    if warm_handle is not None:
        warm_handle.discard_state()
    stream = location.create_checkpoint_state_output_stream(CheckpointedStateScope.EXCLUSIVE)

    def finish() -> Any:
        handle = stream.close_and_get_handle()
        return handle.discard_state if handle is not None else None

    return stream, finish


def _fsspec_writer(job: Mapping[str, Any]) -> tuple[Any, Any]:
    import fsspec

    fs = fsspec.filesystem(
        str(job["scheme"]), skip_instance_cache=True, **dict(job.get("storage_options") or {})
    )
    warm = f"{job['raw_dir']}/{uuid.uuid4()}"
    with fs.open(warm, "xb") as out:
        out.write(b"w" * WARM_UP)
    fs.rm_file(warm)
    path = f"{job['raw_dir']}/{uuid.uuid4()}"
    stream = fs.open(path, "xb")

    def finish() -> Any:
        if job.get("sync"):
            stream.flush()
            os.fsync(stream.fileno())
        stream.close()
        return lambda: fs.rm_file(path)

    return stream, finish


def run_job(job: Mapping[str, Any]) -> dict[str, Any]:
    """The child's work (also callable in-process by tests)."""
    size = int(job["size"])
    chunk = bytes(range(256)) * (MIB // 256)
    stream, finish = (_fsspec_writer if job["variant"] == "fsspec" else _target_writer)(job)
    reset = _reset_peak()
    baseline = _status("VmRSS") or _peak(False)
    started = time.perf_counter()
    writes, tail = divmod(size, len(chunk))
    for _ in range(writes):
        stream.write(chunk)
    if tail:
        stream.write(chunk[:tail])
    discard = finish()
    seconds = time.perf_counter() - started
    peak = _peak(reset)
    if discard is not None:
        discard()
    return {"baseline": baseline, "peak": peak, "seconds": seconds, "peak_reset": reset}


def main() -> int:
    job = json.loads(sys.stdin.read())
    print(json.dumps(run_job(job)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
