"""Random search: parameter sets drawn uniformly from the space's sampled values, without repeats."""
from __future__ import annotations

import random

from autopager.tuner.strategies.base import Option, SearchStrategy, count


class RandomStrategy(SearchStrategy):
    OPTIONS = (Option("trials", 30, "parameter sets drawn (at most the space's size)", count),)

    def planned_trials(self) -> int:
        return min(self.settings["trials"] or 30, self.space.grid_size())

    def search(self):
        rng = random.Random(self.seed)
        for _ in range(100 * self.space.grid_size()):  # bounded: the space may be used up
            params = self.space.sample(rng)
            if not self.measured(params):
                yield params
