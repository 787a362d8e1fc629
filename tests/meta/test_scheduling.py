"""The order and grouping ``tests/conftest.py`` gives pytest-xdist, checked on a scratch
project run with three workers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ONE_WORKER_MODULES, unit_of

REPO = Path(__file__).resolve().parents[2]

#: The scratch project's conftest: this repository's scheduler hook.
_CONFTEST = """
import importlib.util

spec = importlib.util.spec_from_file_location("ours", {ours!r})
ours = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ours)
pytest_xdist_make_scheduler = ours.pytest_xdist_make_scheduler
"""

_RECORD = """
import os, pathlib

def record(name):
    worker = os.environ.get("PYTEST_XDIST_WORKER", "none")
    pathlib.Path(os.environ["RECORD_DIR"], name).write_text(worker)
"""


def test_a_module_that_shares_a_session_runs_on_one_worker(tmp_path):
    (module,) = ONE_WORKER_MODULES
    assert (REPO / module).is_file()
    project = tmp_path / "project"
    grouped = project / module
    grouped.parent.mkdir(parents=True)
    (project / "tests" / "__init__.py").write_text("")
    ours = str(REPO / "tests" / "conftest.py")
    (project / "tests" / "conftest.py").write_text(_CONFTEST.format(ours=ours))
    (project / "record.py").write_text(_RECORD)
    tests = "from record import record\nimport time\n" + "".join(
        f"def test_{n}():\n    time.sleep(0.05)\n    record(__name__ + '{n}')\n" for n in range(8)
    )
    grouped.write_text(tests)
    (project / "tests" / "test_other.py").write_text(tests)
    records = tmp_path / "records"
    records.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    env.update(RECORD_DIR=str(records), PYTHONPATH=str(project))
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "3", "-p", "no:cacheprovider", "-q", "tests"],
        cwd=project, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    workers: dict[str, set[str]] = {"grouped": set(), "other": set()}
    for record in records.iterdir():
        kind = "other" if "test_other" in record.name else "grouped"
        workers[kind].add(record.read_text())
    assert len(workers["grouped"]) == 1, workers
    assert len(workers["other"]) > 1, workers  # the rest still spreads test by test


def test_units():
    (module,) = ONE_WORKER_MODULES
    assert unit_of(f"{module}::test_a[x]") == unit_of(f"{module}::test_b") == module
    other = "tests/reference/test_faults.py::test_a"
    assert unit_of(other) == other
