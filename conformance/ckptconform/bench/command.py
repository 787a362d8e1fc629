"""``ckptconform bench``: a target's throughput and costs side by side with raw fsspec.

    ckptconform bench --impl ckptstore [--quick] [--backend local,moto] [--sizes 1,16,256]
        [--reps 5] [--rss-size 1024] [--threads 8] [--suite] [--peer flink] [--out DIR]
        [--readme README.md]

One run measures, with interleaved repetitions (``ckptconform.bench.measure``): file-backed writes
and reads against raw fsspec with the same durability and the disk's own limit, the inline path
against ``io.BytesIO``, 8 threads against 1, the peak RSS of one large stream (in a child process,
``ckptconform.bench.rss``), the S3 requests per checkpoint against the minimum (the budget workload
on the ledger, ``ckptconform.budget.phases``) and, with ``--suite``, the suite's wall time per leg.
With ``--peer flink``, Apache Flink 2.3.0's own Java ``FsCheckpointStreamFactory`` runs the local
file-backed writes and the inline path in the same run, timed inside its JVM
(``ckptconform.bench.peer``), beside the target with the ratio target / Flink; without Java 17, a
JDK or Flink's jars, one sentence says why and the rest of the bench runs. It prints a table and
writes ``bench.json``, ``bench.md``, ``bench.png`` and ``readme-block.md`` (the README's
performance table, ``ckptconform.bench.readme``) into ``--out``; ``--readme FILE`` also puts that
table in place of the generated block in ``FILE``, and the chart in ``docs/bench.png`` beside
``FILE``, linked from the block.

Targets (``ckptconform.bench.goals``) are shown with pass/miss, the ratio and its spread. The
exit code is 1 only when a figure that does not depend on machine noise misses: requests per
checkpoint above the minimum, or peak RSS above the write buffer + 64 MiB (or one of them
could not be measured); 4 for a usage error; 0 otherwise, however the ratios came out.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["QUICK", "main"]

MIB = 1 << 20

#: what --quick changes (each can still be set explicitly)
QUICK: dict[str, Any] = {
    "sizes": "1,16",
    "reps": 3,
    "rss_size": 256,
    "thread_states": 16,
    "tasks": 4,
    "checkpoints": 2,
    "inline_seconds": 0.15,
    "peer_warmup": 1.0,
}
FULL: dict[str, Any] = {
    "sizes": "1,16,256",
    "reps": 5,
    "rss_size": 1024,
    "thread_states": 32,
    "tasks": 8,
    "checkpoints": 3,
    "inline_seconds": 0.3,
    "peer_warmup": 2.0,
}
#: capabilities that mean a target writes state into files
FILE_CAPABILITIES = frozenset({"file-layout", "inline-state"})


class UsageError(Exception):
    """A bad argument; exit code 4."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ckptconform bench",
        description="Measure a checkpoint storage side by side with raw fsspec, the disk's "
        "limit and io.BytesIO; hold the figures against the performance targets. Exit code 1 "
        "only for the figures without machine noise (S3 requests per checkpoint, peak RSS).",
    )
    parser.add_argument("--impl", help="target (as for the suite), e.g. ckptstore")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a short run for CI: sizes 1,16 MiB, 3 repetitions, 256 MiB for the peak RSS",
    )
    parser.add_argument(
        "--backend",
        default="local,moto",
        help="comma-separated legs (default local,moto; also memory, or an S3 leg of the "
        "suite: s3rver, minio, s3 with --s3-endpoint)",
    )
    parser.add_argument("--s3-endpoint", help="endpoint of the 's3' backend")
    parser.add_argument("--s3-bucket", default="ckptconform", help="bucket (default ckptconform)")
    parser.add_argument(
        "--sizes", help="file-backed state sizes in MiB, comma-separated (default 1,16,256)"
    )
    parser.add_argument("--reps", type=int, help="repetitions per figure, >= 3 (default 5)")
    parser.add_argument(
        "--rss-size", type=int, help="MiB written through one stream for the peak RSS (1024)"
    )
    parser.add_argument("--no-rss", action="store_true", help="skip the peak-RSS figures")
    parser.add_argument("--threads", type=int, default=8, help="threads against 1 (8)")
    parser.add_argument(
        "--thread-states", type=int, help="4 MiB states written per repetition of the threads "
        "figure (32)"
    )  # fmt: skip
    parser.add_argument(
        "--write-buffer-size",
        type=int,
        default=4096,
        help="the target's write buffer (option write_buffer_size, default 4096 as Flink's); "
        "the peak-RSS bound is this plus 64 MiB",
    )
    parser.add_argument(
        "--inline-threshold", type=int, default=1024, help="inline threshold (1024)"
    )
    parser.add_argument("--no-requests", action="store_true", help="skip the S3 request count")
    parser.add_argument("--tasks", type=int, help="subtasks per checkpoint of the request count")
    parser.add_argument("--checkpoints", type=int, help="checkpoints of the request count")
    parser.add_argument(
        "--suite",
        action="store_true",
        help="also time the conformance suite per leg (ci profile; slow: minutes)",
    )
    parser.add_argument(
        "--peer",
        choices=["flink"],
        help="also run the same shapes through Apache Flink 2.3.0's Java "
        "FsCheckpointStreamFactory, timed inside the JVM (local writes, inline path; needs "
        "Java 17 and a JDK; Flink's jars are fetched with pip into the cache on first use)",
    )
    parser.add_argument("--out", default="bench-report", help="output directory (bench-report)")
    parser.add_argument(
        "--readme",
        help="also put the generated performance table (readme-block.md) in place of the "
        "block between the ckptconform bench markers in this file (e.g. README.md)",
    )
    parser.add_argument("--no-plot", action="store_true", help="write no bench.png")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    options = _parser().parse_args(argv)
    try:
        _complete(options)
        return _run(options)
    except UsageError as exc:
        print(f"ckptconform bench: error: {exc}", file=sys.stderr)
        return 4


def _complete(options: argparse.Namespace) -> None:
    """Fill the defaults of --quick or the full run; check every number."""
    if not options.impl:
        raise UsageError("--impl is required")
    defaults = QUICK if options.quick else FULL
    for name, value in defaults.items():
        if getattr(options, name, None) is None:
            setattr(options, name, value)
    try:
        options.size_list = tuple(int(s) * MIB for s in str(options.sizes).split(",") if s.strip())
    except ValueError:
        raise UsageError(
            f"--sizes wants MiB numbers, comma-separated, got {options.sizes!r}"
        ) from None
    if not options.size_list or min(options.size_list) < MIB:
        raise UsageError("--sizes wants at least one size of 1 MiB or more")
    if options.reps < 3:
        raise UsageError("--reps must be at least 3 (a median with a spread)")
    for name in ("rss_size", "threads", "thread_states", "tasks", "checkpoints"):
        if getattr(options, name) < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be at least 1")
    if options.write_buffer_size < 0 or options.inline_threshold < 0:
        raise UsageError("--write-buffer-size and --inline-threshold must be >= 0")
    if options.readme:
        from ckptconform.bench.readme import BEGIN, END

        try:
            text = Path(options.readme).read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"--readme: {exc}") from None
        if BEGIN not in text or END not in text:
            raise UsageError(f"--readme: {options.readme} has no lines {BEGIN!r} and {END!r}")
    options.legs = [b.strip() for b in options.backend.split(",") if b.strip()]
    if not options.legs:
        raise UsageError("--backend names no leg")


def _machine() -> dict[str, Any]:
    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else [],
        "started": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def _run(options: argparse.Namespace) -> int:
    from ckptconform.backends import BackendError, BackendPool, BackendSettings
    from ckptconform.bench.goals import evaluate, gated_errors, verdict_line
    from ckptconform.bench.measure import Bench, Plan
    from ckptconform.bench.output import render_table, write_markdown, write_plot
    from ckptconform.bench.readme import CHART, readme_block, replace_block
    from ckptconform.bench.stats import gate
    from ckptconform.progress import Progress
    from ckptconform.target import TargetError, load_target

    started = time.perf_counter()
    try:
        target = load_target(options.impl)
    except TargetError as exc:
        raise UsageError(str(exc)) from None
    print(f"bench: {target.name} on {', '.join(options.legs)}: starting the legs",
          file=sys.stderr, flush=True)  # fmt: skip
    settings = BackendSettings(s3_endpoint=options.s3_endpoint, s3_bucket=options.s3_bucket)
    try:
        pool = BackendPool(options.legs, settings)
    except BackendError as exc:
        raise UsageError(str(exc)) from None
    inline = "inline-state" in target.capabilities
    files = bool(FILE_CAPABILITIES & set(target.capabilities))
    plan = Plan(
        sizes=options.size_list,
        reps=options.reps,
        inline_threshold=options.inline_threshold,
        inline_seconds=options.inline_seconds,
        threads=options.threads,
        thread_states=options.thread_states,
        write_buffer_size=options.write_buffer_size,
        peer_warmup=options.peer_warmup,
    )
    document: dict[str, Any] = {
        "format": "ckptconform-bench/1",
        "target": {"name": target.name, "spec": target.spec, "version": target.version},
        "quick": bool(options.quick),
        "machine": _machine(),
        "plan": {
            **{k: v for k, v in vars(plan).items() if k != "sizes"},
            "sizes": list(plan.sizes),
            "rss_size": options.rss_size * MIB,
        },
        "legs": {},
        "figures": [],
        "rss": [],
        "requests": None,
        "suite": None,
        "peer": None,
    }
    peer = _start_peer(options.peer) if options.peer else None
    if isinstance(peer, str):
        document["peer"] = {"name": options.peer, "skipped": peer}
        peer = None
    try:
        legs = _open_legs(options, pool, target, inline, files, document)
        bench = Bench(plan, legs if files else [], inline, peer=peer)
        bench.build()
        rss_jobs = _rss_jobs(options, legs, target) if files and not options.no_rss else []
        ledger_leg = next((leg for leg in legs if leg.backend.ledger is not None), None)
        suite_legs = _suite_legs() if options.suite else []
        total = bench.steps + len(rss_jobs) + (0 if options.no_requests else 1) + len(suite_legs)
        with Progress("bench", total) as progress:
            bench.run(on_step=progress.advance)
            document["figures"] = [figure.to_json() for figure in bench.figures]
            document["rss"] = _measure_rss(rss_jobs, progress)
            if not options.no_requests:
                document["requests"] = _count_requests(options, target, ledger_leg, inline)
                progress.advance("S3 requests per checkpoint")
            if suite_legs:
                document["suite"] = _time_suite(options.impl, suite_legs, progress)
        if peer is not None:
            document["peer"] = peer.describe()
        for leg in legs:
            leg.close()
    finally:
        if peer is not None:
            peer.close()
        pool.stop_all()
    document["machine"]["load_average_after"] = (
        [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else []
    )
    checks = evaluate(document)
    failed = gate(checks)
    errors = gated_errors(document)
    document["checks"] = [c.to_json() for c in checks]
    document["gate"] = {
        "failed": [c.describe() for c in failed],
        "errors": errors,
        "passed": not failed and not errors,
    }
    document["seconds"] = round(time.perf_counter() - started, 1)
    out = Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench.json").write_text(json.dumps(document, indent=2) + "\n")
    write_markdown(document, checks, out / "bench.md")
    block = readme_block(document, checks)
    (out / "readme-block.md").write_text(block)
    plot = None if options.no_plot else write_plot(document, out / "bench.png")
    print(render_table(document, checks))
    written = [str(out / n) for n in ("bench.json", "bench.md", "readme-block.md")]
    written += [str(plot)] if plot else []
    if options.readme:
        readme = Path(options.readme)
        chart = None
        if plot:  # the chart goes beside the README, where the block links it
            chart = readme.parent / CHART
            chart.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(plot, chart)
            written.append(str(chart))
        replace_block(readme, readme_block(document, checks, CHART if chart else None))
        written.append(f"{options.readme} (its generated block)")
    print(f"\nwritten: {', '.join(written)}; {document['seconds']:.0f} s")
    for check in failed:
        print(f"GATE FAILED: {check.describe()}")
    for error in errors:
        print(f"GATE FAILED: {error}")
    print(verdict_line(checks, errors))
    return 0 if document["gate"]["passed"] else 1


def _start_peer(name: str) -> Any:
    """The started peer, or the one sentence why it cannot run (printed at once)."""
    from ckptconform.bench.peer import FlinkPeer, PeerUnavailableError

    print(f"ckptconform bench: starting the {name} peer (a JVM)", file=sys.stderr)
    try:
        return FlinkPeer().start()
    except PeerUnavailableError as exc:
        reason = str(exc)
    print(f"ckptconform bench: {reason} The bench runs without the peer.", file=sys.stderr)
    return reason


def target_options(
    target: Any, storage_options: Mapping[str, Any], extra: Mapping[str, Any]
) -> dict[str, Any]:
    """The options the suite would pass: the backend's connection settings and ``extra``,
    without keys a target that declares its ``options`` does not accept (an empty
    ``storage_options`` included); a left-out key means the target's own default."""
    supports = getattr(target, "supports_option", None)

    def accepted(key: str) -> bool:
        return supports is None or bool(supports(key))

    passed: dict[str, Any] = {}
    if storage_options or accepted("storage_options"):
        passed["storage_options"] = dict(storage_options)
    passed.update({key: value for key, value in extra.items() if accepted(key)})
    return passed


def _open_legs(
    options: argparse.Namespace,
    pool: Any,
    target: Any,
    inline: bool,
    files: bool,
    document: dict[str, Any],
) -> list[Any]:
    from ckptconform.backends import BackendUnavailableError
    from ckptconform.bench.measure import Leg
    from ckptconform.sandbox import server_options

    legs = []
    for name in pool.names:
        backend = pool[name]
        if not target.supports_scheme(backend.scheme):
            document["legs"][name] = {
                "skipped": f"{target.name} does not store to {backend.scheme}"
            }
            continue
        try:
            backend.start()
        except BackendUnavailableError as exc:
            document["legs"][name] = {"skipped": str(exc)}
            continue
        extra = server_options(backend)
        if inline:
            extra["inline_threshold"] = options.inline_threshold
            extra["write_buffer_size"] = max(options.write_buffer_size, options.inline_threshold)
        leg = Leg(name, backend, target, target_options(target, backend.storage_options, extra))
        try:
            leg.open()
        except Exception as exc:
            document["legs"][name] = {"error": f"{type(exc).__name__}: {exc}"[:500]}
            continue
        document["legs"][name] = {
            "backend": backend.describe(),
            "ledger": backend.ledger is not None,
            "file_backed_figures": files,
        }
        legs.append(leg)
    if not files:
        document["note"] = (
            f"{target.name} claims neither file-layout nor inline-state: no file-backed figures"
        )
    return legs


def _rss_jobs(
    options: argparse.Namespace, legs: Sequence[Any], target: Any
) -> list[dict[str, Any]]:
    jobs = []
    for leg in legs:
        for variant in ("target", "fsspec"):
            jobs.append(
                {
                    "leg": leg.name,
                    "variant": variant,
                    "impl": target.spec,
                    "checkpoint_dir": f"{leg.root}/rss/checkpoints",
                    "options": leg.options,
                    "scheme": leg.backend.scheme,
                    "storage_options": dict(leg.backend.storage_options),
                    "raw_dir": leg.raw_dir,
                    "sync": not leg.object_store,
                    "size": options.rss_size * MIB,
                    "write_buffer": int(
                        leg.options.get("write_buffer_size", options.write_buffer_size)
                    ),
                }
            )
    return jobs


def _measure_rss(jobs: Sequence[dict[str, Any]], progress: Any) -> list[dict[str, Any]]:
    from ckptconform.bench.rss import RssError, measure
    from ckptconform.bench.stats import Summary

    entries = []
    for job in jobs:
        entry: dict[str, Any] = {
            key: job[key] for key in ("leg", "variant", "size", "write_buffer")
        }
        try:
            result = measure(job)
        except RssError as exc:
            entry["error"] = str(exc)[:1000]
        else:
            entry["samples"] = [result]
            growth = max(0, int(result["peak"]) - int(result["baseline"])) / MIB
            entry["growth"] = Summary.single(growth).to_json()
            entry["seconds"] = result["seconds"]
        entries.append(entry)
        progress.advance(f"peak RSS, {job['leg']}, {job['variant']}")
    return entries


def _count_requests(
    options: argparse.Namespace, target: Any, leg: Any, inline: bool
) -> dict[str, Any]:
    from ckptconform.bench.measure import requests_per_checkpoint
    from ckptconform.budget.phases import BudgetRun, Shape
    from ckptconform.sandbox import server_options
    from ckptconform.workload import ThreadRunner

    if leg is None:
        return {"skipped": "no leg with a request ledger (add moto to --backend)"}
    shape = Shape(
        tasks=options.tasks,
        streams=4,
        checkpoints=options.checkpoints,
        threads=2,
        inline_threshold=options.inline_threshold if inline else None,
        retained=1,
        restore=True,
        savepoint=False,
    )
    root = leg.backend.new_root()
    extra = server_options(leg.backend)
    if inline:
        extra["inline_threshold"] = options.inline_threshold
    storage_options = target_options(target, leg.backend.storage_options, extra)

    def make_storage() -> Any:
        return target.make_storage(
            checkpoint_dir=f"{root}/checkpoints",
            savepoint_dir=f"{root}/savepoints",
            options=storage_options,
        )

    run = BudgetRun(
        make_storage,
        leg.backend.ledger,
        ThreadRunner(4),
        shape,
        task_owned="task-owned-state" in target.capabilities,
    )
    try:
        run.run()
    except Exception as exc:
        return {"leg": leg.name, "error": f"{type(exc).__name__}: {exc}"[:1000]}
    finally:
        with contextlib.suppress(Exception):  # cleanup must not hide the figures
            leg.backend.remove(root)
    phases = run.figures()
    for phase in phases:
        phase.pop("series", None)
    problems = [f"{p['name']}: {p['problem']}" for p in phases if not p["completed"]]
    return {
        "leg": leg.name,
        "shape": vars(shape),
        "rows": requests_per_checkpoint(phases),
        "setup": next((p["operations"] for p in phases if p["kind"] == "setup"), {}),
        "dispose": [
            {"what": p["name"], "operations": p["operations"]}
            for p in phases
            if p["kind"] == "dispose"
        ],
        "error": "; ".join(problems)[:1000] or None,
    }


def _suite_legs() -> list[str]:
    from ckptconform.bench.suite_time import LEGS

    return list(LEGS)


def _time_suite(impl: str, legs: Sequence[str], progress: Any) -> dict[str, Any]:
    from ckptconform.bench.suite_time import time_leg

    results = []
    for name in legs:
        leg = time_leg(impl, name)
        results.append(
            {
                "name": leg.name,
                "seconds": round(leg.seconds, 1),
                "exit_code": leg.exit_code,
                "summary": leg.summary,
                "skipped": leg.skipped,
            }
        )
        progress.advance(f"suite leg {name}")
    return {"profile": "ci", "legs": results}
