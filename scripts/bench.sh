#!/usr/bin/env bash
# Benchmarks: set up, then run `ckptconform bench` against the reference storage (local disk
# and moto's S3 server on 127.0.0.1): throughput against raw fsspec and the disk, the inline
# path, threads, peak RSS, S3 requests per checkpoint. Writes bench.json, bench.md, bench.png
# and readme-block.md (the README's performance table) into bench-report/. Extra arguments go
# to `ckptconform bench` (e.g. --quick, --suite; --peer flink: Apache Flink 2.3.0's Java
# FsCheckpointStreamFactory beside the reference in the same run, timed inside its JVM, needs
# Java 17 and a JDK; --readme README.md: put the table in the README's generated block).
# The README's figures: bash scripts/bench.sh --suite --peer flink --readme README.md
# The exit code is non-zero only for requests above the minimum or memory above its bound.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/ckptconform bench --impl=ckptstore --out bench-report "$@"
