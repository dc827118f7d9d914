"""Each variant's median, range and failed runs, with the pager's median bytes read and evictions a run, from
bench_workloads' runs.jsonl.

usage: python3 summary.py OUT/WORKLOAD/runs.jsonl
"""
import collections
import json
import statistics
import sys

runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    run = json.loads(line)
    runs[run["variant"]].append(run)
for variant, rows in runs.items():
    values = [r["value"] for r in rows if r["value"] is not None]
    failed = [r["error"] for r in rows if r["value"] is None]
    stats = [r["stats"] for r in rows if r["stats"]]
    text = f"{variant:18s} "
    if values:
        text += f"median {statistics.median(values):.4g} (range {min(values):.4g}-{max(values):.4g})"
    if stats:
        text += (f"  bytes read {statistics.median(s['bytes_read'] for s in stats) / 1e9:.2f} GB"
                 f"  evictions {statistics.median(s['evictions'] for s in stats):.0f}"
                 f"  victim hits {statistics.median(s['victim_hits'] for s in stats):.0f}")
    if failed:
        text += f"  failed {len(failed)}: {failed[0]}"
    print(text)
