"""Only the defaults' run, which every study makes first: a reference measurement."""
from __future__ import annotations

from autopager.tuner.strategies.base import SearchStrategy


class DefaultStrategy(SearchStrategy):
    def planned_trials(self) -> int:
        return 0

    def search(self):
        yield from ()
