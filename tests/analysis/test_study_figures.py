"""The figures a study prints, writes and reports agree, and say what they are, through the real command: a study
of a workload whose runs drift (tests/workloads/drifting.py), so that the defaults' second run differs from their
first, one confirmation round of the winner is slower than the defaults', and one confirmation run is better than
any trial; then `autopager report` on it."""
from __future__ import annotations

import re
import sys

import pandas as pd
import pytest

from tests.helpers import TEST_WORKLOADS, autopager_process

# the Nth run's factor: the defaults' second run (2) slower; in the confirmation the winner's second round (6, run
# before the defaults' 7) slower than the defaults, its third (9) better than any trial
FACTORS = "1:1:1.2:1:1:1:1.5:1:1:0.5"


def autopager(*args: str, cwd=None) -> tuple[int, str, str]:
    process = autopager_process(*args, cwd=cwd)
    out, err = process.communicate(timeout=600)
    return process.returncode, out, err


def drifting_study(home, name: str = "drift", *extra: str) -> tuple[str, pd.DataFrame]:
    data = home / "data.bin"
    data.write_bytes(bytes(1 << 20))
    command = (f"workload.command='{sys.executable} {TEST_WORKLOADS / 'drifting.py'} {home / (name + '.count')} "
               f"{FACTORS} --data {data}'")
    code, out, err = autopager("tune", "workload=command", "workload.name=drifting", command,
                               f"workload.data_files={data}", "workload.buffer_size=1MiB", "strategy=random",
                               "budget.trials=2", "noise.defaults_runs=2", "noise.defaults_every=1", "noise.max_runs=1",
                               "confirm.candidates=1", "runner.page_cache=keep", f"study.name={name}", *extra)
    assert code == 0, out + err
    return out, pd.read_csv(home / "outputs" / "drifting" / name / "trials.csv")


@pytest.fixture
def drifted(tuner_home):
    out, table = drifting_study(tuner_home)
    assert list(table.kind) == ["default", "search", "default", "search"] + ["confirm"] * 6, table
    return tuner_home, out, table


def test_progress_summary_and_report_give_one_defaults_figure(drifted):
    home, out, table = drifted
    defaults = table[table.kind == "default"].value
    assert defaults.iloc[0] != defaults.iloc[1]
    median = defaults.median()
    trials = table[table.kind.isin(["default", "search"])]
    best = trials.loc[trials.value.idxmin()]
    figure = f"{median / best.value:.2f}x"
    last_line = [line for line in out.splitlines() if line.startswith("[")][-1]
    assert f"({figure} the defaults)" in last_line, last_line
    assert re.search(rf"speedup over defaults: +{re.escape(figure)} \(defaults: {median:.4g} seconds, median of 2 "
                     r"runs during the search\)", out), out
    code, report_out, err = autopager("report", str(home / "outputs" / "drifting" / "drift"))
    assert code == 0, report_out + err
    text = (home / "outputs" / "drifting" / "drift" / "report" / "report.md").read_text()
    assert f"The defaults: {median:.4g} seconds (the median of their 2 runs during the search)" in text
    assert f"{figure} the defaults." in text


def test_the_report_ranks_trials_and_names_the_confirmed_winner_as_the_summary_does(drifted):
    home, out, table = drifted
    confirm = table[table.kind == "confirm"]
    trials = table[table.kind.isin(["default", "search"])]
    assert confirm.value.min() < trials.value.min()  # a lucky confirmation run, which is no trial
    code, report_out, err = autopager("report", str(home / "outputs" / "drifting" / "drift"))
    assert code == 0, report_out + err  # the defaults' confirmation rows (no page size) do not crash it
    text = (home / "outputs" / "drifting" / "drift" / "report" / "report.md").read_text()
    best = trials.loc[trials.value.idxmin()]
    assert f"the best trial ({best.trial})" in text
    ranked = [int(line.split("|")[1]) for line in text.splitlines() if re.match(r"\| \d+ \|", line)]
    assert set(ranked) <= set(trials.trial) and ranked[0] == best.trial, ranked
    winner = int(confirm[confirm.confirms != 0].confirms.iloc[0])  # trial 0: the defaults
    speedup = re.search(r"confirmed speedup: +([0-9.]+)x \(per round ([0-9.]+)-([0-9.]+)x", out).groups()
    assert re.search(rf"confirmed best: .*trial {winner}:", out)
    assert (f"The confirmed winner: trial {winner}, " in text
            and f"{speedup[0]}x the defaults' confirmation runs (per round {speedup[1]}-{speedup[2]}x)" in text), text
    assert "; trials: 2/2 searched; 2 runs of the defaults, 6 confirmation runs; 0 failed, 0 capped;" in text


def test_a_profile_confirmed_on_the_median_with_a_slower_round_says_so(drifted):
    home, out, table = drifted
    profile = re.search(r"^profile: +(.*)$", out, re.M).group(1)
    assert "saved (confirmed)" not in profile
    assert re.match(r"saved, confirmed on the median only \(1 of 3 rounds no better than the defaults: "
                    r"0\.83-2\.50x\): ", profile), profile


def test_counters_keep_their_total_and_the_summary_warns_of_read_amplification(drifted):
    home, out, table = drifted
    totals = set(re.findall(r"^\[ *\d+/(\d+)\]", out, re.M))
    assert totals == {"3"}, out  # two trials and the defaults' two runs, numbered from 0
    assert re.search(r"^read amplification: +4 of 4 trials read 4x or more of the 1MiB of data \(up to 10\.0x; "
                     r"the best trial \d+ read 10\.0x\): pages too large or buffer too small for random access$",
                     out, re.M), out


def test_medians_and_assumed_noise_are_labelled(tuner_home):
    code, out, err = autopager("tune", "workload=synthetic", "workload.size=1", "runner.page_cache=keep",
                               "strategy=random", "budget.trials=1", "runner.repeats=2", "noise.defaults_runs=1",
                               "confirm.rounds=0")
    assert code == 0, out + err
    results = [line for line in out.splitlines() if re.match(r"\[ *\d+(/\d+)?\] [0-9]", line)]
    assert results and all(" seconds (median of 2)" in line for line in results), out
    assert re.search(r"^noise: +\+-0\.0% a run \(the spread of the defaults' 2 runs\)$", out, re.M), out
    code, out, err = autopager("tune", "workload=synthetic", "workload.size=1", "runner.page_cache=keep",
                               "strategy=random", "budget.trials=1", "noise.defaults_runs=1", "confirm.rounds=0")
    assert code == 0, out + err
    assert re.search(r"^noise: +\+-5\.0% a run, assumed \(noise\.assumed\): the defaults ran once$", out, re.M), out
