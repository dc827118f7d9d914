"""What the evaluation measures: the workloads, their small and large sizes, and the studies, in run order.

Every method is a study of the tuner (``autopager tune``), recorded under
``<out>/studies/<scale>/<workload>/<method>/trials.csv``. A method that measures fixed parameters (the
small-to-large transfer, the confirmation runs) is a study with the ``default`` strategy whose baseline is
those parameters. The kernel's mmap is measured apart (experiments/evaluation/kernel.py).

The order puts what the figures need most first, so that a run cut short still has every workload's
defaults, mmap, page-size-only, grid and Ax results: small-size tuning, then the large size, then coordinate
descent and random search, then the confirmation of each method's best parameters.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from autopager.params import format_size, parse_size

SMALL, LARGE = "small", "large"
WORKLOADS = ("bfs", "sort", "kv_readseq", "kv_readrandom", "kv_readreverse", "lookup")
# the tuning methods of Figure 2, and the ones measured only for the convergence plot
FIGURE_METHODS = ("pagesize", "grid", "ax")
CONVERGENCE_METHODS = ("ax", "grid", "coordinate", "random")
TRANSFER, CONFIRM = "transfer", "confirm"
PAGE_SIZE_FRACTION = 8  # page sizes searched up to buffer / 8: a few pages at least in the buffer


@dataclass(frozen=True)
class Size:
    """A workload's data size knob and its pager buffer (also the kernel's memory limit)."""
    size: int
    buffer: str

    @property
    def buffer_bytes(self) -> int:
        return parse_size(self.buffer)

    @property
    def largest_page(self) -> str:
        return format_size(self.buffer_bytes // PAGE_SIZE_FRACTION)


# data about eight times the buffer at both scales, the large one twice the small one: what a two-core
# machine runs out of core, in a noisy hour, with every method (trials take 1-3 s at the small size)
SIZES = {
    "full": {
        "bfs": {SMALL: Size(17, "2MiB"), LARGE: Size(18, "4MiB")},
        "sort": {SMALL: Size(8, "1MiB"), LARGE: Size(16, "2MiB")},
        "kv_readseq": {SMALL: Size(16, "2MiB"), LARGE: Size(32, "4MiB")},
        "kv_readrandom": {SMALL: Size(16, "2MiB"), LARGE: Size(32, "4MiB")},
        "kv_readreverse": {SMALL: Size(16, "2MiB"), LARGE: Size(32, "4MiB")},
        "lookup": {SMALL: Size(16, "2MiB"), LARGE: Size(32, "4MiB")},
    },
    "quick": {
        "bfs": {SMALL: Size(13, "256KiB"), LARGE: Size(14, "512KiB")},
        "sort": {SMALL: Size(2, "256KiB"), LARGE: Size(4, "512KiB")},
        "kv_readseq": {SMALL: Size(2, "256KiB"), LARGE: Size(4, "512KiB")},
        "kv_readrandom": {SMALL: Size(2, "256KiB"), LARGE: Size(4, "512KiB")},
        "kv_readreverse": {SMALL: Size(2, "256KiB"), LARGE: Size(4, "512KiB")},
        "lookup": {SMALL: Size(2, "256KiB"), LARGE: Size(4, "512KiB")},
    },
}


# lookups a run of the random-access workloads (their configs' counts take tens of seconds a run out of core
# here); pinned, so the evaluation's commands do not change with the configs
LOOKUPS = {"full": {"kv_readrandom": 5000, "lookup": 2000}, "quick": {"kv_readrandom": 500, "lookup": 200}}


@dataclass(frozen=True)
class Budget:
    """Trials a study: Ax's Sobol initialization and total, and the caps of the other searches."""
    ax_initialization: int
    ax_trials: int
    large_ax_trials: int
    search_trials: int          # coordinate descent and random search
    grid_trials: int | None     # None: the whole restricted grid
    confirm_repeats: int


BUDGETS = {
    "full": Budget(ax_initialization=10, ax_trials=30, large_ax_trials=30, search_trials=20, grid_trials=None,
                   confirm_repeats=3),
    "quick": Budget(ax_initialization=3, ax_trials=5, large_ax_trials=5, search_trials=5, grid_trials=6,
                    confirm_repeats=1),
}


@dataclass(frozen=True)
class StudySpec:
    """One study of the evaluation: a method run on a workload at a scale."""
    workload: str
    scale: str
    method: str                             # the study's name: default, pagesize, grid, ax, transfer, ...
    strategy: str
    space: str = "default"
    overrides: tuple[str, ...] = ()
    fixed_from: tuple[str, str] | None = None   # (scale, method) whose best parameters this study measures
    repeats: int = 1

    @property
    def label(self) -> str:
        return f"{self.scale}/{self.workload}/{self.method}"


@dataclass(frozen=True)
class KernelSpec:
    """The workload on the kernel's mmap under a memory limit equal to the pager's buffer."""
    workload: str
    scale: str
    repeats: int

    @property
    def label(self) -> str:
        return f"{self.scale}/{self.workload}/mmap"


@dataclass
class Plan:
    mode: str
    workloads: tuple[str, ...]
    sizes: dict[str, dict[str, Size]]
    budget: Budget
    lookups: dict[str, int]
    steps: list[StudySpec | KernelSpec] = field(default_factory=list)
    log: str = "steps.csv"  # each step's outcome, in the output directory

    def size(self, workload: str, scale: str) -> Size:
        return self.sizes[workload][scale]


def searches(workload: str, scale: str, budget: Budget) -> dict[str, StudySpec]:
    """The tuning studies of a workload at a scale, by method."""
    ax_trials = budget.ax_trials if scale == SMALL else budget.large_ax_trials
    grid = () if budget.grid_trials is None else (f"budget.trials={budget.grid_trials}",)
    capped = (f"budget.trials={budget.search_trials}",)
    return {
        "default": StudySpec(workload, scale, "default", "default"),
        "pagesize": StudySpec(workload, scale, "pagesize", "pagesize"),
        "grid": StudySpec(workload, scale, "grid", "grid", space="evaluation", overrides=grid),
        "ax": StudySpec(workload, scale, "ax", "ax", overrides=(
            f"strategy.initialization_trials={budget.ax_initialization}", f"strategy.trials={ax_trials}")),
        "coordinate": StudySpec(workload, scale, "coordinate", "coordinate", overrides=capped),
        "random": StudySpec(workload, scale, "random", "random",
                            overrides=(f"strategy.trials={budget.search_trials}",)),
    }


def fixed(workload: str, scale: str, method: str, source: tuple[str, str], repeats: int = 1) -> StudySpec:
    return StudySpec(workload, scale, method, "default", fixed_from=source, repeats=repeats)


def confirmations(workload: str, scale: str, budget: Budget) -> list[StudySpec]:
    """Each method's best parameters measured again, with repeats: the best of many noisy trials is biased
    low (the winner's curse), the confirmation is not."""
    methods = ("default", "pagesize", "grid", "ax") if scale == SMALL else ("default", "pagesize", "ax", TRANSFER)
    return [fixed(workload, scale, f"{CONFIRM}-{method}", (scale, method), budget.confirm_repeats)
            for method in methods]


def make_plan(mode: str, workloads: tuple[str, ...] = WORKLOADS, budget: Budget | None = None) -> Plan:
    plan = Plan(mode, workloads, {w: SIZES[mode][w] for w in workloads}, budget or BUDGETS[mode], LOOKUPS[mode])
    small = {w: searches(w, SMALL, plan.budget) for w in workloads}
    large = {w: searches(w, LARGE, plan.budget) for w in workloads}
    repeats = plan.budget.confirm_repeats
    for w in workloads:
        plan.steps += [small[w]["default"], KernelSpec(w, SMALL, repeats)]
        plan.steps += [small[w][m] for m in ("pagesize", "grid", "ax")]
    for w in workloads:
        plan.steps += [large[w]["default"], KernelSpec(w, LARGE, repeats), large[w]["pagesize"],
                       fixed(w, LARGE, TRANSFER, (SMALL, "ax")), large[w]["ax"]]
    for w in workloads:
        plan.steps += [small[w]["coordinate"], small[w]["random"]]
    for w in workloads:
        plan.steps += confirmations(w, SMALL, plan.budget) + confirmations(w, LARGE, plan.budget)
    return plan
