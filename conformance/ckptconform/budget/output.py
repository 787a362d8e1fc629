"""What ``ckptconform budget`` shows people: the phase table and the plot.

The table uses ``rich`` (the progress bar is ``ckptconform.progress``); the plot (requests per
second by operation over the run, with the per-prefix limits of the budgets drawn as lines) uses
matplotlib without a display. Both come with the ``budget`` extra; without matplotlib the plot is
left out with a note, never the figures.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["render_table", "write_plot"]


def _operations(operations: Mapping[str, int]) -> str:
    return ", ".join(f"{op} {n}" for op, n in operations.items()) or "-"


def _size(count: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if count < 1024 or unit == "GiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count = count / 1024  # type: ignore[assignment]
    return str(count)


def render_table(document: Mapping[str, Any]) -> str:
    """The run as text: a header, one row per phase, the totals."""
    rows = []
    for phase in document["phases"]:
        peaks = phase["peak_per_second_per_prefix"]
        status = "ok" if phase["completed"] else f"FAILED: {phase['problem'][:80]}"
        rows.append(
            (
                phase["name"],
                str(phase["requests"]),
                _operations(phase["operations"]),
                f"{peaks.get('write', 0)}/{peaks.get('read', 0)}",
                f"{_size(phase['bytes_sent'])} / {_size(phase['bytes_received'])}",
                f"{phase['failed']}/{phase['retried']}",
                status,
            )
        )
    headers = (
        "phase",
        "requests",
        "by operation",
        "peak/s per prefix (write/read)",
        "bytes sent / received",
        "failed/retried",
        "status",
    )
    shape = document["shape"]
    title = (
        f"{document['target']['name']} on {document['backend']}, {document['runner']}: "
        f"{shape['tasks']} tasks x {shape['streams']} streams x {shape['checkpoints']} "
        "checkpoints"
    )
    totals = document["totals"]
    footer = (
        f"total: {totals['requests']} requests ({_operations(totals['operations'])}) in "
        f"{totals['seconds']:.1f} s; every phase completed: {totals['completed']}"
    )
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        lines = [title, " | ".join(headers)]
        lines += [" | ".join(row) for row in rows]
        return "\n".join([*lines, footer])
    table = Table(title=title, show_lines=False)
    for header in headers:
        table.add_column(header, overflow="fold")
    for row in rows:
        table.add_row(*row, style=None if row[-1] == "ok" else "red")
    buffer = io.StringIO()
    Console(file=buffer, width=200, force_terminal=False).print(table)
    return buffer.getvalue().rstrip() + "\n" + footer


def write_plot(document: Mapping[str, Any], path: Path) -> Path | None:
    """``budget.png``: requests per second by operation, the per-prefix limits as lines."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("ckptconform budget: matplotlib is not installed; no plot (pip install "
              "'checkpoint-conformance[budget]')")  # fmt: skip
        return None
    series: dict[str, dict[int, int]] = {}
    for phase in document["phases"]:
        for operation, counts in phase["series"].items():
            merged = series.setdefault(operation, {})
            for second, count in counts.items():
                merged[int(second)] = merged.get(int(second), 0) + int(count)
    figure, axes = plt.subplots(figsize=(10, 5), dpi=100)
    end = max((max(c) for c in series.values() if c), default=0) + 1
    for operation, counts in sorted(series.items()):
        xs = list(range(end))
        axes.plot(xs, [counts.get(x, 0) for x in xs], label=operation, linewidth=1.4)
    limits = document["budgets"].get("peak_per_second_per_prefix", {})
    styles = {"write": ("tab:red", "write limit per prefix"), "read": ("tab:blue", "read limit")}
    for name, limit in limits.items():
        color, label = styles.get(name, ("tab:gray", f"{name} limit"))
        label = f"{label} ({limit:g}/s)"
        axes.axhline(limit, color=color, linestyle="--", linewidth=1, label=label)
    if limits:
        axes.set_yscale("symlog", linthresh=10)
    axes.set_xlabel("seconds since the start of the run")
    axes.set_ylabel("requests per second")
    shape = document["shape"]
    axes.set_title(
        f"{document['target']['name']}: {shape['tasks']} tasks x {shape['streams']} streams x "
        f"{shape['checkpoints']} checkpoints ({document['runner']})"
    )
    axes.legend(loc="upper right", fontsize="small")
    axes.grid(True, alpha=0.3)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
    return path
