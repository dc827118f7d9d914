"""Emptying the kernel's page cache before a run, so that the run reads from storage.

As root, all of it is dropped (``sync; echo 3 > /proc/sys/vm/drop_caches``); otherwise (or where /proc/sys is
read-only, as in many containers) only the given files are written back and evicted with
``posix_fadvise(DONTNEED)``.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

DROP_CACHES = Path("/proc/sys/vm/drop_caches")


def drop_page_cache() -> bool:
    """Write back and drop the whole page cache; False when not permitted."""
    os.sync()
    try:
        DROP_CACHES.write_text("3\n")
    except OSError:
        return False
    return True


def evict_files(paths: Iterable[Path]) -> None:
    """Write back and evict these files' pages; files that cannot be opened are skipped."""
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
