"""Time against memory (objective=metric_and_memory, select, constraint.memory, buffer_ladder): the front of a real
study's rows, and real small studies of the synthetic workload, whose time grows as its buffer shrinks below its data;
the buffer ladder that starts the search, and the confirmation of the chosen point beside the front's fastest."""
import json

import pandas as pd
import pytest

from autopager.analysis.report import write_report
from autopager.cli.main import main
from autopager.errors import ConfigError
from autopager.parameters import format_size
from autopager.run.goal import Goal
from autopager.tuner.buffer_ladder import LADDER, rung_buffers
from autopager.tuner.memory_front import Objective, Selection, front, memory_bytes
from autopager.tuner.space import pager_page_size
from autopager.tuner.stopping import trials_without_improvement
from autopager.tuner.table import StudyTable
from autopager.tuner.trial import Kind, Status, Trial

COMMON = ["workload=synthetic", "workload.size=1", "runner.page_cache=evict", "noise.defaults_runs=1",
          "baseline.fillers=2", "baseline.evictors=2", "baseline.max_fault_events=2",
          "space.fillers={min:1,max:8,factor:2}", "space.evictors={min:1,max:8,factor:2}", "space.evict_retain=0",
          "space.eviction=fifo", "space.direct_io=0", "budget.plateau=0",
          "space.buffer_size={min:4MiB,max:64MiB,factor:2}"]


def test_the_front_of_a_grid_over_the_buffer(tuner_home, capsys):
    assert main(["tune", *COMMON, "strategy=grid", "objective=metric_and_memory", "space.page_size=256KiB",
                 "space.fillers=4", "space.evictors=2", "space.evict_high_water=80", "space.evict_low_water=50",
                 "space.read_ahead={values:[2,4]}", "confirm.rounds=1", "select=smallest_within:30%"]) == 0
    out = capsys.readouterr().out
    rows = StudyTable(tuner_home / "outputs/synthetic/grid-size1-buf64MiB/trials.csv").rows
    points = front(rows, Goal.MINIMIZE)
    # read_ahead 4 is faster at every buffer; each halving of the buffer below the data is slower: five points
    assert [point.params["buffer_size"] >> 20 for point in points] == [4, 8, 16, 32, 64]
    assert all(point.params["read_ahead"] == 4 for point in points)
    assert [memory_bytes(point) for point in points] == [point.params["buffer_size"] for point in points]
    assert all(a.value > b.value for a, b in zip(points, points[1:]))
    assert all(row.stats["resident_bytes"] == min(row.params["buffer_size"], 64 << 20) for row in rows if row.kind == "search")
    # within 30% of the fastest (64MiB, 1x): 32MiB costs 1.5x, so 64MiB; the rule at 60%: 32MiB
    assert Selection.parse("smallest_within:30%").choose(points, Goal.MINIMIZE) is points[-1]
    assert Selection.parse("smallest_within:60%").choose(points, Goal.MINIMIZE) is points[-2]
    assert Selection.parse("fastest_within:10MiB").choose(points, Goal.MINIMIZE) is points[1]
    assert "Pareto front:" in out and "chosen:" in out
    front_table = out[out.index("Pareto front:"):]
    assert all(f"{size}MiB" in front_table for size in (4, 8, 16, 32, 64))
    table = pd.read_csv(tuner_home / "outputs/synthetic/grid-size1-buf64MiB/trials.csv")
    confirmed = table[table.kind == "confirm"].confirms.dropna()
    assert set(confirmed) == {0, points[-1].number}
    memory = json.loads((tuner_home / "outputs/synthetic/grid-size1-buf64MiB/summary.json").read_text())["memory"]
    compared = memory.pop("against_fastest")
    assert memory == {"front": [{"trial": point.number, "value": point.value, "memory_bytes": memory_bytes(point)}
                                for point in points], "chosen": points[-1].number}
    # the chosen point is the fastest: confirmed once, its ratio to itself 1
    assert compared["chosen"] == compared["fastest"] and compared["chosen"]["trial"] == points[-1].number
    assert compared["ratio"] == 1.0 and f"chosen vs fastest:        the chosen point is the fastest (trial " \
                                       f"{points[-1].number}, 64MiB)" in out

    report = write_report(tuner_home / "outputs/synthetic/grid-size1-buf64MiB")
    text = report.read_text()
    assert "## Time against memory" in text and "The Pareto front: 5 trials" in text
    assert (report.parent / "memory.png").stat().st_size > 0


def test_the_fronts_points_near_the_rules_bound_are_measured_again_before_it_chooses(tuner_home, capsys):
    # each halving of the buffer below the synthetic's data costs half its time: 32MiB takes 1.5x the 64MiB's, within
    # the noise (2 x 5%) of the bound of 40%; both are measured again, the points far from the bound are not
    assert main(["tune", *COMMON, "strategy=grid", "objective=metric_and_memory", "space.page_size=256KiB",
                 "space.fillers=4", "space.evictors=2", "space.evict_high_water=80", "space.evict_low_water=50",
                 "space.read_ahead=4", "confirm.rounds=0", "select=smallest_within:40%", "noise.assumed=0.05"]) == 0
    out = capsys.readouterr().out
    rows = StudyTable(tuner_home / "outputs/synthetic/grid-size1-buf64MiB/trials.csv").rows
    runs = {row.params["buffer_size"] >> 20: len(row.runs) for row in rows if row.kind is Kind.SEARCH}
    assert runs == {4: 1, 8: 1, 16: 1, 32: 3, 64: 3}
    by_buffer = {row.params["buffer_size"] >> 20: row.number for row in rows if row.kind is Kind.SEARCH}
    assert f"measuring the front's points near the choice again: trial {by_buffer[32]}, trial {by_buffer[64]}" in out
    assert f"chosen:                   trial {by_buffer[64]}" in out


def test_points_contested_by_the_noise_are_those_that_could_turn_the_choice():
    rows = [Trial(number, Kind.SEARCH, Status.OK, seconds, {"buffer_size": mib << 20},
                  stats={"resident_bytes": mib << 20})
            for number, (mib, seconds) in enumerate([(1, 4.0), (2, 2.3), (4, 2.05), (8, 1.0)])]
    points = front(rows, Goal.MINIMIZE)
    contested = Selection.parse("smallest_within:100%").contested(points, Goal.MINIMIZE, 0.05)
    assert [row.number for row in contested] == [1, 2, 3]  # 2.3 and 2.05 s near 2x the best; the best itself
    assert Selection.parse("smallest_within:100%").contested(points, Goal.MINIMIZE, 0.0) == [rows[3]]
    contested = Selection.parse("fastest_within:4MiB").contested(points, Goal.MINIMIZE, 0.1)
    assert [row.number for row in contested] == [1, 2]  # within 4MiB: 2.05 s the best, 2.3 s within 20% of it
    assert Objective("metric").unsettled(rows, Goal.MINIMIZE, 0.05, 3) == []


def test_ax_searches_time_against_memory_after_the_ladder_and_the_chosen_point_is_confirmed_beside_the_fastest(
        tuner_home, capsys):
    study = tuner_home / "outputs/synthetic/ax-size1-buf64MiB"
    assert main(["tune", *COMMON, "strategy=ax", "strategy.initialization_trials=4", "strategy.trials=9",
                 "objective=metric_and_memory", "select=fastest_within:8MiB", "confirm.rounds=2"]) == 0
    out = capsys.readouterr().out
    table = pd.read_csv(study / "trials.csv")
    searched = table[table.kind == "search"]
    # the ladder first: the defaults at each buffer but their own (64MiB), outside Ax's space (the pager's page for
    # each region, no page size of the space), so run besides Ax's 9 trials; then Ax's own points
    assert len(searched) == 4 + 9
    assert list(searched.proposed_by[:4]) == [LADDER] * 4
    assert [int(size) >> 20 for size in searched.buffer_size[:4]] == [4, 8, 16, 32]
    assert set(searched.proposed_by[4:]) <= {"CenterOfSearchSpace", "Sobol", "MBM"} and "MBM" in set(searched.proposed_by)
    rows = StudyTable(study / "trials.csv").rows
    points = front(rows, Goal.MINIMIZE)
    chosen = Selection.parse("fastest_within:8MiB").choose(points, Goal.MINIMIZE)
    fastest = Goal.MINIMIZE.best(points, key=lambda row: row.value)
    assert chosen is not None and chosen.params["buffer_size"] <= 8 << 20 and chosen is not fastest
    assert f"chosen:                   trial {chosen.number}" in out
    # the chosen point and the fastest in the same rounds as the defaults; the chosen one is the study's result
    assert set(table[table.kind == "confirm"].confirms.dropna()) == {0, chosen.number, fastest.number}
    summary = json.loads((study / "summary.json").read_text())
    assert summary["confirmed"]["trial"] == chosen.number
    compared = summary["memory"]["against_fastest"]
    assert (compared["chosen"]["trial"], compared["fastest"]["trial"]) == (chosen.number, fastest.number)
    assert compared["chosen"]["buffer_size"] == chosen.params["buffer_size"]
    assert compared["fastest"]["buffer_size"] == fastest.params["buffer_size"]
    confirmed = table[table.kind == "confirm"]
    runs = {trial: list(confirmed[confirmed.confirms == trial].value) for trial in (chosen.number, fastest.number)}
    assert compared["chosen"]["runs"] == pytest.approx(runs[chosen.number])
    assert compared["fastest"]["runs"] == pytest.approx(runs[fastest.number])
    per_round = [chosen_run / fastest_run for chosen_run, fastest_run in zip(runs[chosen.number], runs[fastest.number])]
    assert compared["per_round"] == pytest.approx([min(per_round), max(per_round)])
    assert compared["ratio"] == pytest.approx(pd.Series(runs[chosen.number]).median()
                                              / pd.Series(runs[fastest.number]).median())
    line = next(line for line in out.splitlines() if line.startswith("chosen vs fastest:"))
    assert f"{compared['ratio']:.2f}x better at the fastest" in line and f"trial {fastest.number}, {format_size(fastest.params['buffer_size'])}" in line
    text = write_report(study).read_text()
    assert f"The chosen point against the fastest, both confirmed in the same interleaved rounds: " \
           f"{compared['ratio']:.2f}x" in text


def test_the_ladder_spans_the_buffers_at_the_defaults_and_only_its_improvements_count_for_the_plateau(tuner_home,
                                                                                                     capsys):
    study = tuner_home / "outputs/synthetic/random-size1-buf16MiB"
    assert main(["tune", *COMMON, "strategy=random", "strategy.trials=7", "workload.buffer_size=16MiB",
                 "objective=metric_and_memory", "confirm.rounds=0"]) == 0
    out = capsys.readouterr().out
    # a page left to the pager is shown as the pager's pages, never as a value of None
    assert "buffer ladder: 4MiB, 8MiB, 32MiB, 64MiB measured first, the defaults at each" in out
    assert "None" not in out
    rows = StudyTable(study / "trials.csv").rows
    searched = [row for row in rows if row.kind == "search"]
    # the defaults at each buffer but their own (16MiB), besides the 7 trials random search plans in its space
    assert len(searched) == 4 + 7
    ladder = searched[:4]
    assert all(row.proposed_by == LADDER for row in ladder) and all(row.proposed_by != LADDER for row in searched[4:])
    assert [row.params["buffer_size"] >> 20 for row in ladder] == [4, 8, 32, 64]
    defaults = rows[0]
    for row in ladder:  # the defaults as they run at the rung's buffer: the pager's page for each kind of region
        buffer = row.params["buffer_size"]
        writable, read_only = pager_page_size(buffer), pager_page_size(buffer, writable=False)
        assert row.params.get("page_size") == (writable if writable == read_only else None)
        assert {name: value for name, value in row.params.items() if name not in ("buffer_size", "page_size")} == \
            {name: value for name, value in defaults.params.items() if name not in ("buffer_size", "page_size")}
    on_the_ladder = front([defaults, *ladder], Goal.MINIMIZE)
    assert len(on_the_ladder) == 5
    assert (memory_bytes(on_the_ladder[0]), memory_bytes(on_the_ladder[-1])) == (4 << 20, 64 << 20)
    # the smallest rung is slower than the defaults, and no trial without improvement for the plateau
    assert ladder[0].value > defaults.value
    assert trials_without_improvement([defaults, *ladder], Goal.MINIMIZE, 0.05) == 0


def test_a_chosen_point_that_is_the_defaults_is_confirmed_against_the_fastest_and_saves_no_profile(tuner_home, capsys):
    # the defaults at the synthetic's optimum, with a 16MiB buffer: 2x the time of the 64MiB one, within 110%
    optimum = ["baseline.page_size=256KiB", "baseline.fillers=4", "baseline.evictors=2", "baseline.evict_high_water=80",
               "baseline.evict_low_water=50", "baseline.read_ahead=4", "baseline.direct_io=0"]
    study = tuner_home / "outputs/synthetic/grid-size1-buf16MiB"
    assert main(["tune", *COMMON, *optimum, "strategy=grid", "workload.buffer_size=16MiB", "space.page_size=256KiB",
                 "space.fillers=4", "space.evictors=2", "space.evict_high_water=80", "space.evict_low_water=50",
                 "space.read_ahead=4", "objective=metric_and_memory", "select=smallest_within:110%",
                 "confirm.rounds=2"]) == 0
    out = capsys.readouterr().out
    table = pd.read_csv(study / "trials.csv")
    searched = table[table.kind == "search"]
    # the ladder's rung at 16MiB is the defaults' own point: not run again; the grid has nothing left
    assert sorted(int(size) >> 20 for size in searched.buffer_size) == [4, 8, 32, 64] and set(searched.proposed_by) == {LADDER}
    fastest = int(searched.trial[searched.buffer_size == 64 << 20].iloc[0])
    assert set(table[table.kind == "confirm"].confirms.dropna()) == {0, fastest}
    summary = json.loads((study / "summary.json").read_text())
    assert summary["memory"]["chosen"] == 0 and summary["confirmed"]["trial"] == 0
    compared = summary["memory"]["against_fastest"]
    assert compared["chosen"]["defaults"] and compared["chosen"]["buffer_size"] == 16 << 20
    assert compared["fastest"]["trial"] == fastest and compared["ratio"] == pytest.approx(2.0, rel=0.2)
    assert "not saved: the chosen point is the defaults' own" in out
    assert "the fastest (trial" in out and "against the chosen (the defaults, trial 0, 16MiB)" in out


def test_buffers_past_the_data_peak_alike_and_the_least_memory_is_the_smallest_buffer_whatever_the_noise():
    gib, resident = 1 << 30, 2_281_684_992  # bfs's graph: every buffer past it peaks at the same resident bytes
    rows = [Trial(number, Kind.SEARCH, Status.OK, seconds, {"buffer_size": buffer}, stats={"resident_bytes": peak})
            for number, (buffer, peak, seconds) in enumerate([(1 * gib, 1 * gib, 5.0), (8 * gib, resident, 3.0),
                                                              (4 * gib, resident, 3.1), (16 * gib, resident, 3.3),
                                                              (3 * gib, resident, 3.2)])]
    points = front(rows, Goal.MINIMIZE)
    # the 16GiB buffer is slower than the 8GiB at the same memory; each smaller buffer stays, however slower
    assert [point.params["buffer_size"] // gib for point in points] == [1, 3, 4, 8]
    assert Selection.parse("smallest_within:10%").choose(points, Goal.MINIMIZE).params["buffer_size"] == 3 * gib
    assert Selection.parse("smallest_within:5%").choose(points, Goal.MINIMIZE).params["buffer_size"] == 4 * gib
    assert Selection.parse("fastest_within:4GiB").choose(points, Goal.MINIMIZE).params["buffer_size"] == 8 * gib


def test_the_ladders_rungs_are_geometric_over_the_spaces_buffers():
    mib = 1 << 20
    values = tuple(256 * mib << shift for shift in range(5))  # 256MiB to 4GiB
    assert rung_buffers(values, 5) == list(values)
    assert rung_buffers(values, 3) == [256 * mib, 1024 * mib, 4096 * mib]
    assert rung_buffers(values, 2) == [256 * mib, 4096 * mib]
    assert rung_buffers(values[:3], 5) == list(values[:3])  # fewer buffers than rungs: each once
    linear = tuple(range(64 * mib, 1024 * mib + 1, 64 * mib))
    assert rung_buffers(linear, 5) == [64 * mib, 128 * mib, 256 * mib, 512 * mib, 1024 * mib]


def test_a_ladder_of_one_rung_is_refused_naming_the_setting(tuner_home, capsys):
    assert main(["tune", *COMMON, "objective=metric_and_memory", "buffer_ladder=1"]) == 2
    assert "buffer_ladder must be 0 (no ladder) or a whole number >= 2" in capsys.readouterr().err


def test_a_memory_constraint_keeps_the_confirmed_and_saved_trial_within_it(tuner_home, capsys):
    assert main(["tune", *COMMON, "strategy=random", "strategy.trials=10", "constraint.memory=16MiB",
                 "confirm.rounds=1"]) == 0
    table = pd.read_csv(tuner_home / "outputs/synthetic/random-size1-buf64MiB/trials.csv")
    confirmed = table[(table.kind == "confirm") & (table.confirms != 0)]
    assert len(confirmed) > 0 and (confirmed.buffer_size <= 16 << 20).all()
    assert "memory constraint:" in capsys.readouterr().out


@pytest.mark.parametrize("override, message", [
    ("objective=speed", "objective must be one of metric, metric_and_memory"),
    ("select=smallest", "select must be smallest_within:P%"),
    ("constraint.memory=lots", "constraint.memory must be a size"),
])
def test_bad_objective_settings_are_refused_naming_them(tuner_home, capsys, override, message):
    assert main(["tune", *COMMON, override]) == 2
    assert message in capsys.readouterr().err


def test_time_against_memory_needs_the_buffer_searched():
    with pytest.raises(ConfigError, match="space.buffer_size"):
        Objective.from_config({"objective": "metric_and_memory"}, ["page_size"])


def test_a_trial_is_capped_only_by_trials_of_no_larger_a_buffer(tuner_home):
    # a cap of 1.2x the incumbent would stop a smaller buffer measured after a larger one (each halving costs 1.5x):
    # capped by the trials of no larger a buffer, none is, and the front keeps its five points. The grid's own order
    # (no ladder, which climbs from the smallest buffer), and runs of 0.2-0.6 s: the cap is 1.2x a run's wall time,
    # which the interpreter's start-up would blur in runs of milliseconds
    assert main(["tune", *COMMON, "strategy=grid", "objective=metric_and_memory", "space.page_size=256KiB",
                 "space.fillers=4", "space.evictors=2", "space.evict_high_water=80", "space.evict_low_water=50",
                 "space.read_ahead=4", "runner.cap=1.2", "runner.cap_floor=0", "confirm.rounds=0",
                 "buffer_ladder=0", "workload.size=200"]) == 0
    rows = StudyTable(tuner_home / "outputs/synthetic/grid-size200-buf64MiB/trials.csv").rows
    assert not [row for row in rows if row.status is Status.CAPPED]
    assert [point.params["buffer_size"] >> 20 for point in front(rows, Goal.MINIMIZE)] == [4, 8, 16, 32, 64]
