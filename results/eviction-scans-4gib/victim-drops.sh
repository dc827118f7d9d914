#!/bin/bash
# hotfifo on LMDB readseq (3 GiB of records, one pass, a 1 GiB buffer, no memory limit), two builds interleaved:
# each line is round, build, ops/s, read faults, peak resident bytes, evictions.
# usage: victim-drops.sh BEFORE_BUILD AFTER_BUILD ROUNDS   (cmake build directories; DATA_DIR as in run.sh)
before=$1 after=$2 rounds=$3
for r in $(seq "$rounds"); do
  for b in before after; do
    d=${!b}
    sync; echo 3 > /proc/sys/vm/drop_caches
    out=$(env UMAP_BUFSIZE=262144 UMAP_EVICTION=hotfifo LD_PRELOAD="$d/native/src/preload/libautopager_preload.so" \
      "$d/workloads/lmdb" --benchmark readseq --size-mib 3072 --passes 1 --data-dir "${DATA_DIR:-/var/tmp/apdata}" \
      --threads 2 2>/dev/null | tail -1)
    echo "$r $b $(echo "$out" | python3 -c 'import json, sys; d = json.load(sys.stdin); s = d["stats"]
print(round(d["value"]), s["read_faults"], s["peak_resident_bytes"], s["evictions"])')"
  done
done
