"""A study's trials as the search reads them: the rows that ran, the incumbent, the noise of the defaults' runs,
what a strategy is told of a trial, and each trial's limits (its timeout and its cap).

Over the study's table (autopager.tuner.table), which the scheduler appends to; the search, the confirmation and
the summary read it here.
"""
from __future__ import annotations

import datetime
import math
import statistics
from typing import Any, Mapping

from autopager.run.settings import StudySettings
from autopager.run.workloads import Workload
from autopager.tuner.measuring import (NOISE_BAND, defaults_runs, mean_and_sem, measured_defaults, relative_noise,
                                       run_seconds, runs_of)
from autopager.tuner.space import Params
from autopager.tuner.table import Kind, Status, StudyTable, row_params

MEASURED = (Kind.DEFAULT, Kind.SEARCH)  # rows that are trials run by the search (not reused, not confirmation)


class Trials:
    def __init__(self, table: StudyTable, workload: Workload, settings: StudySettings):
        self.table, self.workload, self.settings = table, workload, settings
        self.goal = workload.goal

    @property
    def rows(self) -> list[dict[str, Any]]:
        return self.table.rows

    def searched(self) -> int:
        """The search's trials so far (run or answered from an earlier one): what its budget counts."""
        return sum(row["kind"] in (Kind.SEARCH, Kind.REUSED) for row in self.rows)

    def ok_rows(self, kind: Kind | None = None) -> list[dict[str, Any]]:
        return [row for row in self.rows if row["status"] is Status.OK and kind in (None, row["kind"])]

    def incumbent(self, other_than: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
        """The best trial measured so far (the defaults' runs included), confirmation runs aside."""
        rows = [row for row in self.ok_rows() if row["kind"] in MEASURED and row is not other_than]
        return self.goal.best(rows, key=lambda row: row["value"]) if rows else None

    def measured(self, params: Params) -> dict[str, Any] | None:
        """The first run trial (finished, ok or failed) with exactly these parameters."""
        return next((row for row in self.rows if row["kind"] in MEASURED and row_params(row) == params), None)

    def measured_defaults(self) -> dict[str, Any] | None:
        """The defaults' first trial that did not fail, if the study has it."""
        return measured_defaults(self.rows)

    def reference_checksum(self) -> str | None:
        """The checksum of the defaults' first run, which validated its answer in full: every later run (a search
        trial, the defaults again, a confirmation, the kernel's mmap) validates only its checksum, which must be
        this one. None until that run has ended, or if it printed none: then runs validate as they always do."""
        default = self.measured_defaults()
        return default["checksum"] if default else None

    def noise(self) -> float:
        """Relative run-to-run noise: the spread of the defaults' runs, else noise.assumed."""
        measured = relative_noise(defaults_runs(self.rows))
        return measured if measured is not None else self.settings.noise.assumed

    def within_noise(self, row: Mapping[str, Any]) -> bool:
        incumbent = self.incumbent(other_than=row)
        if row["status"] is not Status.OK or incumbent is None:
            return False
        return abs(row["value"] - incumbent["value"]) <= NOISE_BAND * self.noise() * abs(incumbent["value"])

    def told(self, row: Mapping[str, Any]) -> tuple[float | None, float | None]:
        """What a strategy is told of a trial: (value, standard error). Failed: (None, None). Capped: worse than the
        incumbent by the cap, so that no strategy takes a capped point for a good one."""
        if row["status"] is Status.OK:
            runs = runs_of(row)
            return mean_and_sem(runs) if len(runs) > 1 else (row["value"], None)
        incumbent, cap = self.incumbent(), self.settings.runner.cap
        if row["status"] is Status.CAPPED and incumbent is not None and cap is not None:
            return self.goal.worse_by(incumbent["value"], cap), None
        return None, None  # failed, or capped with nothing to compare (Ax substitutes the worst value seen)

    def defaults_value(self, default: Mapping[str, Any]) -> tuple[float, bool]:
        """The defaults' value (the median of their runs) and whether it is only a bound (their runs were capped
        at runner.defaults_timeout: then the wall time they ran is a lower bound of their time)."""
        runs = defaults_runs(self.rows)
        if runs:
            return statistics.median(runs), False
        return default["wall_seconds"], True

    def timeout(self, default: Mapping[str, Any] | None) -> float:
        """A trial's timeout, from a run of the defaults' first trial (``default``; None before it has run)."""
        return self.settings.runner.run_timeout(self.workload.timeout, None if default is None else run_seconds(default))

    def cap_seconds(self, reference: Mapping[str, Any] | None) -> float | None:
        """Where a run stops as capped: runner.cap x a run of ``reference`` (the incumbent), at least cap_floor."""
        runner = self.settings.runner
        if runner.cap is None or reference is None:
            return None
        return max(runner.cap_floor, runner.cap * run_seconds(reference))

    def tuning_seconds(self) -> float:
        """The time spent with a trial asked for or running: the union of the trials' spans (``seconds`` from
        ``started``), so that trials run at the same time on several nodes count once."""
        spans = sorted((start, start + row["seconds"]) for row in self.rows if row["seconds"] is not None
                       for start in [datetime.datetime.fromisoformat(row["started"]).timestamp()])
        total, covered = 0.0, -math.inf
        for start, end in spans:
            if end > covered:
                total += end - max(start, covered)
                covered = end
        return total
