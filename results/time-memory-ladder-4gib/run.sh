#!/bin/bash
# The studies as run: ./run.sh [WORKLOAD...] (sort bfs lookup), each started once the 1-minute load is below 0.5.
# PYTHON_DIR: the package's checkout; AUTOPAGER_BIN, AUTOPAGER_PRELOAD: its native build's workloads and preload;
# STUDIES: the study root. The first studies ran with the defaults below (the build frozen in /var/tmp/bench/f);
# defaults-rungs/ ran `PYTHON_DIR=/var/tmp/bench/h AUTOPAGER_BIN=/var/tmp/dev/workloads
# AUTOPAGER_PRELOAD=/var/tmp/dev/native/src/preload/libautopager_preload.so STUDIES=/var/tmp/studies50c
# ./run.sh lookup bfs sort`. BUFFER_MAX (4GiB), MEMORY_LIMIT (6GiB) and LADDER (5 rungs) set the buffer's range, the
# runs' memory cgroup and the rungs; PYTHON the interpreter with the package's extras (Ax).
F=/var/tmp/bench/f
PYTHON_DIR=${PYTHON_DIR:-$F/python}
cd "$PYTHON_DIR"
export AUTOPAGER_BIN=${AUTOPAGER_BIN:-$F/workloads} AUTOPAGER_PRELOAD=${AUTOPAGER_PRELOAD:-$F/libautopager_preload.so}
export PYTHONNOUSERSITE=1 PYTHONPATH=$PYTHON_DIR
workloads=("$@"); [ $# -gt 0 ] || workloads=(sort bfs lookup)
for w in "${workloads[@]}"; do
  while awk '{exit !($1>=0.5)}' /proc/loadavg; do sleep 10; done
  echo "$w start $(date -u +%FT%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
  case $w in
    sort) extra=(workload.size=4096) ;;
    bfs) extra=(workload.size=24 "workload.command='{bin}/bfs --scale {size} --data-dir {data_dir} --threads {threads} --searches 3'") ;;
    lookup) extra=(workload.size=4096 "workload.command='{bin}/lookup --benchmark binsearch --size-mib {size} --seconds 10 --data-dir {data_dir} --threads {threads}'") ;;
    lookup_zipf) extra=(workload.size=4096 "workload.command='{bin}/lookup --benchmark binsearch --size-mib {size} --seconds 10 --keys zipf --zipf-exponent 0.99 --data-dir {data_dir} --threads {threads}'") ;;
  esac
  ${PYTHON:-/var/tmp/venv/bin/python} -m autopager.cli.main tune hydra.searchpath=[file://$PYTHON_DIR/experiments/configs] space=evaluation \
    data_dir=/var/tmp/apdata workload=$w "${extra[@]}" workload.buffer_size=1GiB objective=metric_and_memory \
    "space.buffer_size={min:256MiB,max:${BUFFER_MAX:-4GiB},factor:2}" runner.memory_limit=${MEMORY_LIMIT:-6GiB} \
    buffer_ladder=${LADDER:-5} strategy=ax budget.trials=15 \
    budget.plateau=0 study.root=${STUDIES:-/var/tmp/studies50b} study.name=time-memory-ladder > /var/tmp/tm-$w.log 2>&1
  rc=$?
  echo "$w end $(date -u +%FT%T) rc=$rc load $(cut -d' ' -f1-3 /proc/loadavg)"
done
