"""Each strategy tunes the synthetic workload (a real subprocess with a known optimum) through the CLI."""
import pandas as pd
import pytest
import yaml

from autopager.cli.main import main
from autopager.errors import ConfigError
from autopager.run.workloads import config_dir
from autopager.tuner.strategies import STRATEGIES, check_settings, strategy_class

OPTIMUM = {"page_size": 256 << 10, "fillers": 4, "evictors": 2, "evict_high_water": 80, "evict_low_water": 50,
           "read_ahead": 4}
# machine-independent: the same defaults and thread ranges whatever the cores
COMMON = ["workload=synthetic", "workload.size=1", "runner.page_cache=evict", "confirm.rounds=0",
          "noise.defaults_runs=1", "baseline.fillers=2", "baseline.evictors=2", "baseline.max_fault_events=2",
          "space.fillers={min:1,max:8,factor:2}",
          "space.evictors={min:1,max:8,factor:2}", "space.evict_retain=0", "space.eviction=fifo"]
DEFAULTS_SECONDS = 0.001 * 12.711111  # the synthetic workload's slowdown at the defaults


def tune(*overrides):
    assert main(["tune", *COMMON, *overrides]) == 0


def trials(study):
    return pd.read_csv(f"outputs/synthetic/{study}/trials.csv")


def best(table):
    return table.loc[table[table.status == "ok"].value.idxmin()]


def test_grid_measures_every_point_and_finds_the_optimum(tuner_home, capsys):
    tune("strategy=grid", "space.page_size={min:64KiB,max:1MiB,factor:4}", "space.fillers={values:[2,4]}",
         "space.evictors={values:[1,2]}", "space.evict_high_water={values:[60,80]}",
         "space.evict_low_water={values:[50,70]}", "space.read_ahead=4", "space.direct_io=0")
    table = trials("grid-size1-buf64MiB")
    assert len(table) == 1 + 3 * 2 * 2 * 3  # the watermark pairs: 50/60, 50/80, 70/80
    assert table.kind[0] == "default" and table.value[0] == pytest.approx(DEFAULTS_SECONDS, rel=1e-3)
    assert {k: best(table)[k] for k in OPTIMUM} == OPTIMUM
    out = capsys.readouterr().out
    assert "[ 36/36]" in out and "speedup over defaults:    12.71x" in out


def test_coordinate_descent_finds_the_optimum_and_compares_with_page_size_only(tuner_home, capsys):
    narrow = ["space.page_size={min:64KiB,max:1MiB,factor:2}", "space.read_ahead={values:[0,4]}", "space.direct_io=0",
              "space.evict_high_water={min:60,max:100,step:10}", "space.evict_low_water={min:30,max:70,step:10}"]
    tune("strategy=pagesize", *narrow)
    pagesize = trials("pagesize-size1-buf64MiB")
    assert len(pagesize) == 1 + 5
    assert best(pagesize).page_size == 256 << 10
    assert (pagesize.loc[1:, ["fillers", "evict_high_water", "read_ahead"]] == [2, 90, 2]).all().all()
    capsys.readouterr()

    tune("strategy=coordinate", "strategy.max_sweeps=2", *narrow)
    table = trials("coordinate-size1-buf64MiB")
    assert {k: best(table)[k] for k in OPTIMUM} == OPTIMUM
    assert not table.duplicated(list(OPTIMUM)).any(), "a measured point was measured again"
    out = capsys.readouterr().out
    assert "speedup over page size:" in out and "speedup over defaults:" in out


def test_ax_finds_the_best_region_within_its_budget(tuner_home, capsys):
    tune("strategy=ax", "strategy.initialization_trials=5", "strategy.trials=12")
    table = trials("ax-size1-buf64MiB")
    assert len(table) == 1 + 12
    top = best(table)
    assert top.value < DEFAULTS_SECONDS / 4, top  # the defaults are 12.7x off the optimum
    assert 32 << 10 <= top.page_size <= 2 << 20
    assert (table.evict_low_water < table.evict_high_water).all()
    out = capsys.readouterr().out
    assert "profile:" in out and "Ax's modelled best:" in out and "predicted: page_size=" in out


def test_the_strategies_search_the_eviction_policy_by_name(tuner_home):
    # Every other parameter at the synthetic optimum: the policies alone differ, s3fifo the fastest.
    common = [override for override in COMMON if not override.startswith("space.eviction=")]
    at_optimum = ["space.page_size=256KiB", "space.fillers=4", "space.evictors=2", "space.evict_high_water=80",
                  "space.evict_low_water=50", "space.read_ahead=4", "space.direct_io=0",
                  "space.eviction={values:[fifo,hotfifo,s3fifo,clock]}"]
    for strategy, study in (("grid", "grid"), ("coordinate", "coordinate"), ("random", "random")):
        extra = ["strategy.trials=8"] if strategy == "random" else []
        assert main(["tune", *common, f"strategy={strategy}", *extra, *at_optimum]) == 0
        table = trials(f"{study}-size1-buf64MiB")
        assert set(table.eviction) == {"fifo", "hotfifo", "s3fifo", "clock"}, (strategy, table.eviction)
        assert best(table).eviction == "s3fifo", strategy
    # Ax searches it as an unordered choice beside a numeric parameter.
    assert main(["tune", *common, "strategy=ax", "strategy.initialization_trials=4", "strategy.trials=8",
                 *at_optimum[:-2], "space.read_ahead={values:[0,4]}", at_optimum[-1]]) == 0
    table = trials("ax-size1-buf64MiB")
    assert len(table) == 1 + 8 and set(table.eviction) <= {"fifo", "hotfifo", "s3fifo", "clock"}
    assert len(set(table.eviction)) > 1


def test_random_and_default_strategies(tuner_home):
    tune("strategy=random", "strategy.trials=5")
    table = trials("random-size1-buf64MiB")
    assert len(table) == 6 and not table.duplicated(list(OPTIMUM)).any()
    tune("strategy=default")
    assert len(trials("default-size1-buf64MiB")) == 1


def test_budget_trials_caps_and_extends_a_study(tuner_home):
    tune("strategy=random", "budget.trials=2")
    assert len(trials("random-size1-buf64MiB")) == 3
    tune("strategy=random", "budget.trials=4")  # the same study, resumed with a larger budget
    table = trials("random-size1-buf64MiB")
    assert len(table) == 5 and not table.duplicated(list(OPTIMUM)).any()


def test_budget_minutes_stops_starting_trials(tuner_home, capsys):
    tune("strategy=random", "budget.minutes=0.0001")
    assert len(trials("random-size1-buf64MiB")) == 1
    assert "budget.minutes=0.0001 reached" in capsys.readouterr().out


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_each_strategy_declares_the_options_its_configuration_gives_with_the_same_defaults(name):
    config = yaml.safe_load((config_dir() / "strategy" / f"{name}.yaml").read_text())
    declared = {option.name: option.default for option in strategy_class(name).OPTIONS}
    assert {key: value for key, value in config.items() if key != "name"} == declared
    assert strategy_class(name).checked({"name": name}) == declared


def test_a_key_that_is_no_option_of_the_strategy_is_refused_naming_its_options():
    with pytest.raises(ConfigError) as refused:
        check_settings({"name": "random", "trials": 5, "max_sweeps": 2})
    assert str(refused.value) == ("strategy.max_sweeps: not an option of strategy random; its options are: "
                                  "strategy.trials")
    with pytest.raises(ConfigError, match=r"^strategy.min_improvement must be a number >= 0, not -1$"):
        check_settings({"name": "coordinate", "min_improvement": -1})
