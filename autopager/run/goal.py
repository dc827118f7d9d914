"""The direction of a workload's metric: seconds are minimized, throughputs maximized."""
from __future__ import annotations

import enum
from typing import Callable, Iterable, TypeVar

T = TypeVar("T")


class Goal(str, enum.Enum):
    MINIMIZE = "minimize"
    MAXIMIZE = "maximize"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def parse(cls, text: object) -> "Goal":
        try:
            return cls(str(text))
        except ValueError:
            raise ValueError(f"must be {' or '.join(goal.value for goal in cls)}, not {text!r}") from None

    def better(self, value: float, than: float) -> bool:
        """Whether ``value`` is strictly better than ``than``."""
        return value < than if self is Goal.MINIMIZE else value > than

    def best(self, items: Iterable[T], key: Callable[[T], float]) -> T:
        return (min if self is Goal.MINIMIZE else max)(items, key=key)

    def loss(self, value: float) -> float:
        """What is minimized: the value, negated when it is to be maximized."""
        return value if self is Goal.MINIMIZE else -value

    def speedup(self, value: float, reference: float) -> float:
        """How many times better ``value`` is than ``reference`` (above 1: better)."""
        if self is Goal.MINIMIZE:
            return reference / value if value > 0 else float("inf")
        return value / reference if reference > 0 else float("inf")

    def worse_by(self, value: float, factor: float) -> float:
        """``value`` made ``factor`` times worse: a capped trial's bound."""
        return value * factor if self is Goal.MINIMIZE else value / factor


def speedup(value: float, reference: float, goal: str) -> float:
    """``Goal.speedup`` for a goal given by its name (``minimize``, ``maximize``), as a study read back has it."""
    return Goal.parse(goal).speedup(value, reference)
