"""All figures of the evaluation in one table (figures.csv): a row for each workload, scale and method.

``value`` is what the method found: the best trial of its study (for ``default``, the median of the
defaults' runs that start every search study; for ``mmap``, the kernel's median). Each value is also given as
a speedup over the defaults and over the kernel's mmap (above 1: better, whatever the metric's direction).
``confirmed_*`` is the same method's best parameters measured again (the ``confirm-METHOD`` study), free of
the optimism of picking the best of many noisy trials.
"""
from __future__ import annotations

import statistics
from typing import Any

import pandas as pd

from autopager.parameters import PARAMETERS
from autopager.run.goal import speedup
from evaluation.kernel import load_kernel
from evaluation.plan import CONFIRM, LARGE, SMALL, TRANSFER, Plan
from evaluation.studies import Places
from autopager.analysis.result import StudyResult, load_study

SEARCHES = ("default", "pagesize", "grid", "ax", "coordinate", "random")
METHODS = ("default", "mmap", *SEARCHES[1:], TRANSFER)
CONFIRMED = ("pagesize", "grid", "ax", TRANSFER)  # the tuned methods whose best is measured again
COLUMNS = ["workload", "scale", "size", "buffer", "metric", "goal", "method", "value", "speedup_vs_default",
           "speedup_vs_mmap", "confirmed_value", "confirmed_speedup_vs_default", "confirmed_speedup_vs_mmap",
           "trials", "failed", "tuning_seconds", "wall_seconds", "time_to_best_seconds", *PARAMETERS]


def ratio(value: float | None, reference: float | None, goal: str) -> float | None:
    if value is None or reference is None or not value or not reference:
        return None
    return speedup(value, reference, goal)


def confirmed(places: Places, scale: str, workload: str, method: str) -> float | None:
    study = load_study(places.study(scale, workload, f"{CONFIRM}-{method}"))
    runs = study.default_values() if study else []
    return statistics.median(runs) if runs else None


def kernel_value(kernel: dict[str, Any]) -> float | None:
    """The kernel's median; when a run failed (the repeats stop there), the runs that finished."""
    values = kernel["values"]
    return statistics.median(values) if values else None


def method_row(method: str, study: StudyResult | None, kernel: dict[str, Any] | None) -> dict[str, Any] | None:
    """What a method found, before it is compared with anything."""
    if method == "mmap":
        if kernel is None:
            return None
        return {"value": kernel_value(kernel), "trials": len(kernel["runs"]),
                "failed": sum(run["value"] is None for run in kernel["runs"])}
    if study is None:
        return None
    best = study.best()
    params = study.best_params() or {}
    return {"value": None if best is None else float(best.value), "trials": len(study.trials),
            "failed": study.failed(), "tuning_seconds": study.tuning_seconds(),
            "wall_seconds": study.wall_seconds(), "time_to_best_seconds": study.time_to_best(), **params}


def collect(plan: Plan, places: Places) -> pd.DataFrame:
    rows = []
    for workload in plan.workloads:
        for scale in (SMALL, LARGE):
            studies = {m: load_study(places.study(scale, workload, m)) for m in (*SEARCHES, TRANSFER)}
            kernel = load_kernel(places, scale, workload)
            runs = [v for m in SEARCHES if studies[m] for v in studies[m].default_values()]
            some = next((s for s in studies.values() if s), None)
            if some is None:
                continue
            goal, size = some.goal, plan.size(workload, scale)
            defaults = statistics.median(runs) if runs else None
            mmap = kernel_value(kernel) if kernel else None
            confirmed_default = confirmed(places, scale, workload, "default")
            for method in METHODS:
                found = method_row(method, studies.get(method), kernel)
                if found is None:
                    continue
                if method == "default":
                    found.update(value=defaults, trials=len(runs))
                # the kernel is measured once, with repeats: its value is its own confirmation
                check = mmap if method == "mmap" else confirmed(places, scale, workload, method)
                rows.append({
                    "workload": workload, "scale": scale, "size": size.size, "buffer": size.buffer,
                    "metric": some.metric, "goal": goal, "method": method, **found,
                    "speedup_vs_default": ratio(found["value"], defaults, goal),
                    "speedup_vs_mmap": ratio(found["value"], mmap, goal),
                    "confirmed_value": check,
                    "confirmed_speedup_vs_default": ratio(check, confirmed_default, goal),
                    "confirmed_speedup_vs_mmap": ratio(check, mmap, goal),
                })
    return pd.DataFrame(rows, columns=COLUMNS)


def defaults_spread(plan: Plan, places: Places) -> pd.DataFrame:
    """The defaults' runs of each workload and scale: how noisy a single measurement is here."""
    rows = []
    for workload in plan.workloads:
        for scale in (SMALL, LARGE):
            runs = [v for m in SEARCHES if (s := load_study(places.study(scale, workload, m)))
                    for v in s.default_values()]
            if runs:
                rows.append({"workload": workload, "scale": scale, "runs": len(runs), "min": min(runs),
                             "median": statistics.median(runs), "max": max(runs),
                             "spread": max(runs) / min(runs) - 1 if min(runs) > 0 else None})
    return pd.DataFrame(rows)
