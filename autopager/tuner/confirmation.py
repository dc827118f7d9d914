"""Confirmation before a profile is saved: the defaults and the best few trials (and the saved profile's parameters,
if there is one for this workload, data and machine) measured again in interleaved rounds, one run each a round,
the order turned by one each round. The runs go through the study's trial pool in that order, ``launcher.workers``
at once: with several workers a round's runs and the next rounds' run side by side on whichever nodes are free
(each run's node is in the table, and the summary names the nodes compared); with one worker the rounds run one
after the other as before. The k-th runs of the defaults and of the winner make the k-th round's ratio. The winner is the candidate with the best median over its confirmation runs
alone (the search's runs chose it, so they flatter it), or the one the objective names (time against memory: the
chosen point of the front, confirmed beside the front's fastest; autopager.tuner.memory_front); the confirmed speedup is the ratio of the defaults' median
to the winner's, with the spread of the per-round ratios. An existing profile is replaced only by a winner better
than the profile's own confirmed median by more than the noise band. Rows of kind ``confirm`` name the trial they
confirm (``confirms``); a resumed study counts the confirmation runs it already has.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Hashable, Iterable

from autopager.machine import this_machine
from autopager.profiles import ProfileError, at_other_buffers, profile_path, read_profile
from autopager.run.goal import Goal
from autopager.run.rounds import in_turn
from autopager.run.settings import StudySettings
from autopager.tuner.in_flight import InFlight
from autopager.tuner.measuring import NOISE_BAND, Proposal, relative_noise
from autopager.tuner.memory_front import Objective
from autopager.tuner.progress import Progress
from autopager.tuner.scheduler import Scheduler
from autopager.tuner.space import Params, Space
from autopager.tuner.strategies.base import key
from autopager.tuner.trial import PROFILE, Kind, Trial


@dataclass
class Candidate:
    label: str                  # "defaults", "trial 12", "profile"
    params: Params
    trial: int | None           # the trial confirmed (None: the saved profile's parameters)
    values: list[float] = field(default_factory=list)
    failed: bool = False

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def identity(self) -> Hashable:
        """What its confirmation runs name: the trial they confirm, or the saved profile's parameters."""
        return self.trial if self.trial is not None else (PROFILE, key(self.params))


@dataclass
class Verdict:
    defaults: Candidate
    candidates: list[Candidate]
    winner: Candidate | None
    speedup: float | None               # the defaults' median over the winner's
    speedup_spread: tuple[float, float] | None
    noise: float                        # pooled relative noise of the confirmation runs
    profile: Candidate | None           # the candidate with the saved profile's parameters, if there is a profile
    replace_profile: bool


def round_ratios(goal: Goal, winner: list[float], defaults: list[float]) -> list[float]:
    """The speedup of each round: the winner's k-th run over the defaults' k-th."""
    return [goal.speedup(w, d) for w, d in zip(winner, defaults)]


def confirmed_speedup(goal: Goal, winner: list[float], defaults: list[float]) -> tuple[float, tuple[float, float]]:
    """The winner's median over the defaults' as a speedup, and the spread of the ratios of the k-th runs (rounds)."""
    ratios = round_ratios(goal, winner, defaults)
    return goal.speedup(statistics.median(winner), statistics.median(defaults)), (min(ratios), max(ratios))


def completed(candidates: Iterable[Candidate], rounds: int) -> list[Candidate]:
    """The candidates measured in every round with no run failed or capped."""
    return [c for c in candidates if not c.failed and len(c.values) >= rounds]


def outcome(goal: Goal, defaults: Candidate | None, candidates: Iterable[Candidate], rounds: int,
            named: int | None = None) -> tuple[Candidate | None, float | None, tuple[float, float] | None]:
    """Which candidate won the confirmation (of those completed, the best median over its confirmation runs; or the
    one confirming trial ``named``, the defaults' included, where the objective names it), and its confirmed speedup
    over the defaults with the spread of the per-round ratios (None without the defaults' runs, or if one of them
    failed)."""
    complete = completed(candidates, rounds)
    if named is None:
        winner = goal.best(complete, key=lambda c: c.median) if complete else None
    else:
        everyone = complete + completed([] if defaults is None else [defaults], rounds)
        winner = next((c for c in everyone if c.trial == named), None)
    if winner is None or defaults is None or not defaults.values or defaults.failed:
        return winner, None, None
    speedup, spread = confirmed_speedup(goal, winner.values, defaults.values)
    return winner, speedup, spread


def count_run(candidate: Candidate, trial: Trial) -> None:
    """A confirmation run counted for its candidate: its value is the round's; a run that failed or was capped ends
    the candidate's rounds."""
    if trial.ok:
        candidate.values.append(trial.value)
    else:
        candidate.failed = True


def recorded_candidates(trials: Iterable[Trial]) -> dict[Hashable, Candidate]:
    """The candidates of a study's confirmation with the runs its table records (trials of kind ``confirm``), by
    ``Candidate.identity``, in the order of their first run."""
    found: dict[Hashable, Candidate] = {}
    for trial in trials:
        if trial.kind is Kind.CONFIRM:
            confirmed = trial.confirms
            candidate = Candidate(PROFILE if confirmed is None else f"trial {confirmed}", dict(trial.params), confirmed)
            count_run(found.setdefault(candidate.identity, candidate), trial)
    return found


class Confirmation:
    def __init__(self, scheduler: Scheduler, space: Space, settings: StudySettings, progress: Progress,
                 profile_dir: Path | None, default: Trial, objective: Objective = Objective()):
        """``profile_dir``: where the profile the study would replace is (None: the study saves none); ``objective``:
        an objective other than the metric alone chooses the candidates and the winner (autopager.tuner.memory_front),
        then confirmed without the saved profile's parameters."""
        self.objective = objective
        self.named: int | None = None  # the trial the objective names as the winner, read with the candidates
        self.scheduler, self.trials, self.space, self.settings = scheduler, scheduler.trials, space, settings
        self.progress, self.profile_dir, self.default = progress, profile_dir, default
        self.workload, self.baseline = self.trials.workload, space.defaults
        self.rounds = settings.confirm.rounds
        self.saved: Params | None = None  # the saved profile's parameters, read when choosing the candidates

    def candidates(self) -> list[Candidate]:
        goal = self.workload.goal
        searched = [trial for trial in self.trials.ok_rows(Kind.SEARCH) if key(trial.params) != key(self.baseline)]
        rows = self.trials.rows
        picked = self.objective.candidates(searched, rows, goal, self.settings.confirm.candidates)
        self.named = self.objective.confirmed_winner(rows, goal)
        top = picked if picked is not None else sorted(
            searched, key=lambda trial: goal.loss(trial.value))[:self.settings.confirm.candidates]
        chosen = [Candidate(f"trial {trial.number}", dict(trial.params), trial.number) for trial in top]
        saved = self.saved = self.saved_profile() if picked is None else None
        if saved is not None and all(key(saved) != key(c.params) for c in chosen) and key(saved) != key(
                self.baseline):
            chosen.append(Candidate(PROFILE, saved, None))
        return chosen

    def saved_profile(self) -> Params | None:
        """The parameters of the profile this study would replace, if it has the same metric."""
        if self.profile_dir is None:
            return None
        path = self.profile_path()
        if not path.is_file():
            self.other_buffers()
            return None
        try:
            profile = read_profile(path)
            params = profile.params
        except ProfileError as error:
            self.progress.print(f"the saved profile cannot be read ({error}): it will be replaced")
            return None
        if profile.data.get("metric") != self.workload.metric:
            return None
        return {**self.space.complete({}), **params}

    def other_buffers(self) -> None:
        """Say that the workload's profiles made at another buffer are left be: this study saves its own."""
        workload = self.workload
        for profile in at_other_buffers(self.profile_dir, workload.name,
                                        workload.knobs):
            self.progress.print(
                f"profile {profile.name} was made at a {profile.found_for.get('buffer') or 'default'} buffer: this "
                f"study's buffer ({workload.knobs['buffer'] or 'the default'}) neither confirms nor replaces it")

    def profile_path(self) -> Path:
        return profile_path(self.profile_dir, self.workload.name,
                            self.workload.knobs, this_machine())

    def run(self) -> Verdict | None:
        candidates = self.candidates()
        if not candidates:
            return None
        defaults = Candidate("defaults", self.baseline, self.default.number)
        everyone = [defaults, *candidates]
        self.progress.print(f"\nconfirming {', '.join(c.label for c in candidates)} against the defaults "
                                  f"in {self.rounds} rounds")
        recorded = recorded_candidates(self.trials.rows)  # the runs a resumed study already has
        for candidate in everyone:
            done = recorded.get(candidate.identity)
            if done is not None:
                candidate.values, candidate.failed = done.values, done.failed
        queue = [candidate for round_ in range(self.rounds)
                 for candidate in in_turn(everyone, round_)
                 if len(candidate.values) <= round_]  # a resumed study's runs count for its first rounds
        self.measure(queue, defaults)
        return self.verdict(defaults, candidates)

    def measure(self, queue: list[Candidate], defaults: Candidate) -> None:
        """Run the queued confirmation runs through the pool, as many at once as it has workers; a candidate whose
        run fails runs no more. Trials still in flight from the search (the defaults measured again) are recorded
        as they end."""
        timeout = self.trials.timeout(self.default)
        running: dict[str, Candidate] = {}  # in-flight entry id -> candidate
        while queue or running:
            while queue and self.scheduler.pool.free():
                candidate = queue.pop(0)
                if candidate.failed:
                    continue
                cap = (self.settings.runner.defaults_timeout if candidate is defaults
                       else self.trials.cap_seconds(self.default))
                if self.scheduler.pool.launcher.workers == 1:
                    self.progress.running(self.trials.table.next_trial(), None, candidate.params)
                proposal = Proposal.starting(PROFILE if candidate.trial is None else None)
                launched = self.scheduler.launch(candidate.params, Kind.CONFIRM, proposal, timeout, cap, confirms=candidate.trial)
                if isinstance(launched, InFlight):
                    running[launched.id] = candidate
                else:
                    self.measured(candidate, launched)
            for entry, trial in self.scheduler.finished():
                candidate = running.pop(entry.id, None)
                if candidate is None:
                    self.scheduler.report(trial, None)
                else:
                    self.measured(candidate, trial)

    def measured(self, candidate: Candidate, trial: Trial) -> None:
        self.scheduler.report(trial, None)
        count_run(candidate, trial)

    def verdict(self, defaults: Candidate, candidates: list[Candidate]) -> Verdict:
        goal = self.workload.goal
        complete = completed(candidates, self.rounds)
        noises = [n for n in (relative_noise(c.values) for c in [defaults, *complete]) if n is not None]
        noise = math.sqrt(statistics.fmean([n * n for n in noises])) if noises else self.trials.noise()
        winner, speedup, spread = outcome(goal, defaults, candidates, self.rounds, self.named)
        saved = self.saved
        profile = None if saved is None else next(
            (c for c in [defaults, *candidates] if key(c.params) == key(saved)), None)
        if winner is None or speedup is None or speedup <= 1 or profile is winner:
            replace = False
        elif profile is None or profile.failed or not profile.values:
            replace = True
        else:
            replace = goal.speedup(winner.median, profile.median) > 1 + NOISE_BAND * noise
        return Verdict(defaults, candidates, winner, speedup, spread, noise, profile, replace)
