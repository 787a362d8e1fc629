"""Meta-test: every broken implementation fails the clause it breaks, and only that; and every
clause is broken by one of them (a clause no defect can fail would be a test that cannot fail).

Each module of ``fixtures/broken/ckptbroken`` is the reference with one defect. The suite runs
against it like against a third-party package (``--impl=ckptbroken.<module>``), with
``--clauses`` naming the clauses it breaks and ``--first-failure-per-clause`` (so a run takes
seconds, not the whole suite: a clause's later cases, some of which wait out a retry budget
against the defect, are skipped once it failed); from
its ``conformance.json`` this test checks that every clause of ``breaks`` FAILs (or WARNs, for
a SHOULD clause) and that no other clause of the tests that ran fails unless it is in
``may_also_break``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from scripts.conformance_doc import clause_tests

from ckptconform.clauses import CLAUSES
from ckptconform.plugin import suite_dir
from tests.conftest import LONGEST_BROKEN_RUNS
from tests.meta.suite_runner import BROKEN_DIR, run_suite

sys.path.insert(0, str(BROKEN_DIR))
ckptbroken = importlib.import_module("ckptbroken")
SUITE = suite_dir()
#: clause id -> "test_x.py::test_name" of the tests carrying its marker (read from the source)
CLAUSE_TESTS = clause_tests(SUITE)


def _modules_of(clause_ids: Iterable[str]) -> list[str]:
    """The suite modules holding the tests of these clauses: a run collects only those (the
    others' tests would all be deselected by ``--clauses``; collecting them costs a second)."""
    names = {test.split("::")[0] for cid in clause_ids for test in CLAUSE_TESTS.get(cid, [])}
    return sorted(names)


def _needs_flink(target: Any) -> bool:
    """Whether a defect's clauses are held to Flink's own loader (the FLK group)."""
    return any(cid.startswith("FLK-") for cid in target.breaks)


@pytest.mark.parametrize("module", ckptbroken.MODULES)
def test_broken_implementation_fails_its_clause(module, tmp_path):
    target = importlib.import_module(f"ckptbroken.{module}").conformance_target
    # "gate": a failing property stops at its first counterexample instead of shrinking it
    # The Spark leg starts a cluster: only for defects that show on executors. Its master is
    # local[2]: their defects are about processes, and its tasks run in Python workers apart
    # from the driver as on the default local-cluster, without two executor JVMs to start
    # (10 CPU-s a run instead of 21); the main job runs the reference on the default.
    on_spark = target.needs_spark
    if on_spark is None:
        on_spark = any(cid.startswith("SPK-") for cid in target.breaks)
    backends = [*target.backends, "spark"] if on_spark else list(target.backends)
    # FLK clauses need Flink's own loader: the Flink leg must run (not skip) for them
    required = [*(["spark"] if on_spark else []), *(["flink"] if _needs_flink(target) else [])]
    legs = [f"--require-legs={','.join(required)}"] if required else []
    if on_spark:
        legs.append("--spark-master=local[2]")
    modules = [str(SUITE / name) for name in target.suite_modules or _modules_of(target.breaks)]
    run = run_suite(
        f"ckptbroken.{module}",
        ",".join(backends),
        tmp_path,
        *legs,
        f"--clauses={','.join(sorted(target.breaks))}",
        "--first-failure-per-clause",
        # Python's own tracebacks: pytest's parse every source file a traceback passes through
        # (about 0.1 s of CPU per failure); the messages the report keeps are the same
        "--tb=native",
        *modules,
        profile="gate",
    )
    failing = run.failing_clauses()
    missed = set(target.breaks) - failing
    assert not missed, f"{module} should fail {sorted(missed)}\n" + run.describe()
    collateral = failing - set(target.breaks) - set(target.may_also_break)
    assert not collateral, (
        f"{module} fails clauses it does not touch: {sorted(collateral)}\n"
        + run.describe(collateral)
    )
    should_only = all(CLAUSES[cid].level == "SHOULD" for cid in target.breaks)
    # a failing SHOULD clause is a WARN: the run fails only when a MUST clause does
    expected = 0 if should_only else 1
    assert run.returncode == expected, f"exit code {run.returncode}, not {expected}\n" + (
        run.describe()
    )
    for test in run.report["tests"]:
        # a sandbox listing a message promised is filled in by the time it is reported
        assert "<<listing of " not in test.get("message", ""), test["message"]
        # a test that checks a broken clause but failed on another one (of may_also_break)
        # names that one
        blamed = test.get("failed_clauses") or test["clauses"]
        if test["status"] == "FAIL" and set(blamed) & set(target.breaks):
            assert any(cid in test["message"] for cid in target.breaks), (
                f"the failure message of {test['nodeid']} does not name its clause:\n"
                + test["message"]
            )


def test_every_clause_is_broken_by_a_broken_implementation():
    """The promise: every clause is shown to fail against an implementation that breaks it."""
    broken_by: dict[str, list[str]] = {cid: [] for cid in CLAUSES}
    for module in ckptbroken.MODULES:
        for cid in importlib.import_module(f"ckptbroken.{module}").conformance_target.breaks:
            broken_by[cid].append(module)
    unbroken = sorted(cid for cid, modules in broken_by.items() if not modules)
    assert not unbroken, f"no broken implementation breaks {len(unbroken)} clauses: {unbroken}"


def test_every_broken_module_is_listed():
    """A module left out of ckptbroken.MODULES would never run: the list is the directory."""
    directory = Path(ckptbroken.__file__).parent
    found = {p.stem for p in directory.glob("*.py") if not p.stem.startswith("_")}
    assert found == set(ckptbroken.MODULES), (
        f"not listed: {sorted(found - set(ckptbroken.MODULES))}; "
        f"listed, no module: {sorted(set(ckptbroken.MODULES) - found)}"
    )


def test_the_runs_scheduled_first_are_broken_implementations():
    """tests/conftest.py hands these runs to the workers first; a renamed module would drop out."""
    assert set(LONGEST_BROKEN_RUNS) <= set(ckptbroken.MODULES)


_SNAPSHOT = """
import importlib, inspect, json, pkgutil, sys
sys.path.insert(0, sys.argv[1])
import ckptstore
names = [m.name for m in pkgutil.iter_modules(ckptstore.__path__)]
modules = [importlib.import_module(f"ckptstore.{name}") for name in names]
def snapshot():
    seen = {}
    for module in modules:
        for name, value in vars(module).items():
            seen[f"{module.__name__}.{name}"] = id(value)
            if inspect.isclass(value) and value.__module__ == module.__name__:
                for attribute, member in vars(value).items():
                    seen[f"{module.__name__}.{name}.{attribute}"] = id(member)
    return seen
before = snapshot()
import ckptbroken
for name in ckptbroken.MODULES:
    importlib.import_module(f"ckptbroken.{name}")
after = snapshot()
print(json.dumps(sorted(key for key, value in before.items() if after.get(key) != value)))
"""


def test_importing_a_broken_module_changes_no_reference_code():
    """A defect that replaces a function of the reference does so when its storage is made
    (``broken(patch=...)``), never at import: the meta-tests import every module to read its
    ``breaks``, and the reference's own tests share their processes."""
    import json
    import subprocess

    run = subprocess.run(
        [sys.executable, "-c", _SNAPSHOT, str(BROKEN_DIR)],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert json.loads(run.stdout) == [], run.stdout
