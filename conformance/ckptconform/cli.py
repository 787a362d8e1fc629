"""The ``ckptconform`` command: run the installed suite against a target and print the matrix.

    ckptconform --impl ckptstore [--backend local,memory,moto] [--report-dir DIR] [pytest args...]
    ckptconform budget --impl ckptstore [...]   (request budgets: ckptconform.budget.command)
    ckptconform bench --impl ckptstore [...]    (benchmarks: ckptconform.bench.command)

It runs pytest in this process with the plugin's options and writes ``conformance.json`` and
``conformance.md`` (with the clause x backend matrix) into the report directory (default
``./conformance-report``); the terminal ends with the plugin's clause summary and verdict. The
exit code is pytest's (4 for a usage error such as a
missing target, 1 when a clause fails).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["main"]

DEFAULT_REPORT_DIR = "conformance-report"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ckptconform",
        description="Run the checkpoint storage conformance suite against an implementation. "
        "Arguments not listed here go to pytest (e.g. -x, -k EXPR, -n 2). "
        "'ckptconform budget --help' describes the request-budget gate, "
        "'ckptconform bench --help' the benchmarks.",
    )
    parser.add_argument(
        "--impl",
        help="target: MODULE[:ATTR] or a name registered in the entry-point group "
        "ckptconform.targets (e.g. ckptstore)",
    )
    parser.add_argument(
        "--backend",
        default=None,
        help="comma-separated legs: local, memory, moto, sftp, minio, s3rver, s3, and spark for "
        "the Spark leg (default: local,memory,moto,spark; 'pytest --impl=X --help' lists the "
        "suite's other options, which ckptconform passes on)",
    )
    parser.add_argument(
        "--report-dir",
        default=DEFAULT_REPORT_DIR,
        help=f"where conformance.json and conformance.md go (default: ./{DEFAULT_REPORT_DIR})",
    )
    parser.add_argument(
        "--list-targets",
        action="store_true",
        help="list the targets registered in the entry-point group ckptconform.targets and exit",
    )
    return parser


def _list_targets() -> int:
    from importlib import metadata

    from ckptconform.target import ENTRY_POINT_GROUP

    for entry_point in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        print(f"{entry_point.name}\t{entry_point.value}")
    return 0


_ALREADY_IMPORTED = "Module already imported so cannot be rewritten; ckptconform"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns pytest's exit code (or a subcommand's)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "budget":
        from ckptconform.budget.command import main as budget_main

        return budget_main(args[1:])
    if args and args[0] == "bench":
        from ckptconform.bench.command import main as bench_main

        return bench_main(args[1:])
    options, pytest_args = _parser().parse_known_args(args)
    if options.list_targets:
        return _list_targets()
    if not options.impl:
        _parser().print_usage(sys.stderr)
        print("ckptconform: error: --impl is required (see --list-targets)", file=sys.stderr)
        return 4

    import pytest

    report_dir = Path(options.report_dir).resolve()
    args = [f"--impl={options.impl}", f"--conformance-report={report_dir}"]
    # this process imported ckptconform before pytest could mark the plugin for assertion
    # rewriting; pytest-xdist's controller says so (the suite's own modules are rewritten)
    args += ["-W", f"ignore:{_ALREADY_IMPORTED}:pytest.PytestAssertRewriteWarning"]
    if options.backend:
        args.append(f"--backend={options.backend}")
    args += list(pytest_args)
    return int(pytest.main(args))


if __name__ == "__main__":
    sys.exit(main())
