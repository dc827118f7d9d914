"""The buffer ladder of a study of time against memory (``buffer_ladder``): its first search trials are buffer sizes
spaced geometrically over the space's ``buffer_size`` range, from the smallest to the largest, each the defaults as
they run at that buffer (a page size they leave to the pager is the pager's choice for each region) or, in a
warm-started study, the warm start's best point at that buffer.

A front found by the strategy alone spans only the buffers it happens to try with good parameters (Ax, in 15
trials of bfs at 4 GiB, tried 1 GiB and 2 GiB only with slower parameters: a front of 3 points); the ladder puts a
point at every rung by construction, and the strategy goes on from there, told of the rungs as of any trial it did
not propose (autopager.tuner.first_points; Ax learns only of those in its space, like the defaults' own trial, and
counts the others toward its initialization).

A rung is the defaults themselves, not moved into the space: the pager reads read-only regions at a smaller page
than writable ones, which no single page size of the space says, and the space's nearest read-ahead can be none.
Moved into the evaluation space (1MiB pages, as for writable regions), lookup's rungs at 4 GiB ran at 247-1,103
lookups/s against the defaults' 2,019; at the read-only page with the read-ahead rounded to 0, bfs's 256MiB rung
timed out (results/time-memory-ladder-4gib/read-only-rungs).

A rung is the nearest sampled buffer to its geometric target, so a space of fewer buffers than rungs gets each of them
once; a rung whose point is not feasible (a warm start's page size larger than half the rung's buffer) is left out, and
so is the one that is the defaults' own point (measured already). The rungs are search trials: they count against the
budget, and the table's ``proposed_by`` says ``ladder``; a strategy that plans its trials (grid, random, Ax's
``strategy.trials``) plans the rungs outside its space besides its own (``FirstPoints.planned_trials``). A rung that
improves on the best is an improvement for the plateau (autopager.tuner.stopping); one that does not is no trial without
improvement, since the ladder is slower below the largest buffer on purpose.
"""
from __future__ import annotations

import math
from typing import Any

from autopager.errors import ConfigError
from autopager.tuner.space import Params, Space
from autopager.tuner.strategies.base import key

DEFAULT_RUNGS = 5
LADDER = "ladder"  # proposed_by of a rung's trial


def rung_count(setting: Any) -> int:
    """``buffer_ladder``: 0 (none) or the rungs, at least the smallest and the largest buffer."""
    if isinstance(setting, bool) or not isinstance(setting, int) or setting < 0 or setting == 1:
        raise ConfigError(f"buffer_ladder must be 0 (no ladder) or a whole number >= 2 (the smallest and the "
                          f"largest buffer at least), not {setting!r}")
    return setting


def rung_buffers(values: tuple[int, ...], count: int) -> list[int]:
    """``count`` buffers of the sampled ``values`` (ascending), geometric from the smallest to the largest: each
    target's nearest value on a log scale, each value once."""
    low, high = values[0], values[-1]
    targets = [low * (high / low) ** (rung / (count - 1)) for rung in range(count)]
    nearest = [min(values, key=lambda value: abs(math.log(value / target))) for target in targets]
    return list(dict.fromkeys(nearest))


def ladder(space: Space, count: int, at: Params | None = None) -> list[Params]:
    """The ladder's points, smallest buffer first: the defaults as run at each rung's buffer (``at``: that point)."""
    dimension = space.dimensions.get("buffer_size")
    if dimension is None or count == 0:
        return []
    points = [space.defaults_as_run(buffer) if at is None else {**at, "buffer_size": buffer}
              for buffer in rung_buffers(dimension.values, count)]
    return [point for point in points if space.feasible(point) and key(point) != key(space.defaults_as_run())]
