"""Capped trials, noise-aware measurement and confirmation, on the synthetic workload (whose cost is known)."""
import re
import sys

import pandas as pd
import pytest
import yaml

from autopager.analysis.result import load_study
from autopager.cli.main import main
from autopager.parameters import format_size
from tests.helpers import autopager_process

# every parameter at the synthetic optimum but the page size: 256KiB is the optimum, 1GiB costs 22.6 times as much
AT_OPTIMUM = ["workload=synthetic", "workload.size=200", "workload.buffer_size=16GiB", "runner.page_cache=evict",
              "baseline.fillers=4", "baseline.evictors=2", "baseline.evict_high_water=80",
              "baseline.evict_low_water=50", "baseline.read_ahead=4", "baseline.max_fault_events=2",
              "strategy=pagesize", "space.page_size={values:[256KiB,1GiB]}"]


def test_a_trial_that_would_take_20x_the_incumbent_costs_at_most_cap_x(tuner_home, capsys):
    assert main(["tune", *AT_OPTIMUM, "runner.cap=2", "runner.cap_floor=0", "confirm.rounds=0"]) == 0
    table = pd.read_csv("outputs/synthetic/pagesize-size200-buf16GiB/trials.csv").set_index("page_size")
    incumbent, slow = table.loc[256 << 10], table.loc[1 << 30]
    assert incumbent.status == "ok" and slow.status == "capped" and pd.isna(slow.value)
    bound = 2 * incumbent.wall_seconds / len(str(incumbent.repeats).split(";"))
    assert slow.timeout == pytest.approx(bound)          # the cap: 2x a run of the incumbent
    assert slow.wall_seconds < bound + 1.0               # stopped there (the kill's latency aside), not 22x on
    assert "capped after" in slow.error
    out = capsys.readouterr().out
    assert "1 capped" in out and "page_size=256KiB" in out.split("best measured:")[1]
    capped_line = next(line for line in out.splitlines() if "page_size=1GiB" in line and "best" in line)
    assert re.match(r"\[ *\d+(/\d+)?\] capped after [0-9.]+ s \(slower than the cap allows\) ", capped_line), out
    assert "FAILED" not in out  # capped: worse than the best, not failed
    process = autopager_process("report", "outputs/synthetic/pagesize-size200-buf16GiB")
    report_out, err = process.communicate(timeout=600)
    assert process.returncode == 0, report_out + err
    text = open("outputs/synthetic/pagesize-size200-buf16GiB/report/report.md").read()
    assert "0 failed, 1 capped" in text, text  # a capped trial is no failure


def test_a_capped_defaults_run_gives_a_speedup_of_at_least(tuner_home, capsys):
    assert main(["tune", *AT_OPTIMUM[:-2], "baseline.page_size=1GiB", "strategy=pagesize",
                 "space.page_size={values:[256KiB,1GiB]}", "runner.defaults_timeout=0.5", "confirm.rounds=0"]) == 0
    table = pd.read_csv("outputs/synthetic/pagesize-size200-buf16GiB/trials.csv")
    assert table.status[0] == "capped" and table.kind[0] == "default"
    assert "speedup over defaults:    at least " in capsys.readouterr().out


def test_confirmation_measures_the_defaults_and_the_best_in_rounds_and_saves_the_winner(tuner_home, capsys):
    args = ["workload=synthetic", "workload.size=2", "runner.page_cache=evict", "strategy=random",
            "strategy.trials=6", "confirm.rounds=3", "confirm.candidates=2", "noise.defaults_every=3"]
    assert main(["tune", *args]) == 0
    table = pd.read_csv("outputs/synthetic/random-size2-buf64MiB/trials.csv")
    confirm = table[table.kind == "confirm"]
    best_two = table[table.kind == "search"].nsmallest(2, "value").trial
    assert sorted(confirm.confirms.unique()) == sorted([0, *best_two])  # the defaults (trial 0) and the best two
    assert (confirm.groupby("confirms").size() == 3).all()
    assert list(confirm.confirms.iloc[:3]) != list(confirm.confirms.iloc[3:6])  # interleaved, order turned
    assert list(table.kind[:5]) == ["default", "search", "search", "search", "default"]  # again, for the noise
    assert table.faults.notna().all() and (table.faults > 0).all()  # the pager's statistics of every run
    profile = yaml.safe_load(next((tuner_home / "profiles" / "synthetic").glob("*.yaml")).read_text())
    winner = table.loc[table.trial == best_two.iloc[0]].iloc[0]
    assert profile["confirmed"] and profile["runs"] == 3 and profile["value"] == pytest.approx(winner.value)
    out = capsys.readouterr().out
    assert "confirmed speedup:" in out and "saved (confirmed)" in out
    # the defaults' confirmation runs show as the defaults, with the page sizes their pager chose
    for run in confirm[confirm.confirms == 0].itertuples():
        writable, read_only = int(run.pager_page_size), int(run.pager_read_only_page_size)
        shown = (f"defaults, pages of {format_size(writable)}" if read_only == writable else
                 f"defaults, pages of {format_size(read_only)} read-only and {format_size(writable)} writable")
        assert re.search(rf"^\[ *{run.trial}\] .*  {shown}$", out, re.M), out
    assert "None" not in out
    # read back from the table (the evaluation's figures), the confirmation is the one the tuner printed
    confirmed = load_study("outputs/synthetic/random-size2-buf64MiB").confirmed()
    printed = re.search(r"trial (\d+): .*\n.*confirmed speedup: +([0-9.]+)x \(per round ([0-9.]+)-([0-9.]+)x", out)
    assert printed and (str(confirmed["trial"]), *(f"{confirmed[k]:.2f}" for k in ("speedup", "low", "high"))) == \
        printed.groups()
    assert len(confirmed["values"]) == len(confirmed["default_values"]) == 3

    # an existing profile is kept unless a confirmed improvement beyond the noise beats it
    capsys.readouterr()
    assert main(["tune", *args, "study.name=again", "strategy.trials=2", "seed=5"]) == 0
    out = capsys.readouterr().out
    again = pd.read_csv("outputs/synthetic/again/trials.csv")
    assert (again.proposed_by == "profile").sum() == 3  # the saved profile's parameters confirmed beside the rest
    kept = yaml.safe_load(next((tuner_home / "profiles" / "synthetic").glob("*.yaml")).read_text())
    if "kept:" in out:
        assert kept == profile
    else:
        assert "saved (confirmed)" in out and kept["value"] < profile["value"]


def test_a_program_that_does_not_use_the_pager_stops_after_the_defaults(tuner_home, capsys):
    command = f"workload.command='{sys.executable} -c \"import time; time.sleep(0.01)\"'"
    assert main(["tune", "workload=command", command, "runner.page_cache=keep", "strategy=random",
                 "strategy.trials=5"]) == 1
    assert "printed no pager statistics" in capsys.readouterr().err
    assert len(pd.read_csv("outputs/command/random/trials.csv")) == 1


def test_a_trial_within_the_noise_of_the_incumbent_is_measured_again(tuner_home):
    # 512KiB costs 1.15 times the optimum (256KiB): within 2 x 20% assumed noise, so measured again, to 3 runs
    assert main(["tune", *AT_OPTIMUM[:-1], "space.page_size={values:[256KiB,512KiB]}", "workload.size=5",
                 "noise.assumed=0.2", "noise.max_runs=3", "confirm.rounds=0", "noise.defaults_runs=1"]) == 0
    table = pd.read_csv("outputs/synthetic/pagesize-size5-buf16GiB/trials.csv").set_index("page_size")
    assert len(str(table.repeats[256 << 10]).split(";")) == 1    # far from the defaults: one run decides
    runs = [float(v) for v in str(table.repeats[512 << 10]).split(";")]
    assert len(runs) == 3 and table.value[512 << 10] == pytest.approx(sorted(runs)[1])
    # its share of the tuning time spans all three runs
    assert table.seconds[512 << 10] >= table.wall_seconds[512 << 10] >= sum(runs)


def test_strategies_are_told_a_capped_trial_is_worse_than_the_incumbent(tuner_home):
    from autopager.tuner.config import compose
    from autopager.tuner.study import Study
    from autopager.tuner.table import StudyTable
    from autopager.tuner.trial import Kind, Status, Trial
    from autopager.tuner.trials import Trials

    for goal, worse in (("minimize", lambda told, best: told > best), ("maximize", lambda told, best: told < best)):
        config, _ = compose([*AT_OPTIMUM, f"workload.goal={goal}", "runner.cap=3"])
        study = Study(config)
        trials = Trials(StudyTable(tuner_home / f"{goal}.csv"), study.workload, study.settings)
        params = {"page_size": 256 << 10}
        trials.table.rows = [Trial(0, Kind.DEFAULT, Status.OK, 2.0, params, runs=(2.0,), wall_seconds=2.0),
                             Trial(1, Kind.SEARCH, Status.CAPPED, None, params, wall_seconds=0.4)]
        told, sem = trials.told(trials.rows[1])
        assert worse(told, 2.0) and told == pytest.approx(6.0 if goal == "minimize" else 2.0 / 3) and sem is None


def test_the_table_read_back_names_the_winner_the_tuner_confirmed_even_the_saved_profile(tuner_home, capsys):
    """The saved profile's parameters (256KiB pages, the optimum) are confirmed beside a later study's best trial
    (4MiB pages) and win: the study's table, read back, names that winner, as the tuner did."""
    args = [*AT_OPTIMUM[:-1], "workload.size=2", "confirm.rounds=2", "confirm.candidates=1"]
    assert main(["tune", *args, "space.page_size={values:[256KiB,1GiB]}", "study.name=first"]) == 0
    assert "saved (confirmed)" in capsys.readouterr().out
    assert main(["tune", *args, "space.page_size={values:[4MiB,1GiB]}", "study.name=second"]) == 0
    out = capsys.readouterr().out
    assert "confirmed best:" in out and ", profile: " in out and "kept: the saved profile's parameters" in out
    confirmed = load_study("outputs/synthetic/second").confirmed()
    assert confirmed["trial"] is None and confirmed["params"]["page_size"] == 256 << 10
    printed = re.search(r"confirmed speedup: +([0-9.]+)x \(per round ([0-9.]+)-([0-9.]+)x", out)
    assert printed and tuple(f"{confirmed[k]:.2f}" for k in ("speedup", "low", "high")) == printed.groups()
