"""Ratios within interleaved rounds: contenders run one run each a round, and one of them (the tuned pager) is
compared with each other round by round, so that a disk whose speed drifts over hours moves both sides of a
ratio alike."""
from __future__ import annotations

from typing import Any

from autopager.tuner.confirmation import confirmed_speedup
from autopager.run.goal import Goal

TUNED = "tuned"


def same_round_ratios(record: dict[str, Any], base: str = TUNED) -> dict[str, tuple[float, float, float]]:
    """``base`` (the tuned pager) over each other contender of the record's runs (``round``, ``contender``,
    ``value``): the ratio of the medians and the range of the per-round ratios, over the rounds where both ran."""
    goal = Goal.parse(record["goal"])
    by_round: dict[str, dict[int, float]] = {}
    for run in record["runs"]:
        values = by_round.setdefault(run["contender"], {})
        if run["value"] is not None:
            values[run["round"]] = run["value"]
    ratios = {}
    based = by_round.get(base, {})
    for name, values in by_round.items():
        rounds = sorted(set(based) & set(values))
        if name == base or not rounds:
            continue
        speedup, (low, high) = confirmed_speedup(goal, [based[r] for r in rounds], [values[r] for r in rounds])
        ratios[name] = (speedup, low, high)
    return ratios
