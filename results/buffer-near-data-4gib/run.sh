#!/bin/bash
# ./run.sh JOB...: workloads at a buffer about their data's size, main's native build against a change's (BUILDS, by
# default main and warm, as the marks were run), beside the kernel's mmap. B: where the Release builds were frozen
# (each its workloads directory, preload library and source tree); OUT: where the results go.
B=${B:-/var/tmp/bench}; out=${OUT:-/var/tmp/out/marks2}
cd $B/main/src
export AUTOPAGER_BIN=$B/main/workloads AUTOPAGER_PRELOAD=$B/main/libautopager_preload.so PYTHONNOUSERSITE=1
bench() { local name=$1; shift
  ${PYTHON:-/var/tmp/ci85venv/bin/python} -m experiments.bench_workloads --quiet-below 0.5 --page-sizes= \
    --kernel-read-ahead 128 --repeats 3 --timeout 400 --data-dir /var/tmp/apdata \
    ${BUILDS:---build main=$B/main/workloads --build warm=$B/warm/workloads} --out $out/$name "$@" > $out/$name.log 2>&1; }
lookup=(--set "workload.command='{bin}/lookup --benchmark binsearch --size-mib {size} --seconds 10 --data-dir {data_dir} --threads {threads}'")
gather=(--set "workload.command='{python} {bin}/numpy_gather.py --size-mib {size} --seconds 10 --batch 256 --data-dir {data_dir} --threads {threads}'")
bfs=(--set "workload.command='{bin}/bfs --scale {size} --data-dir {data_dir} --threads {threads} --searches 3'")
for job in "$@"; do case $job in
  lookup4g) bench lookup4g --workloads lookup --set workload.size=4096 --set workload.buffer_size=4GiB "${lookup[@]}" ;;
  lookup2g) bench lookup2g --workloads lookup --set workload.size=4096 --set workload.buffer_size=2GiB "${lookup[@]}" ;;
  gather4g) bench gather4g --workloads numpy_gather --set workload.size=4096 --set workload.buffer_size=4GiB "${gather[@]}" ;;
  bfs2g) bench bfs2g --workloads bfs --set workload.size=24 --set workload.buffer_size=2GiB "${bfs[@]}" ;;
  sort4g) bench sort4g --workloads sort --set workload.size=4096 --set workload.buffer_size=4GiB ;;
  stream4g) bench stream4g --workloads stream --set workload.size=4096 --set workload.buffer_size=4GiB ;;
esac; done
