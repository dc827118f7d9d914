"""experiments/bench_heap.py at a toy size: the same unmodified numpy program under `exec heap=` and on the kernel
swapping to the benchmark's own swap file in the same memory cgroup, with the same checksum; the swap file set up
and removed by the benchmark."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from autopager.run.memory_limit import MemoryLimit, MemoryLimitError
from experiments import bench_heap
from tests.helpers import REPO


def test_the_heap_and_the_kernels_swap_give_the_same_checksum_and_the_swap_file_goes(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("bench_heap needs root (swapon, memory cgroups)")
    try:
        MemoryLimit(64 << 20, swap=True).__enter__().__exit__(None, None, None)
    except MemoryLimitError as error:
        pytest.skip(str(error))
    if bench_heap.swaps_on():
        pytest.skip(f"other swap is on ({bench_heap.swaps_on()}): the benchmark refuses to run beside it")
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "experiments.bench_heap", "--dir", str(tmp_path), "--size", "256MiB",
                           "--limit", "64MiB", "--array-mib", "32", "--updates", "20000", "--rounds", "1", "--out",
                           str(out)], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [record_file] = out.glob("bench_heap_*.json")
    record = json.loads(record_file.read_text())
    [heap_run] = record["runs"][bench_heap.DEFAULTS]
    [kernel_run] = record["runs"][bench_heap.KERNEL]
    assert heap_run["checksum"] == kernel_run["checksum"] == record["checksum"]
    assert heap_run["served"] >= 8, heap_run  # every array of 32 MiB (and numpy's own large temporaries)
    assert kernel_run["swapped_written"] > 0, "the kernel's run swapped, to the benchmark's file (no other swap is on)"
    assert not bench_heap.swaps_on(), "the swap file is off"
    assert not list(Path(tmp_path).glob("*.swap")), "and removed"
