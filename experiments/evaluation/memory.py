"""The memory every run of the evaluation gets: a memory cgroup limited to the pager's buffer plus what any
process of the workload uses beside its data.

Without it a pager run would cache the file it reads (the pager reads through the page cache) in all the
machine's free memory, and be out of core in name only; the kernel's mmap would likewise keep the whole
file cached. In the cgroup, both are limited to the same memory: the buffer, the program's own arrays
(bfs's levels) and a headroom for its code, libraries, thread stacks and heap.
"""
from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Iterator

from bench_workloads import private_memory
from memlimit import MemoryLimit
from autopager.workloads import Workload
from evaluation.plan import Size

HEADROOM = 12 << 20  # bfs alone peaks at ~10 MiB on tiny data
LAUNCHER = Path(__file__).resolve().parent / "incgroup.py"
VARIABLE = "AUTOPAGER_EVALUATION_CGROUP"  # read by the launcher


def memory_limit(workload: Workload, size: Size) -> int:
    return size.buffer_bytes + private_memory(workload) + HEADROOM


def in_cgroup(command: str) -> str:
    """The workload's command template, started inside the cgroup of ``limited``."""
    return f"{sys.executable} -S {LAUNCHER} {command}"


@contextlib.contextmanager
def limited(limit_bytes: int) -> Iterator[MemoryLimit]:
    """A memory cgroup of this process's own (evaluations may run side by side) for the commands started
    through ``in_cgroup`` meanwhile."""
    with MemoryLimit(limit_bytes) as cgroup:
        os.environ[VARIABLE] = str(cgroup.path)
        try:
            yield cgroup
        finally:
            del os.environ[VARIABLE]
