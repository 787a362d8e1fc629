"""The CI recipe a storage's own repository copies (examples/ci-recipe/) gates that storage.

A scratch repository is made from the recipe; the command of its tox environment runs here
(with this checkout's kit instead of the one from the package index, and on fewer legs to
keep CI short) and must pass, judged by the clause set the recipe pins, and leave the
Markdown, JSON and JUnit reports the workflow keeps as artifacts. The workflow itself is
checked for the steps the recipe promises.
"""

from __future__ import annotations

import configparser
import json
import shlex
import shutil
import subprocess
import tomllib
import xml.etree.ElementTree as ET

import yaml

from tests.conformance.kit import run_pytest
from tests.meta.suite_runner import REPO

RECIPE = REPO / "examples" / "ci-recipe"


def _tox_command() -> list[str]:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(RECIPE / "tox.ini")
    command = parser["testenv:conformance"]["commands"].replace("\\\n", " ")
    [line] = [c for c in command.splitlines() if c.strip()]
    return shlex.split(line)


def test_the_workflow_runs_the_gate_and_keeps_the_reports():
    workflow = yaml.safe_load((RECIPE / ".github" / "workflows" / "conformance.yml").read_text())
    steps = workflow["jobs"]["conformance"]["steps"]
    runs = " ".join(step.get("run", "") for step in steps)
    uses = {step.get("uses", "").split("@")[0]: step for step in steps}
    assert "tox -e conformance" in runs
    assert "pip install --upgrade pip" in runs  # an old pip cannot resolve the extras
    assert uses["actions/setup-java"]["with"]["java-version"] == "17"
    artifact = uses["actions/upload-artifact"]
    assert artifact["if"] == "always()"
    assert artifact["with"]["path"] == "conformance-report/"
    assert "conformance.md" in runs
    assert "GITHUB_STEP_SUMMARY" in runs


def test_the_tox_gate_passes_from_a_scratch_repository(tmp_path):
    repo = tmp_path / "auditstore"
    shutil.copytree(RECIPE, repo)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    command = _tox_command()
    assert command[:2] == ["pytest", "--impl=auditstore"], command
    assert "--require-legs=moto,spark" in command
    args = [a.replace("{toxinidir}", str(repo)) for a in command[1:] if a != "{posargs}"]
    # here: the local leg and three groups, no Spark (CI runs those legs on the reference)
    args += ["--backend=local", "--require-legs=", "--spark-master=none", "-k", "str or inl or ser"]
    run = run_pytest(repo / "src", *args, timeout=600)
    assert run.returncode == 0, run
    report = json.loads((repo / "conformance-report" / "conformance.json").read_text())
    assert report["header"]["target"]["name"] == "auditstore"
    pin = tomllib.loads((RECIPE / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert report["header"]["clause_set"] == {
        "version": pin["ckptconform_clauses_as_of"],
        "pinned": True,
        "source": "ini key ckptconform_clauses_as_of",
        "newer": {},
    }
    statuses = {cid: c["status"] for cid, c in report["clauses"].items()}
    assert [cid for cid, s in statuses.items() if s == "PASS" and cid.startswith("INL-")]
    assert "FAIL" not in statuses.values(), statuses
    assert (repo / "conformance-report" / "conformance.md").read_text().startswith("#")
    junit = ET.parse(repo / "conformance-report" / "junit.xml").getroot()
    suite = junit if junit.tag == "testsuite" else junit.find("testsuite")
    assert suite is not None
    assert int(suite.get("tests", "0")) > 0
    assert int(suite.get("failures", "0")) == 0
