"""The paging parameters (DESIGN.md): their names, environment variables and byte-size notation.

These names are the contract between configs, studies, profiles, the Python API and every program
that uses the pager: a program receives its parameters as the UMAP_* environment variables below.
"""
from __future__ import annotations

import numbers
import os
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Iterable, Mapping

from autopager.errors import ConfigError

SYSTEM_PAGE = os.sysconf("SC_PAGE_SIZE")
PHYSICAL_PAGES = os.sysconf("SC_PHYS_PAGES")  # of SYSTEM_PAGE: the most a buffer may hold


@dataclass(frozen=True)
class Parameter:
    """A paging parameter: its name, the variable the pager reads it from, and the values the pager accepts
    there: from ``low`` to ``high`` in ``unit`` (native/src/config.cpp checks the same; tests/core/test_params.py
    compares the two tables), or one of ``choices``, names, for a categorical one."""
    name: str
    env: str
    low: int = 0
    high: int = 0
    unit: str = ""
    zero_turns_off: bool = False  # the variable set to 0 turns it off; otherwise 0 leaves the pager's value
    size: bool = False            # given in bytes, or as "64KiB" (buffer_size: its variable counts pages)
    choices: tuple[str, ...] = ()  # a categorical parameter's values (the first is the pager's default)


# Beyond these ranges, as the pager checks: page_size, read_ahead_run and read_around are multiples of the
# system page;
# buffer_size holds at least two and at most PHYSICAL_PAGES * SYSTEM_PAGE / page_size pages of page_size;
# evict_low_water < evict_high_water.
PARAMETER_TABLE: tuple[Parameter, ...] = (
    Parameter("page_size", "UMAP_PAGESIZE", SYSTEM_PAGE, 1 << 30, "bytes", size=True),
    Parameter("fillers", "UMAP_PAGE_FILLERS", 1, 1024),
    Parameter("evictors", "UMAP_PAGE_EVICTORS", 1, 1024),
    Parameter("buffer_size", "UMAP_BUFSIZE", 2, PHYSICAL_PAGES, "pages", size=True),
    Parameter("evict_high_water", "UMAP_EVICT_HIGH_WATER_THRESHOLD", 1, 100, "percent"),
    Parameter("evict_low_water", "UMAP_EVICT_LOW_WATER_THRESHOLD", 0, 99, "percent"),
    Parameter("evict_retain", "UMAP_EVICT_RETAIN", 0, 99, "percent", zero_turns_off=True),
    Parameter("eviction", "UMAP_EVICTION", choices=("fifo", "hotfifo", "s3fifo", "clock")),
    Parameter("read_ahead", "UMAP_READ_AHEAD", 0, 1 << 20, "pages", zero_turns_off=True),
    Parameter("read_ahead_run", "UMAP_READ_AHEAD_RUN", SYSTEM_PAGE, 256 << 20, "bytes", size=True),
    Parameter("read_around", "UMAP_READ_AROUND", 0, 256 << 20, "bytes", zero_turns_off=True, size=True),
    Parameter("max_fault_events", "UMAP_MAX_FAULT_EVENTS", 1, 4096),
    Parameter("direct_io", "UMAP_DIRECT_IO", 0, 1, zero_turns_off=True),
    Parameter("compression", "UMAP_COMPRESSION", choices=("none", "lz4", "zstd")),  # of NBD stores' pages
    Parameter("huge_pages", "UMAP_HUGE_PAGES", choices=("off", "on", "auto")),  # regions in 2 MiB huge pages
)
TABLE: dict[str, Parameter] = {parameter.name: parameter for parameter in PARAMETER_TABLE}
ENV_VARS: dict[str, str] = {parameter.name: parameter.env for parameter in PARAMETER_TABLE}
PARAMETERS = tuple(ENV_VARS)
# the categorical parameters: name -> the values the pager accepts (names; studies, records and profiles hold them)
CATEGORIES: dict[str, tuple[str, ...]] = {p.name: p.choices for p in PARAMETER_TABLE if p.choices}
COMPRESSIONS = CATEGORIES["compression"]
LOW, HIGH = "evict_low_water", "evict_high_water"


def typed(name: str, value: Any) -> Any:
    """A parameter's value as read back from a table (pandas gives numbers as floats): a name, or an int."""
    return str(value) if name in CATEGORIES else int(value)

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
          "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tb": 1 << 40,
          "tib": 1 << 40}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")
_INTEGER = re.compile(r"^\s*[+-]?\d+\s*$")


def parse_size(value: Any) -> int:
    """Bytes from an int or a string such as "4096", "64KiB", "1.5GiB" (K, M, G are powers of 1024)."""
    if isinstance(value, bool):
        raise ValueError(f"not a size: {value!r}")
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    match = _SIZE.match(str(value))
    if not match or match.group(2).lower() not in _UNITS:
        raise ValueError(f"not a size: {value!r} (expected bytes, or a number with KiB, MiB, GiB)")
    return int(Fraction(match.group(1)) * _UNITS[match.group(2).lower()])


def _shown(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 40 else f"{text[:20]}...({len(text)} characters)"


def _allowed(parameter: Parameter) -> str:
    if parameter.choices:
        return f"one of {', '.join(parameter.choices)}"
    if parameter.name in ("page_size", "read_ahead_run", "read_around"):
        return f"a multiple of the system page size {SYSTEM_PAGE} from {parameter.low} to {parameter.high} bytes"
    if parameter.name == "buffer_size":
        return f"from two pages of page_size to {format_size(parameter.high * SYSTEM_PAGE)} (physical memory)"
    return f"an integer from {parameter.low} to {parameter.high}{' ' + parameter.unit if parameter.unit else ''}"


def check_value(name: str, value: Any) -> Any:
    """One parameter's value (sizes in bytes) as the pager would accept it; else a ValueError of one line naming
    the parameter and what it allows."""
    parameter = TABLE[name]
    if parameter.choices:
        if not isinstance(value, str) or value.strip().lower() not in parameter.choices:
            raise ValueError(f"{name}={_shown(value)}: not one of its values; allowed: {_allowed(parameter)}")
        return value.strip().lower()
    if parameter.size:
        try:
            number = parse_size(value)
        except ValueError:
            raise ValueError(f"{name}={_shown(value)}: not a size; allowed: {_allowed(parameter)}") from None
    else:
        try:
            if isinstance(value, bool) or not (isinstance(value, numbers.Integral)
                                               or isinstance(value, str) and _INTEGER.match(value)):
                raise ValueError
            number = int(value)  # a string of more digits than Python converts is a ValueError too
        except ValueError:
            raise ValueError(f"{name}={_shown(value)}: not an integer; allowed: {_allowed(parameter)}") from None
    if name in ("page_size", "read_ahead_run", "read_around") and number % SYSTEM_PAGE and 0 < number <= parameter.high:
        raise ValueError(f"{name}={_shown(value)}: not a multiple of the system page size; allowed: {_allowed(parameter)}")
    low, high = (2 * SYSTEM_PAGE, parameter.high * SYSTEM_PAGE) if name == "buffer_size" else (parameter.low, parameter.high)
    if not low <= number <= high:
        raise ValueError(f"{name}={_shown(value)}: out of range; allowed: {_allowed(parameter)}")
    return number


def check_names(names: Iterable[str], where: str = "") -> None:
    """The one check that names are paging parameters: a ValueError naming those that are not (``where``: the
    setting that holds them)."""
    unknown = sorted(set(names) - set(TABLE))
    if unknown:
        raise ValueError(f"{where + ': ' if where else ''}unknown paging parameter(s) {unknown}; "
                         f"known: {', '.join(PARAMETERS)}")


def check_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """Every parameter checked as the pager would (None values left out), and the rules between those given:
    buffer_size in pages of page_size, evict_low_water below evict_high_water."""
    check_names(params)
    checked = {name: check_value(name, value) for name, value in params.items() if value is not None}
    if "buffer_size" in checked and "page_size" in checked:
        pages, page_size = checked["buffer_size"] // checked["page_size"], checked["page_size"]
        if not 2 <= pages <= PHYSICAL_PAGES * SYSTEM_PAGE // page_size:
            raise ValueError(f"buffer_size={format_size(checked['buffer_size'])}: {pages} pages of page_size="
                             f"{format_size(page_size)}; allowed: {_allowed(TABLE['buffer_size'])}")
    if LOW in checked and HIGH in checked and checked[LOW] >= checked[HIGH]:
        raise ValueError(f"{LOW}={checked[LOW]}: not below the high water mark; allowed: below {HIGH}={checked[HIGH]}")
    return checked


def format_size(nbytes: int) -> str:
    """The shortest exact form: 4096 -> "4KiB", 3<<20 -> "3MiB", 1000 -> "1000"."""
    for suffix, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale}{suffix}"
    return str(nbytes)


def system_page_size() -> int:
    return SYSTEM_PAGE


def to_environment(params: Mapping[str, Any]) -> dict[str, str]:
    """UMAP_* variables for `params` (checked: a ValueError names a bad one). buffer_size is in bytes here and
    becomes pages of page_size; without page_size, system pages, which the pager counts UMAP_BUFSIZE in when
    UMAP_PAGESIZE is not set (it keeps those bytes and chooses the page size for them)."""
    checked = check_params(params)
    page_size = checked.get("page_size", SYSTEM_PAGE)
    return {ENV_VARS[name]: str(value // page_size if name == "buffer_size" else value)
            for name, value in checked.items()}


SIZES = ("page_size", "buffer_size", "read_ahead_run")


def show(name: str, value: Any) -> str:
    """A parameter value for people: sizes as 64KiB."""
    return format_size(int(value)) if name in SIZES and value is not None else str(value)


def show_params(params: Mapping[str, Any]) -> str:
    """``name=value`` pairs; a parameter that is None is left to the pager, and not shown."""
    return " ".join(f"{name}={show(name, value)}" for name, value in params.items() if value is not None)


def parse_value(name: str, value: Any, where: str = "space") -> Any:
    """One value of a parameter, checked against what the pager accepts (``where``: the config section); a page
    size is also a power-of-two multiple of the system page, as the tuner searches them."""
    try:
        number = check_value(name, value)
    except ValueError as error:
        raise ConfigError(f"{where}.{error}") from None
    if name == "page_size" and (number // SYSTEM_PAGE) & (number // SYSTEM_PAGE - 1):
        raise ConfigError(
            f"{where}.page_size: {show(name, number)} is not a power-of-two multiple of the system page "
            f"({show(name, SYSTEM_PAGE)}): use {', '.join(show(name, SYSTEM_PAGE << k) for k in range(4))}, ...")
    return number
