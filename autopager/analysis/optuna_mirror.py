"""A study mirrored into an Optuna storage, for optuna-dashboard (``pip install 'autopager[dashboard]'``).

``autopager export-optuna STUDY --storage URL`` writes one Optuna trial a trial of the study (the rows of kinds
``default`` and ``search``: complete with their figure, failed as FAIL, capped as PRUNED: stopped early, worse
than the incumbent), each with the study's searched parameters (distributions from the study's space, widened to
every value a row has, so the defaults' point fits) and the row's trial number, kind, runs and node as user
attributes. The Optuna study is named ``<workload>/<study>`` and replaced on each export; the confirmed winner is
a study attribute. ``autopager dashboard STUDY`` mirrors it into ``STUDY/optuna.db`` and serves optuna-dashboard
on it, mirroring the new trials of a running study as they come.
"""
from __future__ import annotations

import argparse
import threading
import warnings
from pathlib import Path
from typing import Any, Sequence

from autopager.analysis.result import StudyResult, load_study
from autopager.analysis.summary import locate, study_root
from autopager.errors import ConfigError
from autopager.parameters import CATEGORIES
from autopager.tuner.space import Space
from autopager.tuner.trial import Status, Trial

DATABASE = "optuna.db"
EXTRA = "pip install 'autopager[dashboard]'"
REFRESH_SECONDS = 5.0


def optuna_module():
    try:
        import optuna
    except ImportError:
        raise ConfigError(f"the Optuna mirror needs optuna and optuna-dashboard: {EXTRA}") from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def distributions(study: StudyResult, optuna) -> dict[str, Any]:
    """One distribution a searched parameter: its sampled values (log-scaled when they grow by a factor) and every
    value the rows have."""
    space = Space(study.config.get("space") or {}, study.config.get("baseline") or {})
    result = {}
    for name in study.searched:
        seen = [trial.params[name] for trial in study.measured if name in trial.params]
        if name in CATEGORIES:
            result[name] = optuna.distributions.CategoricalDistribution(CATEGORIES[name])
            continue
        values = sorted(set(space.values(name)) | set(seen))
        steps = {b - a for a, b in zip(values, values[1:])}
        geometric = name in space.dimensions and len(steps) > 1 and values[0] > 0
        result[name] = optuna.distributions.IntDistribution(values[0], values[-1], log=geometric)
    return result


def frozen_trial(trial: Trial, spaces: dict[str, Any], optuna):
    state = {Status.OK: optuna.trial.TrialState.COMPLETE, Status.CAPPED: optuna.trial.TrialState.PRUNED}.get(
        trial.status, optuna.trial.TrialState.FAIL)
    params = {name: trial.params[name] for name in spaces if name in trial.params}
    attributes = {"autopager_trial": trial.number, "kind": trial.kind.value, "runs": list(trial.values),
                  "node": trial.node, "error": trial.error}
    return optuna.trial.create_trial(state=state, value=trial.value if state == optuna.trial.TrialState.COMPLETE
                                     else None, params=params, distributions={n: spaces[n] for n in params},
                                     user_attrs=attributes)


def study_name(study: StudyResult) -> str:
    return f"{study.workload['name']}/{study.directory.name}"


def export(directory: Path, storage: str, since: int | None = None) -> tuple[str, int]:
    """Mirror the study into ``storage`` (replacing the Optuna study of its name; ``since``: only append the rows
    after that trial number to it). Its name and the last trial number mirrored."""
    optuna = optuna_module()
    study = load_study(directory)
    if study is None:
        raise ConfigError(f"no study in {directory}: expected its trials.csv and config.yaml")
    name = study_name(study)
    trials = study.measured
    if since is None:
        try:
            optuna.delete_study(study_name=name, storage=storage)
        except KeyError:
            pass
        target = optuna.create_study(study_name=name, storage=storage,
                                     direction="minimize" if study.goal == "minimize" else "maximize")
        with warnings.catch_warnings():  # experimental since Optuna 3.2, and what the dashboard reads
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            target.set_metric_names([study.metric])  # the dashboard's axis: "seconds", not "Objective 0"
        target.set_user_attr("directory", str(study.directory.resolve()))
        target.set_user_attr("metric", study.metric)
    else:
        target = optuna.load_study(study_name=name, storage=storage)
        trials = [trial for trial in trials if trial.number > since]
    spaces = distributions(study, optuna)
    for trial in trials:
        target.add_trial(frozen_trial(trial, spaces, optuna))
    confirmed = study.confirmed()
    if confirmed is not None:
        target.set_user_attr("confirmed", {key: confirmed[key] for key in ("trial", "value", "speedup", "low", "high")})
    last = max((trial.number for trial in study.measured), default=-1)
    return name, last if since is None else max(since, last)


def parse(prog: str, args: Sequence[str], storage: bool) -> tuple[argparse.Namespace, Path]:
    root, rest = study_root(list(args))
    parser = argparse.ArgumentParser(prog=f"autopager {prog}")
    parser.add_argument("study", help="a study's directory, <workload>/<name>, or its name")
    if storage:
        parser.add_argument("--storage", required=True, help="an Optuna storage URL, e.g. sqlite:///studies.db")
    else:
        parser.add_argument("--host", default="127.0.0.1", help="the address to serve on (127.0.0.1)")
        parser.add_argument("--port", type=int, default=8080, help="the port to serve on (8080)")
    try:
        options = parser.parse_args(rest)
    except SystemExit as exit_:
        if exit_.code:
            usage = "--storage URL" if storage else "[--host HOST] [--port PORT]"
            raise ConfigError(f"{prog}: expected `autopager {prog} STUDY {usage} [study.root=DIR]`") from None
        raise
    return options, locate(options.study, root)


def export_command(args: Sequence[str]) -> int:
    try:
        options, directory = parse("export-optuna", args, storage=True)
    except SystemExit:
        return 0
    name, _ = export(directory, options.storage)
    print(f"mirrored {directory} into {options.storage} as Optuna study {name!r} "
          f"(optuna-dashboard {options.storage})")
    return 0


def dashboard_command(args: Sequence[str]) -> int:
    try:
        options, directory = parse("dashboard", args, storage=False)
    except SystemExit:
        return 0
    optuna_module()
    try:
        with warnings.catch_warnings():  # it imports botorch, whose torch warns of its own deprecations
            warnings.simplefilter("ignore", FutureWarning)
            from optuna_dashboard import run_server
    except ImportError:
        raise ConfigError(f"the dashboard needs optuna-dashboard: {EXTRA}") from None
    storage = f"sqlite:///{(directory / DATABASE).resolve()}"
    name, last = export(directory, storage)
    stop = threading.Event()

    def follow() -> None:  # a running study's new trials, as they are recorded
        nonlocal last
        while not stop.wait(REFRESH_SECONDS):
            try:
                _, last = export(directory, storage, since=last)
            except Exception as error:  # a table being rewritten is read again next time
                print(f"autopager dashboard: mirroring again later: {error}", flush=True)

    threading.Thread(target=follow, name="autopager-mirror", daemon=True).start()
    print(f"optuna-dashboard of {name} ({storage}) on http://{options.host}:{options.port}/ (Ctrl-C ends it)",
          flush=True)
    try:
        run_server(storage, host=options.host, port=options.port)
    finally:
        stop.set()
    return 0
