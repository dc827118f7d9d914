"""Running commands under a memory limit: a memory cgroup, on cgroup v1 or v2.

The limited cgroup is made a child of the cgroup this process already runs in (so it sits inside whatever
container, slice or job it was given); a child process moves itself into it before it execs, and the cgroup
is removed when the ``with`` block ends::

    with MemoryLimit(96 << 20) as limit:
        subprocess.run(argv, preexec_fn=limit.enter)

On v1 the limit is memory.limit_in_bytes (and memory.memsw.limit_in_bytes, where swap is accounted), on v2
memory.max (with memory.swap.max 0); the page cache the
children read counts against it in both, so a program on the kernel's mmap gets no more memory than the limit.
Needs root (or a delegated cgroup).

The limit a study's runs get is the pager's memory (``pager_memory``): the pager's buffer, its bookkeeping of the
buffer's pages, what the program needs besides its paged data (``workload.private_memory``, its own arrays) and
``runner.memory_headroom`` (code, libraries, thread stacks, heap). Each run's cgroup adds the page tables that map
the workload's data files (``run_limit``), which the kernel keeps after the pages themselves are evicted.
"""
from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path
from typing import Any, Iterator

from autopager.errors import ConfigError
from autopager.parameters import parse_size
from autopager.run.workloads import Workload

AUTO = "auto"


class MemoryLimitError(ConfigError):
    """The memory controller cannot be used here; the message says why and what to do."""


def _mount_points() -> dict[str, Path]:
    """cgroup mount points: "memory" for the v1 memory hierarchy, "unified" for cgroup2."""
    mounts: dict[str, Path] = {}
    with open("/proc/self/mountinfo") as mountinfo:
        for line in mountinfo:
            fields = line.split()
            separator = fields.index("-")
            fstype, options = fields[separator + 1], fields[separator + 3].split(",")
            if fstype == "cgroup" and "memory" in options:
                mounts["memory"] = Path(fields[4])
            elif fstype == "cgroup2":
                mounts.setdefault("unified", Path(fields[4]))
    return mounts


def current_memory_cgroup() -> tuple[int, Path]:
    """(version, directory) of the memory cgroup this process belongs to."""
    mounts = _mount_points()
    unified = None
    with open("/proc/self/cgroup") as cgroups:
        for line in cgroups:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            if "memory" in controllers.split(",") and "memory" in mounts:
                return 1, mounts["memory"] / path.lstrip("/")
            if controllers == "" and "unified" in mounts:
                unified = mounts["unified"] / path.lstrip("/")
    if unified is not None and "memory" in (unified / "cgroup.controllers").read_text().split():
        return 2, unified
    raise MemoryLimitError("no memory cgroup controller is available to this process "
                           "(neither a cgroup v1 memory hierarchy nor cgroup2 with the memory controller)")


class MemoryLimit:
    """A child memory cgroup limited to ``limit_bytes``, removed when the ``with`` block ends; with ``swap``
    its processes may swap beyond the limit (the kernel's baseline for a heap larger than memory)."""

    def __init__(self, limit_bytes: int, name: str | None = None, swap: bool = False) -> None:
        self.limit_bytes = int(limit_bytes)
        self.swap = swap
        self.version, parent = current_memory_cgroup()
        self.path = parent / (name or f"autopager-{os.getpid()}")

    def __enter__(self) -> "MemoryLimit":
        try:
            if self.version == 2:
                self._enable_controller(self.path.parent)
            self.path.mkdir(exist_ok=True)
            if self.version == 1:
                (self.path / "memory.limit_in_bytes").write_text(str(self.limit_bytes))
                swap = self.path / "memory.memsw.limit_in_bytes"  # memory and swap: no swapping beyond the limit
                if swap.exists():
                    swap.write_text("-1" if self.swap else str(self.limit_bytes))
            else:
                (self.path / "memory.max").write_text(str(self.limit_bytes))
                swap = self.path / "memory.swap.max"
                if swap.exists():
                    swap.write_text("max" if self.swap else "0")
        except OSError as error:
            raise MemoryLimitError(f"cannot create the memory cgroup {self.path}: {error}; run as root "
                                   f"or in a cgroup delegated to this user") from None
        return self

    def enter(self) -> None:
        """Moves the calling process into the cgroup (use as subprocess preexec_fn)."""
        (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def peak_bytes(self) -> int | None:
        """The highest usage seen, when the kernel reports it."""
        name = "memory.max_usage_in_bytes" if self.version == 1 else "memory.peak"
        try:
            return int((self.path / name).read_text())
        except (OSError, ValueError):
            return None

    def __exit__(self, *exc_info) -> None:
        # The children have exited; their page cache charges move to the parent when the group goes.
        for _ in range(50):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.1)
        print(f"autopager: warning: could not remove the memory cgroup {self.path}; remove it with rmdir",
              file=sys.stderr)

    @staticmethod
    def _enable_controller(parent: Path) -> None:
        control = parent / "cgroup.subtree_control"
        if "memory" in control.read_text().split():
            return
        try:
            control.write_text("+memory")
        except OSError as error:
            raise MemoryLimitError(
                f"cannot enable the memory controller for children of {parent} ({error}); on cgroup v2 a "
                f"cgroup with processes cannot delegate it: run in a leaf cgroup of its own "
                f"(e.g. systemd-run --scope -p Delegate=yes)") from None


@contextlib.contextmanager
def memory_cgroup(limit_bytes: int | None) -> Iterator[MemoryLimit | None]:
    """A fresh limited cgroup for one run, or None when there is no limit."""
    if limit_bytes is None:
        yield None
        return
    with MemoryLimit(limit_bytes) as cgroup:
        yield cgroup


def check_memory_limits(limit_bytes: int) -> None:
    """Fail before anything runs, with the fix, if memory cgroups cannot be made here."""
    with MemoryLimit(limit_bytes, name=f"autopager-check-{os.getpid()}"):
        pass


# The pager's bookkeeping of a page of the buffer at the least page size, 4 KiB: under 32 bytes under fifo (its
# eviction-queue entry and page state), about 100 under hotfifo (besides, its victims' queue and a ghost queue of a
# buffer's pages: 27 MB at a 1 GiB buffer in smaps). 1/32 of the buffer covers every policy; given in whole MiB.
BOOKKEEPING_FRACTION = 32
MIB = 1 << 20
# A page-table entry of 8 bytes maps 4 KiB; given in whole MiB.
PAGE_TABLE_FRACTION = 512


def _whole_mib(size: int) -> int:
    return -(-size // MIB) * MIB


def pager_memory(workload: Workload, headroom: Any) -> int:
    """The memory the pager's runs have: its buffer and the bookkeeping of the buffer's pages, the program's own
    memory, and the headroom."""
    if workload.buffer_size is None:
        raise ConfigError(f"workload {workload.name}: a memory limit equal to the pager's memory needs its buffer: "
                          f"give workload.buffer_size (e.g. workload.buffer_size=1GiB)")
    try:
        extra = parse_size(headroom or 0)
    except ValueError as error:
        raise ConfigError(f"runner.memory_headroom: {error}") from None
    bookkeeping = _whole_mib(workload.buffer_size // BOOKKEEPING_FRACTION)
    return workload.buffer_size + bookkeeping + workload.private_memory + extra


def run_limit(limit: int | None, workload: Workload) -> int | None:
    """A run's limit: ``limit`` and the page tables mapping the workload's data files as they are now (a run maps
    them all, on the pager as on the kernel's mmap, and the kernel charges page tables to the run's cgroup)."""
    if limit is None:
        return None
    page_tables = sum(path.stat().st_size for path in workload.data_paths()) // PAGE_TABLE_FRACTION
    return limit + _whole_mib(page_tables)


def run_memory_limit(setting: Any, workload: Workload, headroom: Any) -> int | None:
    """``runner.memory_limit``: None (no limit), ``auto`` (the pager's memory) or a size; checked to be usable."""
    if setting is None:
        return None
    if setting == AUTO:
        limit = pager_memory(workload, headroom)
    else:
        try:
            limit = parse_size(setting)
        except ValueError as error:
            raise ConfigError(f"runner.memory_limit: {error} (or auto: the pager's buffer, workload.private_memory "
                              f"and runner.memory_headroom)") from None
    check_memory_limits(limit)
    return limit
