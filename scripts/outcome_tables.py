"""Outcome tables: what every clause gave for each target, to prove a refactor changed no outcome.

``collect`` reads conformance.json reports (the main job's, the Flink leg's, and the reports a
run of ``tests/meta/test_broken_implementations.py --basetemp=DIR`` leaves under DIR) into one
JSON table: target -> clause -> status, and per backend for the reference. ``compare`` prints
the rows that differ between two tables and exits 1 when any does; ``markdown`` prints a
summary a note can quote.

    python scripts/outcome_tables.py collect OUT.json REPORT_OR_DIR...
    python scripts/outcome_tables.py compare BEFORE.json AFTER.json
    python scripts/outcome_tables.py markdown TABLE.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

Table = dict[str, dict[str, str]]


def _reports(paths: list[Path]) -> list[Path]:
    """The reports under ``paths``, each once (pytest's ``*current`` links name a directory
    twice)."""
    found: dict[Path, Path] = {}
    for path in paths:
        for report in sorted(path.rglob("conformance.json")) if path.is_dir() else [path]:
            found.setdefault(report.resolve(), report)
    return list(found.values())


def _rows(report: dict[str, Any]) -> dict[str, str]:
    """clause -> status, and clause@backend -> status for every backend that ran it."""
    rows: dict[str, str] = {}
    for cid, entry in report["clauses"].items():
        rows[cid] = entry["status"]
        for backend, status in entry.get("backends", {}).items():
            rows[f"{cid}@{backend}"] = status
    return rows


def collect(out: Path, sources: list[Path]) -> Table:
    table: Table = {}
    for path in _reports(sources):
        report = json.loads(path.read_text(encoding="utf-8"))
        target = report["header"]["target"]
        name = target["name"] if isinstance(target, dict) else str(target)
        if name in table:
            raise SystemExit(f"two reports for {name}: {path}")
        table[name] = _rows(report)
        table[name]["(exit status)"] = str(report["header"]["exit_status"])
    out.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{out}: {len(table)} targets, {sum(len(r) for r in table.values())} rows")
    return table


def compare(before: Table, after: Table) -> list[str]:
    differences = []
    for target in sorted(set(before) | set(after)):
        if target not in after or target not in before:
            differences.append(f"{target}: only {'before' if target in before else 'after'}")
            continue
        rows_before, rows_after = before[target], after[target]
        for row in sorted(set(rows_before) | set(rows_after)):
            old, new = rows_before.get(row, "-"), rows_after.get(row, "-")
            if old != new:
                differences.append(f"{target} {row}: {old} -> {new}")
    return differences


def markdown(table: Table) -> str:
    lines = ["| target | clauses | PASS | FAIL | WARN | XFAIL | SKIP | exit |", "|---" * 8 + "|"]
    for target in sorted(table):
        rows = {k: v for k, v in table[target].items() if "@" not in k and not k.startswith("(")}
        counts = Counter(rows.values())
        lines.append(
            f"| {target} | {len(rows)} | "
            + " | ".join(str(counts.get(s, 0)) for s in ("PASS", "FAIL", "WARN", "XFAIL", "SKIP"))
            + f" | {table[target]['(exit status)']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect")
    c.add_argument("out", type=Path)
    c.add_argument("sources", type=Path, nargs="+")
    d = sub.add_parser("compare")
    d.add_argument("before", type=Path)
    d.add_argument("after", type=Path)
    m = sub.add_parser("markdown")
    m.add_argument("table", type=Path)
    args = parser.parse_args(argv)
    if args.command == "collect":
        collect(args.out, args.sources)
        return 0
    if args.command == "markdown":
        print(markdown(json.loads(args.table.read_text(encoding="utf-8"))))
        return 0
    before = json.loads(args.before.read_text(encoding="utf-8"))
    after = json.loads(args.after.read_text(encoding="utf-8"))
    differences = compare(before, after)
    for line in differences:
        print(line)
    rows = sum(len(r) for r in before.values())
    print(f"{len(differences)} of {rows} rows differ across {len(before)} targets")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
