"""scripts/setup.sh installs the project only when pyproject.toml or the extras changed.

The script runs in a copy of the repository's skeleton whose ``.venv/bin/python`` is a wrapper:
it logs every ``pip install`` it is asked for (and does nothing else for those) and runs
anything else with this interpreter. Installing uv puts a ``.venv/bin/uv`` there that logs the
``uv pip install`` it is asked for.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

WRAPPER = """#!/bin/sh
if [ "$1 $2 $3" = "-m pip install" ]; then
  echo "pip install $* PYTHONWARNINGS=$PYTHONWARNINGS" >>"{log}"
  case "$*" in
    *"uv>="*)
      [ -n "$NO_UV" ] && {{ echo "ERROR: No matching distribution found for uv" >&2; exit 1; }}
      printf '#!/bin/sh\\necho "uv $* PYTHONWARNINGS=$PYTHONWARNINGS" >>"{log}"\\nexit $UV_RC\\n' \\
        >"$(dirname "$0")/uv"
      chmod +x "$(dirname "$0")/uv";;
  esac
  exit 0
fi
exec "{python}" "$@"
"""


def _skeleton(tmp_path: Path) -> Path:
    """A directory with setup.sh, pyproject.toml and a .venv whose python logs pip installs."""
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    shutil.copy(REPO / "scripts" / "setup.sh", root / "scripts" / "setup.sh")
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    bin_dir = root / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    python = bin_dir / "python"
    python.write_text(WRAPPER.format(log=tmp_path / "pip.log", python=sys.executable))
    python.chmod(0o755)
    console_script = bin_dir / "ckptconform"
    console_script.write_text("#!/bin/sh\n")
    console_script.chmod(0o755)
    return root


def _setup(root: Path, extras: str = "[dev]", **env_vars: str) -> str:
    env = {**os.environ, "CKPT_EXTRAS": extras, "PYTHON": sys.executable, "UV_RC": "0"}
    env.update(env_vars)
    done = subprocess.run(
        ["bash", "scripts/setup.sh"], cwd=root, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


def _installs(tmp_path: Path) -> list[str]:
    """The installs of the project (not of uv) that setup.sh asked for, in order."""
    log = tmp_path / "pip.log"
    lines = log.read_text().splitlines() if log.exists() else []
    return [line for line in lines if " -e ." in line]


def test_second_run_installs_nothing(tmp_path):
    root = _skeleton(tmp_path)
    assert _setup(root) == ""
    assert len(_installs(tmp_path)) == 1
    assert _setup(root) == ""
    assert len(_installs(tmp_path)) == 1


def test_changed_pyproject_or_extras_installs_again(tmp_path):
    root = _skeleton(tmp_path)
    _setup(root)
    with (root / "pyproject.toml").open("a") as pyproject:
        pyproject.write("# changed\n")
    _setup(root)
    assert len(_installs(tmp_path)) == 2
    _setup(root, extras="[s3]")
    assert _installs(tmp_path)[-1].startswith(
        "uv pip install --quiet --compile-bytecode --python .venv/bin/python"
    )
    assert "-e .[s3]" in _installs(tmp_path)[-1]


def test_pip_installs_where_uv_cannot_be_installed(tmp_path):
    root = _skeleton(tmp_path)
    said = _setup(root, NO_UV="1")
    assert said == (
        "setup: installing with pip, as uv could not be installed: "
        "ERROR: No matching distribution found for uv\n"
    )
    (line,) = _installs(tmp_path)
    assert line.startswith("pip install -m pip install --quiet")
    assert "-e .[dev]" in line
    assert not (root / ".venv" / ".ckpt-setup-stamp.uv-log").exists()


def test_install_silences_setuptools_editable_notice(tmp_path):
    root = _skeleton(tmp_path)
    _setup(root)
    (line,) = _installs(tmp_path)
    assert line.endswith("PYTHONWARNINGS=ignore:Editable installation")


def test_failed_install_leaves_no_stamp(tmp_path):
    root = _skeleton(tmp_path)
    env = {**os.environ, "CKPT_EXTRAS": "[dev]", "PYTHON": sys.executable, "UV_RC": "3"}
    done = subprocess.run(["bash", "scripts/setup.sh"], cwd=root, env=env, capture_output=True)
    assert done.returncode == 3
    assert not (root / ".venv" / ".ckpt-setup-stamp").exists()
    assert len(_installs(tmp_path)) == 1
