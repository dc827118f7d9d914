"""Stopping on a plateau (budget.plateau): real small studies of the synthetic workload through the CLI, and the
plateau's count on the rows of a real study's table."""
import json

import pandas as pd
import pytest

from autopager.cli.main import main
from autopager.errors import ConfigError
from autopager.run.goal import Goal
from autopager.tuner.stopping import AUTO_TRIALS, plateau_trials, trials_without_improvement
from autopager.tuner.table import StudyTable
from autopager.tuner.trial import Kind, Status, Trial

COMMON = ["workload=synthetic", "workload.size=1", "runner.page_cache=evict", "noise.defaults_runs=1",
          "baseline.fillers=2", "baseline.evictors=2", "baseline.max_fault_events=2",
          "space.fillers={min:1,max:8,factor:2}", "space.evictors={min:1,max:8,factor:2}", "space.evict_retain=0",
          "space.eviction=fifo", "strategy=random", "strategy.trials=30"]
STUDY = "outputs/synthetic/random-size1-buf64MiB"


def test_a_plateau_ends_the_search_early_and_the_summary_says_why(tuner_home, capsys):
    assert main(["tune", *COMMON, "budget.plateau=3", "confirm.rounds=1", "confirm.candidates=1"]) == 0
    table = pd.read_csv(f"{STUDY}/trials.csv")
    searched = table[table.kind.isin(["search", "reused"])]
    assert 3 <= len(searched) < 30
    out = capsys.readouterr().out
    stopped = next(line for line in out.splitlines() if line.startswith("stopped:"))
    assert "plateau: 3 trials in a row" in stopped
    assert f"{30 - len(searched)} of its 30 trials left unspent" in stopped
    assert "the search stops: plateau" in out
    assert (table.kind == "confirm").sum() == 2  # the defaults and the best: confirmed as without the plateau
    assert "confirmed speedup" in out
    summary = json.loads((tuner_home / STUDY / "summary.json").read_text())
    assert summary["stopped"] == stopped.split(":", 1)[1].strip() and summary["state"] == "finished"

    rows = StudyTable(tuner_home / STUDY / "trials.csv").rows
    search_rows = [row for row in rows if row.kind != "confirm"]
    assert trials_without_improvement(search_rows, Goal.MINIMIZE, 0.05) == 3
    assert trials_without_improvement(search_rows[:-1], Goal.MINIMIZE, 0.05) == 2


def test_ax_sobol_trials_count_only_when_they_improve():
    # the defaults at 10 s, then Ax's Sobol design and its model's trials, none better than the defaults
    rows = [Trial(0, Kind.DEFAULT, Status.OK, 10.0, runs=(10.0,))]
    rows += [Trial(number, Kind.SEARCH, Status.OK, 11.0, proposed_by="Sobol") for number in range(1, 10)]
    assert trials_without_improvement(rows, Goal.MINIMIZE, 0.05) == 0
    rows += [Trial(number, Kind.SEARCH, Status.OK, 11.0, proposed_by="MBM") for number in range(10, 13)]
    assert trials_without_improvement(rows, Goal.MINIMIZE, 0.05) == 3
    # a Sobol trial that improves still resets the count
    improving = [rows[0], Trial(1, Kind.SEARCH, Status.OK, 11.0, proposed_by="MBM"),
                 Trial(2, Kind.SEARCH, Status.OK, 5.0, proposed_by="Sobol"),
                 Trial(3, Kind.SEARCH, Status.OK, 6.0, proposed_by="MBM")]
    assert trials_without_improvement(improving, Goal.MINIMIZE, 0.05) == 1


def test_plateau_off_runs_the_whole_budget(tuner_home, capsys):
    assert main(["tune", *COMMON, "budget.plateau=0", "confirm.rounds=0"]) == 0
    table = pd.read_csv(f"{STUDY}/trials.csv")
    assert (table.kind == "search").sum() + (table.kind == "reused").sum() == 30
    assert "stopped:" not in capsys.readouterr().out
    assert json.loads((tuner_home / STUDY / "summary.json").read_text())["stopped"] is None


def test_plateau_setting():
    assert plateau_trials("auto", "ax") == AUTO_TRIALS and plateau_trials("auto", "grid") is None
    assert plateau_trials(4, "grid") == 4 and plateau_trials(0, "ax") is None and plateau_trials(None, "ax") is None
    with pytest.raises(ConfigError, match="budget.plateau must be"):
        plateau_trials("soon", "ax")


def test_a_bad_plateau_is_refused_naming_the_setting(tuner_home, capsys):
    assert main(["tune", *COMMON, "budget.plateau=-2"]) == 2
    assert "budget.plateau must be" in capsys.readouterr().err
