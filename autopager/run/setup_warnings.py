"""Set-ups whose measurements cannot show what the paging parameters do, each told in one line naming the setting
to change: data that fits in the pager's buffer (nothing is ever evicted), runs so short that starting the
program and the machine's noise outweigh the paging, and a kernel-mmap baseline whose memory cgroup holds all
the data (it then measures data in memory, not paged)."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

from autopager.parameters import format_size
from autopager.run.workloads import Workload

SHORT_RUN = 0.1  # seconds a run: below it, a run measures mostly the program's start


def data_size(paths: Iterable[Path]) -> int:
    return sum(path.stat().st_size for path in paths if path.is_file())


def data_in_buffer(workload: Workload) -> str | None:
    """Why a study of data no larger than the buffer measures little of the paging (None: the data does not fit)."""
    data = data_size(workload.data_paths())
    if not data or workload.buffer_size is None or data > workload.buffer_size:
        return None
    return (f"the workload's data ({format_size(data)}) fits in its buffer (workload.buffer_size="
            f"{format_size(workload.buffer_size)}): nothing is evicted, so the paging parameters can change little; "
            f"give a smaller workload.buffer_size or a larger workload.size")


def short_run(wall_seconds: float | None, runs: int) -> str | None:
    """Why runs this short (``wall_seconds`` for ``runs`` runs) measure the program's start more than its paging."""
    if wall_seconds is None or runs < 1 or wall_seconds / runs >= SHORT_RUN:
        return None
    return (f"the defaults' run took {1000 * wall_seconds / runs:.0f} ms: at this length starting the program and "
            f"the machine's noise outweigh the paging; give a larger workload.size (runs of a second or more)")


def kernel_holds_data(workload: Workload, memory_limit: int) -> str | None:
    """Why a kernel-mmap baseline whose cgroup holds all the data is no paging baseline."""
    data = data_size(workload.data_paths())
    if not data or memory_limit < data:
        return None
    return (f"the kernel's mmap runs in a {format_size(memory_limit)} memory cgroup, which holds all the workload's "
            f"data ({format_size(data)}): its figure is of data in memory, not paged; give a smaller "
            f"workload.buffer_size or a larger workload.size")
