"""The paper's page-size-only line search: each page size of the space, the other parameters at the defaults."""
from __future__ import annotations

from autopager.strategies.base import SearchStrategy


class PageSizeStrategy(SearchStrategy):
    def planned_trials(self) -> int:
        return len(self.space.values("page_size"))

    def search(self):
        start = self.space.start()
        for page_size in self.space.values("page_size"):
            yield {**start, "page_size": page_size}
