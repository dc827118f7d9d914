#!/usr/bin/env python3
"""numpy_heap: a numpy program whose arrays are its own heap (no file): xmap's heap-extension workload.

It allocates --size-mib MiB of int64 arrays of --array-mib MiB each (malloc's mmap'd blocks), fills them,
makes --updates random updates (a[i] += k in batches, one array after another in turn), then reduces every
array (a.sum()). Run bare, the kernel holds the arrays (and swaps them, under a memory limit, where it has
swap); under ``autopager exec heap=DIR`` the pager does, from scratch files in DIR. The result is the same
either way: the checksum (the exact sum of every element) is printed and checked against the one computed
from the updates alone. Metric: seconds for the whole run. The last line of stdout is the result as JSON.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

SEED = 0x4EA9
BATCH = 1 << 16


def run(args: argparse.Namespace) -> int:
    elements = (args.array_mib << 20) // 8
    count = max(1, args.size_mib // args.array_mib)
    start = time.perf_counter()
    arrays = []
    for n in range(count):
        array = np.empty(elements, dtype=np.int64)
        array[:] = n  # every page written: the heap is as large as asked
        arrays.append(array)
    expected = elements * count * (count - 1) // 2
    rng = np.random.default_rng(SEED)
    done = 0
    while done < args.updates:
        batch = min(BATCH, args.updates - done)
        array = arrays[(done // BATCH) % count]
        at = rng.integers(0, elements, batch)
        np.add.at(array, at, 3)  # repeated indices each count
        expected += 3 * batch
        done += batch
    total = sum(int(array.sum()) for array in arrays)
    seconds = time.perf_counter() - start
    check = "ok" if total == expected else f"sum {total}, expected {expected}"
    print(json.dumps({"metric": "seconds", "value": seconds, "goal": "minimize", "workload": "numpy_heap",
                      "size_mib": count * args.array_mib, "updates": args.updates, "checksum": total,
                      "check": check}), flush=True)
    if check != "ok":
        print(f"numpy_heap: check failed: {check}", file=sys.stderr)
        return 1
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, required=True, help="MiB of arrays in all")
    parser.add_argument("--array-mib", type=int, default=64, help="MiB of each array")
    parser.add_argument("--updates", type=int, default=1 << 20, help="random updates over the arrays")
    args = parser.parse_args()
    if args.size_mib <= 0 or args.array_mib <= 0 or args.updates < 0:
        parser.error("--size-mib and --array-mib must be positive, --updates not negative")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
