#!/bin/bash
# Issue 47's second bar at the evaluation's sizes: the scans (sort, stream, LMDB readseq and readreverse) and bfs
# out of core under each eviction policy, 4 GiB of data (LMDB 3 GiB of records, bfs scale 24) through a 1 GiB
# buffer at the pager's other defaults, beside the kernel's mmap at the disk's read-ahead (8 MiB); interleaved,
# medians of 3. Each workload starts once the 1-minute load is below 0.5.
# usage: run.sh REPO BUILD OUT WORKLOAD...   (BUILD: a cmake build directory of REPO; PYTHON: a python with
# the [tune] extra; DATA_DIR: where the data is made once, /var/tmp/apdata by default)
set -uo pipefail
repo=$1 build=$2 out=$3; shift 3
cd "$repo"
mkdir -p "$out"
for w in "$@"; do
  case $w in
    sort) config=sort size=4096 command='' ;;
    stream) config=stream size=4096 command='' ;;
    lmdb_readseq) config=lmdb_readseq size=3072
      command='{bin}/lmdb --benchmark readseq --size-mib {size} --passes 7 --data-dir {data_dir} --threads {threads}' ;;
    lmdb_readreverse) config=lmdb_readreverse size=3072
      command='{bin}/lmdb --benchmark readreverse --size-mib {size} --passes 7 --data-dir {data_dir} --threads {threads}' ;;
    bfs) config=bfs size=24
      command='{bin}/bfs --scale {size} --data-dir {data_dir} --threads {threads} --searches 3' ;;
    *) echo "unknown workload $w" >&2; continue ;;
  esac
  overrides=(--set workload.size=$size --set workload.buffer_size=1GiB)
  [ -n "$command" ] && overrides+=(--set "workload.command='$command'")
  AUTOPAGER_BIN="$build/workloads" AUTOPAGER_PRELOAD="$build/native/src/preload/libautopager_preload.so" \
    PYTHONNOUSERSITE=1 "${PYTHON:-python3}" -m experiments.bench_workloads --quiet-below 0.5 --workloads "$config" --page-sizes= \
    --repeats 3 --timeout 400 --data-dir "${DATA_DIR:-/var/tmp/apdata}" "${overrides[@]}" \
    --variant eviction=hotfifo --variant eviction=s3fifo --variant eviction=clock --out "$out/$w" > "$out/$w.log" 2>&1
done
