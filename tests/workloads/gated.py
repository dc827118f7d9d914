"""A test workload whose search trials (a page size given) wait until the file named by its argument exists: the
study stays running for as long as the test wants. Its result is 1.0, 0.5 with a page size."""
import json
import os
import sys
import time

searched = "UMAP_PAGESIZE" in os.environ
while searched and not os.path.exists(sys.argv[1]):
    time.sleep(0.05)
if os.environ.get("UMAP_PRINT_STATS"):  # as a program on the pager would
    print('autopager stats: {"read_faults": 10, "write_faults": 0, "bytes_read": 40960}', file=sys.stderr)
print(json.dumps({"metric": "seconds", "value": 0.5 if searched else 1.0}))
