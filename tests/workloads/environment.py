"""A test workload that appends the UMAP_* variables it was given to a log file (its argument), one JSON line a
run, then prints a result that is best at 64KiB pages."""
import json
import math
import os
import sys

given = {name: value for name, value in os.environ.items() if name.startswith("UMAP_")}
with open(sys.argv[1], "a") as log:
    log.write(json.dumps(given) + "\n")
if given.get("UMAP_PRINT_STATS"):  # as a program on the pager would
    print('autopager stats: {"read_faults": 10, "write_faults": 0, "bytes_read": 40960}', file=sys.stderr)
page_size = int(given.get("UMAP_PAGESIZE", "4096"))
print(json.dumps({"metric": "seconds", "value": 1 + abs(math.log2(page_size) - 16)}))
