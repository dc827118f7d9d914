"""What every launcher offers the study: submit a trial, wait for finished ones, cancel one.

A trial is a ``TrialTask``: the workload, the runner settings, the parameters and the timeout; it runs on a
node through ``autopager.tuner.launchers.worker.run_trial``, the project's own ``Runner``, and comes back as a
``TrialResult``: the ``Measurement`` (value, repeats, stderr tail, the pager's statistics) with the node it ran
on and when the run started and ended there. A launcher never raises for a trial that went wrong on its
side (a lost worker, a cancelled or preempted job, a dead node): that trial comes back failed, with the reason.

A launcher runs at most ``workers`` trials at once, each on a node of its own; how it guarantees that is its
own (see each module). Handles are strings, so the study can write them down and a restarted tuner can
cancel the trials its predecessor left running.
"""
from __future__ import annotations

import datetime
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from autopager.checks import whole
from autopager.run.runner import Measurement
from autopager.run.workloads import Workload


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class TrialTask:
    """Everything a node needs to run a trial: plain data, pickled to the node."""
    workload: Workload
    runner: Mapping[str, Any]          # the ``runner`` settings, for ``Runner.from_config``
    params: Mapping[str, Any]
    timeout: float
    cap: float | None = None           # seconds: a run stops there as capped
    runs: int | None = None            # None: runner.repeats
    result_required: bool = False      # the program prints a result line: a run without one has failed
    kernel_mmap: bool = False          # the workload's kernel-mmap mode in a memory cgroup (baseline.mmap)
    checksum: str | None = None        # the reference run's: the runs validate only their checksum, which must be it


@dataclass
class TrialResult:
    measurement: Measurement
    node: str | None = None            # the host (or $AUTOPAGER_NODE) it ran on
    run_started: str | None = None     # UTC on the node, after the workload's preparation
    run_ended: str | None = None


def lost(reason: str, node: str | None = None) -> TrialResult:
    """A trial that never came back from its worker."""
    return TrialResult(Measurement(ok=False, error=reason), node=node)


@dataclass
class LauncherSettings:
    name: str
    workers: int
    options: dict[str, Any] = field(default_factory=dict)  # the launcher's own settings

    @classmethod
    def from_config(cls, settings: Mapping[str, Any]) -> "LauncherSettings":
        options = dict(settings)
        name, workers = options.pop("name", None), options.pop("workers", 1)
        return cls(str(name), workers, options)

    def __post_init__(self) -> None:
        self.workers = whole("launcher.workers", self.workers, 1)


class Launcher(ABC):
    """Runs trials on nodes, at most ``workers`` at once; ``directory`` is the study's (for logs and jobs)."""

    def __init__(self, settings: LauncherSettings, directory: Path):
        self.settings = settings
        self.workers = settings.workers
        self.directory = directory

    @abstractmethod
    def submit(self, task: TrialTask) -> str:
        """Start the trial; its handle."""

    @abstractmethod
    def wait(self, timeout: float | None = None) -> list[tuple[str, TrialResult]]:
        """The trials that have finished since the last call (at least one unless ``timeout`` passes first;
        none when nothing is in flight)."""

    @abstractmethod
    def cancel(self, handle: str) -> None:
        """Stop a trial, ours or one a previous tuner of the study started; it is not reported by ``wait``."""

    def close(self) -> None:
        """Cancel what is still running and let go of the cluster."""

    def __enter__(self) -> "Launcher":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
