"""A synthetic workload with a known optimum, to try the tuner in seconds (``autopager tune workload=synthetic``).

It reads its paging parameters from the UMAP_* environment like any pager program, computes the time a
paging-bound program would take with them, sleeps for that long, and prints the time as its result line (and,
with UMAP_PRINT_STATS set, a pager statistics line on stderr as the pager prints it, its faults fewer for
larger pages).
The optimum is page_size 256KiB, fillers 4, evictors 2, evict_high_water 80, evict_low_water 50,
read_ahead 4; each parameter away from it costs a known factor, and a buffer (UMAP_BUFSIZE pages of UMAP_PAGESIZE) smaller than its
DATA bytes costs BUFFER_COST a halving: time against memory has a known front. The eviction policy (UMAP_EVICTION, a
categorical parameter) scales the time by EVICTION's factor: fifo, the default, 1; s3fifo the best. With ``--mmap`` it stands for the same program
on the kernel's mmap, which takes a fixed MMAP_SLOWDOWN times the optimum. Stand-alone: run as a script.
"""
import argparse
import json
import math
import os
import sys
import time

OPTIMUM = {"page_size": 256 << 10, "fillers": 4, "evictors": 2, "evict_high_water": 80, "evict_low_water": 50,
           "read_ahead": 4}
EVICTION = {"fifo": 1.0, "clock": 0.95, "hotfifo": 0.9, "s3fifo": 0.8}
MMAP_SLOWDOWN = 2.0
DATA = 64 << 20   # the bytes it stands for reading through the pager
BUFFER_COST = 0.5
CORES = os.cpu_count() or 1
DEFAULTS = {"UMAP_PAGESIZE": os.sysconf("SC_PAGE_SIZE"), "UMAP_PAGE_FILLERS": 2 * CORES,
            "UMAP_PAGE_EVICTORS": max(1, CORES // 2), "UMAP_EVICT_HIGH_WATER_THRESHOLD": 90,
            "UMAP_EVICT_LOW_WATER_THRESHOLD": 70, "UMAP_READ_AHEAD": 2}


def setting(name: str) -> int:
    return int(os.environ.get(name, DEFAULTS[name]))


def cost(page_size: int, fillers: int, evictors: int, high: int, low: int, read_ahead: int) -> float:
    """The slowdown over the optimum (1.0 there): a product of one factor a parameter."""
    factors = (
        1 + 0.15 * (math.log2(page_size) - math.log2(OPTIMUM["page_size"])) ** 2,
        1 + 0.3 * abs(math.log2(fillers) - math.log2(OPTIMUM["fillers"])),
        1 + 0.15 * abs(math.log2(evictors) - math.log2(OPTIMUM["evictors"])),
        1 + ((high - OPTIMUM["evict_high_water"]) / 30) ** 2,
        1 + ((low - OPTIMUM["evict_low_water"]) / 40) ** 2,
        1 + 0.2 * abs(read_ahead - OPTIMUM["read_ahead"]) / OPTIMUM["read_ahead"],
    )
    return math.prod(factors)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=float, default=4, help="milliseconds at the optimum")
    parser.add_argument("--mmap", action="store_true", help="the kernel's mmap: MMAP_SLOWDOWN times the optimum")
    args = parser.parse_args()
    high, low = setting("UMAP_EVICT_HIGH_WATER_THRESHOLD"), setting("UMAP_EVICT_LOW_WATER_THRESHOLD")
    if not 0 <= low < high <= 100:
        print(f"synthetic: UMAP_EVICT_LOW_WATER_THRESHOLD ({low}) must be below "
              f"UMAP_EVICT_HIGH_WATER_THRESHOLD ({high})", file=sys.stderr)
        return 1
    slowdown = MMAP_SLOWDOWN if args.mmap else cost(setting("UMAP_PAGESIZE"), setting("UMAP_PAGE_FILLERS"),
                                                    setting("UMAP_PAGE_EVICTORS"), high, low, setting("UMAP_READ_AHEAD"))
    eviction = os.environ.get("UMAP_EVICTION", "fifo")
    if eviction not in EVICTION:
        print(f"synthetic: UMAP_EVICTION={eviction!r} is not one of {', '.join(EVICTION)}", file=sys.stderr)
        return 1
    buffer = int(os.environ.get("UMAP_BUFSIZE", DATA // setting("UMAP_PAGESIZE"))) * setting("UMAP_PAGESIZE")
    if not args.mmap:
        slowdown *= EVICTION[eviction] * (1 + BUFFER_COST * max(0.0, math.log2(DATA / buffer)))
    seconds = args.size / 1000 * slowdown
    start = time.perf_counter()
    time.sleep(seconds)
    if os.environ.get("UMAP_PRINT_STATS", "0") not in ("", "0"):
        faults = DATA // setting("UMAP_PAGESIZE")
        print("autopager stats: " + json.dumps({"page_size": setting("UMAP_PAGESIZE"), "read_faults": faults, "write_faults": 0, "bytes_read": DATA,
                                                "peak_resident_bytes": min(buffer, DATA),
                                                "bytes_written": 0, "evictions": 0,
                                                "fault_service_mean_us": seconds * 1e6 / faults}), file=sys.stderr)
    print(json.dumps({"metric": "seconds", "value": seconds, "goal": "minimize",
                      "stats": {"slept": time.perf_counter() - start, "slowdown": slowdown}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
