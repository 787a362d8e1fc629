"""``ckptstore audit ROOT``: whether the checkpoints under a root restore, and its orphans.

ROOT is a base directory of jobs, one job's directory, a savepoint directory, a directory of
savepoints, or any tree holding them, on local, S3, SFTP or ``memory://``. The audit
(``ckptstore.admin.audit``) lists ROOT once (on S3 its ListObjectsV2 pages), reads each
``_metadata`` once (on S3 one GET) and asks once about each file referenced from outside
ROOT. ``--delete-orphans --older-than=DURATION`` deletes the orphans older than DURATION
(``ckptstore.admin.cleanup``; a dry run unless ``--yes``) and audits again.
``--spark-master URL`` runs the listing, the reads and the join on a Spark cluster
(``ckptstore.admin.spark_audit``; ``local-cluster[2,1,1024]``, ``local[N]`` or a cluster URL)
with the same result; without it the audit runs in this process.

Exit codes: 0 when every completed checkpoint and savepoint is intact; 1 when one is not
(broken, unreadable metadata, unverifiable references) or a deletion broke one or failed;
2 on usage errors and for a root that cannot be listed (one line on stderr).
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

from ckptstore.admin import arguments, cleanup, report
from ckptstore.admin.audit import INTACT, AuditResult, AuditRun, run_audit
from ckptstore.errors import CheckpointStorageError, InvalidArgumentError
from ckptstore.paths import parse_storage_path
from ckptstore.stores.registry import filesystem_for, register_path

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("root", help="the directory to audit (a URL or a local path)")
    parser.add_argument("--json", metavar="PATH", help="write the JSON report to PATH")
    parser.add_argument("--markdown", metavar="PATH", help="write the Markdown report to PATH")
    parser.add_argument(
        "--delete-orphans",
        action="store_true",
        help="delete the orphans older than --older-than (a dry run unless --yes)",
    )
    parser.add_argument(
        "--older-than",
        metavar="DURATION",
        help="with --delete-orphans (required): only orphans at least this old, e.g. 2h, 7d; "
        "longer than any checkpoint takes",
    )
    parser.add_argument("--yes", action="store_true", help="with --delete-orphans: really delete")
    parser.add_argument("--quiet", action="store_true", help="no terminal view, no progress")
    arguments.add_moved_from(parser)
    arguments.add_storage_options(parser)
    spark = parser.add_argument_group("on Spark")
    spark.add_argument(
        "--spark-master",
        metavar="URL",
        help="list, read and join on this Spark master (local-cluster[2,1,1024], local[4], "
        "spark://host:7077...); needs pyspark and Java 17",
    )
    spark.add_argument(
        "--spark-conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="with --spark-master: a Spark setting (repeatable)",
    )
    spark.add_argument(
        "--shared-ranges",
        type=int,
        default=1,
        metavar="N",
        help="with --spark-master on S3: list each job's shared/ as N key ranges at once "
        "(1 to 16; default 1: one task per job)",
    )


def run(args: argparse.Namespace) -> int:
    parser: argparse.ArgumentParser = args.parser
    options = arguments.storage_options(args, parser)
    older_than = None
    if args.delete_orphans and not args.older_than:
        parser.error("--delete-orphans needs --older-than=DURATION (e.g. 2h or 7d)")
    if args.older_than and not args.delete_orphans:
        parser.error("--older-than goes with --delete-orphans")
    if args.yes and not args.delete_orphans:
        parser.error("--yes goes with --delete-orphans")
    if args.older_than:
        try:
            older_than = cleanup.parse_duration(args.older_than)
        except InvalidArgumentError as exc:
            parser.error(f"--older-than: {exc}")
    spark_conf = _spark_settings(args, parser)
    progress = None if args.quiet else report.LineProgress("ckptstore audit")
    try:
        with _auditor(args, options, spark_conf) as audit:
            return _audit_and_report(args, options, older_than, audit, progress)
    except (CheckpointStorageError, OSError) as exc:
        return arguments.fail("audit", exc)
    finally:
        if progress is not None:
            progress.close()


def _spark_settings(args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict[str, str]:
    if args.spark_master is None:
        if args.spark_conf or args.shared_ranges != 1:
            parser.error("--spark-conf and --shared-ranges go with --spark-master")
        return {}
    if not 1 <= args.shared_ranges <= 16:
        parser.error("--shared-ranges: 1 to 16")
    conf = {}
    for item in args.spark_conf:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            parser.error(f"--spark-conf expects KEY=VALUE, got {item!r}")
        conf[key.strip()] = value
    return conf


_Audit = Callable[[Any], AuditRun]


@contextlib.contextmanager
def _auditor(
    args: argparse.Namespace, options: dict[str, Any], spark_conf: dict[str, str]
) -> Iterator[_Audit]:
    """The audit of ``args.root`` as a function of the progress display: in this process, or
    on one Spark session for the audit and the re-audit after a deletion."""
    if args.spark_master is None:
        yield lambda progress: run_audit(
            args.root, options, moved_from=args.moved_from, progress=progress
        )
        return
    from ckptstore.admin import spark_audit

    with spark_audit.spark_session(args.spark_master, spark_conf) as session:
        yield lambda progress: spark_audit.run_spark_audit(
            session,
            args.root,
            options,
            moved_from=args.moved_from,
            progress=progress,
            shared_ranges=args.shared_ranges,
        )


def _audit_and_report(
    args: argparse.Namespace,
    options: dict[str, Any],
    older_than: float | None,
    audit: _Audit,
    progress: Any,
) -> int:
    try:
        first = audit(progress)
        deletion = None
        if older_than is not None:
            plan = cleanup.plan_deletion(first.result, first.referenced, older_than, time.time())
            root = parse_storage_path(first.result.root)
            fs = filesystem_for(root, register_path(root, options))
            deletion = cleanup.delete_planned(fs, root, plan, dry_run=not args.yes)
        final = first.result
        if deletion is not None and not deletion.dry_run:
            final = audit(progress).result
            deletion = _with_breakage(deletion, first.result, final)
    finally:
        if progress is not None:
            progress.close()
    report.write_reports(final, deletion, json_path=args.json, markdown_path=args.markdown)
    if not args.quiet:
        report.show_audit(final, deletion)
    problem = bool(final.not_intact) or (
        deletion is not None and bool(deletion.broke or deletion.failed)
    )
    return arguments.EXIT_PROBLEM if problem else arguments.EXIT_OK


def _with_breakage(
    deletion: cleanup.DeletionReport, before: AuditResult, after: AuditResult
) -> cleanup.DeletionReport:
    """The deletion with the directories that were intact before it and are not after."""
    status = {c.directory: c.status for c in after.checkpoints}
    broke = tuple(
        c.relative or "."
        for c in before.checkpoints
        if c.status == INTACT and status.get(c.directory) != INTACT
    )
    return cleanup.DeletionReport(
        deletion.dry_run,
        deletion.older_than,
        deletion.deleted,
        deletion.kept,
        deletion.failed,
        broke,
    )
