"""A backend defined outside the kit: the worked example of docs/backends.md (which the README
points to) runs the whole suite.

The example's code is taken from docs/backends.md itself, so the page cannot drift from what
works.
"""

from __future__ import annotations

import json
import os
import re

import pytest

from tests.conformance.kit import run_pytest
from tests.meta.suite_runner import REPO


def _readme_backend() -> str:
    text = (REPO / "docs" / "backends.md").read_text(encoding="utf-8")
    match = re.search(r"```python\n# ramdisk_backend\.py\n(.*?)```", text, re.DOTALL)
    assert match, "docs/backends.md lost its ramdisk_backend.py example"
    return match.group(1)


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="no /dev/shm on this machine")
def test_readme_backend_runs_the_whole_suite(tmp_path):
    (tmp_path / "ramdisk_backend.py").write_text(_readme_backend())
    run = run_pytest(
        tmp_path, "--impl=ckptstore", "--backend=ramdisk_backend:RamDiskBackend",
        "--spark-master=none", "--conformance-report=rep", "-p", "no:cacheprovider",
        timeout=900,
    )  # fmt: skip
    assert run.returncode == 0, run
    report = json.loads((tmp_path / "rep" / "conformance.json").read_text())
    (backend,) = report["header"]["backends"]
    assert (backend["name"], backend["status"]) == ("ramdisk", "selected")
    statuses = {cid: c["status"] for cid, c in report["clauses"].items()}
    passed = [cid for cid, status in statuses.items() if status == "PASS"]
    assert len(passed) > 60, statuses
    assert not [cid for cid, status in statuses.items() if status == "FAIL"]
    # with -p no:cacheprovider a run leaves nothing of hypothesis's in its directory
    assert not (tmp_path / ".hypothesis").exists()


def test_unknown_and_broken_backends_are_usage_errors(tmp_path):
    (tmp_path / "not_a_backend.py").write_text("class Thing:\n    pass\n")
    for spec, message in (
        ("nosuch", "unknown backend 'nosuch'"),
        ("not_a_backend:Thing", "is not a subclass of ckptconform.backends.base.Backend"),
        ("not_a_backend:Missing", "has no attribute 'Missing'"),
        ("no_such_module:X", "cannot import no_such_module"),
        ("local,ckptconform.backends.local:LocalBackend", "names the leg 'local' twice"),
    ):
        run = run_pytest(tmp_path, "--impl=ckptstore", f"--backend={spec}")
        assert run.returncode == 4, (spec, run)
        assert message in run.output, (spec, run)
