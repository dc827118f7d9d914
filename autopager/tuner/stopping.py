"""Stopping on a plateau (``budget.plateau``): a search ends once N search trials in a row brought no improvement
beyond the noise, with what is left of its budget unspent; the confirmation still runs.

A trial improves when it is better than the best trial before it (the defaults' first run included) by more than
the noise band (``measuring.NOISE_BAND`` standard deviations of the defaults' runs, the noise the study measures);
a failed or capped trial never improves, and an answered (``reused``) one counts as a trial, as the budget counts
it. Two kinds of trial may improve but are not counted when they do not: a rung of the buffer ladder
(autopager.tuner.buffer_ladder), slower below the largest buffer on purpose, and a trial of Ax's initial Sobol design,
which samples the space before any model has learned from it (counted, a plateau as long as the design ended Ax
studies on the scans after their Sobol trials, before the model proposed one: results/plateau-replay). ``auto`` (the default) is ``AUTO_TRIALS`` for the
strategies that search and off for those that enumerate a plan of their own (the grid, the page-size sweep: their
size is what the user asked for); a number N applies to every strategy; 0 or null is off.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Iterable

from autopager.errors import ConfigError
from autopager.run.goal import Goal
from autopager.tuner.buffer_ladder import LADDER
from autopager.tuner.measuring import NOISE_BAND
from autopager.tuner.strategies.ax import SOBOL
from autopager.tuner.trial import Kind, Status, Trial

AUTO = "auto"
AUTO_TRIALS = 10
ENUMERATING = ("grid", "pagesize", "default")  # strategies whose plan is their size: no plateau unless asked


def plateau_trials(setting: Any, strategy: str) -> int | None:
    """The trials without improvement that end the search (None: never), from ``budget.plateau``."""
    if setting == AUTO:
        return None if strategy in ENUMERATING else AUTO_TRIALS
    if setting is None or setting == 0:
        return None
    if isinstance(setting, bool) or not isinstance(setting, int) or setting < 0:
        raise ConfigError(f"budget.plateau must be a whole number >= 1, 0 or null (off), or {AUTO}, not {setting!r}")
    return setting


def trials_without_improvement(rows: Iterable[Trial], goal: Goal, noise: float) -> int:
    """How many search trials, in trial order, have ended since the last one that improved on the best before it
    by more than the noise band (all of them, if none has); the buffer ladder's rungs and Ax's Sobol trials only
    where they improve."""
    best: float | None = None
    since = 0
    for row in sorted(rows, key=lambda row: row.number):
        kind, ok = row.kind, row.status is Status.OK
        if kind is Kind.DEFAULT:
            if ok and best is None:
                best = row.value
            continue
        if kind not in (Kind.SEARCH, Kind.REUSED):
            continue
        if ok and (best is None or goal.better(row.value, best)
                   and abs(row.value - best) > NOISE_BAND * noise * abs(best)):
            best, since = row.value, 0
        else:
            if row.proposed_by not in (LADDER, SOBOL):
                since += 1
            if ok and goal.better(row.value, best):
                best = row.value  # better within the noise: the bar moves, the count goes on
    return since


@dataclasses.dataclass(frozen=True)
class Stop:
    """Why a search ended before its budget: shown in the progress and the summary."""
    reason: str
    searched: int
    budget: int | None

    def line(self) -> str:
        left = f"; {self.budget - self.searched} of its {self.budget} trials left unspent" if self.budget else ""
        return f"{self.reason} after {self.searched} search trials{left}"


def plateau_stop(rows: list[Trial], goal: Goal, noise: float, plateau: int | None, searched: int,
                 budget: int | None) -> Stop | None:
    """A Stop when the last ``plateau`` search trials improved nothing beyond the noise, else None."""
    if plateau is None:
        return None
    since = trials_without_improvement(rows, goal, noise)
    if since < plateau:
        return None
    return Stop(f"plateau: {since} trials in a row without an improvement beyond the noise "
                f"({NOISE_BAND:g} x +-{100 * noise:.1f}%, budget.plateau={plateau})", searched, budget)
