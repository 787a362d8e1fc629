#!/usr/bin/env bash
# Creates .venv (if missing) and installs the project with the extras the tests need.
# Idempotent: a second run only re-checks the install. Needs python3 >= 3.11.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "setup: Python 3.11 or newer is needed ($("$PYTHON" --version 2>&1) found)" >&2
  exit 1
fi
if [[ ! -x .venv/bin/python ]]; then
  "$PYTHON" -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".${CKPT_EXTRAS:-[s3,spark,budget,minio,sftp,dev]}"
