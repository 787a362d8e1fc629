"""scripts/report_reuse.py: the tests reuse a suite run's report only for the same tree.

The README's two commands: ``scripts/main.sh`` stamps its report with the tree's fingerprint,
``scripts/test.sh`` reuses the report while the fingerprint and the run's settings match.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from scripts import report_reuse

REPO = Path(__file__).resolve().parents[2]
STARTED = "2026-11-29T02:31:17+00:00"


def _tree(root: Path) -> Path:
    for name, text in {
        "reference/ckptstore/__init__.py": "x = 1\n",
        "conformance/ckptconform/__init__.py": "",
        "pyproject.toml": "[project]\n",
    }.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _header(**changes: object) -> dict[str, object]:
    header: dict[str, object] = {
        "target": {"name": "ckptstore"},
        "hypothesis_profile": "ci",
        "backends": [
            {"name": name, "status": "selected"} for name in ("local", "memory", "moto", "sftp")
        ]
        + [{"name": "minio", "status": "skipped"}],
        "spark": {"status": "selected"},
        "started": STARTED,
    }
    header.update(changes)
    return header


def _report(tmp_path: Path, tree: str, arguments: tuple[str, ...] = (), **changes: object) -> Path:
    """A report directory as scripts/main.sh leaves it: the report, then its stamp."""
    report_dir = tmp_path / "conformance-report"
    report_dir.mkdir(exist_ok=True)
    document = {"header": _header(**changes), "clauses": {}, "tests": []}
    (report_dir / "conformance.json").write_text(json.dumps(document))
    assert report_reuse.stamp(report_dir, tree, time.time() - 5, list(arguments))
    return report_dir


def _decide(report_dir: Path, tree: str, legs: str = "local,memory,moto,spark") -> str:
    reuse, why = report_reuse.reuse_reason(report_dir, "ckptstore", legs.split(","), tree)
    return ("reuse: " if reuse else "run: ") + why


def test_fingerprint_follows_contents_not_caches(tmp_path):
    root = _tree(tmp_path)
    first = report_reuse.fingerprint(root)
    assert report_reuse.fingerprint(root) == first
    cache = root / "reference" / "ckptstore" / "__pycache__"
    cache.mkdir()
    (cache / "__init__.cpython-311.pyc").write_bytes(b"\0")
    assert report_reuse.fingerprint(root) == first
    (root / "conformance" / "ckptconform" / "new.py").write_text("")  # untracked counts
    second = report_reuse.fingerprint(root)
    assert second != first
    (root / "reference" / "ckptstore" / "__init__.py").write_text("x = 2\n")
    assert report_reuse.fingerprint(root) not in {first, second}


def test_same_tree_reuses_and_says_when(tmp_path):
    report_dir = _report(tmp_path, "abc", ("--require-legs=moto,sftp,s3rver,spark",))
    assert _decide(report_dir, "abc") == (
        "reuse: using the main job's report of 2026-11-29 02:31 UTC (same tree)"
    )


@pytest.mark.parametrize(
    ("arguments", "changes", "legs", "why"),
    [
        ((), {}, "local,memory,moto,spark", "the tree changed since the main job's report"),
        (("--backend=local",), {}, "local", "was a run with --backend=local"),
        ((), {"hypothesis_profile": "dev"}, "local", "used hypothesis profile dev, not ci"),
        ((), {"spark": {"status": "skipped"}}, "local,spark", "lacks the spark leg"),
        ((), {"target": {"name": "mypkg"}}, "local", "is of mypkg, not ckptstore"),
    ],
)
def test_other_runs_are_not_reused(tmp_path, arguments, changes, legs, why):
    tree = "abc" if legs != "local,memory,moto,spark" else "old"
    report_dir = _report(tmp_path, tree, arguments, **changes)
    decision = _decide(report_dir, "abc", legs)
    assert decision.startswith("run: ")
    assert why in decision


def test_report_of_a_later_unstamped_run_is_not_reused(tmp_path):
    report_dir = _report(tmp_path, "abc")
    document = {"header": _header(started="2026-11-29T03:00:00+00:00")}
    (report_dir / "conformance.json").write_text(json.dumps(document))
    assert "has no record of the tree it ran on" in _decide(report_dir, "abc")


def test_no_report_runs(tmp_path):
    assert _decide(tmp_path / "nothing", "abc").startswith("run: no report of the main job")


def test_stamp_ignores_a_report_older_than_the_run(tmp_path):
    report_dir = tmp_path / "conformance-report"
    report_dir.mkdir()
    report = report_dir / "conformance.json"
    report.write_text(json.dumps({"header": _header()}))
    os.utime(report, (time.time() - 3600, time.time() - 3600))
    assert not report_reuse.stamp(report_dir, "abc", time.time() - 60, [])
    assert not (report_dir / "tree.json").exists()


def test_check_prints_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(report_reuse, "fingerprint", lambda: "abc")
    report_dir = _report(tmp_path, "abc")
    assert report_reuse.main(["check", str(report_dir), "ckptstore", "local,spark"]) == 0
    assert capsys.readouterr().out == (
        "using the main job's report of 2026-11-29 02:31 UTC (same tree)\n"
    )
    assert report_reuse.main(["check", str(report_dir), "ckptstore", "local,s3rver"]) == 1
    assert capsys.readouterr().out == (
        "the tests run the suite against ckptstore: the main job's report of "
        "2026-11-29 02:31 UTC lacks the s3rver leg\n"
    )


FAKE_CKPTCONFORM = """#!{python}
# Writes the report a suite run would: its header only, from the arguments and the environment.
import json, os, sys, datetime, pathlib, time
args = sys.argv[1:]
value = lambda key: next(a.split("=", 1)[1] for a in args if a.startswith(key + "="))
out = pathlib.Path(args[args.index("--report-dir") + 1])
out.mkdir(parents=True, exist_ok=True)
time.sleep(1.1)  # a report made later than the run's start, to the second
header = {{
    "target": {{"name": value("--impl")}},
    "hypothesis_profile": os.environ.get("HYPOTHESIS_PROFILE", "dev"),
    "backends": [{{"name": b, "status": "selected"}} for b in value("--backend").split(",")],
    "spark": {{"status": "skipped" if "--spark-master=none" in args else "selected"}},
    "started": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
}}
(out / "conformance.json").write_text(json.dumps({{"header": header}}))
print("suite run of", value("--impl"))
"""

FAKE_PYTHON = """#!/bin/sh
if [ "$1 $2" = "-m pytest" ]; then
  echo "pytest reference=$CKPTCONFORM_REFERENCE_REPORT jobmanager=$CKPTCONFORM_JOBMANAGER_REPORT"
  exit 0
fi
exec "{python}" "$@"
"""


def _repo(tmp_path: Path) -> Path:
    """The scripts and a small tree, with a .venv whose suite runs only write a report header."""
    root = _tree(tmp_path / "repo")
    (root / "scripts").mkdir()
    for name in ("main.sh", "jobmanager.sh", "test.sh", "report_reuse.py"):
        shutil.copy(REPO / "scripts" / name, root / "scripts" / name)
    (root / "scripts" / "setup.sh").write_text("")
    bin_dir = root / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name, text in {"python": FAKE_PYTHON, "ckptconform": FAKE_CKPTCONFORM}.items():
        (bin_dir / name).write_text(text.format(python=sys.executable))
        (bin_dir / name).chmod(0o755)
    return root


def _bash(root: Path, script: str, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CKPTCONFORM_", "HYPOTHESIS"))}
    done = subprocess.run(
        ["bash", f"scripts/{script}", *args], cwd=root, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_readme_commands_run_the_suite_once(tmp_path):
    root = _repo(tmp_path)
    out = _bash(root, "main.sh")
    assert "the JobManager reference's run goes alongside" in out
    assert "the JobManager reference's run passed" in out.splitlines()[-1]
    assert (
        "suite run of ckptstore-jobmanager"
        in (root / "conformance-report/jobmanager.log").read_text()
    )
    lines = _bash(root, "test.sh").splitlines()
    assert lines[0].startswith("test: using the main job's report of ")
    assert lines[0].endswith(" (same tree)")
    assert lines[1].startswith("test: using the JobManager run's report of ")
    report = root / "conformance-report"
    assert lines[2] == (
        f"pytest reference={report}/conformance.json "
        f"jobmanager={report}/jobmanager/conformance.json"
    )
    (root / "reference" / "ckptstore" / "__init__.py").write_text("x = 3\n")
    lines = _bash(root, "test.sh").splitlines()
    assert lines[0].startswith("test: the tests run the suite against ckptstore: the tree changed")
    assert lines[2] == "pytest reference= jobmanager="


def test_main_job_with_arguments_runs_alone_and_is_not_reused(tmp_path):
    root = _repo(tmp_path)
    out = _bash(root, "main.sh", "--backend=local")
    assert "JobManager" not in out
    lines = _bash(root, "test.sh").splitlines()
    assert "was a run with --backend=local" in lines[0]
    assert lines[1].startswith(
        "test: the tests run the suite against ckptstore-jobmanager: no report"
    )
