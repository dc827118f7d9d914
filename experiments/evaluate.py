#!/usr/bin/env python3
"""The AutoPager evaluation (paper section IV) reproduced on this machine, at real sizes.

Sort, bfs, lmdb_readseq, lmdb_readrandom, lmdb_readreverse, lookup, stream and numpy_gather at real sizes (GiB of
data, a 1 GiB buffer; bfs scale 24 also in memory; runs of 10 s to minutes), on the tuner's own protocol (capping,
noise runs, confirmation in 3 interleaved rounds): our defaults, UMap's defaults (4 KiB pages), page size only, the
restricted grid, Ax (30 trials, capped), coordinate descent, random search, the transfer from a small size, the
kernel's mmap at the disk's read-ahead and at 128 KiB, LLNL UMap for sort and bfs (``--llnl PREFIX``, or built from
``--llnl-source`` and ``--llnl-apps-source``), the best tuned winner, our defaults and the kernel in the same
interleaved rounds (``side-by-side``), Ax uncapped for the tuning time without capping, and Ax at other seeds
(last). Figures: real_figures.csv, summary.md, convergence.png (experiments/evaluation/report.py). Before running,
the steps and a rough time estimate are printed; ``--dry-run`` prints them and exits.

Every study is recorded and resumable: run the same command again to continue. A search study cut short (a
timeout, Ctrl-C, a session that ended) is logged in steps.csv as ``interrupted``, shown in the report as not
confirmed, without figures, and resumed by the next run.

    sudo python3 -m experiments.evaluate --llnl /opt/llnl-umap --wait-load 0.5   # many hours
    sudo python3 -m experiments.evaluate --llnl-source umap --llnl-apps-source umap-apps   # LLNL UMap built
    python3 -m experiments.evaluate --dry-run            # the steps and the time estimate
    sudo python3 -m experiments.evaluate --steps 'large/sort/llnl,*/bfs/ax'   # only these steps
    sudo python3 -m experiments.evaluate --quick --workloads sort   # the steps at tiny sizes
    python3 -m experiments.evaluate --report-only        # the figures from the recorded studies
    python3 -m experiments.evaluate --ax-overhead tuner --ax-seeds 1 --out results/evaluation   # Ax's own time

Needs root (dropping the page cache, memory cgroups, the disk's read-ahead) and the built workloads
(build/workloads, or AUTOPAGER_BIN).
"""
from __future__ import annotations

import argparse
import csv
import dataclasses
import datetime
import fnmatch
import os
import sys
import time
from pathlib import Path

from autopager.errors import ConfigError, StudyError
from experiments import REPO, RESULTS
from experiments.evaluation.axoverhead import VARIANTS, measure_overhead
from experiments.evaluation.kernel import measure_kernel
from experiments.evaluation.llnl import measure_llnl
from experiments.evaluation.plan import (BUDGETS, REAL, REAL_QUICK, WORKLOADS, KernelSpec, LlnlSpec, Plan, SideBySideSpec,
                                         Step, StudySpec, estimate_seconds, expected_runs, make_plan)
from experiments.evaluation.report import write_report
from experiments.evaluation.side_by_side import measure_side_by_side, tuned_winner
from experiments.evaluation.studies import OPTIMIZER_STEP, Places, load_optimizer, run_study, unfinished
from experiments.llnl_build import add_source_arguments, llnl_prefix

STEP_COLUMNS = ["finished", "step", "status", "error", "seconds", "load_before", "load_after"]


def log_step(path: Path, label: str, status: str, error: str, seconds: float, load_before: float) -> None:
    new = not path.is_file()
    with open(path, "a", newline="") as log:
        writer = csv.writer(log)
        if new:
            writer.writerow(STEP_COLUMNS)
        writer.writerow([datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), label,
                         status, error, f"{seconds:.1f}", f"{load_before:.2f}", f"{os.getloadavg()[0]:.2f}"])


def describe_plan(plan: Plan, listed: bool) -> None:
    """The number of steps and a rough time estimate; with ``listed``, each step and its runs."""
    if listed:
        for number, step in enumerate(plan.steps, 1):
            print(f"{number:4d}. {step.label} (about {expected_runs(step, plan)} runs)")
    hours = estimate_seconds(plan) / 3600
    print(f"evaluation: {len(plan.steps)} steps, roughly {hours:.1f} h of machine time "
          "(capped runs end early; a rough estimate, from guessed run times)", flush=True)


def wait_for_load(highest: float | None, longest: float = 600) -> None:
    """Wait (up to ``longest`` seconds) for the 1-minute load average to fall to ``highest``: the previous step's
    runs, or anything else on the machine, still in it."""
    deadline = time.monotonic() + longest
    while highest is not None and os.getloadavg()[0] > highest and time.monotonic() < deadline:
        time.sleep(5)


def run_plan(plan: Plan, places: Places, mmap_timeout: float, llnl: Path | None, wait_load: float | None) -> None:
    """Every step in order; a step that fails is logged and the next one runs."""
    prepared: set[tuple[str, ...]] = set()
    for number, step in enumerate(plan.steps, 1):
        print(f"\n=== evaluation step {number}/{len(plan.steps)}: {step.label}", flush=True)
        wait_for_load(wait_load)
        load, start = os.getloadavg()[0], time.perf_counter()
        status, error = "ok", ""
        try:
            if isinstance(step, KernelSpec):
                result = measure_kernel(step, plan, places, mmap_timeout, prepared)
                status, error = ("ok", "") if result["value"] is not None else ("failed", result["error"] or "")
            elif isinstance(step, LlnlSpec):
                result = measure_llnl(step, plan, places, llnl, mmap_timeout,
                                      lambda: tuned_winner(plan, places, step.workload, step.scale))
                status, error = (("skipped", "LLNL UMap not given (--llnl or --llnl-source)") if result is None else
                                 ("ok", "") if result["error"] is None else ("failed", result["error"]))
            elif isinstance(step, SideBySideSpec):
                result = measure_side_by_side(step, plan, places, mmap_timeout, prepared)
                status, error = ("ok", "") if result["error"] is None else ("failed", result["error"])
            else:
                run_study(step, plan, places, prepared)
                why = unfinished(step, places)
                if why is not None:
                    status, error = "incomplete", why
        except (StudyError, ConfigError, OSError) as failure:
            status, error = "failed", str(failure).splitlines()[0]
            print(f"evaluation: {step.label} failed: {failure}", flush=True)
        except KeyboardInterrupt:  # Ctrl-C, or SIGTERM in a study: logged as not done, and the evaluation stops
            why = unfinished(step, places) if isinstance(step, StudySpec) else None
            log_step(places.out / plan.log, step.label, "interrupted", why or "interrupted",
                     time.perf_counter() - start, load)
            raise
        log_step(places.out / plan.log, step.label, status, error, time.perf_counter() - start, load)


def selected_steps(plan: Plan, patterns: list[str]) -> list[Step]:
    """The plan's steps whose labels match one of ``patterns``; a pattern that matches none is an error, so a
    misspelt label does not run nothing in silence."""
    matches = {pattern: [step for step in plan.steps if fnmatch.fnmatchcase(step.label, pattern)]
               for pattern in patterns}
    unmatched = [pattern for pattern, steps in matches.items() if not steps]
    if unmatched:
        sys.exit(f"evaluate: --steps {', '.join(unmatched)} match no step of the plan; --dry-run lists them")
    chosen = {id(step) for steps in matches.values() for step in steps}
    return [step for step in plan.steps if id(step) in chosen]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the steps at tiny sizes and budgets, in minutes")
    parser.add_argument("--llnl", type=Path, help="LLNL UMap's install prefix (bin/umapsort, bin/bfs, "
                        "lib/libumap.so); without it or --llnl-source its steps are skipped")
    add_source_arguments(parser)
    parser.add_argument("--wait-load", type=float, metavar="LOAD", help="before each step, wait (10 min at most) for "
                        "the 1-minute load average to fall to LOAD (e.g. 0.5 on a quiet machine); the load at each "
                        "step's start is in steps.csv either way")
    parser.add_argument("--dry-run", action="store_true", help="list the steps and the time estimate, and exit")
    parser.add_argument("--steps", help="comma-separated step labels or shell patterns (e.g. 'large/sort/llnl,"
                        "*/bfs/ax'): run only the plan's steps that match, in the plan's order; the report still "
                        "covers every recorded step")
    parser.add_argument("--out", type=Path, help="results directory (default: results/evaluation-real, with --quick "
                        "outputs/evaluation-real-quick)")
    parser.add_argument("--data-dir", type=Path, default=Path("/var/tmp/autopager-evaluation"),
                        help="where the workloads keep their data")
    parser.add_argument("--workloads", help="comma-separated, of: " + ", ".join(WORKLOADS) + " (default: all)")
    parser.add_argument("--ax-seeds", type=int, default=3, help="with --ax-overhead: Ax studies, one a seed")
    parser.add_argument("--ax-overhead", choices=VARIANTS, help="only time Ax's asks with these settings, without "
                        "workload runs (experiments/evaluation/axoverhead.py)")
    parser.add_argument("--ax-trials", type=int, help="Ax trials at the small size (default: 30, --quick: 5)")
    parser.add_argument("--large-ax-trials", type=int, help="Ax trials at the large size (default: as small)")
    parser.add_argument("--mmap-timeout", type=float, help="seconds a kernel-mmap (and LLNL UMap) run (default: 1800; "
                        "--quick: 120)")
    parser.add_argument("--report-only", action="store_true", help="write the figures from the recorded studies")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    mode = REAL_QUICK if args.quick else REAL
    workloads = tuple(name for name in (args.workloads or ",".join(WORKLOADS)).split(",") if name)
    unknown = set(workloads) - set(WORKLOADS)
    if unknown:
        sys.exit(f"evaluate: unknown workload(s) {sorted(unknown)}; choose from {', '.join(WORKLOADS)}")
    budget = BUDGETS[mode]
    small = args.ax_trials or budget.ax_trials
    budget = dataclasses.replace(budget, ax_trials=small, large_ax_trials=args.large_ax_trials or small)
    plan = make_plan(mode, workloads, budget)
    if args.steps:
        plan.steps = selected_steps(plan, args.steps.split(","))
    if args.dry_run:
        describe_plan(plan, listed=True)
        return 0
    out = args.out or (REPO / "outputs" / "evaluation-real-quick" if args.quick else RESULTS / "evaluation-real")
    places = Places(out.resolve(), args.data_dir.resolve())
    places.out.mkdir(parents=True, exist_ok=True)
    command = " ".join(["python3 -m experiments.evaluate", *(argv or sys.argv[1:])])
    if args.ax_overhead:
        print(f"evaluation: {measure_overhead(args.ax_overhead, args.ax_seeds, places.out, command)}")
        return 0
    if not args.report_only:
        if os.geteuid() != 0:
            sys.exit("evaluate: run as root: the runs drop the page cache, and the kernel's mmap runs in a memory cgroup")
        describe_plan(plan, listed=False)
        load, start = os.getloadavg()[0], time.perf_counter()
        load_optimizer()
        log_step(places.out / plan.log, OPTIMIZER_STEP, "ok", "", time.perf_counter() - start, load)
        mmap_timeout = args.mmap_timeout or (120 if args.quick else 1800)
        llnl = llnl_prefix(args, places.data_dir) if any(isinstance(step, LlnlSpec) for step in plan.steps) else None
        run_plan(plan, places, mmap_timeout, llnl, args.wait_load)
    summary = write_report(plan, places, command)
    print(f"\nevaluation: the figures are in {places.out} ({summary.name})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
