"""A trial as the study records it: why it ran (Kind), how it ended (Status), its parameters, runs and figures,
and its row form in the study table (``trials.csv``, autopager.tuner.table).

A ``Trial`` is frozen: a trial measured once more, or told where it ran, is a new Trial that replaces the old one
in the table (``dataclasses.replace``). ``Trial.from_row`` is the one reader of a row's text cells, ``to_row`` the
one writer; ``columns`` gives the typed cells by column, for a DataFrame (autopager.analysis.result).
"""
from __future__ import annotations

import dataclasses
import enum
import math
from typing import Any, Iterable, Mapping

from autopager.parameters import CATEGORIES, PARAMETERS
from autopager.run.pagerstats import COLUMNS as STATS


class Status(str, enum.Enum):
    """How a trial ended."""
    OK = "ok"                # measured in full
    FAILED = "failed"        # crashed, timed out, printed no result: no value
    CAPPED = "capped"        # stopped at runner.cap x the incumbent's time: worse than the incumbent

    def __str__(self) -> str:
        return self.value


class Kind(str, enum.Enum):
    """Why a trial was run."""
    DEFAULT = "default"      # the defaults' run (the first, and the later ones that measure the noise)
    SEARCH = "search"        # proposed by the strategy
    REUSED = "reused"        # proposed again: answered from trial ``reused_from``, not run
    CONFIRM = "confirm"      # a confirmation run of trial ``confirms`` at the end of the study
    MMAP = "mmap"            # the kernel's mmap (baseline.mmap): no parameters, no trial

    def __str__(self) -> str:
        return self.value


PROFILE = "profile"  # proposed_by of a confirmation run of the saved profile's parameters
RUNS_SEPARATOR = ";"
COLUMNS = ["trial", "kind", "status", "value", *PARAMETERS, "repeats", "wall_seconds", "seconds", "timeout",
           "exit_code", "error", "stderr_tail", "started", "ask_seconds", "proposed_by", "reused_from", "confirms",
           "measured_by", "checksum", *STATS, "cgroup_peak_bytes", "node", "run_started", "run_ended"]
REQUIRED = ("trial", "kind", "status", "value")  # a header without them has no row to trust
_INTEGERS = ("trial", "exit_code", "reused_from", "confirms", "pager_page_size", "pager_read_only_page_size",
             *(name for name in PARAMETERS if name not in CATEGORIES))
_NUMBERS = ("value", "wall_seconds", "seconds", "timeout", "ask_seconds", *STATS, "cgroup_peak_bytes")
NUMERIC = tuple(dict.fromkeys((*_INTEGERS, *_NUMBERS)))  # the columns that hold numbers
_ENUMS: dict[str, type[enum.Enum]] = {"kind": Kind, "status": Status}
# the columns that are a field of their own name (the others: trial -> number, repeats -> runs, params, stats)
_FIELDS = ("kind", "status", "value", "wall_seconds", "seconds", "timeout", "exit_code", "error", "stderr_tail",
           "started", "ask_seconds", "proposed_by", "reused_from", "confirms", "measured_by", "checksum",
           "cgroup_peak_bytes", "node", "run_started", "run_ended")


class DamagedRow(ValueError):
    """Why a row of the table cannot be trusted."""


def format_runs(values: Iterable[float]) -> str | None:
    return RUNS_SEPARATOR.join(repr(float(value)) for value in values) or None


def parse_runs(text: str | None) -> tuple[float, ...]:
    return tuple(float(part) for part in text.split(RUNS_SEPARATOR)) if text else ()


@dataclasses.dataclass(frozen=True)
class Trial:
    number: int                         # the table's ``trial``: its order of recording
    kind: Kind
    status: Status
    value: float | None = None          # the median of its runs (None: failed or capped)
    params: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # those it set (the others: the pager's)
    runs: tuple[float, ...] = ()        # each run's figure (``repeats``)
    wall_seconds: float | None = None   # of its runs
    seconds: float | None = None        # from when it was asked for to its end: its share of the tuning time
    timeout: float | None = None
    exit_code: int | None = None
    error: str | None = None
    stderr_tail: str | None = None
    started: str | None = None          # when it was asked for (ISO 8601)
    ask_seconds: float | None = None    # the strategy's time to propose it
    proposed_by: str | None = None
    reused_from: int | None = None      # a reused trial's source
    confirms: int | None = None         # the trial a confirmation run confirms
    measured_by: str | None = None
    checksum: str | None = None         # of its answer, as the workload printed it
    stats: Mapping[str, float] = dataclasses.field(default_factory=dict)  # the pager's (autopager.run.pagerstats)
    cgroup_peak_bytes: float | None = None  # the most its runs' memory cgroup held (runner.memory_limit)
    node: str | None = None             # where it ran, and when its run started and ended there
    run_started: str | None = None
    run_ended: str | None = None

    @property
    def ok(self) -> bool:
        return self.status is Status.OK

    @property
    def values(self) -> tuple[float, ...]:
        """Its runs' figures; its value alone from a table that kept no runs."""
        return self.runs or (() if self.value is None else (self.value,))

    @property
    def run_seconds(self) -> float:
        """Wall seconds of one of its runs."""
        return (self.wall_seconds or 0.0) / max(1, len(self.runs))

    def columns(self) -> dict[str, Any]:
        """Its cells by the table's columns, typed (None where the row's cell is empty; kinds and statuses as text)."""
        cells = {name: getattr(self, name) for name in _FIELDS}
        cells.update(trial=self.number, kind=self.kind.value, status=self.status.value,
                     repeats=format_runs(self.runs))
        cells.update({name: self.params.get(name) for name in PARAMETERS})
        cells.update({name: self.stats.get(name) for name in STATS})
        return {column: cells[column] for column in COLUMNS}

    def to_row(self) -> list[str]:
        """Its row of the table, the cells in the order of COLUMNS."""
        return [_text(value) for value in self.columns().values()]

    @classmethod
    def from_row(cls, cells: Mapping[str, str]) -> "Trial":
        """A trial from its row's text cells (by column; a column the row lacks is empty); DamagedRow says what is
        wrong with it."""
        row = {column: _parsed(column, (cells.get(column) or "").strip(), cells) for column in COLUMNS}
        missing = [column for column in ("trial", "kind", "status") if row[column] is None]
        if missing:
            raise DamagedRow(f"no {', '.join(missing)}")
        if row["started"] is None:  # every row the tuner writes has it, in every table since the first
            raise DamagedRow("no started time")
        if row["status"] is Status.OK and row["value"] is None:
            raise DamagedRow("status ok without a value")
        if row["kind"] is Kind.CONFIRM and row["confirms"] is None and row["proposed_by"] != PROFILE:
            raise DamagedRow("a confirmation run of no trial")
        try:
            runs = parse_runs(row["repeats"])
        except ValueError:
            raise DamagedRow(f"repeats is {row['repeats'][:40]!r}") from None
        params = {name: row[name] for name in PARAMETERS if row[name] is not None}
        if row["kind"] not in (Kind.DEFAULT, Kind.MMAP) and not params:
            raise DamagedRow("no parameters for a trial other than the defaults")
        return cls(number=row["trial"], runs=runs, params=params,
                   stats={name: row[name] for name in STATS if row[name] is not None},
                   **{name: row[name] for name in _FIELDS})


def _integer(text: str) -> int:
    number = float(text)
    if not number.is_integer():
        raise ValueError(text)
    return int(number)


def _parsed(column: str, text: str, cells: Mapping[str, str]) -> Any:
    if not text:
        return None
    try:
        if column in _ENUMS:
            return _ENUMS[column](text)
        if column in _INTEGERS:
            return _integer(text)
        if column in _NUMBERS:
            number = float(text)
            if not math.isfinite(number):
                raise ValueError(text)
            return number
        return cells[column]
    except ValueError:
        raise DamagedRow(f"{column} is {text[:40]!r}") from None


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return str(value)
