"""What ``ckptconform budget`` shows people: the phase table, the projection, the verdict, the plot.

The tables use ``rich`` (the progress bar is ``ckptconform.progress``); ``budget.md`` holds the same
tables in Markdown. The plot (``budget.png``) uses matplotlib without a display: on top the run
(requests per second by operation, the tasks' phases shaded, each checkpoint's burst a spike); below
the projection (the peak per key prefix against the job's parallelism, S3's limits as lines).
Both come with the ``budget`` extra; without matplotlib the plot is left out with a note, never the
figures.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["render_markdown", "render_projection", "render_table", "verdict", "write_plot"]


def _operations(operations: Mapping[str, int]) -> str:
    return ", ".join(f"{op} {n}" for op, n in operations.items()) or "-"


def _size(count: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if count < 1024 or unit == "GiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count = count / 1024  # type: ignore[assignment]
    return str(count)


def _phase_rows(document: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    rows = []
    for phase in document["phases"]:
        peaks = phase["peak_per_second_per_prefix"]
        status = "ok" if phase["completed"] else f"FAILED: {phase['problem'][:80]}"
        window = phase.get("window_seconds")
        recovery = phase.get("recovery_seconds")
        rows.append(
            [
                phase["name"],
                str(phase["requests"]),
                _operations(phase["operations"]),
                "-" if window is None else f"{window:.2f}",
                f"{peaks.get('write', 0)}/{peaks.get('read', 0)}",
                f"{_size(phase['bytes_sent'])} / {_size(phase['bytes_received'])}",
                f"{phase['failed']}/{phase['retried']}"
                + ("" if recovery is None else f" ({recovery:.1f} s)"),
                status,
            ]
        )
    headers = [
        "phase",
        "requests",
        "by operation",
        "window s",
        "peak/s per prefix (write/read)",
        "bytes sent / received",
        "failed/retried (recovery)",
        "status",
    ]
    return headers, rows


def _title(document: Mapping[str, Any]) -> str:
    shape = document["shape"]
    entropy = document.get("entropy_length") or 0
    return (
        f"{document['target']['name']} on {document['backend']}, {document['runner']}: "
        f"{shape['tasks']} tasks x {shape['streams']} streams x {shape['checkpoints']} "
        "checkpoints" + (f", entropy injection ({entropy} characters)" if entropy else "")
    )


def _render(title: str, headers: Sequence[str], rows: Sequence[Sequence[str]], bad: int) -> str:
    """A rich table as text (plain lines without rich); rows whose column ``bad`` is not ok red."""
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        lines = [title, " | ".join(headers)]
        return "\n".join([*lines, *(" | ".join(row) for row in rows)])
    table = Table(title=title, show_lines=False)
    for header in headers:
        table.add_column(header, overflow="fold")
    for row in rows:
        table.add_row(*row, style=None if row[bad] in ("ok", "") else "red")
    buffer = io.StringIO()
    Console(file=buffer, width=200, force_terminal=False).print(table)
    return buffer.getvalue().rstrip()


def render_table(document: Mapping[str, Any]) -> str:
    """The run as text: a header, one row per phase, the totals."""
    headers, rows = _phase_rows(document)
    totals = document["totals"]
    footer = (
        f"total: {totals['requests']} requests ({_operations(totals['operations'])}) in "
        f"{totals['seconds']:.1f} s; every phase completed: {totals['completed']}"
    )
    return _render(_title(document), headers, rows, -1) + "\n" + footer


def _projection_rows(document: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    projection = document["projection"]
    p = projection["parallelism"]
    headers = [
        "tasks of",
        "operation",
        "per phase",
        "prefixes",
        "busiest prefix (share)",
        "per subtask",
        "measured peak/s",
        f"peak/s at P={p:,}",
        "limit/s",
        "limit reached at P",
        f"P={p:,}",
    ]
    rows = []
    for row in projection["rows"]:
        over = row["projected_peak_per_second"] > row["limit"]
        reach = row["limit_parallelism"]
        rows.append(
            [
                row["phase"],
                row["operation"],
                str(row["requests_per_phase"]),
                str(row["prefixes"]),
                f"{row['busiest_prefix']} ({row['busiest_share']:.0%})",
                f"{row['per_subtask']:g}",
                str(row["measured_peak_per_second"]),
                f"{row['projected_peak_per_second']:,.0f}",
                f"{row['limit']:,.0f}",
                "-" if reach is None else f"{reach:,}",
                "OVER" if over else "ok",
            ]
        )
    return headers, rows


def _projection_title(document: Mapping[str, Any]) -> str:
    projection = document["projection"]
    limits = projection["limits"]
    return (
        f"Projected peak per key prefix for a job of parallelism P (measured with "
        f"{projection['tasks']} tasks; a phase's requests on a prefix within one second, growing "
        f"with P; S3: {limits.get('write', 0):,.0f} writes, {limits.get('read', 0):,.0f} reads "
        "per second per prefix)"
    )


def render_projection(document: Mapping[str, Any]) -> str:
    """The projection to S3's per-prefix limits, one row per phase group and operation."""
    headers, rows = _projection_rows(document)
    if not rows:
        return "projection: no task phase sent a request"
    return _render(_projection_title(document), headers, rows, -1)


def _markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|") or " "

    lines = ["| " + " | ".join(cell(h) for h in headers) + " |"]
    lines.append("|" + "---|" * len(headers))
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def render_markdown(document: Mapping[str, Any], plot: Path | None) -> str:
    """``budget.md``: the verdict, the projection, the phases, the plot."""
    parts = [f"# Request budget: {_title(document)}", "", f"**{document['verdict']}**", ""]
    spark = document.get("spark") or {}
    if spark:
        parts += [
            f"Spark {spark['master']}: {spark['jobs']} jobs, {spark['tasks']} subtasks in "
            f"{spark['python_workers']} Python worker(s); started in "
            f"{spark['startup_seconds']} s (before the run's clock).",
            "",
        ]
    if document["violations"]:
        parts += ["## Exceeded", ""]
        parts += [f"- {v['text']}" for v in document["violations"]]
        parts.append("")
    audit = document.get("root_audit")
    if audit:
        parts += ["## What is left below the root", "", audit["text"], ""]
    headers, rows = _projection_rows(document)
    parts += ["## Projection to S3's per-prefix limits", "", _projection_title(document) + ".", ""]
    parts += [_markdown_table(headers, rows) if rows else "No task phase sent a request.", ""]
    headers, rows = _phase_rows(document)
    parts += ["## Phases", "", _markdown_table(headers, rows), ""]
    totals = document["totals"]
    parts.append(
        f"Total: {totals['requests']} requests ({_operations(totals['operations'])}) in "
        f"{totals['seconds']:.1f} s."
    )
    if plot is not None:
        parts += ["", f"![requests over the run and the projection]({plot.name})"]
    return "\n".join(parts) + "\n"


def verdict(
    document: Mapping[str, Any],
    projections: Sequence[Any],
    violations: Sequence[Any],
    beyond: Sequence[Any],
) -> str:
    """The one line the command ends with: PASS or FAIL, and the projected peak per prefix."""
    from ckptconform.budget.projection import binding

    projection = document["projection"]
    p = projection["parallelism"]
    worst = binding(projections, p)
    peak = ""
    if worst is not None:
        row = worst.row(p)
        reach = row["limit_parallelism"]
        peak = (
            f"at parallelism {p:,} the peak is {row['projected_peak_per_second']:,.0f} "
            f"{worst.what}/s per prefix in the {worst.group} tasks (limit "
            f"{worst.limit:,.0f}"
            + (f", reached at parallelism {reach:,}" if reach is not None else "")
            + ")"
        )
    if document["passed"]:
        what = (
            "every phase within its budget"
            if document["gated_on_budgets"]
            else "every phase completed under the faults (budgets not gated)"
        )
        orphans = "no orphan below the root" if "root_audit" in document else ""
        return "budget: PASS — " + "; ".join(x for x in (what, orphans, peak) if x)
    problems = []
    if not document["totals"]["completed"]:
        problems.append("not every phase completed")
    audit = document.get("root_audit") or {}
    if audit.get("error"):
        problems.append(f"the root's audit was not made ({audit['error']})")
    elif audit.get("orphan_count"):
        problems.append(
            f"{audit['orphan_count']} orphan(s) below the root (first: {audit['orphans'][0]})"
        )
    if document["gated_on_budgets"] and violations:
        first = violations[0].describe()
        more = f" and {len(violations) - 1} more" if len(violations) > 1 else ""
        problems.append(f"{len(violations)} budget(s) exceeded: {first}{more}")
    if beyond and worst is not None:
        more = f" (and {len(beyond) - 1} more)" if len(beyond) > 1 else ""
        reach = worst.limit_parallelism
        problems.append(
            f"at parallelism {p:,} the projected peak is {worst.peak_at(p):,.0f} {worst.what}/s "
            f"per prefix in the {worst.group} tasks, over S3's limit of {worst.limit:,.0f}"
            + (f" (reached at parallelism {reach:,})" if reach is not None else "")
            + more
        )
    return "budget: FAIL — " + "; ".join(problems)


#: Operation colours; S3's limits are drawn in black and grey, which no operation uses.
_COLOURS = {
    "PutObject": "tab:blue",
    "GetObject": "tab:green",
    "HeadObject": "tab:orange",
    "ListObjectsV2": "tab:purple",
    "ListObjects": "tab:purple",
    "ListMultipartUploads": "tab:pink",
    "DeleteObjects": "tab:brown",
    "DeleteObject": "tab:olive",
    "CopyObject": "tab:cyan",
}
_OTHER_COLOURS = ("tab:red", "gold", "teal", "navy", "salmon")
_LIMIT_STYLES = {"write": ("black", "--"), "read": ("dimgray", ":")}
_SHADES = {"worker": "#f6d7a7", "restore_worker": "#cfe3f3"}
_BINS = (0.05, 0.1, 0.2, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0)


def _colour(operation: str, taken: dict[str, str]) -> str:
    if operation not in taken:
        spare = [c for c in _OTHER_COLOURS if c not in taken.values()] or ["tab:red"]
        taken[operation] = _COLOURS.get(operation, spare[0])
    return taken[operation]


def _bin_width(duration: float) -> float:
    """The narrowest of a few round widths that gives at most 400 bins."""
    return next((width for width in _BINS if duration / width <= 400), _BINS[-1])


def _phase_label(phase: Mapping[str, Any]) -> str:
    name = str(phase["name"])
    number = phase.get("checkpoint_id")
    if phase["kind"] == "restore_worker":
        return f"restore {'sp ' if 'savepoint' in name else ''}{number}"
    return f"sp {number}" if name.startswith("savepoint") else f"chk {number}"


def _draw_run(axes: Any, document: Mapping[str, Any], colours: dict[str, str]) -> str:
    """Requests per second over the run by operation; returns the caption about the limits."""
    events = [(float(t), str(op)) for ph in document["phases"] for t, op in ph.get("timeline", [])]
    end = max(
        [float(ph.get("finished", 0.0)) for ph in document["phases"]] + [t for t, _ in events],
        default=0.0,
    )
    end = max(end, 0.5)
    width = _bin_width(end)
    bins = max(1, math.ceil(end / width))
    counts: dict[str, list[int]] = {}
    for t, op in events:
        counts.setdefault(op, [0] * bins)[min(bins - 1, int(t / width))] += 1
    xs = [i * width for i in range(bins + 1)]
    top = 0.0
    for op in sorted(counts, key=lambda o: -sum(counts[o])):
        rates = [c / width for c in counts[op]]
        top = max([top, *rates])
        axes.stairs(rates, xs, color=_colour(op, colours), linewidth=1.3, label=op, zorder=3)
    for phase in document["phases"]:
        shade = _SHADES.get(phase["kind"])
        if shade is None or "started" not in phase:
            continue
        left, right = float(phase["started"]), float(phase["finished"])
        axes.axvspan(left, max(right, left + width), color=shade, alpha=0.5, linewidth=0, zorder=0)
        axes.annotate(
            _phase_label(phase), (left, 1.0), xycoords=("data", "axes fraction"),
            xytext=(1, -2), textcoords="offset points", fontsize=7, va="top", rotation=90,
        )  # fmt: skip
    top = max(top, 1.0)
    limits = document.get("projection", {}).get("limits", {})
    shown, hidden = [], []
    for name, limit in sorted(limits.items()):
        if limit <= top * 2:
            colour, style = _LIMIT_STYLES.get(name, ("gray", "-."))
            axes.axhline(limit, color=colour, linestyle=style, linewidth=1, label=f"{name} limit")
            shown.append(name)
        else:
            hidden.append(f"{limit:,.0f} {name}s")
    axes.set_xlim(0, end)
    axes.set_ylim(0, max([top * 1.15, *(limits[n] * 1.1 for n in shown)]))
    axes.set_xlabel("seconds since the start of the run")
    axes.set_ylabel(f"requests/s, all prefixes\n({width:g} s bins)")
    axes.grid(True, alpha=0.3)
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
    if not hidden:
        return ""
    return (
        f"S3's per-prefix limits ({', '.join(hidden)} per second) are off this scale "
        f"(busiest bin {top:,.0f}/s over all prefixes): see the projection below."
    )


def _draw_projection(axes: Any, document: Mapping[str, Any], colours: dict[str, str]) -> None:
    """Projected peak per prefix against parallelism, one line per phase group and class."""
    projection = document["projection"]
    rows = [r for r in projection["rows"] if r["whole_class"]]
    limits = projection["limits"]
    p = projection["parallelism"]
    reach = [r["limit_parallelism"] for r in rows if r["limit_parallelism"]]
    right = max([p * 4, projection["tasks"] * 4, *(2 * x for x in reach)], default=100)
    xs = [1.0, float(right)]
    styles = {"checkpoint": "-", "savepoint": "--", "restore": "-."}
    for row in rows:
        per = row["per_subtask"]
        colour = "tab:blue" if row["limit_class"] == "write" else "tab:green"
        label = f"{row['phase']} tasks, {row['operation']} ({row['busiest_prefix']})"
        axes.plot(xs, [per * x for x in xs], styles.get(row["phase"], ":"), color=colour,
                  linewidth=1.4, label=label)  # fmt: skip
        axes.plot([projection["tasks"]], [max(row["measured_peak_per_second"], 0.5)], "o",
                  color=colour, markersize=4)  # fmt: skip
    for name, limit in sorted(limits.items()):
        colour, style = _LIMIT_STYLES.get(name, ("gray", "-."))
        axes.axhline(limit, color=colour, linestyle=style, linewidth=1,
                     label=f"S3 {name} limit {limit:,.0f}/s")  # fmt: skip
    target = projection.get("parallelism_target")
    axes.axvline(p, color="gray", linewidth=0.8, alpha=0.7)
    axes.annotate(
        f"P = {p:,}" + (" (target)" if target else " (the run's tasks)"), (p, 0.02),
        xycoords=("data", "axes fraction"), xytext=(3, 0), textcoords="offset points",
        fontsize=7, color="dimgray",
    )  # fmt: skip
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlim(1, right)
    axes.set_ylim(0.3, max(limits.values(), default=1) * 4)
    axes.set_xlabel("job parallelism P (subtasks)")
    axes.set_ylabel("peak requests/s\non the busiest prefix")
    axes.grid(True, which="major", alpha=0.3)
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)


def write_plot(document: Mapping[str, Any], path: Path) -> Path | None:
    """``budget.png``: the run over time, then the projection to S3's per-prefix limits."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("ckptconform budget: matplotlib is not installed; no plot (pip install "
              "'checkpoint-conformance[budget]')")  # fmt: skip
        return None
    figure, (run_axes, projection_axes) = plt.subplots(
        2, 1, figsize=(11, 8), dpi=100, gridspec_kw={"height_ratios": [3, 2]}
    )
    colours: dict[str, str] = {}
    caption = _draw_run(run_axes, document, colours)
    shape = document["shape"]
    entropy = document.get("entropy_length") or 0
    run_axes.set_title(
        f"{document['target']['name']} on {str(document['backend']).split(' (')[0]}, "
        f"{document['runner']}: {shape['tasks']} tasks x {shape['streams']} streams x "
        f"{shape['checkpoints']} checkpoints" + (f", entropy {entropy}" if entropy else ""),
        fontsize=10,
        loc="left",
    )
    _draw_projection(projection_axes, document, colours)
    projection_axes.set_title(
        "Projection: a phase's requests on its busiest prefix within one second, growing with P "
        "(dots: measured)",
        fontsize=9,
        loc="left",
    )
    notes = [
        "Shaded: the task phase of a checkpoint or savepoint (orange) or a restore (blue): the job "
        "is scheduled, every subtask prepares, then all start at one signal (the spike).",
        caption,
        str(document.get("verdict", "")),
    ]
    figure.text(0.01, 0.005, "\n".join(n for n in notes if n), fontsize=8, va="bottom",
                wrap=True)  # fmt: skip
    figure.tight_layout(rect=(0, 0.07, 1, 1))
    figure.savefig(path)
    plt.close(figure)
    return path
