"""python -m experiments.evaluate: its plan composed with the tuner at real sizes, its steps at tiny sizes with real
workloads, the real tuner (Ax included) and the kernel's mmap in a memory cgroup, its outputs checked against the
study tables they were made from, a second run that measures nothing again, and its report's parts."""
from __future__ import annotations

import dataclasses
import os
import signal
import statistics
import subprocess
import sys
import threading
import time

import pandas as pd
import pytest

from tests.helpers import REPO
from experiments.evaluate import run_plan
from experiments.evaluation.findings import findings
from experiments.evaluation.figures import COLUMNS
from experiments.evaluation.llnl import figures_of, ours_over_llnl
from experiments.evaluation.plan import (AX_SEEDS, BUDGETS, KERNEL_READ_AHEAD_KIB, LARGE, MEMORY, REAL_METHODS,
                                         REAL_QUICK, SEEDED_AX, SIDE_BY_SIDE, SMALL, TRANSFER, UMAP_DEFAULTS,
                                         UNCAPPED, WORKLOADS, LlnlSpec, Plan, SideBySideSpec, Size, StudySpec, make_plan,
                                         seeded_ax)
from experiments.evaluation.plots import over_seeds
from experiments.evaluation.report import (ax_over_seeds, ax_versus_grid, llnl_rounds, same_rounds, versus,
                                           write_report)
from experiments.evaluation.rounds import same_round_ratios
from experiments.evaluation.side_by_side import CONTENDERS, load_side_by_side, tuned_winner
from experiments.evaluation.studies import Places, compose_workload, study_overrides
from autopager.analysis.result import load_study
from autopager.tuner.trial import Kind
from autopager.run.disk import read_ahead_file

EVALUATE = [sys.executable, "-m", "experiments.evaluate"]  # from the repository's root (cwd=REPO)
BUILT = (REPO / "build" / "workloads" / "sort").exists() or bool(os.environ.get("AUTOPAGER_BIN"))

needs_root_and_workloads = pytest.mark.skipif(
    os.geteuid() != 0 or not BUILT,
    reason="the evaluation drops the page cache and uses memory cgroups (root), and runs the built workloads")


def evaluate(*arguments: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([*EVALUATE, *arguments], cwd=REPO, capture_output=True, text=True, timeout=timeout)


def test_the_real_plan_composes_with_the_tuner_at_real_sizes(tmp_path):
    """Every study of the real plan is a valid tuner configuration at its real size, on the tuner's own protocol
    (capping, noise runs, confirmation), and the plan has every method, reference and scale the report needs."""
    plan = make_plan()
    places = Places(tmp_path / "out", tmp_path / "data")
    labels = [step.label for step in plan.steps]
    assert len(labels) == len(set(labels)) and set(plan.workloads) == set(WORKLOADS)
    for step in plan.steps:
        if not isinstance(step, StudySpec):
            continue
        overrides = study_overrides(dataclasses.replace(step, fixed_from=None), plan, places)
        config, _ = compose_workload(step.workload, step.scale, overrides, plan)
        size = plan.size(step.workload, step.scale)
        assert config.workload.size == size.size and config.workload.buffer_size == size.buffer
        assert config.confirm.rounds == 3 and config.noise.defaults_runs == 3, step.label
        assert config.runner.cap == (None if step.method == UNCAPPED else 2), step.label
        assert config.seed == next((seed for seed in AX_SEEDS if step.method == seeded_ax(seed)), 0), step.label
        if step.method == UMAP_DEFAULTS:
            assert config.baseline.page_size == os.sysconf("SC_PAGE_SIZE")
            assert config.baseline.fillers == config.baseline.evictors == os.cpu_count()
            assert config.baseline.read_ahead == 0 and config.baseline.direct_io == 0
        length = plan.run_length(step.workload, step.scale)
        if length:
            for command in (config.workload.command, config.workload.mmap_command):
                option = length.split()[0]  # the length's count replaces the command's own (stream's --iterations)
                assert command.count(length) == 1 and command.count(option) == 1, step.label
                assert "--lookups" not in command, step.label
        if step.workload != "bfs":  # MiB of data, several times the buffer (bfs's size is a scale)
            assert size.size * 2**20 >= 3 * size.buffer_bytes, step.label
    for workload in plan.workloads:
        large = {label.split("/")[2] for label in labels if label.startswith(f"{LARGE}/{workload}/")}
        assert large >= {"default", UMAP_DEFAULTS, "mmap", f"mmap-ra{KERNEL_READ_AHEAD_KIB}", *REAL_METHODS,
                         TRANSFER, UNCAPPED}
        assert labels.index(f"{LARGE}/{workload}/{TRANSFER}") > labels.index(f"{SMALL}/{workload}/ax")
        # the uncapped study only times the tuning without capping: after everything else
        assert labels.index(f"{LARGE}/{workload}/{UNCAPPED}") > max(
            labels.index(f"{LARGE}/{w}/{m}") for w in plan.workloads for m in REAL_METHODS)
        # Ax's other seeds, for its spread: last, so that a plan cut short has every other method first
        assert min(labels.index(f"{LARGE}/{workload}/{m}") for m in SEEDED_AX) > max(
            labels.index(f"{LARGE}/{w}/{UNCAPPED}") for w in plan.workloads)
        # the side-by-side rounds take the best of every search, and come before the studies that do not count
        assert labels.index(f"{LARGE}/{workload}/{SIDE_BY_SIDE}") > max(
            labels.index(f"{LARGE}/{w}/{m}") for w in plan.workloads for m in REAL_METHODS)
        assert labels.index(f"{LARGE}/{workload}/{SIDE_BY_SIDE}") < labels.index(f"{LARGE}/{workload}/{UNCAPPED}")
    assert {step.label for step in plan.steps if isinstance(step, LlnlSpec)} == {
        f"{LARGE}/sort/llnl", f"{LARGE}/bfs/llnl", f"{MEMORY}/bfs/llnl"}
    assert {(step.workload, step.scale) for step in plan.steps if isinstance(step, SideBySideSpec)} == {
        (w, scale) for w in plan.workloads for scale in plan.scales(w) if scale != SMALL}
    assert plan.size("bfs", MEMORY).buffer_bytes >= 8 * 2**30 and plan.size("sort", LARGE).size == 4096


def test_dry_run_lists_the_real_steps_and_an_estimate():
    run = evaluate("--dry-run")
    assert run.returncode == 0, run.stderr[-3000:]
    assert f"{len(make_plan().steps)} steps, roughly" in run.stdout and f"{LARGE}/sort/{UNCAPPED}" in run.stdout


def test_steps_selects_the_matching_steps_and_refuses_a_pattern_that_matches_none():
    def dry_run(*steps: str) -> subprocess.CompletedProcess:
        return evaluate("--dry-run", "--steps", ",".join(steps))

    run = dry_run(f"{LARGE}/sort/llnl", "*/bfs/ax")
    assert run.returncode == 0, run.stderr[-3000:]
    listed = [line.split(". ", 1)[1].split(" (")[0] for line in run.stdout.splitlines() if ". " in line]
    assert listed == [f"{LARGE}/bfs/ax", f"{MEMORY}/bfs/ax", f"{SMALL}/bfs/ax", f"{LARGE}/sort/llnl"]
    refused = dry_run(f"{LARGE}/sort/llnl", "large/sort/lnl")
    assert refused.returncode != 0 and "large/sort/lnl" in refused.stderr and "llnl" not in refused.stdout


@needs_root_and_workloads
def test_real_plan_at_quick_sizes_reports_confirmed_figures(tmp_path):
    """The real plan's steps at tiny sizes: every study on the tuner's protocol with its confirmation, the kernel at
    two read-aheads (restored after), LLNL skipped with its reason, and the report's figures from those records."""
    out, data = tmp_path / "out", tmp_path / "data"
    run = evaluate("--quick", "--out", str(out), "--data-dir", str(data), "--workloads", "sort", timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    steps = pd.read_csv(out / "steps.csv", dtype={"error": str}).set_index("step")
    assert steps.loc[f"{LARGE}/sort/llnl", "status"] == "skipped"
    assert (steps.drop(index=[f"{LARGE}/sort/llnl"]).status == "ok").all()
    figures = pd.read_csv(out / "real_figures.csv")
    large = figures[figures.scale == LARGE].set_index("method")
    for method in ("ax", "grid", "pagesize"):
        study = load_study(out / "studies" / LARGE / "sort" / method)
        confirmed = study.confirmed()
        assert large.loc[method, "confirmed_speedup"] == pytest.approx(confirmed["speedup"])
        assert large.loc[method, "confirmed_low"] <= confirmed["speedup"] <= large.loc[method, "confirmed_high"]
        assert len(confirmed["values"]) == 3
        # a run's length is the winner's confirmation runs' wall time, one run at a time
        rounds = [trial for trial in study.of_kind(Kind.CONFIRM) if trial.confirms == confirmed["trial"]]
        assert len(rounds) == 3
        assert large.loc[method, "run_seconds"] == pytest.approx(
            statistics.median(trial.wall_seconds / len(trial.values) for trial in rounds))
    # the transfer measures what the small study would save: its confirmed winner, not its luckiest run
    winner = load_study(out / "studies" / SMALL / "sort" / "ax").confirmed()["params"]
    transfer = load_study(out / "studies" / LARGE / "sort" / TRANSFER)
    assert {k: transfer.trials[k].iloc[0] for k in winner if k != "buffer_size"} == \
        {k: v for k, v in winner.items() if k != "buffer_size"}
    assert large.loc[f"mmap-ra{KERNEL_READ_AHEAD_KIB}", "read_ahead_kib"] == KERNEL_READ_AHEAD_KIB
    disk = read_ahead_file(data)
    assert disk is None or large.loc["mmap", "read_ahead_kib"] == int(disk.read_text())
    summary = (out / "summary.md").read_text()
    for heading in ("## The tuned pager against the rest", "## Tuning time of each strategy, capped and uncapped",
                    "## Ax against the grid", "## Findings"):
        assert heading in summary, heading
    assert f"read-ahead {KERNEL_READ_AHEAD_KIB} KiB" in summary
    # the best tuned winner, our defaults and the kernel at both read-aheads, one run each a round, turned each round
    record = load_side_by_side(Places(out, data), LARGE, "sort")
    method, params = tuned_winner(make_plan(REAL_QUICK, ("sort",)), Places(out, data), "sort", LARGE)
    assert record["tuned_method"] == method and record["tuned_params"] == params and record["error"] is None
    order = [(run["round"], run["contender"]) for run in record["runs"]]
    assert order == [(0, name) for name in CONTENDERS] + [(1, name) for name in CONTENDERS[1:] + CONTENDERS[:1]]
    assert all(run["value"] > 0 for run in record["runs"])
    assert record["read_ahead_kib"][f"mmap-ra{KERNEL_READ_AHEAD_KIB}"] == KERNEL_READ_AHEAD_KIB
    assert "### The same, in the same rounds" in summary and "in the same rounds" in summary.split("## Findings")[1]
    headline = summary.split("## The tuned pager against the rest")[1].split("###")[0]
    assert headline.count(", same rounds") == 3  # our defaults and the kernel twice, from the same winner's rounds
    # a second run of a finished step measures nothing again
    before = {path: len(pd.read_csv(path)) for path in (out / "studies").rglob("trials.csv")}
    again = evaluate("--quick", "--out", str(out), "--data-dir", str(data), "--workloads", "sort",
                     "--steps", f"{LARGE}/sort/ax,{LARGE}/sort/default", timeout=300)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert {path: len(pd.read_csv(path)) for path in (out / "studies").rglob("trials.csv")} == before


def table_rows(path) -> pd.DataFrame:
    try:
        return pd.read_csv(path, dtype={"repeats": str})  # one run's value, or several joined by ";"
    except (FileNotFoundError, pd.errors.EmptyDataError):
        return pd.DataFrame()


@pytest.mark.skipif(os.geteuid() != 0, reason="the real plan's runs are in memory cgroups (root)")
def test_a_search_cut_short_is_not_done_shows_no_figure_and_resumes(tmp_path):
    """The real plan's grid and Ax on the synthetic workload, Ax stopped mid-search by Ctrl-C (SIGINT): its step is
    logged as interrupted, the report says so and quotes no speedup or tuning time of it, nor its cost against the
    grid's, and the next run resumes it (its finished trials kept) to its confirmation; only then is the step done."""
    places = Places(tmp_path / "out", tmp_path / "data")
    places.out.mkdir()
    grid = StudySpec("synthetic", LARGE, "grid", "grid", space="evaluation", overrides=("budget.trials=3",))
    ax = StudySpec("synthetic", LARGE, "ax", "ax", overrides=("strategy.initialization_trials=3", "strategy.trials=6"))
    plan = Plan(REAL_QUICK, ("synthetic",), {"synthetic": {LARGE: Size(2, "64MiB")}}, BUDGETS[REAL_QUICK], {},
                steps=[grid, ax])
    table = places.study(LARGE, "synthetic", "ax") / "trials.csv"
    stop = threading.Event()

    def interrupt_after_three_trials():
        while not stop.is_set():
            if len(table_rows(table)) >= 3:
                os.kill(os.getpid(), signal.SIGINT)
                return
            time.sleep(0.05)

    watcher = threading.Thread(target=interrupt_after_three_trials, daemon=True)
    # Ctrl-C as Python handles it by default: in the whole suite an earlier test leaves another SIGINT handler,
    # and a SIGINT then did not interrupt the plan.
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    watcher.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            run_plan(plan, places, 60, None, None)
    finally:
        stop.set()
        watcher.join()
        signal.signal(signal.SIGINT, handler)
    before = table_rows(table)
    searched = int((before.kind == "search").sum())
    assert searched >= 1 and not (before.kind == "confirm").any()
    steps = pd.read_csv(places.out / plan.log, dtype={"error": str})
    cut_short = f"interrupted after {searched} trial{'' if searched == 1 else 's'}, not confirmed"
    assert list(steps.status) == ["ok", "interrupted"] and steps.error[1] == cut_short

    write_report(plan, places, "test")
    figures = pd.read_csv(places.out / "real_figures.csv").set_index("method")
    assert figures.loc["ax", "incomplete"] == cut_short and figures.loc["ax", "trials"] == searched
    assert figures.loc["ax", ["value", "confirmed_speedup", "wall_seconds", "time_to_best_seconds"]].isna().all()
    assert pd.isna(figures.loc["grid", "incomplete"]) and figures.loc["grid", "confirmed_speedup"] > 0
    summary = (places.out / "summary.md").read_text()
    section = {part.split("\n")[0]: part for part in summary.split("\n## ")}
    tuning = section["Tuning time of each strategy, capped and uncapped"]
    assert f" | {cut_short} ({searched} trials, 0 capped) | - | - | - |" in tuning
    versus_grid = section["Ax against the grid (large size)"]
    grid_figure = f"{figures.loc['grid', 'confirmed_speedup']:.2f}x"
    assert f"| synthetic | {cut_short} | {grid_figure} | yes | - | " in versus_grid
    assert versus_grid.splitlines()[-1].split(" | ")[8] == "-"  # no Ax time / grid time
    assert cut_short in section["Findings, the disappointing ones first"]
    assert "interrupted" in section["Steps that failed"] and cut_short in section["Steps that failed"]

    run_plan(plan, places, 60, None, None)  # the next run resumes it
    after = table_rows(table)
    pd.testing.assert_frame_equal(after.iloc[:len(before)], before, check_dtype=False)  # finished trials kept
    assert (after.kind == "confirm").any() and int((after.kind == "search").sum()) == 6
    assert list(pd.read_csv(places.out / plan.log).status) == ["ok", "interrupted", "ok", "ok"]
    study = load_study(places.study(LARGE, "synthetic", "ax"))
    assert study.unconfirmed() is None
    write_report(plan, places, "test")
    figures = pd.read_csv(places.out / "real_figures.csv").set_index("method")
    assert pd.isna(figures.loc["ax", "incomplete"])
    assert figures.loc["ax", "confirmed_speedup"] == pytest.approx(study.confirmed()["speedup"])
    summary = (places.out / "summary.md").read_text()
    assert "not confirmed" not in summary and "Every one of the 2 steps finished." in summary


def test_ax_and_a_grid_over_different_defaults_are_reported_as_not_comparable():
    """The report compares Ax with the grid only where both searched over the same defaults: over others, the finding
    and the Ax-against-grid table say their speedups do not compare, and no cost ratio is quoted in the findings."""
    def search(method: str, value: float, speedup: float, defaults: str, seconds: float) -> dict:
        return {"workload": "synthetic", "scale": LARGE, "size": 2, "buffer": "64MiB", "metric": "seconds",
                "goal": "minimize", "method": method, "value": value, "low": value, "high": value, "runs": 3,
                "confirmed_speedup": speedup, "confirmed_low": speedup, "confirmed_high": speedup, "trials": 30,
                "capped": 0, "failed": 0, "wall_seconds": seconds, "time_to_best_seconds": seconds / 2,
                "defaults": defaults}

    plan = Plan(REAL_QUICK, ("synthetic",), {"synthetic": {LARGE: Size(2, "64MiB")}}, BUDGETS[REAL_QUICK], {},
                steps=[])

    def report(grid_defaults: str) -> tuple[list[str], str]:
        figures = pd.DataFrame([search("ax", 1.0, 1.10, "page_size=1048576", 100.0),
                                search("grid", 2.0, 1.50, grid_defaults, 400.0)], columns=COLUMNS)
        return findings(figures, plan), ax_versus_grid(figures, plan)

    found, table = report("page_size=65536")
    assert ("**synthetic (large): Ax and the grid ran over different defaults**: their confirmed speedups "
            "(1.10x and 1.50x) are not comparable.") in found
    assert not any("the grid's tuning time" in text for text in found)
    assert "| no: the speedups are not comparable |" in table

    found, table = report("page_size=1048576")
    assert any("Ax is behind the grid" in text and "at 0.25x the grid's tuning time" in text for text in found)
    assert "| yes |" in table


def test_a_tuned_figure_from_runs_shorter_than_ten_seconds_is_reported_as_such():
    """The issue's figures come from runs of at least 10 s: the summary states a run's length beside the tuned figure
    and flags, among the disappointing findings, a tuned winner whose runs were shorter."""
    plan = Plan(REAL_QUICK, ("synthetic",), {"synthetic": {LARGE: Size(2, "64MiB")}}, BUDGETS[REAL_QUICK], {},
                steps=[])

    def found(run_seconds: float) -> list[str]:
        figures = pd.DataFrame([{"workload": "synthetic", "scale": LARGE, "metric": "seconds", "goal": "minimize",
                                 "method": "ax", "value": 6.0, "low": 5.9, "high": 6.2, "runs": 3,
                                 "confirmed_speedup": 1.3, "confirmed_low": 1.2, "confirmed_high": 1.4,
                                 "wall_seconds": 600.0, "run_seconds": run_seconds, "defaults": "page_size=1048576"}],
                               columns=COLUMNS)
        return findings(figures, plan)

    short = found(6.24)
    assert short[0] == ("**synthetic (large): runs shorter than 10 s**: a run of the tuned winner takes 6.2 s "
                        "(wall time, the program's start included).")
    assert not any("shorter than" in text for text in found(10.5))


def test_capping_that_saved_no_time_is_among_the_disappointing_findings():
    """Capping is there to save tuning time: where the capped Ax study took longer than the uncapped one, the
    summary says so first, among the disappointing findings; where it saved time, it gives the ratio."""
    plan = Plan(REAL_QUICK, ("synthetic",), {"synthetic": {LARGE: Size(2, "64MiB")}}, BUDGETS[REAL_QUICK], {},
                steps=[])

    def found(capped_seconds: float) -> list[str]:
        def ax(method: str, seconds: float, capped: int) -> dict:
            return {"workload": "synthetic", "scale": LARGE, "metric": "seconds", "goal": "minimize",
                    "method": method, "value": 6.0, "low": 5.9, "high": 6.2, "runs": 3, "confirmed_speedup": 1.3,
                    "confirmed_low": 1.2, "confirmed_high": 1.4, "trials": 30, "capped": capped, "failed": 0,
                    "wall_seconds": seconds, "run_seconds": 12.0, "defaults": "page_size=1048576"}
        return findings(pd.DataFrame([ax("ax", capped_seconds, 3), ax("ax-uncapped", 800.0, 0)],
                                          columns=COLUMNS), plan)

    slower = found(1000.0)
    assert slower[0].startswith("**synthetic (large): capping saved no time**: the capped Ax study took 1.25x")
    assert "synthetic (large): capping made Ax's study take 0.75x the uncapped study's time (3 capped runs)." \
        in found(600.0)
    assert not any("saved no time" in text for text in found(600.0))


def test_ax_over_seeds_gives_the_spread_of_its_winner_and_of_its_convergence():
    """Ax at several seeds: the summary gives a row a seed, a finding with the range of the confirmed speedups
    (among the disappointing ones where the seed decides whether tuning pays), and the convergence plot's band is
    the median and range of the seeds' best-so-far from when every seed has a best."""
    plan = Plan(REAL_QUICK, ("synthetic",), {"synthetic": {LARGE: Size(2, "64MiB")}}, BUDGETS[REAL_QUICK], {},
                steps=[])

    def ax(method: str, speedup: float, seconds: float) -> dict:
        return {"workload": "synthetic", "scale": LARGE, "metric": "seconds", "goal": "minimize", "method": method,
                "value": 6.0, "low": 5.9, "high": 6.2, "runs": 3, "confirmed_speedup": speedup,
                "confirmed_low": speedup - 0.1, "confirmed_high": speedup + 0.1, "trials": 30, "capped": 0,
                "failed": 0, "wall_seconds": seconds, "time_to_best_seconds": seconds / 2, "run_seconds": 12.0,
                "page_size": 1048576, "defaults": "page_size=1048576"}

    figures = pd.DataFrame([ax("ax", 1.30, 900.0), ax(SEEDED_AX[0], 1.05, 1200.0), ax(SEEDED_AX[1], 1.20, 1000.0)],
                           columns=COLUMNS)
    found = findings(figures, plan)
    assert ("**synthetic (large): whether Ax pays depends on its seed**: Ax over 3 seeds: confirmed 1.05-1.30x over "
            "our defaults, tuning time 15.0 min to 20.0 min.") in found
    table = ax_over_seeds(figures, plan).splitlines()
    assert len(table) == 2 + 3 and table[3].startswith("| synthetic | 1 | 1.05x (0.95-1.15) | 1MiB | 12.0 s |")
    steady = findings(figures.assign(confirmed_speedup=[1.3, 1.2, 1.25]), plan)
    assert "synthetic (large): Ax over 3 seeds: confirmed 1.20-1.30x over our defaults, tuning time 15.0 min to " \
        "20.0 min." in steady
    assert ax_over_seeds(figures[figures.method == "ax"], plan).count("\n") == 1  # one seed: no rows

    band = over_seeds([pd.DataFrame({"elapsed": [10.0, 30.0], "speedup": [1.0, 1.5]}),
                       pd.DataFrame({"elapsed": [20.0, 40.0], "speedup": [1.2, 1.3]}),
                       pd.DataFrame({"elapsed": [5.0, 25.0], "speedup": [0.8, 2.0]})])
    assert list(band.elapsed) == [20.0, 25.0, 30.0, 40.0]  # from when all three have a best
    assert list(band["median"]) == [1.0, 1.2, 1.5, 1.5] and list(band.low) == [0.8, 1.0, 1.2, 1.3]
    assert list(band.high) == [1.2, 2.0, 2.0, 2.0]


def test_side_by_side_rounds_give_ratios_of_medians_with_the_per_round_range():
    """The tuned pager over each other contender of the side-by-side rounds: the ratio of the medians over the
    rounds both ran, with the range of the per-round ratios; the findings take the kernel's verdict from them."""
    runs = [(0, "tuned", 10.0), (0, "default", 12.0), (0, "mmap", 9.0), (0, "mmap-ra128", 20.0),
            (1, "tuned", 11.0), (1, "default", 12.1), (1, "mmap", 10.0), (1, "mmap-ra128", 22.0),
            (2, "tuned", 10.5), (2, "default", 13.0), (2, "mmap", None), (2, "mmap-ra128", 21.0)]
    record = {"workload": "synthetic", "scale": LARGE, "metric": "seconds", "goal": "minimize", "tuned_method": "ax",
              "tuned_params": {"page_size": 65536}, "read_ahead_kib": {"mmap": 8192, "mmap-ra128": 128},
              "error": "mmap: timed out", "runs": [{"round": r, "contender": c, "value": v, "error": None}
                                                   for r, c, v in runs]}
    ratios = same_round_ratios(record)
    assert ratios["default"] == pytest.approx((12.1 / 10.5, 12.1 / 11.0, 13.0 / 10.5))
    assert ratios["mmap"] == pytest.approx((9.5 / 10.5, 0.9, 10.0 / 11.0))  # rounds 0 and 1 only
    assert ratios["mmap-ra128"] == pytest.approx((21.0 / 10.5, 2.0, 22.0 / 11.0))
    table = same_rounds({("synthetic", LARGE): record}).splitlines()
    assert table[2] == ("| synthetic | large | page size 64KiB (ax) | 3 | 10.5 | 1.15x (1.10-1.24) | "
                        "0.90x (0.90-0.91) at 8192 KiB | 2.00x (2.00-2.00) |")

    plan = Plan(REAL_QUICK, ("synthetic",), {"synthetic": {LARGE: Size(2, "64MiB")}}, BUDGETS[REAL_QUICK], {},
                steps=[])
    row = {"workload": "synthetic", "scale": LARGE, "metric": "seconds", "goal": "minimize", "value": 6.0,
           "low": 5.9, "high": 6.2, "runs": 3, "trials": 30, "capped": 0, "failed": 0, "run_seconds": 12.0}
    figures = pd.DataFrame([row | {"method": "ax", "confirmed_speedup": 1.3, "confirmed_low": 1.2,
                                   "confirmed_high": 1.4, "wall_seconds": 900.0, "defaults": "page_size=1048576"},
                            row | {"method": "mmap", "value": 12.0, "low": 11.0, "high": 13.0, "read_ahead_kib": 8192}],
                           columns=COLUMNS)
    apart = findings(figures, plan)
    assert "synthetic (large): the tuned pager beats the kernel's mmap (read-ahead 8192 KiB), measured apart: " \
        "2.00x (1.77-2.20x)." in apart
    together = findings(figures, plan, {("synthetic", LARGE): record})
    assert "synthetic (large): ax's winner over our defaults in the side-by-side rounds: 1.15x (1.10-1.24x)." \
        in together
    slower = [run | {"value": 14.0} if run["contender"] == "tuned" else run for run in record["runs"]]
    assert ("**synthetic (large): ax's winner does not hold up beside our defaults**: in the side-by-side rounds it "
            "is 0.86x (0.86-0.93x) our defaults, where its study confirmed 1.30x.") in findings(
        figures, plan, {("synthetic", LARGE): record | {"runs": slower}})
    assert ("**synthetic (large)**: the tuned pager **loses to** the kernel's mmap (read-ahead 8192 KiB) in the same "
            "rounds (ax's winner): 0.90x (0.90-0.91x).") in together


def test_llnl_rounds_put_our_library_beside_llnl_umap_on_its_own_program():
    """LLNL UMap's figure is its best page size's median; our library with our defaults and with the tuned winner
    is compared with it round by round on the same program (a failed run drops only its round), and the headline's
    LLNL column and the findings take those ratios where the winner is the headline's."""
    runs = [(0, "llnl 1MiB", 30.0), (0, "llnl 4MiB", 20.0), (0, "default", 25.0), (0, "tuned", 16.0),
            (1, "llnl 1MiB", 31.0), (1, "llnl 4MiB", 22.0), (1, "default", 24.0), (1, "tuned", 18.0),
            (2, "llnl 1MiB", 29.0), (2, "llnl 4MiB", None), (2, "default", 26.0), (2, "tuned", 17.0)]
    runs = [{"round": r, "contender": c, "phase": v} if v is not None else
            {"round": r, "contender": c, "error": "over 120 s"} for r, c, v in runs]
    found = figures_of(runs)
    assert (found["page_size"], found["value"], found["values"]) == ("4MiB", 21.0, [20.0, 22.0])
    assert found["medians"] == {"1MiB": 30.0, "4MiB": 21.0} and found["ours"] == {"default": 25.0, "tuned": 17.0}
    assert found["error"] == "llnl 4MiB: over 120 s"
    record = {"workload": "synthetic", "scale": LARGE, "program": "umapsort", "buffer": "64MiB", "goal": "minimize",
              "tuned_method": "ax", "tuned_params": {"page_size": 1 << 20}, **found, "runs": runs}
    ratios = ours_over_llnl(record)
    assert ratios["tuned"] == pytest.approx((21.0 / 17.0, 22.0 / 18.0, 20.0 / 16.0))  # rounds 0 and 1
    assert ratios["default"] == pytest.approx((21.0 / 24.5, 20.0 / 25.0, 22.0 / 24.0))
    assert ours_over_llnl({key: value for key, value in record.items() if key != "rounds"}) == {}
    assert llnl_rounds({("synthetic", LARGE): record}).splitlines()[2] == (
        "| synthetic | large | umapsort | 3 | 21.0 s (4MiB) | 25.0 s | 0.86x (0.80-0.92) | 17.0 s (ax, 1MiB) | "
        "1.24x (1.22-1.25) |")

    plan = Plan(REAL_QUICK, ("synthetic",), {"synthetic": {LARGE: Size(2, "64MiB")}}, BUDGETS[REAL_QUICK], {},
                steps=[])
    figures = pd.DataFrame([{"workload": "synthetic", "scale": LARGE, "metric": "seconds", "goal": "minimize",
                             "method": "ax", "value": 6.0, "low": 5.9, "high": 6.2, "runs": 3, "trials": 30,
                             "capped": 0, "failed": 0, "run_seconds": 12.0, "confirmed_speedup": 1.3,
                             "confirmed_low": 1.2, "confirmed_high": 1.4, "wall_seconds": 900.0,
                             "defaults": "page_size=1048576"}], columns=COLUMNS)
    assert "| 1.24x (1.22-1.25), same rounds, its program |" in versus(figures, plan, {}, {("synthetic", LARGE): record})
    other_winner = {("synthetic", LARGE): record | {"tuned_method": "grid"}}
    assert versus(figures, plan, {}, other_winner).splitlines()[2].endswith("| - |")
    found = findings(figures, plan, llnl={("synthetic", LARGE): record})
    assert ("synthetic (large): the tuned pager beats LLNL UMap on its own program (umapsort) in the same rounds "
            "(ax's winner): 1.24x (1.22-1.25x).") in found
    assert ("**synthetic (large): our defaults lose to LLNL UMap** at its best page size on its own program, "
            "untuned, in the same rounds: 0.86x (0.80-0.92x).") in found
