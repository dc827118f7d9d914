"""A study killed with SIGKILL resumes where it stopped: no finished trial is lost or run again."""
import time
from pathlib import Path

import pandas as pd
import pytest

from autopager.analysis.result import StudyResult
from autopager.tuner.trial import Kind, Status, Trial
from autopager.cli.main import main
from tests.helpers import autopager_process

SYNTHETIC = ["workload=synthetic", "workload.size=20", "runner.page_cache=evict", "confirm.rounds=0",
             "noise.defaults_runs=1", "noise.max_runs=1",
             "space.page_size={min:16KiB,max:1MiB,factor:2}", "space.fillers={values:[1,4]}", "space.evictors=2",
             "space.evict_high_water=80", "space.evict_low_water=50", "space.evict_retain=0", "space.eviction=fifo", "space.read_ahead=4",
             "space.direct_io=0"]
PARAMS = ["page_size", "fillers", "evictors", "evict_high_water", "evict_low_water", "read_ahead"]


def rows(path: Path) -> pd.DataFrame:
    try:
        return pd.read_csv(path)
    except (FileNotFoundError, pd.errors.EmptyDataError):
        return pd.DataFrame()


def kill_after(args, table: Path, count: int, limit: float = 300) -> pd.DataFrame:
    """Start `autopager tune ARGS`, SIGKILL it once its table has `count` trials; the table at that moment."""
    process = autopager_process("tune", *args)
    deadline = time.monotonic() + limit
    while len(rows(table)) < count:
        if process.poll() is not None:
            pytest.fail(f"the study ended before it could be killed: {process.communicate()}")
        assert time.monotonic() < deadline, "the study made no progress"
        time.sleep(0.05)
    process.kill()
    process.communicate()
    assert process.returncode == -9
    return rows(table)


@pytest.mark.parametrize("strategy, extra, total", [
    ("grid", [], 1 + 7 * 2),
    ("ax", ["strategy.initialization_trials=3", "strategy.trials=6"], 1 + 6),
])
def test_a_killed_study_resumes_without_losing_a_trial(tuner_home, capsys, strategy, extra, total):
    args = [*SYNTHETIC, f"strategy={strategy}", *extra]
    table = Path(f"outputs/synthetic/{strategy}-size20-buf64MiB/trials.csv")
    before = kill_after(args, table, count=3)

    assert main(["tune", *args]) == 0
    after = rows(table)
    assert f"resuming after {len(before)} trials" in capsys.readouterr().out
    assert len(after) == total
    pd.testing.assert_frame_equal(after.iloc[:len(before)], before)  # finished trials kept as they were
    assert list(after.trial) == list(range(total)) and (after.kind != "default").sum() == total - 1
    if strategy == "grid":
        assert not after.duplicated(PARAMS).any()


def test_a_study_resumes_only_with_the_same_settings(tuner_home, capsys):
    args = ["tune", "workload=synthetic", "workload.size=1", "runner.page_cache=evict", "strategy=default"]
    assert main(args) == 0
    assert main([*args, "space.read_ahead=2", "study.name=default-size1-buf64MiB"]) == 2
    assert "was run with other space settings" in capsys.readouterr().err
    assert main([*args, "space.read_ahead=2"]) == 0  # without a study.name: beside it
    assert "outputs/synthetic/default-size1-buf64MiB-2 (new; " in capsys.readouterr().out
    assert main([*args, "study.resume=false"]) == 2
    assert "exists and study.resume=false" in capsys.readouterr().err


def test_the_time_a_study_was_stopped_is_not_counted_in_its_tuning_time(tmp_path):
    """Stopped for 89 minutes after its second trial, resumed: its elapsed time leaves the stop out, and keeps
    the sub-second gaps of tables with whole-second starts."""
    seconds = [20.0, 30.0, 15.5, 10.0]
    started = ["2026-11-28T07:00:00.000+00:00", "2026-11-28T07:00:20.000+00:00",
               "2026-11-28T08:30:00.000+00:00", "2026-11-28T08:30:16.300+00:00"]
    trials = [Trial(number, Kind.DEFAULT if number == 0 else Kind.SEARCH, Status.OK, float(number + 1),
                    {"page_size": 4096 << number}, seconds=seconds[number], started=started[number])
              for number in range(4)]
    study = StudyResult(tmp_path, {"workload": {"metric": "seconds", "goal": "minimize"}}, trials)
    assert study.elapsed().tolist() == pytest.approx([20.0, 50.0, 65.5, 76.3])
    assert study.wall_seconds() == pytest.approx(76.3)
