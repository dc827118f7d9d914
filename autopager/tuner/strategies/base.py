"""The common interface of the search strategies.

A strategy proposes one parameter set at a time (``ask``) and learns the outcome of each (``tell``). It may
be asked again before the outcomes of earlier proposals are told (several trials in flight, on several
nodes); ``ask`` returns None when it has nothing to propose until one of them is told, or when it is done
(the study tells those apart by whether trials are in flight). It is also told outcomes it did not ask for:
the defaults' run that starts every study, and the finished trials of a resumed study (with what had proposed
each), so that it continues where it stopped. A failed trial is told as ``None``; a trial measured more than
once comes with the standard error of its mean; a capped trial is told as a value worse than the incumbent's
(the study's ``told``), never as the time it ran before it was stopped. ``proposed_by`` names what proposed
the last parameters asked for, for the study's table. With several workers the strategy is asked while the
defaults' first run is still in flight: it is told to ``expect`` that point, so as not to propose it.

Each strategy declares its options (``OPTIONS``: name, default, help, check), beside its code; ``checked`` reads
them from the study's ``strategy`` section, checks each, and refuses a key that is none of them. The strategy's
file in configs/strategy/ gives the same options with the same defaults (tests/tuner/test_strategies.py).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Generator, Mapping

from autopager.checks import number, whole
from autopager.errors import ConfigError
from autopager.parameters import check_names
from autopager.run.goal import Goal
from autopager.tuner.space import Params, Space

Key = tuple


def key(params: Mapping[str, Any]) -> Key:
    return tuple(sorted(params.items()))


def count(name: str, value: Any) -> int | None:
    return whole(name, value, 1, optional=True)


def share(name: str, value: Any) -> float:
    return number(name, value, 0)


def parameters(name: str, value: Any) -> list[str]:
    try:
        check_names(value or [], name)
    except ValueError as error:
        raise ConfigError(str(error)) from None
    return list(value or [])


@dataclass(frozen=True)
class Option:
    """A strategy's setting (``strategy.NAME``): its default, what it does, and its check (setting, value) -> value."""
    name: str
    default: Any
    help: str
    check: Callable[[str, Any], Any]


class Strategy(ABC):
    OPTIONS: tuple[Option, ...] = ()

    def __init__(self, space: Space, goal: Goal, settings: Mapping[str, Any], seed: int,
                 objective: Mapping[str, Any] | None = None):
        """``objective``: what the study optimizes beyond its metric (autopager.tuner.memory_front), for the
        strategies that weigh it themselves (Ax); not a strategy option."""
        self.space = space
        self.goal = Goal.parse(goal)
        self.settings = self.checked(settings)
        self.objective = dict(objective or {})
        self.seed = seed
        self.proposed_by: str | None = None
        self.starting_point: Params | None = None

    @classmethod
    def checked(cls, settings: Mapping[str, Any]) -> dict[str, Any]:
        """The strategy's options from its settings, each checked (its default where not given); a key that is no
        option of the strategy is refused, naming the options it has."""
        declared = {option.name: option for option in cls.OPTIONS}
        unknown = sorted(set(settings) - set(declared) - {"name"})
        if unknown:
            options = ", ".join(f"strategy.{name}" for name in declared) or "none"
            raise ConfigError(f"strategy.{unknown[0]}: not an option of strategy {settings.get('name')}; its options "
                              f"are: {options}")
        return {name: option.check(f"strategy.{name}", settings.get(name, option.default))
                for name, option in declared.items()}

    def loss(self, value: float | None) -> float | None:
        """What the strategies minimize: the metric, negated when it is to be maximized."""
        return None if value is None else self.goal.loss(value)

    def planned_trials(self) -> int | None:
        """How many trials the strategy means to run, if it knows."""
        return self.settings.get("trials")  # of the strategies that have the option

    def start_from(self, params: Params) -> None:
        """Start the search from ``params`` (a warm start's best seed) instead of the defaults, before the first ask
        that is the strategy's own; a strategy with no starting point (Ax, random search) learns of it as told."""
        self.starting_point = params

    def save(self, directory: Path) -> None:
        """Keep the strategy's own state in the study's directory, for its analysis (most keep none)."""

    def expect(self, params: Params | None) -> None:
        """``params`` are being measured without having been asked for (the defaults' first run): not to be proposed,
        and waited for like a proposal in flight, until told. None: no longer (its outcome is about to be told,
        perhaps of other parameters: the page size the pager chose). Ax's proposals need no such care."""

    @abstractmethod
    def ask(self) -> Params | None:
        """The next parameters to measure, or None when the strategy is done."""

    @abstractmethod
    def tell(self, params: Params, value: float | None, sem: float | None = None,
             proposed_by: str | None = None, memory: float | None = None) -> None:
        """The metric of ``params`` (None: the trial failed) and its standard error (None: one run); ``proposed_by``:
        for a trial the strategy did not just ask for, what had proposed it (of an earlier run), if anything;
        ``memory``: the trial's memory (autopager.tuner.memory_front), for a strategy that weighs it (Ax)."""

    def modelled_best(self) -> tuple[Params, float, float | None] | None:
        """The best parameters by the strategy's model, with its predicted value and standard error, if it has one."""
        return None


class Wait:
    """Yielded by a search where it needs the losses of everything it yielded before."""


WAIT = Wait()


class SearchStrategy(Strategy):
    """A strategy written as a generator: ``search`` yields the parameter sets to measure, which may run at
    the same time, and ``WAIT`` where it needs their losses, then read with ``loss_of``.

    Parameter sets already measured (told) are answered from memory without a trial, so a resumed study
    replays the search up to where it stopped and then goes on.
    """

    def __init__(self, space: Space, goal: Goal, settings: Mapping[str, Any], seed: int,
                 objective: Mapping[str, Any] | None = None):
        super().__init__(space, goal, settings, seed, objective)
        self._losses: dict[Key, float | None] = {}
        self._asked: set[Key] = set()      # proposed (or expected), not yet told
        self._expected: Key | None = None
        self._search = self.search()
        self._waiting = False

    @abstractmethod
    def search(self) -> Generator[Params | Wait, None, None]:
        """Yield the parameters to measure, and ``WAIT`` before reading their losses."""

    def measured(self, params: Mapping[str, Any]) -> bool:
        """Told, or proposed and in flight."""
        return key(params) in self._losses or key(params) in self._asked

    def loss_of(self, params: Mapping[str, Any]) -> float | None:
        return self._losses.get(key(params))

    def ask(self) -> Params | None:
        try:
            while True:
                if self._waiting and self._asked:
                    return None
                self._waiting = False
                item = next(self._search)
                if isinstance(item, Wait):
                    self._waiting = True
                elif key(item) not in self._losses and key(item) != self._expected:
                    self._asked.add(key(item))
                    return item
        except StopIteration:
            return None

    def tell(self, params: Params, value: float | None, sem: float | None = None,
             proposed_by: str | None = None, memory: float | None = None) -> None:
        self._losses[key(params)] = self.loss(value)
        self._asked.discard(key(params))

    def expect(self, params: Params | None) -> None:
        if self._expected is not None:
            self._asked.discard(self._expected)
        self._expected = None if params is None else key(params)
        if self._expected is not None:
            self._asked.add(self._expected)
