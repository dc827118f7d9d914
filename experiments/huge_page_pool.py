"""The machine's pool of 2 MiB huge pages (/proc/sys/vm/nr_hugepages), grown for the runs that map huge pages
(huge_pages=on or auto) and put back to its size after, even when they fail or are interrupted. Needs root."""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator

HUGE_PAGE = 2 << 20
POOL = Path("/proc/sys/vm/nr_hugepages")
COUNTS = Path("/sys/kernel/mm/hugepages/hugepages-2048kB")


def free_huge_pages() -> int:
    """Huge pages a new mapping can have: free, less those reserved by mappings already made."""
    if not COUNTS.is_dir():
        return 0
    return int((COUNTS / "free_hugepages").read_text()) - int((COUNTS / "resv_hugepages").read_text())


def huge_pages_for(size: int) -> int:
    return -(-size // HUGE_PAGE)


@contextlib.contextmanager
def huge_pages_free(pages: int) -> Iterator[str]:
    """At least ``pages`` huge pages free during the block: the pool grown by what is missing, and shrunk back after.
    Yields what was done, for the report; a SystemExit saying why when the kernel cannot give them."""
    if pages <= 0 or free_huge_pages() >= pages:
        yield f"{free_huge_pages()} huge pages free, none reserved"
        return
    before = int(POOL.read_text())
    try:
        POOL.write_text(f"{before + pages - free_huge_pages()}\n")
        if free_huge_pages() < pages:
            raise SystemExit(f"huge pages: the kernel gave {free_huge_pages()} free 2 MiB huge pages of the {pages} "
                             f"asked (memory too fragmented or too small: {POOL} as early as possible after boot)")
        yield f"{POOL} grown from {before} to {POOL.read_text().strip()} for {pages} free, put back after"
    finally:
        POOL.write_text(f"{before}\n")
