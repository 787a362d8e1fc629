"""The clause report: per-test statuses from pytest reports, aggregation, json and markdown."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from ckptconform.clauses import CLAUSES
from ckptconform.report import (
    PROP_BACKEND,
    PROP_CLAUSES,
    PROP_FAILED,
    PROP_KIND,
    Outcome,
    OutcomeRecorder,
    aggregate,
    build_document,
    render_markdown,
    skip_lines,
    summary_lines,
    verdict_line,
    what_was_wrong,
    write_report,
)

IDS = list(CLAUSES)[:3]


@dataclass
class _Crash:
    message: str


@dataclass
class _Longrepr:
    reprcrash: _Crash


@dataclass
class _Report:
    """The attributes of pytest.TestReport that the recorder reads."""

    nodeid: str
    when: str
    outcome: str
    longrepr: Any = None
    duration: float = 0.01
    clauses: str = IDS[0]
    backend: str = "local"
    kind: str = ""
    wasxfail: str | None = None
    failed_ids: str = ""  # what the plugin copies from a ClauseFailure
    user_properties: list[tuple[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.user_properties = [
            (PROP_CLAUSES, self.clauses),
            (PROP_BACKEND, self.backend),
            (PROP_KIND, self.kind),
        ]
        if self.failed_ids:
            self.user_properties.append((PROP_FAILED, self.failed_ids))
        if self.wasxfail is None:
            del self.wasxfail

    passed = property(lambda self: self.outcome == "passed")
    failed = property(lambda self: self.outcome == "failed")
    skipped = property(lambda self: self.outcome == "skipped")


def _feed(*reports: _Report) -> OutcomeRecorder:
    recorder = OutcomeRecorder()
    for report in reports:
        recorder.add(report)
    return recorder


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        ([], "NOTRUN"),
        (["SKIP", "SKIP"], "SKIP"),
        (["PASS", "SKIP"], "PASS"),
        (["PASS", "WARN"], "WARN"),
        (["XFAIL", "PASS"], "XFAIL"),
        (["WARN", "FAIL", "PASS"], "FAIL"),
        (["XPASS", "XFAIL"], "XPASS"),
    ],
)
def test_aggregate(statuses, expected):
    assert aggregate(statuses) == expected


def test_pass_fail_skip_and_teardown_errors():
    recorder = _feed(
        _Report("t::a", "setup", "passed"),
        _Report("t::a", "call", "passed"),
        _Report("t::a", "teardown", "passed"),
        _Report("t::b", "setup", "passed"),
        _Report("t::b", "call", "failed", _Longrepr(_Crash("AssertionError: nope\nline 2"))),
        _Report("t::c", "setup", "skipped", ("f.py", 1, "Skipped: capability x not claimed by y")),
        _Report("t::d", "setup", "failed", _Longrepr(_Crash("RuntimeError: fixture"))),
        _Report("t::e", "call", "passed"),
        _Report("t::e", "teardown", "failed", _Longrepr(_Crash("OSError: cleanup"))),
    )
    records = recorder.records
    assert records["t::a"].status == "PASS"
    assert records["t::b"].status == "FAIL"
    assert records["t::b"].message == f"[{IDS[0]}] AssertionError: nope\nline 2"
    assert records["t::c"].status == "SKIP"
    assert records["t::c"].message == "capability x not claimed by y"
    assert records["t::d"].status == "FAIL"
    assert records["t::d"].message == f"[{IDS[0]}] error in setup: RuntimeError: fixture"
    assert records["t::e"].status == "FAIL"
    assert records["t::e"].message.startswith(f"[{IDS[0]}] error in teardown")
    assert records["t::a"].duration == pytest.approx(0.03)


def test_xfail_xpass_and_should():
    recorder = _feed(
        _Report(
            "t::known", "call", "skipped", _Longrepr(_Crash("E")), kind="known", wasxfail="why"
        ),
        _Report("t::fixed", "call", "failed", "[XPASS(strict)] known failure", kind="known"),
        _Report(
            "t::warn",
            "call",
            "skipped",
            _Longrepr(_Crash("AssertionError: s")),
            kind="should",
            wasxfail="SHOULD clause failed",
        ),
        _Report("t::ok", "call", "passed", kind="should"),
    )
    records = recorder.records
    assert records["t::known"].status == "XFAIL"
    assert records["t::fixed"].status == "XPASS"
    assert records["t::warn"].status == "WARN"
    assert "AssertionError: s" in records["t::warn"].message
    assert records["t::ok"].status == "PASS"


def test_reports_without_clause_properties_are_ignored():
    recorder = OutcomeRecorder()
    report = _Report("x::y", "call", "passed")
    report.user_properties = []
    recorder.add(report)
    assert recorder.records == {}


def _document() -> dict[str, Any]:
    records = [
        Outcome("m.py::a[local]", [IDS[0]], "local", "PASS"),
        Outcome("m.py::a[moto]", [IDS[0]], "moto", "FAIL", message="AssertionError: x"),
        Outcome("m.py::b[local]", [IDS[1]], "local", "SKIP", message="capability q not claimed"),
        Outcome("m.py::b[moto]", [IDS[1]], "moto", "SKIP", message="capability q not claimed"),
        Outcome("m.py::c", [IDS[2]], None, "WARN", message="slow"),
    ]
    header = {
        "target": {"name": "fake", "origin": "fake_target:conformance_target", "version": None},
        "capabilities": ["inline-state"],
        "schemes": None,
        "backends": [
            {"name": "local", "status": "selected", "reason": ""},
            {"name": "moto", "status": "selected", "reason": ""},
        ],
        "suite_version": "0.1.0",
    }
    return build_document(header, CLAUSES, records, ["local", "moto"])


def test_document_aggregates_per_clause_and_backend():
    doc = _document()
    first, second, third = (doc["clauses"][cid] for cid in IDS)
    assert first["status"] == "FAIL"
    assert first["backends"] == {"local": "PASS", "moto": "FAIL"}
    assert first["reasons"] == ["AssertionError: x"]
    assert first["level"] == CLAUSES[IDS[0]].level
    assert first["title"] == CLAUSES[IDS[0]].title
    assert second["status"] == "SKIP"
    assert second["reasons"] == ["capability q not claimed"]
    assert third["status"] == "WARN"
    assert third["backends"]["no backend"] == "WARN"
    untested = [c for cid, c in doc["clauses"].items() if cid not in IDS]
    assert all(c["status"] == "NOTRUN" for c in untested)
    assert doc["summary"]["clauses"] == {"FAIL": 1, "SKIP": 1, "WARN": 1, "NOTRUN": len(untested)}
    assert doc["summary"]["tests"] == {"PASS": 1, "FAIL": 1, "SKIP": 2, "WARN": 1}
    lines = summary_lines(doc)
    assert lines[0] == "3 clauses checked: 1 FAIL, 1 SKIP, 1 WARN"
    assert any(line.split()[:2] == ["FAIL", IDS[0]] for line in lines)
    assert not any("known_failures" in line for line in lines)
    stale = list(CLAUSES)[-1]
    doc["header"]["known_failures"] = {stale: "old", IDS[0]: "current"}
    assert summary_lines(doc)[-1] == f"  note: known_failures {stale} matched no test that ran"


def test_markdown_and_files(tmp_path):
    doc = _document()
    markdown = render_markdown(doc)
    assert markdown.startswith("# Conformance report")
    assert "- target: **fake**" in markdown
    assert "| clause | level | title | local | moto | no backend | result |" in markdown
    assert f"| {IDS[0]} | {CLAUSES[IDS[0]].level} |" in markdown
    assert "| PASS | FAIL | - | **FAIL** |" in markdown
    assert "`m.py::a[moto]`: FAIL: x" in markdown  # what was wrong, without its type
    json_path, md_path = write_report(tmp_path / "deep" / "dir", doc)
    assert json.loads(json_path.read_text())["clauses"][IDS[0]]["status"] == "FAIL"
    assert md_path.read_text() == markdown


def test_failure_is_blamed_on_the_clause_it_names():
    """A test of two clauses whose ClauseFailure names one fails that one; the other is not
    judged. The ids come from the report's properties: a clause id in the text decides nothing."""
    both = f"{IDS[0]} {IDS[1]}"
    recorder = _feed(
        _Report(
            "t::named",
            "call",
            "failed",
            _Longrepr(_Crash(f"ClauseFailure: [{IDS[0]}] mentioned, not blamed")),
            clauses=both,
            failed_ids=f"{IDS[1]} NOT-1",
        ),
        _Report(
            "t::unnamed",
            "call",
            "failed",
            _Longrepr(_Crash(f"AssertionError: [{IDS[1]}] text only")),
            clauses=both,
        ),
        _Report("t::other", "call", "passed", clauses=IDS[0]),
    )
    named, unnamed = recorder.records["t::named"], recorder.records["t::unnamed"]
    assert named.failed_clauses == [IDS[1]]
    assert named.message.startswith(f"[{IDS[1]}] ClauseFailure")
    assert unnamed.failed_clauses == [IDS[0], IDS[1]]
    assert unnamed.message.startswith(f"[{IDS[0]}, {IDS[1]}] AssertionError")
    doc = build_document({}, CLAUSES, [named, recorder.records["t::other"]], ["local"])
    assert doc["clauses"][IDS[1]]["status"] == "FAIL"
    assert doc["clauses"][IDS[0]]["status"] == "PASS"


def test_verdict_line_names_what_failed_or_why_clauses_were_skipped():
    doc = _document()
    must = [cid for cid in IDS if CLAUSES[cid].level == "MUST"]
    assert verdict_line(doc).startswith("fake: FAIL — ")
    assert f"{IDS[0]}" in verdict_line(doc)
    records = [
        Outcome("m.py::a", [IDS[0]], "local", "PASS"),
        Outcome("m.py::b", [IDS[1]], "local", "SKIP", message="capability q not claimed by fake"),
        Outcome("m.py::c", [IDS[2]], "local", "SKIP", message="backend local has ledger=False"),
    ]
    header = {"target": {"name": "fake"}, "exit_status": 0}
    passing = build_document(header, CLAUSES, records, ["local"])
    assert verdict_line(passing) == (
        "fake: PASS — 1 clause pass, 2 skipped (1 capabilities not claimed, "
        "1 need a leg this run lacks)"
    )
    failing = build_document(
        header, CLAUSES, [Outcome("m.py::a", must[:1], "local", "FAIL", message="x")], ["local"]
    )
    assert verdict_line(failing) == f"fake: FAIL — 1 MUST clause fails: {must[0]}"
    errored = build_document({**header, "exit_status": 2}, CLAUSES, records, ["local"])
    assert verdict_line(errored).startswith("fake: FAIL — pytest's exit status is 2")


def test_skips_are_counted_by_reason():
    records = [
        Outcome(f"m.py::t{i}", [IDS[0]], "local", "SKIP", message=f"reason {i % 3}")
        for i in range(7)
    ]
    doc = build_document({}, CLAUSES, records, ["local"])
    assert doc["summary"]["skip_reasons"] == {"reason 0": 3, "reason 1": 2, "reason 2": 2}
    lines = skip_lines(doc, limit=2)
    assert lines[0].startswith("7 tests skipped, by reason")
    assert lines[1:3] == ["     3  reason 0", "     2  reason 1"]
    assert lines[3].strip() == "... and 1 more reasons (2 tests)"
    assert skip_lines(doc, leave_out={"reason 0", "reason 1", "reason 2"}) == []


def test_what_was_wrong_skips_the_sandbox_listing():
    message = (
        "[STR-2] state_size(size=1, got=-1)\nsandbox file:///x/y:\nfile:///x/y:\n  ./\n"
        "  checkpoints/\nassert -1 == 1\n +  where -1 = handle.state_size"
    )
    assert what_was_wrong(message) == "[STR-2] state_size(size=1, got=-1): assert -1 == 1"
    assert what_was_wrong("RuntimeError: boom") == "RuntimeError: boom"


def test_a_long_message_keeps_its_step_and_what_was_wrong():
    lines = ["[X-1] step(a=1)", "sandbox s:", *[f"  file{i}" for i in range(30)], "assert 1 == 2"]
    recorder = _feed(
        _Report(
            "t::long",
            "call",
            "skipped",
            _Longrepr(_Crash("\n".join(lines))),
            kind="should",
            wasxfail="SHOULD clause failed",
        )
    )
    message = recorder.records["t::long"].message
    assert "[X-1] step(a=1)" in message, message
    assert message.endswith("assert 1 == 2"), message
    assert "lines)" in message


def test_spark_tests_have_their_own_column():
    records = [
        Outcome("m.py::a[local]", [IDS[0]], "local", "PASS"),
        Outcome("m.py::s[local]", [IDS[0]], "local", "FAIL", message="x", spark=True),
    ]
    doc = build_document({"target": {"name": "fake"}}, CLAUSES, records, ["local", "spark"])
    assert doc["clauses"][IDS[0]]["backends"] == {"local": "PASS", "spark": "FAIL"}
