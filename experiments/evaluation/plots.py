"""The evaluation's plot: best-so-far against tuning time for Ax (the median and range over its seeds where it ran
at several), grid, coordinate descent and random search."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from autopager.run.goal import speedup
from experiments.evaluation.plan import AX_BY_SEED, CONVERGENCE_METHODS, LARGE, Plan
from experiments.evaluation.studies import Places
from autopager.analysis.result import StudyResult, load_study

LABELS = {"grid": "grid (restricted)", "ax": "Ax", "coordinate": "coordinate descent", "random": "random search"}
COLORS = {"grid": "tab:orange", "ax": "tab:green", "coordinate": "tab:purple", "random": "tab:gray"}


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


def plot_convergence(figures: pd.DataFrame, plan: Plan, places: Places, path: Path, scale: str = LARGE) -> None:
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
