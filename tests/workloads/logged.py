"""A test workload that appends the page size and fillers of each run to a log file (its argument), then
prints a result that is best at 128KiB pages and 2 fillers; with 128KiB pages and one filler it fails (exit
status 1), next to the best. The tests count the runs a study makes.
With UMAP_PRINT_STATS set it prints a pager statistics line, as a program on the pager does."""
import json
import math
import os
import sys

if os.environ.get("UMAP_PRINT_STATS"):
    print('autopager stats: {"read_faults": 10, "write_faults": 0, "bytes_read": 40960}', file=sys.stderr)

page_size = int(os.environ.get("UMAP_PAGESIZE", "4096"))
fillers = int(os.environ.get("UMAP_PAGE_FILLERS", "1"))
with open(sys.argv[1], "a") as log:
    log.write(f"{page_size} {fillers}\n")
if (page_size, fillers) == (128 << 10, 1):
    sys.exit(1)
print(json.dumps({"metric": "seconds", "value": 1 + abs(math.log2(page_size) - 17) + abs(fillers - 2) / 2}))
