#!/usr/bin/env bash
# Creates .venv (if missing) and installs the project editable with the extras the tests need.
# Installs again only when pyproject.toml or the extras changed since the last install (a stamp
# in .venv holds their hash). Needs python3 >= 3.11.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
extras=${CKPT_EXTRAS:-[s3,spark,budget,minio,sftp,dev]}
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "setup: Python 3.11 or newer is needed ($("$PYTHON" --version 2>&1) found)" >&2
  exit 1
fi
if [[ ! -x .venv/bin/python ]]; then
  "$PYTHON" -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
fi
stamp=.venv/.ckpt-setup-stamp
wanted=$(cat pyproject.toml <(printf '%s\n' "$extras") | .venv/bin/python -c \
  'import hashlib, sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())')
if [[ -x .venv/bin/ckptconform && -f $stamp && $(<"$stamp") == "$wanted" ]]; then
  exit 0
fi
if ! .venv/bin/python -c 'import sys; from pip import __version__ as v
sys.exit(tuple(map(int, v.split(".")[:2])) < (23, 2))' 2>/dev/null; then
  echo "setup: upgrading .venv's pip (older than 23.2): .venv/bin/python -m pip install --upgrade pip"
  .venv/bin/python -m pip install --quiet --upgrade pip
fi
rm -f "$stamp"
# uv resolves the same versions as pip and installs them in less than half the time (45 s
# against 100 s for every extra, here); pip installs them where uv cannot be installed. Like
# pip, it compiles the bytecode at once: else the first processes of a run (a suite run's
# workers and servers, all starting together) each compile the same modules.
# The project's packages live in three directories (reference/, conformance/, targets/), so
# setuptools installs them through an import finder and says so in a warning on every install.
export PYTHONWARNINGS="ignore:Editable installation"
if [[ -x .venv/bin/uv ]] || .venv/bin/python -m pip install --quiet --disable-pip-version-check \
  'uv>=0.5' 2>"$stamp.uv-log"; then
  .venv/bin/uv pip install --quiet --compile-bytecode --python .venv/bin/python -e ".$extras"
else
  echo "setup: installing with pip, as uv could not be installed: $(tail -n 1 "$stamp.uv-log")"
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".$extras"
fi
rm -f "$stamp.uv-log"
echo "$wanted" >"$stamp"
