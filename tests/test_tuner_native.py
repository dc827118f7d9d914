"""The tuner on a real workload program (sort, at a tiny out-of-core size) when the workloads are built."""
import pandas as pd
import pytest

from autopager.cli import main
from autopager.errors import ConfigError
from autopager.workloads import locate_bin


def test_pagesize_tuning_of_the_sort_workload(tuner_home, capsys):
    try:
        locate_bin("sort")
    except ConfigError as error:
        pytest.skip(f"the workload programs are not built: {error}")
    assert main(["tune", "workload=sort", "workload.size=8", "workload.buffer_size=2MiB", "strategy=pagesize",
                 "space.page_size.max=256KiB", "runner.page_cache=evict"]) == 0
    table = pd.read_csv("outputs/sort/pagesize-size8/trials.csv")
    assert list(table.status) == ["ok"] * 7, table.error.tolist()
    best = table.loc[table.value.idxmin()]
    assert best.page_size > 4096 and best.value < table.value[0] / 1.5  # larger pages beat the defaults
    assert "speedup over defaults:" in capsys.readouterr().out
