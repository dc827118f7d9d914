"""The evaluation's written results: real_figures.csv, summary.md and convergence.png (``--report-only`` writes
them again from the recorded studies).

Per workload: the tuned pager's confirmed speedup with its spread against our defaults, UMap's defaults, the
kernel's mmap at the disk's read-ahead and at 128 KiB, and LLNL UMap at the same memory, and against our defaults
and the kernel again in the same interleaved rounds (the side-by-side step); each strategy's tuning
time, capped and (Ax) uncapped; Ax's cost against the grid's and its spread over seeds; the small size's Ax
parameters at the large size.
"""
from __future__ import annotations

import datetime
import statistics
from pathlib import Path

import pandas as pd

from autopager.tuner.config import compose
from autopager.analysis.machine_table import describe
from autopager.run.memory_limit import pager_memory
from autopager.parameters import format_size
from autopager.run.workloads import Workload
from autopager.analysis.markdown import table as markdown_table
from experiments import markdown as md
from experiments.evaluation.figures import KERNELS, against, collect, finished, tuned_parts
from experiments.evaluation.findings import findings
from experiments.evaluation.llnl import LLNL, OURS_DEFAULT, load_llnl, ours_over_llnl
from experiments.evaluation.plan import (AX_BY_SEED, KERNEL_READ_AHEAD_KIB, LARGE, REAL_METHODS, SEEDED_AX, SMALL, TRANSFER,
                                         Size, UMAP_DEFAULTS, UNCAPPED, Plan)
from experiments.evaluation.plots import plot_convergence
from experiments.evaluation.rounds import TUNED, same_round_ratios
from experiments.evaluation.side_by_side import load_side_by_side
from experiments.evaluation.studies import Places, workload_overrides

REFERENCES = ("default", UMAP_DEFAULTS, *KERNELS, LLNL)


def ratio_text(ratio: tuple[float, float, float] | None) -> str:
    return "-" if ratio is None else f"{ratio[0]:.2f}x ({ratio[1]:.2f}-{ratio[2]:.2f})"


def reference_name(row: pd.Series) -> str:
    if row.method in KERNELS:
        return f"kernel mmap, read-ahead {row.read_ahead_kib:.0f} KiB" if not md.missing(row.read_ahead_kib) \
            else "kernel mmap"
    if row.method == LLNL:
        return f"LLNL UMap, {row.page_size} pages"
    return {"default": "our defaults", UMAP_DEFAULTS: "UMap's defaults (4 KiB pages)"}[row.method]


def versus(figures: pd.DataFrame, plan: Plan, side_by_side: dict[tuple[str, str], dict],
           llnl: dict[tuple[str, str], dict]) -> str:
    """The tuned pager (its best confirmed search) against each reference, per workload and scale; against our
    defaults and the kernel from the side-by-side rounds, and against LLNL UMap from its own program's rounds on
    our library too, where they ran the same winner (marked), else between the steps."""
    header = ["workload", "scale", "metric", "tuned (method)", "a run of it", "over our defaults, confirmed (rounds)",
              *(f"over {name}" for name in ("our defaults' step", "UMap's defaults", "kernel mmap (disk's read-ahead)",
                                            f"kernel mmap ({KERNEL_READ_AHEAD_KIB} KiB read-ahead)", "LLNL UMap"))]
    rows = []
    for workload, scale, part, tuned in tuned_parts(figures, plan):
        confirmed = f"{tuned.confirmed_speedup:.2f}x ({tuned.confirmed_low:.2f}-{tuned.confirmed_high:.2f})"
        record = side_by_side.get((workload, scale))
        same = same_round_ratios(record) if record and record["tuned_method"] == tuned.method else {}
        on_llnl = llnl.get((workload, scale), {})
        if on_llnl.get("tuned_method") == tuned.method and TUNED in (ratios := ours_over_llnl(on_llnl)):
            same[LLNL] = ratios[TUNED]
        others = [f"{ratio_text(same[m])}, same rounds" + (", its program" if m == LLNL else "") if m in same else
                  ratio_text(against(tuned, part.loc[m] if m in part.index else None)) for m in REFERENCES]
        rows.append([workload, scale, tuned.metric, f"{md.number(tuned.value)} ({tuned.method})",
                     md.seconds(tuned.run_seconds, 1), confirmed, *others])
    return markdown_table(header, rows)


def same_rounds(records: dict[tuple[str, str], dict]) -> str:
    """The tuned winner against our defaults and the kernel in the same interleaved rounds (the side-by-side step)."""
    header = ["workload", "scale", "tuned (method)", "rounds", "tuned median", "over our defaults",
              "over kernel mmap (disk's read-ahead)", f"over kernel mmap ({KERNEL_READ_AHEAD_KIB} KiB read-ahead)"]
    rows = []
    for (workload, scale), record in records.items():
        ratios = same_round_ratios(record)
        tuned = [run["value"] for run in record["runs"] if run["contender"] == TUNED and run["value"] is not None]
        disk = record["read_ahead_kib"].get("mmap")
        kernel = ratio_text(ratios.get("mmap")) + ("" if disk is None or "mmap" not in ratios else f" at {disk} KiB")
        rows.append([workload, scale, f"page size {format_size(record['tuned_params']['page_size'])} "
                     f"({record['tuned_method']})", len({run["round"] for run in record["runs"]}),
                     md.number(statistics.median(tuned) if tuned else None), ratio_text(ratios.get("default")),
                     kernel, ratio_text(ratios.get(f"mmap-ra{KERNEL_READ_AHEAD_KIB}"))])
    return markdown_table(header, rows)


def llnl_rounds(records: dict[tuple[str, str], dict]) -> str:
    """LLNL UMap's own programs on its library (at its best page size) and on ours, with our defaults and with the
    tuned winner, in the same interleaved rounds (the llnl step)."""
    header = ["workload", "scale", "program", "rounds", "LLNL UMap (page size)", "our defaults",
              "ours over LLNL UMap, untuned", "tuned (method, page size)", "tuned over LLNL UMap"]
    rows = []
    for (workload, scale), record in records.items():
        if "rounds" not in record:
            continue
        ratios = ours_over_llnl(record)
        ours = record["ours"]
        rows.append([workload, scale, record["program"], len({run["round"] for run in record["rounds"]}),
                     f"{md.seconds(record['value'], 1)} ({record['page_size']})", md.seconds(ours[OURS_DEFAULT], 1),
                     ratio_text(ratios.get(OURS_DEFAULT)), f"{md.seconds(ours[TUNED], 1)} ({record['tuned_method']}, "
                     f"{format_size(record['tuned_params']['page_size'])})", ratio_text(ratios.get(TUNED))])
    return markdown_table(header, rows)


def measured(figures: pd.DataFrame) -> str:
    """Every reference's median and range, stated with what it was (read-ahead, page size)."""
    part = figures[figures.method.isin(REFERENCES)]
    return markdown_table(["workload", "scale", "what", "median", "min", "max", "runs", "a run"],
                    [[r.workload, r.scale, reference_name(r), md.number(r.value), md.number(r.low),
                      md.number(r.high), md.number(r.runs), md.seconds(r.run_seconds, 1)] for _, r in part.iterrows()])


def tuning_cost(row: pd.Series) -> str:
    """A search's tuning time and trials; for one cut short, only that (its time so far is no tuning time)."""
    if not finished(row):
        return f"{row.incomplete} ({row.trials:.0f} trials, {row.capped:.0f} capped)"
    return f"{md.seconds(row.wall_seconds)} ({row.trials:.0f} trials, {row.capped:.0f} capped)"


def tuning_time(figures: pd.DataFrame, plan: Plan) -> str:
    methods = (*REAL_METHODS, UNCAPPED)
    header = ["workload", "scale", *methods]
    rows = []
    for workload in plan.workloads:
        for scale in plan.scales(workload):
            part = figures[(figures.workload == workload) & (figures.scale == scale)].set_index("method")
            entries = [tuning_cost(part.loc[m]) if m in part.index else "-" for m in methods]
            if any(entry != "-" for entry in entries):
                rows.append([workload, scale, *entries])
    return markdown_table(header, rows)


def confirmed_text(row: pd.Series | None) -> str:
    """A search's confirmed speedup over our defaults, or why it has none."""
    if row is None:
        return "-"
    return md.times(row.confirmed_speedup) if finished(row) else row.incomplete


def ax_versus_grid(figures: pd.DataFrame, plan: Plan) -> str:
    header = ["workload", "Ax confirmed", "grid confirmed", "over the same defaults", "Ax time", "grid time",
              "Ax trials", "grid trials", "Ax time / grid time", "Ax time to its best"]
    rows = []
    for workload in plan.workloads:
        part = figures[(figures.workload == workload) & (figures.scale == LARGE)].set_index("method")
        if "ax" not in part.index or "grid" not in part.index:
            continue
        ax, grid = part.loc["ax"], part.loc["grid"]
        cost = ax.wall_seconds / grid.wall_seconds if finished(ax) and finished(grid) and grid.wall_seconds else None
        same = "yes" if ax.defaults == grid.defaults else "no: the speedups are not comparable"
        rows.append([workload, confirmed_text(ax), confirmed_text(grid), same, md.seconds(ax.wall_seconds),
                     md.seconds(grid.wall_seconds), md.number(ax.trials), md.number(grid.trials), md.times(cost),
                     md.seconds(ax.time_to_best_seconds)])
    return markdown_table(header, rows)


def ax_over_seeds(figures: pd.DataFrame, plan: Plan) -> str:
    """Each Ax study at the large size, a row a seed, for the workloads searched at more than one seed."""
    header = ["workload", "seed", "confirmed over our defaults (rounds)", "winner's page size", "a run of it",
              "tuning time", "time to its best"]
    rows = []
    for workload in plan.workloads:
        part = figures[(figures.workload == workload) & (figures.scale == LARGE)].set_index("method")
        if not any(m in part.index for m in SEEDED_AX):
            continue
        for seed, method in AX_BY_SEED.items():
            if method not in part.index:
                continue
            row = part.loc[method]
            confirmed = (f"{row.confirmed_speedup:.2f}x ({row.confirmed_low:.2f}-{row.confirmed_high:.2f})"
                         if finished(row) else row.incomplete)
            page = row.page_size if md.missing(row.page_size) else format_size(int(row.page_size))
            rows.append([workload, seed, confirmed, page, md.seconds(row.run_seconds, 1),
                         md.seconds(row.wall_seconds), md.seconds(row.time_to_best_seconds)])
    return markdown_table(header, rows)


def transfer(figures: pd.DataFrame, plan: Plan) -> str:
    """The small size's Ax parameters at the large size, against our defaults and Ax tuned there."""
    header = ["workload", f"{SMALL} Ax confirmed", f"{TRANSFER} at {LARGE} over our defaults",
              f"{LARGE} Ax confirmed"]
    rows = []
    for workload in plan.workloads:
        large = figures[(figures.workload == workload) & (figures.scale == LARGE)].set_index("method", drop=False)
        small = figures[(figures.workload == workload) & (figures.scale == SMALL)].set_index("method")
        if TRANSFER not in large.index or "default" not in large.index:
            continue
        moved = large.loc[TRANSFER]
        ratio = against(moved, large.loc["default"])
        rows.append([workload, confirmed_text(small.loc["ax"] if "ax" in small.index else None), ratio_text(ratio),
                     confirmed_text(large.loc["ax"] if "ax" in large.index else None)])
    return markdown_table(header, rows)


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
    return markdown_table(header, rows)


def failures(places: Places) -> str:
    steps = places.out / "steps.csv"
    if not steps.is_file():
        return "No step has run yet."
    log = pd.read_csv(steps, dtype={"error": str})
    last = log.drop_duplicates("step", keep="last")
    bad = last[last.status != "ok"]
    if bad.empty:
        return f"Every one of the {len(last)} steps finished."
    return markdown_table(["step", "status", "why"], [[r.step, r.status, r.error] for _, r in bad.iterrows()])


def write_report(plan: Plan, places: Places, command: str) -> Path:
    out = places.out
    figures = collect(plan, places)
    figures.to_csv(out / "real_figures.csv", index=False)
    side_by_side = {(w, scale): record for w in plan.workloads for scale in plan.scales(w)
                    if (record := load_side_by_side(places, scale, w)) is not None}
    llnl = {(w, scale): record for w in plan.workloads for scale in plan.scales(w)
            if (record := load_llnl(places, scale, w)) is not None}
    plot_convergence(figures, plan, places, out / "convergence.png", scale=LARGE)
    budget = plan.budget
    machine = "\n".join(f"- {label}: {text}" for label, text in describe(places.data_dir, list(plan.workloads)))
    sections = [
        f"# The AutoPager evaluation at real sizes on this machine ({plan.mode} run)",
        f"Generated {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC by `{command}` from the "
        f"studies under `studies/`, the kernel's runs under `kernel/` and LLNL UMap's under `llnl/`. All figures: "
        f"`real_figures.csv`; steps, with the load average at each start: `steps.csv`.",
        "## Machine\n" + machine,
        "## Setup\n"
        "Every search study runs on the tuner's own protocol: runs capped at `runner.cap` times the incumbent's "
        "time, the defaults measured again during the search (noise), and the tuner's confirmation at the end "
        "(the defaults and the best 3 trials measured again in 3 interleaved rounds). A tuned figure is the "
        "confirmed winner's median over its rounds, its speedup over our defaults the ratio of the medians of "
        "the same rounds, with the range of the per-round ratios. A search cut short before its confirmation "
        "ended (a timeout, Ctrl-C, a session that ended) is shown as such, with no figure or tuning time; the next "
        "run resumes it. Against our defaults' own step, UMap's defaults (4 KiB pages), the kernel's mmap and LLNL "
        "UMap, measured apart, the ratio is of medians and its range of the extremes; the defaults' step is "
        "measured again when the defaults change, so that column is against today's defaults even where the "
        "search and its confirmation ran before. "
        f"Methods: page size only; grid over `experiments/configs/space/evaluation.yaml`; Ax ({budget.ax_initialization} "
        f"Sobol + {budget.large_ax_trials - budget.ax_initialization} Bayesian trials), and again without "
        f"capping (`{UNCAPPED}`, for the tuning time) and at other seeds (`{SEEDED_AX[0]}`, ...); coordinate "
        f"descent and random search ({budget.search_trials} trials); the small size's Ax parameters at the large "
        f"size. The kernel's mmap runs in a memory cgroup of the pager's memory at the disk's read-ahead and at {KERNEL_READ_AHEAD_KIB} "
        f"KiB, stated below; LLNL UMap's own programs (sort, bfs) at the better of 1 MiB and 4 MiB pages.\n\n"
        + setup(plan, places),
        "## The tuned pager against the rest\n" + versus(figures, plan, side_by_side, llnl),
        "### The same, in the same rounds\nThe references were measured in steps of their own, hours or days "
        "from the searches, on a disk whose speed drifts. Here the best tuned winner, our defaults and the "
        "kernel's mmap ran one run each in interleaved rounds (`side-by-side/`): ratios of the medians, with the "
        "range of the per-round ratios; the table above takes its columns of our defaults' step and the kernel "
        "from here (\"same rounds\") where the winner is the same.\n\n" + same_rounds(side_by_side),
        "### LLNL UMap's own programs, on its library and on ours in the same rounds\nLLNL's umapsort and bfs, "
        "built against LLNL UMap, ran with LLNL's libumap.so at each of its page sizes and with ours in its place "
        "(the UMap C API is the same), with our defaults and with the tuned winner's parameters, one run each in "
        "interleaved rounds (`llnl/`): the program's own timing line, ratios of the medians with the range of the "
        "per-round ratios against LLNL UMap at its best page size; the table above takes its LLNL column from here "
        "(\"same rounds, its program\") where the winner is the same.\n\n" + llnl_rounds(llnl),
        "### What each reference measured\n" + measured(figures),
        "## Tuning time of each strategy, capped and uncapped\nWall time from a study's first trial to its "
        "last, its confirmation and the strategy's own time included, the time a resumed study was stopped "
        "left out.\n\n" + tuning_time(figures, plan),
        "## Ax against the grid (large size)\n" + ax_versus_grid(figures, plan),
        "## Ax over seeds (large size)\nThe same Ax study at other seeds (`ax` is seed 0); the convergence plot "
        "draws their median and range.\n\n" + ax_over_seeds(figures, plan),
        "## The small size's parameters at the large size\n" + transfer(figures, plan),
        "## Findings, the disappointing ones first\n"
        + "\n".join(f"- {text}" for text in findings(figures, plan, side_by_side, llnl)),
        "## Steps that failed\n" + failures(places),
    ]
    path = out / "summary.md"
    path.write_text("\n\n".join(sections) + "\n")
    return path
