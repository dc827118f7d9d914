"""What a study ends with, beside its table: the lines of its summary that need more than the table (a
page-size-only study's best beside it, the read amplification, the confirmed winner), and its profile saved.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import yaml

from autopager.machine import this_machine
from autopager.parameters import format_size, show_params
from autopager.profiles import save_profile, write_profile
from autopager.run.goal import Goal
from autopager.run.workloads import Workload
from autopager.tuner.confirmation import Verdict, round_ratios
from autopager.tuner.progress import format_value
from autopager.tuner.space import Params
from autopager.tuner.study_directory import CONFIG, TABLE
from autopager.tuner.table import StudyTable
from autopager.tuner.trial import Kind, Trial
from autopager.tuner.trials import MEASURED, Trials

READ_AMPLIFICATION = 4.0  # a trial reading this many times its data through the pager gets the summary's warning
RecordOf = Callable[[Params, float, float, float], dict]  # (params, value, the defaults' value, gain): a profile


def pagesize_best(directory: Path, workload: Mapping[str, Any], goal: Goal) -> tuple[float, Path] | None:
    """The best result of a page-size-only study beside ``directory`` of the same ``workload`` (its configuration)
    and data, if one was run."""
    found = []
    for config_path in directory.parent.glob(f"*/{CONFIG}"):
        if config_path.parent == directory or not (config_path.parent / TABLE).is_file():
            continue
        other = yaml.safe_load(config_path.read_text()) or {}
        if (other.get("strategy", {}).get("name") != "pagesize"
                or other.get("workload") != workload):
            continue
        values = [trial.value for trial in StudyTable(config_path.parent / TABLE).rows
                  if trial.ok and trial.kind in MEASURED]
        if values:
            found.append((goal.best(values, key=float), config_path.parent))
    if not found:
        return None
    return goal.best(found, key=lambda item: item[0])


def read_amplification(workload: Workload, trials: Trials, best: Trial) -> list[tuple[str, str]]:
    """A line when the trials read many times the workload's data (its data_files) through the pager, from the
    pager statistics the table records: pages too large, or a buffer too small, for the access pattern."""
    data = sum(path.stat().st_size for path in workload.data_paths() if path.is_file())
    read = [(trial, trial.stats["bytes_read"] / data) for trial in trials.ok_rows() if trial.kind in MEASURED
            and data and trial.stats.get("bytes_read")]
    many = [(trial, ratio) for trial, ratio in read if ratio >= READ_AMPLIFICATION]
    if not many:
        return []
    best_ratio = next((ratio for trial, ratio in read if trial.number == best.number), None)
    of_best = (f"; the best trial {best.number} read {best_ratio:.1f}x" if best_ratio is not None else "")
    shown = format_size(data)
    if shown.isdigit():  # not a whole number of KiB: rounded (285200816 bytes: 272MiB)
        shown = (f"{data / (1 << 20):.0f}MiB" if data >= 1 << 20 else f"{data / 1024:.0f}KiB" if data >= 1024
                 else f"{data} bytes")
    return [("read amplification", f"{len(many)} of {len(read)} trials read {READ_AMPLIFICATION:g}x or more of "
                                   f"the {shown} of data (up to {max(r for _, r in many):.1f}x"
                                   f"{of_best}): pages too large or buffer too small for random access")]


def trial_counts(searched: str, defaults: int, confirmation: int, failed: int, capped: int) -> str:
    """How many trials of each kind, as the tuner's summary, the status and the report say it (``searched``: the
    count, or the count over the budget)."""
    return (f"{searched} searched; {defaults} run{'s' * (defaults != 1)} of the defaults, {confirmation} confirmation "
            f"run{'s' * (confirmation != 1)}; {failed} failed, {capped} capped")


def noise_line(noise: float, runs: int, measured: bool) -> str:
    """The search's noise a run: the spread of the defaults' ``runs`` where they ``measured`` it, else assumed."""
    if measured:
        return f"+-{100 * noise:.1f}% a run (the spread of the defaults' {runs} runs)"
    return (f"+-{100 * noise:.1f}% a run, assumed (noise.assumed): "
            f"{'the defaults ran once' if runs == 1 else 'no run of the defaults measured it'}")


def confirmed_lines(verdict: Verdict, metric: str, trials: list[Trial]) -> list[tuple[str, str]]:
    if verdict.winner is None:
        return [("confirmed", "no candidate completed its confirmation runs")]
    winner = verdict.winner
    low, high = min(winner.values), max(winner.values)
    runs = f"median of {len(winner.values)} runs ({low:.4g}-{high:.4g})" if len(winner.values) > 1 else "1 run"
    lines = [("confirmed best", f"{format_value(winner.median, metric)} {runs}, {winner.label}: "
                                f"{show_params(winner.params)}")]
    if verdict.speedup is not None and verdict.speedup_spread is not None:
        low, high = verdict.speedup_spread
        lines.append(("confirmed speedup", f"{verdict.speedup:.2f}x (per round {low:.2f}-{high:.2f}x; "
                                           f"noise +-{100 * verdict.noise:.1f}%)"))
    nodes = sorted({trial.node for trial in trials if trial.kind is Kind.CONFIRM and trial.node})
    if len(nodes) > 1:  # several workers: the rounds' runs went to whichever node was free
        lines.append(("confirmed on nodes", f"{', '.join(nodes)} (each run's node is in the table)"))
    return lines


def save(record_of: RecordOf, directory: Path, goal: Goal, best: Trial, default: Trial,
         gain: float, verdict: Verdict | None, summary: dict[str, Any]) -> str:
    """Save the profile: the confirmed winner (if it replaces the saved profile), else without confirmation the
    best measured trial (if better than the saved one), into ``directory`` (profile_dir). What the summary says of
    it."""
    if verdict is None:
        path, written = save_profile(record_of(dict(best.params), best.value, default.value, gain), directory)
        summary["profile"] = path
        return f"{'saved' if written else 'kept (it is better)'}: {path}"
    if not verdict.replace_profile:
        if verdict.winner is not None and verdict.winner is verdict.defaults:
            return "not saved: the chosen point is the defaults' own"
        if verdict.winner is None or verdict.speedup is None or verdict.speedup <= 1:
            return "not saved: no candidate beat the defaults in the confirmation"
        if verdict.profile is verdict.winner:
            return "kept: the saved profile's parameters are the confirmed best"
        return "kept: the saved profile is within the noise of the confirmed best"
    winner = verdict.winner
    record = record_of(winner.params, winner.median, verdict.defaults.median, verdict.speedup)
    record.update(runs=len(winner.values), spread=[min(winner.values), max(winner.values)],
                  speedup_spread=[round(x, 3) for x in verdict.speedup_spread], noise=round(verdict.noise, 4),
                  confirmed=True)
    path = write_profile(record, directory)
    summary["profile"] = path
    low, high = verdict.speedup_spread
    if low <= 1:
        ratios = round_ratios(goal, winner.values, verdict.defaults.values)
        slower = sum(ratio <= 1 for ratio in ratios)
        return (f"saved, confirmed on the median only ({slower} of {len(ratios)} rounds no better "
                f"than the defaults: {low:.2f}-{high:.2f}x): {path}")
    return f"saved (confirmed): {path}"


def profile_record(workload: Workload, strategy: str, trials: Trials, directory: Path, dimensions: Iterable[str],
                   params: Params, value: float, default_value: float, gain: float) -> dict[str, Any]:
    """The profile of ``params``, found by the study in ``directory`` (``dimensions``: its searched parameters)."""
    return {
        "workload": workload.name,
        "params": params,
        "metric": workload.metric,
        "goal": workload.goal.value,
        "value": value,
        "default_value": default_value,
        "speedup_over_default": round(gain, 3) if math.isfinite(gain) else None,
        "found_on": {"workload": workload.knobs, "machine": this_machine()},
        "strategy": strategy,
        "trials": len(trials.rows),
        "study": str(directory.resolve()),
        "searched": [name for name in dimensions  # the parameters its trials varied
                     if len({trial.params.get(name) for trial in trials.rows if trial.kind is not Kind.REUSED}) > 1],
    }
