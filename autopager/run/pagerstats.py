"""The pager's statistics as a program prints them at exit with ``UMAP_PRINT_STATS=1`` (native/src/pager.cpp):
one stderr line a pager, ``autopager stats: {"read_faults": ..., "bytes_read": ..., ...}``. A study keeps their
sum over the program's pagers in each trial's row, and learns from them whether the program uses the pager."""
from __future__ import annotations

import json
from typing import Any

PREFIX = "autopager stats: "
ENVIRONMENT = {"UMAP_PRINT_STATS": "1"}
# How the eviction policy's queues served (native/include/autopager/stats.hpp), summed over the pagers.
POLICY = ("policy_refaults", "policy_promotions", "policy_second_chances", "policy_demotions", "victim_hits")
COLUMNS = ("faults", "bytes_read", "bytes_written", "evictions", "fault_service_us",  # in the study table
           "pager_page_size", "pager_read_only_page_size", *POLICY, "resident_bytes")


def pager_stats(stderr: str) -> dict[str, float] | None:
    """The table's statistics (faults, bytes read and written, evictions, mean fault service time in
    microseconds, how the eviction policy's queues served) summed over the stats lines in ``stderr``, and the page size the pager that took the most
    faults used (a run without UMAP_PAGESIZE, the defaults', shows what the pager chose); None if it has none."""
    blocks = []
    for line in stderr.splitlines():
        if line.startswith(PREFIX):
            try:
                block = json.loads(line[len(PREFIX):])
            except ValueError:
                continue
            if isinstance(block, dict):
                blocks.append(block)
    if not blocks:
        return None

    def total(name: str) -> float:
        return sum(float(block.get(name) or 0) for block in blocks)

    faults_of = [float(block.get("read_faults") or 0) + float(block.get("write_faults") or 0) for block in blocks]
    faults = sum(faults_of)
    service = sum(n * float(block.get("fault_service_mean_us") or 0) for n, block in zip(faults_of, blocks))
    busiest = max(range(len(blocks)), key=faults_of.__getitem__)
    page_size = blocks[busiest].get("page_size")
    read_only_page_size = blocks[busiest].get("read_only_page_size", page_size)
    return {"faults": faults, "bytes_read": total("bytes_read"), "bytes_written": total("bytes_written"),
            "evictions": total("evictions"), "fault_service_us": service / faults if faults else 0.0,
            "pager_page_size": int(page_size) if isinstance(page_size, (int, float)) and page_size > 0 else None,
            # read-only regions' (pagers before issue 45 had one page for every region)
            "pager_read_only_page_size": (int(read_only_page_size) if isinstance(read_only_page_size, (int, float))
                                          and read_only_page_size > 0 else None),
            **{name: total(name) for name in POLICY},
            # the most bytes of pages each pager held at once (a pager without the peak: those it held at exit)
            "resident_bytes": sum(float(block.get("peak_resident_bytes", block.get("resident_bytes")) or 0)
                                  for block in blocks)}


def without_stats(stderr: str) -> str:
    return "\n".join(line for line in stderr.splitlines() if not line.startswith(PREFIX))


def stats_line(stats: dict[str, Any]) -> str:
    """A stats line as the pager prints it (for programs that model the pager, like the synthetic workload)."""
    return PREFIX + json.dumps(stats)
