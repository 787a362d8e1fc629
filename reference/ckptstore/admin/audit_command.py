"""``ckptstore audit ROOT``: whether the checkpoints under a root restore, and its orphans.

ROOT is a base directory of jobs, one job's directory, a savepoint directory, a directory of
savepoints, or any tree holding them, on local, S3, SFTP or ``memory://``. The audit
(``ckptstore.admin.audit``) lists ROOT once (on S3 its ListObjectsV2 pages), reads each
``_metadata`` once (on S3 one GET) and asks once about each file referenced from outside
ROOT. ``--delete-orphans --older-than=DURATION`` deletes the orphans older than DURATION
(``ckptstore.admin.cleanup``; a dry run unless ``--yes``) and audits again.

Exit codes: 0 when every completed checkpoint and savepoint is intact; 1 when one is not
(broken, unreadable metadata, unverifiable references) or a deletion broke one or failed;
2 on usage errors and for a root that cannot be listed (one line on stderr).
"""

from __future__ import annotations

import argparse
import time

from ckptstore.admin import arguments, cleanup, report
from ckptstore.admin.audit import INTACT, AuditResult, run_audit
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
    progress = None if args.quiet else report.LineProgress("ckptstore audit")
    try:
        first = run_audit(args.root, options, moved_from=args.moved_from, progress=progress)
        deletion = None
        if older_than is not None:
            plan = cleanup.plan_deletion(first.result, first.referenced, older_than, time.time())
            root = parse_storage_path(first.result.root)
            fs = filesystem_for(root, register_path(root, options))
            deletion = cleanup.delete_planned(fs, root, plan, dry_run=not args.yes)
        final = first.result
        if deletion is not None and not deletion.dry_run:
            again = run_audit(args.root, options, moved_from=args.moved_from, progress=progress)
            final = again.result
            deletion = _with_breakage(deletion, first.result, final)
    except (CheckpointStorageError, OSError) as exc:
        return arguments.fail("audit", exc)
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
