"""The kernel-mmap baseline of a study (``baseline.mmap=true``): the same program on the kernel's mmap, with the
memory the pager has.

The workload's ``mmap_command`` runs (our workloads: their command with ``--mmap``) in a memory cgroup of the
pager's memory (autopager/run/memory_limit.py: the buffer and its pages' bookkeeping, ``workload.private_memory``,
``runner.memory_headroom`` and the page tables of the data),
so the kernel's page cache gets what the pager's buffer gets. The page cache is emptied before each run, and the
runs are repeated and bounded as a trial's. The study records it as a row of kind ``mmap`` with no parameters.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from autopager.run.memory_limit import check_memory_limits, pager_memory
from autopager.run.runner import Runner
from autopager.run.settings import RunnerSettings
from autopager.run.workloads import Workload

MMAP = "mmap"  # the row kind


def mmap_runner(workload: Workload, settings: Mapping[str, Any], repeats: int | None = None) -> Runner:
    """A runner of the workload's kernel-mmap mode in a memory cgroup of the pager's memory; fails early, with
    the fix, when the workload has no such mode or memory cgroups cannot be made here."""
    kernel = workload.kernel_mmap()
    limit = pager_memory(workload, settings.get("memory_headroom"))
    check_memory_limits(limit)
    runner = RunnerSettings.from_config({"runner": settings})
    return Runner(kernel, dataclasses.replace(runner, repeats=repeats or runner.repeats), memory_limit=limit)
