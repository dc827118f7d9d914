"""A finished (or partial) study read back from its directory: the trials table and what the figures need.

Used by the evaluation's figures and plots and by the analysis notebook (notebooks/study_analysis.ipynb).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from autopager.params import PARAMETERS
from autopager.study import CONFIG, TABLE


@dataclass
class StudyResult:
    directory: Path
    config: dict[str, Any]
    trials: pd.DataFrame

    @property
    def metric(self) -> str:
        return self.config["workload"]["metric"]

    @property
    def goal(self) -> str:
        return self.config["workload"]["goal"]

    @property
    def strategy(self) -> str:
        return self.config["strategy"]["name"]

    @property
    def searched(self) -> list[str]:
        """The parameters the trials varied."""
        return [name for name in PARAMETERS if self.trials[name].nunique(dropna=True) > 1]

    def ok(self) -> pd.DataFrame:
        return self.trials[self.trials.status == "ok"]

    def failed(self) -> int:
        return int((self.trials.status != "ok").sum())

    def better(self, a: float, b: float) -> bool:
        return a < b if self.goal == "minimize" else a > b

    def best(self) -> pd.Series | None:
        ok = self.ok()
        if ok.empty:
            return None
        return ok.loc[ok.value.idxmin() if self.goal == "minimize" else ok.value.idxmax()]

    def best_params(self) -> dict[str, int] | None:
        best = self.best()
        if best is None:
            return None
        return {name: int(best[name]) for name in PARAMETERS if pd.notna(best[name])}

    def default_values(self) -> list[float]:
        """The defaults' run(s) that start the study (for a fixed-parameter study: those parameters)."""
        rows = self.trials[(self.trials.kind == "default") & (self.trials.status == "ok")]
        return [float(v) for v in rows["repeats"].astype(str).str.split(";").explode()] if len(rows) else []

    def tuning_seconds(self) -> float:
        """The trials' time (runs, page-cache drops): what the tuner reports."""
        return float(self.trials.seconds.fillna(0).sum())

    def elapsed(self) -> pd.Series:
        """Seconds from the study's first trial start to the end of each trial, the strategy's own time
        (Ax's model fits) included. A resumed study also counts the time it was stopped. A trial starts when
        it is asked for (tables written before the tuner kept milliseconds start at whole seconds, after the
        ask: their ends are kept in order)."""
        started = pd.to_datetime(self.trials.started, utc=True, format="ISO8601")
        return ((started - started.min()).dt.total_seconds() + self.trials.seconds.fillna(0)).cummax()

    def wall_seconds(self) -> float:
        return float(self.elapsed().max()) if len(self.trials) else 0.0

    def best_so_far(self) -> pd.DataFrame:
        """One row a trial: its end (elapsed seconds), the trial's value and the best value up to it."""
        values = self.trials.value.where(self.trials.status == "ok")
        best = values.cummin() if self.goal == "minimize" else values.cummax()
        return pd.DataFrame({"trial": self.trials.trial, "elapsed": self.elapsed(), "value": values,
                             "best": best})

    def time_to_best(self) -> float | None:
        """Elapsed seconds until the best trial had finished."""
        best = self.best()
        return None if best is None else float(self.elapsed().loc[best.name])


def load_study(directory: Path | str) -> StudyResult | None:
    """The study in ``directory``, or None if it has no trials yet."""
    directory = Path(directory)
    if not (directory / TABLE).is_file() or not (directory / CONFIG).is_file():
        return None
    trials = pd.read_csv(directory / TABLE, dtype={"repeats": str, "error": str, "stderr_tail": str})
    if trials.empty:
        return None
    return StudyResult(directory, yaml.safe_load((directory / CONFIG).read_text()), trials)
