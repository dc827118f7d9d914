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
import io
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Callable, TextIO

from autopager.tuner.trial import COLUMNS, REQUIRED, DamagedRow, Kind, Trial


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


def read_text(path: Path) -> str:
    return path.read_text(encoding="utf-8-sig", errors="replace")  # a spreadsheet's BOM is no header's


def read_trials(text: str, warn: Callable[[str], None]) -> tuple[list[Trial], bool]:
    """The trials of a table's ``text``, and whether it is damaged: each damaged row, or a header that lacks a
    required column, is told to ``warn`` with its line and left out."""
    if not text.strip():
        return [], False
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader)
    missing = [column for column in REQUIRED if column not in header]
    if missing:
        warn(f"line 1: the header has no {', '.join(missing)} column: no row of it can be trusted")
        return [], True
    records, start = [], reader.line_num + 1
    limit = csv.field_size_limit(len(text) + 1)  # a field as long as the file (an error's output) is read whole
    try:
        for cells in reader:
            records.append((start, reader.line_num, cells))
            start = reader.line_num + 1
    finally:
        csv.field_size_limit(limit)
    trials: list[Trial] = []
    seen: set[int] = set()
    damaged = False
    for number, (start, end, cells) in enumerate(records):
        try:
            if len(cells) != len(header):
                raise DamagedRow(f"cut short: {len(cells)} of {len(header)} fields")
            if number == len(records) - 1 and not text.endswith("\n"):
                raise DamagedRow("cut short: no end of line")
            trial = Trial.from_row(dict(zip(header, cells)))
            if trial.number in seen:
                raise DamagedRow(f"trial {trial.number} appears twice")
            if trial.kind is Kind.REUSED and trial.reused_from not in seen:
                raise DamagedRow(f"reused from trial {trial.reused_from}, which is not an earlier trial")
        except DamagedRow as why:
            warn(f"{f'line {start}' if end == start else f'lines {start}-{end}'}: damaged row ignored: {why}")
            damaged = True
        else:
            seen.add(trial.number)
            trials.append(trial)
    return trials, damaged


class StudyTable:
    """The trials of a study, read (and checked) from ``path`` if it exists, rewritten after each change."""

    def __init__(self, path: Path, report: TextIO | None = None):
        self.path = path
        self.report = report or sys.stderr
        self.rows: list[Trial] = self._read() if path.is_file() else []

    def _warn(self, text: str) -> None:
        print(f"autopager: {self.path}: {text}", file=self.report, flush=True)

    def _read(self) -> list[Trial]:
        text = read_text(self.path)
        if not text.strip():
            self._warn("the table is empty: the study starts afresh")
            return []
        trials, damaged = read_trials(text, self._warn)
        if damaged:
            self._keep_damaged()
        return trials

    def _keep_damaged(self) -> None:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S.%f")
        copy = self.path.with_name(f"{self.path.stem}.damaged-{stamp}{self.path.suffix}")
        shutil.copyfile(self.path, copy)
        self._warn(f"the file as it was is kept as {copy.name}")

    def next_trial(self) -> int:
        return max((trial.number for trial in self.rows), default=-1) + 1

    def trial(self, number: int) -> Trial:
        return next(trial for trial in self.rows if trial.number == number)

    def append(self, trial: Trial) -> None:
        self.rows.append(trial)
        self.write()

    def replace(self, trial: Trial) -> None:
        """Put ``trial`` in place of the recorded trial of its number (measured again, or told where it ran)."""
        self.rows = [trial if row.number == trial.number else row for row in self.rows]
        self.write()

    def write(self) -> None:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(COLUMNS)
        for trial in self.rows:
            writer.writerow(trial.to_row())
        write_atomically(self.path, buffer.getvalue())
