"""The Ray launcher: trials run as Ray tasks on an existing cluster (``launcher.address``: auto or host:port).

A trial owns its node: every node of the cluster declares one unit of a custom resource
(``launcher.resource``, by default ``autopager_node``: ``ray start ... --resources='{"autopager_node": 1}'``)
and every trial's task asks for that one unit (and no CPU, so Ray's CPU count does not limit it). Ray's
scheduler then never runs two trials on one node; the launcher refuses to start when the cluster declares fewer
units than ``launcher.workers``. The task runs ``worker.run_trial``; autopager must be importable on every node
(installed in the same environment, or shipped with ``launcher.runtime_env``).

Tasks are not retried (``max_retries=0``): a worker or node that dies makes a failed trial with Ray's reason.
Ray ends the tasks of a driver that exits, so a restarted tuner has nothing left to cancel.
"""
from __future__ import annotations

from pathlib import Path

from autopager.errors import ConfigError
from autopager.tuner.launchers.base import Launcher, LauncherSettings, TrialResult, TrialTask, lost
from autopager.tuner.launchers.worker import run_trial


def describe(error: Exception) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}".rstrip(": ")


class RayLauncher(Launcher):
    def __init__(self, settings: LauncherSettings, directory: Path):
        super().__init__(settings, directory)
        import ray

        self.ray = ray
        options = settings.options
        self.resource = str(options.get("resource") or "autopager_node")
        try:
            ray.init(address=str(options.get("address") or "auto"), runtime_env=options.get("runtime_env"),
                     log_to_driver=False, configure_logging=False)
        except ConnectionError as error:
            raise ConfigError(f"launcher=ray: cannot connect to the Ray cluster at launcher.address="
                              f"{options.get('address')}: {error}") from None
        declared = int(ray.cluster_resources().get(self.resource, 0))
        if declared < self.workers:
            ray.shutdown()
            raise ConfigError(f"launcher.workers={self.workers}, but the Ray cluster's nodes declare {declared} "
                              f"unit(s) of {self.resource!r}: start each node with "
                              f"`ray start ... --resources='{{\"{self.resource}\": 1}}'`, or lower launcher.workers")
        self.task = ray.remote(run_trial).options(resources={self.resource: 1}, num_cpus=0, max_retries=0)
        self.running: dict[str, object] = {}

    def submit(self, task: TrialTask) -> str:
        ref = self.task.remote(task)
        handle = ref.hex()
        self.running[handle] = ref
        return handle

    def wait(self, timeout: float | None = None) -> list[tuple[str, TrialResult]]:
        if not self.running:
            return []
        refs = list(self.running.values())
        ready, _ = self.ray.wait(refs, num_returns=1, timeout=timeout)
        if ready:
            ready, _ = self.ray.wait(refs, num_returns=len(refs), timeout=0)
        finished = []
        for ref in ready:
            handle = ref.hex()
            del self.running[handle]
            try:
                result = self.ray.get(ref)
            except self.ray.exceptions.RayError as error:
                result = lost(f"the trial's Ray task did not finish: {describe(error)}")
            finished.append((handle, result))
        return finished

    def cancel(self, handle: str) -> None:
        ref = self.running.pop(handle, None)
        if ref is not None:
            self.ray.cancel(ref)  # interrupts the task, whose runner then kills the workload's processes

    def close(self) -> None:
        for handle in list(self.running):
            self.cancel(handle)
        self.ray.shutdown()
