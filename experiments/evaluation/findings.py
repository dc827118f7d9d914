"""The findings the summary states for every workload, the disappointing ones first: where tuning does not
pay, where Ax is behind grid, where the kernel's mmap wins, where a figure does not survive measuring again,
where the small size's parameters do not carry to the large size. Each says what in the data explains it."""
from __future__ import annotations

from typing import Any, Mapping

import pandas as pd

from evaluation import markdown as md
from evaluation.figures import CONFIRMED, defaults_spread
from evaluation.kernel import load_kernel
from evaluation.llnl import LLNL, OURS_DEFAULT, ours_over_llnl
from evaluation.plan import AX_BY_SEED, LARGE, SHORTEST_RUN_SECONDS, SMALL, TRANSFER, Plan
from evaluation.real_figures import KERNELS, against, finished, tuned_parts
from evaluation.rounds import TUNED, same_round_ratios
from evaluation.studies import Places
from autopager.analysis.result import load_study

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
    """The verdicts use the confirmed figures (best parameters measured again) when there are, else the best
    trials; both are quoted."""
    found = []
    get = lambda scale, method, column="speedup_vs_default": value(figures, workload, scale, method, column)  # noqa: E731

    def judged(scale: str, method: str, column: str = "speedup_vs_default") -> tuple[float | None, str]:
        confirmed, best = get(scale, method, f"confirmed_{column}"), get(scale, method, column)
        if confirmed is not None:
            return confirmed, f"{confirmed:.2f}x (best trial {best:.2f}x)" if best else f"{confirmed:.2f}x"
        return best, "" if best is None else f"{best:.2f}x (best trial, not measured again)"

    for scale in (SMALL, LARGE):
        noise = noise_of(spread, workload, scale)
        tuned = {m: judged(scale, m) for m in CONFIRMED}
        tuned = {m: v for m, v in tuned.items() if v[0] is not None}
        top = max(tuned, key=lambda m: tuned[m][0]) if tuned else None
        if top and tuned[top][0] < WORTH_IT:
            found.append(f"**{workload} ({scale}): tuning does not pay**: the best method ({top}) has a speedup "
                         f"over the defaults of {tuned[top][1]}, while {noise}.")
        ax, confirmed = get(scale, "ax"), get(scale, "ax", "confirmed_speedup_vs_default")
        if ax and confirmed and confirmed < HOLDS_UP * ax:
            found.append(f"**{workload} ({scale}): Ax's figure does not hold up**: its best trial was {ax:.2f}x the "
                         f"defaults, measured again {confirmed:.2f}x: the best of many noisy trials is optimistic "
                         f"({noise}).")
        kernel = load_kernel(places, scale, workload)
        if kernel and kernel["error"]:
            finished = len(kernel["values"])
            found.append(f"**{workload} ({scale}): the kernel's mmap failed** in a run ({kernel['error'].strip(': ')}) "
                         f"in its {kernel['limit']} cgroup after {finished} run(s) that finished"
                         + ("; its figure is theirs." if finished else "; it has no figure."))
        versus_mmap = judged(scale, top, "speedup_vs_mmap") if top else (None, "")
        if versus_mmap[0] is not None and versus_mmap[0] < 1:
            found.append(f"**{workload} ({scale}): the kernel's mmap wins**: the best tuned pager ({top}) has a "
                         f"speedup over the kernel's mmap of {versus_mmap[1]}.")
        elif versus_mmap[0] is not None:
            found.append(f"{workload} ({scale}): speedup of the best tuned pager ({top}) over the kernel's mmap: "
                         f"{versus_mmap[1]}; of the pager's defaults: {get(scale, 'default', 'speedup_vs_mmap'):.2f}x.")
    (ax, ax_text), (grid, grid_text) = judged(SMALL, "ax"), judged(SMALL, "grid")
    if ax and grid:
        failed, timed_out = timeouts(places, SMALL, workload, "ax")
        ax_cost, grid_cost = get(SMALL, "ax", "wall_seconds"), get(SMALL, "grid", "wall_seconds")
        cost = f"at {ax_cost / grid_cost:.2f}x grid's tuning time" if ax_cost and grid_cost else ""
        if ax < grid:
            found.append(f"**{workload}: Ax is behind grid**: speedup over the defaults of Ax {ax_text}, of grid "
                         f"{grid_text}, {cost}. "
                         f"Ax searched the tuner's whole space (watermarks and six read-ahead values too) with "
                         f"{int(get(SMALL, 'ax', 'trials') or 0)} trials, {failed} of them failed ({timed_out} timed "
                         f"out), while grid measured every point of a small space; {noise_of(spread, workload, SMALL)}.")
        else:
            found.append(f"{workload}: Ax reaches {ax / grid:.2f}x grid's best (speedup over the defaults of Ax "
                         f"{ax_text}, of grid {grid_text}) {cost}.")
    (transfer, transfer_text), (large_ax, large_ax_text) = judged(LARGE, TRANSFER), judged(LARGE, "ax")
    if transfer and large_ax:
        verdict = "carry over" if transfer >= HOLDS_UP * large_ax else "**do not carry over**"
        found.append(f"{workload}: the small size's Ax parameters {verdict} to the large size: speedup over the "
                     f"defaults there {transfer_text}, of Ax tuned at the large size {large_ax_text}.")
    return found


def findings(figures: pd.DataFrame, plan: Plan, places: Places) -> list[str]:
    if figures.empty:
        return ["No study has finished yet."]
    spread = defaults_spread(plan, places)
    found = [text for w in plan.workloads for text in workload_findings(figures, w, places, spread)]
    disappointing = [text for text in found if text.startswith("**")]
    return disappointing + [text for text in found if not text.startswith("**")]


def real_findings(figures: pd.DataFrame, plan: Plan,
                  side_by_side: Mapping[tuple[str, str], dict[str, Any]] | None = None,
                  llnl: Mapping[tuple[str, str], dict[str, Any]] | None = None) -> list[str]:
    """The real plan's verdicts from confirmed figures, per workload and scale: whether tuning pays (the spread of
    the confirmed speedup above 1), whether its winner's runs were as long as the evaluation asks, where the
    kernel's mmap or LLNL UMap beat the tuned pager (from the same rounds where ``side_by_side`` or, for LLNL
    UMap's programs run on our library too, ``llnl``, by workload and scale, has a record; else between their
    steps), whether LLNL UMap beats our defaults on its own program, whether Ax's figure is behind the grid's and
    at what cost (when both searched over the same defaults), what capping saved, and how Ax's figure spreads over
    its seeds."""
    side_by_side, llnl = side_by_side or {}, llnl or {}
    found = [f"**{r.scale}/{r.workload}/{r.method}: {r.incomplete}**: no figure or tuning time of it is quoted; "
             f"running the evaluation again resumes it." for _, r in figures.iterrows() if not finished(r)]
    for workload, scale, part, tuned in tuned_parts(figures, plan):
        where = f"{workload} ({scale})"
        text = (f"{tuned.confirmed_speedup:.2f}x (rounds {tuned.confirmed_low:.2f}-{tuned.confirmed_high:.2f}x, "
                f"{tuned.method})")
        if tuned.confirmed_low < 1 or tuned.confirmed_speedup < WORTH_IT:
            found.append(f"**{where}: tuning does not clearly pay**: the best tuned pager's confirmed speedup "
                         f"over our defaults is {text}.")
        else:
            found.append(f"{where}: tuned pager over our defaults, confirmed: {text}.")
        if not md.missing(tuned.run_seconds) and tuned.run_seconds < SHORTEST_RUN_SECONDS:
            found.append(f"**{where}: runs shorter than {SHORTEST_RUN_SECONDS:.0f} s**: a run of the tuned winner "
                         f"takes {tuned.run_seconds:.1f} s (wall time, the program's start included).")
        record = side_by_side.get((workload, scale))
        same_rounds = same_round_ratios(record) if record else {}
        if "default" in same_rounds:
            ratio, winner = same_rounds["default"], f"{record['tuned_method']}'s winner"
            again = f"{ratio[0]:.2f}x ({ratio[1]:.2f}-{ratio[2]:.2f}x)"
            study = part.loc[record["tuned_method"]] if record["tuned_method"] in part.index else None
            if ratio[0] < WORTH_IT:
                found.append(f"**{where}: {winner} does not hold up beside our defaults**: in the side-by-side "
                             f"rounds it is {again} our defaults, where its study confirmed "
                             f"{md.times(study.confirmed_speedup if finished(study) else None)}.")
            else:
                found.append(f"{where}: {winner} over our defaults in the side-by-side rounds: {again}.")
        on_llnl = ours_over_llnl(llnl[workload, scale]) if (workload, scale) in llnl else {}
        for method in (*KERNELS, LLNL):
            reference = part.loc[method] if method in part.index else None
            if method == LLNL and TUNED in on_llnl:
                ratio, name = on_llnl[TUNED], "LLNL UMap"
                how = (f" on its own program ({llnl[workload, scale]['program']}) in the same rounds "
                       f"({llnl[workload, scale]['tuned_method']}'s winner)")
            elif (ratio := same_rounds.get(method) or against(tuned, reference)) is None:
                continue
            elif method == LLNL:
                name, how = "LLNL UMap", ", measured apart (our workload against its program)"
            else:
                read_ahead = record["read_ahead_kib"][method] if method in same_rounds else reference.read_ahead_kib
                name = f"the kernel's mmap (read-ahead {read_ahead:.0f} KiB)"
                how = (f" in the same rounds ({record['tuned_method']}'s winner)" if method in same_rounds
                       else ", measured apart")
            verdict = "**loses to**" if ratio[0] < 1 else "beats"
            found.append(f"{'**' if ratio[0] < 1 else ''}{where}{'**' if ratio[0] < 1 else ''}: the tuned pager "
                         f"{verdict} {name}{how}: {ratio[0]:.2f}x ({ratio[1]:.2f}-{ratio[2]:.2f}x).")
        if OURS_DEFAULT in on_llnl:
            ratio = on_llnl[OURS_DEFAULT]
            verdict = f"**{where}: our defaults lose to LLNL UMap**" if ratio[0] < 1 else \
                f"{where}: our defaults beat LLNL UMap"
            found.append(f"{verdict} at its best page size on its own program, untuned, in the same rounds: "
                         f"{ratio[0]:.2f}x ({ratio[1]:.2f}-{ratio[2]:.2f}x).")
        ax = part.loc["ax"] if "ax" in part.index else None
        grid = part.loc["grid"] if "grid" in part.index else None
        if finished(ax) and finished(grid) and ax.defaults != grid.defaults:
            found.append(f"**{where}: Ax and the grid ran over different defaults**: their confirmed speedups "
                         f"({ax.confirmed_speedup:.2f}x and {grid.confirmed_speedup:.2f}x) are not comparable.")
        elif finished(ax) and finished(grid) and grid.wall_seconds:
            cost = ax.wall_seconds / grid.wall_seconds
            behind = ax.confirmed_speedup < grid.confirmed_speedup
            found.append(f"{'**' if behind else ''}{where}: Ax {'is behind' if behind else 'reaches'} the grid"
                         f"{'**' if behind else ''}: confirmed {ax.confirmed_speedup:.2f}x against "
                         f"{grid.confirmed_speedup:.2f}x, at {cost:.2f}x the grid's tuning time.")
        uncapped = part.loc["ax-uncapped"] if "ax-uncapped" in part.index else None
        if finished(ax) and finished(uncapped) and uncapped.wall_seconds:
            cost = ax.wall_seconds / uncapped.wall_seconds
            if cost > 1:
                found.append(f"**{where}: capping saved no time**: the capped Ax study took {cost:.2f}x the "
                             f"uncapped one's time ({ax.capped:.0f} capped runs); their trials differ, and so may "
                             f"the days they ran.")
            else:
                found.append(f"{where}: capping made Ax's study take {cost:.2f}x the uncapped study's time "
                             f"({ax.capped:.0f} capped runs).")
        found += seed_findings(part, where)
    disappointing = [text for text in found if text.startswith("**")]
    return disappointing + [text for text in found if not text.startswith("**")] or ["No study has finished yet."]


def seed_findings(part: pd.DataFrame, where: str) -> list[str]:
    """Ax's confirmed speedup and tuning time over its seeds; disappointing where the seed decides whether
    tuning pays."""
    seeds = [part.loc[m] for m in AX_BY_SEED.values() if m in part.index and finished(part.loc[m])]
    if len(seeds) < 2:
        return []
    speedups = [row.confirmed_speedup for row in seeds]
    tuning = [row.wall_seconds for row in seeds]
    text = (f"Ax over {len(seeds)} seeds: confirmed {min(speedups):.2f}-{max(speedups):.2f}x over our defaults, "
            f"tuning time {md.seconds(min(tuning))} to {md.seconds(max(tuning))}.")
    if min(speedups) < WORTH_IT <= max(speedups):
        return [f"**{where}: whether Ax pays depends on its seed**: {text}"]
    return [f"{where}: {text}"]
