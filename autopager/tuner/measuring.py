"""From a measurement to a trial of the study table, and what a study reads back from its trials: the defaults'
runs, their mean and standard error, the run-to-run noise.

``measured_trial`` is the one place a finished measurement becomes a trial, whoever ran it (the study loop, a launcher
with several trials in flight); ``add_runs`` gives the trial measured again, with the runs added.
"""
from __future__ import annotations

import dataclasses
import datetime
import math
import statistics
import time
from typing import Iterable

from autopager.run.pagerstats import COLUMNS as STATS
from autopager.run.runner import Measurement
from autopager.tuner.space import Params
from autopager.tuner.trial import Kind, Status, Trial


NOISE_BAND = 2.0  # a difference within this many standard deviations of the noise is not a difference


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")


@dataclasses.dataclass(frozen=True)
class Proposal:
    """When a trial was asked for (wall clock and perf_counter), how long the strategy took, and what proposed it."""
    started: str
    begin: float
    ask_seconds: float = 0.0
    proposed_by: str | None = None

    @classmethod
    def starting(cls, proposed_by: str | None = None) -> "Proposal":
        return cls(now(), time.perf_counter(), proposed_by=proposed_by)


def status_of(result: Measurement) -> Status:
    return Status.OK if result.ok else Status.CAPPED if result.capped else Status.FAILED


def measured_trial(trial: int, kind: Kind, params: Params, result: Measurement, limit: float,
              proposal: Proposal, confirms: int | None = None) -> Trial:
    """The trial of a finished measurement; ``seconds`` counts from when the trial was asked for. A defaults' run
    that leaves the page size to the pager records the one it chose, as the point strategies are told of, where
    that was every region's: a pager that chose by region (a read-only region's page smaller than a writable one's)
    ran no point of the page-size dimension, and a search trial of its writable page is measured on its own."""
    stats = {name: value for name, value in (result.pager_stats or {}).items() if name in STATS and value is not None}
    uniform = stats.get("pager_read_only_page_size") in (None, stats.get("pager_page_size"))
    chosen = ({"page_size": stats.get("pager_page_size")}
              if kind is Kind.DEFAULT and "page_size" not in params and uniform else {})
    return Trial(
        number=trial, kind=kind, status=status_of(result), value=result.value,
        params={name: value for name, value in {**params, **chosen}.items() if value is not None},
        runs=tuple(result.values), wall_seconds=result.wall_seconds,
        seconds=time.perf_counter() - proposal.begin, timeout=limit, exit_code=result.exit_code,
        error=result.error or None, stderr_tail=result.stderr_tail or None, started=proposal.started,
        ask_seconds=proposal.ask_seconds, proposed_by=proposal.proposed_by, confirms=confirms,
        measured_by=result.measured_by, checksum=result.checksum, stats=stats,
        cgroup_peak_bytes=result.cgroup_peak_bytes)


def add_runs(trial: Trial, result: Measurement) -> Trial:
    """The trial measured again, with the runs of ``result`` after its own: the value becomes the median of all its
    runs; a run that failed or was capped makes the whole trial so."""
    runs = (*trial.runs, *result.values)
    # the trial's span (its share of the tuning time) runs to the end of its last run
    seconds = (datetime.datetime.now(datetime.timezone.utc)
               - datetime.datetime.fromisoformat(trial.started)).total_seconds()
    measured = dataclasses.replace(trial, runs=runs, wall_seconds=(trial.wall_seconds or 0.0) + result.wall_seconds,
                                   seconds=seconds)
    if result.ok:
        stats = {**trial.stats, **{name: value for name, value in (result.pager_stats or {}).items()
                                   if name in STATS and value is not None}}
        peak = max(filter(None, (result.cgroup_peak_bytes, trial.cgroup_peak_bytes)), default=None)
        return dataclasses.replace(measured, value=statistics.median(runs), stats=stats, cgroup_peak_bytes=peak)
    return dataclasses.replace(measured, status=status_of(result), value=None, exit_code=result.exit_code,
                               error=f"run {len(runs) + 1} (measured again): {result.error}",
                               stderr_tail=result.stderr_tail or None)


def measured_defaults(trials: Iterable[Trial]) -> Trial | None:
    """The defaults' first trial that did not fail: the study's reference, the one its confirmation confirms."""
    return next((trial for trial in trials if trial.kind is Kind.DEFAULT and trial.status is not Status.FAILED), None)


def defaults_runs(trials: Iterable[Trial]) -> list[float]:
    """The runs of the defaults' trials that succeeded (the first and those that measure the noise): the study's
    one figure for the defaults during the search is their median (the progress lines, the summary, the report);
    the confirmed speedup compares the defaults' confirmation runs instead."""
    return [value for trial in trials if trial.kind is Kind.DEFAULT and trial.ok for value in trial.runs]


def mean_and_sem(values: list[float]) -> tuple[float, float | None]:
    """The mean of the runs and its standard error (None with a single run: unknown)."""
    mean = statistics.fmean(values)
    return mean, (statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else None)


def relative_noise(values: Iterable[float]) -> float | None:
    """Run-to-run noise of repeated runs of one configuration: standard deviation over mean; None below two runs."""
    values = list(values)
    if len(values) < 2 or statistics.fmean(values) == 0:
        return None
    return statistics.stdev(values) / abs(statistics.fmean(values))
