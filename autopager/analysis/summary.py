"""A view of studies: ``summary.json`` beside each study's table, ``autopager studies`` and ``autopager status``.

The tuner writes ``<study>/summary.json`` (through the writer its caller hands it: ``Study(write_summary=...)``) after every trial and when the study ends (atomically, as the table):
the study's workload, strategy, trials done of its budget, its state, the defaults' figure, the best trial and
the confirmed winner, why the search stopped early (a plateau, budget.minutes), the studies or profiles it was
warm-started from, and for time against memory the Pareto front and the chosen point, each taken from the table as the report reads it (autopager.analysis.result), so the three
agree. A study's state is ``running`` while a tuner holds its lock, ``finished`` once its tuner ended it, else
``stopped`` (cut short: running the same command again resumes it). A study without ``summary.json`` (made
before there was one) is summarized from its table the same way.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import statistics
import time
from pathlib import Path
from typing import Any, Sequence

from autopager.analysis.result import load_study
from autopager.errors import ConfigError
from autopager.parameters import format_size, parse_size
from autopager.run.goal import Goal
from autopager.run.settings import NoiseSettings
from autopager.tuner import outcome
from autopager.tuner.front_confirmation import against_fastest
from autopager.tuner.measuring import relative_noise
from autopager.tuner.memory_front import front, memory_bytes
from autopager.tuner.progress import format_value
from autopager.tuner.studylock import RUNNING, STOPPED, is_locked
from autopager.tuner.table import write_atomically
from autopager.tuner.trial import Kind
from autopager.tuner.warm_start import ORIGIN as WARM

SUMMARY = "summary.json"


def number(value: Any) -> float | None:
    return None if value is None or (isinstance(value, float) and not math.isfinite(value)) else float(value)


def memory_section(study) -> dict[str, Any] | None:
    """For a study of time against memory: the Pareto front (least memory first), the point ``select`` chose, and
    the chosen point's confirmation against the fastest's (autopager.tuner.front_confirmation; null if not run)."""
    objective = study.objective
    if not objective.weighs_memory:
        return None
    goal = Goal.parse(study.goal)
    chosen = objective.chosen(study.recorded, goal, None)
    compared = against_fastest(study.recorded, objective, goal, study.confirm_rounds)
    return {"front": [{"trial": point.number, "value": point.value, "memory_bytes": memory_bytes(point)}
                      for point in front(study.recorded, goal)],
            "chosen": None if chosen is None else chosen.number,
            "against_fastest": None if compared is None else compared.as_json()}


def search_noise(study, defaults: list[float]) -> dict[str, Any]:
    """The run-to-run noise the search went by, as the tuner's summary prints it: the spread (standard deviation over
    mean) of the defaults' runs, else noise.assumed."""
    measured = relative_noise(defaults)
    if measured is not None:
        return {"relative": measured, "assumed": False}
    assumed = (study.config.get("noise") or {}).get("assumed", NoiseSettings.assumed)
    return {"relative": float(assumed), "assumed": True}


def summarize(study, state: str, budget: int | None = None, stopped: str | None = None) -> dict[str, Any]:
    """What summary.json holds for a study read back (autopager.analysis.result.StudyResult); ``stopped``: why its
    search ended early (the tuner's line; not in the table)."""
    config = study.config
    searched = len(study.of_kind(Kind.SEARCH, Kind.REUSED))
    if budget is None:
        budget = (config.get("budget") or {}).get("trials") or (config.get("strategy") or {}).get("trials")
    defaults = study.default_values()
    reference = statistics.median(defaults) if defaults else None
    best, confirmed = study.best(), study.confirmed()
    workload = study.workload
    return {
        "study": study.directory.name, "directory": str(study.directory), "state": state,
        "updated": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "workload": workload["name"], "size": workload.get("size"),
        "buffer_size": parse_size(workload["buffer_size"]) if workload.get("buffer_size") else None,
        "strategy": study.strategy, "metric": study.metric, "goal": study.goal,
        "trials": {"done": searched, "budget": budget, "defaults_runs": len(study.of_kind(Kind.DEFAULT)),
                   "confirmation_runs": len(study.of_kind(Kind.CONFIRM)), "failed": study.failed(),
                   "capped": study.capped()},
        "defaults": {"value": reference, "runs": len(defaults)},
        "noise": search_noise(study, defaults),
        "best": None if best is None else {
            "trial": best.number, "value": best.value, "params": dict(best.params),
            "speedup": number(study.speedup(best.value, reference)) if reference else None},
        "confirmed": None if confirmed is None else {
            "trial": confirmed["trial"], "value": confirmed["value"], "runs": len(confirmed["values"]),
            "speedup": confirmed["speedup"], "per_round": [confirmed["low"], confirmed["high"]],
            "params": confirmed["params"]},
        "unconfirmed": study.unconfirmed() if state != RUNNING else None,
        "stopped": stopped,
        "warm_start": sorted({trial.proposed_by[len(WARM):] for trial in study.recorded
                              if (trial.proposed_by or "").startswith(WARM)}) or None,
        "memory": memory_section(study),
    }


def write_summary(directory: Path, state: str, budget: int | None = None, stopped: str | None = None) -> None:
    study = load_study(directory)
    if study is not None:
        write_atomically(directory / SUMMARY, json.dumps(summarize(study, state, budget, stopped), indent=1) + "\n")


def read_summary(directory: Path) -> dict[str, Any] | None:
    """A study's summary with its state as of now; None if the directory holds no study."""
    path = directory / SUMMARY
    summary = None
    if path.is_file():
        try:
            summary = json.loads(path.read_text())
        except (OSError, ValueError):
            summary = None
    if summary is None:
        study = load_study(directory)
        if study is None:
            return None
        summary = summarize(study, STOPPED)
    if is_locked(directory):
        summary["state"] = RUNNING
    elif summary.get("state") == RUNNING:
        summary["state"] = STOPPED  # its tuner ended without finishing it
    return summary


def find_studies(root: Path) -> list[Path]:
    """The study directories under ``root`` (``<root>/<workload>/<name>``, each with its config.yaml)."""
    return sorted(path.parent for path in root.glob("*/*/config.yaml") if (path.parent / "trials.csv").is_file())


def ratio(summary: dict[str, Any]) -> str:
    confirmed, best = summary.get("confirmed"), summary.get("best")
    metric = summary.get("metric", "")
    if confirmed:
        low, high = confirmed["per_round"]
        winner = "the saved profile" if confirmed["trial"] is None else f"trial {confirmed['trial']}"
        return (f"confirmed {confirmed['speedup']:.2f}x ({low:.2f}-{high:.2f}x a round), {winner}: "
                f"{format_value(confirmed['value'], metric)}")
    if best:
        gain = f" {best['speedup']:.2f}x the defaults," if best.get("speedup") else ""
        return f"best{gain} trial {best['trial']}: {format_value(best['value'], metric)} (not confirmed)"
    return "no trial succeeded yet"


def counts(summary: dict[str, Any]) -> str:
    trials = summary["trials"]
    return f"{trials['done']}/{trials['budget']}" if trials.get("budget") else str(trials["done"])


def trial_counts(summary: dict[str, Any]) -> str:
    """How many trials of each kind, in the tuner's words (autopager.tuner.outcome.trial_counts)."""
    trials = summary["trials"]
    return outcome.trial_counts(counts(summary), trials["defaults_runs"], trials["confirmation_runs"],
                                trials["failed"], trials["capped"])


def one_line(summary: dict[str, Any]) -> str:
    buffer = summary.get("buffer_size")
    workload = summary["workload"] + (f" (buffer {format_size(int(buffer))})" if buffer else "")
    return (f"{summary['workload'] + '/' + summary['study']:40} {workload:28} {counts(summary) + ' trials':14} "
            f"{summary['state']:9} {ratio(summary)}")


def study_root(args: list[str]) -> tuple[Path, list[str]]:
    """study.root=DIR among the arguments (default: outputs, as the tuner's), and the other arguments."""
    root, rest = Path("outputs"), []
    for arg in args:
        if arg.startswith("study.root="):
            root = Path(arg.split("=", 1)[1]).expanduser()
        else:
            rest.append(arg)
    return root, rest


def locate(name: str, root: Path) -> Path:
    """A study given as its directory, as <workload>/<name> under the root, or by its name alone."""
    for candidate in (Path(name).expanduser(), root / name):
        if (candidate / "trials.csv").is_file():
            return candidate
    matches = [path for path in find_studies(root) if path.name == name]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise ConfigError(f"{len(matches)} studies are named {name!r} under {root}: give one as <workload>/{name}: "
                          + ", ".join(f"{path.parent.name}/{path.name}" for path in matches))
    raise ConfigError(f"no study {name!r}: give its directory, or <workload>/<name> under study.root={root} "
                      f"(see `autopager studies`)")


def studies_command(args: Sequence[str]) -> int:
    root, rest = study_root(list(args))
    if rest:
        raise ConfigError("studies: expected `autopager studies [study.root=DIR]`")
    found = [(path, read_summary(path)) for path in find_studies(root)]
    found = [(path, summary) for path, summary in found if summary is not None]
    if not found:
        print(f"no studies under {root} (a study is made by `autopager tune workload=NAME`)")
        return 0
    print(f"{'study':40} {'workload':28} {'trials':14} {'state':9} best or confirmed")
    for _, summary in found:
        print(one_line(summary))
    return 0


def status_text(summary: dict[str, Any]) -> str:
    metric = summary.get("metric", "")
    defaults = summary["defaults"]
    runs = "1 run" if defaults["runs"] == 1 else f"median of {defaults['runs']} runs"
    lines = [f"study:       {summary['directory']} ({summary['state']})",
             f"workload:    {summary['workload']} (size {summary.get('size')}, buffer "
             f"{format_size(int(summary['buffer_size'])) if summary.get('buffer_size') else 'the default'}), "
             f"strategy {summary['strategy']}",
             f"trials:      {trial_counts(summary)}",
             f"defaults:    {format_value(defaults['value'], metric)} ({runs})"
             if defaults.get("value") is not None else "defaults:    not measured yet",
             f"noise:       +-{100 * summary['noise']['relative']:.1f}% a run"
             f"{', assumed (noise.assumed)' if summary['noise']['assumed'] else ''}"
             if summary.get("noise") else "noise:       not measured yet",
             f"outcome:     {ratio(summary)}"]
    if summary.get("unconfirmed"):
        lines.append(f"             {summary['unconfirmed']}")
    return "\n".join(lines)


def status_command(args: Sequence[str]) -> int:
    root, rest = study_root(list(args))
    parser = argparse.ArgumentParser(prog="autopager status", description="one study's state and outcome")
    parser.add_argument("study", help="a study's directory, <workload>/<name>, or its name")
    parser.add_argument("--json", action="store_true", help="print its summary.json (with its state as of now)")
    parser.add_argument("--watch", nargs="?", type=float, const=2.0, metavar="SECONDS",
                        help="print it again every SECONDS (2) until the study is no longer running")
    try:
        options = parser.parse_args(rest)
    except SystemExit as exit_:
        if exit_.code:
            raise ConfigError("status: expected `autopager status STUDY [--json] [--watch [SECONDS]] "
                              "[study.root=DIR]`") from None
        return 0
    if options.watch is not None and not options.watch > 0:
        raise ConfigError(f"status: --watch takes seconds > 0, not {options.watch}")
    directory = locate(options.study, root)
    while True:
        summary = read_summary(directory)
        if summary is None:
            raise ConfigError(f"no study in {directory}: expected its trials.csv and config.yaml")
        print(json.dumps(summary, indent=1) if options.json else status_text(summary), flush=True)
        if options.watch is None or summary["state"] != RUNNING:
            return 0
        time.sleep(options.watch)
        print(flush=True)
