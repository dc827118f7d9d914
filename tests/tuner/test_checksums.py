"""A study checks every run's answer against its reference, the defaults' first run, which validated its answer in
full: on the bfs program and the real pager, a trial whose answer differs is failed and never the best."""
import pandas as pd
import pytest

from autopager.cli.main import main
from autopager.errors import ConfigError
from autopager.run.workloads import locate_bin
from tests.helpers import corrupt_bfs_vertex_zero

STUDY = "outputs/bfs/random-size10-buf256KiB/trials.csv"
BFS = ["workload=bfs", "workload.size=10", "workload.buffer_size=256KiB", "space.page_size.max=64KiB",
       "runner.page_cache=evict", "confirm.rounds=0", "noise.defaults_runs=1", "strategy=random",
       "strategy.trials=8", "study.save_profile=false"]


@pytest.fixture(autouse=True)
def bfs_built():
    try:
        locate_bin("bfs")
    except ConfigError as error:
        pytest.skip(f"the workload programs are not built: {error}")


def test_a_trial_with_another_answer_fails_and_is_never_the_best(tuner_home, capsys):
    assert main(["tune", *BFS, "budget.trials=2"]) == 0
    table = pd.read_csv(STUDY)
    assert list(table.status) == ["ok"] * 3, table.error.tolist()
    reference = table.checksum[0]
    assert reference.startswith("reached ") and list(table.checksum) == [reference] * 3

    corrupt_bfs_vertex_zero(tuner_home / "data", 10)  # the program now answers otherwise, on any parameters
    capsys.readouterr()
    assert main(["tune", *BFS, "budget.trials=4"]) == 0  # resumed: the reference's checksum is read from the table
    table = pd.read_csv(STUDY)
    wrong = table[(table.trial >= 3) & (table.kind == "search")]
    assert len(wrong) == 2 and list(wrong.status) == ["failed"] * 2
    for _, row in wrong.iterrows():
        assert row.error == f"wrong answer: checksum {row.checksum!r} differs from the reference run's {reference!r}"
        assert row.checksum.startswith("reached 1 depth 0")
        assert row.exit_code == 0  # checksum mode skipped the edge check that fails on this graph (see below)
    best = capsys.readouterr().out.split("best measured:")[1].splitlines()[0]
    assert "(trial 3" not in best and "(trial 4" not in best


def test_the_reference_run_validates_in_full(tuner_home, capsys):
    assert main(["tune", *BFS, "budget.trials=0"]) == 0  # makes the graph
    corrupt_bfs_vertex_zero(tuner_home / "data", 10)
    capsys.readouterr()
    assert main(["tune", *BFS, "budget.trials=0", "study.name=again"]) == 1
    assert "the defaults' run failed: exited with status 1" in capsys.readouterr().err
    assert "check failed: edge" in pd.read_csv("outputs/bfs/again/trials.csv").stderr_tail[0]


def test_a_table_without_checksums_resumes_with_full_validation(tuner_home):
    assert main(["tune", *BFS, "budget.trials=1"]) == 0
    pd.read_csv(STUDY).drop(columns="checksum").to_csv(STUDY, index=False)  # a table written before the column
    corrupt_bfs_vertex_zero(tuner_home / "data", 10)
    assert main(["tune", *BFS, "budget.trials=2"]) == 0
    table = pd.read_csv(STUDY)
    assert list(table.status) == ["ok", "ok", "failed"]  # no reference checksum: the new trial checked in full
    assert "check failed: edge" in table.stderr_tail[2] and table.exit_code[2] == 1


def test_run_validates_its_first_run_in_full_and_compares_the_others(tuner_home, capsys):
    run = ["run", *BFS[:3], "runner.page_cache=evict", "run.rounds=2"]
    assert main(run) == 0
    assert "round 2/2: the defaults:" in capsys.readouterr().out
    corrupt_bfs_vertex_zero(tuner_home / "data", 10)
    assert main(run) == 1
    assert "the run failed: exited with status 1" in capsys.readouterr().err
