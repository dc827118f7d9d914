"""The paging parameters (DESIGN.md): their names, environment variables and byte-size notation.

These names are the contract between configs, studies, profiles, the Python API and every program
that uses the pager: a program receives its parameters as the UMAP_* environment variables below.
"""
from __future__ import annotations

import os
import re
from typing import Any, Mapping

# parameter name -> environment variable read by the native pager
ENV_VARS: dict[str, str] = {
    "page_size": "UMAP_PAGESIZE",
    "fillers": "UMAP_PAGE_FILLERS",
    "evictors": "UMAP_PAGE_EVICTORS",
    "buffer_size": "UMAP_BUFSIZE",
    "evict_high_water": "UMAP_EVICT_HIGH_WATER_THRESHOLD",
    "evict_low_water": "UMAP_EVICT_LOW_WATER_THRESHOLD",
    "evict_retain": "UMAP_EVICT_RETAIN",
    "eviction": "UMAP_EVICTION",
    "read_ahead": "UMAP_READ_AHEAD",
    "max_fault_events": "UMAP_MAX_FAULT_EVENTS",
    "direct_io": "UMAP_DIRECT_IO",
}
PARAMETERS = tuple(ENV_VARS)
# parameters whose values are names, not numbers: name -> the values the pager accepts
CATEGORIES: dict[str, tuple[str, ...]] = {"eviction": ("fifo", "hotfifo", "s3fifo", "clock")}


def typed(name: str, value: Any) -> Any:
    """A parameter's value as read back from a table (pandas gives numbers as floats): a name, or an int."""
    return str(value) if name in CATEGORIES else int(value)

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
          "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tb": 1 << 40,
          "tib": 1 << 40}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def parse_size(value: Any) -> int:
    """Bytes from an int or a string such as "4096", "64KiB", "1.5GiB" (K, M, G are powers of 1024)."""
    if isinstance(value, bool):
        raise ValueError(f"not a size: {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    match = _SIZE.match(str(value))
    if not match or match.group(2).lower() not in _UNITS:
        raise ValueError(f"not a size: {value!r} (expected bytes, or a number with KiB, MiB, GiB)")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def format_size(nbytes: int) -> str:
    """The shortest exact form: 4096 -> "4KiB", 3<<20 -> "3MiB", 1000 -> "1000"."""
    for suffix, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale}{suffix}"
    return str(nbytes)


def system_page_size() -> int:
    return os.sysconf("SC_PAGE_SIZE")


def to_environment(params: Mapping[str, Any]) -> dict[str, str]:
    """UMAP_* variables for `params`. buffer_size is in bytes here and becomes pages of page_size; without
    page_size, system pages, which the pager counts UMAP_BUFSIZE in when UMAP_PAGESIZE is not set (it keeps
    those bytes and chooses the page size for them)."""
    unknown = set(params) - set(ENV_VARS)
    if unknown:
        raise ValueError(f"unknown paging parameter(s) {sorted(unknown)}; known: {', '.join(PARAMETERS)}")
    page_size = parse_size(params.get("page_size", system_page_size()))
    env = {}
    for name, value in params.items():
        if value is None:
            continue
        if name == "buffer_size":
            env[ENV_VARS[name]] = str(max(1, parse_size(value) // page_size))
        elif name == "page_size":
            env[ENV_VARS[name]] = str(page_size)
        elif name in CATEGORIES:
            env[ENV_VARS[name]] = str(value)
        else:
            env[ENV_VARS[name]] = str(int(value))
    return env
