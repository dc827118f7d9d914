"""The study's side of its launcher: the trials in flight, each written in the in-flight record while it runs."""
from __future__ import annotations

import time
from typing import Any, Mapping, Sequence

from autopager.run.workloads import Workload
from autopager.tuner.in_flight import InFlight, InFlightRecord
from autopager.tuner.launchers import Launcher, TrialResult, TrialTask
from autopager.tuner.strategies.base import Key, key
from autopager.tuner.trial import Kind, Trial


class TrialPool:
    def __init__(self, launcher: Launcher, record: InFlightRecord, workload: Workload, runner: Mapping[str, Any]):
        self.launcher = launcher
        self.record = record
        self.workload = workload
        self.runner = dict(runner)
        self.flying: dict[str, InFlight] = {}    # handle -> trial
        self.begins: dict[str, float] = {}       # trial id -> perf_counter when asked for (or resubmitted)
        self.submitted: dict[str, float] = {}    # trial id -> perf_counter when handed to the launcher

    @property
    def count(self) -> int:
        return len(self.flying)

    def free(self) -> bool:
        return self.count < self.launcher.workers

    def searching(self) -> int:
        """Search trials in flight (not the defaults' runs, not runs added to a trial)."""
        return sum(entry.kind == Kind.SEARCH and entry.continues is None for entry in self.flying.values())

    def keys(self) -> set[Key]:
        return {key(entry.params) for entry in self.flying.values()}

    def submit(self, entry: InFlight, begin: float | None = None, result_required: bool = False,
               checksum: str | None = None) -> None:
        entry.launcher = self.launcher.settings.name
        self.begins[entry.id] = time.perf_counter() if begin is None else begin
        self.record.add(entry)  # before it can start: a tuner killed now finds it at its next start
        kernel_mmap = entry.kind == Kind.MMAP
        task = TrialTask(self.workload, self.runner, entry.params, entry.timeout, entry.cap,
                         1 if entry.continues is not None else None, result_required and not kernel_mmap, kernel_mmap,
                         checksum)
        entry.handle = self.launcher.submit(task)
        self.submitted[entry.id] = time.perf_counter()
        self.flying[entry.handle] = entry
        self.record.add(entry)

    def wait(self, timeout: float | None = None) -> list[tuple[InFlight, TrialResult, float]]:
        """The trials that finished (none if ``timeout`` seconds pass first), with their results and when
        (perf_counter) they were asked for."""
        finished = []
        for handle, result in self.launcher.wait(timeout):
            entry = self.flying.pop(handle, None)
            if entry is not None:
                del self.submitted[entry.id]
                finished.append((entry, result, self.begins.pop(entry.id)))
        return finished

    def running_seconds(self, entry: InFlight) -> float:
        """How long ago the trial was handed to the launcher."""
        return time.perf_counter() - self.submitted[entry.id]

    def stop(self, entry: InFlight) -> float:
        """Cancel a trial in flight; when (perf_counter) it was asked for. It stays in the in-flight record until it
        is recorded or dropped."""
        self.launcher.cancel(entry.handle)
        del self.flying[entry.handle], self.submitted[entry.id]
        return self.begins.pop(entry.id)

    def drop(self, entry: InFlight) -> None:
        """Cancel a trial in flight and forget it: no row, no entry in the in-flight record."""
        self.stop(entry)
        self.record.remove(entry)

    def recorded(self, entry: InFlight) -> None:
        """The trial's row is in the table: strike it off."""
        self.record.remove(entry)

    def left_by_earlier_tuner(self, trials: Sequence[Trial]) -> list[InFlight]:
        """Reconcile the record a killed tuner left: trials already in the table are dropped; the others are
        cancelled where their launcher still runs them, and returned, to be run again."""
        again = []
        for entry in self.record.load():
            if entry.recorded_in(trials):
                self.record.remove(entry)
                continue
            if entry.handle is not None and entry.launcher == self.launcher.settings.name:
                self.launcher.cancel(entry.handle)
            again.append(entry)
        return again
