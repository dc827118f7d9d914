"""huge_pages: arrays and a program's heap in 2 MiB huge pages, and the settings that cannot have them refused.

Each test that maps huge pages reserves them itself (/proc/sys/vm/nr_hugepages, as root) and puts the pool back
afterwards; it skips, saying why, only where the kernel gives none.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

import autopager
from autopager.parameters import check_value
from tests.core.test_exec import built, environment  # noqa: F401 (built: the fixture the heap program's needs)
from tests.core.test_exec_heap import (HEAP_PROGRAM, heap_program_built, heap_summary, run,  # noqa: F401 (fixture)
                                       run_held)
from tests.core.test_exec_settings import autopager as autopager_command

POOL = Path("/proc/sys/vm/nr_hugepages")
FREE = Path("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages")
RESERVED = Path("/sys/kernel/mm/hugepages/hugepages-2048kB/resv_hugepages")
MIB = 1 << 20


def available_huge_pages() -> int:
    return int(FREE.read_text()) - int(RESERVED.read_text()) if FREE.exists() else 0


@pytest.fixture
def huge_pages():
    """Makes sure `pages` 2 MiB huge pages are free (growing the pool), and shrinks the pool back after."""
    old = int(POOL.read_text()) if POOL.exists() else None

    def reserve(pages: int) -> None:
        if available_huge_pages() >= pages:
            return
        try:
            POOL.write_text(f"{old + pages}\n")
        except (OSError, TypeError) as error:
            pytest.skip(f"no huge pages: cannot grow {POOL}: {error}")
        if available_huge_pages() < pages:
            pytest.skip(f"no huge pages: the kernel gave {available_huge_pages()} of the {pages} asked")

    yield reserve
    if old is not None and int(POOL.read_text()) != old:
        POOL.write_text(f"{old}\n")


def kernel_page_size(address: int) -> int:
    """KernelPageSize of the mapping holding `address` in /proc/self/smaps."""
    inside = False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        span = re.match(r"^([0-9a-f]+)-([0-9a-f]+) ", line)
        if span:
            inside = int(span.group(1), 16) <= address < int(span.group(2), 16)
        elif inside and line.startswith("KernelPageSize:"):
            return int(line.split()[1]) * 1024
    return 0


@pytest.mark.parametrize("page_size", ["2MiB", "4MiB"])
def test_an_array_reads_and_writes_every_byte_in_huge_pages(tmp_path, huge_pages, page_size):
    huge_pages(8)
    data = np.random.default_rng(1).integers(0, 1 << 62, size=5 * MIB, dtype=np.int64)  # 40 MiB: evicted and read again
    path = tmp_path / "data.i64"
    data.tofile(path)
    with autopager.Pager(page_size=page_size, buffer_size="16MiB", huge_pages="on") as pager:
        assert pager.config["huge_pages"] == "on"
        array = pager.memmap(path, dtype=np.int64, mode="r+")
        assert kernel_page_size(array.ctypes.data) == 2 * MIB
        assert np.array_equal(array, data)
        array[::4099] = -7
        data[::4099] = -7
        assert np.array_equal(array, data)
        assert pager.stats()["evictions"] > 0
        del array
    assert np.array_equal(np.fromfile(path, dtype=np.int64), data)


def test_a_page_size_that_is_no_huge_page_multiple_is_refused_naming_the_setting(tmp_path):
    with pytest.raises(ValueError, match=r"huge_pages \(UMAP_HUGE_PAGES\) = on: page_size \(UMAP_PAGESIZE\) = 65536"):
        autopager.Pager(page_size="64KiB", buffer_size="16MiB", huge_pages="on")
    with pytest.raises(ValueError, match="huge_pages=maybe: .*one of off, on, auto"):
        check_value("huge_pages", "maybe")
    with autopager.Pager(page_size="64KiB", buffer_size="16MiB", huge_pages="auto") as pager:
        assert pager.config["huge_pages"] == "auto"  # falls back: nothing fails


def test_exec_refuses_on_without_a_huge_page_multiple_before_the_program(tuner_home):
    marker = tuner_home / "ran"
    code, out, err = autopager_command("exec", "huge_pages=on", "page_size=64KiB", "--", "touch", str(marker))
    assert code == 2 and "huge_pages (UMAP_HUGE_PAGES) = on: page_size" in err, err
    assert len(err.splitlines()) == 1, err
    assert not marker.exists()


HEAP_SETTINGS = ["page_size=2MiB", "buffer_size=16MiB", "fillers=2", "evictors=1", "heap_min=16MiB", "huge_pages=on",
                 "print_stats=1"]


def test_a_heap_in_huge_pages_reads_the_same_bytes_through_realloc_fork_madvise_mprotect_mremap_and_munmap(
        tmp_path, huge_pages):
    huge_pages(8)
    kernel = run([HEAP_PROGRAM, "steps", 24], heap=None)
    served = run([HEAP_PROGRAM, "steps", 24], heap=tmp_path, settings=HEAP_SETTINGS)
    assert served.stdout.splitlines() == kernel.stdout.splitlines(), served.stderr
    assert heap_summary(served.stderr) == (11, 0), served.stderr  # as test_exec_heap's steps
    assert re.search(r"handed 6 to the kernel", served.stderr), served.stderr


def hugetlb_mappings(pid: int) -> list[int]:
    """The lengths of process `pid`'s mappings in 2 MiB huge pages."""
    lengths, length = [], 0
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        span = re.match(r"^([0-9a-f]+)-([0-9a-f]+) ", line)
        if span:
            length = int(span.group(2), 16) - int(span.group(1), 16)
        elif line.startswith("KernelPageSize:") and int(line.split()[1]) == 2048:
            lengths.append(length)
    return lengths


def test_a_heap_block_is_mapped_in_huge_pages(tmp_path, huge_pages):
    huge_pages(8)
    kernel = run([HEAP_PROGRAM, "hold", 24], heap=None, input="")
    argv = [sys.executable, "-m", "autopager.cli.main", "exec", f"heap={tmp_path}", *HEAP_SETTINGS, "--",
            HEAP_PROGRAM, "hold", 24]
    out, err, lengths = run_held(argv, environment(), hugetlb_mappings)
    assert out == kernel.stdout, err
    assert heap_summary(err) == (1, 0), err
    assert 26 * MIB in lengths, f"the block's region (24 MiB and 16 bytes, in whole huge pages) in {lengths}"


def test_the_native_config_takes_the_tables_choices_and_refuses_others():
    from autopager import _native
    from autopager.parameters import CATEGORIES
    config = _native.Config.defaults()
    for choice in CATEGORIES["huge_pages"]:
        config.huge_pages = choice
        assert config.huge_pages == choice
    with pytest.raises(ValueError, match=r"huge_pages \(UMAP_HUGE_PAGES\) = \"sometimes\""):
        config.huge_pages = "sometimes"
