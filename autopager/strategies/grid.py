"""Grid search: every feasible combination of the space's sampled values (the paper's exhaustive baseline)."""
from __future__ import annotations

from autopager.strategies.base import SearchStrategy


class GridStrategy(SearchStrategy):
    def planned_trials(self) -> int:
        return self.space.grid_size() - self.space.contains(self.space.defaults)  # the defaults are measured first

    def search(self):
        yield from self.space.grid()
