"""Waiting for a quiet machine before a benchmark: figures taken while anything else runs are noise."""
from __future__ import annotations

import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path


def wait_for_quiet(below: float, log: Path, name: str, poll: float = 15.0) -> float:
    """Waits until the 1-minute load average is under ``below``; appends "TIME start NAME at load L" to ``log``
    and returns the load."""
    while (load := os.getloadavg()[0]) >= below:
        print(f"{name}: waiting for the 1-minute load ({load:.2f}) to fall under {below}", file=sys.stderr, flush=True)
        time.sleep(poll)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a") as out:
        out.write(f"{datetime.now(timezone.utc):%Y-%m-%dT%H:%M:%SZ} start {name} at load {load:.2f}\n")
    return load
