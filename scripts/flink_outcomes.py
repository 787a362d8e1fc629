"""Writes each clause's outcome on Flink 2.3.0 (CONFORMANCE.md's Flink columns) from the runs.

Usage: python scripts/flink_outcomes.py [--reports DIR] [--check]

Reads the conformance reports of ``--impl=flink`` and ``--impl=flink-jobmanager`` (DIR/flink
and DIR/flink-jobmanager, each with its ``conformance.json``; DIR defaults to
``conformance-report``, where the CI's Flink leg writes them) and the deviations the target
declares (``flinktarget.DEVIATIONS``, whose reasons are its ``known_failures``), and writes
``conformance/ckptconform/data/flink-2.3.0-outcomes.json``, from which
``scripts/gen_conformance_md.py`` renders the Flink columns. Each clause's outcome is one of:

- ``PASS``;
- ``flink-bug``: the clause is a declared known failure that Flink is wrong about (with the
  reason and its reproducer in tests/flink/test_flink_deviations.py);
- ``beyond-flink``: a declared known failure where the clause deliberately asks more than
  Flink does (its rationale says so and why), or a SHOULD clause that Flink does not meet (WARN);
- ``n/a``: every test of the clause was skipped (a capability Flink does not claim, an S3 or
  Spark leg), with the reason; also for a declared deviation whose tests did not run there
  (SPK-3's, with the Spark leg turned off).

A run with any other outcome (FAIL, XPASS, NOTRUN, a known failure that passed or a failure
of a clause that is not declared) is refused: the file only ever describes a green run. With
``--check`` it writes nothing and exits 1 if the committed file differs from what the reports
give (the CI's Flink leg runs it, so the columns describe what Flink does).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
OUTCOMES = REPO / "conformance" / "ckptconform" / "data" / "flink-2.3.0-outcomes.json"
FORMAT = "ckptconform-flink-outcomes/1"
#: target name -> the Flink class it drives (the column's heading says which)
STORAGES = {
    "flink": "FileSystemCheckpointStorage",
    "flink-jobmanager": "JobManagerCheckpointStorage",
}


class OutcomeError(Exception):
    """The reports describe no green run, or disagree with the declared deviations."""


def clause_outcomes(report: dict[str, Any], deviations: dict[str, Any]) -> dict[str, Any]:
    """Clause id -> its outcome record, from one target's ``conformance.json``."""
    from ckptconform.clauses import CLAUSES

    found: dict[str, Any] = {}
    problems: list[str] = []
    clauses = report["clauses"]
    for cid, clause in CLAUSES.items():
        status = clauses.get(cid, {}).get("status", "NOTRUN")
        deviation = deviations.get(cid)
        if deviation is not None and status not in ("XFAIL", "SKIP"):
            problems.append(f"{cid} is a declared deviation but its status is {status}")
        elif status == "PASS":
            found[cid] = {"outcome": "PASS"}
        elif status == "SKIP":
            reasons = sorted(clauses[cid].get("reasons") or ["skipped"])
            found[cid] = {"outcome": "n/a", "reason": reasons[0]}
        elif status == "XFAIL" and deviation is not None:
            found[cid] = {
                "outcome": deviation.kind,
                "reason": deviation.reason,
                "reproducer": deviation.reproducer,
            }
        elif status == "WARN" and clause.level == "SHOULD":
            found[cid] = {
                "outcome": "beyond-flink",
                "reason": "a SHOULD clause Flink does not meet (WARN); its rationale says how it "
                "goes beyond Flink",
            }
        else:
            problems.append(f"{cid}: {status}")
    if problems:
        raise OutcomeError("; ".join(problems))
    return found


def build(reports: Path) -> dict[str, Any]:
    """The outcomes document from the two reports below ``reports``."""
    from flinktarget import DEVIATIONS, __version__

    targets: dict[str, Any] = {}
    for name, storage in STORAGES.items():
        path = reports / name / "conformance.json"
        if not path.is_file():
            raise OutcomeError(f"{path} is missing: run the suite with --impl={name} first")
        report = json.loads(path.read_text(encoding="utf-8"))
        header = report["header"]
        if header["target"]["name"] != name:
            raise OutcomeError(f"{path} is a report of {header['target']['name']}, not {name}")
        try:
            clauses = clause_outcomes(report, dict(DEVIATIONS[name]))
        except OutcomeError as exc:
            raise OutcomeError(f"--impl={name} ({path}): {exc}") from None
        targets[name] = {
            "storage": storage,
            "version": header["target"]["version"],
            "backends": [b["name"] for b in header["backends"] if b["status"] == "selected"],
            "hypothesis_profile": header.get("hypothesis_profile"),
            "clauses": clauses,
        }
        if targets[name]["version"] != __version__:
            raise OutcomeError(f"{path}: Flink {targets[name]['version']}, not {__version__}")
    return {"format": FORMAT, "flink": __version__, "targets": targets}


def render(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=1, sort_keys=False, ensure_ascii=False) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=Path, default=REPO / "conformance-report")
    parser.add_argument("--check", action="store_true", help="fail if the committed file differs")
    args = parser.parse_args()
    try:
        text = render(build(args.reports))
    except OutcomeError as exc:
        print(f"flink outcomes: {exc}", file=sys.stderr)
        return 1
    if args.check:
        if not OUTCOMES.is_file() or OUTCOMES.read_text(encoding="utf-8") != text:
            print(
                f"{OUTCOMES} differs from the Flink runs in {args.reports}: run "
                "python scripts/flink_outcomes.py, then python scripts/gen_conformance_md.py",
                file=sys.stderr,
            )
            return 1
        return 0
    OUTCOMES.write_text(text, encoding="utf-8")
    print(f"wrote {OUTCOMES}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
