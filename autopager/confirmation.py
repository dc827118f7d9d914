"""Confirmation before a profile is saved: the defaults and the best few trials (and the saved profile's parameters,
if there is one for this workload, data and machine) measured again in interleaved rounds, one run each a round,
the order turned by one each round. The winner is the candidate with the best median over its confirmation runs
alone (the search's runs chose it, so they flatter it); the confirmed speedup is the ratio of the defaults' median
to the winner's, with the spread of the per-round ratios. An existing profile is replaced only by a winner better
than the profile's own confirmed median by more than the noise band. Rows of kind ``confirm`` name the trial they
confirm (``confirms``); a resumed study counts the confirmation runs it already has.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from autopager.measuring import NOISE_BAND, Proposal, relative_noise, runs_of
from autopager.machine import this_machine
from autopager.profiles import ProfileError, profile_path, read_profile
from autopager.space import Params
from autopager.strategies.base import key
from autopager.table import PROFILE, Kind, Status, row_params

if TYPE_CHECKING:
    from autopager.study import Study


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


class Confirmation:
    def __init__(self, study: "Study", default: Mapping[str, Any]):
        self.study = study
        self.default = default
        self.rounds = study.settings.confirm.rounds
        self.saved: Params | None = None  # the saved profile's parameters, read when choosing the candidates

    def candidates(self) -> list[Candidate]:
        goal = self.study.workload.goal
        searched = [row for row in self.study.ok_rows(Kind.SEARCH) if key(row_params(row)) != key(self.study.baseline)]
        top = sorted(searched, key=lambda row: goal.loss(row["value"]))[:self.study.settings.confirm.candidates]
        chosen = [Candidate(f"trial {row['trial']}", row_params(row), row["trial"]) for row in top]
        saved = self.saved = self.saved_profile()
        if saved is not None and all(key(saved) != key(c.params) for c in chosen) and key(saved) != key(
                self.study.baseline):
            chosen.append(Candidate(PROFILE, saved, None))
        return chosen

    def saved_profile(self) -> Params | None:
        """The parameters of the profile this study would replace, if it has the same metric."""
        if not self.study.config.study.save_profile:
            return None
        path = self.profile_path()
        if not path.is_file():
            return None
        try:
            profile = read_profile(path)
            params = profile.params
        except ProfileError as error:
            self.study.progress.print(f"the saved profile cannot be read ({error}): it will be replaced")
            return None
        if profile.data.get("metric") != self.study.workload.metric:
            return None
        return {**self.study.space.complete({}), **params}

    def profile_path(self) -> Path:
        return profile_path(Path(self.study.config.profile_dir).expanduser(), self.study.workload.name,
                            self.study.workload.knobs, this_machine())

    def run(self) -> Verdict | None:
        candidates = self.candidates()
        if not candidates:
            return None
        defaults = Candidate("defaults", self.study.baseline, self.default["trial"])
        everyone = [defaults, *candidates]
        self.study.progress.print(f"\nconfirming {', '.join(c.label for c in candidates)} against the defaults "
                                  f"in {self.rounds} rounds")
        for candidate in everyone:
            self.collect(candidate)
        for round_ in range(self.rounds):
            order = everyone[round_ % len(everyone):] + everyone[:round_ % len(everyone)]
            for candidate in order:
                if not candidate.failed and len(candidate.values) <= round_:
                    self.measure(candidate, defaults)
        return self.verdict(defaults, candidates)

    def confirms(self, row: Mapping[str, Any], candidate: Candidate) -> bool:
        if row["kind"] is not Kind.CONFIRM:
            return False
        if candidate.trial is None:
            return row["proposed_by"] == PROFILE and key(row_params(row)) == key(candidate.params)
        return row["confirms"] == candidate.trial

    def collect(self, candidate: Candidate) -> None:
        """The confirmation runs a resumed study already has."""
        for row in self.study.table.rows:
            if self.confirms(row, candidate):
                if row["status"] is Status.OK:
                    candidate.values += runs_of(row)
                else:
                    candidate.failed = True

    def measure(self, candidate: Candidate, defaults: Candidate) -> None:
        study = self.study
        timeout = study.timeout(self.default)
        if candidate is defaults:
            cap = study.settings.runner.defaults_timeout
        else:
            cap = study.cap_seconds(self.default)
        study.progress.running(study.table.next_trial(), None, candidate.params)
        proposal = Proposal.starting(PROFILE if candidate.trial is None else None)
        row = study.run_trial(candidate.params, Kind.CONFIRM, proposal, timeout, cap, confirms=candidate.trial)
        study.report(row, None)
        if row["status"] is Status.OK:
            candidate.values.append(row["value"])
        else:
            candidate.failed = True

    def verdict(self, defaults: Candidate, candidates: list[Candidate]) -> Verdict:
        goal = self.study.workload.goal
        complete = [c for c in candidates if not c.failed and len(c.values) >= self.rounds]
        noises = [n for n in (relative_noise(c.values) for c in [defaults, *complete]) if n is not None]
        noise = math.sqrt(statistics.fmean([n * n for n in noises])) if noises else self.study.noise()
        winner = goal.best(complete, key=lambda c: c.median) if complete else None
        speedup = spread = None
        if winner is not None and defaults.values and not defaults.failed:
            speedup = goal.speedup(winner.median, defaults.median)
            ratios = [goal.speedup(w, d) for w, d in zip(winner.values, defaults.values)]
            spread = (min(ratios), max(ratios))
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
