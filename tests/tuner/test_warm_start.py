"""Warm start (warm_start=STUDY_DIR_OR_PROFILE): real small studies of the synthetic workload through the CLI, seeded
from an earlier study or its profile (a study of time against memory, from a smaller size: the earlier best also at
this study's own watermarks, its buffer ladder at the earlier best); and a seed moved into a space with a larger
buffer."""
import json

import pandas as pd
from omegaconf import OmegaConf

from autopager.cli.main import main
from autopager.tuner.buffer_ladder import LADDER
from autopager.tuner.space import Space
from autopager.tuner.warm_start import SEEDS, WATERMARKS, moved

COMMON = ["workload=synthetic", "workload.size=1", "runner.page_cache=evict", "noise.defaults_runs=1",
          "baseline.fillers=2", "baseline.evictors=2", "baseline.max_fault_events=2",
          "space.fillers={min:1,max:8,factor:2}", "space.evictors={min:1,max:8,factor:2}", "space.evict_retain=0",
          "space.eviction=fifo", "space.direct_io=0", "budget.plateau=0"]
SEARCHED = ["page_size", "fillers", "evictors", "evict_high_water", "evict_low_water", "read_ahead"]


def tune(*overrides):
    assert main(["tune", *COMMON, *overrides]) == 0


def table(study):
    return pd.read_csv(f"outputs/synthetic/{study}/trials.csv")


def test_coordinate_descent_starts_from_the_earlier_studys_best(tuner_home, capsys):
    tune("strategy=random", "strategy.trials=12", "confirm.rounds=0", "study.name=small")
    earlier = table("small")
    ok = earlier[(earlier.kind == "search") & (earlier.status == "ok")].sort_values("value")
    capsys.readouterr()

    tune("strategy=coordinate", "strategy.max_sweeps=1", "confirm.rounds=1", "confirm.candidates=1",
         "warm_start=outputs/synthetic/small", "study.name=warm")
    warm = table("warm")
    assert "warm start: " in capsys.readouterr().out
    seeded = warm[warm.proposed_by == "warm:synthetic/small"]
    expected = ok.drop_duplicates(SEARCHED).head(SEEDS)
    assert len(seeded) == len(expected)
    assert (seeded[SEARCHED].to_numpy() == expected[SEARCHED].to_numpy()).all()  # run here, best first
    assert (seeded.kind == "search").all() and seeded.value.notna().all()
    assert warm.trial[warm.kind == "default"].min() == 0  # the defaults measured first, as in any study
    summary = json.loads((tuner_home / "outputs/synthetic/warm/summary.json").read_text())
    assert summary["warm_start"] == ["synthetic/small"] and summary["memory"] is None
    best_seed = seeded.loc[seeded.value.idxmin(), SEARCHED]
    after = warm[(warm.kind == "search") & (warm.proposed_by != "warm:synthetic/small")]
    assert len(after) > 0
    # the line searches move one parameter at a time away from the best seed, not from the defaults
    first = after.iloc[0][SEARCHED]
    assert sum(first[name] != best_seed[name] for name in SEARCHED) == 1
    confirm = warm[warm.kind == "confirm"]  # the defaults, the best trial and the saved profile's parameters
    assert set(confirm.confirms.dropna()) == {0, warm.loc[warm[warm.kind.isin(["search", "default"])].value.idxmin(),
                                                 "trial"]}


def test_ax_is_seeded_with_a_profiles_parameters(tuner_home, capsys):
    tune("strategy=random", "strategy.trials=6", "confirm.rounds=1", "confirm.candidates=1", "study.name=first")
    profile = [line for line in capsys.readouterr().out.splitlines() if line.startswith("profile:")]
    assert profile and "saved" in profile[0]

    tune("strategy=ax", "strategy.initialization_trials=3", "strategy.trials=5", "confirm.rounds=0",
         "warm_start=synthetic", "study.name=seeded", "study.save_profile=false")
    seeded = table("seeded")
    first = seeded[seeded.kind == "search"].iloc[0]
    assert first.proposed_by.startswith("warm:synthetic/")
    confirmed = table("first")
    winner = confirmed.loc[confirmed.trial == confirmed[confirmed.kind == "confirm"].confirms.max()].iloc[0]
    assert all(first[name] == winner[name] for name in SEARCHED)
    assert (seeded[seeded.kind == "search"].iloc[1:].proposed_by.isin(["Sobol", "MBM"])).all()


def test_a_warm_study_of_time_against_memory_climbs_its_ladder_at_the_earlier_studys_best(tuner_home, capsys):
    tune("strategy=random", "strategy.trials=6", "confirm.rounds=0", "workload.buffer_size=16MiB",
         "space.page_size={min:4KiB,max:256KiB,factor:2}", "study.name=small")
    earlier = table("small")
    best = earlier[earlier.kind == "search"].sort_values("value").iloc[0]
    capsys.readouterr()

    tune("strategy=random", "strategy.trials=10", "confirm.rounds=0", "objective=metric_and_memory",
         "space.buffer_size={min:4MiB,max:64MiB,factor:2}", "space.page_size={min:4KiB,max:256KiB,factor:2}",
         "warm_start=outputs/synthetic/small", "study.name=memory")
    assert "buffer ladder: 4MiB, 8MiB, 16MiB, 32MiB, 64MiB measured first, at the warm start's best other " \
           "parameters" in capsys.readouterr().out
    searched = table("memory")
    searched = searched[searched.kind == "search"]
    warm = searched[searched.proposed_by == "warm:synthetic/small"]
    ladder = searched[searched.proposed_by == LADDER]
    assert len(warm) > 0 and warm.trial.max() < ladder.trial.min()  # the seeds first, then the ladder
    # the seeds' buffer is scaled from the earlier 16MiB to this study's 64MiB, and across sizes the earlier best
    # is measured also at this study's own watermarks (the defaults' 90 and 70)
    assert (warm.buffer_size == 64 << 20).all()
    others = [name for name in SEARCHED if name not in WATERMARKS]
    assert (warm.iloc[0][SEARCHED].to_numpy() == best[SEARCHED].to_numpy().astype(int)).all()
    twin = warm.iloc[1]
    assert (twin[others].to_numpy() == best[others].to_numpy().astype(int)).all()
    assert (twin.evict_high_water, twin.evict_low_water) == (90, 70)
    # the earlier best is the ladder's top rung, measured once; the other rungs are it at the smaller buffers
    assert sorted(int(size) >> 20 for size in ladder.buffer_size) == [4, 8, 16, 32]
    assert (ladder[SEARCHED].to_numpy() == best[SEARCHED].to_numpy().astype(int)).all()
    assert len(searched) == 10 and searched.proposed_by.iloc[len(warm) + len(ladder):].isna().all()


def test_a_warm_start_that_names_nothing_is_refused(tuner_home, capsys):
    assert main(["tune", *COMMON, "strategy=random", "warm_start=./nowhere.yaml"]) == 2
    assert "warm_start=./nowhere.yaml" in capsys.readouterr().err


def test_a_seed_moves_into_a_larger_buffer_and_onto_the_spaces_values():
    space = Space(OmegaConf.create({"buffer_size": {"min": "16MiB", "max": "256MiB", "factor": 2},
                                    "page_size": {"min": "64KiB", "max": "1MiB", "factor": 4}, "read_ahead": 4}),
                  {"buffer_size": "64MiB", "read_ahead": 2})
    point = moved({"buffer_size": 16 << 20, "page_size": 200 << 10, "read_ahead": 8}, space, 4.0)
    assert point["buffer_size"] == 64 << 20 and point["page_size"] == 256 << 10 and point["read_ahead"] == 4
