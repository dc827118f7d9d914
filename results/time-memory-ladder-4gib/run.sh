#!/bin/bash
F=/var/tmp/bench/f
cd $F/python
export AUTOPAGER_BIN=$F/workloads AUTOPAGER_PRELOAD=$F/libautopager_preload.so PYTHONNOUSERSITE=1 PYTHONPATH=$F/python
for w in sort bfs lookup; do
  while awk '{exit !($1>=0.5)}' /proc/loadavg; do sleep 10; done
  echo "$w start $(date -u +%FT%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
  case $w in
    sort) extra=(workload.size=4096) ;;
    bfs) extra=(workload.size=24 "workload.command='{bin}/bfs --scale {size} --data-dir {data_dir} --threads {threads} --searches 3'") ;;
    lookup) extra=(workload.size=4096 "workload.command='{bin}/lookup --benchmark binsearch --size-mib {size} --seconds 10 --data-dir {data_dir} --threads {threads}'") ;;
  esac
  /var/tmp/venv/bin/python -m autopager.cli.main tune hydra.searchpath=[file://$F/python/experiments/configs] space=evaluation \
    data_dir=/var/tmp/apdata workload=$w "${extra[@]}" workload.buffer_size=1GiB objective=metric_and_memory \
    'space.buffer_size={min:256MiB,max:4GiB,factor:2}' runner.memory_limit=6GiB strategy=ax budget.trials=15 \
    budget.plateau=0 study.root=/var/tmp/studies50b study.name=time-memory-ladder > /var/tmp/tm-$w.log 2>&1
  echo "$w end $(date -u +%FT%T) rc=$? load $(cut -d' ' -f1-3 /proc/loadavg)"
done
