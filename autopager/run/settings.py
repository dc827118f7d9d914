"""The study's numeric settings (budget, seed, runner), checked before anything runs.

Each is read from the resolved configuration and refused, with a message naming the setting and what it must be,
when it is not a number of the right kind or is out of range (``runner.timeout=0``, ``budget.trials=abc``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from autopager.errors import ConfigError

PAGE_CACHE_MODES = ("auto", "evict", "keep")


def _section(config: Mapping[str, Any], section: str) -> Mapping[str, Any]:
    return config.get(section) or {}


def whole(config: Mapping[str, Any], path: str, minimum: int, optional: bool = False) -> int | None:
    """The setting at ``path`` ("runner.repeats") as a whole number >= minimum (None allowed if optional)."""
    value = _lookup(config, path)
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{path} must be a whole number >= {minimum}{' or null' if optional else ''}, "
                          f"not {value!r}")
    return value


def number(config: Mapping[str, Any], path: str, minimum: float, *, above: bool = False,
           optional: bool = False) -> float | None:
    """The setting at ``path`` as a finite number >= minimum (> minimum if ``above``)."""
    value = _lookup(config, path)
    if value is None and optional:
        return None
    if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
            or value < minimum or (above and value == minimum)):
        bound = f"{'>' if above else '>='} {minimum:g}"
        raise ConfigError(f"{path} must be a number {bound}{' or null' if optional else ''}, not {value!r}")
    return float(value)


def _lookup(config: Mapping[str, Any], path: str) -> Any:
    section, _, name = path.rpartition(".")
    return _section(config, section).get(name) if section else config.get(name)


@dataclass(frozen=True)
class RunnerSettings:
    repeats: int = 1
    timeout: float | None = None          # seconds a run; None: derived from the defaults' time
    timeout_factor: float = 5.0
    timeout_floor: float = 10.0
    first_timeout: float = 3600.0
    page_cache: str = "auto"
    stderr_lines: int = 20
    cap: float | None = 2.0               # a search run stops at cap x the incumbent's time; None: never
    cap_floor: float = 5.0                # seconds: the least cap
    defaults_timeout: float | None = None  # seconds: the defaults' runs are measured in full unless this bounds them

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> "RunnerSettings":
        """From a configuration holding a ``runner`` section."""
        page_cache = _section(config, "runner").get("page_cache", "auto")
        if page_cache not in PAGE_CACHE_MODES:
            raise ConfigError(f"runner.page_cache must be one of {', '.join(PAGE_CACHE_MODES)}, not {page_cache!r}")
        return cls(repeats=whole(config, "runner.repeats", 1),
                   timeout=number(config, "runner.timeout", 0, above=True, optional=True),
                   timeout_factor=number(config, "runner.timeout_factor", 0, above=True),
                   timeout_floor=number(config, "runner.timeout_floor", 0),
                   first_timeout=number(config, "runner.first_timeout", 0, above=True),
                   page_cache=page_cache,
                   stderr_lines=whole(config, "runner.stderr_lines", 0),
                   cap=number(config, "runner.cap", 1, above=True, optional=True),
                   cap_floor=number(config, "runner.cap_floor", 0),
                   defaults_timeout=number(config, "runner.defaults_timeout", 0, above=True, optional=True))

    def run_timeout(self, workload_timeout: float | None, reference_seconds: float | None) -> float:
        """The one timeout rule: runner.timeout if given, else the workload's own, else timeout_factor x one run of
        the reference (the defaults', at least timeout_floor), or first_timeout before the reference has run."""
        if self.timeout is not None:
            return self.timeout
        if workload_timeout is not None:
            return float(workload_timeout)
        if reference_seconds is None:
            return self.first_timeout
        return max(self.timeout_floor, self.timeout_factor * reference_seconds)


@dataclass(frozen=True)
class NoiseSettings:
    defaults_runs: int = 3     # the defaults' runs during the search, the first included
    defaults_every: int = 5    # search trials between two of them
    max_runs: int = 3          # runs of a trial that comes within the noise of the incumbent, in all
    assumed: float = 0.05      # relative noise (standard deviation / mean) until the defaults have two runs

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> "NoiseSettings":
        return cls(defaults_runs=whole(config, "noise.defaults_runs", 1),
                   defaults_every=whole(config, "noise.defaults_every", 1),
                   max_runs=whole(config, "noise.max_runs", 1),
                   assumed=number(config, "noise.assumed", 0))


@dataclass(frozen=True)
class ConfirmSettings:
    rounds: int = 3            # rounds of the defaults and each candidate at the end; 0: no confirmation
    candidates: int = 3        # the best trials confirmed

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> "ConfirmSettings":
        return cls(rounds=whole(config, "confirm.rounds", 0), candidates=whole(config, "confirm.candidates", 1))


@dataclass(frozen=True)
class StudySettings:
    trials: int | None        # budget.trials
    minutes: float | None     # budget.minutes
    seed: int
    runner: RunnerSettings
    noise: NoiseSettings
    confirm: ConfirmSettings

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> "StudySettings":
        return cls(trials=whole(config, "budget.trials", 0, optional=True),
                   minutes=number(config, "budget.minutes", 0, above=True, optional=True),
                   seed=whole(config, "seed", 0),
                   runner=RunnerSettings.from_config(config), noise=NoiseSettings.from_config(config),
                   confirm=ConfirmSettings.from_config(config))
