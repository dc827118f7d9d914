"""The evaluation's plots: speedups per workload (Figure 2 of the paper, with the kernel's mmap beside it)
and best-so-far against tuning time for Ax (the median and range over its seeds where it ran at several), grid,
coordinate descent and random search."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from autopager.run.goal import speedup  # noqa: E402
from evaluation.plan import AX_BY_SEED, CONVERGENCE_METHODS, LARGE, SMALL, TRANSFER, Plan  # noqa: E402
from evaluation.studies import Places  # noqa: E402
from autopager.analysis.result import StudyResult, load_study  # noqa: E402

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


def over_seeds(curves: list[pd.DataFrame]) -> pd.DataFrame:
    """Best-so-far curves of one strategy at several seeds on their common time axis: at each elapsed second the
    median, least and greatest speedup of the seeds, from when every seed has a best (a finished study keeps its
    last)."""
    times = np.unique(np.concatenate([curve.elapsed.to_numpy() for curve in curves]))
    values = []
    for curve in curves:
        at = np.searchsorted(curve.elapsed.to_numpy(), times, side="right") - 1
        values.append(np.where(at >= 0, curve.speedup.to_numpy()[np.maximum(at, 0)], np.nan))
    values = np.array(values)
    every = ~np.isnan(values).any(axis=0)
    return pd.DataFrame({"elapsed": times[every], "median": np.median(values[:, every], axis=0),
                         "low": values[:, every].min(axis=0), "high": values[:, every].max(axis=0)})


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
        defaults = float(reference.value.iloc[0])
        seeds = [load_study(places.study(scale, workload, m)) for m in AX_BY_SEED.values()]
        seeds = [study for study in seeds if study is not None and study.unconfirmed() is None]
        if len(seeds) > 1:
            band = over_seeds([convergence(study, defaults) for study in seeds])
            ax.step(band.elapsed, band["median"], where="post", color=COLORS["ax"],
                    label=f"{LABELS['ax']} (median of {len(seeds)} seeds, range shaded)")
            ax.fill_between(band.elapsed, band.low, band.high, step="post", color=COLORS["ax"], alpha=0.2)
        for method in CONVERGENCE_METHODS:
            study = load_study(places.study(scale, workload, method))
            if study is None or (method == "ax" and len(seeds) > 1 and study.unconfirmed() is None):  # in the band
                continue
            curve = convergence(study, defaults)
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
