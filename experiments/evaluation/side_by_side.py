"""The tuned pager, our defaults and the kernel's mmap measured in the same interleaved rounds.

The other references have steps of their own, hours or days from the searches; this machine's virtual disk slows
down after hours of I/O, and stream on the kernel's mmap at 8 MiB read-ahead gave 2.47 GB/s one day and 1.28 GB/s
another, so a ratio between steps can be off by twice. Here the best tuned winner (the search whose confirmed
winner has the best median, ``figures.best_tuned``), our defaults and the kernel's mmap at the disk's
read-ahead and at KERNEL_READ_AHEAD_KIB run one run each a round, the order turned by one each round, each with
the page cache dropped and in the memory cgroup its kind has in its own step. A round gives a ratio of the tuned
pager over each of the others; a figure is the ratio of the medians with the range of the per-round ratios.
Each contender's first run validates its answer in full and is the reference checksum of its later runs, as in
a study. Kept as ``<out>/side-by-side/<scale>/<workload>.json``.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from autopager.analysis.result import load_study
from autopager.run.rounds import in_turn
from autopager.errors import StudyError
from autopager.run.kernel_mmap import mmap_runner
from autopager.run.disk import read_ahead_of_disk
from autopager.parameters import typed
from autopager.run.runner import Runner
from autopager.run.workloads import Workload
from experiments.evaluation.kernel import disk_read_ahead_kib
from experiments.evaluation.plan import SIDE_BY_SIDE, Plan, SideBySideSpec
from experiments.evaluation.figures import COLUMNS, KERNELS, best_tuned, method_rows
from experiments.evaluation.rounds import TUNED
from experiments.evaluation.studies import Places, compose_workload, prepare, RUNNER, workload_overrides

CONTENDERS = (TUNED, "default", *KERNELS)


def result_path(places: Places, scale: str, workload: str) -> Path:
    return places.out / SIDE_BY_SIDE / scale / f"{workload}.json"


def load_side_by_side(places: Places, scale: str, workload: str) -> dict[str, Any] | None:
    path = result_path(places, scale, workload)
    return json.loads(path.read_text()) if path.is_file() else None


def tuned_winner(plan: Plan, places: Places, workload: str, scale: str) -> tuple[str, dict[str, int]]:
    """The search with the best confirmed winner so far, and that winner's parameters."""
    found = method_rows(plan, places, workload, scale)
    tuned = best_tuned(pd.DataFrame([{"method": method, **row} for method, row in found.items()], columns=COLUMNS))
    if tuned is None:
        raise StudyError(f"no confirmed search of {scale}/{workload} yet to measure beside the references")
    params = load_study(places.study(scale, workload, tuned.method)).confirmed()["params"]
    return tuned.method, {name: typed(name, value) for name, value in params.items()}


def measure_side_by_side(spec: SideBySideSpec, plan: Plan, places: Places, timeout: float,
                         prepared: set[tuple[str, ...]]) -> dict[str, Any]:
    """The rounds, saved and returned (a recorded step is not measured again)."""
    saved = load_side_by_side(places, spec.scale, spec.workload)
    if saved is not None:
        return saved
    method, tuned = tuned_winner(plan, places, spec.workload, spec.scale)
    defaults = load_study(places.study(spec.scale, spec.workload, "default"))
    if defaults is None:
        raise StudyError(f"no defaults' study of {spec.scale}/{spec.workload} yet")
    config, _ = compose_workload(spec.workload, spec.scale, workload_overrides(
        spec.workload, plan.size(spec.workload, spec.scale), places) + list(RUNNER), plan)
    workload = Workload.from_config(config.workload, config.data_dir)
    prepare(workload, prepared)
    pager, kernel = Runner.from_config(workload, config.runner), mmap_runner(workload, config.runner, repeats=1)
    how = {TUNED: (pager, tuned, None), "default": (pager, defaults.default_params(), None),
           **{name: (kernel, {}, read_ahead) for name, read_ahead in KERNELS.items()}}
    checksums: dict[str, str | None] = dict.fromkeys(CONTENDERS)
    read_aheads: dict[str, int | None] = {}
    runs = []
    for round_ in range(spec.rounds):
        for name in in_turn(CONTENDERS, round_):
            runner, params, read_ahead = how[name]
            with read_ahead_of_disk(places.data_dir, read_ahead):
                read_aheads[name] = disk_read_ahead_kib(places.data_dir)
                result = runner.measure(params, timeout, runs=1, checksum=checksums[name])
            checksums[name] = checksums[name] or result.checksum
            runs.append({"round": round_, "contender": name, "value": result.value if result.ok else None,
                         "error": None if result.ok else result.error, "seconds": result.wall_seconds})
            shown = f"{result.value:.4g} {workload.metric}" if result.ok else result.error
            print(f"evaluation: round {round_ + 1}/{spec.rounds}, {name}: {shown}", flush=True)
    failed = [f"{run['contender']}: {run['error']}" for run in runs if run["error"]]
    record = {"workload": spec.workload, "scale": spec.scale, "metric": workload.metric, "goal": workload.goal.value,
              "tuned_method": method, "tuned_params": tuned, "read_ahead_kib": read_aheads,
              "error": failed[0] if failed else None, "runs": runs}
    path = result_path(places, spec.scale, spec.workload)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")
    return record
