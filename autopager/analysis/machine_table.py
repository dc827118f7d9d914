"""The machine a report's runs ran on, as the paper's Table II names it: CPU, cores, memory, the data's storage,
kernel, and the workload programs run (where, built when, their digests)."""
from __future__ import annotations

import datetime
import hashlib
import os
import platform
import re
from pathlib import Path

import yaml

from autopager.machine import cpu_model, memory_bytes
from autopager.parameters import format_size, system_page_size
from autopager.run.disk import storage
from autopager.run.workloads import config_dir, locate_bin


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
