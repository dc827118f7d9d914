"""The findings the summary states for every workload, the disappointing ones first: where tuning does not
pay, where Ax is behind grid, where the kernel's mmap wins, where a figure does not survive measuring again,
where the small size's parameters do not carry to the large size. Each says what in the data explains it."""
from __future__ import annotations

import pandas as pd

from evaluation.figures import CONFIRMED, defaults_spread
from evaluation.kernel import load_kernel
from evaluation.plan import LARGE, SMALL, TRANSFER, Plan
from evaluation.studies import Places
from evaluation.studytable import load_study

WORTH_IT = 1.10       # a tuned speedup below this is within the noise of one run here
HOLDS_UP = 0.85       # a confirmed speedup below this fraction of the best-found one did not hold up


def value(figures: pd.DataFrame, workload: str, scale: str, method: str, column: str):
    row = figures[(figures.workload == workload) & (figures.scale == scale) & (figures.method == method)]
    return None if row.empty or pd.isna(row[column].iloc[0]) else float(row[column].iloc[0])


def timeouts(places: Places, scale: str, workload: str, method: str) -> tuple[int, int]:
    """(failed trials, of which timed out) of a study."""
    study = load_study(places.study(scale, workload, method))
    if study is None:
        return 0, 0
    failed = study.trials[study.trials.status != "ok"]
    return len(failed), int(failed.error.fillna("").str.contains("timed out").sum())


def noise_of(spread: pd.DataFrame, workload: str, scale: str) -> str:
    row = spread[(spread.workload == workload) & (spread.scale == scale)] if not spread.empty else spread
    if row.empty:
        return "the noise is unknown"
    row = row.iloc[0]
    return f"the defaults' {row.runs} runs here spread by {row.spread:.0%} (max / min)"


def workload_findings(figures: pd.DataFrame, workload: str, places: Places, spread: pd.DataFrame) -> list[str]:
    found = []
    get = lambda scale, method, column="speedup_vs_default": value(figures, workload, scale, method, column)  # noqa: E731
    for scale in (SMALL, LARGE):
        tuned = {m: get(scale, m) for m in CONFIRMED}
        tuned = {m: v for m, v in tuned.items() if v is not None}
        if tuned and max(tuned.values()) < WORTH_IT:
            found.append(f"**{workload} ({scale}): tuning does not pay**: the best method ({max(tuned, key=tuned.get)}) "
                         f"is {max(tuned.values()):.2f}x the defaults, while {noise_of(spread, workload, scale)}.")
        ax, confirmed = get(scale, "ax"), get(scale, "ax", "confirmed_speedup_vs_default")
        if ax and confirmed and confirmed < HOLDS_UP * ax:
            found.append(f"**{workload} ({scale}): Ax's figure does not hold up**: its best trial was {ax:.2f}x the "
                         f"defaults, measured again {confirmed:.2f}x: the best of many noisy trials is optimistic "
                         f"({noise_of(spread, workload, scale)}).")
        kernel = load_kernel(places, scale, workload)
        if kernel and kernel["error"]:
            finished = len(kernel["values"])
            found.append(f"**{workload} ({scale}): the kernel's mmap failed** in a run ({kernel['error'].strip(': ')}) "
                         f"in its {kernel['limit']} cgroup after {finished} run(s) that finished"
                         + ("; its figure is theirs." if finished else "; it has no figure."))
        mmap_speedup = get(scale, "mmap", "speedup_vs_default")
        best_tuned = max(tuned.values()) if tuned else None
        if mmap_speedup and best_tuned and mmap_speedup > best_tuned:
            found.append(f"**{workload} ({scale}): the kernel's mmap wins**: {mmap_speedup:.2f}x the pager's defaults "
                         f"against the best tuned pager's {best_tuned:.2f}x.")
        elif mmap_speedup and best_tuned:
            found.append(f"{workload} ({scale}): the tuned pager is {best_tuned / mmap_speedup:.2f}x the kernel's mmap "
                         f"(the pager's defaults: {1 / mmap_speedup:.2f}x).")
    ax, grid = get(SMALL, "ax"), get(SMALL, "grid")
    if ax and grid:
        failed, timed_out = timeouts(places, SMALL, workload, "ax")
        ax_cost, grid_cost = get(SMALL, "ax", "wall_seconds"), get(SMALL, "grid", "wall_seconds")
        cost = f"at {ax_cost / grid_cost:.2f}x grid's tuning time" if ax_cost and grid_cost else ""
        if ax < grid:
            found.append(f"**{workload}: Ax is behind grid** ({ax:.2f}x against {grid:.2f}x the defaults, {cost}): "
                         f"Ax searched the tuner's whole space (watermarks and six read-ahead values too) with "
                         f"{int(get(SMALL, 'ax', 'trials') or 0)} trials, {failed} of them failed ({timed_out} timed "
                         f"out), while grid measured every point of a small space; "
                         f"{noise_of(spread, workload, SMALL)}.")
        else:
            found.append(f"{workload}: Ax reaches {ax / grid:.2f}x grid's best ({ax:.2f}x against {grid:.2f}x the "
                         f"defaults) {cost}.")
    transfer, large_ax = get(LARGE, TRANSFER), get(LARGE, "ax")
    if transfer and large_ax:
        verdict = "carry over" if transfer >= HOLDS_UP * large_ax else "**do not carry over**"
        found.append(f"{workload}: the small size's Ax parameters {verdict} to the large size: {transfer:.2f}x the "
                     f"defaults there, against {large_ax:.2f}x for Ax tuned at the large size.")
    return found


def findings(figures: pd.DataFrame, plan: Plan, places: Places) -> list[str]:
    if figures.empty:
        return ["No study has finished yet."]
    spread = defaults_spread(plan, places)
    found = [text for w in plan.workloads for text in workload_findings(figures, w, places, spread)]
    disappointing = [text for text in found if text.startswith("**")]
    return disappointing + [text for text in found if not text.startswith("**")]
