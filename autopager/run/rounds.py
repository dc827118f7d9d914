"""Interleaved rounds: each contender runs once a round, and the order turns by one each round, so that none always
runs first (whatever the first run of a round meets, a cold cache or a cooler CPU, falls on each in turn). The
confirmation, `autopager run run.rounds=N` and the evaluation order their rounds with ``in_turn``."""
from __future__ import annotations

from typing import Sequence, TypeVar

T = TypeVar("T")


def in_turn(items: Sequence[T], round_: int) -> list[T]:
    """The order of round ``round_`` (from 0): ``items`` turned by ``round_``."""
    turn = round_ % len(items)
    return [*items[turn:], *items[:turn]]
