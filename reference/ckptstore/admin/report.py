"""What ``ckptstore audit`` and ``ckptstore inspect`` show: terminal views, JSON and Markdown
reports, and the progress of a long audit.

The terminal view uses ``rich`` tables where ``rich`` can be imported (the ``budget`` extra;
not a dependency of the reference) and standard output is a terminal; plain text otherwise,
so piped output and logs stay greppable. The JSON report is the audit's value
(``AuditResult.to_dict()``) plus the deletion, if one ran; the Markdown report lists every
checkpoint, problem and orphan. Progress goes to stderr: in a terminal one line rewritten in
place, elsewhere a plain line at most every :data:`PLAIN_EVERY` seconds; nothing during the
first :data:`QUIET_FOR` seconds, so short runs print none.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import sys
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ckptstore.admin.audit import OUTSIDE_WARNING, AuditResult, CheckpointAudit
from ckptstore.admin.cleanup import DeletionReport, format_age
from ckptstore.admin.inspect import FILE_CATEGORIES, CheckpointSummary, OperatorSummary

__all__ = [
    "PLAIN_EVERY",
    "QUIET_FOR",
    "LineProgress",
    "audit_dict",
    "audit_markdown",
    "audit_text",
    "human_bytes",
    "inspect_text",
    "show_audit",
    "show_inspect",
    "write_reports",
]

PLAIN_EVERY = 10.0
QUIET_FOR = 2.0
#: orphans listed one by one in the terminal (the reports list all)
SHOWN_ORPHANS = 20


def human_bytes(count: int) -> str:
    size = float(count)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{count} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{count} B"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _age(modified: float | None, now: float) -> str:
    return "?" if modified is None else format_age(max(0.0, now - modified))


# ------------------------------------------------------------------------------- progress


class LineProgress:
    """``ckptstore.admin.audit.Progress`` on stderr (module docstring)."""

    def __init__(self, command: str, stream: Any = None) -> None:
        self.command = command
        self._stream = stream if stream is not None else sys.stderr
        self._tty = bool(getattr(self._stream, "isatty", lambda: False)())
        self._started = time.monotonic()
        self._last = self._started
        self._shown = False

    def step(self, phase: str, done: int, total: int | None = None) -> None:
        now = time.monotonic()
        finished = total is not None and done >= total
        if now - self._started < QUIET_FOR:
            return
        every = 0.1 if self._tty else PLAIN_EVERY
        if now - self._last < every and not (finished and self._shown):
            return
        self._last = now
        of = f"/{total}" if total is not None else ""
        text = f"{self.command}: {phase} {done}{of} ({now - self._started:.0f} s)"
        if self._tty:
            self._stream.write(f"\r\x1b[2K{text}")
        else:
            self._stream.write(text + "\n")
        self._stream.flush()
        self._shown = True

    def close(self) -> None:
        if self._tty and self._shown:
            self._stream.write("\r\x1b[2K")
            self._stream.flush()


# ---------------------------------------------------------------------------------- audit


def audit_dict(result: AuditResult, deletion: DeletionReport | None = None) -> dict[str, Any]:
    """The JSON report: the audit's value and the deletion's, if one ran."""
    value = result.to_dict()
    value["deletion"] = None if deletion is None else _plain(dataclasses.asdict(deletion))
    return value


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value))


def _label(checkpoint: CheckpointAudit) -> str:
    if checkpoint.job is not None:
        return checkpoint.relative.rpartition("/")[2]
    return checkpoint.relative or "."


def _groups(result: AuditResult) -> list[tuple[str, list[CheckpointAudit], list[str]]]:
    """(title, checkpoints, in-flight directories) per job, then the savepoints."""
    jobs: dict[str, list[CheckpointAudit]] = {}
    flights: dict[str, list[str]] = {}
    savepoints = []
    for checkpoint in result.checkpoints:
        if checkpoint.job is None:
            savepoints.append(checkpoint)
        else:
            jobs.setdefault(checkpoint.job, []).append(checkpoint)
    loose = []
    for flight in result.in_flight:
        if flight.job is None:
            loose.append(
                f"{flight.relative} ({_count(flight.files, 'file')}, {human_bytes(flight.bytes)})"
            )
        else:
            jobs.setdefault(flight.job, [])
            name = flight.relative.rpartition("/")[2]
            flights.setdefault(flight.job, []).append(
                f"{name} ({_count(flight.files, 'file')}, {human_bytes(flight.bytes)})"
            )
    groups = []
    for job in sorted(jobs):
        items = sorted(jobs[job], key=lambda c: (c.checkpoint_id or -1, c.relative))
        groups.append((f"job {job or '(the root)'}", items, flights.get(job, [])))
    if savepoints or loose:
        groups.append(("savepoints and other checkpoints", savepoints, loose))
    return groups


_COLUMNS = ("checkpoint", "id", "status", "files", "referenced", "outside", "metadata")


def _row(checkpoint: CheckpointAudit) -> tuple[str, ...]:
    return (
        _label(checkpoint),
        "" if checkpoint.checkpoint_id is None else str(checkpoint.checkpoint_id),
        checkpoint.status,
        str(checkpoint.files),
        human_bytes(checkpoint.referenced_bytes + checkpoint.inline_bytes),
        str(len(checkpoint.outside)),
        human_bytes(checkpoint.metadata_bytes),
    )


def _problem_lines(result: AuditResult) -> list[str]:
    lines = []
    for checkpoint in result.not_intact:
        where = checkpoint.relative or "."
        if checkpoint.error:
            lines.append(f"{where}: unreadable metadata: {checkpoint.error}")
        for problem in checkpoint.problems:
            outside = " (outside the root)" if problem.outside else ""
            found = "" if problem.found_bytes is None else f", holds {problem.found_bytes}"
            lines.append(
                f"{where}: {problem.problem} {problem.url}{outside} "
                f"(needs {problem.needed_bytes} bytes{found})"
            )
        for path in checkpoint.unresolved:
            lines.append(f"{where}: unresolved reference {path} (no store reaches it)")
    return lines


def _verdict(result: AuditResult, deletion: DeletionReport | None) -> str:
    total = len(result.checkpoints)
    intact = total - len(result.not_intact)
    orphan_bytes = sum(o.size for o in result.orphans)
    text = (
        f"{intact} of {total} completed checkpoints and savepoints intact; "
        f"{_count(len(result.orphans), 'orphan')} ({human_bytes(orphan_bytes)})"
    )
    if deletion is not None:
        verb = "would delete" if deletion.dry_run else "deleted"
        text += f"; {verb} {len(deletion.deleted)}, kept {len(deletion.kept)}"
        if deletion.failed:
            text += f", {len(deletion.failed)} deletions failed"
        if deletion.broke:
            text += f"; BROKE {', '.join(deletion.broke)}"
    return text


def _kept_summary(deletion: DeletionReport) -> list[str]:
    reasons = Counter(k.reason for k in deletion.kept)
    return [f"{n} kept: {reason}" for reason, n in reasons.most_common()]


def audit_text(result: AuditResult, deletion: DeletionReport | None = None) -> str:
    """The plain-text terminal view."""
    out = [
        f"ckptstore audit {result.root}",
        f"  {result.kind}; {result.files_listed} files, {human_bytes(result.bytes_listed)}"
        + (f"; written at {result.moved_from}" if result.moved_from else ""),
    ]
    for title, checkpoints, flights in _groups(result):
        out += ["", title]
        if checkpoints:
            out += _aligned([_COLUMNS, *(_row(c) for c in checkpoints)], indent="  ")
        for flight in flights:
            out.append(f"  in flight: {flight}")
    problems = _problem_lines(result)
    if problems:
        out += ["", "not intact:", *(f"  {line}" for line in problems)]
    out += ["", f"orphans: {_count(len(result.orphans), 'file')}"]
    totals = result.orphan_totals()
    rows = [("kind", "files", "bytes")]
    rows += [(k, str(v["files"]), human_bytes(v["bytes"])) for k, v in totals.items()]
    out += _aligned(rows, indent="  ")
    for orphan in result.orphans[:SHOWN_ORPHANS]:
        age = _age(orphan.modified, result.audited_at)
        out.append(f"  {orphan.kind:<10} {human_bytes(orphan.size):>10} {age:>7} {orphan.url}")
    if len(result.orphans) > SHOWN_ORPHANS:
        rest = len(result.orphans) - SHOWN_ORPHANS
        out.append(f"  ... and {rest} more (--json or --markdown lists them all)")
    if deletion is not None:
        state = "dry run, nothing deleted" if deletion.dry_run else "done"
        guard = format_age(deletion.older_than)
        out += ["", f"deletion of orphans older than {guard} ({state}):"]
        verb = "would delete" if deletion.dry_run else "deleted"
        out += [f"  {verb} {url}" for url in deletion.deleted]
        out += [f"  {line}" for line in _kept_summary(deletion)]
        out += [f"  FAILED {url}: {error}" for url, error in deletion.failed]
        out += [f"  BROKEN BY THE DELETION: {d}" for d in deletion.broke]
    out += ["", f"note: {OUTSIDE_WARNING}", "", _verdict(result, deletion)]
    return "\n".join(out)


def _aligned(rows: Sequence[Sequence[str]], indent: str = "") -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [
            cell.ljust(widths[i]) if i == 0 or not _numeric(cell) else cell.rjust(widths[i])
            for i, cell in enumerate(row)
        ]
        lines.append((indent + "  ".join(cells)).rstrip())
    return lines


def _numeric(cell: str) -> bool:
    return bool(cell) and (cell[0].isdigit() or cell == "?")


def audit_markdown(result: AuditResult, deletion: DeletionReport | None = None) -> str:
    """The Markdown report: every checkpoint, problem and orphan."""
    when = datetime.datetime.fromtimestamp(result.audited_at, datetime.UTC)
    out = [
        f"# Audit of `{result.root}`",
        "",
        f"{when:%Y-%m-%d %H:%M:%S} UTC. {result.kind}; {result.files_listed} files, "
        f"{human_bytes(result.bytes_listed)}"
        + (f"; written at `{result.moved_from}`" if result.moved_from else "")
        + ".",
        "",
        f"**{_verdict(result, deletion)}**",
        "",
        f"> {OUTSIDE_WARNING}",
    ]
    for title, checkpoints, flights in _groups(result):
        out += ["", f"## {title}", ""]
        if checkpoints:
            out += _md_table(_COLUMNS, [_row(c) for c in checkpoints])
        for flight in flights:
            out.append(f"- in flight: {flight}")
    problems = _problem_lines(result)
    if problems:
        out += ["", "## Not intact", "", *(f"- {_md_escape(p)}" for p in problems)]
    out += ["", "## Orphans", ""]
    totals = result.orphan_totals()
    out += _md_table(
        ("kind", "files", "bytes"),
        [(k, str(v["files"]), human_bytes(v["bytes"])) for k, v in totals.items()],
    )
    if result.orphans:
        out.append("")
        out += _md_table(
            ("kind", "bytes", "age", "file"),
            [
                (o.kind, str(o.size), _age(o.modified, result.audited_at), f"`{o.url}`")
                for o in result.orphans
            ],
        )
    if deletion is not None:
        state = "dry run: nothing was deleted" if deletion.dry_run else "carried out"
        out += ["", f"## Deletion ({state})", ""]
        verb = "would delete" if deletion.dry_run else "deleted"
        out += [f"- {verb} `{url}`" for url in deletion.deleted]
        out += [f"- kept `{k.url}`: {_md_escape(k.reason)}" for k in deletion.kept]
        out += [f"- FAILED `{url}`: {_md_escape(error)}" for url, error in deletion.failed]
        out += [f"- BROKEN BY THE DELETION: {d}" for d in deletion.broke]
    return "\n".join(out) + "\n"


def _md_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_md_escape(c) for c in row) + " |" for row in rows]
    return lines


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def show_audit(result: AuditResult, deletion: DeletionReport | None = None) -> None:
    """Print the terminal view: rich tables in a terminal where rich imports, else text."""
    console = _rich_console()
    if console is None:
        print(audit_text(result, deletion))
        return
    from rich.table import Table

    console.print(f"[bold]ckptstore audit[/bold] {result.root}")
    console.print(
        f"  {result.kind}; {result.files_listed} files, {human_bytes(result.bytes_listed)}"
    )
    for title, checkpoints, flights in _groups(result):
        table = Table(title=title, title_justify="left")
        for column in _COLUMNS:
            left = column in ("checkpoint", "status")
            table.add_column(
                column, justify="left" if left else "right", overflow="fold", no_wrap=not left
            )
        for checkpoint in checkpoints:
            row = list(_row(checkpoint))
            colour = "green" if checkpoint.status == "intact" else "red"
            row[2] = f"[{colour}]{row[2]}[/{colour}]"
            table.add_row(*row)
        console.print(table)
        for flight in flights:
            console.print(f"  in flight: {flight}")
    # the rest as text: problems, orphans, deletion, note, verdict
    text = audit_text(result, deletion)
    start = text.find("\nnot intact:")
    tail = text[start if start >= 0 else text.index("\norphans:") :]
    console.print(tail, markup=False, highlight=False, soft_wrap=True)


def write_reports(
    result: AuditResult,
    deletion: DeletionReport | None,
    *,
    json_path: str | None,
    markdown_path: str | None,
) -> None:
    if json_path:
        Path(json_path).write_text(json.dumps(audit_dict(result, deletion), indent=2) + "\n")
    if markdown_path:
        Path(markdown_path).write_text(audit_markdown(result, deletion))


# -------------------------------------------------------------------------------- inspect


def _state_kinds(op: OperatorSummary) -> str:
    """An operator's kinds of state and their counts; incremental keyed state with its shared
    and private files."""
    parts = []
    for kind, count in op.state_kinds.items():
        text = f"{kind} {count}"
        if kind == "keyed (incremental)":
            text += (
                f" (shared {op.incremental_shared_files}, private {op.incremental_private_files})"
            )
        parts.append(text)
    return ", ".join(parts) or "-"


def inspect_text(summary: CheckpointSummary) -> str:
    """The plain-text view of ``ckptstore inspect``."""
    out = [
        f"ckptstore inspect {summary.metadata_url}",
        f"  checkpoint id {summary.checkpoint_id}, format version {summary.format_version}, "
        f"{summary.snapshot_type or 'type unknown'}, {summary.master_states} master states, "
        f"_metadata {human_bytes(summary.metadata_bytes)}",
        "",
        "operators",
    ]
    rows: list[tuple[str, ...]] = [
        ("id", "name / uid", "par", "max", "subtasks", "state", "files", "bytes")
    ]
    for op in summary.operators:
        name = op.name or ""
        if op.uid:
            name = f"{name} / {op.uid}" if name else f"/ {op.uid}"
        subtasks = "finished" if op.subtasks is None else f"{op.subtasks_with_state}/{op.subtasks}"
        kinds = _state_kinds(op)
        rows.append(
            (
                op.operator_id,
                name or "-",
                str(op.parallelism),
                str(op.max_parallelism),
                subtasks,
                kinds,
                str(op.files),
                human_bytes(op.file_bytes + op.inline_bytes),
            )
        )
    out += _aligned(rows, indent="  ")
    out += ["", "files"]
    file_rows: list[tuple[str, ...]] = [("where", "bytes", "file")]
    order = {c: i for i, c in enumerate(FILE_CATEGORIES)}
    for f in sorted(summary.files, key=lambda f: (order[f.category], f.url)):
        file_rows.append((f.category, str(f.needed_bytes), f.url))
    out += _aligned(file_rows, indent="  ")
    for path in summary.unresolved:
        out.append(f"  unresolved (no store reaches it): {path}")
    out += ["", "totals"]
    totals = summary.totals()
    total_rows: list[tuple[str, ...]] = [("where", "files", "bytes")]
    total_rows += [
        (c, str(t["files"]) if c != "inline" else "", human_bytes(t["bytes"]))
        for c, t in totals.items()
    ]
    all_bytes = sum(t["bytes"] for t in totals.values())
    total_rows.append(("all", str(len(summary.files)), human_bytes(all_bytes)))
    out += _aligned(total_rows, indent="  ")
    return "\n".join(out)


def show_inspect(summary: CheckpointSummary) -> None:
    console = _rich_console()
    if console is None:
        print(inspect_text(summary))
    else:
        console.print(inspect_text(summary), markup=False, highlight=False, soft_wrap=True)


def _rich_console() -> Any:
    if not sys.stdout.isatty():
        return None
    try:
        from rich.console import Console
    except ImportError:
        return None
    return Console()
