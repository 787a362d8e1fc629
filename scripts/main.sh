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
# processes (default 2), a test module to each (one Spark cluster, for test_spk.py).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/ckptconform --impl=ckptstore --backend=local,memory,moto,sftp,minio,s3rver,spark \
  --require-legs=moto,sftp --report-dir conformance-report \
  -n "${PYTEST_WORKERS:-2}" --dist loadfile "$@"
