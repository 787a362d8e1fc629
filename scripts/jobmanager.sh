#!/usr/bin/env bash
# The JobManager reference's run: the suite against --impl=ckptstore-jobmanager on the local
# file system and moto (its state lives in memory; its file-system parts are the file-system
# reference's, which the main job checks on every leg), without the Spark leg (--backend leaves
# it out). The report goes
# to conformance-report/jobmanager, with the fingerprint of the tree it ran on
# (scripts/report_reuse.py); tests/meta/test_reference_passes.py reads it when
# CKPTCONFORM_JOBMANAGER_REPORT names it (CI, and scripts/test.sh while the tree is the same).
# Runs in a scratch directory (BAD-5 and BAD-6 watch the working directory), so it can run
# beside the main job. Extra arguments go to the suite.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
export HYPOTHESIS_PROFILE=${HYPOTHESIS_PROFILE:-ci}  # the meta-test's profile: its report is reusable
tree=$(.venv/bin/python scripts/report_reuse.py fingerprint)
started=$(date +%s)
rm -f conformance-report/jobmanager/tree.json
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
(cd "$work" && "$repo/.venv/bin/ckptconform" --impl=ckptstore-jobmanager --backend=local,moto \
  --report-dir "$repo/conformance-report/jobmanager" \
  -p no:cacheprovider -n "${PYTEST_WORKERS:-2}" --dist loadgroup "$@") || status=$?
if [[ $status == 0 || $status == 1 ]]; then
  .venv/bin/python scripts/report_reuse.py stamp conformance-report/jobmanager "$tree" "$started" "$@"
fi
exit "$status"
