"""The system baseline: a workload on the kernel's mmap (its ``mmap_command``) in a memory cgroup.

It is the tuner's own kernel-mmap baseline (``baseline.mmap=true``, autopager/kernel_mmap.py), run apart from the
studies with the evaluation's repeats: the cgroup's limit is the one the pager's trials run under (the pager's
buffer plus what any run of the program uses beside its data), and the page cache is dropped before each run. The
result is kept as ``<out>/kernel/<scale>/<workload>.json`` (a second evaluation run reuses it).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from autopager.kernel_mmap import mmap_runner
from autopager.params import format_size
from autopager.workloads import Workload
from evaluation.plan import KernelSpec, Plan
from evaluation.studies import RUNNER, Places, compose_workload, prepare, workload_overrides


def result_path(places: Places, scale: str, workload: str) -> Path:
    return places.out / "kernel" / scale / f"{workload}.json"


def load_kernel(places: Places, scale: str, workload: str) -> dict[str, Any] | None:
    path = result_path(places, scale, workload)
    return json.loads(path.read_text()) if path.is_file() else None


def measure_kernel(spec: KernelSpec, plan: Plan, places: Places, timeout: float,
                   prepared: set[tuple[str, ...]]) -> dict[str, Any]:
    """The median of ``spec.repeats`` runs (stopping at the first failure), saved and returned."""
    saved = load_kernel(places, spec.scale, spec.workload)
    if saved is not None:
        return saved
    size = plan.size(spec.workload, spec.scale)
    config, _ = compose_workload(spec.workload, workload_overrides(spec.workload, size, places) + list(RUNNER), plan)
    workload = Workload.from_config(config.workload, config.data_dir)
    prepare(workload, prepared)
    runner = mmap_runner(workload, config.runner, repeats=spec.repeats)
    result = runner.measure({}, timeout)
    runs = [{"value": value, "error": None} for value in result.values]
    if not result.ok:
        runs.append({"value": None, "error": result.error + (f": {result.stderr_tail[-300:]}" if result.stderr_tail
                                                             else "")})
    record = {"workload": spec.workload, "scale": spec.scale, "metric": workload.metric, "goal": workload.goal,
              "value": result.value, "values": result.values, "limit": format_size(runner.memory_limit),
              "limit_bytes": runner.memory_limit, "error": None if result.ok else runs[-1]["error"],
              "seconds": result.wall_seconds, "runs": runs}
    path = result_path(places, spec.scale, spec.workload)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")
    return record
