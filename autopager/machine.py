"""This machine: what a profile records it was found on (``this_machine``), and its description for a study's
report and the evaluation's summary (the paper's Table II: CPU, cores, memory, storage, kernel)."""
from __future__ import annotations

import contextlib
import datetime
import hashlib
import os
import platform
import re
import socket
from pathlib import Path

import yaml

from typing import Any, Iterator

from autopager.params import format_size, system_page_size
from autopager.workloads import config_dir, locate_bin


def memory_bytes() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def this_machine() -> dict[str, Any]:
    """What a profile was found on: enough to tell machines apart and to judge whether it carries over."""
    return {
        "hostname": socket.gethostname(),
        "cores": os.cpu_count() or 1,
        "memory": format_size(memory_bytes() >> 30 << 30),
        "kernel": platform.release(),
    }


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def block_device(path: Path) -> Path | None:
    """The /sys directory of the block device holding ``path`` (a partition's own, when on one)."""
    device = os.stat(path).st_dev
    block = Path(f"/sys/dev/block/{os.major(device)}:{os.minor(device)}")
    return block if block.exists() else None


def device_queue(path: Path) -> Path | None:
    """The request queue's settings of the disk holding ``path`` (the whole disk's, for a partition)."""
    block = block_device(path)
    if block is None:
        return None
    return block / "queue" if (block / "queue").exists() else block.resolve().parent / "queue"


def read_ahead_file(path: Path) -> Path | None:
    """The disk's read-ahead setting, in KiB: what the kernel's mmap reads around a fault at most."""
    queue = device_queue(path)
    return queue / "read_ahead_kb" if queue and (queue / "read_ahead_kb").exists() else None


@contextlib.contextmanager
def read_ahead_of_disk(path: Path, kib: int | None) -> Iterator[None]:
    """The disk holding ``path`` reads ahead ``kib`` KiB (None: as it is) until the block ends, then as before.
    Needs root."""
    setting = read_ahead_file(path) if kib is not None else None
    if kib is not None and setting is None:
        raise OSError(f"no read-ahead setting for the disk of {path}")
    before = setting.read_text().strip() if setting else None
    if setting:
        setting.write_text(str(kib))
    try:
        yield
    finally:
        if setting:
            setting.write_text(before)


def bytes_read_from_disk(path: Path) -> int | None:
    """Bytes read so far from the block device holding ``path`` (its sectors read, /sys/.../stat); None if unknown."""
    block = block_device(path)
    stat = block / "stat" if block is not None else None
    if stat is None or not stat.exists():
        return None
    return int(stat.read_text().split()[2]) * 512


def storage(path: Path) -> str:
    """The block device holding ``path``, as /sys describes it."""
    block, queue = block_device(path), device_queue(path)
    if block is None:
        return "unknown"
    name = block.resolve().name
    rotational = (queue / "rotational").read_text().strip() if (queue / "rotational").exists() else "?"
    size = int((block / "size").read_text()) * 512 if (block / "size").exists() else 0
    kind = "virtual disk" if name.startswith("vd") else "rotational" if rotational == "1" else "SSD"
    setting = read_ahead_file(path)
    read_ahead = setting.read_text().strip() if setting else "?"
    return f"/dev/{name} ({kind}, {format_size(size >> 30 << 30)}, read-ahead {read_ahead} KiB)"


def program(workload: str) -> str | None:
    """The executable a workload's config runs (``{bin}/NAME``); None for one that runs no built program (the
    synthetic workload, a Python module)."""
    command = yaml.safe_load((config_dir() / "workload" / f"{workload}.yaml").read_text())["command"]
    found = re.search(r"\{bin\}/([\w.-]+)", command)
    return found.group(1) if found else None


def programs(workloads: list[str]) -> str:
    """Where the workload programs are, when they were built and their digests: the pager is linked in."""
    names = sorted({name for name in map(program, workloads) if name is not None})
    if not names:
        return "none built (the workloads are Python programs)"
    shown = []
    for name in names:
        path = locate_bin(name) / name
        built = datetime.datetime.fromtimestamp(path.stat().st_mtime, datetime.timezone.utc)
        shown.append(f"{name} {hashlib.sha256(path.read_bytes()).hexdigest()[:12]} ({built:%Y-%m-%d %H:%M} UTC)")
    return f"{locate_bin(names[0])}: " + ", ".join(shown)


def describe(data_dir: Path, workloads: list[str]) -> list[tuple[str, str]]:
    return [
        ("CPU", f"{cpu_model()}, {os.cpu_count()} hardware threads"),
        ("memory", format_size(memory_bytes() >> 30 << 30)),
        ("storage of the data", f"{storage(data_dir)}"),
        ("kernel", f"Linux {platform.release()}, {format_size(system_page_size())} pages"),
        ("host", platform.node()),
        ("workload programs (sha256, built)", programs(workloads)),
    ]
