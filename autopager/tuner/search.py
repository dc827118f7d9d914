"""The search: the strategy asked for trials and told their results (the ask/tell loop), while free workers
remain and the budget (budget.trials, budget.minutes) lasts; the defaults measured again among the trials
(noise.defaults_every, up to noise.defaults_runs), a trial within the noise of the incumbent measured once more
(noise.max_runs), a proposal of parameters already measured answered from that trial's row, and one made while
they are in flight answered when it ends. A search on a plateau (budget.plateau, autopager.tuner.stopping) ends
before its budget, and says why (``stopped``).
"""
from __future__ import annotations

import time
from typing import Callable

from autopager.run.settings import StudySettings
from autopager.tuner.in_flight import InFlight
from autopager.tuner.measuring import Proposal
from autopager.tuner.memory_front import Objective, memory_bytes
from autopager.tuner.progress import Progress
from autopager.tuner.scheduler import Report, Scheduler
from autopager.tuner.space import Params, Space
from autopager.tuner.stopping import Stop, plateau_stop
from autopager.tuner.strategies.base import Key, Strategy, key
from autopager.tuner.trial import Kind, Trial
from autopager.tuner.trials import Trials


class Search:
    def __init__(self, strategy: Strategy, strategy_name: str, scheduler: Scheduler, trials: Trials, space: Space,
                 settings: StudySettings, progress: Progress, report: Report, shown_limit: Callable[[int | None], int | None],
                 plateau: int | None = None, caps_by_buffer: bool = False):
        self.strategy, self.strategy_name = strategy, strategy_name
        self.scheduler, self.trials, self.space, self.settings = scheduler, trials, space, settings
        self.progress, self.report, self.shown_limit = progress, report, shown_limit
        self.baseline = space.defaults
        self.searched_before = trials.searched()
        self.told_trials: set[int] = set()  # the rows the strategy has been told of
        self.limit: int | None = None  # the search's budget of trials, once the strategy is known
        self.followers: dict[Key, list[tuple[Params, Proposal]]] = {}  # proposed again while in flight
        self.plateau = plateau  # search trials without improvement that end the search; None: never
        self.stopped: Stop | None = None  # why the search ended before its budget
        self.caps_by_buffer = caps_by_buffer  # time against memory: cap a trial by those of no larger a buffer

    def run(self, default: Trial | None, alongside: InFlight | None = None) -> Trial | None:
        """The strategy's trials, with the defaults measured again among them, until the budget or the strategy ends.
        It ends when no search trial is in flight: the defaults' runs still in flight end during the confirmation.
        ``alongside``: the defaults' first trial, in flight (``default`` is None): the free workers run the strategy's
        trials until it ends, without a cap (none is known yet; ``finished`` caps them later); its trial is returned."""
        self.strategy.expect(None if alongside is None else self.space.defaults_as_run())
        limit = self.limit = self.settings.trials if self.settings.trials is not None else self.strategy.planned_trials()
        self.tell_recorded(default, limit)
        if default is not None:
            done = self.trials.searched()
            self.progress.plan(self.strategy_name, self.strategy.planned_trials(), limit, done, default.wall_seconds)
        proposing = True
        while True:
            waiting = False  # the strategy proposes nothing until a search trial in flight ends, or at all
            while proposing and self.scheduler.pool.free():
                if not self.within_budget(limit, self.scheduler.pool.searching() + sum(map(len, self.followers.values()))):
                    proposing = False  # the budget only shrinks
                    break
                if self.defaults_due():
                    self.launch_defaults_again(default)
                    continue
                proposal = Proposal.starting()
                params = self.strategy.ask()
                if params is None:
                    waiting = True  # done, or waiting for trials in flight: asked again when one ends
                    break
                proposal = Proposal(proposal.started, proposal.begin, time.perf_counter() - proposal.begin,
                                    self.strategy.proposed_by)
                earlier = self.trials.measured(params)
                if earlier is None and key(params) in self.scheduler.pool.keys():
                    self.followers.setdefault(key(params), []).append((params, proposal))
                    continue
                if earlier is not None:
                    trial = self.scheduler.reuse(earlier, proposal)
                else:
                    if self.scheduler.pool.launcher.workers == 1:
                        self.progress.running(self.trials.table.next_trial(), self.shown_limit(limit), params)
                    trial = self.scheduler.launch(params, Kind.SEARCH, proposal, self.trials.timeout(default),
                                                  self.trials.cap_seconds(self.trials.cap_reference(
                                                      params, default, self.caps_by_buffer)))
                if not isinstance(trial, InFlight):
                    self.tell(trial, params)
                    self.report(trial, limit)
            searching = any(entry.kind == Kind.SEARCH for entry in self.scheduler.pool.flying.values())
            if alongside is None and (not self.scheduler.pool.count or (not searching and (waiting or not proposing))):
                break  # nothing more to propose: the defaults' runs still in flight end during the confirmation
            ended = None
            for entry, trial in self.scheduler.finished():
                if entry is alongside:
                    ended = trial  # told when the search goes on (``defaults`` reports it)
                elif entry.kind != Kind.SEARCH or self.measure_again(entry, trial):
                    self.report(trial, None if entry.kind != Kind.SEARCH else limit)
                else:
                    self.tell(trial, entry.params, entry.proposed_by)
                    self.report(trial, limit)
                    self.answer_followers(trial, limit)
            if ended is not None:
                return ended
        if self.searched_before and self.searched_before == self.trials.searched():
            self.progress.print("study complete: every trial it plans was run before (raise budget.trials, or "
                                "give another study.name, to run more)")
        return None

    def tell(self, trial: Trial, params: Params, proposed_by: str | None = None) -> None:
        self.told_trials.add(trial.number)
        self.strategy.tell(params, *self.trials.told(trial), proposed_by=proposed_by, memory=memory_bytes(trial))

    def tell_recorded(self, default: Trial | None, limit: int | None) -> None:
        """Tell the strategy of the trials it has not been told of: the defaults', a resumed study's trials, and those
        that ended while no search ran (started alongside the defaults' first run), except a trial being measured
        again; answer the proposals that waited for them."""
        continuing = {entry.continues for entry in self.scheduler.pool.flying.values()}
        for trial in list(self.trials.rows):
            is_default = default is not None and trial.number == default.number
            if ((trial.kind in (Kind.SEARCH, Kind.REUSED) or is_default)
                    and trial.number not in self.told_trials and trial.number not in continuing):
                self.tell(trial, dict(trial.params), trial.proposed_by)
                self.answer_followers(trial, limit)

    def answer_followers(self, trial: Trial, limit: int | None) -> None:
        """The proposals of a trial's parameters made while it was in flight: answered from it."""
        for params, proposal in self.followers.pop(key(trial.params), []):
            reused = self.scheduler.reuse(trial, proposal)
            self.tell(reused, params)
            self.report(reused, limit)

    def measure_again(self, entry: InFlight, trial: Trial) -> bool:
        """Whether a search trial within the noise of the incumbent is measured once more (up to noise.max_runs
        runs), so that no single lucky run makes it the incumbent: then it is launched again, continuing its trial."""
        if len(trial.runs) >= self.settings.noise.max_runs or not self.trials.within_noise(trial):
            return False
        proposal = Proposal(entry.started, time.perf_counter(), entry.ask_seconds, entry.proposed_by)
        self.scheduler.launch(entry.params, Kind.SEARCH, proposal, entry.timeout, entry.cap, continues=trial.number)
        return True

    def measure_front_again(self, default: Trial, objective: Objective) -> None:
        """Time against memory, after the search: the front's points whose one run could turn the rule's choice
        within the noise measured again, up to noise.max_runs runs, so that the choice reads medians
        (memory_front.Objective.unsettled). The defaults' runs still in flight are recorded as they end."""
        pool, announced = self.scheduler.pool, False
        while True:
            flying = {entry.continues for entry in pool.flying.values()}
            again = [row for row in objective.unsettled(self.trials.rows, self.trials.goal, self.trials.noise(),
                                                        self.settings.noise.max_runs) if row.number not in flying]
            if again and not announced:
                self.progress.print(f"measuring the front's points near the choice again: "
                                    f"{', '.join(f'trial {row.number}' for row in again)}")
                announced = True
            while again and pool.free():
                row = again.pop(0)
                if pool.launcher.workers == 1:
                    self.progress.running(row.number, None, row.params)
                cap = self.trials.cap_seconds(self.trials.cap_reference(row.params, default, self.caps_by_buffer))
                self.scheduler.launch(row.params, Kind.SEARCH, Proposal.starting(row.proposed_by),
                                      self.trials.timeout(default), cap, continues=row.number)
            if not again and not any(entry.continues is not None for entry in pool.flying.values()):
                return
            for _, trial in self.scheduler.finished():
                self.report(trial, None)

    def defaults_due(self) -> bool:
        """Whether to measure the defaults again now (noise.defaults_runs in all, every noise.defaults_every)."""
        defaults = [trial for trial in self.trials.rows if trial.kind is Kind.DEFAULT]
        if len(defaults) >= self.settings.noise.defaults_runs or any(
                entry.kind == Kind.DEFAULT for entry in self.scheduler.pool.flying.values()):
            return False
        since = sum(trial.kind is Kind.SEARCH and trial.number > defaults[-1].number for trial in self.trials.rows)
        return since >= self.settings.noise.defaults_every

    def launch_defaults_again(self, default: Trial) -> None:
        if self.scheduler.pool.launcher.workers == 1:
            self.progress.running(self.trials.table.next_trial(), None, self.baseline)
        self.scheduler.launch(self.baseline, Kind.DEFAULT, Proposal.starting(), self.trials.timeout(default),
                    self.settings.runner.defaults_timeout)

    def within_budget(self, limit: int | None, pending: int = 0) -> bool:
        """Whether another search trial may start, with ``pending`` search trials started and not yet recorded."""
        searched = self.trials.searched()
        if limit is not None and searched + pending >= limit:
            return False
        minutes = self.settings.minutes
        if minutes is not None and self.trials.tuning_seconds() >= 60 * minutes:
            self.stop(Stop(f"budget.minutes={minutes:g} reached", searched, limit))
            return False
        plateau = plateau_stop(self.trials.rows, self.trials.goal, self.trials.noise(), self.plateau, searched, limit)
        if plateau is not None:
            self.stop(plateau)
            return False
        return True

    def stop(self, why: Stop) -> None:
        if self.stopped is None:
            self.progress.print(f"the search stops: {why.line()}")
        self.stopped = why
