"""What the evaluation measures: the workloads, their small and large sizes, and the studies, in run order.

Every method is a study of the tuner (``autopager tune``), recorded under
``<out>/studies/<scale>/<workload>/<method>/trials.csv``. A method that measures fixed parameters (our and UMap's
defaults, the small-to-large transfer) is a study with the ``default`` strategy whose baseline is those
parameters. The kernel's mmap is measured apart (experiments/evaluation/kernel.py).

The evaluation runs at real sizes (mode ``real``; ``real-quick``: its steps at tiny sizes), on the tuner's own
protocol: every search
study caps its runs, measures the defaults during the search and ends with the tuner's confirmation (interleaved
rounds of the defaults and the best trials), so each speedup is a confirmed figure with its spread. The methods
run at the large size (and bfs in memory); the small size has the defaults and Ax, for the transfer. The kernel's
mmap is measured at the disk's read-ahead as it is and at the kernel's default of 128 KiB, and LLNL UMap
(experiments/evaluation/llnl.py) runs sort and bfs when given, its programs on our library too in the same rounds.
Its order: each workload's defaults, UMap's defaults, the kernel, page-size-only and Ax; then the small size and
the transfer; then grid, coordinate descent and random search; then LLNL UMap (after the searches: our library
runs LLNL's programs with the best tuned winner); then the best tuned winner, our defaults and the kernel in the same
interleaved rounds (``side-by-side``: the references' own steps ran hours or days apart, on a disk whose speed
drifts); then the uncapped Ax studies, there only for the tuning time without capping; last Ax again at other
seeds (``ax-seed1``, ...), for the spread of its convergence and of its winner over seeds.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from autopager.parameters import format_size, parse_size

SMALL, LARGE, MEMORY = "small", "large", "memory"
WORKLOADS = ("sort", "bfs", "lmdb_readseq", "lmdb_readrandom", "lmdb_readreverse", "lookup", "stream",
             "numpy_gather")
REAL, REAL_QUICK = "real", "real-quick"  # the plan at real sizes, and at the quick sizes for the tests
UMAP_DEFAULTS, UNCAPPED = "umap-default", "ax-uncapped"
# UMap's own defaults: system pages, a filler and an evictor a hardware thread, no read-ahead, the page cache.
UMAP_DEFAULT_BASELINE = ("baseline.page_size=${system_page:}", "baseline.fillers=${cores:}",
                         "baseline.evictors=${cores:}", "baseline.read_ahead=0", "baseline.read_around=0",
                         "baseline.direct_io=0")
REAL_METHODS = ("pagesize", "grid", "ax", "coordinate", "random")  # the searches of the real plan
KERNEL_READ_AHEAD_KIB = 128  # the kernel's default read-ahead of a disk, measured beside the disk's own
LLNL_PAGE_SIZES = ("1MiB", "4MiB")  # LLNL UMap runs at the better of these
# the searches drawn in the convergence plot
CONVERGENCE_METHODS = ("ax", "grid", "coordinate", "random")
AX_SEEDS = (1, 2)  # Ax's other seeds at the large size (the ``ax`` study is seed 0)


def seeded_ax(seed: int) -> str:
    """The method name of the Ax study at ``seed`` (seed 0 is ``ax``)."""
    return f"ax-seed{seed}" if seed else "ax"


SEEDED_AX = tuple(seeded_ax(seed) for seed in AX_SEEDS)
AX_BY_SEED = {seed: seeded_ax(seed) for seed in (0, *AX_SEEDS)}
TRANSFER = "transfer"
SIDE_BY_SIDE = "side-by-side"  # the tuned winner, our defaults and the kernel in the same rounds
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


# sizes (MiB of data, or bfs's scale) where a run takes 10 s to minutes and the data is several times the buffer;
# bfs also in memory. lmdb's database is about 1.2 times its records; bfs scale 24 is about 2.3 GB of CSR files.
# sort's small size is 2 GiB: at 1 GiB a tuned run took 8.8 s.
_REAL = {SMALL: Size(1024, "256MiB"), LARGE: Size(4096, "1GiB")}
SIZES: dict[str, dict[str, dict[str, Size]]] = {}
SIZES[REAL] = {
    "sort": {SMALL: Size(2048, "512MiB"), LARGE: Size(4096, "1GiB")},
    "lookup": _REAL, "stream": _REAL, "numpy_gather": _REAL,
    "bfs": {SMALL: Size(22, "256MiB"), LARGE: Size(24, "1GiB"), MEMORY: Size(24, "8GiB")},
    "lmdb_readseq": {SMALL: Size(1024, "256MiB"), LARGE: Size(3072, "1GiB")},
    "lmdb_readrandom": {SMALL: Size(1024, "256MiB"), LARGE: Size(3072, "1GiB")},
    "lmdb_readreverse": {SMALL: Size(1024, "256MiB"), LARGE: Size(3072, "1GiB")},
}
_QUICK = {SMALL: Size(2, "256KiB"), LARGE: Size(4, "512KiB")}
SIZES[REAL_QUICK] = {
    "sort": _QUICK, "lookup": _QUICK, "stream": {SMALL: Size(3, "256KiB"), LARGE: Size(6, "512KiB")},
    "numpy_gather": _QUICK, "lmdb_readseq": _QUICK, "lmdb_readrandom": _QUICK, "lmdb_readreverse": _QUICK,
    "bfs": {SMALL: Size(13, "256KiB"), LARGE: Size(14, "512KiB"), MEMORY: Size(14, "64MiB")},
}

# what a run of the random-access workloads does instead of their configs' lookup counts (tens of seconds a run
# out of core here); pinned, so the evaluation's commands do not change with the configs. The real run time-boxes
# them: a lookup out of core costs a few random 4 KiB-1 MiB reads, 0.05-10 ms here, so a count that gives the
# tuned pager 10 s gives our 1 MiB defaults minutes a run (lookup: 5,000 lookups took 2 s tuned and 24 s at our
# defaults), while 10 s of lookups is 10 s whatever the parameters; numpy_gather likewise (16,384 gathers took
# 4.9 s tuned and 100 s on the kernel at 8 MiB read-ahead), in batches of 256 so that the batch running at the
# deadline adds at most about a second. The LMDB scans read the 3.3 GB database in about
# 1.6 s at our defaults: seven passes make a run of 11 s; the 1.1 GB one in 0.7 s tuned, so 18 passes there. A
# search of bfs's scale-24 graph from the disk took 4.5-6.9 s with a 1 GiB buffer (two made a run of 9.4-15 s, under
# 10 s tuned, so a run there is three) and 2.6-3.1 s in memory; of scale 22, 1.5 s tuned (eight a run): a run is the
# mean of several, each from the disk on a new mapping, so its figure stays a search's, as LLNL UMap's bfs gives it.
# A pass of stream over 1 GiB took 2.6 s tuned after 3 s of writing the arrays: four passes. A length is a
# workload's, or a size's (by scale).
RUN_LENGTHS = {REAL: {"lmdb_readrandom": "--seconds 10", "lookup": "--seconds 10",
                      "numpy_gather": "--seconds 10 --batch 256",
                      "lmdb_readseq": {SMALL: "--passes 18", LARGE: "--passes 7"},
                      "lmdb_readreverse": {SMALL: "--passes 18", LARGE: "--passes 7"},
                      "stream": {SMALL: "--iterations 4"},
                      "bfs": {SMALL: "--searches 8", LARGE: "--searches 3", MEMORY: "--searches 4"}},
               REAL_QUICK: {"lmdb_readrandom": "--lookups 500", "lookup": "--lookups 200"}}

# the shortest run, in wall seconds, whose figures the real evaluation takes as measured at its size (issue 17)
SHORTEST_RUN_SECONDS = 10.0

# rough seconds of one run of the defaults at the real sizes, for the time estimate printed before a run
RUN_SECONDS = {"sort": 60, "bfs": 60, "lmdb_readseq": 20, "lmdb_readrandom": 15, "lmdb_readreverse": 30,
               "lookup": 15, "stream": 40, "numpy_gather": 15}


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
    # confirm_repeats: the runs of a fixed-parameter study (defaults, UMap's defaults, transfer) and of the kernel
    REAL: Budget(ax_initialization=10, ax_trials=30, large_ax_trials=30, search_trials=30, grid_trials=None,
                 confirm_repeats=3),
    REAL_QUICK: Budget(ax_initialization=3, ax_trials=5, large_ax_trials=5, search_trials=4, grid_trials=4,
                       confirm_repeats=2),
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
    """The workload on the kernel's mmap under a memory limit equal to the pager's buffer, with the disk's
    read-ahead as it is (None) or set to ``read_ahead_kib`` for its runs."""
    workload: str
    scale: str
    repeats: int
    read_ahead_kib: int | None = None

    @property
    def method(self) -> str:
        return "mmap" if self.read_ahead_kib is None else f"mmap-ra{self.read_ahead_kib}"

    @property
    def label(self) -> str:
        return f"{self.scale}/{self.workload}/{self.method}"


@dataclass(frozen=True)
class LlnlSpec:
    """LLNL UMap's own program of the workload (sort, bfs) with the pager's buffer, at each of
    LLNL_PAGE_SIZES, and on our library with our defaults and with the best tuned winner, in ``rounds``
    interleaved rounds (experiments/evaluation/llnl.py)."""
    workload: str
    scale: str
    rounds: int

    @property
    def label(self) -> str:
        return f"{self.scale}/{self.workload}/llnl"


@dataclass(frozen=True)
class SideBySideSpec:
    """The best tuned winner, our defaults and the kernel's mmap (at the disk's read-ahead and at
    KERNEL_READ_AHEAD_KIB) one run each in ``rounds`` interleaved rounds (experiments/evaluation/side_by_side.py)."""
    workload: str
    scale: str
    rounds: int

    @property
    def label(self) -> str:
        return f"{self.scale}/{self.workload}/{SIDE_BY_SIDE}"


Step = StudySpec | KernelSpec | LlnlSpec | SideBySideSpec


@dataclass
class Plan:
    mode: str
    workloads: tuple[str, ...]
    sizes: dict[str, dict[str, Size]]
    budget: Budget
    run_lengths: dict[str, str | dict[str, str]]  # see RUN_LENGTHS
    steps: list[Step] = field(default_factory=list)
    log: str = "steps.csv"  # each step's outcome, in the output directory

    def size(self, workload: str, scale: str) -> Size:
        return self.sizes[workload][scale]

    def run_length(self, workload: str, scale: str) -> str | None:
        """What a run of the workload at that size does instead of its config's ``--lookups N`` (or adds)."""
        length = self.run_lengths.get(workload)
        return length.get(scale) if isinstance(length, dict) else length

    def scales(self, workload: str) -> tuple[str, ...]:
        return tuple(self.sizes[workload])


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


def make_plan(mode: str = REAL, workloads: tuple[str, ...] = WORKLOADS, budget: Budget | None = None) -> Plan:
    """The evaluation at real sizes (mode ``real``), or its steps at the quick sizes (``real-quick``)."""
    plan = Plan(mode, workloads, {w: SIZES[mode][w] for w in workloads}, budget or BUDGETS[mode], RUN_LENGTHS[mode])
    budget, repeats = plan.budget, plan.budget.confirm_repeats
    tuned = {w: [s for s in plan.scales(w) if s != SMALL] for w in workloads}
    for w in workloads:
        for scale in tuned[w]:
            search = searches(w, scale, budget)
            plan.steps += [StudySpec(w, scale, "default", "default", repeats=repeats),
                           StudySpec(w, scale, UMAP_DEFAULTS, "default", overrides=UMAP_DEFAULT_BASELINE,
                                     repeats=repeats),
                           KernelSpec(w, scale, repeats), KernelSpec(w, scale, repeats, KERNEL_READ_AHEAD_KIB),
                           search["pagesize"], search["ax"]]
    for w in workloads:
        small = searches(w, SMALL, budget)
        plan.steps += [StudySpec(w, SMALL, "default", "default", repeats=repeats), small["ax"],
                       fixed(w, LARGE, TRANSFER, (SMALL, "ax"), repeats)]
    for w in workloads:
        plan.steps += [searches(w, LARGE, budget)[m] for m in ("grid", "coordinate", "random")]
    plan.steps += [LlnlSpec(w, scale, repeats) for w in workloads if w in ("sort", "bfs") for scale in tuned[w]]
    plan.steps += [SideBySideSpec(w, scale, repeats) for w in workloads for scale in tuned[w]]
    for w in workloads:
        ax = searches(w, LARGE, budget)["ax"]
        plan.steps.append(StudySpec(w, LARGE, UNCAPPED, "ax", overrides=(*ax.overrides, "runner.cap=null")))
    for seed in AX_SEEDS:
        plan.steps += [StudySpec(w, LARGE, seeded_ax(seed), "ax",
                                 overrides=(*searches(w, LARGE, budget)["ax"].overrides, f"seed={seed}"))
                       for w in workloads]
    return plan


def expected_runs(step: Step, plan: Plan) -> int:
    """Roughly the runs a step makes, for the estimate printed before a run (capped runs count whole)."""
    if isinstance(step, KernelSpec):
        return step.repeats
    if isinstance(step, SideBySideSpec):
        return step.rounds * 4  # the tuned winner, our defaults, the kernel at two read-aheads
    if isinstance(step, LlnlSpec):
        return step.rounds * (len(LLNL_PAGE_SIZES) + 2)  # and our library with our defaults and the tuned winner
    if step.strategy == "default":
        return step.repeats
    budget = plan.budget
    trials = {"ax": budget.large_ax_trials if step.scale != SMALL else budget.ax_trials, "pagesize": 10,
              "grid": budget.grid_trials or 64}.get(step.strategy, budget.search_trials)
    confirmation = 3 * 4                    # confirm.rounds x (the defaults + confirm.candidates)
    return trials + 3 + confirmation          # noise.defaults_runs


def estimate_seconds(plan: Plan) -> float:
    """A rough machine time of the whole plan: each step's runs at RUN_SECONDS (real sizes; a quarter at the
    small size, a third in memory), or 2 s a run at the quick sizes."""
    share = {SMALL: 0.25, MEMORY: 1 / 3}
    if plan.mode != REAL:
        return 2.0 * sum(expected_runs(step, plan) for step in plan.steps)
    return sum(expected_runs(step, plan) * RUN_SECONDS[step.workload] * share.get(step.scale, 1.0)
               for step in plan.steps)
