"""Coordinate descent: from the defaults, line-search one parameter at a time (the others at the best point so
far) in a configurable order, moving to the best value found; sweep again until a sweep improves nothing.
The points of one line search are proposed together (they may run at the same time); the move waits for all."""
from __future__ import annotations

from autopager.tuner.space import Params
from autopager.tuner.strategies.base import WAIT, Option, SearchStrategy, count, parameters, share

ORDER = ("page_size", "fillers", "evictors", "evict_high_water", "evict_low_water", "evict_retain", "eviction",
         "huge_pages", "read_ahead", "read_ahead_run", "read_around", "max_fault_events", "buffer_size")


def better(loss: float | None, than: float | None, min_improvement: float) -> bool:
    if loss is None:
        return False
    return than is None or loss < than - min_improvement * abs(than)


class CoordinateStrategy(SearchStrategy):
    OPTIONS = (Option("order", list(ORDER), "the parameters in the order they are line-searched (the searched "
                      "ones not named come after)", parameters),
               Option("max_sweeps", 3, "sweeps over the parameters at most", count),
               Option("min_improvement", 0.01, "the relative gain a move must bring to count as an improvement", share))

    def planned_trials(self) -> None:
        return None

    def order(self) -> list[str]:
        searched = list(self.space.dimensions)
        named = [name for name in self.settings["order"] if name in searched]
        return named + [name for name in searched if name not in named]

    def search(self):
        min_improvement = self.settings["min_improvement"]
        current: Params = self.starting_point or self.space.start()
        yield current
        yield WAIT
        current_loss = self.loss_of(current)
        for _ in range(self.settings["max_sweeps"] or 3):
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
