"""Grid search: every feasible combination of the space's sampled values (the paper's exhaustive baseline).

The points come in an order shuffled with the seed, so a grid cut short by ``budget.trials`` is an even sample of
the whole space, not a sweep of its last parameter.
"""
from __future__ import annotations

import random

from autopager.tuner.strategies.base import SearchStrategy


class GridStrategy(SearchStrategy):
    def planned_trials(self) -> int:
        return self.space.grid_size() - self.space.contains(self.space.defaults)  # the defaults are measured first

    def search(self):
        points = list(self.space.grid())
        random.Random(self.seed).shuffle(points)
        yield from points
