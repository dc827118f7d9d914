"""The common interface of the search strategies.

A strategy proposes one parameter set at a time (``ask``) and learns the outcome of each (``tell``). It is
also told outcomes it did not ask for: the defaults' run that starts every study, and the finished trials
of a resumed study (with what had proposed each), so that it continues where it stopped. A failed trial is
told as ``None``; a trial measured more than once comes with the standard error of its mean; a capped trial is
told as a value worse than the incumbent's (the study's ``told``), never as the time it ran before it was stopped. ``proposed_by`` names what proposed the last parameters asked for, for the study's table.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Generator, Mapping

from autopager.goal import Goal
from autopager.space import Params, Space

Key = tuple


def key(params: Mapping[str, Any]) -> Key:
    return tuple(sorted(params.items()))


class Strategy(ABC):
    def __init__(self, space: Space, goal: Goal, settings: Mapping[str, Any], seed: int):
        self.space = space
        self.goal = Goal.parse(goal)
        self.settings = settings
        self.seed = seed
        self.proposed_by: str | None = None

    def loss(self, value: float | None) -> float | None:
        """What the strategies minimize: the metric, negated when it is to be maximized."""
        return None if value is None else self.goal.loss(value)

    def planned_trials(self) -> int | None:
        """How many trials the strategy means to run, if it knows."""
        return self.settings.get("trials")

    def save(self, directory: Path) -> None:
        """Keep the strategy's own state in the study's directory, for its analysis (most keep none)."""

    @abstractmethod
    def ask(self) -> Params | None:
        """The next parameters to measure, or None when the strategy is done."""

    @abstractmethod
    def tell(self, params: Params, value: float | None, sem: float | None = None,
             proposed_by: str | None = None) -> None:
        """The metric of ``params`` (None: the trial failed) and its standard error (None: one run); ``proposed_by``:
        for a trial the strategy did not just ask for, what had proposed it (of an earlier run), if anything."""

    def modelled_best(self) -> tuple[Params, float, float | None] | None:
        """The best parameters by the strategy's model, with its predicted value and standard error, if it has one."""
        return None


class SearchStrategy(Strategy):
    """A strategy written as a generator: ``search`` yields parameter sets and receives their losses.

    Parameter sets already measured (told) are answered from memory without a trial, so a resumed study
    replays the search up to where it stopped and then goes on.
    """

    def __init__(self, space: Space, goal: Goal, settings: Mapping[str, Any], seed: int):
        super().__init__(space, goal, settings, seed)
        self._losses: dict[Key, float | None] = {}
        self._search = self.search()
        self._pending: Key | None = None
        self._started = False

    @abstractmethod
    def search(self) -> Generator[Params, float | None, None]:
        """Yield the parameters to measure; each yield returns their loss (None if the trial failed)."""

    def measured(self, params: Mapping[str, Any]) -> bool:
        return key(params) in self._losses

    def ask(self) -> Params | None:
        try:
            if not self._started:
                self._started = True
                params = next(self._search)
            else:
                params = self._search.send(self._losses.get(self._pending))
            while key(params) in self._losses:
                params = self._search.send(self._losses[key(params)])
        except StopIteration:
            return None
        self._pending = key(params)
        return params

    def tell(self, params: Params, value: float | None, sem: float | None = None,
             proposed_by: str | None = None) -> None:
        self._losses[key(params)] = self.loss(value)
