"""A test workload whose runs drift as a noisy machine's do: its result is 1.0 for the defaults (no UMAP_PAGESIZE)
and 0.8 for any page size given, times the factor of this run in FACTORS (the runs counted in COUNTER, the Nth
run taking the Nth factor; 1 past the list). With --data, its pager statistics read ten times that file."""
import argparse
import json
import os
import sys

parser = argparse.ArgumentParser()
parser.add_argument("counter")
parser.add_argument("factors")
parser.add_argument("--data")
args = parser.parse_args()
run = int(open(args.counter).read()) if os.path.exists(args.counter) else 0
with open(args.counter, "w") as counter:
    counter.write(str(run + 1))
factors = [float(f) for f in args.factors.split(":")]
if os.environ.get("UMAP_PRINT_STATS"):  # as a program on the pager would
    read = 10 * os.path.getsize(args.data) if args.data else 40960
    print(json.dumps({"read_faults": 10, "write_faults": 0, "bytes_read": read}).join(["autopager stats: ", ""]),
          file=sys.stderr)
cost = 1.0 if "UMAP_PAGESIZE" not in os.environ else 0.8
print(json.dumps({"metric": "seconds", "value": cost * (factors[run] if run < len(factors) else 1.0)}))
