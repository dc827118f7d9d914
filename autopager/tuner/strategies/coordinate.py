"""Coordinate descent: from the defaults, line-search one parameter at a time (the others at the best point so
far) in a configurable order, moving to the best value found; sweep again until a sweep improves nothing.
The points of one line search are proposed together (they may run at the same time); the move waits for all."""
from __future__ import annotations

from autopager.tuner.space import Params
from autopager.tuner.strategies.base import WAIT, SearchStrategy


def better(loss: float | None, than: float | None, min_improvement: float) -> bool:
    if loss is None:
        return False
    return than is None or loss < than - min_improvement * abs(than)


class CoordinateStrategy(SearchStrategy):
    def planned_trials(self) -> None:
        return None

    def order(self) -> list[str]:
        searched = list(self.space.dimensions)
        named = [name for name in self.settings.get("order") or [] if name in searched]
        return named + [name for name in searched if name not in named]

    def search(self):
        min_improvement = float(self.settings.get("min_improvement", 0.0))
        current: Params = self.starting_point or self.space.start()
        yield current
        yield WAIT
        current_loss = self.loss_of(current)
        for _ in range(int(self.settings.get("max_sweeps", 3))):
            improved = False
            for name in self.order():
                line = [candidate for candidate in ({**current, name: value} for value in self.space.values(name))
                        if candidate != current and self.space.feasible(candidate)]
                yield from line
                yield WAIT
                best, best_loss = current, current_loss
                for candidate in line:
                    if better(self.loss_of(candidate), best_loss, 0.0):
                        best, best_loss = candidate, self.loss_of(candidate)
                if best is not current and better(best_loss, current_loss, min_improvement):
                    current, current_loss, improved = best, best_loss, True
            if not improved:
                return
