"""The evaluation's figures (real_figures.csv): a row for each workload, scale and method.

A search study's figure is the tuner's confirmation as recorded (``StudyResult.confirmed``): the winner's median
over interleaved rounds against the defaults measured in the same rounds, with the spread of the per-round ratios.
A fixed-parameter study (our defaults, UMap's defaults, the transfer), the kernel's mmap and LLNL UMap have the
median of their runs; a speedup against one of them is taken between medians, its spread between the extremes
(the worst of one side against the best of the other), since their runs are not interleaved with the winner's.
"""
from __future__ import annotations

import statistics
from typing import Any, Iterable, Iterator

import pandas as pd

from autopager.analysis.result import StudyResult, load_study
from autopager.run.goal import Goal
from autopager.tuner.trial import Kind, Trial
from experiments import markdown as md
from experiments.evaluation.kernel import load_kernel
from experiments.evaluation.llnl import load_llnl
from experiments.evaluation.plan import KERNEL_READ_AHEAD_KIB, REAL_METHODS, SEEDED_AX, TRANSFER, UMAP_DEFAULTS, UNCAPPED, Plan
from experiments.evaluation.studies import Places

FIXED = ("default", UMAP_DEFAULTS, TRANSFER)
KERNELS = {"mmap": None, f"mmap-ra{KERNEL_READ_AHEAD_KIB}": KERNEL_READ_AHEAD_KIB}
SEARCHES = (*REAL_METHODS, UNCAPPED, *SEEDED_AX)
COLUMNS = ["workload", "scale", "size", "buffer", "metric", "goal", "method", "value", "low", "high", "runs",
           "confirmed_speedup", "confirmed_low", "confirmed_high", "trials", "capped", "failed", "wall_seconds",
           "time_to_best_seconds", "run_seconds", "read_ahead_kib", "page_size", "defaults", "incomplete"]


def spread(values: list[float]) -> tuple[float | None, float | None]:
    return (min(values), max(values)) if values else (None, None)


def seconds_a_run(trials: Iterable[Trial]) -> float | None:
    """The median wall time of one run over a study's ``trials`` (each trial's time over its runs), the program's
    start and its untimed set-up included: what a user waits for a run."""
    times = [trial.wall_seconds / len(trial.values) for trial in trials
             if trial.values and trial.wall_seconds is not None]
    return statistics.median(times) if times else None


def search_row(study: StudyResult) -> dict[str, Any]:
    confirmed = study.confirmed()
    row = {"trials": len(study.of_kind(Kind.SEARCH)), "capped": study.capped(), "failed": study.failed(),
           "defaults": " ".join(f"{name}={value}" for name, value in study.default_params().items())}
    if confirmed is None:
        return row | {"incomplete": study.unconfirmed() or "not confirmed"}
    low, high = spread(confirmed["values"])
    return row | {"wall_seconds": study.wall_seconds(), "time_to_best_seconds": study.time_to_best(),
                  "value": confirmed["value"], "low": low, "high": high, "runs": len(confirmed["values"]),
                  "confirmed_speedup": confirmed["speedup"], "confirmed_low": confirmed["low"],
                  "confirmed_high": confirmed["high"], "page_size": confirmed["params"].get("page_size"),
                  "run_seconds": seconds_a_run(trial for trial in study.of_kind(Kind.CONFIRM)
                                               if trial.confirms == confirmed["trial"])}


def finished(row: pd.Series | None) -> bool:
    """Whether a figure is final: not a search study cut short (``incomplete``)."""
    return row is not None and md.missing(row.get("incomplete"))


def measured_row(values: list[float]) -> dict[str, Any]:
    low, high = spread(values)
    return {"value": statistics.median(values) if values else None, "low": low, "high": high, "runs": len(values)}


def method_rows(plan: Plan, places: Places, workload: str, scale: str) -> dict[str, dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for method in (*FIXED, *SEARCHES):
        study = load_study(places.study(scale, workload, method))
        if study is not None:
            rows[method] = (measured_row(study.default_values()) | {"run_seconds": seconds_a_run(study.default_trials())}
                            if method in FIXED else search_row(study))
            rows[method].update(metric=study.metric, goal=study.goal)
    for method, read_ahead in KERNELS.items():
        kernel = load_kernel(places, scale, workload, read_ahead)
        if kernel is not None:
            rows[method] = measured_row(kernel["values"]) | {
                "read_ahead_kib": kernel.get("read_ahead_kib"),
                "run_seconds": kernel["seconds"] / len(kernel["runs"]) if kernel.get("seconds") else None}
    llnl = load_llnl(places, scale, workload)
    if llnl is not None:
        rows["llnl"] = measured_row(llnl["values"]) | {"page_size": llnl["page_size"]}
    return rows


def collect(plan: Plan, places: Places) -> pd.DataFrame:
    rows = []
    for workload in plan.workloads:
        for scale in plan.scales(workload):
            found = method_rows(plan, places, workload, scale)
            studied = next((row for row in found.values() if "goal" in row), None)
            if studied is None:
                continue
            size = plan.size(workload, scale)
            for method, row in found.items():
                rows.append({"workload": workload, "scale": scale, "size": size.size, "buffer": size.buffer,
                             "metric": studied["metric"], "goal": studied["goal"], "method": method, **row})
    return pd.DataFrame(rows, columns=COLUMNS)


def best_tuned(part: pd.DataFrame) -> pd.Series | None:
    """The search (capped, as the tuner runs) whose confirmed winner is best by its own median: searches run on
    other days may have confirmed over other defaults, so their speedups do not compare."""
    tuned = part[part.method.isin(REAL_METHODS)].dropna(subset=["confirmed_speedup"])
    if tuned.empty:
        return None
    return Goal.parse(tuned.goal.iloc[0]).best((row for _, row in tuned.iterrows()), key=lambda row: row.value)


def against(tuned: pd.Series, reference: pd.Series | None) -> tuple[float, float, float] | None:
    """The tuned winner's median against a reference's median, and the extremes' ratios."""
    if reference is None or pd.isna(reference.value) or pd.isna(tuned.value):
        return None
    goal = Goal.parse(tuned.goal)
    pairs = [goal.speedup(a, b) for a in (tuned.low, tuned.high) for b in (reference.low, reference.high)]
    return goal.speedup(tuned.value, reference.value), min(pairs), max(pairs)


def tuned_parts(figures: pd.DataFrame, plan: Plan) -> Iterator[tuple[str, str, pd.DataFrame, pd.Series]]:
    """(workload, scale, its rows by method, its best tuned row) for every workload and scale with a tuned figure."""
    for workload in plan.workloads:
        for scale in plan.scales(workload):
            part = figures[(figures.workload == workload) & (figures.scale == scale)].set_index("method", drop=False)
            tuned = best_tuned(part)
            if tuned is not None:
                yield workload, scale, part, tuned
