#!/usr/bin/env bash
# The main job: set up, then run the conformance suite against the reference storage on the
# embedded backends (local, memory, moto's S3 server on 127.0.0.1) and print the clause report.
# Extra arguments go to `ckptconform` (e.g. --backend=local or --impl=mypkg).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/ckptconform --impl=ckptstore --report-dir conformance-report "$@"
