#!/bin/bash
# Issue 45 at the evaluation's sizes: the nine workloads at the pager's defaults, the build before the change (old)
# against the change (new), beside the kernel's mmap at the disk's 8 MiB read-ahead and at 128 KiB, in the same
# memory cgroups, interleaved, medians of 3. Each workload starts once the 1-minute load is below 0.5.
# usage: run.sh REPO OUT [WORKLOAD...]; PYTHON, OLD and NEW (the two builds' workloads directories) may be given;
# COMPARE replaces the two builds by other pager variants of AUTOPAGER_BIN's build (e.g. "--variant fillers=1").
set -uo pipefail
python=${PYTHON:-/work/venv/bin/python} old=${OLD:-/var/tmp/bench/old/workloads} new=${NEW:-/var/tmp/bench/new/workloads}
read -ra compare <<< "${COMPARE:---build old=$old --build new=$new}"
repo=$1 out=$2; shift 2
cd "$repo"
bench() {  # name, then bench_workloads arguments
  local name=$1; shift
  PYTHONNOUSERSITE=1 "$python" -m experiments.bench_workloads --quiet-below 0.5 --page-sizes= --kernel-read-ahead 128 \
    --repeats 3 --timeout 400 --data-dir /var/tmp/apdata "${compare[@]}" --out "$out/$name" "$@" > "$out/$name.log" 2>&1
}
mkdir -p "$out"
large=(--set workload.buffer_size=1GiB)
for w in "$@"; do
  case $w in
    sort) bench sort --workloads sort --set workload.size=4096 "${large[@]}" ;;
    stream) bench stream --workloads stream --set workload.size=4096 "${large[@]}" ;;
    bfs) bench bfs --workloads bfs --set workload.size=24 "${large[@]}" \
           --set "workload.command='{bin}/bfs --scale {size} --data-dir {data_dir} --threads {threads} --searches 3'" ;;
    bfs_memory) bench bfs_memory --workloads bfs --set workload.size=24 --set workload.buffer_size=8GiB \
           --set "workload.command='{bin}/bfs --scale {size} --data-dir {data_dir} --threads {threads} --searches 4'" ;;
    lookup) bench lookup --workloads lookup --set workload.size=4096 "${large[@]}" \
           --set "workload.command='{bin}/lookup --benchmark binsearch --size-mib {size} --seconds 10 --data-dir {data_dir} --threads {threads}'" ;;
    numpy_gather) bench numpy_gather --workloads numpy_gather --set workload.size=4096 "${large[@]}" \
           --set "workload.command='{python} {bin}/numpy_gather.py --size-mib {size} --seconds 10 --batch 256 --data-dir {data_dir} --threads {threads}'" ;;
    lmdb_readseq) bench lmdb_readseq --workloads lmdb_readseq --set workload.size=3072 "${large[@]}" \
           --set "workload.command='{bin}/lmdb --benchmark readseq --size-mib {size} --passes 7 --data-dir {data_dir} --threads {threads}'" ;;
    lmdb_readrandom) bench lmdb_readrandom --workloads lmdb_readrandom --set workload.size=3072 "${large[@]}" \
           --set "workload.command='{bin}/lmdb --benchmark readrandom --size-mib {size} --seconds 10 --data-dir {data_dir} --threads {threads}'" ;;
    lmdb_readreverse) bench lmdb_readreverse --workloads lmdb_readreverse --set workload.size=3072 "${large[@]}" \
           --set "workload.command='{bin}/lmdb --benchmark readreverse --size-mib {size} --passes 7 --data-dir {data_dir} --threads {threads}'" ;;
    *) echo "unknown workload $w" >&2 ;;
  esac
done
