"""The evaluation's written results: figures.csv, summary.md (tables, findings, machine) and the plots.

The summary is generated from the recorded studies; ``discussion.md`` in the same directory, if present,
is a hand-written reading of one run's figures and is included as it is.
"""
from __future__ import annotations

import datetime
from pathlib import Path

import pandas as pd

from autopager.tuner.config import compose
from autopager.run.memory_limit import pager_memory
from autopager.parameters import format_size
from autopager.parameters import show
from autopager.run.workloads import Workload
from evaluation import markdown as md
from evaluation.figures import CONFIRMED, collect, defaults_spread
from evaluation.findings import findings
from autopager.analysis.machine_table import describe
from evaluation.plan import LARGE, SMALL, TRANSFER, Plan, Size
from evaluation.plots import LABELS, plot_convergence, plot_speedups
from evaluation.studies import TIMEOUT_FACTOR, TIMEOUT_FLOOR, Places, paper_grid_size, workload_overrides

FIGURE2 = [(SMALL, "pagesize"), (SMALL, "grid"), (SMALL, "ax"), (SMALL, "mmap"),
           (LARGE, "pagesize"), (LARGE, "ax"), (LARGE, TRANSFER), (LARGE, "mmap")]
TABLE3 = ("page_size", "fillers", "evictors", "evict_high_water", "evict_low_water", "read_ahead")
STRATEGIES = ("pagesize", "grid", "ax", "coordinate", "random")


def cell(figures: pd.DataFrame, workload: str, scale: str, method: str, column: str):
    row = figures[(figures.workload == workload) & (figures.scale == scale) & (figures.method == method)]
    return None if row.empty else row[column].iloc[0]


def figure2(figures: pd.DataFrame, plan: Plan, column: str) -> str:
    header = ["workload"] + [f"{scale}: {LABELS[method]}" for scale, method in FIGURE2]
    rows = [[w] + [md.times(cell(figures, w, s, m, column)) for s, m in FIGURE2] for w in plan.workloads]
    return md.table(header, rows)


def ax_versus_grid(figures: pd.DataFrame, plan: Plan, places: Places) -> str:
    header = ["workload", "grid best (x defaults)", "Ax best (x defaults)", "Ax / grid", "confirmed Ax / grid",
              "grid trials", "grid time", "Ax trials", "Ax time", "Ax time to its best", "Ax cost / grid cost",
              "paper's grid: points, time (estimated)"]
    rows = []
    for w in plan.workloads:
        points = paper_grid_size(w, plan, places)
        get = lambda method, column: cell(figures, w, SMALL, method, column)  # noqa: E731
        gap = ratio_of(get("ax", "speedup_vs_default"), get("grid", "speedup_vs_default"))
        confirmed_gap = ratio_of(get("ax", "confirmed_speedup_vs_default"), get("grid", "confirmed_speedup_vs_default"))
        cost = ratio_of(get("ax", "wall_seconds"), get("grid", "wall_seconds"))
        rows.append([w, md.times(get("grid", "speedup_vs_default")), md.times(get("ax", "speedup_vs_default")),
                     md.times(gap), md.times(confirmed_gap), md.number(get("grid", "trials")),
                     md.seconds(get("grid", "wall_seconds")), md.number(get("ax", "trials")),
                     md.seconds(get("ax", "wall_seconds")), md.seconds(get("ax", "time_to_best_seconds")),
                     md.times(cost), paper_grid(points, get("grid", "wall_seconds"), get("grid", "trials"))])
    return md.table(header, rows)


def paper_grid(points: int, grid_seconds, grid_trials) -> str:
    """The paper's exhaustive search here, timed at this grid's mean seconds a trial."""
    if md.missing(grid_seconds) or md.missing(grid_trials) or not grid_trials:
        return f"{points}, -"
    return f"{points}, {points * grid_seconds / grid_trials / 3600:.1f} h"


def ratio_of(a, b):
    return None if md.missing(a) or md.missing(b) or not b else a / b


def versus_kernel(figures: pd.DataFrame, plan: Plan) -> str:
    """The kernel's mmap against the pager's defaults and against the best of the confirmed methods."""
    header = ["workload", "scale", "metric", "kernel mmap", "pager defaults", "defaults vs mmap",
              "best tuned (method)", "tuned vs mmap", "confirmed tuned vs mmap"]
    rows = []
    for w in plan.workloads:
        for scale in (SMALL, LARGE):
            part = figures[(figures.workload == w) & (figures.scale == scale)]
            tuned = part[part.method.isin(CONFIRMED)]
            tuned = tuned.dropna(subset=["speedup_vs_default"])
            if part.empty:
                continue
            best = tuned.loc[tuned.speedup_vs_default.idxmax()] if not tuned.empty else None
            rows.append([w, scale, part.metric.iloc[0], md.number(cell(figures, w, scale, "mmap", "value")),
                         md.number(cell(figures, w, scale, "default", "value")),
                         md.times(cell(figures, w, scale, "default", "speedup_vs_mmap")),
                         "-" if best is None else f"{md.number(best.value)} ({LABELS[best.method]})",
                         "-" if best is None else md.times(best.speedup_vs_mmap),
                         "-" if best is None else md.times(best.confirmed_speedup_vs_mmap)])
    return md.table(header, rows)


def table3(figures: pd.DataFrame, plan: Plan) -> str:
    header = ["workload"] + [f"{name} {scale}" for name in TABLE3 for scale in (SMALL, LARGE)]
    rows = []
    for w in plan.workloads:
        values = [cell(figures, w, scale, "ax", name) for name in TABLE3 for scale in (SMALL, LARGE)]
        names = [name for name in TABLE3 for _ in (SMALL, LARGE)]
        rows.append([w] + ["-" if md.missing(v) else show(n, int(v)) for n, v in zip(names, values)])
    return md.table(header, rows)


def tuning_time(figures: pd.DataFrame, plan: Plan) -> str:
    header = ["workload", "scale"] + [LABELS[s] for s in STRATEGIES]
    rows = []
    for w in plan.workloads:
        for scale in (SMALL, LARGE):
            entries = []
            for s in STRATEGIES:
                trials, wall = cell(figures, w, scale, s, "trials"), cell(figures, w, scale, s, "wall_seconds")
                entries.append("-" if md.missing(trials) else f"{md.seconds(wall)} ({trials:.0f} trials)")
            rows.append([w, scale] + entries)
    return md.table(header, rows)


def workload_at(workload: str, size: Size, places: Places) -> tuple[Workload, int]:
    """The workload at a size, and the memory limit of its runs."""
    config, _ = compose(workload_overrides(workload, size, places))
    workload = Workload.from_config(config.workload, config.data_dir)
    return workload, pager_memory(workload, config.runner.memory_headroom)


def setup(plan: Plan, places: Places) -> str:
    header = ["workload", "scale", "size knob", "data files", "pager buffer", "page sizes searched",
              "memory cgroup limit (every run; and the data's page tables)"]
    rows = []
    for w in plan.workloads:
        for scale in plan.scales(w):
            size = plan.size(w, scale)
            workload, limit = workload_at(w, size, places)
            data = sum(path.stat().st_size for path in workload.data_paths())
            rows.append([w, scale, size.size, f"{data / 2**20:.0f} MiB", size.buffer, f"4KiB..{size.largest_page}",
                         format_size(limit)])
    return md.table(header, rows)


def noise(plan: Plan, places: Places) -> str:
    spread = defaults_spread(plan, places)
    lines = []
    if not spread.empty:
        lines.append(md.table(["workload", "scale", "defaults' runs", "min", "median", "max", "max / min - 1"],
                              [[r.workload, r.scale, r.runs, md.number(r["min"]), md.number(r["median"]),
                                md.number(r["max"]), f"{r.spread:.0%}" if not md.missing(r.spread) else "-"]
                               for _, r in spread.iterrows()]))
    steps = places.out / "steps.csv"
    if steps.is_file():
        log = pd.read_csv(steps)
        loads = pd.concat([log.load_before, log.load_after])
        lines.append(f"\nLoad average (1 min) at the start and end of each step: min {loads.min():.1f}, median "
                     f"{loads.median():.1f}, max {loads.max():.1f} on {len(log)} steps (per step in steps.csv). "
                     f"The machine has 2 hardware threads: a load above 2 means the workloads, the tuner and other "
                     f"people's benchmarks were queuing for the CPU.")
    return "\n".join(lines)


def failures(places: Places) -> str:
    steps = places.out / "steps.csv"
    if not steps.is_file():
        return "No step has run yet."
    log = pd.read_csv(steps, dtype={"error": str})
    last = log.drop_duplicates("step", keep="last")
    bad = last[last.status != "ok"]
    if bad.empty:
        return f"Every one of the {len(last)} steps finished."
    return md.table(["step", "status", "why"], [[r.step, r.status, r.error] for _, r in bad.iterrows()])


def write_report(plan: Plan, places: Places, command: str) -> Path:
    out = places.out
    figures = collect(plan, places)
    figures.to_csv(out / "figures.csv", index=False)
    plot_speedups(figures, out / "speedups.png")
    plot_convergence(figures, plan, places, out / "convergence.png")
    budget = plan.budget
    machine = "\n".join(f"- {label}: {text}" for label, text in describe(places.data_dir, list(plan.workloads)))
    discussion = out / "discussion.md"
    sections = [
        f"# The AutoPager evaluation on this machine ({plan.mode} run)",
        f"Generated {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC by `{command}` from the "
        f"studies under `studies/` (one `trials.csv` a study, resumable) and the kernel runs under `kernel/`. "
        f"All figures: `figures.csv`. Plots: `speedups.png`, `convergence.png`.",
        "## Machine\n" + machine,
        "## Setup\n"
        f"Each workload runs with its data several times its pager buffer (out of core) at a small and a large "
        f"size (four times the data and the buffer). Before every run the page cache is dropped. Methods: the "
        f"pager's defaults; page-size-only line search; grid over a restricted space "
        f"(`configs/space/evaluation.yaml`: page sizes by powers of four, fillers and evictors 1-2, read-ahead "
        f"0 or 4; small size only{'' if budget.grid_trials is None else f', capped at {budget.grid_trials} trials'}); "
        f"Ax ({budget.ax_initialization} Sobol + {budget.ax_trials - budget.ax_initialization} Bayesian trials "
        f"at the small size, {budget.large_ax_trials} in all at the large size) over the tuner's default space; "
        f"coordinate descent and random search ({budget.search_trials} trials, small size); the kernel's mmap in a "
        f"memory cgroup; the small size's Ax parameters at the large size (transfer); and each method's best "
        f"parameters measured again {budget.confirm_repeats} times (confirmation, median). Page sizes are "
        f"searched up to an eighth of the buffer. A trial may take {TIMEOUT_FACTOR}x the defaults' time "
        f"({TIMEOUT_FLOOR} s at least) before it is killed and counted as failed. The defaults' value is the "
        f"median of the defaults' run that starts every search study. Every run, pager or kernel, is in a memory "
        f"cgroup limited to the buffer plus what the program uses beside its data (code, libraries, stacks, heap: "
        f"16 MiB; bfs's level array), the pager's bookkeeping of the buffer's pages (1/128 of it) and the page "
        f"tables of the data (1/512 of it).\n\n" + setup(plan, places),
        "## Figure 2: speedup over the default parameters (best found)\n"
        "Above 1: faster (or more throughput) than the pager's defaults. `mmap`: the kernel's mmap with a "
        "memory limit, against the pager's defaults.\n\n" + figure2(figures, plan, "speedup_vs_default"),
        "### The same, confirmed (best parameters measured again, against the defaults measured again)\n"
        + figure2(figures, plan, "confirmed_speedup_vs_default"),
        "## Ax against grid (small size)\nThe grid is the restricted one; the last column is what the paper's "
        "exhaustive search over its sampled space (`configs/space/paper.yaml`) would measure here.\n\n"
        + ax_versus_grid(figures, plan, places),
        "## The tuned pager against the kernel's mmap\n" + versus_kernel(figures, plan),
        "## Table III: the best parameters Ax found\nThe buffer is fixed by the workload at each size.\n\n"
        + table3(figures, plan),
        "## Tuning time of each strategy\nWall time from a study's first trial to its last, the strategy's own "
        "time (Ax's model fits) included, the time a resumed study was stopped left out.\n\n" + tuning_time(figures, plan),
        "## Findings, including the disappointing ones\n" + "\n".join(f"- {text}" for text in findings(figures, plan, places)),
        "## Noise\nEvery search study starts with a run of the defaults: their spread is the noise of one "
        "measurement here.\n\n" + noise(plan, places),
        "## Steps that failed\n" + failures(places),
    ]
    if discussion.is_file():
        sections.append(discussion.read_text().strip())
    path = out / "summary.md"
    path.write_text("\n\n".join(sections) + "\n")
    return path

