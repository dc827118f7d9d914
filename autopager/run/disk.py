"""The disk that holds a program's data: its block device, its read-ahead setting (set for a run and restored
after), the bytes read from it, and its description. A run's conditions, as the page cache is (run/page_cache.py)."""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator

from autopager.parameters import format_size


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


def _sectors(path: Path, field: int) -> int | None:
    """A sector count (``field`` of /sys/.../stat) of the block device holding ``path``, in bytes; None if unknown."""
    block = block_device(path)
    stat = block / "stat" if block is not None else None
    if stat is None or not stat.exists():
        return None
    return int(stat.read_text().split()[field]) * 512


def bytes_read_from_disk(path: Path) -> int | None:
    """Bytes read so far from the block device holding ``path`` (its sectors read); None if unknown."""
    return _sectors(path, 2)


def bytes_written_to_disk(path: Path) -> int | None:
    """Bytes written so far to the block device holding ``path`` (its sectors written); None if unknown."""
    return _sectors(path, 6)


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
