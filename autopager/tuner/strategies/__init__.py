"""The search strategies, one a module, behind the interface of ``base.Strategy``."""
from __future__ import annotations

import importlib
from typing import Any, Mapping

from autopager.errors import ConfigError
from autopager.run.goal import Goal
from autopager.tuner.space import Space
from autopager.tuner.strategies.base import Strategy

# name -> module and class, imported on use (Ax takes seconds to import)
STRATEGIES = {
    "ax": ("autopager.tuner.strategies.ax", "AxStrategy"),
    "grid": ("autopager.tuner.strategies.grid", "GridStrategy"),
    "coordinate": ("autopager.tuner.strategies.coordinate", "CoordinateStrategy"),
    "pagesize": ("autopager.tuner.strategies.pagesize", "PageSizeStrategy"),
    "random": ("autopager.tuner.strategies.random", "RandomStrategy"),
    "default": ("autopager.tuner.strategies.default", "DefaultStrategy"),
}


def strategy_class(name: Any) -> type[Strategy]:
    if name not in STRATEGIES:
        raise ConfigError(f"unknown strategy {name!r}; the strategies are: {', '.join(STRATEGIES)}")
    module, cls = STRATEGIES[name]
    return getattr(importlib.import_module(module), cls)


def check_settings(settings: Mapping[str, Any]) -> None:
    """Refuse bad strategy settings before the study starts (each strategy's ``OPTIONS``)."""
    strategy_class(settings.get("name")).checked(settings)


def make_strategy(name: str, space: Space, goal: Goal, settings: Mapping[str, Any], seed: int,
                  objective: Mapping[str, Any] | None = None) -> Strategy:
    return strategy_class(name)(space, goal, settings, seed, objective)
