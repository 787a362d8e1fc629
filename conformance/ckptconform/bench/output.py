"""What ``ckptconform bench`` shows people: tables, ``bench.md``, ``bench.png``.

The same sections go to the terminal (``rich`` tables when installed, plain text otherwise)
and to ``bench.md``: the figures (median, min..max of every variant), the ratios per
repetition, peak RSS, S3 requests per checkpoint, the suite's wall time, and the targets with
their verdicts. The chart (matplotlib, without a display) draws write and read throughput per
size and leg, the inline path, the threads figure and peak RSS against its bound, each variant
in one colour throughout. Both
libraries come with the ``budget`` extra; without matplotlib the chart is left out with a note.
"""

from __future__ import annotations

import io
import math
import re
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ckptconform.bench.stats import Check

__all__ = ["render_table", "sections", "write_markdown", "write_plot"]

MIB = 1 << 20
Row = tuple[str, ...]
Section = tuple[str, Row, list[Row]]


# --------------------------------------------------------------------------- formatting


def number(value: float) -> str:
    """A figure with a sensible number of digits."""
    if math.isinf(value):
        return "inf"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}" if value else "0"


def spread(summary: Mapping[str, Any]) -> str:
    return f"{number(summary['min'])}..{number(summary['max'])}"


def sections(document: Mapping[str, Any], checks: Sequence[Check]) -> list[Section]:
    """The run as titled tables: (title, headers, rows)."""
    found: list[Section] = []
    rows: list[Row] = []
    ratio_rows: list[Row] = []
    for figure in document.get("figures", []):
        if figure.get("error"):
            rows.append((figure["label"], "ERROR", figure["error"], "", ""))
            continue
        for variant, value in figure["values"].items():
            rows.append(
                (figure["label"], variant, number(value["median"]), spread(value), figure["unit"])
            )
        for name, ratio in figure["ratios"].items():
            ratio_rows.append((figure["label"], name, f"{number(ratio['median'])}x", spread(ratio)))
    if rows:
        found.append(("Figures", ("figure", "variant", "median", "min..max", "unit"), rows))
    if ratio_rows:
        found.append(
            ("Ratios per repetition", ("figure", "ratio", "median", "min..max"), ratio_rows)
        )
    found += peer_sections(document)
    rss_rows: list[Row] = []
    for entry in document.get("rss", []):
        if entry.get("error"):
            growth, seconds = "ERROR: " + entry["error"][:120], ""
        else:
            growth = number(entry["growth"]["median"])
            seconds = number(float(entry["seconds"]))
        rss_rows.append(
            (entry["leg"], entry["variant"], f"{entry['size'] // MIB} MiB", growth, seconds)
        )
    if rss_rows:
        found.append(
            (
                "Peak RSS of one stream (MiB above the process before writing)",
                ("leg", "variant", "written", "peak RSS growth MiB", "seconds"),
                rss_rows,
            )
        )
    requests = document.get("requests") or {}
    if requests.get("rows") or requests.get("error") or requests.get("skipped"):
        request_rows: list[Row] = [
            (
                row["what"],
                str(row["requests"]),
                str(row["minimum"]),
                ", ".join(f"{op} {n}" for op, n in row["operations"].items()) or "-",
            )
            for row in requests.get("rows", [])
        ]
        if requests.get("setup"):
            ops = ", ".join(f"{op} {n}" for op, n in requests["setup"].items())
            request_rows.append(("setup (once per job)", str(sum(requests["setup"].values())),
                                 "-", ops))  # fmt: skip
        for dispose in requests.get("dispose", []):
            ops = ", ".join(f"{op} {n}" for op, n in dispose["operations"].items())
            request_rows.append((dispose["what"], str(sum(dispose["operations"].values())),
                                 "-", ops))  # fmt: skip
        problem = requests.get("error") or requests.get("skipped")
        if problem:
            request_rows.append(("(not measured)" if requests.get("skipped") else "ERROR",
                                 "", "", str(problem)[:200]))  # fmt: skip
        shape = requests.get("shape") or {}
        title = "S3 requests (first attempts) against the minimum"
        if shape:
            title += f": {shape['tasks']} tasks x {shape['streams']} streams, {requests.get('leg')}"
        found.append((title, ("what", "requests", "minimum", "by operation"), request_rows))
    suite = document.get("suite") or {}
    if suite.get("legs"):
        found.append(
            (
                f"Suite wall time per leg ({suite.get('profile', 'ci')} profile)",
                ("leg", "seconds", "exit code", "pytest"),
                [
                    (
                        leg["name"],
                        "-" if leg.get("skipped") else number(leg["seconds"]),
                        "-" if leg.get("skipped") else str(leg["exit_code"]),
                        f"skipped: {leg['skipped']}" if leg.get("skipped") else leg["summary"],
                    )
                    for leg in suite["legs"]
                ],
            )
        )
    legs = document.get("legs", {})
    skipped = [(name, info.get("skipped") or info.get("error", "")) for name, info in legs.items()
               if info.get("skipped") or info.get("error")]  # fmt: skip
    if skipped:
        found.append(("Legs not measured", ("leg", "reason"), [(n, str(r)) for n, r in skipped]))
    if checks:
        check_rows: list[Row] = []
        for item in checks:
            value = item.value
            unit = f" {item.goal.unit}" if item.goal.unit else ""
            shown = number(value.median) + unit
            if value.count > 1 and value.minimum != value.maximum:
                shown += f" ({number(value.minimum)}..{number(value.maximum)})"
            check_rows.append(
                (item.name, shown, item.goal.describe(), item.verdict.upper() if not item.passed
                 else item.verdict, "yes" if item.gated else "no")
            )  # fmt: skip
        found.append(("Targets", ("figure", "value (min..max)", "target", "verdict", "gated"),
                      check_rows))  # fmt: skip
    return found


PEER_VARIANT = "flink"
JAVA_FSYNC = "java+fsync"


def peer_sections(document: Mapping[str, Any]) -> list[Section]:
    """``--peer flink``: the target's and Flink's medians side by side, the ratio target /
    Flink per repetition, and what Flink is and syncs (or why the peer did not run)."""
    peer = document.get("peer")
    if not peer:
        return []
    about: list[Row] = []
    if peer.get("skipped"):
        about.append(("not run", str(peer["skipped"])))
    else:
        about.append(
            ("Flink", f"{peer.get('flink')} on Java {peer.get('java')} ({peer.get('vm')})")
        )
        about.append(("measured", str(peer.get("what", ""))))
        about.append(
            ("factory", f"file state threshold {peer.get('threshold')}, write buffer "
                        f"{peer.get('write_buffer')}")
        )  # fmt: skip
        about.append(("what Flink syncs", str(peer.get("syncs", ""))))
        if peer.get("error"):
            about.append(("ERROR", str(peer["error"])))
    found: list[Section] = [(f"Peer: {peer.get('name', PEER_VARIANT)}", ("what", "value"), about)]
    rows: list[Row] = []
    for figure in document.get("figures", []):
        values = figure.get("values", {})
        if figure.get("error") or PEER_VARIANT not in values or "target" not in values:
            continue
        ratio = figure.get("ratios", {}).get(f"target / {PEER_VARIANT}")
        java = values.get(JAVA_FSYNC)
        rows.append(
            (
                figure["label"],
                _median_spread(values["target"]),
                _median_spread(values[PEER_VARIANT]),
                f"{number(ratio['median'])}x ({spread(ratio)})" if ratio else "-",
                _median_spread(java) if java else "-",
                figure["unit"],
            )
        )
    if rows:
        target = document.get("target", {}).get("name", "target")
        found.append(
            (
                f"{target} vs Flink {peer.get('flink')} in the same run (medians, min..max)",
                ("figure", "target", "flink", "target / flink", JAVA_FSYNC, "unit"),
                rows,
            )
        )
    return found


def _median_spread(value: Mapping[str, Any]) -> str:
    return f"{number(value['median'])} ({spread(value)})"


def _header(document: Mapping[str, Any]) -> str:
    target = document["target"]
    machine = document["machine"]
    version = f" {target['version']}" if target.get("version") else ""
    plan = document["plan"]
    mode = "quick" if document.get("quick") else "full"
    return (
        f"{target['name']}{version} (--impl={target['spec']}), {mode} run, "
        f"{plan['reps']} interleaved repetitions; {machine['cpus']} CPUs, load "
        f"{machine.get('load_average')} -> {machine.get('load_average_after')}, "
        f"Python {machine['python']}, {machine['started']}"
    )


def render_table(document: Mapping[str, Any], checks: Sequence[Check]) -> str:
    """Every section as text (rich tables when installed)."""
    parts = [_header(document)]
    if document.get("note"):
        parts[0] += f"\n{document['note']}"
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        for title, headers, rows in sections(document, checks):
            parts.append(f"\n{title}\n" + " | ".join(headers))
            parts += [" | ".join(row) for row in rows]
        return "\n".join(parts)
    buffer = io.StringIO()
    console = Console(file=buffer, width=160, force_terminal=False)
    for title, headers, rows in sections(document, checks):
        table = Table(title=title, title_justify="left")
        for header in headers:
            table.add_column(header, overflow="fold")
        for row in rows:
            miss = any(cell.startswith(("MISS", "ERROR")) for cell in row)
            table.add_row(*row, style="red" if miss else None)
        console.print(table)
    return parts[0] + "\n" + buffer.getvalue().rstrip()


def _markdown_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def write_markdown(document: Mapping[str, Any], checks: Sequence[Check], path: Path) -> Path:
    """``bench.md``: the header and every section as a markdown table."""
    lines = ["# ckptconform bench", "", _header(document), ""]
    if document.get("note"):
        lines += [str(document["note"]), ""]
    gate = document.get("gate", {})
    if gate:
        verdict = "passed" if gate.get("passed") else "FAILED"
        lines += [f"Gate (requests per checkpoint, peak RSS): **{verdict}**", ""]
    for title, headers, rows in sections(document, checks):
        lines += [f"## {title}", "", "| " + " | ".join(headers) + " |",
                  "|" + "---|" * len(headers)]  # fmt: skip
        lines += ["| " + " | ".join(_markdown_cell(c) for c in row) + " |" for row in rows]
        lines.append("")
    path.write_text("\n".join(lines))
    return path


# --------------------------------------------------------------------------- the chart

#: one colour per variant in every panel (a thread count changes the hatching, not the colour)
VARIANT_COLOURS = {
    "target": "tab:blue",
    "fsspec+fsync": "tab:orange",
    "fsspec": "tab:green",
    "disk": "tab:gray",
    "flink": "tab:purple",
    "java+fsync": "tab:brown",
    "io.BytesIO": "tab:olive",
}
SPARE_COLOURS = ("tab:pink", "tab:cyan", "tab:red")
_THREADS = re.compile(r"(?P<variant>.+) x(?P<threads>\d+)")


@dataclass(frozen=True)
class Panel:
    """One chart panel: a title, x tick labels, and per variant the summary at each tick."""

    title: str
    ticks: list[str]
    values: dict[str, list[Mapping[str, Any] | None]]
    bound: tuple[float, str] | None = None


def write_plot(document: Mapping[str, Any], path: Path) -> Path | None:
    """``bench.png``: every figure as bars (medians, labelled, whiskers min..max) on a linear
    scale, a variant in the same colour in every panel, one legend above the panels."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("ckptconform bench: matplotlib is not installed; no chart (pip install "
              "'checkpoint-conformance[budget]')")  # fmt: skip
        return None
    panels = chart_panels(document)
    if not panels:
        return None
    colours = _colours(panels)
    rows = (len(panels) + 1) // 2
    chart, axes_grid = plt.subplots(rows, 2, figsize=(14, 3.9 * rows + 1.2), dpi=100,
                                    squeeze=False, layout="constrained")  # fmt: skip
    axes_list = [ax for row in axes_grid for ax in row]
    for axes, panel in zip(axes_list, panels, strict=False):
        _draw_panel(axes, panel, colours)
    for axes in axes_list[len(panels) :]:
        axes.axis("off")
    target = document["target"]
    chart.suptitle(
        f"ckptconform bench: {target['name']}, {'quick' if document.get('quick') else 'full'} "
        f"run: medians of {document['plan']['reps']} repetitions (labelled), whiskers min..max"
    )
    handles = _legend_handles(panels, colours)
    if len(panels) < len(axes_list):  # the free cell holds the legend
        axes_list[-1].legend(handles=handles, loc="center", ncols=2, title="variants")
    else:
        chart.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 9),
                     frameon=False)  # fmt: skip
    chart.savefig(path)
    plt.close(chart)
    return path


def chart_panels(document: Mapping[str, Any]) -> list[Panel]:
    """The panels of ``bench.png``, in order: writes and reads per leg, the inline path, the
    threads figure, peak RSS."""
    figures = [f for f in document.get("figures", []) if not f.get("error") and f["values"]]
    panels: list[Panel] = []
    legs = list(dict.fromkeys(f["leg"] for f in figures if f["group"] in ("write", "read")))
    for leg in legs:
        for group in ("write", "read"):
            chosen = [f for f in figures if f["group"] == group and f["leg"] == leg]
            if chosen:
                ticks = [f"{int(f['size']) >> 20} MiB" for f in chosen]
                panels.append(_panel(f"file-backed {group}, {leg} (GiB/s)", ticks, chosen))
    for figure in (f for f in figures if f["group"] == "inline"):
        what = str(figure["label"]).removeprefix("inline ")
        panels.append(_panel(f"inline path ({figure['unit']})", [what], [figure]))
    threads = [f for f in figures if f["group"] == "threads"]
    if threads:
        what = str(threads[0]["label"]).rsplit(", ", 1)[0]
        panels.append(_panel(f"{what} (GiB/s)", [str(f["leg"]) for f in threads], threads))
    rss = [e for e in document.get("rss", []) if not e.get("error") and e.get("growth")]
    if rss:
        legs = list(dict.fromkeys(str(e["leg"]) for e in rss))
        values: dict[str, list[Mapping[str, Any] | None]] = {}
        for entry in rss:
            column = values.setdefault(str(entry["variant"]), [None] * len(legs))
            column[legs.index(str(entry["leg"]))] = entry["growth"]
        bound = (max(int(e["write_buffer"]) for e in rss) + 64 * MIB) / MIB
        size = max(int(e["size"]) for e in rss) // MIB
        panels.append(
            Panel(
                f"peak RSS growth writing {size} MiB through one stream (MiB)",
                legs,
                values,
                (bound, f"bound {bound:.0f} MiB"),
            )
        )
    return panels


def _panel(title: str, ticks: list[str], figures: Sequence[Mapping[str, Any]]) -> Panel:
    values: dict[str, list[Mapping[str, Any] | None]] = {}
    for index, figure in enumerate(figures):
        for variant, value in figure["values"].items():
            values.setdefault(variant, [None] * len(figures))[index] = value
    return Panel(title, ticks, values)


def _base(variant: str) -> tuple[str, int | None]:
    """A variant's name without its thread count, and the count (``target x8``: 8)."""
    match = _THREADS.fullmatch(variant)
    if match is None:
        return variant, None
    return match["variant"], int(match["threads"])


def _colours(panels: Sequence[Panel]) -> dict[str, str]:
    """A colour per variant (thread counts aside), the same in every panel."""
    colours: dict[str, str] = {}
    spare = iter(SPARE_COLOURS * len(panels))
    for panel in panels:
        for variant in panel.values:
            base, _ = _base(variant)
            if base not in colours:
                colours[base] = VARIANT_COLOURS.get(base) or next(spare, "black")
    return colours


def _thread_counts(panels: Sequence[Panel]) -> list[int]:
    counts = {_base(v)[1] for panel in panels for v in panel.values}
    return sorted(c for c in counts if c is not None)


def _hatch(variant: str, counts: Sequence[int]) -> str | None:
    """Fewer threads hatched, the most threads solid."""
    threads = _base(variant)[1]
    return "///" if threads is not None and threads != max(counts) else None


def _legend_handles(panels: Sequence[Panel], colours: Mapping[str, str]) -> list[Any]:
    from matplotlib.patches import Patch

    handles: list[Any] = [Patch(color=colour, label=name) for name, colour in colours.items()]
    counts = _thread_counts(panels)
    for count in counts:
        hatch = _hatch(f"x x{count}", counts)
        label = f"{count} thread{'s' if count > 1 else ''}"
        handles.append(Patch(facecolor="white", edgecolor="black", hatch=hatch, label=label))
    return handles


def _draw_panel(axes: Any, panel: Panel, colours: Mapping[str, str]) -> None:
    variants = list(panel.values)
    counts = _thread_counts([panel])
    width = 0.8 / max(1, len(variants))
    bars = sum(1 for column in panel.values.values() for value in column if value is not None)
    vertical = bars > 8
    top = 0.0
    for i, variant in enumerate(variants):
        for j, value in enumerate(panel.values[variant]):
            if value is None:
                continue
            x = j + (i - (len(variants) - 1) / 2) * width
            median, low, high = (float(value[k]) for k in ("median", "min", "max"))
            axes.bar(x, median, width, color=colours[_base(variant)[0]], edgecolor="white",
                     hatch=_hatch(variant, counts), yerr=[[median - low], [high - median]],
                     capsize=2, error_kw={"elinewidth": 0.8})  # fmt: skip
            axes.annotate(number(median), (x, high), xytext=(0, 2), textcoords="offset points",
                          ha="center", va="bottom", fontsize=7,
                          rotation=90 if vertical else 0)  # fmt: skip
            top = max(top, high)
    if panel.bound is not None:
        level, text = panel.bound
        axes.axhline(level, color="black", linestyle="--", linewidth=1)
        axes.annotate(text, (0, level), xycoords=("axes fraction", "data"), xytext=(4, 3),
                      textcoords="offset points", ha="left", va="bottom", fontsize=8)  # fmt: skip
        top = max(top, level)
    axes.set_ylim(0, (top or 1) * (1.3 if vertical else 1.15))
    axes.set_xticks(range(len(panel.ticks)))
    axes.set_xticklabels([textwrap.fill(t, 28) for t in panel.ticks], fontsize="small")
    axes.set_title(panel.title)
    axes.grid(True, axis="y", alpha=0.3)
