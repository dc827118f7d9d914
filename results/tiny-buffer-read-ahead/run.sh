#!/bin/bash
# Sort of 64 MiB through buffers of 8 and 16 pages of 2 MiB: the build before the change (main) against the change
# (tinybuf), huge pages on and off, interleaved, 3 rounds; the sort's own seconds and bytes read.
# usage: MAIN_BUILD=... NEW_BUILD=... ./run.sh   (cmake build directories; run as root, alone)
cd "${WORK:-/var/tmp/tiny}"; mkdir -p data
"$MAIN_BUILD"/workloads/sort --size-mib 64 --data-dir data --generate > /dev/null
while awk -v l=$(cut -d" " -f1 /proc/loadavg) "BEGIN{exit !(l >= 0.5)}"; do sleep 10; done
echo "start load $(cut -d' ' -f1-3 /proc/loadavg) $(date -u +%FT%TZ)"
echo 40 > /proc/sys/vm/nr_hugepages
for r in 1 2 3; do
  for buf in 8 16; do
  for b in main:${MAIN_BUILD:?the build of deff515} tinybuf:${NEW_BUILD:?the build of this change}; do
    for hp in on off; do
      name=${b%%:*}; dir=${b#*:}
      UMAP_PAGESIZE=2097152 UMAP_BUFSIZE=$buf UMAP_HUGE_PAGES=$hp UMAP_PAGE_FILLERS=4 UMAP_DIRECT_IO=1 \
        timeout 60 $dir/workloads/sort --size-mib 64 --threads 2 --data-dir data 2>/dev/null | python3 -c "
import json,sys
for l in sys.stdin:
    if l.startswith('{'):
        d=json.loads(l); s=d['stats']; print('$r buffer=$buf $name huge_pages=$hp', round(d['value'],2), 's', round(s['bytes_read']/1e9,2), 'GB read')
"
    done
  done
  done
done
echo 0 > /proc/sys/vm/nr_hugepages
echo "end load $(cut -d' ' -f1-3 /proc/loadavg) $(date -u +%FT%TZ)"
