"""What ``ckptconform bench`` shows people: tables, ``bench.md``, ``bench.png``.

The same sections go to the terminal (``rich`` tables when installed, plain text otherwise)
and to ``bench.md``: the figures (median, min..max of every variant), the ratios per
repetition, peak RSS, S3 requests per checkpoint, the suite's wall time, and the targets with
their verdicts. The chart (matplotlib, without a display) draws write and read throughput per
size and leg, the inline path, the threads figure and peak RSS against its bound. Both
libraries come with the ``budget`` extra; without matplotlib the chart is left out with a note.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
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


def write_plot(document: Mapping[str, Any], path: Path) -> Path | None:
    """``bench.png``: throughput per figure and variant (medians, min..max as error bars)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("ckptconform bench: matplotlib is not installed; no chart (pip install "
              "'checkpoint-conformance[budget]')")  # fmt: skip
        return None
    figures = [f for f in document.get("figures", []) if not f.get("error") and f["values"]]
    legs = list(dict.fromkeys(f["leg"] for f in figures if f["group"] in ("write", "read")))
    panels: list[tuple[str, list[Mapping[str, Any]]]] = [
        (f"file-backed {group}, {leg} (GiB/s)",
         [f for f in figures if f["group"] == group and f["leg"] == leg])
        for leg in legs
        for group in ("write", "read")
    ]  # fmt: skip
    panels += [
        ("inline path (states/s, log)", [f for f in figures if f["group"] == "inline"]),
        ("threads (GiB/s)", [f for f in figures if f["group"] == "threads"]),
    ]
    rss = [e for e in document.get("rss", []) if not e.get("error")]
    count = sum(1 for _, group in panels if group) + (1 if rss else 0)
    if count == 0:
        return None
    columns = 2
    rows = (count + 1) // 2
    chart, axes_grid = plt.subplots(rows, columns, figsize=(14, 4.2 * rows), dpi=100,
                                    squeeze=False)  # fmt: skip
    axes_list = [ax for row in axes_grid for ax in row]
    index = 0
    for title, group in panels:
        if not group:
            continue
        _bars(axes_list[index], title, group, log=title.startswith("inline"))
        index += 1
    if rss:
        _rss_bars(axes_list[index], rss)
        index += 1
    for ax in axes_list[index:]:
        ax.axis("off")
    target = document["target"]
    chart.suptitle(
        f"ckptconform bench: {target['name']} ({'quick' if document.get('quick') else 'full'}"
        f" run, median of {document['plan']['reps']}, bars min..max)"
    )
    chart.tight_layout()
    chart.savefig(path)
    plt.close(chart)
    return path


def _bars(axes: Any, title: str, group: Sequence[Mapping[str, Any]], *, log: bool) -> None:
    variants: list[str] = []
    for figure in group:
        for variant in figure["values"]:
            if variant not in variants:
                variants.append(variant)
    width = 0.8 / max(1, len(variants))
    for i, variant in enumerate(variants):
        xs, heights, low, high = [], [], [], []
        for j, figure in enumerate(group):
            value = figure["values"].get(variant)
            if value is None:
                continue
            xs.append(j + (i - (len(variants) - 1) / 2) * width)
            heights.append(value["median"])
            low.append(value["median"] - value["min"])
            high.append(value["max"] - value["median"])
        axes.bar(xs, heights, width, yerr=[low, high], capsize=2, label=variant)
    axes.set_xticks(range(len(group)))
    axes.set_xticklabels([_short_label(f) for f in group], fontsize="small")
    if log:
        axes.set_yscale("log")
    axes.set_title(title)
    axes.legend(fontsize="small")
    axes.grid(True, axis="y", alpha=0.3)


def _short_label(figure: Mapping[str, Any]) -> str:
    if figure["group"] in ("write", "read") and figure.get("size"):
        return f"{int(figure['size']) >> 20} MiB"
    label = str(figure["label"])
    return label if len(label) < 40 else label[:37] + "..."


def _rss_bars(axes: Any, entries: Sequence[Mapping[str, Any]]) -> None:
    labels = [f"{e['leg']}\n{e['variant']}" for e in entries]
    values = [e["growth"]["median"] for e in entries]
    axes.bar(range(len(entries)), values, 0.6, color="tab:purple")
    bound = (max(int(e["write_buffer"]) for e in entries) + 64 * MIB) / MIB
    axes.axhline(bound, color="tab:red", linestyle="--", label=f"bound {bound:.0f} MiB")
    axes.set_xticks(range(len(entries)))
    axes.set_xticklabels(labels, fontsize="small")
    size = max(int(e["size"]) for e in entries) // MIB
    axes.set_title(f"peak RSS growth writing {size} MiB through one stream (MiB)")
    axes.legend(fontsize="small")
    axes.grid(True, axis="y", alpha=0.3)
