"""Trials that crash, hang, print garbage or fail are recorded as failed, and the study goes on."""
import re
import sys

import pandas as pd
import pytest

from autopager.cli.main import main
from tests.helpers import TEST_WORKLOADS

MISBEHAVE = f"workload.command='{sys.executable} {TEST_WORKLOADS / 'misbehave.py'}'"


def test_failed_trials_are_recorded_and_the_study_finishes(tuner_home, capsys):
    code = main(["tune", "workload=command", MISBEHAVE, "workload.name=misbehave", "workload.time_process=false",
                 "strategy=pagesize", "space.page_size={min:4KiB,max:256KiB,factor:2}", "runner.page_cache=evict",
                 "confirm.rounds=0", "noise.defaults_runs=1",
                 "runner.timeout_floor=2", "runner.timeout_factor=2"])
    assert code == 0
    table = pd.read_csv("outputs/misbehave/pagesize/trials.csv").set_index("page_size")
    errors = table.error.fillna("")
    assert list(table.index) == [4 << 10, 8 << 10, 16 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10]
    assert "killed by SIGABRT" in errors[8 << 10] and "about to crash" in table.stderr_tail[8 << 10]
    derived = max(2, 2 * table.wall_seconds[4 << 10])  # runner.timeout_floor, timeout_factor x the defaults'
    assert table.timeout[16 << 10] == pytest.approx(derived)
    assert f"timed out after {derived:.3g} s" in errors[16 << 10] and table.wall_seconds[16 << 10] < derived + 5
    assert "not a JSON object" in errors[32 << 10] and "hello" in errors[32 << 10]
    assert "exited with status 3" in errors[64 << 10] and "bad input file" in table.stderr_tail[64 << 10]
    assert table.exit_code[64 << 10] == 3
    assert "not a finite number" in errors[128 << 10]
    assert list(table.status) == ["ok", "failed", "failed", "failed", "failed", "failed", "ok"]
    out = capsys.readouterr().out
    assert "FAILED (timed out" in out
    assert re.search(r"^trials: +6(/\d+)? searched; 1 run of the defaults, 0 confirmation runs; 5 failed, 0 capped$",
                     out, re.M), out
    assert "page_size=256KiB" in out.split("best measured:")[1]


def test_a_command_is_timed_when_it_prints_no_result(tuner_home, capsys):
    assert main(["tune", "workload=command", "workload.command='sleep 0.05'", "strategy=default",
                 "runner.page_cache=evict"]) == 0
    table = pd.read_csv("outputs/command/default/trials.csv")
    assert table.status[0] == "ok" and 0.05 <= table.value[0] < 5


def test_a_study_whose_defaults_fail_stops_with_status_1(tuner_home, capsys):
    assert main(["tune", "workload=command", "workload.command='false'", "runner.page_cache=evict"]) == 1
    assert "the defaults' run failed: exited with status 1" in capsys.readouterr().err
