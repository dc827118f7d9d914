"""One tuner a study: an exclusive lock on ``<study>/tuner.lock``, held as long as the tuner lives.

The lock is ``flock``'s, so it goes with the tuner's process however that ends (the kernel drops it with the
last descriptor); the file holds the holder's pid, for the message a second tuner gets.
"""
from __future__ import annotations

import fcntl
import os
from pathlib import Path

from autopager.errors import StudyError

LOCK = "tuner.lock"
RUNNING, FINISHED, STOPPED = "running", "finished", "stopped"  # a study's state: its lock held, its end reached, else


class StudyLock:
    def __init__(self, directory: Path):
        self.path = directory / LOCK
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock, or raise StudyError naming the study and the tuner that holds it."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise StudyError(f"study {self.path.parent} is being tuned by another tuner (pid {holder}): "
                             f"wait for it to end, or give this one another study.name") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def is_locked(directory: Path) -> bool:
    """Whether a tuner holds the study's lock now (its state is "running")."""
    try:
        fd = os.open(directory / LOCK, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
