"""Helpers for the plugin tests: fake targets, clause ids from the catalog, pytest subprocesses."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

from ckptconform.clauses import CLAUSES


def must_clause() -> str:
    """A MUST clause that needs no capability."""
    return next(c.id for c in CLAUSES.values() if c.level == "MUST" and not c.capabilities)


def other_must_clause() -> str:
    ids = [c.id for c in CLAUSES.values() if c.level == "MUST" and not c.capabilities]
    return ids[1]


def should_clause() -> str:
    """A SHOULD clause that needs no capability."""
    return next(c.id for c in CLAUSES.values() if c.level == "SHOULD" and not c.capabilities)


def capability_clause(capability: str = "savepoints") -> str:
    """A clause that needs ``capability``."""
    return next(c.id for c in CLAUSES.values() if capability in c.capabilities)


FAKE_TARGET = '''
"""A fake target for the plugin tests: make_storage returns a plain record of its arguments."""

class Storage:
    def __init__(self, **kwargs):
        self.kwargs = kwargs


class _Target:
    name = "fake"
    capabilities = {capabilities!r}
    schemes = {schemes!r}
    known_failures = {known_failures!r}

    def make_storage(self, *, checkpoint_dir, savepoint_dir, options):
        return Storage(checkpoint_dir=checkpoint_dir, savepoint_dir=savepoint_dir, options=options)


conformance_target = _Target()
'''


def write_target(
    directory: Path,
    module: str = "fake_target",
    *,
    capabilities: object = (),
    schemes: object = None,
    known_failures: object = None,
) -> str:
    """Write a fake target module into ``directory``; returns the module name."""
    text = FAKE_TARGET.format(
        capabilities=list(capabilities) if not isinstance(capabilities, str) else capabilities,
        schemes=schemes,
        known_failures=known_failures,
    )
    (directory / f"{module}.py").write_text(text)
    return module


@dataclass
class Run:
    returncode: int
    output: str

    def __str__(self) -> str:
        return f"exit code {self.returncode}\n{self.output[-6000:]}"


def run_pytest(cwd: Path, *args: str, timeout: int = 300) -> Run:
    """``python -m pytest ARGS`` in ``cwd`` with ``cwd`` on PYTHONPATH (a user's view)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(cwd), env.get("PYTHONPATH", "")) if p)
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("CI", None)
    env.pop("HYPOTHESIS_PROFILE", None)
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return Run(completed.returncode, completed.stdout + completed.stderr)


def dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip()
