#!/bin/bash
# An unmodified program's reads of a 4 GiB file it maps (probe.c: a sparse scan, a word a 4 KiB page, twice over; a
# dense scan, every word once; random 8-byte probes for 10 s) under `autopager exec` with no paging parameter and
# with read_ahead=4, beside the kernel's mmap at the disk's read-ahead and at 128 KiB. Every run in a memory cgroup
# of 1 GiB, the page cache dropped before it; the variants interleaved, ROUNDS rounds; waits for a 1-minute load
# under 0.5 first. usage: run.sh OUT [ROUNDS]; AUTOPAGER (the CLI), AUTOPAGER_PRELOAD, DATA (the file; made of random
# bytes where it is missing) may be given.
set -euo pipefail
out=$1 rounds=${2:-3}
data=${DATA:-/var/tmp/apdata/sort-4096m.u64}
autopager=${AUTOPAGER:-autopager}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
cc -O2 -o "$out/probe" "$here/probe.c"
if [ ! -f "$data" ]; then  # any 4 GiB will do: the figures are of the reads, not of what they read
  mkdir -p "$(dirname "$data")" && head -c 4G /dev/urandom > "$data"
fi
disk=$(basename "$(df --output=source "$data" | tail -1)")
ra_file=/sys/block/${disk%[0-9]}/queue/read_ahead_kb
[ -f "$ra_file" ] || ra_file=/sys/block/$disk/queue/read_ahead_kb
ra_before=$(cat "$ra_file")
cgroup=/sys/fs/cgroup/memory$(grep -E '^[0-9]+:memory:' /proc/self/cgroup | cut -d: -f3)/user-program-scan
mkdir -p "$cgroup" && echo $((1 << 30)) > "$cgroup/memory.limit_in_bytes"
trap 'echo "$ra_before" > "$ra_file"; rmdir "$cgroup" 2>/dev/null || true' EXIT
while (( $(awk '{print ($1 < 0.5)}' /proc/loadavg) == 0 )); do sleep 10; done
echo "$(date -u +%FT%TZ) start at load $(cut -d' ' -f1 /proc/loadavg), read_ahead_kb $ra_before" | tee "$out/loads.txt"
one() {  # read_ahead_kb, then the command
  local ra=$1; shift
  echo "$ra" > "$ra_file"; sync; echo 3 > /proc/sys/vm/drop_caches
  (echo $BASHPID > "$cgroup/tasks"; exec "$@") 2>&1 | grep -v '^autopager' | tail -1
}
for round in $(seq "$rounds"); do
  for mode in scan seqall "random 10"; do
    echo "$round kernel-${ra_before}KiB $(one "$ra_before" "$out/probe" "$data" $mode)"
    echo "$round kernel-128KiB $(one 128 "$out/probe" "$data" $mode)"
    echo "$round pager-defaults $(one "$ra_before" "$autopager" exec -- "$out/probe" "$data" $mode)"
    echo "$round pager-read_ahead=4 $(one "$ra_before" "$autopager" exec read_ahead=4 -- "$out/probe" "$data" $mode)"
  done
done | tee "$out/runs.txt"
