"""``autopager report STUDY_DIR [--out DIR]``: a study's analysis as Markdown and PNG plots.

Writes ``report.md`` with ``convergence.png`` (each trial and the best so far against tuning time, the point where
Ax's model took over from its Sobol initialization, and the spread of a trial's runs where it has several),
``importance.png`` (each parameter's importance: Ax's sensitivity analysis when the study saved Ax's state, else
the trials' main effects) and, when the study measured it (``baseline.mmap=true``), ``mmap.png`` (the defaults
and the best trial against the kernel's mmap with the same memory) and, for a study of time against memory
(``objective=metric_and_memory``), ``memory.png`` (each trial's figure against its memory, the Pareto front and the
point ``select`` chose) with the front as a table and the chosen point's confirmation against the fastest's. The default output directory is
``STUDY_DIR/report``. The notebook (notebooks/study_analysis.ipynb) draws the same figures with these functions.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

import pandas as pd

from autopager.analysis.markdown import table
from autopager.analysis.result import StudyResult, ax_importance, load_study, trial_importance
from autopager.analysis.summary import read_summary, summarize, trial_counts
from autopager.errors import ConfigError
from autopager.parameters import format_size, parse_size, show, show_params
from autopager.run.goal import Goal
from autopager.tuner.front_confirmation import against_fastest
from autopager.tuner.memory_front import METRIC_AND_MEMORY, Objective, front, front_lines, memory_bytes
from autopager.tuner.progress import format_value
from autopager.tuner.studylock import STOPPED
from autopager.tuner.study_directory import TABLE
from autopager.tuner.table import StudyTable
from autopager.tuner.trial import Kind, Status

CONVERGENCE, IMPORTANCE, MMAP_PLOT, REPORT = "convergence.png", "importance.png", "mmap.png", "report.md"
MEMORY_PLOT = "memory.png"


def pyplot():
    import matplotlib
    if matplotlib.get_backend().lower().startswith(("qt", "tk", "gtk", "wx", "macosx")):
        matplotlib.use("Agg")  # files, not windows; a notebook keeps its inline backend
    import matplotlib.pyplot as plt
    return plt


def error_bars(value: pd.Series, low: pd.Series, high: pd.Series) -> list[pd.Series]:
    """Below and above each value (the runs are kept to 6 digits, the value in full)."""
    return [(value - low).clip(lower=0), (high - value).clip(lower=0)]


def direction(study: StudyResult) -> str:
    return "lower" if study.goal == "minimize" else "higher"


def plot_convergence(study: StudyResult):
    """Each trial (with the range of its runs) and the best so far, against tuning time."""
    plt = pyplot()
    curve = study.best_so_far()
    fig, ax = plt.subplots(figsize=(8, 4))
    several = curve[curve.runs > 1]
    ax.scatter(curve.elapsed, curve.value, s=16, color="tab:gray", label="trial", zorder=3)
    if not several.empty:
        ax.errorbar(several.elapsed, several.value, yerr=error_bars(several.value, several.low, several.high),
                    fmt="none", ecolor="tab:gray", elinewidth=0.8, capsize=2, label="range of its runs")
    ax.step(curve.elapsed, curve.best, where="post", color="tab:green", label="best so far")
    defaults = study.default_values()
    if defaults:
        ax.axhline(study.default_value(), color="black", linewidth=0.7, label="defaults")
    kernel = study.kernel_mmap()
    if kernel is not None and kernel.ok:
        ax.axhline(kernel.value, color="tab:red", linewidth=0.8, linestyle="--", label="kernel mmap")
    boundary = study.model_start()
    if boundary is not None:
        ax.axvline(boundary[1], color="tab:blue", linewidth=0.8, linestyle=":",
                   label=f"Sobol | model (trial {boundary[0]})")
    ax.set_xlabel("tuning time (s, wall, the strategy's own time included)")
    ax.set_ylabel(f"{study.metric} ({direction(study)} is better)")
    if (curve.value.dropna() > 0).all():
        ax.set_yscale("log")
    ax.set_title(f"{study.workload['name']}: {study.strategy}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def importance(study: StudyResult) -> tuple[pd.DataFrame, str]:
    """The parameters' importance, and where it comes from."""
    frame, reason = ax_importance(study)
    if frame is not None:
        return frame, ("Ax's sensitivity analysis of its model (total-order Sobol indices; the sign is the "
                       f"direction in which {study.metric} moves as the parameter grows)")
    return trial_importance(study), (f"the trials alone ({reason}): the share of the variance of log({study.metric}) "
                                     f"explained by each parameter's value, the others varying")


def plot_importance(frame: pd.DataFrame, source: str):
    plt = pyplot()
    column = "sensitivity" if "sensitivity" in frame else "importance"
    fig, ax = plt.subplots(figsize=(6, 0.45 * max(len(frame), 2) + 1))
    ordered = frame.iloc[::-1]
    ax.barh(ordered.parameter, ordered[column], color=["tab:blue" if v >= 0 else "tab:orange" for v in ordered[column]])
    ax.axvline(0, color="black", linewidth=0.6)
    ax.set_xlabel(column)
    ax.set_title("Ax's sensitivity analysis" if column == "sensitivity" else "main effects from the trials",
                 fontsize=10)
    fig.tight_layout()
    return fig


def mmap_comparison(study: StudyResult) -> pd.DataFrame | None:
    """The defaults, the best trial and the kernel's mmap, each as a speedup over the kernel's mmap."""
    kernel, best = study.kernel_mmap(), study.best()
    if kernel is None or not kernel.ok or best is None:
        return None
    rows = [("kernel mmap", kernel.value, kernel.values), ("pager defaults", study.default_value(),
                                                           study.default_values()),
            (f"pager, best trial ({best.number})", best.value, best.values)]
    return pd.DataFrame([{"run": label, study.metric: value, "runs": len(values), "least": min(values),
                          "greatest": max(values), "speedup_vs_mmap": study.speedup(value, kernel.value)}
                         for label, value, values in rows])


def plot_mmap(study: StudyResult, comparison: pd.DataFrame):
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.2))
    values = comparison[study.metric]
    ax.bar(comparison.run, values, color=["tab:red", "tab:gray", "tab:green"],
           yerr=error_bars(values, comparison.least, comparison.greatest), capsize=3)
    ax.set_ylabel(f"{study.metric} ({direction(study)} is better)")
    limit = study.memory_limit()
    ax.set_title(f"the same memory ({format_size(limit)})" if limit else "the kernel's mmap", fontsize=10)
    fig.tight_layout()
    return fig


def time_against_memory(study: StudyResult, out: Path) -> list[str]:
    """The report's section on time against memory: the front as a table and ``memory.png``."""
    rows = StudyTable(study.directory / TABLE).rows
    goal = Goal.parse(study.goal)
    objective = Objective.from_config(study.config, ["buffer_size"])
    points = front(rows, goal)
    chosen = objective.selection.choose(points, goal)
    measured = [row for row in rows if row.kind in (Kind.DEFAULT, Kind.SEARCH) and row.status is Status.OK]
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.scatter([memory_bytes(row) / (1 << 20) for row in measured], [row.value for row in measured],
               color="tab:gray", s=14, label="trials")
    ax.plot([memory_bytes(row) / (1 << 20) for row in points], [row.value for row in points], "o-",
            color="tab:blue", label="Pareto front")
    if chosen is not None:
        ax.scatter([memory_bytes(chosen) / (1 << 20)], [chosen.value], s=90, facecolors="none",
                   edgecolors="tab:red", label=f"chosen: {objective.selection.describe()}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("memory (MiB)")
    ax.set_ylabel(f"{study.metric} ({direction(study)} is better)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / MEMORY_PLOT, dpi=110)
    plt.close(fig)
    table_lines = front_lines(points, chosen, study.metric)
    compared = against_fastest(rows, objective, goal, study.confirm_rounds)
    confirmed = ([] if not study.confirm_rounds else
                 [f"The chosen point against the fastest, both confirmed in the same interleaved rounds: "
                  f"{compared.line(study.metric)}.", ""] if compared is not None else
                 ["The confirmation did not run the chosen point and the fastest both in every round.", ""])
    return ["## Time against memory", "", f"The Pareto front: {len(points)} trials (* the one chosen, "
            f"{objective.selection.describe()}).", "", "```", *table_lines, "```", "", *confirmed,
            f"![time against memory]({MEMORY_PLOT})", ""]


def markdown_table(frame: pd.DataFrame) -> str:
    return table(frame.columns, [[f"{value:.4g}" if isinstance(value, float) else value for value in row]
                                 for row in frame.itertuples(index=False)])


def best_trials(study: StudyResult, count: int = 5) -> pd.DataFrame:
    """The best trials the search measured, by their recorded figure (confirmation runs are no trials)."""
    goal = Goal.parse(study.goal)
    ok = sorted(study.ok(), key=lambda trial: goal.loss(trial.value))[:count]
    return pd.DataFrame([{"trial": trial.number, study.metric: trial.value, "runs": len(trial.values),
                          **{name: show(name, trial.params[name]) if name in trial.params else "-"
                             for name in study.searched}} for trial in ok])


def summary(study: StudyResult) -> str:
    workload = study.workload
    buffer = workload.get("buffer_size")
    counted = read_summary(study.directory) or summarize(study, STOPPED)  # the tuner's summary.json has the budget
    return (f"workload {workload['name']} (size {workload.get('size')}, buffer "
            f"{format_size(parse_size(buffer)) if buffer else 'the default'}), strategy {study.strategy}; "
            f"trials: {trial_counts(counted)}; metric {study.metric} ({direction(study)} is better)")


def confirmation_lines(study: StudyResult) -> list[str]:
    """The tuner's confirmation as the summary and the profile give it (StudyResult.confirmed)."""
    confirmed = study.confirmed()
    if confirmed is None:
        reason = study.unconfirmed()
        return [f"The study is {reason}." if reason else "The study ran no confirmation (confirm.rounds=0).", ""]
    values = confirmed["values"]
    winner = "the saved profile's parameters" if confirmed["trial"] is None else f"trial {confirmed['trial']}"
    return [f"The confirmed winner: {winner}, {format_value(confirmed['value'], study.metric)} "
            f"(median of {len(values)} confirmation runs, {min(values):.4g}-{max(values):.4g}), "
            f"{confirmed['speedup']:.2f}x the defaults' confirmation runs (per round "
            f"{confirmed['low']:.2f}-{confirmed['high']:.2f}x): {show_params(confirmed['params'])}. This is the "
            f"study's result, the profile's; the trials below are ranked by their figures during the search, "
            f"which chose the candidates and flatter them.", ""]


def write_report(directory: Path, out: Path | None = None) -> Path:
    study = load_study(directory)
    if study is None:
        raise ConfigError(f"no study in {directory}: expected its trials.csv and config.yaml")
    out = out or study.directory / "report"
    out.mkdir(parents=True, exist_ok=True)
    plt = pyplot()
    lines = [f"# Study {study.directory}", "", summary(study) + ".", ""]
    best, defaults = study.best(), study.default_values()
    lines += ["## The best trials", ""]
    if best is None:
        lines += ["No trial succeeded.", ""]
    else:
        lines += confirmation_lines(study)
        if defaults:
            reference = study.default_value()
            of_runs = f"the median of their {len(defaults)} runs" if len(defaults) > 1 else "their one run"
            lines += [f"The defaults: {format_value(reference, study.metric)} ({of_runs} during the search); the best "
                      f"trial ({best.number}): "
                      f"{format_value(best.value, study.metric)}, {study.speedup(best.value, reference):.2f}x the "
                      f"defaults.", ""]
        lines += [markdown_table(best_trials(study)), ""]
    lines += ["## Convergence", "", f"![convergence]({CONVERGENCE})", ""]
    boundary = study.model_start()
    if boundary is not None:
        lines += [f"Ax's model proposed the trials from trial {boundary[0]} on ({boundary[1]:.1f} s into the study); "
                  f"those before were its Sobol initialization.", ""]
    if (study.best_so_far().runs > 1).any():
        lines += ["A trial measured several times is drawn at its median, its bar the range of its runs.", ""]
    fig = plot_convergence(study)
    fig.savefig(out / CONVERGENCE, dpi=110)
    plt.close(fig)
    lines += ["## Parameter importance", ""]
    if study.searched and best is not None:
        frame, source = importance(study)
        lines += [f"From {source}.", "", markdown_table(frame), "", f"![importance]({IMPORTANCE})", ""]
        fig = plot_importance(frame, source)
        fig.savefig(out / IMPORTANCE, dpi=110)
        plt.close(fig)
    else:
        lines += ["The trials varied no parameter.", ""]
    lines += ["## Against the kernel's mmap", ""]
    kernel, comparison = study.kernel_mmap(), mmap_comparison(study)
    if kernel is None:
        lines += ["Not measured: run the study with `baseline.mmap=true` to measure the workload on the kernel's "
                  "mmap with the pager's memory.", ""]
    elif comparison is None:
        lines += [f"The kernel-mmap run failed: {kernel.error}", ""]
    else:
        limit = study.memory_limit()
        memory = f"in a {format_size(limit)} memory cgroup (the pager's buffer and the program's own memory)" \
            if limit else "in a memory cgroup of the pager's memory"
        best_gain = comparison.speedup_vs_mmap.iloc[2]
        lines += [f"The workload on the kernel's mmap {memory}: {format_value(kernel.value, study.metric)}. "
                  f"The pager's best trial is {best_gain:.2f}x the kernel's mmap, its defaults "
                  f"{comparison.speedup_vs_mmap.iloc[1]:.2f}x.", "", markdown_table(comparison), "",
                  f"![kernel mmap]({MMAP_PLOT})", ""]
        fig = plot_mmap(study, comparison)
        fig.savefig(out / MMAP_PLOT, dpi=110)
        plt.close(fig)
    if study.config.get("objective") == METRIC_AND_MEMORY:
        lines += time_against_memory(study, out)
    (out / REPORT).write_text("\n".join(lines))
    return out / REPORT


def main(args: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="autopager report", description=__doc__.splitlines()[0])
    parser.add_argument("study", type=Path, help="a study's directory (outputs/<workload>/<study>)")
    parser.add_argument("--out", type=Path, help="where to write report.md and the plots (default: STUDY/report)")
    try:
        options = parser.parse_args(list(args))
    except SystemExit as exit_:
        if exit_.code:
            raise ConfigError("report: expected `autopager report STUDY_DIR [--out DIR]`") from None
        return 0
    path = write_report(options.study, options.out)
    print(f"report: {path}")
    return 0
