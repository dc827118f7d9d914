"""The points a study measures before its strategy proposes any: a warm start's seeds (autopager.tuner.warm_start)
and the buffer ladder of a study of time against memory (autopager.tuner.buffer_ladder), in that order.

``FirstPoints`` wraps the study's strategy. It proposes each point that has not been measured yet, with its origin
as ``proposed_by`` (``warm:<origin>``, ``ladder``), and none while the defaults' point it is told to expect is in
flight; a point already told (the defaults' own, a resumed study's trial) is not proposed again. Once every point
has ended it hands over to the strategy, started from the best warm seed (``Strategy.start_from``: coordinate
descent's first point; the others ignore it). The strategy is told each of them as of any trial it did not propose
(Ax attaches them to its experiment, ahead of its own Sobol points). A resumed study tells the wrapper its rows
first, so it proposes only the points still missing and starts from the same seed again.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from autopager.tuner.space import Params
from autopager.tuner.strategies.base import Key, Strategy, key
from autopager.tuner.warm_start import ORIGIN as WARM


class FirstPoints(Strategy):
    def __init__(self, inner: Strategy, points: list[tuple[Params, str]]):
        """``points``: (parameters, origin), measured in that order; a point given twice is measured once."""
        super().__init__(inner.space, inner.goal, inner.settings, inner.seed, inner.objective)
        self.inner = inner
        self.points: dict[Key, tuple[Params, str]] = {}
        for params, origin in points:
            self.points.setdefault(key(params), (params, origin))
        self.losses: dict[Key, float | None] = {}
        self.asked: set[Key] = set()
        self.expected: Key | None = None
        self.started = False

    @classmethod
    def checked(cls, settings: Mapping[str, Any]) -> dict[str, Any]:
        return dict(settings)  # the inner strategy's, checked by it

    def planned_trials(self) -> int | None:
        """The strategy's plan and the points outside its space, which it never proposes or counts."""
        planned = self.inner.planned_trials()
        outside = sum(not self.space.contains(params) for params, _ in self.points.values())
        return None if planned is None else planned + outside

    def save(self, directory: Path) -> None:
        self.inner.save(directory)

    def expect(self, params: Params | None) -> None:
        self.expected = None if params is None else key(params)
        self.inner.expect(params)

    def modelled_best(self) -> tuple[Params, float, float | None] | None:
        return self.inner.modelled_best()

    def ask(self) -> Params | None:
        for point, (params, origin) in self.points.items():
            if point not in self.losses and point not in self.asked and point != self.expected:
                self.asked.add(point)
                self.proposed_by = origin
                return params
        if self.asked or (self.expected in self.points and self.expected not in self.losses):
            return None  # the strategy starts once every point has ended
        if not self.started:
            seeds = [(loss, params) for point, (params, origin) in self.points.items()
                     if origin.startswith(WARM) and (loss := self.losses.get(point)) is not None]
            if seeds:
                self.inner.start_from(min(seeds, key=lambda pair: pair[0])[1])
            self.started = True
        params = self.inner.ask()
        self.proposed_by = self.inner.proposed_by
        return params

    def tell(self, params: Params, value: float | None, sem: float | None = None,
             proposed_by: str | None = None, memory: float | None = None) -> None:
        if key(params) in self.points:
            self.asked.discard(key(params))
            self.losses[key(params)] = self.loss(value)
        self.inner.tell(params, value, sem, proposed_by=proposed_by, memory=memory)
