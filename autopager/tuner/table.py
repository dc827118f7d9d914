"""The study table (``trials.csv``): one row a trial, written so a crash never damages it, checked row by row on load.

The table is rewritten whole after every trial: into a new temporary file in the study directory, synced, then
renamed over the old one (and the directory synced), so a crash at any instant leaves either the old table or the
new one. A table damaged some other way (a full disk under another tool, a hand edit, a copy cut short) is read
row by row: a row that is cut short, has an unknown kind or status, a number that is not one, no start time, or
no parameters for a trial other than the defaults is reported on stderr with its line and left out, never taken
for a trial;
the file as it was is kept next to the table (``trials.damaged-<time>.csv``) before it is first rewritten.
"""
from __future__ import annotations

import contextlib
import csv
import datetime
import enum
import io
import math
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterable, Mapping, TextIO

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


INTEGERS = ("trial", "exit_code", "reused_from", "confirms", "pager_page_size",
            *(name for name in PARAMETERS if name not in CATEGORIES))
NUMBERS = ("value", "wall_seconds", "seconds", "timeout", "ask_seconds", *STATS, "cgroup_peak_bytes")
ENUMS: dict[str, type[enum.Enum]] = {"kind": Kind, "status": Status}
REQUIRED = ("trial", "kind", "status", "value")
COLUMNS = ["trial", "kind", "status", "value", *PARAMETERS, "repeats", "wall_seconds", "seconds", "timeout",
           "exit_code", "error", "stderr_tail", "started", "ask_seconds", "proposed_by", "reused_from", "confirms",
           "measured_by", "checksum", *STATS, "cgroup_peak_bytes", "node", "run_started", "run_ended"]
RUNS_SEPARATOR = ";"
PROFILE = "profile"  # proposed_by of a confirmation run of the saved profile's parameters


class DamagedRow(ValueError):
    """Why a row of the table cannot be trusted."""


def row_params(row: Mapping[str, Any]) -> dict[str, Any]:
    return {name: row[name] for name in PARAMETERS if row.get(name) is not None}


def format_runs(values: Iterable[float]) -> str | None:
    return RUNS_SEPARATOR.join(repr(float(value)) for value in values) or None


def parse_runs(text: str | None) -> list[float]:
    return [float(part) for part in text.split(RUNS_SEPARATOR)] if text else []


def _integer(text: str) -> int:
    number = float(text)
    if not number.is_integer():
        raise ValueError(text)
    return int(number)


def parse_row(cells: Mapping[str, str]) -> dict[str, Any]:
    """A row of the table from its text cells; DamagedRow says what is wrong with it."""
    row: dict[str, Any] = {}
    for column in COLUMNS:
        text = (cells.get(column) or "").strip()
        if not text:
            row[column] = None
            continue
        try:
            if column in ENUMS:
                row[column] = ENUMS[column](text)
            elif column in INTEGERS:
                row[column] = _integer(text)
            elif column in NUMBERS:
                row[column] = float(text)
                if not math.isfinite(row[column]):
                    raise ValueError(text)
            else:
                row[column] = cells[column]
        except ValueError:
            raise DamagedRow(f"{column} is {text[:40]!r}") from None
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
        parse_runs(row["repeats"])
    except ValueError:
        raise DamagedRow(f"repeats is {row['repeats'][:40]!r}") from None
    if row["kind"] not in (Kind.DEFAULT, Kind.MMAP) and not row_params(row):
        raise DamagedRow("no parameters for a trial other than the defaults")
    return row


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, float):
        return repr(value)
    return str(value)


def write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` by a file holding ``text``: a crash at any instant leaves the old file or the new one."""
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "w", newline="") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


class StudyTable:
    """The trials of a study, read (and checked) from ``path`` if it exists, rewritten after each change."""

    def __init__(self, path: Path, report: TextIO | None = None):
        self.path = path
        self.report = report or sys.stderr
        self.damaged = False
        self.rows: list[dict[str, Any]] = self._read() if path.is_file() else []

    def _warn(self, text: str) -> None:
        print(f"autopager: {self.path}: {text}", file=self.report, flush=True)

    def _read(self) -> list[dict[str, Any]]:
        text = self.path.read_text(encoding="utf-8-sig", errors="replace")  # a spreadsheet's BOM is no header's
        if not text.strip():
            self._warn("the table is empty: the study starts afresh")
            return []
        reader = csv.reader(io.StringIO(text, newline=""))
        header = next(reader)
        missing = [column for column in REQUIRED if column not in header]
        if missing:
            self._warn(f"line 1: the header has no {', '.join(missing)} column: no row of it can be trusted")
            self._keep_damaged()
            return []
        records, start = [], reader.line_num + 1
        limit = csv.field_size_limit(len(text) + 1)  # a field as long as the file (an error's output) is read whole
        try:
            for cells in reader:
                records.append((start, reader.line_num, cells))
                start = reader.line_num + 1
        finally:
            csv.field_size_limit(limit)
        rows: list[dict[str, Any]] = []
        seen: set[int] = set()
        for number, (start, end, cells) in enumerate(records):
            try:
                if len(cells) != len(header):
                    raise DamagedRow(f"cut short: {len(cells)} of {len(header)} fields")
                if number == len(records) - 1 and not text.endswith("\n"):
                    raise DamagedRow("cut short: no end of line")
                row = parse_row(dict(zip(header, cells)))
                if row["trial"] in seen:
                    raise DamagedRow(f"trial {row['trial']} appears twice")
                if row["kind"] is Kind.REUSED and row["reused_from"] not in seen:
                    raise DamagedRow(f"reused from trial {row['reused_from']}, which is not an earlier trial")
            except DamagedRow as why:
                self._warn(f"{f'line {start}' if end == start else f'lines {start}-{end}'}: damaged row ignored: {why}")
                self.damaged = True
            else:
                seen.add(row["trial"])
                rows.append(row)
        if self.damaged:
            self._keep_damaged()
        return rows

    def _keep_damaged(self) -> None:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S.%f")
        copy = self.path.with_name(f"{self.path.stem}.damaged-{stamp}{self.path.suffix}")
        shutil.copyfile(self.path, copy)
        self._warn(f"the file as it was is kept as {copy.name}")

    def next_trial(self) -> int:
        return max((row["trial"] for row in self.rows), default=-1) + 1

    def append(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        self.write()

    def write(self) -> None:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(COLUMNS)
        for row in self.rows:
            writer.writerow([_cell(row.get(column)) for column in COLUMNS])
        write_atomically(self.path, buffer.getvalue())
