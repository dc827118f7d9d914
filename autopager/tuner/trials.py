"""A study's trials as the search reads them: the rows that ran, the incumbent, the noise of the defaults' runs,
what a strategy is told of a trial, and each trial's limits (its timeout and its cap).

Over the study's table (autopager.tuner.table), which the scheduler appends to; the search, the confirmation and
the summary read it here.
"""
from __future__ import annotations

import datetime
import math
import statistics

from autopager.run.settings import StudySettings
from autopager.run.workloads import Workload
from autopager.tuner.measuring import NOISE_BAND, defaults_runs, mean_and_sem, measured_defaults, relative_noise
from autopager.tuner.space import Params
from autopager.tuner.table import StudyTable
from autopager.tuner.trial import Kind, Status, Trial

MEASURED = (Kind.DEFAULT, Kind.SEARCH)  # trials run by the search (not reused, not confirmation)


class Trials:
    def __init__(self, table: StudyTable, workload: Workload, settings: StudySettings):
        self.table, self.workload, self.settings = table, workload, settings
        self.goal = workload.goal

    @property
    def rows(self) -> list[Trial]:
        return self.table.rows

    def searched(self) -> int:
        """The search's trials so far (run or answered from an earlier one): what its budget counts."""
        return sum(trial.kind in (Kind.SEARCH, Kind.REUSED) for trial in self.rows)

    def ok_rows(self, kind: Kind | None = None) -> list[Trial]:
        return [trial for trial in self.rows if trial.ok and kind in (None, trial.kind)]

    def incumbent(self, other_than: Trial | None = None) -> Trial | None:
        """The best trial measured so far (the defaults' runs included), confirmation runs aside."""
        other = None if other_than is None else other_than.number
        trials = [trial for trial in self.ok_rows() if trial.kind in MEASURED and trial.number != other]
        return self.goal.best(trials, key=lambda trial: trial.value) if trials else None

    def cap_reference(self, params: Params, default: Trial | None, by_buffer: bool) -> Trial | None:
        """The run a search trial of ``params`` is capped against: the incumbent, else the defaults' run. Where memory
        is weighed (``by_buffer``), the best trial with no larger a buffer, else none: a trial capped so is beaten in
        time and in memory by that one, and so is never a point of the front."""
        if not by_buffer:
            return self.incumbent() or default
        buffer = params.get("buffer_size")
        within = [trial for trial in self.ok_rows() if trial.kind in MEASURED and buffer is not None
                  and trial.params.get("buffer_size", math.inf) <= buffer]
        return self.goal.best(within, key=lambda trial: trial.value) if within else None

    def measured(self, params: Params) -> Trial | None:
        """The first run trial (finished, ok or failed) with exactly these parameters."""
        return next((trial for trial in self.rows if trial.kind in MEASURED and trial.params == params), None)

    def measured_defaults(self) -> Trial | None:
        """The defaults' first trial that did not fail, if the study has it."""
        return measured_defaults(self.rows)

    def reference_checksum(self) -> str | None:
        """The checksum of the defaults' first run, which validated its answer in full: every later run (a search
        trial, the defaults again, a confirmation, the kernel's mmap) validates only its checksum, which must be
        this one. None until that run has ended, or if it printed none: then runs validate as they always do."""
        default = self.measured_defaults()
        return default.checksum if default else None

    def noise(self) -> float:
        """Relative run-to-run noise: the spread of the defaults' runs, else noise.assumed."""
        measured = relative_noise(defaults_runs(self.rows))
        return measured if measured is not None else self.settings.noise.assumed

    def within_noise(self, trial: Trial) -> bool:
        incumbent = self.incumbent(other_than=trial)
        if not trial.ok or incumbent is None:
            return False
        return abs(trial.value - incumbent.value) <= NOISE_BAND * self.noise() * abs(incumbent.value)

    def told(self, trial: Trial) -> tuple[float | None, float | None]:
        """What a strategy is told of a trial: (value, standard error). Failed: (None, None). Capped: worse than the
        incumbent by the cap, so that no strategy takes a capped point for a good one."""
        if trial.ok:
            return mean_and_sem(list(trial.runs)) if len(trial.runs) > 1 else (trial.value, None)
        incumbent, cap = self.incumbent(), self.settings.runner.cap
        if trial.status is Status.CAPPED and incumbent is not None and cap is not None:
            return self.goal.worse_by(incumbent.value, cap), None
        return None, None  # failed, or capped with nothing to compare (Ax substitutes the worst value seen)

    def defaults_value(self, default: Trial) -> tuple[float, bool]:
        """The defaults' value (the median of their runs) and whether it is only a bound (their runs were capped
        at runner.defaults_timeout: then the wall time they ran is a lower bound of their time)."""
        runs = defaults_runs(self.rows)
        if runs:
            return statistics.median(runs), False
        return default.wall_seconds, True

    def timeout(self, default: Trial | None) -> float:
        """A trial's timeout, from a run of the defaults' first trial (``default``; None before it has run)."""
        return self.settings.runner.run_timeout(self.workload.timeout, None if default is None else default.run_seconds)

    def cap_seconds(self, reference: Trial | None) -> float | None:
        """Where a run stops as capped: runner.cap x a run of ``reference`` (the incumbent), at least cap_floor."""
        runner = self.settings.runner
        if runner.cap is None or reference is None:
            return None
        return max(runner.cap_floor, runner.cap * reference.run_seconds)

    def tuning_seconds(self) -> float:
        """The time spent with a trial asked for or running: the union of the trials' spans (``seconds`` from
        ``started``), so that trials run at the same time on several nodes count once."""
        spans = sorted((start, start + trial.seconds) for trial in self.rows if trial.seconds is not None
                       for start in [datetime.datetime.fromisoformat(trial.started).timestamp()])
        total, covered = 0.0, -math.inf
        for start, end in spans:
            if end > covered:
                total += end - max(start, covered)
                covered = end
        return total
