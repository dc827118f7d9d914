"""The tuner on real workload programs at tiny out-of-core sizes, when the workloads are built."""
import glob
import threading

import pandas as pd
import pytest

from autopager.cli.main import main
from autopager.errors import ConfigError
from autopager.run.workloads import locate_bin
from tests.core.test_huge_pages import available_huge_pages, huge_pages  # noqa: F401 (the fixture: a pool of its own)


def require(program):
    try:
        locate_bin(program)
    except ConfigError as error:
        pytest.skip(f"the workload programs are not built: {error}")


def test_pagesize_tuning_of_the_sort_workload(tuner_home, capsys):
    require("sort")
    assert main(["tune", "workload=sort", "workload.size=8", "workload.buffer_size=2MiB", "strategy=pagesize",
                 "space.page_size.max=256KiB", "runner.page_cache=evict", "confirm.rounds=0",
                 "noise.defaults_runs=1"]) == 0
    table = pd.read_csv("outputs/sort/pagesize-size8-buf2MiB/trials.csv")
    assert list(table.status) == ["ok"] * 7, table.error.tolist()
    best = table.loc[table.value.idxmin()]
    assert best.page_size > 4096 and best.value < table.value[0] / 1.5  # larger pages beat the defaults
    assert "speedup over defaults:" in capsys.readouterr().out


def test_bfs_prepares_its_data_once_and_runs_with_its_profile(tuner_home, capsys):
    require("bfs")
    common = ["workload=bfs", "workload.size=10", "workload.buffer_size=256KiB", "space.page_size.max=64KiB",
              "runner.page_cache=evict", "confirm.rounds=0", "noise.defaults_runs=1"]
    assert main(["tune", *common, "strategy=random", "strategy.trials=3"]) == 0
    assert glob.glob(str(tuner_home / "data" / "bfs-s10.*")), "prepare did not generate the graph"
    table = pd.read_csv("outputs/bfs/random-size10-buf256KiB/trials.csv")
    assert list(table.status) == ["ok"] * 4, table.error.tolist()
    capsys.readouterr()
    assert main(["run", *common]) == 0
    assert "with profile bfs/size=10,threads=2,buffer=" in capsys.readouterr().out


def test_huge_pages_searched_by_the_tuner_reach_its_trials(tuner_home, huge_pages):
    require("sort")
    # The buffer's 64 MiB, 32 huge pages. A buffer of 8 pages thrashes under read-ahead's default 2 pages a stream
    # (sort's four streams read ahead more than the buffer holds), with huge pages several times more: not this test's subject.
    huge_pages(32)
    free = [available_huge_pages()]
    done = threading.Event()

    def watch_the_pool():
        while not done.wait(0.02):
            free.append(available_huge_pages())

    watcher = threading.Thread(target=watch_the_pool)
    watcher.start()
    try:
        assert main(["tune", "workload=sort", "workload.size=256", "workload.buffer_size=64MiB", "strategy=coordinate",
                     "strategy.order=[huge_pages]", "budget.trials=2", "space.page_size=2MiB",
                     "+space.huge_pages={values:[off,on]}", "runner.page_cache=evict", "confirm.rounds=0",
                     "noise.defaults_runs=1", "runner.cap=null"]) == 0  # a slow trial in a loaded CI is not capped
    finally:
        done.set()
        watcher.join()
    [trials] = glob.glob("outputs/sort/coordinate-*/trials.csv")
    table = pd.read_csv(trials)
    searched = table[table.kind == "search"]
    assert sorted(searched.huge_pages) == ["off", "on"] and set(searched.page_size) == {2 << 20}, table.to_string()
    assert list(table.status) == ["ok"] * len(table), table.error.tolist()  # sorted right, in either memory
    assert min(free) < free[0], "the trial with huge_pages=on took its buffer from the pool"
