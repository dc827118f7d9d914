"""Trials handed to the launcher and recorded as they end: a trial is launched (an infeasible one recorded at
once, not run), waited for, and its row appended to the study's table, or its runs added to the row it continues.
A search trial launched before any cap was known is stopped once it runs past the cap a trial launched now gets.

Over the trial pool (autopager.tuner.trial_pool: what is in flight, on which worker) and the study's trials;
``report`` is told of each row recorded while the caller waits for another.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable

from autopager.run.runner import Measurement, Runner, stopped
from autopager.tuner.in_flight import InFlight
from autopager.tuner.launchers import TrialResult
from autopager.tuner.measuring import Proposal, add_runs, measured_trial
from autopager.tuner.space import Params, Space
from autopager.tuner.trial import Kind, Trial
from autopager.tuner.trial_pool import TrialPool
from autopager.tuner.trials import Trials

Report = Callable[[Trial, Any], None]  # (trial, the search's trial limit or None)


class Scheduler:
    def __init__(self, pool: TrialPool, trials: Trials, space: Space, runner: Runner, report: Report):
        self.pool, self.trials, self.space, self.runner, self.report = pool, trials, space, runner, report

    def launch(self, params: Params, kind: Kind, proposal: Proposal, timeout: float, cap: float | None,
               confirms: int | None = None, continues: int | None = None) -> InFlight | Trial:
        """Hand a trial to the launcher (``continues``: one more run of that trial); an infeasible one is recorded
        at once, not run, and returned."""
        entry = InFlight(dict(params), kind.value, timeout, proposal.started, proposal.ask_seconds,
                         proposal.proposed_by, cap=cap, confirms=confirms, continues=continues)
        why = self.space.infeasible(params)
        if why is not None:
            failure = Measurement(ok=False, error=f"{why}: not run")
            return self.record(entry, TrialResult(failure), proposal)
        self.pool.submit(entry, proposal.begin, result_required=not self.runner.times_process,
                         checksum=self.trials.reference_checksum())
        return entry

    def run_trial(self, params: Params, kind: Kind, proposal: Proposal, timeout: float, cap: float | None,
                  confirms: int | None = None) -> Trial:
        """Measure a parameter set on a node and append its trial to the table (and those of trials in flight that
        end meanwhile)."""
        launched = self.launch(params, kind, proposal, timeout, cap, confirms)
        return self.wait_for(launched) if isinstance(launched, InFlight) else launched

    def wait_for(self, awaited: InFlight) -> Trial:
        """A trial in flight, once it has ended and is recorded; the other trials that end meanwhile are reported."""
        while True:
            for entry, trial in self.finished():
                if entry is awaited:
                    return trial
                self.report(trial, None)

    def drain(self, entries: list[InFlight] | None = None) -> None:
        """Record the trials in flight as they end (until none of ``entries`` is in flight, if given)."""
        while self.pool.count if entries is None else any(self.pool.flying.get(entry.handle) is entry
                                                          for entry in entries):
            for _, trial in self.finished():
                self.report(trial, None)

    def record(self, entry: InFlight, result: TrialResult, proposal: Proposal) -> Trial:
        """Put a finished trial in the table (a new one, or the trial it continues with more runs), then strike it
        off the in-flight record."""
        table = self.trials.table
        if entry.continues is not None:
            measured = add_runs(table.trial(entry.continues), result.measurement)
        else:
            limit = entry.timeout if entry.cap is None else min(entry.timeout, entry.cap)
            measured = measured_trial(table.next_trial(), Kind(entry.kind), entry.params, result.measurement, limit,
                                 proposal, entry.confirms)
        trial = dataclasses.replace(measured, node=result.node, run_started=result.run_started,
                                    run_ended=result.run_ended)
        if entry.continues is not None:
            table.replace(trial)
        else:
            table.append(trial)
        self.pool.recorded(entry)
        return trial

    def finished(self) -> list[tuple[InFlight, Trial]]:
        """Wait for trials in flight to end; record each. A search trial launched before its limits were known
        (``late_limits``) is stopped by the tuner once it runs past them, and recorded as the runner records a run
        stopped there: capped (or, past the timeout, failed)."""
        late = self.late_limits()
        soonest = min((limit + startup - self.pool.running_seconds(entry) for entry, limit, _, startup in late),
                      default=None)
        ended = self.pool.wait(None if soonest is None else max(0.0, soonest))
        for entry, limit, timeout, startup in late:
            if entry.handle in self.pool.flying and self.pool.running_seconds(entry) >= limit + startup:
                wall = self.pool.running_seconds(entry) - startup
                entry.timeout, entry.cap = timeout, limit
                ended.append((entry, TrialResult(stopped(wall, limit, timeout)), self.pool.stop(entry)))
        return [(entry, self.record(entry, result, Proposal(entry.started, begin, entry.ask_seconds, entry.proposed_by)))
                for entry, result, begin in ended]

    def late_limits(self) -> list[tuple[InFlight, float, float, float]]:
        """The search trials in flight that were launched without a cap (alongside the defaults' first run, before
        any incumbent) and would now get a lower limit: each with the limit and timeout a trial launched now gets,
        and the seconds its run is taken to start after its submission (the launch and the workload's preparation
        on the node, as they took for the trial that sets the cap): the tuner cannot see when it started."""
        if self.pool.launcher.workers == 1:
            return []
        default = self.trials.measured_defaults()
        reference = self.trials.incumbent() or default
        cap, timeout_now = self.trials.cap_seconds(reference), self.trials.timeout(default)
        startup = max(0.0, reference.seconds - reference.wall_seconds) if reference else 0.0
        late = []
        for entry in self.pool.flying.values():
            if entry.kind != Kind.SEARCH or entry.cap is not None:
                continue
            timeout = min(entry.timeout, timeout_now)
            limit = timeout if cap is None else min(timeout, cap)
            if limit < entry.timeout:
                late.append((entry, limit, timeout, startup))
        return late

    def reuse(self, earlier: Trial, proposal: Proposal) -> Trial:
        """A trial answered from an earlier one with the same parameters: recorded, not run."""
        trial = dataclasses.replace(
            earlier, number=self.trials.table.next_trial(), kind=Kind.REUSED, runs=(), wall_seconds=0.0,
            seconds=time.perf_counter() - proposal.begin, timeout=None, stderr_tail=None, started=proposal.started,
            ask_seconds=proposal.ask_seconds, proposed_by=proposal.proposed_by, reused_from=earlier.number,
            confirms=None)
        self.trials.table.append(trial)
        return trial
