"""The evaluation's plots: speedups per workload (Figure 2 of the paper, with the kernel's mmap beside it)
and best-so-far against tuning time for Ax, grid, coordinate descent and random search."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from autopager.progress import speedup  # noqa: E402
from evaluation.plan import CONVERGENCE_METHODS, LARGE, SMALL, TRANSFER, Plan  # noqa: E402
from evaluation.studies import Places  # noqa: E402
from autopager.analysis import StudyResult, load_study  # noqa: E402

BARS = {SMALL: ("pagesize", "grid", "ax", "mmap"), LARGE: ("pagesize", "ax", TRANSFER, "mmap")}
LABELS = {"pagesize": "page size only", "grid": "grid (restricted)", "ax": "Ax", "mmap": "kernel mmap",
          TRANSFER: "small's Ax parameters", "coordinate": "coordinate descent", "random": "random search"}
COLORS = {"pagesize": "tab:blue", "grid": "tab:orange", "ax": "tab:green", "mmap": "tab:red", TRANSFER: "tab:olive",
          "coordinate": "tab:purple", "random": "tab:gray"}


def plot_speedups(figures: pd.DataFrame, path: Path) -> None:
    """Grouped bars: each method's speedup over the defaults, a panel a scale, log scale."""
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.5), sharey=True)
    for ax, scale in zip(axes, (SMALL, LARGE)):
        table = figures[figures.scale == scale].pivot(index="workload", columns="method", values="speedup_vs_default")
        order = [w for w in pd.unique(figures.workload) if w in table.index]  # the plan's order
        table = table.reindex(index=order, columns=[m for m in BARS[scale] if m in table.columns])
        if table.empty:
            ax.set_title(f"{scale}: not run")
            continue
        table.rename(columns=LABELS).plot.bar(ax=ax, rot=30, width=0.8, color=[COLORS[m] for m in table.columns])
        ax.axhline(1, color="black", linewidth=0.8)
        ax.set_yscale("log")
        ax.set_title(f"{scale} data: speedup over the default parameters")
        ax.set_xlabel("")
        ax.legend(fontsize=8)
    axes[0].set_ylabel("speedup (log scale; above 1: better)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def convergence(study: StudyResult, defaults: float) -> pd.DataFrame:
    """Best-so-far as a speedup over ``defaults``, against the study's elapsed seconds."""
    curve = study.best_so_far().dropna(subset=["best"])
    curve["speedup"] = [speedup(value, defaults, study.goal) for value in curve.best]
    return curve


def plot_convergence(figures: pd.DataFrame, plan: Plan, places: Places, path: Path, scale: str = SMALL) -> None:
    """A panel a workload (at ``scale``): the best speedup found so far against the tuning time."""
    columns = 3
    rows = -(-len(plan.workloads) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(5 * columns, 3.6 * rows), squeeze=False)
    for ax, workload in zip(axes.flat, plan.workloads):
        reference = figures[(figures.workload == workload) & (figures.scale == scale) & (figures.method == "default")]
        ax.set_title(workload)
        if reference.empty or pd.isna(reference.value.iloc[0]):
            continue
        for method in CONVERGENCE_METHODS:
            study = load_study(places.study(scale, workload, method))
            if study is None:
                continue
            curve = convergence(study, float(reference.value.iloc[0]))
            cut_short = study.unconfirmed() is not None  # dotted, and said: no final figure
            ax.step(curve.elapsed, curve.speedup, where="post", color=COLORS[method], linestyle=":" if cut_short else "-",
                    label=LABELS[method] + (" (not confirmed)" if cut_short else ""))
        ax.axhline(1, color="black", linewidth=0.6)
        ax.set_xscale("symlog", linthresh=10)
        ax.set_xlim(left=0)
        ax.set_xlabel("tuning time (s, wall, the optimizer's own time included)")
        ax.set_ylabel("best speedup so far")
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(plan.workloads):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
