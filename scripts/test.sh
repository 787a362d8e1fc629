#!/usr/bin/env bash
# Sets up, then runs the project's own tests (unit tests of both packages and the meta-tests
# that run the suite against the reference and the broken implementations).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# bytecode caches: the meta-tests start a Python process per broken implementation (.ci/run)
unset PYTHONDONTWRITEBYTECODE
export HYPOTHESIS_PROFILE=${HYPOTHESIS_PROFILE:-ci}
exec .venv/bin/python -m pytest -n "${PYTEST_WORKERS:-2}" --durations=20 "$@"
