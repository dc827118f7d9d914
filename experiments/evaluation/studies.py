"""Runs one study of the evaluation through the tuner's own API (``compose`` and ``Study``).

A study is resumable: running the evaluation again continues each study where it stopped, and a finished
one only replays its table. A search study is done only once its confirmation is recorded (``unfinished``): a step
cut short is logged as ``interrupted``, one that ended with nothing confirmed as ``incomplete``, never ``ok``. The workload's data is generated here, once a process, before the study runs,
and the study is given no preparation step (the tuner would run it again at every study).
Every trial runs in a memory cgroup of the pager's memory (``runner.memory_limit=auto``: the buffer and its pages'
bookkeeping, the program's own arrays, a headroom and the page tables of the data; autopager/memory_limit.py), as the kernel's mmap does (evaluation/kernel.py).
Studies run on the tuner's own protocol (``RUNNER``: capping, noise runs and the confirmation at their configured
defaults).
"""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig, open_dict

from autopager.tuner.config import compose
from autopager.errors import StudyError
from autopager.tuner.study import Study
from autopager.run.workloads import Workload
from experiments.evaluation.plan import Plan, Size, StudySpec
from autopager.analysis.result import load_study
from experiments import CONFIG_SEARCH_PATH

RUNNER = ("runner.memory_limit=auto",)
OPTIMIZER_STEP = "import torch and Ax"  # the step that does, in the evaluation's log


@dataclass(frozen=True)
class Places:
    """Where the evaluation writes: results (with the study tables) and the workloads' data."""
    out: Path
    data_dir: Path

    def study(self, scale: str, workload: str, method: str) -> Path:
        return self.out / "studies" / scale / workload / method


def workload_overrides(workload: str, size: Size, places: Places) -> list[str]:
    """The workload at a size, with the experiments' own search spaces found (``experiments/configs/space/``)."""
    return [CONFIG_SEARCH_PATH, f"workload={workload}", f"workload.size={size.size}", f"workload.buffer_size={size.buffer}",
            f"data_dir={places.data_dir}"]


def compose_workload(workload: str, scale: str, overrides: list[str], plan: Plan) -> tuple[DictConfig, dict[str, str]]:
    """The tuner's configuration for ``overrides``, with the plan's run length at that size in the workload's
    commands: in place of their ``--lookups N`` or of their own count of the length's option (stream's
    ``--iterations 1``), or added to a command without either."""
    config, choices = compose(overrides)
    length = plan.run_length(workload, scale)
    if length:
        counts = rf"(--lookups|{re.escape(length.split()[0])}) \d+"
        commands = {key: config.workload[key] for key in ("command", "mmap_command")}  # resolved before either changes
        with open_dict(config):
            for key, command in commands.items():
                counted = re.search(counts, command)
                config.workload[key] = re.sub(counts, length, command) if counted else f"{command} {length}"
    return config, choices


def fixed_overrides(params: dict[str, int]) -> list[str]:
    """A baseline made of ``params`` (the buffer stays the workload's)."""
    return [f"baseline.{name}={value}" for name, value in params.items() if name != "buffer_size"]


def study_overrides(spec: StudySpec, plan: Plan, places: Places) -> list[str]:
    size = plan.size(spec.workload, spec.scale)
    overrides = workload_overrides(spec.workload, size, places) + [
        f"strategy={spec.strategy}", f"space={spec.space}", f"space.page_size.max={size.largest_page}",
        f"study.root={places.out / 'studies' / spec.scale}", f"study.name={spec.method}",
        "study.save_profile=false", f"runner.repeats={spec.repeats}", *RUNNER, *spec.overrides]
    if spec.fixed_from:
        source = load_study(places.study(spec.fixed_from[0], spec.workload, spec.fixed_from[1]))
        # a confirmed study's parameters are its confirmed winner (what the tuner saves), not its luckiest run
        confirmed = source.confirmed() if source else None
        params = confirmed["params"] if confirmed else source and source.best_params()
        if not params:
            raise StudyError(f"no best parameters yet in {'/'.join(spec.fixed_from)} to measure")
        overrides += fixed_overrides(params)
    return overrides


def prepare(workload: Workload, prepared: set[tuple[str, ...]]) -> None:
    """Generate the workload's data (once a process; the programs reuse data already there)."""
    argv = workload.prepare_argv()
    if argv and tuple(argv) not in prepared:
        workload.data_dir.mkdir(parents=True, exist_ok=True)
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        prepared.add(tuple(argv))


def run_study(spec: StudySpec, plan: Plan, places: Places, prepared: set[tuple[str, ...]]) -> None:
    """Run (or resume) the study; raises StudyError (or the tuner's ConfigError) when it cannot."""
    config, choices = compose_workload(spec.workload, spec.scale, study_overrides(spec, plan, places), plan)
    workload = Workload.from_config(config.workload, config.data_dir)
    try:
        prepare(workload, prepared)
    except subprocess.CalledProcessError as error:
        raise StudyError(f"generating the data of {spec.workload} failed: {error}") from None
    with open_dict(config):
        config.workload.prepare = None
    Study(config, space_name=choices.get("space", "default")).run()


def unfinished(spec: StudySpec, places: Places) -> str | None:
    """Why a study step is not done (``StudyResult.unconfirmed``: a search cut short before or during its
    confirmation, or one with nothing confirmed); None when it is. Running the step again resumes the study."""
    study = load_study(places.study(spec.scale, spec.workload, spec.method))
    return study.unconfirmed() if study is not None else "no trial recorded"


def load_optimizer() -> None:
    """Import torch and Ax once, before the studies, so that no study's time has the import in it (the
    evaluation logs the import's own time as a step); and one thread for torch (Ax's model fits): on a loaded
    two-core machine its default of one thread a core made each Bayesian step take 20 s instead of 2 s."""
    import torch
    import autopager.tuner.strategies.ax  # noqa: F401
    from ax import Client  # noqa: F401
    torch.set_num_threads(1)
