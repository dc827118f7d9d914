"""A policy's median rate, bytes read an operation and queue statistics, from bench_workloads' runs.jsonl.

usage: python3 summary.py OUT/WORKLOAD/runs.jsonl   (the runs last 60 s: bytes an operation = bytes_read / (rate x 60))
"""
import collections
import json
import statistics
import sys

runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    run = json.loads(line)
    stats = run["stats"]
    runs[run["variant"]].append((run["value"], stats.get("bytes_read", 0) / max(run["value"] * 60, 1),
                                 stats.get("evictions"), stats.get("victim_hits"), stats.get("policy_refaults")))
for variant, rows in runs.items():
    rate = statistics.median(row[0] for row in rows)
    per_op = statistics.median(row[1] for row in rows)
    each = "; ".join(f"{r[0]:.0f} evictions={r[2]} victim_hits={r[3]} refaults={r[4]}" for r in rows)
    print(f"{variant:18s} {rate:10.1f}/s  {per_op:8.0f} bytes an op  ({each})")
