"""The one check of a setting's value: a whole number, a number, one of some choices. Every refusal is a
ConfigError of one line naming the setting, what it must be and the value given
(``runner.repeats must be a whole number >= 1, not 0``); the typed settings (autopager.run.settings, the
launcher's, the strategies') call these when they are made, and so does every command that reads a setting.
"""
from __future__ import annotations

import math
from typing import Any, Sequence, TypeVar

from autopager.errors import ConfigError

T = TypeVar("T")


def _or_null(optional: bool) -> str:
    return " or null" if optional else ""


def whole(name: str, value: Any, minimum: int, optional: bool = False) -> int | None:
    """``value`` as a whole number >= minimum (None allowed if optional)."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{name} must be a whole number >= {minimum}{_or_null(optional)}, not {value!r}")
    return value


def number(name: str, value: Any, minimum: float, *, above: bool = False, optional: bool = False) -> float | None:
    """``value`` as a finite number >= minimum (> minimum if ``above``; None allowed if optional)."""
    if value is None and optional:
        return None
    if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
            or value < minimum or (above and value == minimum)):
        bound = f"{'>' if above else '>='} {minimum:g}"
        raise ConfigError(f"{name} must be a number {bound}{_or_null(optional)}, not {value!r}")
    return float(value)


def flag(name: str, value: Any) -> bool:
    """``value``, true or false."""
    if not isinstance(value, bool):
        raise ConfigError(f"{name} must be true or false, not {value!r}")
    return value


def one_of(name: str, value: Any, choices: Sequence[T]) -> T:
    """``value``, one of ``choices``."""
    if value not in choices:
        raise ConfigError(f"{name} must be one of {', '.join(map(str, choices))}, not {value!r}")
    return value
