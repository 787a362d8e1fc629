"""The clause report: one record per test, aggregated per clause and per clause x backend.

The plugin feeds pytest's reports in (``OutcomeRecorder.add``); ``build_document`` turns the records
and the run header into the ``conformance.json`` structure, ``render_markdown`` into
``conformance.md``, ``summary_lines`` into the compact terminal summary and ``verdict_line`` into
the run's last line.

Test statuses: PASS, FAIL, SKIP, XFAIL (a known failure failed, as declared), XPASS (a known
failure passed: the run fails until it is removed from ``known_failures``), WARN (a SHOULD
clause failed, unless ``--strict-should``, or a clause newer than the clause set the run is
pinned to, ``--clauses-as-of``; the run does not fail). A clause's status is the worst
of its tests' (FAIL > XPASS > WARN > XFAIL > PASS > SKIP); NOTRUN when no test ran it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ckptconform.policy import SPARK_LEG
from ckptconform.target import capability_label

__all__ = [
    "CLAUSE_STATUSES",
    "STATUSES",
    "Outcome",
    "OutcomeRecorder",
    "aggregate",
    "build_document",
    "render_markdown",
    "skip_lines",
    "summary_lines",
    "verdict_line",
    "what_was_wrong",
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
#: On a failed report: the command line that reruns the test.
PROP_REPRO = "ckptconform.repro"
#: "1" on a test that runs on the Spark leg: its matrix column is ``SPARK_LEG``.
PROP_ON_SPARK = "ckptconform.on_spark"

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
    #: Whether it ran on the Spark leg (its matrix column is the Spark leg's).
    spark: bool = False
    #: For a failing test: the command line that reruns it.
    repro: str = ""
    #: For a failing (or warning) test: what was wrong, in one line (``what_was_wrong``).
    wrong: str = ""


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
    """At most ``MAX_MESSAGE_LINES`` lines: the first ones (the step) and the last ones (the
    assertion's explanation, what was wrong), with a note of the lines left out between."""
    lines = text.strip().splitlines()
    if len(lines) > MAX_MESSAGE_LINES:
        head, tail = 3, MAX_MESSAGE_LINES - 4
        lines = [*lines[:head], f"... ({len(lines) - head - tail} lines)", *lines[-tail:]]
    out = "\n".join(lines)
    if len(out) <= MAX_MESSAGE_CHARS:
        return out
    half = (MAX_MESSAGE_CHARS - 5) // 2
    return out[:half] + " ... " + out[-half:]


def what_was_wrong(message: str) -> str:
    """A failure message in one line: its step (the first line, without an assertion's type)
    and the first line of the assertion's explanation or the exception after any sandbox
    listing (``suite._driver.fail_message``: a ``sandbox URL:`` line, then indented entries)."""
    lines = [line.rstrip() for line in message.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    step = _EXCEPTION_TYPE.sub("", lines[0], count=1)
    listing_indent: int | None = None
    for line in lines[1:]:
        indent = len(line) - len(line.lstrip())
        text = line.strip()
        if text.startswith("sandbox ") and text.endswith(":"):
            listing_indent = indent
            continue
        if listing_indent is not None and (indent > listing_indent or text.endswith(":")):
            continue
        if text.startswith("... ("):
            continue
        return f"{step}: {text}"
    return step


#: The type in front of a failed check's text (``AssertionError: ``, ``...ClauseFailure: ``);
#: an unexpected exception keeps its type.
_EXCEPTION_TYPE = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?(?:AssertionError|ClauseFailure): ")


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
                spark=props.get(PROP_ON_SPARK) == "1",
            )
            self.records[report.nodeid] = record
        record.duration += float(getattr(report, "duration", 0.0) or 0.0)
        if props.get(PROP_REPRO) and not record.repro:
            record.repro = props[PROP_REPRO]
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
        if status in _BLAMING:
            record.wrong = what_was_wrong(_message(report))
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
                warning = kind in _WARNING_KINDS
                # a WARN says what was wrong as a FAIL does; a known failure, its first line
                detail = _message(report) if warning else _first_line(_message(report))
                reason = f"{wasxfail}: {detail}" if detail else str(wasxfail)
                return ("WARN" if warning else "XFAIL"), reason
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


def column_of(record: Outcome) -> str:
    """The matrix column of a test: the Spark leg's for a test on Spark, else its backend's."""
    if record.spark:
        return SPARK_LEG
    return record.backend or NO_BACKEND


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
            name: aggregate(r.status for r in tests if column_of(r) == name)
            for name in [
                *backends,
                *sorted({column_of(r) for r in tests} - set(backends)),
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
    skipped = Counter(r.message or "(no reason)" for r in records if r.status == "SKIP")
    return {
        "format": "ckptconform-report/1",
        "header": dict(header),
        "summary": {
            "clauses": {s: summary.get(s, 0) for s in CLAUSE_STATUSES if summary.get(s)},
            "tests": dict(Counter(r.status for r in records)),
            "skip_reasons": dict(skipped.most_common()),
        },
        "clauses": clause_docs,
        "tests": [asdict(r) for r in records],
    }


def summary_lines(document: Mapping[str, Any]) -> list[str]:
    """The compact terminal summary: counts per status, then the FAIL/XPASS/WARN/XFAIL clauses
    (a WARN with what was wrong: pytest's own output shows nothing of it)."""
    counts = document["summary"]["clauses"]
    ran = _ran(document)
    parts = ", ".join(
        f"{counts[s]} {s}" for s in CLAUSE_STATUSES if counts.get(s) and s != "NOTRUN"
    )
    lines = [f"{len(ran)} clauses checked: {parts or 'none'}"]
    newer = (document["header"].get("clause_set") or {}).get("newer", {})
    tests = {t["nodeid"]: t for t in document["tests"]}
    for status in ("FAIL", "XPASS", "WARN", "XFAIL"):
        for cid, clause in ran.items():
            if clause["status"] == status:
                note = f" ({newer[cid]})" if status == "WARN" and cid in newer else ""
                lines.append(f"  {status:<5} {cid:<8} {clause['title']}{note}")
                if status == "WARN":
                    wrong = _first_wrong(cid, clause, tests)
                    if wrong:
                        lines.append(f"        {_clip(wrong, 200)}")
    lines.extend(_clause_set_lines(document["header"].get("clause_set"), ran))
    stale = [cid for cid in document["header"].get("known_failures", {}) if cid not in ran]
    if stale:
        lines.append(f"  note: known_failures {', '.join(sorted(stale))} matched no test that ran")
    return lines


def _ran(document: Mapping[str, Any]) -> dict[str, Any]:
    return {cid: c for cid, c in document["clauses"].items() if c["status"] != "NOTRUN"}


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _first_wrong(cid: str, clause: Mapping[str, Any], tests: Mapping[str, Any]) -> str:
    """What was wrong in the first test of the clause that has its status."""
    for nodeid in clause["tests"]:
        test = tests.get(nodeid)
        if (
            test is not None
            and test["status"] == clause["status"]
            and cid in (test.get("failed_clauses") or test["clauses"])
        ):
            return _wrong(test)
    return ""


def _wrong(test: Mapping[str, Any]) -> str:
    """What was wrong in a test record (older reports have no ``wrong``: from its message)."""
    return str(test.get("wrong") or what_was_wrong(_untagged(test["message"])))


def _untagged(message: str) -> str:
    """A recorded message without the ``[ID, ...]`` tag ``attribute`` put in front."""
    if message.startswith("["):
        tag, sep, rest = message.partition("] ")
        if sep and " " not in tag:
            return rest
    return message


def skip_lines(
    document: Mapping[str, Any], limit: int = 10, leave_out: Collection[str] = ()
) -> list[str]:
    """The skipped tests counted by reason, one line each (the most frequent first), but for
    the reasons in ``leave_out`` (said elsewhere)."""
    reasons: Mapping[str, int] = {
        reason: count
        for reason, count in document["summary"].get("skip_reasons", {}).items()
        if reason not in leave_out
    }
    if not reasons:
        return []
    total = sum(reasons.values())
    lines = [f"{total} tests skipped, by reason (each test: -rs -v or --conformance-report):"]
    shown = list(reasons.items())[:limit]
    lines += [f"  {count:>4}  {reason}" for reason, count in shown]
    rest = list(reasons.values())[limit:]
    if rest:
        lines.append(f"        ... and {len(rest)} more reasons ({sum(rest)} tests)")
    return lines


#: Why a clause was skipped: the first kind whose prefix starts one of its skip reasons.
_SKIP_KINDS = (
    ("capabilities not claimed", "capability "),
    ("options not declared", "option "),
)
_OTHER_SKIPS = "need a leg this run lacks"


def skip_kind(reasons: Sequence[str]) -> str:
    """Why a skipped clause did not run, in a few words: ``capabilities not claimed`` when a
    reason names a capability the target does not claim, then options, else the legs."""
    for kind, prefix in _SKIP_KINDS:
        if any(reason.startswith(prefix) for reason in reasons):
            return kind
    return _OTHER_SKIPS


def verdict_line(document: Mapping[str, Any]) -> str:
    """The run's verdict in one line: PASS, or FAIL with the clauses that fail.

    ``ckptstore: PASS — 146 clauses pass, 6 skipped (capabilities not claimed)``;
    ``ckptstore: FAIL — 2 MUST clauses fail: STR-1, MD-3``.
    """
    header = document["header"]
    name = (header.get("target") or {}).get("name", "?")
    ran = _ran(document)
    by_status: dict[str, list[str]] = {}
    for cid, clause in ran.items():
        by_status.setdefault(clause["status"], []).append(cid)
    problems = []
    for level in ("MUST", "SHOULD"):
        failed = [cid for cid in by_status.get("FAIL", []) if ran[cid]["level"] == level]
        if failed:
            verb = "fail" if len(failed) > 1 else "fails"
            problems.append(f"{_count(len(failed), f'{level} clause')} {verb}: {', '.join(failed)}")
    if by_status.get("XPASS"):
        xpass = by_status["XPASS"]
        problems.append(
            f"{_count(len(xpass), 'known failure')} passed (remove from known_failures): "
            + ", ".join(xpass)
        )
    exit_status = header.get("exit_status", 0)
    if not problems and exit_status not in (0, None):
        problems.append(f"pytest's exit status is {exit_status} (see above)")
    if problems:
        return f"{name}: FAIL — " + "; ".join(problems)
    parts = [f"{_count(len(by_status.get('PASS', [])), 'clause')} pass"]
    if by_status.get("WARN"):
        parts.append(f"{len(by_status['WARN'])} warn: {', '.join(by_status['WARN'])}")
    if by_status.get("XFAIL"):
        parts.append(f"{len(by_status['XFAIL'])} known failures as declared")
    skipped = by_status.get("SKIP", [])
    if skipped:
        kinds = Counter(skip_kind(ran[cid]["reasons"]) for cid in skipped)
        why = ", ".join(
            kind if count == len(skipped) else f"{count} {kind}" for kind, count in kinds.items()
        )
        parts.append(f"{len(skipped)} skipped ({why})")
    if not any(by_status.get(s) for s in ("PASS", "WARN", "XFAIL")):
        return f"{name}: no clause ran" + (f" — {parts[-1]}" if skipped else "")
    return f"{name}: PASS — " + ", ".join(parts)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")


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


#: Failing tests listed per clause in the report (the rest are counted).
MAX_TESTS_LISTED = 5


def render_markdown(document: Mapping[str, Any]) -> str:
    """``conformance.md``: the run header and summary with the verdict, the clauses that failed
    (with repro lines), those that warn and the known failures, the clause x backend matrix
    (the Spark leg a column of its own), then the skipped clauses: those of capabilities not
    claimed (with the targets that claim them) apart from the rest, and every skipped test."""
    out: list[str] = ["# Conformance report", ""]
    out += _header_lines(document["header"])
    out += ["", "## Summary", ""]
    out += [f"    {line}" for line in [*summary_lines(document), "", verdict_line(document)]]
    clauses = dict(document["clauses"])
    tests = {t["nodeid"]: t for t in document["tests"]}
    sections = (
        ("Clauses that failed", ("FAIL", "XPASS")),
        ("Clauses that warn (SHOULD, or newer than the pinned clause set)", ("WARN",)),
        ("Known failures", ("XFAIL",)),
    )
    for title, statuses in sections:
        chosen = [(cid, c) for cid, c in clauses.items() if c["status"] in statuses]
        if chosen:
            out += ["", f"## {title}", ""]
            for cid, clause in chosen:
                out += _failed_clause_lines(cid, clause, tests)
    out += _matrix_lines(document)
    out += _skipped_lines(document)
    return "\n".join(out).rstrip() + "\n"


def _header_lines(header: Mapping[str, Any]) -> list[str]:
    out = []
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
    flink = header.get("flink")
    if flink:
        note = f" ({flink['reason']})" if flink.get("reason") else ""
        out.append(f"- flink leg: {flink['status']}{note}")
    clause_set = header.get("clause_set")
    if clause_set:
        pinned = f" (pinned by {clause_set['source']})" if clause_set.get("pinned") else ""
        out.append(f"- clause set: {clause_set['version']}{pinned}")
    for key in ("suite_version", "hypothesis_profile", "strict_should", "python", "platform",
                "started", "finished", "exit_status"):  # fmt: skip
        if key in header:
            out.append(f"- {key.replace('_', ' ')}: {header[key]}")
    return out


def _failed_clause_lines(
    cid: str, clause: Mapping[str, Any], tests: Mapping[str, Any]
) -> list[str]:
    """A clause that did not pass: its failing tests, what was wrong and how to rerun each."""
    out = [f"### {cid} · {clause['level']} · {clause['status']} · {clause['title']}", ""]
    failing = [
        tests[nodeid]
        for nodeid in clause["tests"]
        if nodeid in tests and tests[nodeid]["status"] == clause["status"]
    ]
    for test in failing[:MAX_TESTS_LISTED]:
        message = _wrong(test) or "(no message)"
        out.append(f"- `{test['nodeid']}`: {test['status']}: {message}")
        if test.get("repro"):
            out += ["", "  ```", f"  {test['repro']}", "  ```"]
    if len(failing) > MAX_TESTS_LISTED:
        out.append(f"- ... and {len(failing) - MAX_TESTS_LISTED} more tests")
    return [*out, ""]


def _matrix_lines(document: Mapping[str, Any]) -> list[str]:
    columns = _columns(document)
    out = ["", "## Clause x backend", ""]
    if SPARK_LEG in columns:
        out += ["The `spark` column holds the tests that ran on the Spark leg.", ""]
    out.append("| clause | level | title | " + " | ".join(columns) + " | result |")
    out.append("|---|---|---|" + "---|" * len(columns) + "---|")
    for cid, clause in document["clauses"].items():
        cells = [_cell(clause["backends"].get(name, "NOTRUN")) for name in columns]
        title = clause["title"].replace("|", "\\|")
        out.append(
            f"| {cid} | {clause['level']} | {title} | "
            + " | ".join(cells)
            + f" | **{_cell(clause['status'])}** |"
        )
    return out


def _skipped_lines(document: Mapping[str, Any]) -> list[str]:
    """The skipped clauses, those of capabilities not claimed first, then every skipped test
    by reason."""
    header = document["header"]
    covering: Mapping[str, Sequence[str]] = header.get("covering_targets") or {}
    skipped = [(cid, c) for cid, c in document["clauses"].items() if c["status"] == "SKIP"]
    unclaimed = [(cid, c) for cid, c in skipped if skip_kind(c["reasons"]) == _SKIP_KINDS[0][0]]
    out: list[str] = []
    if unclaimed:
        target = (header.get("target") or {}).get("name", "the target")
        out += ["", "## Skipped: capabilities not claimed", ""]
        out.append(f"Clauses of capabilities {target} does not claim; another target covers them.")
        out += ["", "| clause | level | title | capability | covered by |", "|---|---|---|---|---|"]
        for cid, clause in unclaimed:
            caps = [
                cap for cap in clause["capabilities"] if cap not in header.get("capabilities", [])
            ]
            caps = caps or list(clause["capabilities"])
            names = list(dict.fromkeys(n for cap in caps for n in covering.get(cap, ())))
            cover = ", ".join(f"`--impl={n}`" for n in names) or "no installed target"
            title = clause["title"].replace("|", "\\|")
            out.append(f"| {cid} | {clause['level']} | {title} | {', '.join(caps)} | {cover} |")
    others = [(cid, c) for cid, c in skipped if (cid, c) not in unclaimed]
    if others:
        out += ["", "## Skipped for other reasons", ""]
        for cid, clause in others:
            out.append(f"- {cid} ({clause['title']}): {'; '.join(clause['reasons'])}")
    out += _skipped_tests_lines(document)
    return out


def _skipped_tests_lines(document: Mapping[str, Any]) -> list[str]:
    reasons: Mapping[str, int] = document["summary"].get("skip_reasons", {})
    if not reasons:
        return []
    out = ["", "## Skipped tests, by reason", ""]
    for reason, count in reasons.items():
        nodeids = [
            t["nodeid"]
            for t in document["tests"]
            if t["status"] == "SKIP" and (t["message"] or "(no reason)") == reason
        ]
        out += [f"<details><summary>{count} · {_html(reason)}</summary>", ""]
        out += [f"- `{nodeid}`" for nodeid in nodeids]
        out += ["", "</details>", ""]
    return out


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _spark_line(spark: Mapping[str, Any]) -> str:
    """The Spark leg in one line: master, executors, jobs and tasks (or why it did not run)."""
    line = f"master {spark.get('master', '?')}"
    if spark.get("status") == "not selected":
        return "not selected (add spark to --backend)"
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
