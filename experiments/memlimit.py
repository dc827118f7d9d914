"""A memory cgroup that limits a benchmark's child processes, on cgroup v1 or v2.

The limited cgroup is made a child of the cgroup this process already runs in (so it sits inside
whatever container or slice the benchmark was given), child processes are moved into it before they
exec, and it is removed on exit::

    with MemoryLimit(96 << 20) as limit:
        subprocess.run(argv, preexec_fn=limit.enter)

Needs root (or a delegated cgroup). On v1 the limit is memory.limit_in_bytes, on v2 memory.max (with
memory.swap.max 0); page cache read by the children counts against it in both.
"""
from __future__ import annotations

import os
import time
from pathlib import Path


class MemoryLimitError(RuntimeError):
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
    """A child memory cgroup limited to `limit_bytes`, removed when the `with` block ends."""

    def __init__(self, limit_bytes: int, name: str | None = None) -> None:
        self.limit_bytes = int(limit_bytes)
        self.version, parent = current_memory_cgroup()
        self.path = parent / (name or f"autopager-bench-{os.getpid()}")

    def __enter__(self) -> "MemoryLimit":
        try:
            if self.version == 2:
                self._enable_controller(self.path.parent)
            self.path.mkdir(exist_ok=True)
            if self.version == 1:
                (self.path / "memory.limit_in_bytes").write_text(str(self.limit_bytes))
            else:
                (self.path / "memory.max").write_text(str(self.limit_bytes))
                swap = self.path / "memory.swap.max"
                if swap.exists():
                    swap.write_text("0")
        except PermissionError as error:
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
        raise MemoryLimitError(f"could not remove the memory cgroup {self.path}; remove it with rmdir")

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
                f"cgroup with processes cannot delegate it: run the benchmark in a leaf cgroup of its own "
                f"(e.g. systemd-run --scope -p Delegate=yes)") from None
