"""From a measurement to a row of the study table, and what a study reads back from its rows: a trial's runs,
their mean and standard error, the run-to-run noise, the incumbent's time.

``trial_row`` is the one place a finished measurement becomes a row, whoever ran it (the study loop now, a launcher
with several trials in flight later); ``add_runs`` appends the runs of a trial measured again to its row.
"""
from __future__ import annotations

import dataclasses
import datetime
import math
import statistics
import time
from typing import Any, Iterable, Mapping

from autopager.parameters import PARAMETERS
from autopager.run.pagerstats import COLUMNS as STATS
from autopager.run.runner import Measurement
from autopager.tuner.space import Params
from autopager.tuner.table import Kind, Status, format_runs, parse_runs


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


def trial_row(trial: int, kind: Kind, params: Params, result: Measurement, limit: float,
              proposal: Proposal, confirms: int | None = None) -> dict[str, Any]:
    """The table's row of a finished measurement; ``seconds`` counts from when the trial was asked for. A defaults'
    run that leaves the page size to the pager records the one it chose, as the point strategies are told of."""
    stats = result.pager_stats or {}
    chosen = {"page_size": stats.get("pager_page_size")} if kind is Kind.DEFAULT and "page_size" not in params else {}
    return {
        "trial": trial, "kind": kind, "status": status_of(result), "value": result.value,
        **{name: params.get(name) for name in PARAMETERS}, **chosen,
        "repeats": format_runs(result.values), "wall_seconds": result.wall_seconds,
        "seconds": time.perf_counter() - proposal.begin, "timeout": limit, "exit_code": result.exit_code,
        "error": result.error or None, "stderr_tail": result.stderr_tail or None, "started": proposal.started,
        "ask_seconds": proposal.ask_seconds, "proposed_by": proposal.proposed_by, "reused_from": None,
        "confirms": confirms, "measured_by": result.measured_by, "checksum": result.checksum,
        **{name: stats.get(name) for name in STATS}, "cgroup_peak_bytes": result.cgroup_peak_bytes,
    }


def add_runs(row: dict[str, Any], result: Measurement) -> None:
    """Append the runs of a trial measured again to its row: the value becomes the median of all its runs; a run
    that failed or was capped makes the whole trial so."""
    runs = runs_of(row) + result.values
    row["repeats"] = format_runs(runs)
    row["wall_seconds"] = (row["wall_seconds"] or 0.0) + result.wall_seconds
    # the trial's span (its share of the tuning time) runs to the end of its last run
    row["seconds"] = (datetime.datetime.now(datetime.timezone.utc)
                      - datetime.datetime.fromisoformat(row["started"])).total_seconds()
    if result.ok:
        row["value"] = statistics.median(runs)
        row.update({name: (result.pager_stats or {}).get(name, row.get(name)) for name in STATS})
        if result.cgroup_peak_bytes is not None:
            row["cgroup_peak_bytes"] = max(result.cgroup_peak_bytes, row.get("cgroup_peak_bytes") or 0)
    else:
        row.update(status=status_of(result), value=None, exit_code=result.exit_code,
                   error=f"run {len(runs) + 1} (measured again): {result.error}",
                   stderr_tail=result.stderr_tail or None)


def measured_defaults(rows: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The defaults' first trial that did not fail: the study's reference, the one its confirmation confirms."""
    return next((row for row in rows if row["kind"] is Kind.DEFAULT and row["status"] is not Status.FAILED), None)


def runs_of(row: Mapping[str, Any]) -> list[float]:
    return parse_runs(row.get("repeats"))


def defaults_runs(rows: Iterable[Mapping[str, Any]]) -> list[float]:
    """The runs of the defaults' trials that succeeded (the first and those that measure the noise): the study's
    one figure for the defaults during the search is their median (the progress lines, the summary, the report);
    the confirmed speedup compares the defaults' confirmation runs instead."""
    return [value for row in rows if row["kind"] is Kind.DEFAULT and row["status"] is Status.OK
            for value in runs_of(row)]


def run_seconds(row: Mapping[str, Any]) -> float:
    """Wall seconds of one run of a trial."""
    return (row["wall_seconds"] or 0.0) / max(1, len(runs_of(row)))


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


def spread(values: list[float]) -> tuple[float, float]:
    return min(values), max(values)
