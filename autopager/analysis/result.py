"""A study read back from its directory, for its analysis: the report (``autopager report``), the notebook
(notebooks/study_analysis.ipynb) and the evaluation (experiments/evaluation/).

``load_study(DIR)`` reads ``trials.csv`` (through the tuner's reader, autopager.tuner.table: a damaged row is
reported and left out) and ``config.yaml`` of any study, finished or not. Its trials (autopager.tuner.trial.Trial)
are the result; ``table`` is the same trials as a DataFrame, one column a table column, for the plots. The trials ranked
(``best``, ``ok``) are the rows the search measured, of kinds ``default`` and ``search``, by their recorded
figure (``reused`` rows repeat one of them); a row of kind ``confirm`` is one confirmation run, whose outcome is
``confirmed`` (the tuner's own verdict, autopager.tuner.confirmation.outcome); a row of kind ``mmap`` is the
kernel-mmap baseline (``baseline.mmap=true``), never a trial. The defaults' figure is the median of the runs of
the ``default`` rows (autopager.tuner.measuring.defaults_runs), as the tuner's progress and summary give it. Each row keeps its runs (``repeats``: the values of its runs, ``;``
separated), from which the spread of a trial with several runs is taken. Parameter importance comes from Ax's own
sensitivity analysis (Sobol indices of its model) when the study saved Ax's state (``ax_client.json``), else from
the trials table alone (the share of the variance of log(metric) explained by each parameter's value).
"""
from __future__ import annotations

import functools
import logging
import statistics
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from autopager.errors import ConfigError
from autopager.parameters import PARAMETERS
from autopager.run.goal import Goal
from autopager.run.memory_limit import pager_memory
from autopager.run.workloads import Workload
from autopager.tuner.confirmation import outcome, recorded_candidates
from autopager.tuner.measuring import defaults_runs, measured_defaults
from autopager.tuner.memory_front import Objective
from autopager.tuner.strategies.ax import LOW_SHARE, MODEL, STATE, quiet_ax
from autopager.tuner.study_directory import CONFIG, TABLE
from autopager.tuner.table import read_text, read_trials
from autopager.tuner.trial import COLUMNS, NUMERIC, Kind, Status, Trial
from autopager.tuner.trials import MEASURED


# Between two trials the tuner only writes its table (milliseconds): a longer gap with no trial asked for or
# running is a study stopped and resumed later.
STOPPED_SECONDS = 60.0


@dataclass
class StudyResult:
    directory: Path
    config: dict[str, Any]
    recorded: list[Trial]  # every trial, the kernel-mmap baseline's included

    @functools.cached_property
    def table(self) -> pd.DataFrame:
        """The recorded trials by the table's columns (NaN where a cell is empty; kinds and statuses as text)."""
        frame = pd.DataFrame([trial.columns() for trial in self.recorded], columns=COLUMNS)
        numeric = [column for column in NUMERIC if column in frame]
        frame[numeric] = frame[numeric].apply(pd.to_numeric)
        return frame

    @property
    def trials(self) -> pd.DataFrame:
        """The trials, without the kernel-mmap row (with several workers, search trials started beside the defaults'
        first run may come before it)."""
        return self.table[self.table.kind != Kind.MMAP.value]

    def of_kind(self, *kinds: Kind) -> list[Trial]:
        return [trial for trial in self.recorded if trial.kind in kinds]

    def rows_of(self, *kinds: Kind) -> pd.DataFrame:
        return self.table[self.table.kind.isin([kind.value for kind in kinds])]

    @property
    def confirm_rounds(self) -> int:
        return int((self.config.get("confirm") or {}).get("rounds", 0))

    @property
    def objective(self) -> Objective:
        """What the study optimized (its space was checked when it ran)."""
        return Objective.from_config(self.config, ["buffer_size"])

    @property
    def workload(self) -> dict[str, Any]:
        return self.config["workload"]

    @property
    def metric(self) -> str:
        return self.workload["metric"]

    @property
    def goal(self) -> str:
        return self.workload["goal"]

    @property
    def strategy(self) -> str:
        return self.config["strategy"]["name"]

    @property
    def searched(self) -> list[str]:
        """The parameters the trials varied."""
        return [name for name in PARAMETERS if self.trials[name].nunique(dropna=True) > 1]

    @property
    def measured(self) -> list[Trial]:
        """The trials the search measured (the defaults' and the strategy's), without reused or confirmation runs."""
        return self.of_kind(*MEASURED)

    @property
    def searched_rows(self) -> pd.DataFrame:
        """The rows of the search, the reused ones included: what happened before the confirmation."""
        return self.rows_of(*MEASURED, Kind.REUSED)

    def ok(self) -> list[Trial]:
        return [trial for trial in self.measured if trial.ok]

    def failed(self) -> int:
        """The trials that failed (crashed, timed out, a wrong answer); a capped run is no failure."""
        return sum(trial.status is Status.FAILED and trial.kind is not Kind.MMAP for trial in self.recorded)

    def capped(self) -> int:
        """The trials stopped at runner.cap x the incumbent's time: worse than the incumbent, not failed."""
        return sum(trial.status is Status.CAPPED and trial.kind is not Kind.MMAP for trial in self.recorded)

    def better(self, a: float, b: float) -> bool:
        return a < b if self.goal == "minimize" else a > b

    def speedup(self, value: float, reference: float) -> float:
        return Goal.parse(self.goal).speedup(value, reference)

    def best(self) -> Trial | None:
        """The best trial the search measured, by its recorded figure."""
        ok = self.ok()
        return Goal.parse(self.goal).best(ok, key=lambda trial: trial.value) if ok else None

    def best_params(self) -> dict[str, Any] | None:
        best = self.best()
        return None if best is None else dict(best.params)

    def default_params(self) -> dict[str, Any]:
        """The parameters of the defaults' first run, as it records them (a table written before a parameter
        existed has no column for it)."""
        return dict(self.of_kind(Kind.DEFAULT)[0].params)

    def default_value(self) -> float:
        """The defaults' figure: the median of the runs of the defaults' trials (NaN if none succeeded)."""
        values = defaults_runs(self.recorded)
        return statistics.median(values) if values else float("nan")

    def default_trials(self) -> list[Trial]:
        """The defaults' trials that start the study and succeeded (for a fixed-parameter study: those parameters)."""
        return [trial for trial in self.of_kind(Kind.DEFAULT) if trial.ok]

    def default_values(self) -> list[float]:
        """The values of the runs of ``default_trials``."""
        return defaults_runs(self.recorded)

    def confirmed(self) -> dict[str, Any] | None:
        """The tuner's confirmation as recorded (rows of kind ``confirm``), its winner chosen as the tuner chooses it
        (autopager.tuner.confirmation.outcome; for time against memory the chosen point): the speedup is the winner's median over the defaults' confirmation runs,
        with the spread of the per-round ratios. None when the study has no complete confirmation."""
        reference = measured_defaults(self.recorded)
        if reference is None:
            return None
        candidates = recorded_candidates(self.recorded)
        defaults = candidates.pop(reference.number, None)
        rounds, goal = self.confirm_rounds, Goal.parse(self.goal)
        named = self.objective.confirmed_winner(self.recorded, goal)
        winner, speedup_, spread = outcome(goal, defaults, candidates.values(), rounds, named)
        if winner is None or speedup_ is None or spread is None:
            return None
        return {"trial": winner.trial, "values": winner.values, "value": winner.median,
                "default_values": defaults.values, "speedup": speedup_, "low": spread[0], "high": spread[1],
                "params": winner.params}

    def unconfirmed(self) -> str | None:
        """Why a search study has no confirmed figure, in plain words: cut short (a timeout, Ctrl-C, a session that
        ended) before or during its confirmation, or a confirmation that found none. None when it has one, or is
        not to be confirmed (the ``default`` strategy, or confirm.rounds=0). Running the study again resumes it."""
        rounds = self.confirm_rounds
        if self.strategy == "default" or rounds == 0 or self.confirmed() is not None:
            return None
        searched = self.of_kind(Kind.SEARCH)
        trials = f"{len(searched)} trial{'' if len(searched) == 1 else 's'}"
        if not any(trial.ok for trial in searched):
            return f"not confirmed: none of its {trials} succeeded"
        candidates = recorded_candidates(self.recorded).values()
        if not candidates:
            return f"interrupted after {trials}, not confirmed"
        if any(not c.failed and len(c.values) < rounds for c in candidates):
            runs = sum(len(c.values) for c in candidates)
            return f"interrupted after {trials}, during its confirmation ({runs} runs done), not confirmed"
        return f"not confirmed: its confirmation after {trials} had no winner (a run failed or was capped)"

    def tuning_seconds(self) -> float:
        """The trials' time (runs, page-cache drops): what the tuner reports."""
        return float(self.trials.seconds.fillna(0).sum())

    def elapsed(self) -> pd.Series:
        """Seconds from the study's first trial start to the end of each trial, the strategy's own time
        (Ax's model fits) included, the time a resumed study was stopped not: a gap of more than
        ``STOPPED_SECONDS`` with no trial asked for or running. A trial starts when it is asked for (tables
        written before the tuner kept milliseconds start at whole seconds, after the ask: their ends are kept in
        order, and their gaps of up to a second are kept)."""
        started = self.started()
        seconds = self.trials.seconds.fillna(0)
        ends = started + pd.to_timedelta(seconds, unit="s")
        gaps = (started - ends.cummax().shift()).dt.total_seconds().fillna(0)
        stopped = gaps.where(gaps > STOPPED_SECONDS, 0).cumsum()
        return ((started - started.min()).dt.total_seconds() - stopped + seconds).cummax()

    def started(self) -> pd.Series:
        return pd.to_datetime(self.trials.started, utc=True, format="ISO8601")

    def wall_seconds(self) -> float:
        return float(self.elapsed().max()) if len(self.trials) else 0.0

    def best_so_far(self) -> pd.DataFrame:
        """One row a trial: its end (elapsed seconds), its value, the spread of its runs (low, high: the least
        and greatest run; equal to the value for a single run), the number of runs and the best value up to it."""
        rows = self.searched_rows
        ok = rows.status == Status.OK.value
        values = rows.value.where(ok)
        best = values.cummin() if self.goal == "minimize" else values.cummax()
        spread = [self.recorded[index].values if self.recorded[index].ok else () for index in rows.index]
        return pd.DataFrame({"trial": rows.trial, "elapsed": self.elapsed().loc[rows.index], "value": values,
                             "low": [min(r) if r else np.nan for r in spread],
                             "high": [max(r) if r else np.nan for r in spread],
                             "runs": [len(r) for r in spread], "best": best,
                             "proposed_by": rows.proposed_by}, index=rows.index)

    def time_to_best(self) -> float | None:
        """Elapsed seconds until the best trial had finished."""
        best = self.best()
        return None if best is None else float(self.elapsed()[self.trials.trial == best.number].iloc[0])

    def model_start(self) -> tuple[int, float] | None:
        """(trial, elapsed seconds at its ask) of the first trial Ax's model proposed: the end of its Sobol
        initialization. None for other strategies, or before the model took over."""
        first = self.trials.index[self.trials.proposed_by.astype(str) == MODEL]
        if not len(first):
            return None
        started = self.started()
        return int(self.trials.trial.loc[first[0]]), float((started.loc[first[0]] - started.min()).total_seconds())

    def kernel_mmap(self) -> Trial | None:
        """The kernel-mmap baseline (``baseline.mmap=true``), if the study measured it."""
        measured = self.of_kind(Kind.MMAP)
        return measured[-1] if measured else None

    def memory_limit(self) -> int | None:
        """The memory cgroup's limit of the kernel-mmap runs: the pager's memory, from the study's settings."""
        try:
            workload = Workload.from_config(self.workload, self.config.get("data_dir", "."))
            return pager_memory(workload, (self.config.get("runner") or {}).get("memory_headroom"))
        except ConfigError:
            return None


def load_study(directory: Path | str) -> StudyResult | None:
    """The study in ``directory``, or None if it has no trials yet; a damaged row is reported on stderr."""
    directory = Path(directory)
    path = directory / TABLE
    if not path.is_file() or not (directory / CONFIG).is_file():
        return None
    trials, _ = read_trials(read_text(path), lambda text: print(f"autopager: {path}: {text}", file=sys.stderr))
    if not trials:
        return None
    return StudyResult(directory, yaml.safe_load((directory / CONFIG).read_text()), trials)


def trial_importance(study: StudyResult) -> pd.DataFrame:
    """Each searched parameter's main effect, from the trials alone: the share of the variance of log(metric)
    explained by the mean at each of the parameter's values. Rough with few trials and noisy runs."""
    data = study.rows_of(*MEASURED)
    data = data[(data.status == Status.OK.value) & (data.value > 0)]
    data = data.assign(log_metric=np.log(data.value))
    total = ((data.log_metric - data.log_metric.mean()) ** 2).sum()
    shares = {}
    for name in study.searched:
        explained = data.groupby(name).log_metric.transform("mean")
        shares[name] = 1 - ((data.log_metric - explained) ** 2).sum() / total if total > 0 else 0.0
    frame = pd.DataFrame({"parameter": list(shares), "importance": list(shares.values())})
    return frame.sort_values("importance", ascending=False, ignore_index=True)


def one_per_choice(frame: pd.DataFrame) -> pd.DataFrame:
    """Ax's model sees an unordered choice (eviction) as one 0/1 input a value (``eviction_OH_PARAM_0``, ...): one
    row for the parameter, the sum of their indices' sizes (a choice has no direction to sign it by)."""
    choice = frame.parameter.str.extract(r"^(.+)_OH_PARAM_\d+$")[0]
    if choice.isna().all():
        return frame
    merged = frame[choice.notna()].groupby(choice[choice.notna()]).sensitivity.apply(lambda s: s.abs().sum())
    return pd.concat([frame[choice.isna()], merged.rename_axis("parameter").reset_index()], ignore_index=True)


def ax_importance(study: StudyResult) -> tuple[pd.DataFrame | None, str]:
    """Ax's sensitivity analysis of its model, from the saved state: (a frame of parameter and total-order Sobol
    index, signed by the direction in which the metric moves as the parameter grows; or None, and why not)."""
    path = study.directory / STATE
    if not path.is_file():
        return None, "the study saved no Ax state (it is not an Ax study, or it has not finished)"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quiet_ax()
        from ax import Client
        from ax.analysis.plotly.sensitivity import SensitivityAnalysisPlot
        logging.getLogger("ax").setLevel(logging.ERROR)
        try:
            client = Client.load_from_json_file(str(path))
        except Exception as error:  # a damaged or foreign file: reported, never trusted
            return None, f"Ax's state {path} cannot be read: {type(error).__name__}: {error}"
        cards = client.compute_analyses([SensitivityAnalysisPlot(order="total", top_k=None)], display=False)
    for card in (leaf for card in cards for leaf in card.flatten()):
        frame = getattr(card, "df", None)
        if frame is not None and {"parameter_name", "sensitivity"} <= set(frame.columns):
            frame = frame.rename(columns={"parameter_name": "parameter"})[["parameter", "sensitivity"]]
            frame["parameter"] = frame.parameter.replace({LOW_SHARE: "evict_low_water"})
            frame = one_per_choice(frame)
            order = frame.sensitivity.abs().sort_values(ascending=False).index
            return frame.loc[order].reset_index(drop=True), ""
    reasons = "; ".join(str(getattr(card, "subtitle", "") or card.title).splitlines()[0]
                        for card in (leaf for card in cards for leaf in card.flatten()))
    return None, f"Ax's sensitivity analysis is not available: {reasons or 'no result'}"
