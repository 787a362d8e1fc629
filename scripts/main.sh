#!/usr/bin/env bash
# The main job: set up, then run the conformance suite against the reference storage on the
# embedded backends (local, memory, moto's S3 server on 127.0.0.1, an asyncssh SFTP server on
# 127.0.0.1, MinIO where a Docker engine answers, and s3rver, an independent S3 server in
# Node.js installed with npm on first use, where Node.js is found; otherwise those legs are
# skipped with the reason) and on the Spark leg (a local-cluster[2,1,1024] where Java 17 is
# found; otherwise skipped with the reason), and print the clause report. The moto and sftp
# legs are required: they fail rather than skip (CI requires s3rver and Spark too). Extra
# arguments go to `ckptconform`
# (e.g. --backend=local, which leaves the Spark leg out, or --impl=mypkg) and to pytest. The tests run in PYTEST_WORKERS
# processes (default 2), test by test, those on the Spark leg all on one worker (one cluster).
# Without arguments (the README's command) the JobManager reference's run (scripts/jobmanager.sh)
# goes alongside. Each report gets the fingerprint of the tree it ran on (scripts/report_reuse.py),
# so that scripts/test.sh reuses it instead of running the suite again while the tree is the same.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HYPOTHESIS_PROFILE=${HYPOTHESIS_PROFILE:-ci}  # the meta-test's profile: its report is reusable
tree=$(.venv/bin/python scripts/report_reuse.py fingerprint)
started=$(date +%s)
rm -f conformance-report/tree.json
jobmanager=
trap '[[ -z $jobmanager ]] || kill -TERM -- "-$jobmanager" "$jobmanager" 2>/dev/null || true' EXIT
if [[ $# == 0 ]]; then
  mkdir -p conformance-report
  # its own session: the EXIT trap stops the whole run (pytest and its workers) on Ctrl-C
  if command -v setsid >/dev/null; then alone=setsid; else alone=; fi
  $alone bash scripts/jobmanager.sh >conformance-report/jobmanager.log 2>&1 &
  jobmanager=$!
  echo "main: the JobManager reference's run goes alongside (output: conformance-report/jobmanager.log)"
fi
status=0
.venv/bin/ckptconform --impl=ckptstore --backend=local,memory,moto,sftp,minio,s3rver,spark \
  --require-legs=moto,sftp --report-dir conformance-report \
  -n "${PYTEST_WORKERS:-2}" --dist loadgroup "$@" || status=$?
if [[ $status == 0 || $status == 1 ]]; then
  .venv/bin/python scripts/report_reuse.py stamp conformance-report "$tree" "$started" "$@"
fi
if [[ -n $jobmanager ]]; then
  if wait "$jobmanager"; then jm=0; else jm=$?; fi
  jobmanager=
  if [[ $jm == 0 ]]; then
    echo "main: the JobManager reference's run passed (conformance-report/jobmanager/conformance.md)"
  else
    tail -n 40 conformance-report/jobmanager.log
    echo "main: the JobManager reference's run failed, exit $jm (conformance-report/jobmanager.log)"
    [[ $status != 0 ]] || status=$jm
  fi
fi
exit "$status"
