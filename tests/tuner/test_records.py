"""The tuner's records cannot be corrupted: a damaged table is reported row by row and never trusted, one tuner
works on a study at a time, the trial in flight dies with its tuner, a metric is never replaced by a wall time it
does not measure, and bad settings are refused before anything runs."""
import dataclasses
import os
import signal
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from autopager.parameters import PARAMETERS
from autopager.cli.main import main
from tests.helpers import TEST_WORKLOADS, autopager_process

SYNTHETIC = ["workload=synthetic", "workload.size=1", "runner.page_cache=evict", "confirm.rounds=0",
             "noise.defaults_runs=1", "noise.max_runs=1",
             "space.page_size={min:16KiB,max:1MiB,factor:2}", "space.fillers={values:[1,4]}", "space.evictors=2",
             "space.evict_high_water=80", "space.evict_low_water=50", "space.evict_retain=0", "space.eviction=fifo", "space.read_ahead=4",
             "space.direct_io=0"]
TABLE = Path("outputs/synthetic/random-size1-buf64MiB/trials.csv")


def tune_random(trials: int) -> int:
    return main(["tune", *SYNTHETIC, "strategy=random", "strategy.trials=10", f"budget.trials={trials}"])


def test_damaged_rows_are_reported_and_ignored_never_trusted(tuner_home, capsys):
    assert tune_random(3) == 0
    lines = TABLE.read_text().splitlines(keepends=True)
    header = lines[0].rstrip("\n").split(",")
    good = lines[:3]  # the header, the defaults and the first trial
    bad_status = lines[2].replace(",ok,", ",fine,", 1)
    bad_value = lines[2].split(",")
    bad_value[header.index("value")] = "fast"
    no_params = lines[2].split(",")
    for name in PARAMETERS:
        no_params[header.index(name)] = ""
    no_start = lines[2].split(",")
    no_start[header.index("value")], no_start[header.index("started")] = "1e-9", ""  # every trial says when it began
    fields = lines[3].split(",")
    fields[0], fields[header.index("value")] = "7", "1e-9"  # a best-ever value, then the row is cut short
    cut = ",".join(fields)[: len(",".join(fields)) // 2]
    TABLE.write_text("".join(good) + bad_status.replace(lines[2].split(",")[0], "4", 1)
                     + ",".join(["5", *bad_value[1:]]) + ",".join(["6", *no_params[1:]])
                     + ",".join(["8", *no_start[1:]]) + cut)
    capsys.readouterr()

    assert tune_random(3) == 0
    captured = capsys.readouterr()
    assert "line 4: damaged row ignored: status is 'fine'" in captured.err
    assert "line 5: damaged row ignored: value is 'fast'" in captured.err
    assert "line 6: damaged row ignored: no parameters for a trial other than the defaults" in captured.err
    assert "line 7: damaged row ignored: no started time" in captured.err
    assert "line 8: damaged row ignored: cut short" in captured.err
    assert list(TABLE.parent.glob("trials.damaged-*.csv")), "the damaged file was not kept"
    table = pd.read_csv(TABLE)
    assert len(table) == 4 and (table.value > 1e-6).all() and (table.status == "ok").all()
    assert table.trial.is_unique
    profile = yaml.safe_load(next((tuner_home / "profiles" / "synthetic").glob("*.yaml")).read_text())
    assert profile["params"]["page_size"] and profile["value"] > 1e-6


@pytest.mark.parametrize("damage", ["empty", "quoted"])
def test_an_empty_table_or_a_row_cut_in_a_quoted_field_leaves_the_study_resumable(tuner_home, capsys, damage):
    assert tune_random(1) == 0
    text = TABLE.read_text()
    TABLE.write_text("" if damage == "empty" else text + '2,search,failed,,16384,1,2,,80,50,4,2,,0.1,0.1,10,1,'
                                                         '"killed\nby a signal, then')
    capsys.readouterr()
    assert tune_random(2) == 0
    err = capsys.readouterr().err
    assert ("the table is empty" if damage == "empty" else "lines 4-5: damaged row ignored: cut short") in err
    assert "Traceback" not in err
    table = pd.read_csv(TABLE)
    assert list(table.trial) == list(range(len(table))) and (table.status == "ok").all()


def test_the_table_is_replaced_whole_and_leaves_no_temporary_file(tuner_home, monkeypatch):
    from autopager.tuner.table import StudyTable
    from autopager.tuner.trial import Kind, Status, Trial

    table = StudyTable(tuner_home / "trials.csv")
    row = Trial(0, Kind.DEFAULT, Status.OK, 1.5, {"page_size": 4096})
    table.append(row)
    before = table.path.read_bytes()

    def crash(*args):
        raise OSError("crashed before the rename")
    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        table.append(dataclasses.replace(row, number=1, kind=Kind.SEARCH, value=1.0))
    assert table.path.read_bytes() == before
    assert sorted(p.name for p in tuner_home.iterdir()) == ["trials.csv"]


def sleeper_study(pid_file: Path, name: str = "slow") -> list[str]:
    sleeper = f"workload.command='{sys.executable} {TEST_WORKLOADS / 'sleeper.py'} {pid_file}'"
    return ["tune", "workload=command", sleeper,
            f"workload.name={name}", "runner.page_cache=keep", "strategy=default"]


def wait_for(condition, what: str, limit: float = 60) -> None:
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting: {what}"
        time.sleep(0.05)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def start_trial(pid_file: Path):
    tuner = autopager_process(*sleeper_study(pid_file))
    wait_for(lambda: pid_file.is_file() or tuner.poll() is not None, "the trial to start")
    assert tuner.poll() is None, tuner.communicate()
    return tuner, int(pid_file.read_text())


def test_a_second_tuner_on_a_study_is_refused_naming_the_first(tuner_home):
    first, trial = start_trial(tuner_home / "pid")
    try:
        second = autopager_process(*sleeper_study(tuner_home / "pid2"))
        out, err = second.communicate(timeout=120)
        assert second.returncode == 1, (out, err)
        assert f"is being tuned by another tuner (pid {first.pid})" in err and "outputs/slow/default" in err
        assert not (tuner_home / "pid2").exists()
    finally:
        first.kill()
        first.communicate()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_the_trial_in_flight_dies_with_its_tuner(tuner_home, sig):
    tuner, trial = start_trial(tuner_home / "pid")
    assert alive(trial)
    tuner.send_signal(sig)
    out, err = tuner.communicate(timeout=120)
    wait_for(lambda: not alive(trial), f"the trial {trial} to die after its tuner got {sig.name}")
    if sig != signal.SIGKILL:
        assert tuner.returncode == 130 and "interrupted" in err, (out, err)
        assert "Traceback" not in err


def test_a_metric_that_is_not_a_time_is_never_replaced_by_the_wall_time(tuner_home, capsys):
    garbage = f"workload.command='{sys.executable} -c \"print(12345)\"'"
    assert main(["tune", "workload=command", garbage, "workload.metric=requests_per_second",
                 "workload.goal=maximize", "runner.page_cache=keep", "strategy=default"]) == 1
    err = capsys.readouterr().err
    assert "the defaults' run failed" in err and "is not the process's time" in err
    table = pd.read_csv("outputs/command/default/trials.csv")
    assert list(table.status) == ["failed"] and table.value.isna().all()


def test_a_program_that_printed_its_result_must_print_it_every_run(tuner_home, capsys):
    # misbehave.py prints a proper result at 4KiB and garbage at 32KiB; time_process is on (workload=command)
    assert main(["tune", "workload=command", f"workload.command='{sys.executable} {TEST_WORKLOADS / 'misbehave.py'}'",
                 "workload.name=misbehave", "runner.page_cache=keep", "strategy=pagesize", "confirm.rounds=0",
                 "space.page_size={values:[4KiB,32KiB,256KiB]}"]) == 0
    table = pd.read_csv("outputs/misbehave/pagesize/trials.csv").set_index("page_size")
    assert table.status[32 << 10] == "failed" and pd.isna(table.value[32 << 10])
    assert "printed a result line before" in table.error[32 << 10]
    assert table.status[256 << 10] == "ok" and table.measured_by[256 << 10] == "result"


@pytest.mark.parametrize("setting, message", [
    ("budget.trials=abc", "budget.trials must be a whole number >= 0 or null, not 'abc'"),
    ("budget.trials=-1", "budget.trials must be a whole number >= 0"),
    ("budget.minutes=soon", "budget.minutes must be a number > 0 or null, not 'soon'"),
    ("budget.minutes=-2", "budget.minutes must be a number > 0"),
    ("seed=x", "seed must be a whole number >= 0, not 'x'"),
    ("seed=1.5", "seed must be a whole number >= 0, not 1.5"),
    ("runner.timeout=0", "runner.timeout must be a number > 0 or null, not 0"),
    ("runner.timeout=abc", "runner.timeout must be a number > 0 or null, not 'abc'"),
    ("runner.repeats=0", "runner.repeats must be a whole number >= 1, not 0"),
    ("runner.timeout_factor=-1", "runner.timeout_factor must be a number > 0"),
    ("runner.first_timeout=none", "runner.first_timeout must be a number > 0"),
])
def test_bad_settings_are_refused_before_anything_runs(tuner_home, capsys, setting, message):
    assert main(["tune", *SYNTHETIC, "strategy=random", setting]) == 2
    err = capsys.readouterr().err
    assert err.startswith("autopager: error: ") and message in err, err
    assert not Path("outputs").exists()
