"""The worker side of a trial: runs on the node the launcher chose, in a process of the launcher's.

The workload's preparation runs first on that node (untimed; a workload's data generator reuses data that is
already complete, so this is quick after the node's first trial, or when ``data_dir`` is shared storage the
tuner already prepared), then the trial's runs through the project's ``Runner``.
"""
from __future__ import annotations

import os
import socket

from autopager.run.kernel_mmap import mmap_runner
from autopager.run.runner import Measurement, Runner
from autopager.tuner.launchers.base import TrialResult, TrialTask, now


def node_name() -> str:
    return os.environ.get("AUTOPAGER_NODE") or socket.gethostname()


def run_trial(task: TrialTask) -> TrialResult:
    node = node_name()
    if task.kernel_mmap:
        runner = mmap_runner(task.workload, task.runner)
    else:
        runner = Runner.from_config(task.workload, task.runner)
    if task.result_required:
        runner.require_result()
    prepared = runner.prepare()
    if not prepared.ok:
        failure = Measurement(ok=False, error=f"the workload's preparation failed on {node}: {prepared.error}",
                              stderr_tail=prepared.stderr_tail)
        return TrialResult(failure, node=node)
    started = now()
    measurement = runner.measure(task.params, task.timeout, task.cap, task.runs, task.checksum)
    return TrialResult(measurement, node=node, run_started=started, run_ended=now())
