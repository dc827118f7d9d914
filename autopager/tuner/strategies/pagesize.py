"""The paper's page-size-only line search: each page size of the space, the other parameters at the defaults
(or at the values the space fixes)."""
from __future__ import annotations

from autopager.tuner.space import Params
from autopager.tuner.strategies.base import SearchStrategy, key


class PageSizeStrategy(SearchStrategy):
    def base(self) -> Params:
        space = self.space
        base = space.complete({name: value for name, value in space.defaults.items() if name in space.dimensions})
        return base if space.feasible(base) else space.start()

    def plan(self) -> list[Params]:
        base = self.base()
        return [{**base, "page_size": page_size} for page_size in self.space.values("page_size")]

    def planned_trials(self) -> int:
        return sum(key(params) != key(self.space.defaults) for params in self.plan())

    def search(self):
        yield from self.plan()
