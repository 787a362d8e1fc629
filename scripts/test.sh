#!/usr/bin/env bash
# Sets up, then runs the project's own tests (unit tests of both packages and the meta-tests
# that run the suite against the reference and the broken implementations). The reference's
# own runs are read from the reports of scripts/main.sh and scripts/jobmanager.sh when those
# ran on the same tree (scripts/report_reuse.py decides and says so); else the tests run them.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# bytecode caches: the meta-tests start a Python process per broken implementation (.ci/run)
unset PYTHONDONTWRITEBYTECODE
export HYPOTHESIS_PROFILE=${HYPOTHESIS_PROFILE:-ci}
# reports CI names itself stay; the README's two commands reuse the first one's reports
if [[ -z ${CKPTCONFORM_REFERENCE_REPORT:-} ]] &&
  .venv/bin/python scripts/report_reuse.py check conformance-report ckptstore \
    local,memory,moto,spark | sed 's/^/test: /'; then
  export CKPTCONFORM_REFERENCE_REPORT="$PWD/conformance-report/conformance.json"
fi
if [[ -z ${CKPTCONFORM_JOBMANAGER_REPORT:-} ]] &&
  .venv/bin/python scripts/report_reuse.py check conformance-report/jobmanager \
    ckptstore-jobmanager local,moto | sed 's/^/test: /'; then
  export CKPTCONFORM_JOBMANAGER_REPORT="$PWD/conformance-report/jobmanager/conformance.json"
fi
# three workers per core, at most 8: the meta-tests spend most of their time waiting on
# servers, sockets and retry budgets, so two workers leave two cores half idle
workers=$(($(nproc) * 3))
((workers <= 8)) || workers=8
# tests/conftest.py hands the workers the longest tests first, a few at a time, and the tests
# that share a Spark session to one worker
exec .venv/bin/python -m pytest -n "${PYTEST_WORKERS:-$workers}" --durations=20 "$@"
