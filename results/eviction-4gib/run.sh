#!/bin/bash
# Issue 47 at the evaluation's sizes, after issue 45's defaults (read-only regions in 4 KiB pages) and the victim buffer
# for every page size: the eviction policies on the skewed random-access workloads, runs long enough to fill the
# 1 GiB buffer several times over, beside the kernel's mmap at 8 MiB and 128 KiB read-ahead; interleaved, medians of 3.
# usage: run.sh REPO BUILD OUT WORKLOAD...   (BUILD: a cmake build directory of REPO; PYTHON: a python with
# the [tune] extra; DATA_DIR: where the data is made once, /var/tmp/apdata by default)
set -uo pipefail
source "$(dirname "$0")/zipf_runs.sh"
repo=$1 build=$2 out=$3; shift 3
cd "$repo"
mkdir -p "$out"
for w in "$@"; do
  zipf_run "$w" || continue
  AUTOPAGER_BIN="$build/workloads" AUTOPAGER_PRELOAD="$build/native/src/preload/libautopager_preload.so" \
    PYTHONNOUSERSITE=1 "${PYTHON:-python3}" -m experiments.bench_workloads --quiet-below 0.5 --workloads "$w" \
    --page-sizes= --kernel-read-ahead 128 --repeats 3 --timeout 200 --data-dir "${DATA_DIR:-/var/tmp/apdata}" \
    --set workload.size=$size --set workload.buffer_size=1GiB --set "workload.command='$command'" \
    --variant eviction=hotfifo --variant eviction=s3fifo --variant eviction=clock --out "$out/$w" > "$out/$w.log" 2>&1
done
