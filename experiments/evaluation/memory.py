"""The memory every run of the evaluation gets: a memory cgroup limited to the pager's buffer plus what any
process of the workload uses beside its data.

Without it a pager run would cache the file it reads (the pager reads through the page cache) in all the
machine's free memory, and be out of core in name only; the kernel's mmap would likewise keep the whole
file cached. In the cgroup, both are limited to the same memory: the buffer, the program's own arrays
(bfs's levels) and a headroom for its code, libraries, thread stacks and heap.
"""
from __future__ import annotations

import sys
from pathlib import Path

from bench_workloads import private_memory
from autopager.workloads import Workload
from evaluation.plan import Size

HEADROOM = 12 << 20  # bfs alone peaks at ~10 MiB on tiny data
CGROUP_NAME = "autopager-evaluation"  # fixed, so that a resumed study has the same command
LAUNCHER = Path(__file__).resolve().parent / "incgroup.py"


def memory_limit(workload: Workload, size: Size) -> int:
    return size.buffer_bytes + private_memory(workload) + HEADROOM


def in_cgroup(command: str, cgroup: Path) -> str:
    """The workload's command template, started inside ``cgroup``."""
    return f"{sys.executable} -S {LAUNCHER} {cgroup} {command}"
