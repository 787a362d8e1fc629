#!/usr/bin/env bash
# The Flink leg (issue 12): Flink 2.3.0's own Java storages as conformance targets. Runs the
# adapter's tests (tests/flink: JVM round trips, interop with the reference both ways, the
# reproducers of Flink's deviations), then the suite against --impl=flink and
# --impl=flink-jobmanager on the local file system, the two at once (one JVM each; their
# reports go to conformance-report/flink and conformance-report/flink-jobmanager), and checks
# that conformance/ckptconform/data/flink-2.3.0-outcomes.json (CONFORMANCE.md's Flink columns)
# is what the two runs give. Needs Java 11+; the jars are fetched with pip into
# ~/.cache/ckptconform on first use. CKPTCONFORM_FLINK_REQUIRED=1 (CI) turns a missing Java
# into a failure instead of a skip. Extra arguments go to both suite runs.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
export CKPTCONFORM_FLINK=1 HYPOTHESIS_PROFILE=${HYPOTHESIS_PROFILE:-ci}
.venv/bin/python -m pytest -p no:cacheprovider -q tests/flink
# the suite runs in a scratch directory: BAD-5 and BAD-6 watch the working directory
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pids=()
# no Spark leg (--backend leaves it out); --spark-master=none is the reason the recorded
# outcomes (the outcomes JSON) give for the SPK clauses
for impl in flink flink-jobmanager; do
  mkdir -p "$work/$impl"
  (cd "$work/$impl" && exec "$repo/.venv/bin/pytest" -p no:cacheprovider -q --impl="$impl" \
    --backend=local --spark-master=none --conformance-report="$repo/conformance-report/$impl" \
    "$@" >"$work/$impl.log" 2>&1) &
  pids+=($!)
done
status=0
for i in 0 1; do
  impl=$([[ $i == 0 ]] && echo flink || echo flink-jobmanager)
  if wait "${pids[$i]}"; then rc=0; else rc=$?; fi
  echo "=== --impl=$impl (exit $rc)"
  cat "$work/$impl.log"
  [[ $rc == 0 ]] || status=$rc
done
[[ $status == 0 ]] || exit "$status"
.venv/bin/python scripts/flink_outcomes.py --check
