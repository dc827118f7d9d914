"""SIGTERM ends a study as Ctrl-C does: the trials in flight are killed, the finished ones kept."""
from __future__ import annotations

import contextlib
import signal
import threading
from typing import Any, Iterator


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt while the study runs, so the trial in flight is killed as with Ctrl-C."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
