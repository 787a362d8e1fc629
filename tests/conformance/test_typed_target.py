"""The typed plug-in contract: ``mypy --strict`` accepts a target written against
``ckptconform.ConformanceTarget`` (the README's example) and rejects wrongly typed ones.

The README's target example is taken from README.md itself, with a stub of the storage it
configures, so the example a storage author copies is the one that type-checks. The two mypy
runs share a cache (the first, cold, takes a few seconds).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ckptconform import ConformanceTarget
from ckptconform.target import validate_target
from tests.meta.suite_runner import REPO

pytest.importorskip("mypy")

STORAGE_STUB = """
from collections.abc import Mapping
from typing import Any

from ckptstore.api import CheckpointStorageAccess, CompletedCheckpointStorageLocation, JobID

class MyCheckpointStorage:
    def __init__(
        self,
        checkpoint_dir: str,
        *,
        savepoint_dir: str | None,
        inline_limit: int | None,
        buffer_bytes: int,
        connection: Mapping[str, Any],
    ) -> None: ...
    def create_checkpoint_storage(self, job_id: JobID) -> CheckpointStorageAccess: ...
    def resolve_checkpoint(self, external_pointer: str) -> CompletedCheckpointStorageLocation: ...
"""

WRONG_TARGETS = """
from collections.abc import Mapping
from typing import Any

from ckptconform import ConformanceTarget


class ReturnsAPath:
    name = "wrong-return"
    capabilities = frozenset({"savepoints"})
    schemes = None
    known_failures = None
    options = None

    def make_storage(
        self,
        *,
        checkpoint_dir: str | None,
        savepoint_dir: str | None,
        options: Mapping[str, Any] | None,
    ) -> str:
        return checkpoint_dir or ""


class NarrowArguments:
    name = "narrow-arguments"
    capabilities = frozenset({"savepoints"})
    schemes = None
    known_failures = None
    options = None

    def make_storage(
        self, *, checkpoint_dir: str, savepoint_dir: str, options: dict[str, int]
    ) -> Any:
        return None


class CapabilitiesAsOneString:
    name = "one-string"
    capabilities = 3
    schemes = None
    known_failures = None
    options = None

    def make_storage(
        self,
        *,
        checkpoint_dir: str | None,
        savepoint_dir: str | None,
        options: Mapping[str, Any] | None,
    ) -> Any:
        return None


wrong_return: ConformanceTarget = ReturnsAPath()
narrow_arguments: ConformanceTarget = NarrowArguments()
bad_capabilities: ConformanceTarget = CapabilitiesAsOneString()
"""


#: An author's view: strict for their code and ckptconform's protocol; the reference is
#: checked as an installed package would be (its own errors, such as fsspec without stubs, are
#: not the author's).
MYPY_INI = """
[mypy]
strict = True
python_version = 3.11

[mypy-ckptstore,ckptstore.*]
follow_imports = silent
"""


def readme_target() -> str:
    """The target example of README.md (the block that starts with ``# mypkg/__init__.py``)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    match = re.search(r"```python\n(# mypkg/__init__\.py\n.*?)```", text, re.DOTALL)
    assert match, "README.md lost its typed target example (# mypkg/__init__.py)"
    return match.group(1)


@pytest.fixture(scope="module")
def typed_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The README's target package (with its storage stub) and the wrongly typed targets."""
    root = tmp_path_factory.mktemp("typed")
    package = root / "mypkg"
    package.mkdir()
    (package / "__init__.py").write_text(readme_target())
    (package / "storage.pyi").write_text(STORAGE_STUB)
    (root / "wrong_targets.py").write_text(WRONG_TARGETS)
    (root / "mypy.ini").write_text(MYPY_INI)
    return root


def mypy_strict(root: Path, *files: str) -> tuple[int, str]:
    """``mypy FILES`` in ``root`` (strict, ``MYPY_INI``), the kit's source roots on MYPYPATH."""
    env = {
        **os.environ,
        "MYPYPATH": os.pathsep.join([str(REPO / "reference"), str(REPO / "conformance")]),
    }
    completed = subprocess.run(
        [
            sys.executable, "-m", "mypy", "--config-file=mypy.ini",
            f"--cache-dir={root / '.mypy_cache'}", "--show-error-codes", *files,
        ],
        cwd=root, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    return completed.returncode, completed.stdout + completed.stderr


def test_readme_target_passes_mypy_strict(typed_root):
    returncode, output = mypy_strict(typed_root, "mypkg/__init__.py")
    assert returncode == 0, output
    assert "Success: no issues found in 1 source file" in output, output


def test_wrongly_typed_targets_are_rejected(typed_root):
    returncode, output = mypy_strict(typed_root, "wrong_targets.py")
    assert returncode == 1, output
    errors = [line for line in output.splitlines() if "error:" in line]
    assert all(line.startswith("wrong_targets.py:") for line in errors), output
    source = WRONG_TARGETS.splitlines()
    flagged = sorted({source[int(line.split(":")[1]) - 1].split(":")[0] for line in errors})
    assert flagged == ["bad_capabilities", "narrow_arguments", "wrong_return"], output
    assert all("ConformanceTarget" in line for line in errors), output
    assert "make_storage" in output, output


def test_readme_target_is_a_valid_target(tmp_path, monkeypatch):
    """The README's example also loads: its declarations pass the suite's validation."""
    package = tmp_path / "mypkg"
    package.mkdir()
    (package / "__init__.py").write_text(readme_target())
    (package / "storage.py").write_text(
        "class MyCheckpointStorage:\n"
        "    def __init__(self, checkpoint_dir, **config):\n"
        "        self.checkpoint_dir, self.config = checkpoint_dir, config\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import mypkg  # type: ignore[import-not-found]

    target = validate_target(mypkg.conformance_target, spec="mypkg")
    assert target.options == {"storage_options", "inline_threshold", "write_buffer_size"}
    storage = target.make_storage(
        checkpoint_dir="file:///tmp/c", savepoint_dir=None, options={"storage_options": {}}
    )
    assert storage.checkpoint_dir == "file:///tmp/c"  # type: ignore[attr-defined]
    assert storage.config == {  # type: ignore[attr-defined]
        "savepoint_dir": None,
        "inline_limit": None,
        "buffer_bytes": 4096,
        "connection": {},
    }
    for name in [m for m in sys.modules if m == "mypkg" or m.startswith("mypkg.")]:
        del sys.modules[name]


def test_the_kit_exports_the_protocol():
    import ckptconform

    assert ckptconform.ConformanceTarget is ConformanceTarget
    assert "ConformanceTarget" in ckptconform.__all__
