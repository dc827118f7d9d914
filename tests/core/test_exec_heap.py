"""`autopager exec heap=DIR`: a program's large anonymous mappings served by the pager from scratch files.

Every program here prints checksums of the bytes it reads; run under the preload with the heap on, it must
print the same as run without it, and the preload's summary must show its anonymous mappings served (or,
with no room in the heap's directory, left to the kernel). The C program is native/tests/heap_program.c,
built by CMake (build/native/tests, or $AUTOPAGER_HEAP_PROGRAM).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autopager.errors import ConfigError
from autopager.exec import parse, preload_library
from autopager.run.memory_limit import MemoryLimit, MemoryLimitError
from autopager.run.workloads import Workload
from tests.pager_support import small_tmpfs
from tests.core.test_exec import built, environment  # noqa: F401 (built: the preload library's fixture)
from tests.helpers import REPO

HEAP_PROGRAM = Path(os.environ.get("AUTOPAGER_HEAP_PROGRAM") or REPO / "build" / "native" / "tests" / "heap_program")
# Small pages and a buffer smaller than each block: the blocks' pages are evicted and read back.
SETTINGS = ["page_size=64KiB", "buffer_size=8MiB", "fillers=2", "evictors=1", "heap_min=16MiB", "print_stats=1"]


@pytest.fixture(scope="module", autouse=True)
def heap_program_built(built):
    if not HEAP_PROGRAM.exists():
        pytest.fail(f"{HEAP_PROGRAM} is missing: cmake --build build --target heap_program")


def run(argv, heap: Path | None, settings=SETTINGS, preexec_fn=None) -> subprocess.CompletedProcess:
    """`argv` as is, or under `autopager exec heap=HEAP`; it must succeed."""
    if heap is not None:
        argv = [sys.executable, "-m", "autopager.cli.main", "exec", f"heap={heap}", *settings, "--", *map(str, argv)]
    proc = subprocess.run(list(map(str, argv)), env=environment(), capture_output=True, text=True, timeout=300,
                          preexec_fn=preexec_fn)
    assert proc.returncode == 0, f"{argv} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc


def heap_summary(stderr: str) -> tuple[int, int]:
    """(anonymous mappings served, left to the kernel for want of room) from the preload's line at exit."""
    match = re.search(r"autopager preload: served (\d+) anonymous mappings from .*, left (\d+) to the kernel", stderr)
    assert match, f"no heap summary in:\n{stderr}"
    return int(match.group(1)), int(match.group(2))


def test_the_heap_program_reads_the_same_bytes_with_its_heap_on_the_pager(tmp_path):
    kernel = run([HEAP_PROGRAM, "steps", 24], heap=None)
    served = run([HEAP_PROGRAM, "steps", 24], heap=tmp_path)
    assert served.stdout.splitlines() == kernel.stdout.splitlines(), served.stderr
    assert [line.split()[0] for line in served.stdout.splitlines()] == [
        "malloc", "fork-child-reads", "fork-parent-after-child-wrote", "calloc", "realloc-kept", "realloc-grown",
        "madvise-dontneed", "mprotect-read-only", "munmap-part-below", "munmap-part-above", "mremap-grown", "munmap-whole"]
    # malloc's block (handed to the kernel at fork), calloc's, realloc's new one, the three mmaps (the first
    # handed to the kernel at madvise, the second at mremap)
    assert heap_summary(served.stderr) == (6, 0), served.stderr
    assert re.search(r"handed 3 to the kernel", served.stderr), served.stderr
    assert not list(tmp_path.iterdir()), "the scratch files are unlinked"


def test_no_room_in_the_heap_directory_leaves_the_mappings_to_the_kernel(tmp_path):
    kernel = run([HEAP_PROGRAM, "steps", 24], heap=None)
    with small_tmpfs(tmp_path / "small", 8 << 20) as fs:
        served = run([HEAP_PROGRAM, "steps", 24], heap=fs.directory)
    assert served.stdout == kernel.stdout
    assert "has no room for" in served.stderr
    assert heap_summary(served.stderr) == (0, 6), served.stderr


def test_a_heap_four_times_the_memory_cgroup_finishes_with_the_same_bytes(tmp_path):
    kernel = run([HEAP_PROGRAM, "big", 256], heap=None)
    try:
        limit = MemoryLimit(64 << 20).__enter__()
    except MemoryLimitError as error:
        pytest.skip(str(error))
    try:
        # At the defaults: the buffer from the cgroup's limit, the pager's own page size.
        served = run([HEAP_PROGRAM, "big", 256], heap=tmp_path, settings=["print_stats=1"], preexec_fn=limit.enter)
        peak = limit.peak_bytes()
    finally:
        limit.__exit__(None, None, None)
    assert served.stdout == kernel.stdout, served.stderr
    assert heap_summary(served.stderr) == (1, 0), served.stderr
    assert peak is None or peak <= 64 << 20


NUMPY_SCRIPT = textwrap.dedent("""
    import numpy as np
    rng = np.random.default_rng(5)
    arrays = [np.zeros(4 << 20, dtype=np.float64) for _ in range(3)]   # 32 MiB each: malloc's mmap'd blocks
    for a in arrays:
        at = rng.integers(0, a.size, 20000)
        np.add.at(a, at, rng.random(at.size))
    grown = np.concatenate(arrays)
    print("sums", [float(a.sum()) for a in arrays], float(grown.sum()), float(grown[::4097].sum()))
""")


def test_a_numpy_program_computes_the_same_with_its_arrays_on_the_pager(tmp_path):
    argv = [sys.executable, "-c", NUMPY_SCRIPT]
    kernel = run(argv, heap=None)
    served = run(argv, heap=tmp_path)
    assert served.stdout == kernel.stdout, served.stderr
    assert heap_summary(served.stderr)[0] >= 4, served.stderr


def test_exec_heap_settings_become_the_preloads_variables(tmp_path):
    env, _ = parse([f"heap={tmp_path}", "heap_min=4MiB", "--", "prog"])
    assert env == {"UMAP_PRELOAD_HEAP": str(tmp_path.resolve()), "UMAP_PRELOAD_HEAP_MIN": str(4 << 20)}
    for bad in ([f"heap={tmp_path / 'missing'}"], ["heap="], ["heap_min=0"], ["heap_min=lots"]):
        with pytest.raises(ConfigError, match="heap"):
            parse([*bad, "--", "prog"])


def test_a_bad_heap_min_variable_leaves_everything_to_the_kernel_and_says_so(tmp_path):
    env = {**environment(), "LD_PRELOAD": str(preload_library()), "UMAP_PRELOAD_HEAP": str(tmp_path),
           "UMAP_PRELOAD_HEAP_MIN": "big"}
    proc = subprocess.run([str(HEAP_PROGRAM), "big", "32"], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "UMAP_PRELOAD_HEAP_MIN must be a number of bytes, not 'big'" in proc.stderr


def test_a_heap_workload_runs_under_the_preload_with_its_heap(tmp_path):
    config = {"name": "numpy_heap", "command": "{python} {bin}/numpy_heap.py --size-mib 64 --array-mib 32 "
              "--updates 20000", "heap": str(tmp_path), "mmap_command": "{python} {bin}/numpy_heap.py --size-mib 64 "
              "--array-mib 32 --updates 20000"}
    workload = Workload.from_config(config, str(tmp_path / "data"))
    workload.check()
    argv = workload.argv()
    assert f"UMAP_PRELOAD_HEAP={tmp_path.resolve()}" in argv and argv[0] == "env"
    assert not any(word.startswith("UMAP_PRELOAD_HEAP=") for word in workload.kernel_mmap().argv())
    proc = subprocess.run(argv, env={**environment(), "UMAP_PRINT_STATS": "1"}, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1])["check"] == "ok"
    assert heap_summary(proc.stderr)[0] >= 2, proc.stderr
    with pytest.raises(ConfigError, match="heap"):
        Workload.from_config({**config, "heap": str(tmp_path / "missing")}, str(tmp_path / "data")).check()


def test_a_scratch_disk_filled_after_the_mapping_never_gives_wrong_bytes(tmp_path):
    with small_tmpfs(tmp_path / "kernel", 32 << 20) as fs:
        kernel = run([HEAP_PROGRAM, "fill-disk", 24, fs.directory], heap=None)
    with small_tmpfs(tmp_path / "small", 32 << 20) as fs:
        argv = [sys.executable, "-m", "autopager.cli.main", "exec", f"heap={fs.directory}", *SETTINGS, "--",
                str(HEAP_PROGRAM), "fill-disk", "24", str(fs.directory)]
        served = subprocess.run(argv, env=environment(), capture_output=True, text=True, timeout=300)
    # Its write-backs find no room: the program ends with SIGBUS at a fault that has no page to take,
    # or (a store that keeps what it cannot write in memory) finishes: never with other bytes.
    if served.returncode == 0:
        assert served.stdout == kernel.stdout, served.stderr
        assert heap_summary(served.stderr) == (1, 0), served.stderr
    else:
        assert served.returncode == -7, served.stderr
        assert served.stdout == "", served.stdout
        assert "No space left on device" in served.stderr and "the faulting thread gets SIGBUS" in served.stderr
