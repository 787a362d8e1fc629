#!/usr/bin/env bash
# The JobManager reference's run: the suite against --impl=ckptstore-jobmanager on the local
# file system and moto (its state lives in memory; its file-system parts are the file-system
# reference's, which the main job checks on every leg), without the Spark leg (--backend leaves
# it out). The report goes
# to conformance-report/jobmanager; tests/meta/test_reference_passes.py reads it when CI names
# it in CKPTCONFORM_JOBMANAGER_REPORT. Runs in a scratch directory (BAD-5 and BAD-6 watch the
# working directory), so it can run beside the main job. Extra arguments go to the suite.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
exec "$repo/.venv/bin/ckptconform" --impl=ckptstore-jobmanager --backend=local,moto \
  --report-dir "$repo/conformance-report/jobmanager" \
  -p no:cacheprovider -n "${PYTEST_WORKERS:-2}" --dist loadfile "$@"
