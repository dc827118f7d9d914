"""What a person sees while a study runs, through the real command: a line while Ax loads, a line when each
trial starts in a log, the elapsed time of the running trial on a terminal, the plan and its estimate (a grid's
size; a grid cut short samples the whole grid), the time the user waited, and "study complete" on resume."""
import os
import pty
import re
import subprocess
import sys

import pandas as pd

from tests.helpers import autopager_process

QUICK = ["workload=synthetic", "workload.size=1", "runner.page_cache=keep"]


def autopager(*args: str) -> tuple[int, str, str]:
    process = autopager_process(*args)
    out, err = process.communicate(timeout=300)
    return process.returncode, out, err


def test_a_log_has_each_trial_start_the_plan_and_the_time_waited(tuner_home):
    code, out, err = autopager("tune", *QUICK, "strategy=random", "strategy.trials=2")
    assert code == 0, err
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("[  1/2] running  page_size="))
    assert lines[start + 1].startswith("[  1/2] ") and "seconds" in lines[start + 1]
    assert any(line.startswith("[  0] running  ") for line in lines)  # the defaults
    assert re.search(r"^2 of 2 trials to run: about \d+ s at the defaults' time a trial$", out, re.M), out
    waited, in_trials = map(float, re.search(r"tuning time: +([\d.]+) s this session.*\(([\d.]+) s in", out).groups())
    assert waited >= in_trials > 0

    code, out, err = autopager("tune", *QUICK, "strategy=random", "strategy.trials=2")
    assert code == 0 and "study complete" in out and "running" not in out, out


def test_a_trial_keeps_its_number_and_total_from_start_to_result_when_the_defaults_run_again(tuner_home):
    code, out, err = autopager("tune", *QUICK, "strategy=random", "strategy.trials=4", "noise.defaults_every=1")
    assert code == 0, err
    lines = out.splitlines()
    starts = [i for i, line in enumerate(lines) if " running  " in line]
    assert len(starts) >= 6, out  # the defaults three times, four trials
    for i in starts:
        counter = lines[i].split(" running  ")[0]
        assert lines[i + 1].startswith(counter + " "), (lines[i], lines[i + 1])
    assert "/6] running" in out, out  # the last search trial: 4 trials after the defaults' 3 runs, numbered from 0


def test_a_line_while_ax_loads(tuner_home):
    code, out, err = autopager("tune", *QUICK, "strategy=ax", "budget.trials=1")
    assert code == 0, err
    assert out.index("loading Ax and PyTorch") < out.index("[  1/1] running")


def test_a_grid_shows_its_size_and_a_cut_grid_samples_all_of_it(tuner_home):
    code, out, err = autopager("tune", *QUICK, "strategy=grid", "space=small", "budget.trials=6")
    assert code == 0, err
    size = int(re.search(r"the grid has ([\d,]+) points", out).group(1).replace(",", ""))
    assert size > 100 and f"6 of 6 trials to run, drawn evenly from the grid's {size:,}" in out
    table = pd.read_csv("outputs/synthetic/grid-small-size1-buf64MiB/trials.csv")
    searched = table[table.kind == "search"]
    varied = [name for name in ("page_size", "fillers", "evictors", "evict_high_water", "evict_low_water")
              if searched[name].nunique() > 1]
    assert len(varied) >= 3, searched


def test_a_terminal_shows_the_running_trial_with_its_elapsed_time(tuner_home):
    leader, follower = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "autopager.cli.main", "tune", *QUICK, "strategy=default"],
                               stdout=follower, stderr=subprocess.PIPE, text=True)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the other end closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert process.wait(timeout=300) == 0, process.stderr.read()
    screen = b"".join(chunks).decode()
    assert re.search(r"\r\x1b\[K\[  0\] running  .*\(\d+ s\)", screen), screen
