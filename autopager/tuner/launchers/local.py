"""The local launcher (the default): each trial runs in the tuner's own process, to its end, when submitted.

One worker only: the trial measures this machine, so a second one at the same time would disturb it.
"""
from __future__ import annotations

from pathlib import Path

from autopager.errors import ConfigError
from autopager.tuner.launchers.base import Launcher, LauncherSettings, TrialResult, TrialTask
from autopager.tuner.launchers.worker import run_trial


class LocalLauncher(Launcher):
    def __init__(self, settings: LauncherSettings, directory: Path):
        if settings.workers != 1:
            raise ConfigError(f"launcher=local runs one trial at a time on this machine (launcher.workers=1, not "
                              f"{settings.workers}); for several nodes use launcher=ray or launcher=slurm")
        super().__init__(settings, directory)
        self.finished: list[tuple[str, TrialResult]] = []
        self.count = 0

    def submit(self, task: TrialTask) -> str:
        self.count += 1
        handle = f"local-{self.count}"
        self.finished.append((handle, run_trial(task)))
        return handle

    def wait(self, timeout: float | None = None) -> list[tuple[str, TrialResult]]:
        finished, self.finished = self.finished, []
        return finished

    def cancel(self, handle: str) -> None:
        self.finished = [(h, result) for h, result in self.finished if h != handle]
