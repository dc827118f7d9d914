"""This machine's identity: what a profile records it was found on (``this_machine``), and the CPU and memory that
the machine table (autopager.analysis.machine_table) and the benchmarks name."""
from __future__ import annotations

import os
import platform
import socket
from pathlib import Path
from typing import Any

from autopager.parameters import format_size


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
