#!/bin/bash
# A/B of stream at small page sizes: old build against new, interleaved, cache dropped before each run.
# usage: ab_stream.sh NEW_BIN ROUNDS PAGESIZES...
new=$1; rounds=$2; shift 2
echo "load at start: $(cat /proc/loadavg)"
for r in $(seq $rounds); do
  for ps in "$@"; do
    for which in old new; do
      bin=/var/tmp/stream-old; [ $which = new ] && bin=$new
      sync; echo 3 > /proc/sys/vm/drop_caches
      out=$(UMAP_PAGESIZE=$ps UMAP_BUFSIZE=$((1073741824/ps)) $bin --size-mib 4096 --iterations 1 --data-dir /var/tmp/apdata --threads 2 2>&1 | grep -i "GB/s" | tail -1)
      echo "round $r page $ps $which: $out"
    done
  done
done
