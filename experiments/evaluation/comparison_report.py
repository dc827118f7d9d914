"""The Ax-against-grid comparison's results: ``ax_vs_grid.csv`` (a row for each workload and method) and
``ax_vs_grid.md`` (the targets of issue 4, judged on the confirmed figures, with what they were measured on).

The targets, for each workload and each Ax seed: Ax's best parameters, measured again, are at least 2x faster
than the defaults measured again; they are within 10% of the grid's best measured again (Ax's time at most
1.1 times the grid's); and Ax's study took at most a fifth of the grid's wall time (each study from its
first trial's start to its last trial's end: the runs, the tuner's own work, Ax's model fits), Ax's with the
import of torch and Ax added (the evaluation imports them once, before the studies, and logs how long it took;
a tuner process with the grid imports neither).
"""
from __future__ import annotations

import datetime
import statistics
from pathlib import Path
from typing import Any

import pandas as pd

from autopager.run.goal import speedup
from autopager.parameters import show
from evaluation import markdown as md
from evaluation.comparison import SCALE, SPACE, confirmation
from autopager.analysis.machine_table import describe
from evaluation.plan import Plan
from evaluation.studies import OPTIMIZER_STEP, TIMEOUT_FACTOR, TIMEOUT_FLOOR, Places
from autopager.analysis.result import StudyResult, load_study

TARGET_SPEEDUP, TARGET_NEAR_GRID, TARGET_TIME_SHARE = 2.0, 1 / 1.1, 0.2
SHOWN = ("page_size", "fillers", "evictors", "read_ahead")
COLUMNS = ["workload", "size", "buffer", "method", "trials", "reused", "failed", "best_value", "confirmed_value",
           "confirmed_runs", "confirmed_speedup_vs_default", "confirmed_vs_grid", "paired_vs_grid", "wall_seconds",
           "run_seconds",
           "ask_seconds", "sobol_ask_mean", "model_ask_mean", "import_seconds", "time_to_best_seconds", "time_vs_grid",
           *SHOWN]


def searches(plan: Plan, workload: str) -> list[str]:
    """The tuning methods of a workload, in run order."""
    return [step.method for step in plan.steps if step.workload == workload and step.strategy in ("ax", "grid")]


def confirmed_runs(places: Places, plan: Plan, workload: str, method: str) -> list[float]:
    """The confirmation rounds' runs of ``method``'s best parameters, in round order."""
    studies = [load_study(places.study(SCALE, workload, confirmation(method, round_)))
               for round_ in range(plan.budget.confirm_repeats)]
    return [value for study in studies if study for value in study.default_values()]


def paired(places: Places, plan: Plan, workload: str, method: str) -> float | None:
    """The median over the confirmation rounds of the speedup of ``method``'s run over the grid's run of the
    same round: less moved than the ratio of medians by a machine that changes speed between rounds."""
    ratios = []
    for round_ in range(plan.budget.confirm_repeats):
        runs = [load_study(places.study(SCALE, workload, confirmation(m, round_))) for m in (method, "grid")]
        values = [study.default_values() if study else [] for study in runs]
        if all(values):
            ratios.append(speedup(values[0][0], values[1][0], "minimize"))
    return statistics.median(ratios) if ratios else None


def ask_mean(study: StudyResult, node: str) -> float | None:
    if "proposed_by" not in study.trials:
        return None
    asks = study.trials.ask_seconds[study.trials.proposed_by == node]
    return float(asks.mean()) if len(asks) else None


def method_row(places: Places, plan: Plan, workload: str, method: str) -> dict[str, Any] | None:
    study = load_study(places.study(SCALE, workload, method))
    if study is None:
        return None
    size = plan.size(workload, SCALE)
    best, params = study.best(), study.best_params() or {}
    runs = confirmed_runs(places, plan, workload, method)
    kinds = study.trials.kind
    return {
        "workload": workload, "size": size.size, "buffer": size.buffer, "method": method, "trials": len(study.trials),
        "reused": int((kinds == "reused").sum()), "failed": study.failed(), "import_seconds": None,
        "best_value": None if best is None else float(best.value),
        "confirmed_value": statistics.median(runs) if runs else None, "confirmed_runs": ";".join(f"{v:.4g}" for v in runs),
        "wall_seconds": study.wall_seconds(), "run_seconds": float(study.trials.wall_seconds.fillna(0).sum()),
        "ask_seconds": float(study.trials.get("ask_seconds", pd.Series(dtype=float)).fillna(0).sum()),
        "sobol_ask_mean": ask_mean(study, "Sobol"), "model_ask_mean": ask_mean(study, "MBM"),
        "time_to_best_seconds": study.time_to_best(), **{name: params.get(name) for name in SHOWN},
    }


def import_seconds(places: Places, plan: Plan) -> float:
    """How long importing torch and Ax took (the median of the evaluation's runs)."""
    path = places.out / plan.log
    log = pd.read_csv(path) if path.is_file() else pd.DataFrame(columns=["step", "seconds"])
    seconds = log.seconds[log.step == OPTIMIZER_STEP]
    return float(seconds.median()) if len(seconds) else 0.0


def collect(plan: Plan, places: Places) -> pd.DataFrame:
    rows = []
    imported = import_seconds(places, plan)
    for workload in plan.workloads:
        found = {m: method_row(places, plan, workload, m) for m in ("default", *searches(plan, workload))}
        defaults, grid = found["default"], found.get("grid")
        for row in filter(None, found.values()):
            reference = defaults and defaults["confirmed_value"]
            value = row["confirmed_value"]
            row["confirmed_speedup_vs_default"] = speedup(value, reference, "minimize") if value and reference else None
            if grid and grid["confirmed_value"] and value:
                row["confirmed_vs_grid"] = speedup(value, grid["confirmed_value"], "minimize")
                row["paired_vs_grid"] = paired(places, plan, workload, row["method"])
            if row["method"].startswith("ax"):
                row["import_seconds"] = imported
            if grid and row["method"] != "default":
                row["time_vs_grid"] = (row["wall_seconds"] + (row["import_seconds"] or 0)) / grid["wall_seconds"]
            rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS)


def verdict(value, passes: bool) -> str:
    return "-" if md.missing(value) else f"{'yes' if passes else '**no**'} ({value:.2f})"


def targets(figures: pd.DataFrame) -> str:
    header = ["workload", "Ax run", "Ax best over defaults (>= 2x)", "Ax / grid, confirmed (>= 0.91)",
              "Ax time with its import / grid time (<= 0.2)", "all three"]
    rows = []
    for _, row in figures[figures.method.str.startswith("ax")].iterrows():
        checks = [(row.confirmed_speedup_vs_default, TARGET_SPEEDUP, False),
                  (row.confirmed_vs_grid, TARGET_NEAR_GRID, False), (row.time_vs_grid, TARGET_TIME_SHARE, True)]
        met = [not md.missing(v) and (v <= bound if at_most else v >= bound) for v, bound, at_most in checks]
        rows.append([row.workload, row.method] + [verdict(v, ok) for (v, _, _), ok in zip(checks, met)]
                    + ["yes" if all(met) else "**no**"])
    return md.table(header, rows)


def figures_table(figures: pd.DataFrame) -> str:
    header = ["workload", "method", "trials (reused, failed)", "best trial (s)", "confirmed (s), runs",
              "confirmed x defaults", "confirmed x grid (round by round)", "study wall time", "of which runs", "strategy's asks",
              "ask: Sobol / model (mean)", "+ import", "time to its best"] + list(SHOWN)
    rows = []
    for _, r in figures.iterrows():
        asks = "-" if md.missing(r.model_ask_mean) else f"{md.number(r.sobol_ask_mean)} / {md.number(r.model_ask_mean)} s"
        rows.append([r.workload, r.method, f"{r.trials} ({r.reused}, {r.failed})", md.number(r.best_value),
                     f"{md.number(r.confirmed_value)} ({r.confirmed_runs or '-'})", md.times(r.confirmed_speedup_vs_default),
                     f"{md.times(r.confirmed_vs_grid)} ({md.times(r.paired_vs_grid)})", md.seconds(r.wall_seconds), md.seconds(r.run_seconds),
                     md.seconds(r.ask_seconds), asks, md.seconds(r.import_seconds), md.seconds(r.time_to_best_seconds)]
                    + ["-" if md.missing(r[n]) else show(n, int(r[n])) for n in SHOWN])
    return md.table(header, rows)


def setup(plan: Plan, places: Places) -> str:
    rows = []
    for workload in plan.workloads:
        size = plan.size(workload, SCALE)
        grid = load_study(places.study(SCALE, workload, "grid"))
        rows.append([workload, size.size, size.buffer, f"4KiB..{size.largest_page}",
                     "-" if grid is None else len(grid.trials)])
    budget = plan.budget
    return (f"Space `configs/space/{SPACE}.yaml` (page sizes by powers of two up to an eighth of the buffer, fillers "
            f"and evictors 1, 2 or 4, read-ahead 0, 1, 4 or 16 pages; the rest at the defaults), the same for both "
            f"methods. The grid measures every point once; Ax runs {budget.ax_initialization} initialization trials "
            f"(the defaults' run and Sobol points) then Bayesian ones up to {budget.ax_trials}, with several seeds; "
            f"a proposal of parameters already measured is answered from the study's table, not run again "
            f"(`reused`). Every study starts with a run of the defaults. Then the defaults and each method's best "
            f"parameters are measured again in {budget.confirm_repeats} rounds, each measuring every one of them "
            f"once (the median of a method's runs is its confirmed figure; a confirmation run may take 60 s). Before "
            f"every run the page cache is dropped; every run is in a memory cgroup of the buffer plus what the "
            f"program needs beside its data, the bookkeeping of the buffer's pages and the data's page tables; a trial may take {TIMEOUT_FACTOR}x the defaults' time ({TIMEOUT_FLOOR} s "
            f"at least).\n\n"
            + md.table(["workload", "size knob", "pager buffer", "page sizes", "grid points (with the defaults' run)"],
                       rows))


def steps(places: Places, plan: Plan) -> str:
    path = places.out / plan.log
    if not path.is_file():
        return "No step has run yet."
    log = pd.read_csv(path, dtype={"error": str})
    loads = pd.concat([log.load_before, log.load_after])
    last = log.drop_duplicates("step", keep="last")
    bad = last[last.status != "ok"]
    failed = ("Every step finished." if bad.empty else
              md.table(["step", "error"], [[r.step, r.error] for _, r in bad.iterrows()]))
    return (f"Load average (1 min) at the start and end of each step: min {loads.min():.1f}, median "
            f"{loads.median():.1f}, max {loads.max():.1f} (2 hardware threads; per step in `{plan.log}`).\n\n"
            + failed)


def write_comparison(plan: Plan, places: Places, command: str) -> Path:
    out = places.out
    figures = collect(plan, places)
    figures.to_csv(out / "ax_vs_grid.csv", index=False)
    machine = "\n".join(f"- {label}: {text}" for label, text in describe(places.data_dir, list(plan.workloads)))
    sections = [
        "# Ax against grid on the same sampled space",
        f"Generated {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC by `{command}` from the "
        f"studies under `studies/{SCALE}/` (one `trials.csv` a study). All figures: `ax_vs_grid.csv`.",
        "## The targets (issue 4), on the confirmed figures\n" + targets(figures),
        "## Every method\nTimes in seconds of the workload's timed kernel (lower is better). `confirmed`: the best "
        "parameters measured again (the runs in brackets); `x defaults`, `x grid`: speedups over the defaults and "
        "over the grid's best, both measured again. Study wall time: from the first trial's start to the last "
        "one's end; of which the runs (with each run's process start); the strategy's asks (Ax's model fits). "
        "`+ import`: importing torch and Ax, added to Ax's time in the targets.\n\n"
        + figures_table(figures),
        "## Setup\n" + setup(plan, places),
        "## Machine\n" + machine,
        "## Steps and load\n" + steps(places, plan),
    ]
    discussion = out / "ax_vs_grid_discussion.md"
    if discussion.is_file():
        sections.append(discussion.read_text().strip())
    path = out / "ax_vs_grid.md"
    path.write_text("\n\n".join(sections) + "\n")
    return path
