"""The SLURM launcher, through submitit: one job a trial, on a node of its own (``--exclusive``, one node,
one task).

SLURM gives each exclusive job a whole node, so trials in flight never share one; ``launcher.workers`` only
bounds how many jobs the tuner keeps queued or running. The job's settings: ``launcher.partition``,
``launcher.time_limit`` (minutes), ``launcher.account``, and any other submitit parameter in
``launcher.parameters`` (``slurm_qos``, ``slurm_constraint``, ``mem_gb``, ``slurm_setup``, ...), passed through to
``AutoExecutor.update_parameters``. ``launcher.cluster``: null to let submitit find SLURM, ``local`` to run the
jobs on this machine with submitit's local executor (tests, trying a study out).

Jobs and their logs go under the study directory (``slurm/``), which must be on storage the nodes share.
A job that ends without a result (cancelled, preempted, out of time, its node failed) is a failed trial, with
SLURM's state and the end of the job's log. A restarted tuner cancels the jobs its predecessor left.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from autopager.errors import ConfigError
from autopager.tuner.launchers.base import Launcher, LauncherSettings, TrialResult, TrialTask, lost
from autopager.tuner.launchers.worker import run_trial

POLL_SECONDS = 1.0
LOG_LINES = 5


def log_tail(job: Any) -> str:
    try:
        lines = job.stderr().splitlines() if job.stderr() else []
    except OSError:
        return ""
    return "\n".join(lines[-LOG_LINES:])


class SlurmLauncher(Launcher):
    def __init__(self, settings: LauncherSettings, directory: Path):
        super().__init__(settings, directory)
        import submitit

        self.submitit = submitit
        options = settings.options
        self.cluster = options.get("cluster")
        self.folder = directory / "slurm"
        try:
            self.executor = submitit.AutoExecutor(folder=self.folder, cluster=self.cluster)
        except RuntimeError as error:  # no srun/sbatch here
            raise ConfigError(f"launcher=slurm: {error} (launcher.cluster=local runs the jobs on this machine)") from None
        parameters = {"name": f"autopager-{directory.parent.name}-{directory.name}", "nodes": 1, "tasks_per_node": 1,
                      "timeout_min": int(options.get("time_limit") or 60), "slurm_exclusive": True}
        for option in ("partition", "account"):
            if options.get(option):
                parameters[f"slurm_{option}"] = options[option]
        parameters.update(options.get("parameters") or {})
        try:
            self.executor.update_parameters(**parameters)
        except (ValueError, TypeError) as error:
            raise ConfigError(f"launcher.parameters: {error}") from None
        self.running: dict[str, Any] = {}

    def submit(self, task: TrialTask) -> str:
        job = self.executor.submit(run_trial, task)
        self.running[job.job_id] = job
        return job.job_id

    def wait(self, timeout: float | None = None) -> list[tuple[str, TrialResult]]:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.running:
            finished = [(handle, self.result(job)) for handle, job in list(self.running.items()) if job.done()]
            for handle, _ in finished:
                del self.running[handle]
            if finished or (deadline is not None and time.monotonic() >= deadline):
                return finished
            time.sleep(POLL_SECONDS)
        return []

    def result(self, job: Any) -> TrialResult:
        try:
            return job.result()
        except Exception as error:  # submitit's UncompletedJobError / FailedJobError, or a lost result file
            state = job.state
            first = (str(error).strip().splitlines() or [""])[0]
            result = lost(f"SLURM job {job.job_id} ended without a result (state {state}): {first}")
            result.measurement.stderr_tail = log_tail(job)
            return result

    def cancel(self, handle: str) -> None:
        job = self.running.pop(handle, None)
        if job is None and self.cluster != "local":
            job = self.submitit.SlurmJob(folder=self.folder, job_id=handle)  # left by an earlier tuner
        if job is not None:
            job.cancel(check=False)

    def close(self) -> None:
        for handle in list(self.running):
            self.cancel(handle)
