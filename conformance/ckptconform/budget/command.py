"""``ckptconform budget``: run the request-budget workload and gate it against budgets.

    ckptconform budget --impl ckptstore [--backend moto|s3] [--tasks 64 --streams 4
        --checkpoints 5] [--runner auto|spark|threads] [--parallelism-target P]
        [--entropy-length N] [--budgets FILE] [--baseline FILE] [--write-baseline FILE]
        [--fault OP:RATE:KIND[:KEY]] [--throttle OPS:PER_SECOND[:PREFIX_DEPTH]]
        [--list-page-size N] [--out DIR]

The tasks of a checkpoint start their uploads together, as subtasks do after a checkpoint
barrier (a Spark barrier stage, or threads released by one signal). It prints a progress bar
while the workload runs, then one table row per phase (requests by operation, the busiest
second per key prefix, bytes moved, failed and retried requests), the projection to S3's
per-prefix limits (``ckptconform.budget.projection``: the peak per prefix at parallelism P and
the parallelism at which each operation reaches the limit) and a verdict line, and writes
``budget.json``, ``budget.md`` and ``budget.png`` into ``--out``. The exit code is 0 when every
phase completed, no budget or baseline was exceeded and, with ``--parallelism-target``, no
projected peak exceeds S3's limit; 1 otherwise (each violation printed with the limit, the
figure and the excess), 4 for a usage error. With injected faults or throttles the budgets are
not gated (what recovery costs is shown), but every phase must complete and the parallelism
target still holds.

Fault kinds: ``503`` (SlowDown), ``500`` (InternalError), ``drop`` (connection dropped before
the server acts), ``drop-after-commit`` and ``500-after-commit`` (the server acts, the answer
is lost or an error), ``hang`` (the server answers after 30 s) and ``denied-per-key``
(DeleteObjects answered with an AccessDenied error for every key, nothing deleted). Throttles
answer S3's 503 SlowDown per key prefix beyond the rate. ``--list-page-size`` answers listings
a few entries at a time, as S3 does beyond 1000.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["FAULT_KINDS", "main", "parse_fault", "parse_throttle"]

FAULT_KINDS: dict[str, dict[str, Any]] = {
    "503": {"status": 503, "code": "SlowDown"},
    "500": {"status": 500, "code": "InternalError"},
    "drop": {"drop_connection": True},
    "drop-after-commit": {"drop_connection": True, "after_commit": True},
    "500-after-commit": {"status": 500, "code": "InternalError", "after_commit": True},
    "hang": {"delay": 30.0},
    "denied-per-key": {"per_key": True, "code": "AccessDenied"},
}


#: The target option that names the entropy marker, and the marker the budget run uses.
ENTROPY_KEY = "entropy_key"
ENTROPY_MARKER = "_entropy_"


class UsageError(Exception):
    """A bad argument; exit code 4."""


def parse_fault(spec: str) -> dict[str, Any]:
    """``OP[,OP]:RATE:KIND[:KEY]`` into ``RequestLedger.inject`` keyword arguments."""
    parts = spec.split(":")
    if len(parts) not in (3, 4):
        raise UsageError(f"--fault wants OP:RATE:KIND[:KEY_CONTAINS], got {spec!r}")
    operations = [op for op in parts[0].split(",") if op]
    try:
        rate = float(parts[1])
    except ValueError:
        raise UsageError(f"--fault {spec!r}: rate {parts[1]!r} is not a number") from None
    if not 0.0 < rate <= 1.0:
        raise UsageError(f"--fault {spec!r}: rate must be in (0, 1], got {rate:g}")
    if parts[2] not in FAULT_KINDS:
        raise UsageError(f"--fault {spec!r}: kind must be one of {', '.join(FAULT_KINDS)}")
    return {
        "operation": operations or None,
        "rate": rate,
        "times": None,
        "key_contains": parts[3] if len(parts) == 4 and parts[3] else None,
        **FAULT_KINDS[parts[2]],
    }


def parse_throttle(spec: str) -> dict[str, Any]:
    """``OP[,OP]:PER_SECOND[:PREFIX_DEPTH]`` into ``RequestLedger.throttle`` arguments."""
    parts = spec.split(":")
    if len(parts) not in (2, 3):
        raise UsageError(f"--throttle wants OP[,OP]:PER_SECOND[:PREFIX_DEPTH], got {spec!r}")
    try:
        per_second = float(parts[1])
        depth = int(parts[2]) if len(parts) == 3 and parts[2] else None
    except ValueError:
        raise UsageError(f"--throttle {spec!r}: numbers expected") from None
    operations = [op for op in parts[0].split(",") if op]
    return {"per_second": per_second, "operation": operations or None, "prefix_depth": depth}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ckptconform budget",
        description="Run a checkpoint workload against a target on an S3 server with a request "
        "ledger, report its requests phase by phase and gate them against budgets.",
    )
    parser.add_argument("--impl", help="target (as for the suite), e.g. ckptstore")
    parser.add_argument(
        "--backend",
        default="moto",
        choices=["moto", "s3rver", "minio", "s3"],
        help="an S3 server with a request ledger: moto (default), s3rver (npm), minio "
        "(Docker) or s3 (--s3-endpoint, through the counting proxy)",
    )
    parser.add_argument("--s3-endpoint", help="endpoint of the 's3' backend (any S3 server)")
    parser.add_argument("--s3-bucket", default="ckptconform", help="bucket (default ckptconform)")
    parser.add_argument("--tasks", type=int, default=64, help="subtasks per checkpoint (64)")
    parser.add_argument("--streams", type=int, default=4, help="streams per subtask (4)")
    parser.add_argument("--checkpoints", type=int, default=5, help="checkpoints in a row (5)")
    parser.add_argument("--threads", type=int, default=4, help="writing threads per task (4)")
    parser.add_argument(
        "--inline-threshold",
        type=int,
        default=1024,
        help="inline threshold for targets with inline-state; state sizes spread around it",
    )
    parser.add_argument("--retained", type=int, default=1, help="checkpoints kept (1)")
    parser.add_argument("--no-restore", action="store_true", help="skip the restore")
    parser.add_argument("--no-savepoint", action="store_true", help="skip the savepoint")
    parser.add_argument(
        "--runner",
        choices=["auto", "spark", "threads"],
        default="auto",
        help="where tasks run: Spark executors, threads of this process, or Spark when it can "
        "start here (auto, the default)",
    )
    parser.add_argument("--spark-master", default=None, help="Spark master (as for the suite)")
    parser.add_argument("--parallelism", type=int, default=8, help=argparse.SUPPRESS)
    parser.add_argument(
        "--parallelism-target",
        type=int,
        default=None,
        metavar="P",
        help="fail when the peak per key prefix projected for a job of parallelism P exceeds "
        "S3's limits (3,500 writes, 5,500 reads per second per prefix); default: project to "
        "--tasks without gating",
    )
    parser.add_argument(
        "--entropy-length",
        type=int,
        default=0,
        metavar="N",
        help="inject N random characters into each state file's path (entropy_key; targets "
        "that declare it), spreading files over prefixes; 0 (default): none",
    )
    parser.add_argument("--budgets", help="TOML budget file (default: the built-in budgets)")
    parser.add_argument("--baseline", help="an earlier budget.json: fail when a count grows")
    parser.add_argument("--write-baseline", help="also write this run's figures to this file")
    parser.add_argument(
        "--fault",
        action="append",
        default=[],
        help="OP[,OP]:RATE:KIND[:KEY]; KIND one of " + ", ".join(FAULT_KINDS),
    )
    parser.add_argument(
        "--throttle",
        action="append",
        default=[],
        help="OP[,OP]:PER_SECOND[:PREFIX_DEPTH]: answer 503 SlowDown beyond PER_SECOND per key "
        "prefix (its directory, or its first PREFIX_DEPTH segments; 0: the bucket)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the faults at a rate (0)")
    parser.add_argument(
        "--list-page-size",
        type=int,
        default=None,
        help="answer listings (ListObjectsV2, ListObjects, ListMultipartUploads) in pages of "
        "this many entries, as S3 does at 1000: the cost of a checkpoint of many pages",
    )
    parser.add_argument("--out", default="budget-report", help="output directory")
    parser.add_argument("--no-plot", action="store_true", help="write no budget.png")
    parser.add_argument(
        "--print-default-budgets", action="store_true", help="print the default budgets, exit"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    options = _parser().parse_args(argv)
    from ckptconform.budget.limits import DEFAULT_BUDGETS, BudgetError

    if options.print_default_budgets:
        print(DEFAULT_BUDGETS, end="")
        return 0
    try:
        return _run(options)
    except (UsageError, BudgetError) as exc:
        print(f"ckptconform budget: error: {exc}", file=sys.stderr)
        return 4


def _run(options: argparse.Namespace) -> int:
    from ckptconform.backends import BackendPool, BackendSettings
    from ckptconform.budget.limits import evaluate, load_budgets, regressions
    from ckptconform.budget.output import (
        render_markdown,
        render_projection,
        render_table,
        verdict,
        write_plot,
    )
    from ckptconform.budget.phases import BudgetRun, Shape
    from ckptconform.budget.projection import S3_LIMITS, gate, project
    from ckptconform.budget.root_audit import audit_backend_root
    from ckptconform.progress import Progress
    from ckptconform.sandbox import UNCONDITIONAL_METADATA, server_options
    from ckptconform.target import TargetError, load_target

    if not options.impl:
        raise UsageError("--impl is required")
    for name in ("tasks", "streams", "checkpoints", "threads", "parallelism"):
        if getattr(options, name) < 1:
            raise UsageError(f"--{name} must be at least 1")
    if options.parallelism_target is not None and options.parallelism_target < 1:
        raise UsageError("--parallelism-target must be at least 1")
    if options.entropy_length < 0:
        raise UsageError("--entropy-length must be at least 0")
    if options.list_page_size is not None and options.list_page_size < 1:
        raise UsageError("--list-page-size must be at least 1")
    budgets = load_budgets(options.budgets)
    baseline = _read_baseline(options.baseline) if options.baseline else None
    faults = [parse_fault(spec) for spec in options.fault]
    throttles = [parse_throttle(spec) for spec in options.throttle]
    try:
        target = load_target(options.impl)
    except TargetError as exc:
        raise UsageError(str(exc)) from None
    if options.entropy_length and not target.supports_option(ENTROPY_KEY):
        raise UsageError(f"--entropy-length: target {target.name} declares no {ENTROPY_KEY}")

    settings = BackendSettings(s3_endpoint=options.s3_endpoint, s3_bucket=options.s3_bucket)
    pool = BackendPool([options.backend], settings)
    runner, runner_name, spark = _runner(options)
    try:
        backend = pool.get_started(options.backend)
        if backend.ledger is None:
            raise UsageError(f"backend {options.backend} has no request ledger here")
        ledger = backend.ledger
        ledger.seed(options.seed)
        for fault in faults:
            ledger.inject(**fault)
        for throttle in throttles:
            ledger.throttle(**throttle)
        root = backend.new_root()
        inline = "inline-state" in target.capabilities
        storage_options: dict[str, Any] = {"storage_options": dict(backend.storage_options)}
        if target.supports_option(UNCONDITIONAL_METADATA):
            storage_options.update(server_options(backend))
        if inline:
            storage_options["inline_threshold"] = options.inline_threshold
        checkpoints = f"{root}/checkpoints"
        if options.entropy_length:
            checkpoints = f"{root}/{ENTROPY_MARKER}/checkpoints"
            storage_options.update(
                {ENTROPY_KEY: ENTROPY_MARKER, "entropy_length": options.entropy_length}
            )

        def make_storage() -> Any:
            return target.make_storage(
                checkpoint_dir=checkpoints,
                savepoint_dir=f"{root}/savepoints",
                options=storage_options,
            )

        shape = Shape(
            tasks=options.tasks,
            streams=options.streams,
            checkpoints=options.checkpoints,
            threads=options.threads,
            inline_threshold=options.inline_threshold if inline else None,
            retained=max(1, options.retained),
            restore=not options.no_restore,
            savepoint=not options.no_savepoint and "savepoints" in target.capabilities,
        )
        pages = (
            ledger.small_pages(options.list_page_size)
            if options.list_page_size
            else contextlib.nullcontext()
        )
        if spark is not None:
            # started before the run's clock: the plot and the phases show the workload only
            print(f"ckptconform budget: starting Spark ({spark.master})", file=sys.stderr)
            spark.start()
        with pages, Progress("budget", shape.phase_count()) as progress:
            run = BudgetRun(
                make_storage,
                ledger,
                runner,
                shape,
                savepoint_dir=f"{root}/savepoint-target",
                task_owned="task-owned-state" in target.capabilities,
                on_phase=lambda phase: progress.advance(phase.name, failed=not phase.completed),
            )
            run.run()
        root_audit = audit_backend_root(
            backend, root, [r.pointer for r in run.retained if r.pointer is not None]
        )
        phases = run.figures()
        violations = evaluate(phases, budgets)
        if baseline is not None:
            violations += regressions(phases, baseline, f"baseline {options.baseline}")
        limits = {**S3_LIMITS, **budgets.get("peak_per_second_per_prefix", {})}
        projections = project(phases, shape.tasks, limits)
        parallelism = options.parallelism_target or shape.tasks
        beyond = gate(projections, parallelism) if options.parallelism_target else []
        gated = not (faults or throttles)
        document = {
            "format": "ckptconform-budget/1",
            "target": {"name": target.name, "spec": target.spec, "version": target.version},
            "backend": backend.describe(),
            "runner": runner_name,
            "spark": spark.info() if spark is not None and spark.started else None,
            "shape": vars(shape),
            "faults": options.fault,
            "throttles": options.throttle,
            "list_page_size": options.list_page_size,
            "budgets": budgets,
            "baseline": options.baseline,
            "entropy_length": options.entropy_length,
            "totals": run.totals(),
            "phases": phases,
            "violations": [
                {**vars_of(v), "excess": v.excess, "text": v.describe()}
                for v in [*violations, *beyond]
            ],
            "projection": {
                "parallelism": parallelism,
                "parallelism_target": options.parallelism_target,
                "limits": limits,
                "tasks": shape.tasks,
                "rows": [p.row(parallelism) for p in projections],
            },
            # Under injected faults a storage must complete every phase; the requests it spends
            # recovering (retries, checks after a lost answer) are shown, not gated.
            "gated_on_budgets": gated,
            # the retained checkpoints and the savepoint reference every file below the root
            "root_audit": root_audit.to_dict(),
            "passed": run.completed
            and (not gated or not violations)
            and not beyond
            and root_audit.clean,
        }
        document["verdict"] = verdict(document, projections, violations, beyond)
        out = Path(options.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "budget.json").write_text(json.dumps(document, indent=2) + "\n")
        if options.write_baseline:
            Path(options.write_baseline).write_text(json.dumps(document, indent=2) + "\n")
        plot = None if options.no_plot else write_plot(document, out / "budget.png")
        (out / "budget.md").write_text(render_markdown(document, plot))
        print(render_table(document))
        print()
        print(render_projection(document))
        print(
            f"\nreport: {out / 'budget.md'}; {out / 'budget.json'}" + (f"; {plot}" if plot else "")
        )
        print(root_audit.describe())
        if not run.completed:
            print("FAILED: not every phase completed (see 'problem' in the table above)")
        label = "EXCEEDED" if gated else "over budget under faults (not gated):"
        for violation in violations:
            print(f"{label} {violation.describe()}")
        for violation in beyond:
            print(f"EXCEEDED {violation.describe()}")
        print(document["verdict"])
        return 0 if document["passed"] else 1
    finally:
        if spark is not None:
            spark.stop()
        pool.stop_all()


def vars_of(violation: Any) -> dict[str, Any]:
    return {
        "phase": violation.phase,
        "metric": violation.metric,
        "limit": violation.limit,
        "actual": violation.actual,
        "source": violation.source,
    }


def _read_baseline(path: str) -> dict[str, Any]:
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read the baseline {path}: {exc}") from exc
    if not isinstance(document, dict) or "phases" not in document:
        raise UsageError(f"{path} is not a budget.json (no 'phases')")
    return document


def _runner(options: argparse.Namespace) -> tuple[Any, str, Any]:
    from ckptconform.spark import DEFAULT_MASTER, SparkLeg
    from ckptconform.workload import ThreadRunner

    threads = ThreadRunner(options.parallelism)
    if options.runner == "threads":
        return threads, "threads", None
    spark = SparkLeg(options.spark_master or DEFAULT_MASTER, reuse_python_workers=True)
    reason = spark.availability()
    if reason is None:
        return spark, f"spark ({spark.master})", spark
    if options.runner == "spark":
        raise UsageError(f"--runner=spark: {reason}")
    print(f"ckptconform budget: Spark is not available ({reason}); tasks run as threads")
    return threads, f"threads (Spark: {reason})", None
