"""What the Ax-against-grid comparison measures (issue 4's target): on sort and bfs at one out-of-core size, an
exhaustive grid over a sampled space of a few hundred points (``configs/space/comparison.yaml``) and Ax (its
default 10 Sobol + 20 Bayesian trials, with several seeds) over the same space; then the defaults and each
method's best parameters measured again (the confirmation), in rounds: each round measures every one of
them once, so that a machine that gets slower or faster while they run changes them all alike.

The studies are the evaluation's (``evaluation/studies.py``), recorded under
``<out>/studies/comparison/<workload>/<method>/`` and resumable. Each workload's studies run together (the
defaults, Ax, the grid, the confirmations), so a run cut short has whole workloads.
"""
from __future__ import annotations

import dataclasses

from experiments.evaluation.plan import CONFIRM, Budget, Plan, Size, StudySpec, fixed

SCALE = "comparison"
WORKLOADS = ("sort", "bfs")
SPACE = "comparison"
LOG = "ax_vs_grid_steps.csv"
# a defaults' trial takes 1-3 s here: data eight (sort) and seventeen (bfs) times the buffer
SIZES = {
    "full": {"sort": Size(32, "4MiB"), "bfs": Size(19, "4MiB")},
    "quick": {"sort": Size(2, "256KiB"), "bfs": Size(13, "256KiB")},
}
BUDGETS = {
    "full": Budget(ax_initialization=10, ax_trials=30, large_ax_trials=30, search_trials=0, grid_trials=None,
                   confirm_repeats=5),
    "quick": Budget(ax_initialization=3, ax_trials=6, large_ax_trials=6, search_trials=0, grid_trials=None,
                    confirm_repeats=1),
}
CONFIRM_TIMEOUT = "runner.timeout=60"  # a confirmation run is not cut at a few times the defaults' time
# the quick run's space: 4 page sizes x 2 x 2 = 16 points, to check the pipeline in a minute
QUICK_SPACE = ("space.fillers={values:[1,2]}", "space.evictors=1", "space.read_ahead={values:[0,4]}")


def ax_method(seed: int) -> str:
    return f"ax-seed{seed}"


def confirmation(method: str, round_: int) -> str:
    """The study measuring ``method``'s best parameters once, in confirmation round ``round_``."""
    return f"{CONFIRM}-{method}-round{round_}"


def make_comparison(mode: str, workloads: tuple[str, ...] = WORKLOADS, ax_seeds: int = 3) -> Plan:
    budget = BUDGETS[mode]
    plan = Plan(f"comparison-{mode}", workloads, {w: {SCALE: SIZES[mode][w]} for w in workloads}, budget, {},
                log=LOG)
    space = QUICK_SPACE if mode == "quick" else ()
    ax = (f"strategy.initialization_trials={budget.ax_initialization}", f"strategy.trials={budget.ax_trials}")
    for w in workloads:
        searches = [StudySpec(w, SCALE, ax_method(seed), "ax", SPACE, (*space, *ax, f"seed={seed}"))
                    for seed in range(ax_seeds)]
        searches.append(StudySpec(w, SCALE, "grid", "grid", SPACE, space))
        plan.steps += [StudySpec(w, SCALE, "default", "default"), *searches]
        methods = ["default", *(spec.method for spec in searches)]
        plan.steps += [dataclasses.replace(fixed(w, SCALE, confirmation(method, round_), (SCALE, method)),
                                           overrides=(CONFIRM_TIMEOUT,))
                       for round_ in range(budget.confirm_repeats) for method in methods]
    return plan
