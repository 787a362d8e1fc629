"""The dependency rules of docs/ARCHITECTURE.md section 2, as import-linter's contracts
(``[tool.importlinter]`` in pyproject.toml) and, for the contract module, a query of grimp's
import graph and a run of its values under an audit hook that records I/O.

Each rule is checked on this tree, and on a scratch copy of the packages where one added import
breaks it: a rule that a defect does not break would check nothing. The copies come first on
``PYTHONPATH`` of a child process, so the editable install's packages stay out of its graph.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("importlinter", reason="import-linter is not installed (extra dev)")

REPO = Path(__file__).resolve().parents[2]
#: the folders that hold the packages the contracts name (pyproject's package-dir)
PACKAGE_ROOTS = ("reference", "conformance", "targets")
CONTRACTS = ("acyclic", "reference-alone", "kit-through-api")

#: (contract, module file under the scratch copy, the import that breaks it, what the
#: broken contract's report names)
DEFECTS = [
    (
        "acyclic",
        "reference/ckptstore/admin/report.py",
        "from ckptstore.admin import inspect_command",
        "No cycles are allowed in ckptstore.admin",
    ),
    ("reference-alone", "reference/ckptstore/paths.py", "import ckptconform", "ckptstore.paths"),
    (
        "kit-through-api",
        "conformance/ckptconform/policy.py",
        "from ckptstore import paths",
        "ckptconform.policy -> ckptstore.paths",
    ),
]

_API_IMPORTS = """
import json, grimp
graph = grimp.build_graph("ckptstore", include_external_packages=True, cache_dir=None)
print(json.dumps(sorted(graph.find_upstream_modules("ckptstore.api"))))
"""


#: every concrete value of ``ckptstore.api`` made, read, compared, printed and pickled, with an
#: audit hook recording the I/O events it raises (files, sockets, processes)
_API_VALUES = """
import json, pickle, sys, warnings

import ckptstore.api as api
import ckptstore.redaction  # repr's lazy import, loaded before the hook

IO = ("open", "os.", "socket.", "shutil.", "subprocess.", "urllib.", "http.", "glob.", "sqlite3.")
seen = []
sys.addaudithook(lambda event, args: seen.append(event) if event.startswith(IO) else None)

job = api.JobID.generate()
assert api.JobID.from_hex(job.bytes_.hex()) == job
ref = api.encode_path_as_reference("s3://bucket/checkpoints/savepoint-1")
assert api.decode_path_from_reference(ref) == "s3://bucket/checkpoints/savepoint-1"
default = api.CheckpointStorageLocationReference.default()
assert default.is_default and not ref.is_default
handle = api.ByteStreamStateHandle.of("name", b"state")
with warnings.catch_warnings(record=True):
    api.ByteStreamStateHandle.with_random_name(b"state")
assert handle.open_input_stream().read() == b"state"
handle.state_size, handle.as_bytes_if_in_memory(), handle.discard_state()
for value in (job, ref, default, handle, api.CheckpointedStateScope.SHARED):
    repr(value)
    assert pickle.loads(pickle.dumps(value)) == value
print(json.dumps(seen))
"""

#: a helper of the contract module that reads a file, as a defect would
_API_IO_DEFECT = """
_encode = encode_path_as_reference


def encode_path_as_reference(path: str) -> CheckpointStorageLocationReference:  # noqa
    with open(__file__, "rb"):
        pass
    return _encode(path)
"""


def _scratch(tmp_path: Path) -> Path:
    """A copy of the packages' folders and pyproject.toml, without caches."""
    for name in PACKAGE_ROOTS:
        shutil.copytree(REPO / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def _add_import(root: Path, module: str, statement: str) -> None:
    path = root / module
    path.write_text(path.read_text() + f"\n{statement}  # noqa\n")


def _child_json(root: Path, script: str) -> list[str]:
    """What ``script``, run by a child over the packages under ``root``, prints as JSON."""
    done = _run(root, sys.executable, "-c", script)
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout))


def _run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(root / n) for n in PACKAGE_ROOTS)}
    return subprocess.run(
        args, cwd=root, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def _lint(root: Path, contract: str) -> subprocess.CompletedProcess[str]:
    lint = Path(sys.executable).with_name("lint-imports")
    return _run(root, str(lint), "--no-logo", "--no-cache", "--contract", contract)


def _api_rule_breaks(upstream: set[str]) -> list[str]:
    """What ``ckptstore.api`` reaches, directly or not, beyond the standard library,
    ``ckptstore.errors`` and ``ckptstore.redaction``."""
    allowed = {"ckptstore.errors", "ckptstore.redaction"}
    return sorted(
        m
        for m in upstream - allowed
        if m.startswith("ckptstore") or m.split(".")[0] not in sys.stdlib_module_names
    )


@pytest.mark.parametrize("contract", CONTRACTS)
def test_the_tree_keeps_the_contract(contract: str) -> None:
    done = _lint(REPO, contract)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


@pytest.mark.parametrize(("contract", "module", "statement", "named"), DEFECTS)
def test_an_import_against_the_rule_breaks_the_contract(
    tmp_path: Path, contract: str, module: str, statement: str, named: str
) -> None:
    root = _scratch(tmp_path)
    assert _lint(root, contract).returncode == 0, "the scratch copy keeps the contract"
    _add_import(root, module, statement)
    done = _lint(root, contract)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "BROKEN" in done.stdout
    assert named in done.stdout


def test_every_contract_has_a_defect_that_breaks_it() -> None:
    assert sorted(c for c, *_ in DEFECTS) == sorted(CONTRACTS)


def test_the_contract_module_imports_only_the_standard_library_and_the_errors() -> None:
    """``ckptstore.api`` is what a storage author imports: no I/O library, nothing of the
    reference but its errors (and the redaction its two ``repr`` helpers load lazily)."""
    assert _api_rule_breaks(set(_child_json(REPO, _API_IMPORTS))) == []


def test_an_import_of_a_third_party_or_the_reference_breaks_the_contract_modules_rule(
    tmp_path: Path,
) -> None:
    root = _scratch(tmp_path)
    _add_import(root, "reference/ckptstore/api.py", "import fsspec")
    _add_import(root, "reference/ckptstore/redaction.py", "from ckptstore import paths")
    breaks = _api_rule_breaks(set(_child_json(root, _API_IMPORTS)))
    assert "fsspec" in breaks
    assert "ckptstore.paths" in breaks


def test_the_contract_modules_values_do_no_io() -> None:
    """A storage author's code may make, compare and pickle the contract's values anywhere
    (a Spark task, a signal handler): they never touch a file, a socket or a process."""
    assert _child_json(REPO, _API_VALUES) == []


def test_a_helper_that_reads_a_file_breaks_the_no_io_rule(tmp_path: Path) -> None:
    root = _scratch(tmp_path)
    path = root / "reference/ckptstore/api.py"
    path.write_text(path.read_text() + _API_IO_DEFECT)
    assert "open" in _child_json(root, _API_VALUES)
