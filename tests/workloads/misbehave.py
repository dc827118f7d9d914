"""A test workload that misbehaves on purpose, chosen by the page size it is given (UMAP_PAGESIZE):

8KiB crashes (SIGABRT), 16KiB hangs, 32KiB prints garbage, 64KiB exits with status 3, 128KiB prints a
result whose value is not a number; any other page size prints a proper result, better for larger pages.

With UMAP_PRINT_STATS set it prints a pager statistics line, as a program on the pager does."""
import json
import math
import os
import sys
import time

page_size = int(os.environ.get("UMAP_PAGESIZE", "4096"))  # its pager's choice without one
if os.environ.get("UMAP_PRINT_STATS"):
    print("autopager stats: " + json.dumps({"page_size": page_size, "read_faults": 10, "write_faults": 0,
                                            "bytes_read": 40960}), file=sys.stderr)
kib = page_size >> 10
if kib == 8:
    print("about to crash", file=sys.stderr, flush=True)
    os.abort()
elif kib == 16:
    time.sleep(600)
elif kib == 32:
    print("hello, this is not a result")
elif kib == 64:
    print("bad input file", file=sys.stderr)
    sys.exit(3)
elif kib == 128:
    print(json.dumps({"metric": "seconds", "value": "fast"}))
else:
    print("some log line")
    print(json.dumps({"metric": "seconds", "value": 1 / math.log2(page_size), "goal": "minimize"}))
