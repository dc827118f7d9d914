"""`autopager exec heap=DIR`: a program's large anonymous mappings served by the pager from scratch files.

Every program here prints checksums of the bytes it reads; run under the preload with the heap on, it must
print the same as run without it, and the preload's summary must show its anonymous mappings served (or,
with no room in the heap's directory, left to the kernel). The C program is native/tests/heap_program.c,
built by CMake (build/native/tests, or $AUTOPAGER_HEAP_PROGRAM).
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import signal
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


def run(argv, heap: Path | None, settings=SETTINGS, preexec_fn=None, input=None) -> subprocess.CompletedProcess:
    """`argv` as is, or under `autopager exec heap=HEAP`; it must succeed."""
    if heap is not None:
        argv = [sys.executable, "-m", "autopager.cli.main", "exec", f"heap={heap}", *settings, "--", *map(str, argv)]
    proc = subprocess.run(list(map(str, argv)), env=environment(), capture_output=True, text=True, timeout=300,
                          preexec_fn=preexec_fn, input=input)
    assert proc.returncode == 0, f"{argv} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc


def heap_summary(stderr: str) -> tuple[int, int]:
    """(anonymous mappings served, left to the kernel for want of room) from the preload's line at exit."""
    match = re.search(r"autopager preload: served (\d+) anonymous mappings from .*, left (\d+) to the kernel", stderr)
    assert match, f"no heap summary in:\n{stderr}"
    return int(match.group(1)), int(match.group(2))


def pager_stats(stderr: str) -> dict:
    """The pager's statistics the preload printed at exit (print_stats=1)."""
    match = re.search(r"^autopager stats: (\{.*\})$", stderr, re.MULTILINE)
    assert match, f"no statistics in:\n{stderr}"
    return json.loads(match.group(1))


STEPS = ["malloc", "realloc-kept", "realloc-grown", "realloc-from-small", "fork-child-reads", "fork-child-wrote",
         "fork-parent-after-child-wrote", "fork-parent-writes", "calloc", "realloc-after-fork", "madvise-dontneed",
         "madvise-dontneed-written", "madvise-free", "madvise-free-outside-below", "madvise-free-outside-above",
         "madvise-free-written", "mprotect-read-only", "mprotect-writable-again", "munmap-part-below",
         "munmap-part-above", "mremap-grown", "munmap-whole", "below-threshold"]


def test_the_heap_program_reads_the_same_bytes_with_its_heap_on_the_pager(tmp_path):
    kernel = run([HEAP_PROGRAM, "steps", 24], heap=None)
    served = run([HEAP_PROGRAM, "steps", 24], heap=tmp_path)
    assert served.stdout.splitlines() == kernel.stdout.splitlines(), served.stderr
    assert [line.split()[0] for line in served.stdout.splitlines()] == STEPS
    assert "madvise-free pages-neither-as-they-were-nor-zeros 0" in served.stdout
    # Served: malloc's block, realloc's two (grown from a served block and from a glibc one), calloc's, the block
    # realloc made from the kernel's after fork, and the six mmaps (not the one below heap_min). Handed to the
    # kernel with their written pages: the block at fork, and the mmaps at MADV_DONTNEED, MADV_FREE, mprotect,
    # the partial munmap and mremap; each was served until that call.
    assert heap_summary(served.stderr) == (11, 0), served.stderr
    assert re.search(r"handed 6 to the kernel", served.stderr), served.stderr
    stats = pager_stats(served.stderr)
    assert stats["evictions"] > 0 and stats["write_backs"] > 0, "blocks larger than the buffer went to disk and back"
    assert stats["resident_bytes"] == 0 and stats["dirty_pages"] == 0
    assert not list(tmp_path.iterdir()), "the scratch files are unlinked"


@pytest.mark.parametrize("how", ["drop", "drop-at-exit"])
def test_a_block_freed_or_left_to_the_exit_is_dropped_without_writing_it_anywhere(tmp_path, how):
    settings = ["page_size=64KiB", "buffer_size=16MiB", "heap_min=1MiB", "print_stats=1"]
    kernel = run([HEAP_PROGRAM, how, 8], heap=None)
    served = run([HEAP_PROGRAM, how, 8], heap=tmp_path, settings=settings)
    assert served.stdout == kernel.stdout, served.stderr
    assert heap_summary(served.stderr) == (1, 0), served.stderr
    stats = pager_stats(served.stderr)  # at the exit
    assert stats["fills"] > 0 and stats["evictions"] == 0, "every page written stayed in the buffer"
    assert stats["write_backs"] == 0 and stats["bytes_written"] == 0, stats
    if how == "drop":
        assert stats["resident_bytes"] == 0 and stats["dirty_pages"] == 0, stats
    else:  # resident and dirty at the exit, and dropped with the process
        assert stats["dirty_pages"] * (64 << 10) == stats["resident_bytes"] > 0, stats


def scratch_files(pid: int) -> list[str]:
    """The files process `pid` has open that were unlinked."""
    found = []
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.endswith(" (deleted)"):
                found.append(target)
    return found


def run_held(argv, env, look):
    """Runs `heap_program hold` (`argv`) until it has written its block, calls look(its pid), then lets it end;
    returns its output, its errors and what look returned. It must succeed."""
    proc = subprocess.Popen(list(map(str, argv)), env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline()
        seen = look(proc.pid)
        out, err = proc.communicate("", timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    return first + out, err, seen


@pytest.mark.parametrize("how", ["heap=DIR", "heap=on", "UMAP_PRELOAD_HEAP=on"])
def test_the_scratch_files_are_unlinked_files_in_the_heaps_directory(tmp_path, how):
    directory = tmp_path / "heap"
    directory.mkdir()
    env = environment()
    if how == "heap=DIR":
        argv = [sys.executable, "-m", "autopager.cli.main", "exec", f"heap={directory}", *SETTINGS, "--"]
    elif how == "heap=on":  # exec names $TMPDIR
        argv = [sys.executable, "-m", "autopager.cli.main", "exec", "heap=on", *SETTINGS, "--"]
        env["TMPDIR"] = str(directory)
    else:  # the preload alone takes $TMPDIR
        argv = []
        env.update({"LD_PRELOAD": str(preload_library()), "UMAP_PRELOAD_HEAP": "on", "TMPDIR": str(directory),
                    "UMAP_PRELOAD_HEAP_MIN": str(16 << 20), "UMAP_PRINT_STATS": "1"})
    kernel = run([HEAP_PROGRAM, "hold", 24], heap=None, input="")
    out, err, (held, listed) = run_held([*argv, HEAP_PROGRAM, "hold", 24], env, lambda pid: (
        scratch_files(pid), sorted(path.name for path in directory.iterdir())))
    assert out == kernel.stdout, err
    assert heap_summary(err) == (1, 0), err
    assert held and all(target.startswith(f"{directory.resolve()}/") for target in held), held
    assert listed == [], "nothing in the directory has a name"


def test_no_room_in_the_heap_directory_leaves_the_mappings_to_the_kernel(tmp_path):
    kernel = run([HEAP_PROGRAM, "steps", 24], heap=None)
    with small_tmpfs(tmp_path / "small", 8 << 20) as fs:
        served = run([HEAP_PROGRAM, "steps", 24], heap=fs.directory)
    assert served.stdout == kernel.stdout
    assert "has no room for" in served.stderr
    assert heap_summary(served.stderr) == (0, 11), served.stderr


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
    import hashlib
    import numpy as np
    rng = np.random.default_rng(5)
    arrays = [np.zeros(4 << 20, dtype=np.float64) for _ in range(3)]   # 32 MiB each: malloc's mmap'd blocks
    for a in arrays:
        at = rng.integers(0, a.size, 20000)
        np.add.at(a, at, rng.random(at.size))
    grown = np.concatenate(arrays)
    grown.resize(grown.size * 2, refcheck=False)  # realloc: the second half zeros
    grown[grown.size // 2::4097] = 1.5
    for array in (*arrays, grown):
        print(hashlib.sha256(array.data).hexdigest())  # every byte
""")


def test_a_numpy_program_has_the_same_bytes_in_its_arrays_on_the_pager(tmp_path):
    argv = [sys.executable, "-c", NUMPY_SCRIPT]
    kernel = run(argv, heap=None)
    served = run(argv, heap=tmp_path)
    assert served.stdout == kernel.stdout, served.stderr
    assert len(served.stdout.splitlines()) == 4
    assert heap_summary(served.stderr)[0] >= 5, served.stderr  # the arrays, the concatenation, its growth


def test_exec_serves_the_heap_with_a_profiles_parameters(tmp_path):
    profile = tmp_path / "heap-demo.yaml"
    profile.write_text("workload: demo\nparams:\n  page_size: 128KiB\n  buffer_size: 8MiB\n"
                       "searched: [page_size, buffer_size]\n")
    kernel = run([HEAP_PROGRAM, "big", 32], heap=None)
    served = run([HEAP_PROGRAM, "big", 32], heap=tmp_path,
                 settings=[f"profile={profile}", "heap_min=16MiB", "print_stats=1"])
    assert served.stdout == kernel.stdout, served.stderr
    assert heap_summary(served.stderr) == (1, 0), served.stderr
    stats = pager_stats(served.stderr)
    assert stats["page_size"] == 128 << 10 and stats["peak_resident_bytes"] <= 64 * (128 << 10), stats


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


def test_a_scratch_disk_filled_after_the_mapping_is_sigbus_at_the_fault_that_finds_no_room(tmp_path):
    with small_tmpfs(tmp_path / "kernel", 32 << 20) as fs:
        kernel = run([HEAP_PROGRAM, "fill-disk", 24, fs.directory], heap=None)
    assert kernel.stdout.startswith("fill-disk ")
    with small_tmpfs(tmp_path / "small", 32 << 20) as fs:
        argv = [sys.executable, "-m", "autopager.cli.main", "exec", f"heap={fs.directory}", *SETTINGS, "--",
                str(HEAP_PROGRAM), "fill-disk", "24", str(fs.directory)]
        served = subprocess.run(argv, env=environment(), capture_output=True, text=True, timeout=300)
    # Its block's pages cannot go to the full disk, nor beyond the 8 MiB buffer: once every resident page is dirty,
    # the next fault is SIGBUS, before the program has read (or printed) anything.
    assert served.returncode == -signal.SIGBUS, served.stderr
    assert served.stdout == "", served.stdout
    assert "No space left on device" in served.stderr, served.stderr
    assert re.search(r"cannot be served: no room in the buffer: every resident page is dirty .*the faulting thread "
                     r"gets SIGBUS", served.stderr), served.stderr


def test_a_fork_with_the_scratch_disk_full_gives_the_child_every_byte(tmp_path):
    with small_tmpfs(tmp_path / "kernel", 32 << 20) as fs:
        kernel = run([HEAP_PROGRAM, "fill-disk-fork", 24, fs.directory], heap=None)
    with small_tmpfs(tmp_path / "small", 32 << 20) as fs:
        served = run([HEAP_PROGRAM, "fill-disk-fork", 24, fs.directory], heap=fs.directory)
    assert served.stdout == kernel.stdout, served.stderr
    assert [line.split()[0] for line in served.stdout.splitlines()] == [
        "fill-disk-second-half", "fill-disk-before-fork", "fill-disk-fork-child-reads", "fill-disk-fork-parent-writes"]
    # Pages written after the disk filled could not be evicted; at fork they went into the kernel's memory.
    assert pager_stats(served.stderr)["write_errors"] > 0, served.stderr
    assert heap_summary(served.stderr) == (1, 0), served.stderr
    assert re.search(r"handed 1 to the kernel", served.stderr), served.stderr
