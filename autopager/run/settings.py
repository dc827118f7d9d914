"""The study's numeric settings (budget, seed, runner, noise, confirmation): typed, and checked when they are made.

Each settings class checks its fields in ``__post_init__`` (autopager.checks: a setting that is not a number of
the right kind, or is out of range, is refused with a message naming it and what it must be:
``runner.timeout=0``, ``budget.trials=abc``), so no settings object holds a value the tuner would refuse;
``from_config`` only reads the resolved configuration's sections.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping

from autopager.checks import number, one_of, whole

PAGE_CACHE_MODES = ("auto", "evict", "keep")


def _section(config: Mapping[str, Any], section: str) -> Mapping[str, Any]:
    return config.get(section) or {}


def _checked(settings: Any, **values: Any) -> None:
    """Set a frozen settings object's fields to their checked values (numbers as floats)."""
    for name, value in values.items():
        object.__setattr__(settings, name, value)


def _fields(cls: type, section: Mapping[str, Any]) -> dict[str, Any]:
    """The values a section gives the fields of a settings class (the others keep their defaults)."""
    return {field.name: section[field.name] for field in dataclasses.fields(cls) if field.name in section}


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

    def __post_init__(self) -> None:
        _checked(
            self,
            page_cache=one_of("runner.page_cache", self.page_cache, PAGE_CACHE_MODES),
            repeats=whole("runner.repeats", self.repeats, 1),
            timeout=number("runner.timeout", self.timeout, 0, above=True, optional=True),
            timeout_factor=number("runner.timeout_factor", self.timeout_factor, 0, above=True),
            timeout_floor=number("runner.timeout_floor", self.timeout_floor, 0),
            first_timeout=number("runner.first_timeout", self.first_timeout, 0, above=True),
            stderr_lines=whole("runner.stderr_lines", self.stderr_lines, 0),
            cap=number("runner.cap", self.cap, 1, above=True, optional=True),
            cap_floor=number("runner.cap_floor", self.cap_floor, 0),
            defaults_timeout=number("runner.defaults_timeout", self.defaults_timeout, 0, above=True, optional=True))

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> "RunnerSettings":
        """From a configuration holding a ``runner`` section."""
        return cls(**_fields(cls, _section(config, "runner")))

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

    def __post_init__(self) -> None:
        _checked(
            self,
            defaults_runs=whole("noise.defaults_runs", self.defaults_runs, 1),
            defaults_every=whole("noise.defaults_every", self.defaults_every, 1),
            max_runs=whole("noise.max_runs", self.max_runs, 1),
            assumed=number("noise.assumed", self.assumed, 0))

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> "NoiseSettings":
        return cls(**_fields(cls, _section(config, "noise")))


@dataclass(frozen=True)
class ConfirmSettings:
    rounds: int = 3            # rounds of the defaults and each candidate at the end; 0: no confirmation
    candidates: int = 3        # the best trials confirmed

    def __post_init__(self) -> None:
        _checked(
            self,
            rounds=whole("confirm.rounds", self.rounds, 0),
            candidates=whole("confirm.candidates", self.candidates, 1))

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> "ConfirmSettings":
        return cls(**_fields(cls, _section(config, "confirm")))


@dataclass(frozen=True)
class StudySettings:
    trials: int | None        # budget.trials
    minutes: float | None     # budget.minutes
    seed: int
    runner: RunnerSettings
    noise: NoiseSettings
    confirm: ConfirmSettings

    def __post_init__(self) -> None:
        _checked(
            self,
            trials=whole("budget.trials", self.trials, 0, optional=True),
            minutes=number("budget.minutes", self.minutes, 0, above=True, optional=True),
            seed=whole("seed", self.seed, 0))

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> "StudySettings":
        budget = _section(config, "budget")
        return cls(trials=budget.get("trials"), minutes=budget.get("minutes"), seed=config.get("seed"),
                   runner=RunnerSettings.from_config(config), noise=NoiseSettings.from_config(config),
                   confirm=ConfirmSettings.from_config(config))
