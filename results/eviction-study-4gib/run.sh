#!/bin/bash
# Issue 47's study with `eviction` in its space: a grid over the four policies (space=eviction, every other parameter
# at the defaults), 60-s runs at 4 GiB of data (LMDB 3 GiB) and a 1 GiB buffer in the pager's memory cgroup, zipf 0.99
# keys, the best confirmed against the defaults (fifo) in 3 interleaved rounds. Each study starts once the 1-minute
# load is below 0.5. usage: ./run.sh [WORKLOAD...] (lmdb_readrandom_zipf lookup_zipf). PYTHON_DIR: the package with
# its _native; AUTOPAGER_BIN, AUTOPAGER_PRELOAD: its build's workloads and preload; AUTOPAGER_CONFIG_DIR: its configs;
# PYTHON: a python with the [tune] extra; STUDIES: the study root; DATA_DIR: the data (made once if missing).
set -uo pipefail
source "$(dirname "$0")/../eviction-4gib/zipf_runs.sh"
export PYTHONNOUSERSITE=1 PYTHONPATH=${PYTHON_DIR:?the package checkout}
workloads=("$@"); [ $# -gt 0 ] || workloads=(lmdb_readrandom_zipf lookup_zipf)
for w in "${workloads[@]}"; do
  zipf_run "$w" || continue
  while awk '{exit !($1>=0.5)}' /proc/loadavg; do sleep 10; done
  echo "$w start $(date -u +%FT%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
  "${PYTHON:-python3}" -m autopager.cli.main tune data_dir="${DATA_DIR:-/var/tmp/apdata}" workload=$w \
    workload.size=$size "workload.command='$command'" workload.buffer_size=1GiB runner.memory_limit=auto \
    strategy=grid space=eviction confirm.candidates=1 study.root="${STUDIES:-/var/tmp/studies47}" \
    study.name=eviction-study > "${STUDIES:-/var/tmp/studies47}-$w.log" 2>&1
  rc=$?
  echo "$w end $(date -u +%FT%T) rc=$rc load $(cut -d' ' -f1-3 /proc/loadavg)"
done
