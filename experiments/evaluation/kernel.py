"""The system baseline: a workload on the kernel's mmap (its ``mmap_command``) in a memory cgroup.

It is the tuner's own kernel-mmap baseline (``baseline.mmap=true``, autopager/kernel_mmap.py), run apart from the
studies with the evaluation's repeats: the cgroup's limit is the one the pager's trials run under (the pager's
buffer, its pages' bookkeeping and what any run of the program uses beside its data, and the page tables of
the data), and the page cache is dropped before each run. The
result is kept as ``<out>/kernel/<scale>/<workload>.json`` (a second evaluation run reuses it). A spec with a
read-ahead runs with the data's disk set to it (``autopager.run.disk.read_ahead_of_disk``, restored after), kept as
``<workload>-ra<KiB>.json``; every record states the disk's read-ahead its runs had.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from autopager.run.kernel_mmap import mmap_runner
from autopager.run.disk import read_ahead_file, read_ahead_of_disk
from autopager.run.memory_limit import run_limit
from autopager.parameters import format_size
from autopager.run.workloads import Workload
from experiments.evaluation.plan import KernelSpec, Plan
from experiments.evaluation.studies import Places, compose_workload, prepare, RUNNER, workload_overrides


def result_path(places: Places, scale: str, workload: str, read_ahead_kib: int | None = None) -> Path:
    suffix = "" if read_ahead_kib is None else f"-ra{read_ahead_kib}"
    return places.out / "kernel" / scale / f"{workload}{suffix}.json"


def load_kernel(places: Places, scale: str, workload: str, read_ahead_kib: int | None = None) -> dict[str, Any] | None:
    path = result_path(places, scale, workload, read_ahead_kib)
    return json.loads(path.read_text()) if path.is_file() else None


def disk_read_ahead_kib(path: Path) -> int | None:
    setting = read_ahead_file(path)
    return int(setting.read_text()) if setting else None


def measure_kernel(spec: KernelSpec, plan: Plan, places: Places, timeout: float,
                   prepared: set[tuple[str, ...]]) -> dict[str, Any]:
    """The median of ``spec.repeats`` runs (stopping at the first failure), saved and returned."""
    saved = load_kernel(places, spec.scale, spec.workload, spec.read_ahead_kib)
    if saved is not None:
        return saved
    size = plan.size(spec.workload, spec.scale)
    config, _ = compose_workload(spec.workload, spec.scale, workload_overrides(spec.workload, size, places)
                                 + list(RUNNER), plan)
    workload = Workload.from_config(config.workload, config.data_dir)
    prepare(workload, prepared)
    runner = mmap_runner(workload, config.runner, repeats=spec.repeats)
    with read_ahead_of_disk(places.data_dir, spec.read_ahead_kib):
        read_ahead = disk_read_ahead_kib(places.data_dir)
        result = runner.measure({}, timeout)
    limit = run_limit(runner.memory_limit, workload)  # what each run's cgroup had
    runs = [{"value": value, "error": None} for value in result.values]
    if not result.ok:
        runs.append({"value": None, "error": result.error + (f": {result.stderr_tail[-300:]}" if result.stderr_tail
                                                             else "")})
    record = {"workload": spec.workload, "scale": spec.scale, "metric": workload.metric, "goal": workload.goal,
              "value": result.value, "values": result.values, "limit": format_size(limit),
              "limit_bytes": limit, "read_ahead_kib": read_ahead, "error": None if result.ok else runs[-1]["error"],
              "seconds": result.wall_seconds, "runs": runs}
    path = result_path(places, spec.scale, spec.workload, spec.read_ahead_kib)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")
    return record
