"""The search strategies, one a module, behind the interface of ``base.Strategy``."""
from __future__ import annotations

import importlib
from typing import Any, Mapping

from autopager.errors import ConfigError
from autopager.parameters import PARAMETERS
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


def check_settings(settings: Mapping[str, Any]) -> None:
    """Refuse bad strategy settings before the study starts."""
    name = settings.get("name")
    if name not in STRATEGIES:
        raise ConfigError(f"unknown strategy {name!r}; the strategies are: {', '.join(STRATEGIES)}")
    for count in ("trials", "initialization_trials", "max_sweeps", "threads", "acquisition_restarts",
                  "acquisition_raw_samples"):
        value = settings.get(count)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise ConfigError(f"strategy.{count} must be a positive integer, not {value!r}")
    unknown = [p for p in settings.get("order") or [] if p not in PARAMETERS]
    if unknown:
        raise ConfigError(f"strategy.order: unknown parameter(s) {unknown}; the parameters are: {', '.join(PARAMETERS)}")


def make_strategy(name: str, space: Space, goal: Goal, settings: Mapping[str, Any], seed: int) -> Strategy:
    module, cls = STRATEGIES[name]
    return getattr(importlib.import_module(module), cls)(space, goal, settings, seed)
