"""The system baseline: a workload on the kernel's mmap (its ``--mmap`` flag) in a memory cgroup.

The cgroup's limit is the one the pager's trials run under (evaluation/memory.py): the pager's buffer
plus what any run of the program uses beside its data. The page cache is dropped before each run, as for
the tuner's trials. The result is kept as
``<out>/kernel/<scale>/<workload>.json`` (a second evaluation run reuses it).
"""
from __future__ import annotations

import json
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

from autopager.params import format_size
from autopager.runner import Runner, environment, last_json_object, result_value
from autopager.workloads import Workload
from evaluation.memory import memory_limit
from evaluation.plan import KernelSpec, Plan
from evaluation.studies import Places, compose_workload, prepare, workload_overrides
from memlimit import MemoryLimit


def result_path(places: Places, scale: str, workload: str) -> Path:
    return places.out / "kernel" / scale / f"{workload}.json"


def load_kernel(places: Places, scale: str, workload: str) -> dict[str, Any] | None:
    path = result_path(places, scale, workload)
    return json.loads(path.read_text()) if path.is_file() else None


def run_once(workload: Workload, runner: Runner, limit: int, timeout: float) -> dict[str, Any]:
    runner.empty_page_cache()
    with MemoryLimit(limit) as cgroup:
        start = time.perf_counter()
        try:
            process = subprocess.run(workload.argv() + ["--mmap"], env=environment({}), capture_output=True,
                                     text=True, timeout=timeout, preexec_fn=cgroup.enter)
        except subprocess.TimeoutExpired:
            return {"value": None, "error": f"timed out after {timeout:.0f} s"}
        seconds, peak = time.perf_counter() - start, cgroup.peak_bytes()
    if process.returncode != 0:
        reason = "killed (out of memory?)" if process.returncode == -9 else f"exited with {process.returncode}"
        return {"value": None, "error": f"{reason}: {process.stderr.strip()[-300:]}", "seconds": seconds}
    result = last_json_object(process.stdout) or {}
    value, error = result_value(result)
    return {"value": value, "error": error or None, "seconds": seconds, "peak_bytes": peak}


def measure_kernel(spec: KernelSpec, plan: Plan, places: Places, timeout: float,
                   prepared: set[tuple[str, ...]]) -> dict[str, Any]:
    """The median of ``spec.repeats`` runs (stopping at the first failure), saved and returned."""
    saved = load_kernel(places, spec.scale, spec.workload)
    if saved is not None:
        return saved
    size = plan.size(spec.workload, spec.scale)
    config, _ = compose_workload(spec.workload, workload_overrides(spec.workload, size, places), plan)
    workload = Workload.from_config(config.workload, config.data_dir)
    prepare(workload, prepared)
    limit = memory_limit(workload, size)
    runs = []
    for _ in range(spec.repeats):
        runs.append(run_once(workload, Runner(workload), limit, timeout))
        if runs[-1]["value"] is None:
            break
    values = [run["value"] for run in runs if run["value"] is not None]
    record = {"workload": spec.workload, "scale": spec.scale, "metric": workload.metric, "goal": workload.goal,
              "value": statistics.median(values) if len(values) == len(runs) else None,
              "values": values, "limit": format_size(limit), "limit_bytes": limit,
              "error": next((run["error"] for run in runs if run["error"]), None), "runs": runs}
    path = result_path(places, spec.scale, spec.workload)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")
    return record
