"""What a study has measured is not run again: Ax's repeated proposals are answered from the table, and a
resumed Ax study continues its Sobol sequence instead of drawing its first points again."""
import sys
from pathlib import Path

import pandas as pd

from autopager.cli.main import main
from tests.helpers import TEST_WORKLOADS

PARAMS = ["page_size", "fillers", "evictors", "evict_high_water", "evict_low_water", "read_ahead"]


def logged(log: Path) -> list[str]:
    """A workload whose every run is a line of ``log``, over six points (three page sizes, two filler counts)."""
    return ["workload=command", f"workload.command='{sys.executable} {TEST_WORKLOADS / 'logged.py'} {log}'",
            "workload.name=logged", "workload.time_process=false", "workload.buffer_size=16MiB",
            "confirm.rounds=0", "noise.defaults_runs=1",
            "runner.page_cache=keep", "space.page_size={min:64KiB,max:256KiB,factor:2}",
            "space.fillers={values:[1,2]}", "space.evictors=1", "space.evict_high_water=90",
            "space.evict_low_water=70", "space.evict_retain=0", "space.eviction=fifo", "space.read_ahead=0", "space.direct_io=0"]


def test_ax_proposing_a_measured_point_again_reuses_its_result(tuner_home, capsys):
    log = tuner_home / "runs.log"
    assert main(["tune", *logged(log), "strategy=ax", "strategy.initialization_trials=3", "strategy.trials=10"]) == 0
    table = pd.read_csv("outputs/logged/ax-buf16MiB/trials.csv")
    runs = log.read_text().splitlines()
    reused = table[table.kind == "reused"]

    assert len(table) == 1 + 10
    assert len(reused) >= 10 - 6  # ten proposals over six points
    assert len(runs) == len(table) - len(reused), "a measured point was run again"
    ran = table[table.kind != "reused"]
    assert not ran.duplicated(PARAMS).any()
    for _, row in reused.iterrows():
        source = table.loc[table.trial == row.reused_from].iloc[0]
        assert source.kind != "reused" and (source[PARAMS] == row[PARAMS]).all()
        assert row.status == source.status and row.wall_seconds == 0 and pd.isna(row.repeats)
        assert row.value == source.value or pd.isna(row.value) and pd.isna(source.value)
    assert (table.loc[1:, "proposed_by"].isin(["Sobol", "MBM", "CenterOfSearchSpace"])).all()
    assert set(table.proposed_by.dropna()) >= {"Sobol", "MBM"}
    failing = (table.page_size == 128 << 10) & (table.fillers == 1)
    assert failing.sum() <= 2, "Ax kept proposing the point that failed"  # told as the worst value seen
    assert (table[failing].status == "failed").all()
    out = capsys.readouterr().out
    assert f"{len(reused)} answered from an earlier trial" in out and "not run again" in out


def test_a_resumed_ax_study_continues_its_sobol_sequence(tuner_home):
    args = ["workload=synthetic", "workload.size=1", "runner.page_cache=evict", "strategy=ax",
            "confirm.rounds=0", "noise.defaults_runs=1",
            "strategy.initialization_trials=7", "strategy.trials=6", "space.page_size={min:16KiB,max:2MiB,factor:2}",
            "space.fillers={values:[1,2,4,8]}", "space.evictors=2", "space.evict_high_water=80",
            "space.evict_low_water=50", "space.evict_retain=0", "space.eviction=fifo", "space.read_ahead={values:[0,1,2,4,8,16]}",
            "space.direct_io=0"]
    assert main(["tune", *args, "study.name=whole"]) == 0
    assert main(["tune", *args, "study.name=resumed", "budget.trials=3"]) == 0
    assert main(["tune", *args, "study.name=resumed"]) == 0
    whole = pd.read_csv("outputs/synthetic/whole/trials.csv")
    resumed = pd.read_csv("outputs/synthetic/resumed/trials.csv")

    assert (whole.proposed_by.iloc[2:] == "Sobol").all()  # the first: the center (the defaults are outside)
    pd.testing.assert_frame_equal(resumed[PARAMS + ["kind"]], whole[PARAMS + ["kind"]])
