"""`autopager run`: a workload with its profile, next to the defaults (``run.rounds=N``: interleaved rounds)."""
from __future__ import annotations

import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from omegaconf import DictConfig

from autopager.checks import one_of, whole
from autopager.cli.help import HYDRA_HELP, RUN_WHAT
from autopager.cli.hydra_app import run_application
from autopager.errors import ConfigError, StudyError
from autopager.parameters import show, show_params
from autopager.profiles import Profile, ProfileNotFound, find_profile
from autopager.run.rounds import in_turn
from autopager.run.runner import Runner
from autopager.run.workloads import Workload
from autopager.tuner.progress import format_value
from autopager.tuner.space import Params, Space


OTHER_DATA = ("warn", "refuse")


@dataclass
class RunPlan:
    workload: Workload
    runner: Runner
    defaults: Params
    profile: Profile | None
    params: Params             # what runs: the defaults with the profile's tuned parameters
    mismatch: str              # how the profile's workload or data differ from this run's, if they do
    rounds: int
    timeout: float


def profile_mismatch(profile: Profile, workload: Workload, buffer_size: int | None) -> str:
    if profile.workload != workload.name:
        return f"profile {profile.name} was found for workload {profile.workload}, not {workload.name}"
    found = profile.found_for
    sizes = {knob: value for knob, value in workload.knobs.items() if knob != "buffer"}  # the buffer: below
    if any(found.get(knob) != value for knob, value in sizes.items()):
        shown = ", ".join(f"{knob}={found.get(knob)}" for knob in sizes)
        here = ", ".join(f"{knob}={value}" for knob, value in sizes.items())
        return f"profile {profile.name} was found with {shown}; this run has {here}"
    found_buffer = profile.params.get("buffer_size")
    if "buffer_size" not in profile.searched and None not in (found_buffer, buffer_size) and found_buffer != buffer_size:
        return (f"profile {profile.name} was found with a {show('buffer_size', found_buffer)} buffer; this run has "
                f"{show('buffer_size', buffer_size)}")
    return ""


def plan_run(config: DictConfig, choices: Mapping[str, str] | None = None) -> RunPlan:
    workload = Workload.from_config(config.workload, config.data_dir)
    runner = Runner.from_config(workload, config.runner)
    workload.check()
    rounds, other_data = config.run.rounds, config.run.other_data
    whole("run.rounds", rounds, 0)  # 0: one run with the profile
    one_of("run.other_data", other_data, OTHER_DATA)
    defaults = Space({}, config.baseline).defaults
    try:
        profile = find_profile(str(config.profile or workload.name), Path(config.profile_dir).expanduser(),
                               workload.knobs)
    except ProfileNotFound:
        if config.profile:
            raise
        profile = None
    mismatch = profile_mismatch(profile, workload, defaults.get("buffer_size")) if profile else ""
    if mismatch and other_data == "refuse":
        raise ConfigError(f"{mismatch} (run.other_data=refuse; run.other_data=warn applies it anyway)")
    params = {**defaults, **profile.tuned_params} if profile else defaults
    timeout = runner.settings.run_timeout(workload.timeout, None)
    return RunPlan(workload, runner, defaults, profile, params, mismatch, rounds, timeout)


def spread(values: Sequence[float], metric: str) -> str:
    if len(values) == 1:
        return format_value(values[0], metric)
    return (f"median {format_value(statistics.median(values), metric)} "
            f"({min(values):.4g}-{max(values):.4g} over {len(values)} runs)")


def run_job(config: DictConfig, choices: Mapping[str, str]) -> int:
    plan = plan_run(config)
    workload, profile = plan.workload, plan.profile
    if plan.mismatch:
        print(f"autopager: warning: {plan.mismatch}: its parameters may not suit this run "
              f"(run.other_data=refuse refuses such a profile)", file=sys.stderr)
    label = f"profile {profile.name}" if profile else "the defaults (no profile yet)"
    print(f"running {workload.name} with {label}: {show_params(plan.params)}", flush=True)
    plan.runner.prepare_or_fail()

    checksum: str | None = None  # the first run's, which validated its answer in full: the later runs must print it

    def measure(params: Params) -> float:
        nonlocal checksum
        result = plan.runner.measure(params, plan.timeout, checksum=checksum)
        if not result.ok:
            raise StudyError(f"the run failed: {result.error}\n{result.stderr_tail}".rstrip())
        checksum = result.checksum
        return result.value

    metric = workload.metric
    if plan.rounds:
        arms = {"the defaults": plan.defaults, **({label: plan.params} if profile else {})}
        values: dict[str, list[float]] = {name: [] for name in arms}
        for round_ in range(plan.rounds):
            for name in in_turn(list(arms), round_):
                values[name].append(measure(arms[name]))
                print(f"round {round_ + 1}/{plan.rounds}: {name}: {format_value(values[name][-1], metric)}", flush=True)
        for name in arms:
            print(f"{name}: {spread(values[name], metric)}")
        if profile:
            gain = workload.goal.speedup(statistics.median(values[label]), statistics.median(values["the defaults"]))
            print(f"speedup over the defaults: {gain:.2f}x (medians of {plan.rounds} interleaved rounds)")
        return 0
    value = measure(plan.params)
    line = f"{metric}: {format_value(value, metric)}"
    stored = profile.data.get("default_value") if profile and not plan.mismatch else None
    if stored:
        line += (f"\n  the defaults: {format_value(stored, metric)}, the figure stored in the profile when it was "
                 f"tuned ({profile.date}), not measured now ({workload.goal.speedup(value, stored):.2f}x); "
                 f"run.rounds=N measures both, interleaved")
    print(line)
    return 0


def run(argv: Sequence[str]) -> int:
    return run_application("run", argv, run_job, plan_run, HYDRA_HELP.format(command="run", what=RUN_WHAT))
