"""The search strategies, one a module, behind the interface of ``base.Strategy``."""
from __future__ import annotations

import importlib
from typing import Any, Mapping

from autopager.errors import ConfigError
from autopager.space import Space
from autopager.strategies.base import Strategy

# name -> module and class, imported on use (Ax takes seconds to import)
STRATEGIES = {
    "ax": ("autopager.strategies.ax", "AxStrategy"),
    "grid": ("autopager.strategies.grid", "GridStrategy"),
    "coordinate": ("autopager.strategies.coordinate", "CoordinateStrategy"),
    "pagesize": ("autopager.strategies.pagesize", "PageSizeStrategy"),
    "random": ("autopager.strategies.random", "RandomStrategy"),
    "default": ("autopager.strategies.default", "DefaultStrategy"),
}


def make_strategy(name: str, space: Space, goal: str, settings: Mapping[str, Any], seed: int) -> Strategy:
    if name not in STRATEGIES:
        raise ConfigError(f"unknown strategy {name!r}; the strategies are: {', '.join(STRATEGIES)}")
    module, cls = STRATEGIES[name]
    return getattr(importlib.import_module(module), cls)(space, goal, settings, seed)
