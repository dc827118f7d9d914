#!/usr/bin/env bash
# sort and stream at 4 GiB, 1 GiB buffer, defaults (1 MiB pages): a173144 (before) against main 0bef5a6, interleaved, order turned each round.
set -u
D=/var/tmp/apdata
while awk '{exit !($1 >= 0.5)}' /proc/loadavg; do sleep 10; done
for w in sort stream; do
  for r in 1 2 3; do
    order="before after"; [ $((r % 2)) = 0 ] && order="after before"
    for v in $order; do
      bin=/var/tmp/before/workloads; [ $v = after ] && bin=/work/main/build/workloads
      sync; echo 3 > /proc/sys/vm/drop_caches
      load=$(cut -d' ' -f1 /proc/loadavg)
      s=$(date +%s.%N)
      out=$(env UMAP_BUFSIZE=262144 $bin/$w --size-mib 4096 --data-dir $D --threads 2 2>/dev/null | tail -1)
      echo "$w $v round $r load $load wall $(echo "$(date +%s.%N) - $s" | bc): $out"
    done
  done
done
