"""The clause report: one record per test, aggregated per clause and per clause x backend.

The plugin feeds pytest's reports in (``OutcomeRecorder.add``); ``build_document`` turns the records
and the run header into the ``conformance.json`` structure, ``render_markdown`` into
``conformance.md`` and ``summary_lines`` into the compact terminal summary.

Test statuses: PASS, FAIL, SKIP, XFAIL (a known failure failed, as declared), XPASS (a known
failure passed: the run fails until it is removed from ``known_failures``), WARN (a SHOULD
clause failed, unless ``--strict-should``, or a clause newer than the clause set the run is
pinned to, ``--clauses-as-of``; the run does not fail). A clause's status is the worst
of its tests' (FAIL > XPASS > WARN > XFAIL > PASS > SKIP); NOTRUN when no test ran it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ckptconform.target import capability_label

__all__ = [
    "CLAUSE_STATUSES",
    "STATUSES",
    "Outcome",
    "OutcomeRecorder",
    "aggregate",
    "build_document",
    "render_markdown",
    "summary_lines",
    "write_report",
]

STATUSES = ("PASS", "FAIL", "SKIP", "XFAIL", "XPASS", "WARN")
CLAUSE_STATUSES = (*STATUSES, "NOTRUN")
_SEVERITY = {"FAIL": 6, "XPASS": 5, "WARN": 4, "XFAIL": 3, "PASS": 2, "SKIP": 1}

#: user_properties keys the plugin attaches to every suite item.
PROP_CLAUSES = "ckptconform.clauses"
PROP_BACKEND = "ckptconform.backend"
#: "", "should" (SHOULD-only test), "new" (newer than the pinned clause set) or "known"
#: (known failure)
PROP_KIND = "ckptconform.kind"
#: On a failed report: the clause ids its ``ClauseFailure`` named (``failures.clauses_of``).
PROP_FAILED = "ckptconform.failed"

#: The matrix column of tests that run on no backend.
NO_BACKEND = "no backend"

MAX_MESSAGE_LINES = 12
MAX_MESSAGE_CHARS = 1500


@dataclass
class Outcome:
    """The outcome of one test (one backend leg)."""

    nodeid: str
    clauses: list[str]
    backend: str | None
    status: str = "PASS"
    duration: float = 0.0
    message: str = ""
    kind: str = ""
    #: For a failing test: the clauses its failure is attributed to (see ``attribute``).
    failed_clauses: list[str] = field(default_factory=list)


#: Kinds of tests whose failure is a WARN (see ``PROP_KIND``).
_WARNING_KINDS = frozenset({"should", "new"})

#: Statuses that say a clause is broken; a test in one of them blames ``failed_clauses`` only.
_BLAMING = frozenset({"FAIL", "WARN", "XFAIL", "XPASS"})


def blamed_clauses(named: Sequence[str], clauses: Sequence[str]) -> list[str]:
    """The clauses a failing test's failure belongs to: those of ``clauses`` its failure
    ``named``, else all of them (see :func:`attribute`)."""
    own = [cid for cid in dict.fromkeys(named) if cid in clauses]
    return own or list(clauses)


def attribute(record: Outcome, named: Sequence[str] = ()) -> None:
    """Decide which of a failing test's clauses the failure belongs to, and name them.

    A test may check several clauses. When its failure is a ``ClauseFailure`` naming some of
    the test's clauses (``named``, read from the report, never from the text), only those fail
    and the test says nothing about the others (it stopped before checking them). A failure
    that names none (an unexpected exception, an assertion outside a ``tagged`` block) is
    blamed on all of the test's clauses. Either way the recorded message starts with the
    blamed clause ids, so every failure names its clause.
    """
    if record.status not in _BLAMING:
        record.failed_clauses = []
        return
    record.failed_clauses = blamed_clauses(named, record.clauses)
    tag = "[" + ", ".join(record.failed_clauses) + "]"
    if not record.message.startswith(tag):
        record.message = f"{tag} {record.message}"


def aggregate(statuses: Iterable[str]) -> str:
    """The worst status, or NOTRUN for none."""
    worst = max(statuses, key=lambda s: _SEVERITY.get(s, 0), default=None)
    return worst or "NOTRUN"


def _properties(report: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in getattr(report, "user_properties", ())}


def _message(report: Any) -> str:
    """The first lines of a failure, or a skip reason."""
    longrepr = report.longrepr
    if longrepr is None:
        return ""
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        reason = str(longrepr[2])
        return reason.removeprefix("Skipped: ")
    crash = getattr(longrepr, "reprcrash", None)
    text = getattr(crash, "message", None) or getattr(report, "longreprtext", "") or str(longrepr)
    return _trim(str(text))


def _trim(text: str) -> str:
    lines = text.strip().splitlines()
    if len(lines) > MAX_MESSAGE_LINES:
        lines = [*lines[:MAX_MESSAGE_LINES], f"... ({len(lines) - MAX_MESSAGE_LINES} more lines)"]
    out = "\n".join(lines)
    return out if len(out) <= MAX_MESSAGE_CHARS else out[: MAX_MESSAGE_CHARS - 3] + "..."


class OutcomeRecorder:
    """Turns pytest's setup/call/teardown reports into one ``Outcome`` per test."""

    def __init__(self) -> None:
        self.records: dict[str, Outcome] = {}

    def add(self, report: Any) -> None:
        props = _properties(report)
        if PROP_CLAUSES not in props:
            return
        record = self.records.get(report.nodeid)
        if record is None:
            record = Outcome(
                nodeid=report.nodeid,
                clauses=props[PROP_CLAUSES].split(),
                backend=props.get(PROP_BACKEND) or None,
                kind=props.get(PROP_KIND, ""),
            )
            self.records[report.nodeid] = record
        record.duration += float(getattr(report, "duration", 0.0) or 0.0)
        status, message = self._outcome(report)
        if status is None:
            return
        named = props.get(PROP_FAILED, "").split()
        if report.when == "teardown":
            if status == "FAIL" and record.status != "FAIL":
                record.status, record.message = "FAIL", "error in teardown: " + message
                attribute(record, named)
            return
        record.status, record.message = status, message
        attribute(record, named)

    def _outcome(self, report: Any) -> tuple[str | None, str]:
        wasxfail = getattr(report, "wasxfail", None)
        kind = _properties(report).get(PROP_KIND, "")
        if report.passed:
            if report.when != "call":
                return None, ""
            if wasxfail is not None:
                return (
                    ("PASS", "")
                    if kind in _WARNING_KINDS
                    else ("XPASS", f"unexpectedly passed: {wasxfail}")
                )
            return "PASS", ""
        if report.skipped:
            if wasxfail is not None:
                detail = _first_line(_message(report))
                reason = f"{wasxfail}: {detail}" if detail else str(wasxfail)
                return ("WARN" if kind in _WARNING_KINDS else "XFAIL"), reason
            return "SKIP", _message(report)
        text = _message(report)
        if isinstance(report.longrepr, str) and report.longrepr.startswith("[XPASS(strict)]"):
            return (
                "XPASS",
                "known failure passed (remove it from known_failures): " + report.longrepr,
            )
        prefix = "error in setup: " if report.when == "setup" else ""
        return "FAIL", prefix + text


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def build_document(
    header: Mapping[str, Any],
    clauses: Mapping[str, Any],
    records: Sequence[Outcome],
    backends: Sequence[str],
) -> dict[str, Any]:
    """The ``conformance.json`` structure: header, per-clause results and per-test records."""
    by_clause: dict[str, list[Outcome]] = {cid: [] for cid in clauses}
    for record in records:
        for cid in record.clauses:
            by_clause.setdefault(cid, []).append(record)
    clause_docs: dict[str, Any] = {}
    for cid, all_tests in by_clause.items():
        clause = clauses.get(cid)
        # a test that failed on another of its clauses tells nothing about this one
        tests = [
            r
            for r in all_tests
            if r.status not in _BLAMING or cid in (r.failed_clauses or r.clauses)
        ]
        status = aggregate(r.status for r in tests)
        per_backend = {
            name: aggregate(r.status for r in tests if (r.backend or NO_BACKEND) == name)
            for name in [
                *backends,
                *sorted({r.backend or NO_BACKEND for r in tests} - set(backends)),
            ]
        }
        reasons = sorted({r.message for r in tests if r.status == status and r.message})
        clause_docs[cid] = {
            "level": getattr(clause, "level", "?"),
            "since": getattr(clause, "since", ""),
            "tightened": list(getattr(clause, "tightened", ())),
            "group": getattr(clause, "group", cid.partition("-")[0]),
            "title": getattr(clause, "title", ""),
            "capabilities": list(getattr(clause, "capabilities", ())),
            "status": status,
            "backends": per_backend,
            "reasons": reasons[:10],
            "tests": [r.nodeid for r in all_tests],
        }
    summary = Counter(doc["status"] for doc in clause_docs.values())
    return {
        "format": "ckptconform-report/1",
        "header": dict(header),
        "summary": {
            "clauses": {s: summary.get(s, 0) for s in CLAUSE_STATUSES if summary.get(s)},
            "tests": dict(Counter(r.status for r in records)),
        },
        "clauses": clause_docs,
        "tests": [asdict(r) for r in records],
    }


def summary_lines(document: Mapping[str, Any]) -> list[str]:
    """The compact terminal summary: counts per status, then the FAIL/XPASS/WARN clauses."""
    counts = document["summary"]["clauses"]
    ran = {cid: c for cid, c in document["clauses"].items() if c["status"] != "NOTRUN"}
    parts = ", ".join(
        f"{counts[s]} {s}" for s in CLAUSE_STATUSES if counts.get(s) and s != "NOTRUN"
    )
    lines = [f"{len(ran)} clauses checked: {parts or 'none'}"]
    newer = (document["header"].get("clause_set") or {}).get("newer", {})
    for status in ("FAIL", "XPASS", "WARN", "XFAIL"):
        for cid, clause in ran.items():
            if clause["status"] == status:
                note = f" ({newer[cid]})" if status == "WARN" and cid in newer else ""
                lines.append(f"  {status:<5} {cid:<8} {clause['title']}{note}")
    lines.extend(_clause_set_lines(document["header"].get("clause_set"), ran))
    stale = [cid for cid in document["header"].get("known_failures", {}) if cid not in ran]
    if stale:
        lines.append(f"  note: known_failures {', '.join(sorted(stale))} matched no test that ran")
    return lines


def _clause_set_lines(clause_set: Mapping[str, Any] | None, ran: Mapping[str, Any]) -> list[str]:
    """Under a pinned clause set: how many clauses that ran are newer, and how many warn."""
    if not clause_set or not clause_set.get("pinned"):
        return []
    newer = [cid for cid in clause_set.get("newer", {}) if cid in ran]
    warned = [cid for cid in newer if ran[cid]["status"] == "WARN"]
    pinned = f"clause set {clause_set['version']} ({clause_set['source']})"
    if not newer:
        return [f"  {pinned}: no clause that ran is newer"]
    return [
        f"  {pinned}: {len(newer)} newer clause(s) ran, {len(warned)} failed (WARN, not "
        "FAIL): move the pin forward to adopt them"
    ]


def _cell(status: str) -> str:
    return {"NOTRUN": "-"}.get(status, status)


def render_markdown(document: Mapping[str, Any]) -> str:
    """``conformance.md``: the run header, a clause x backend matrix, per-clause details."""
    header = document["header"]
    out: list[str] = ["# Conformance report", ""]
    target = header.get("target", {})
    out.append(f"- target: **{target.get('name', '?')}** ({target.get('origin', '')})")
    if target.get("version"):
        out.append(f"- target version: {target['version']}")
    restricted = header.get("capability_schemes") or {}
    capabilities = [
        capability_label(name, restricted.get(name)) for name in header.get("capabilities", [])
    ]
    out.append(f"- capabilities: {', '.join(capabilities) or 'none'}")
    schemes = header.get("schemes")
    out.append(f"- schemes: {', '.join(schemes) if schemes else 'any'}")
    for backend in header.get("backends", []):
        note = f" ({backend['reason']})" if backend.get("reason") else ""
        out.append(f"- backend {backend['name']}: {backend['status']}{note}")
    spark = header.get("spark")
    if spark:
        out.append(f"- spark leg: {_spark_line(spark)}")
    clause_set = header.get("clause_set")
    if clause_set:
        pinned = f" (pinned by {clause_set['source']})" if clause_set.get("pinned") else ""
        out.append(f"- clause set: {clause_set['version']}{pinned}")
    for key in ("suite_version", "hypothesis_profile", "strict_should", "python", "platform",
                "started", "finished", "exit_status"):  # fmt: skip
        if key in header:
            out.append(f"- {key.replace('_', ' ')}: {header[key]}")
    out += ["", "## Summary", ""]
    out += [f"    {line}" for line in summary_lines(document)]

    clauses = {cid: c for cid, c in document["clauses"].items()}
    columns = _columns(document)
    out += ["", "## Clause x backend", ""]
    out.append("| clause | level | title | " + " | ".join(columns) + " | result |")
    out.append("|---|---|---|" + "---|" * len(columns) + "---|")
    for cid, clause in clauses.items():
        cells = [_cell(clause["backends"].get(name, "NOTRUN")) for name in columns]
        title = clause["title"].replace("|", "\\|")
        out.append(
            f"| {cid} | {clause['level']} | {title} | "
            + " | ".join(cells)
            + f" | **{_cell(clause['status'])}** |"
        )

    details = [(cid, c) for cid, c in clauses.items() if c["status"] not in ("PASS", "NOTRUN")]
    if details:
        out += ["", "## Clauses that did not pass", ""]
        by_id = {t["nodeid"]: t for t in document["tests"]}
        for cid, clause in details:
            out.append(f"### {cid} · {clause['level']} · {clause['status']} · {clause['title']}")
            out.append("")
            for nodeid in clause["tests"]:
                test = by_id.get(nodeid)
                if test is None or test["status"] == "PASS":
                    continue
                message = _first_line(test["message"]) or "(no message)"
                out.append(f"- `{nodeid}`: {test['status']}: {message}")
            out.append("")
    return "\n".join(out).rstrip() + "\n"


def _spark_line(spark: Mapping[str, Any]) -> str:
    """The Spark leg in one line: master, executors, jobs and tasks (or why it did not run)."""
    line = f"master {spark.get('master', '?')}"
    if spark.get("status") == "skipped":
        return f"{line}: skipped ({spark.get('reason', '')})"
    if not spark.get("started"):
        return f"{line}: not started (no Spark test ran in this process)"
    executors = spark.get("executors") or []
    return (
        f"{line}, {len(executors)} executor(s), {spark.get('jobs', 0)} job(s), "
        f"{spark.get('tasks', 0)} task(s) in {spark.get('python_workers', 0)} Python worker(s), "
        f"started in {spark.get('startup_seconds')} s"
    )


def _columns(document: Mapping[str, Any]) -> list[str]:
    names = [b["name"] for b in document["header"].get("backends", [])]
    extra: set[str] = set()
    for clause in document["clauses"].values():
        extra |= set(clause["backends"]) - set(names)
    return names + sorted(extra)


def write_report(directory: str | Path, document: Mapping[str, Any]) -> tuple[Path, Path]:
    """Write ``conformance.json`` and ``conformance.md`` into ``directory`` (created)."""
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    json_path = path / "conformance.json"
    md_path = path / "conformance.md"
    json_path.write_text(json.dumps(document, indent=2, sort_keys=False, default=str) + "\n")
    md_path.write_text(render_markdown(document))
    return json_path, md_path
