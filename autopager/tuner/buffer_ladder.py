"""The buffer ladder of a study of time against memory (``buffer_ladder``): its first search trials are buffer sizes
spaced geometrically over the space's ``buffer_size`` range, from the smallest to the largest, each at the defaults'
other parameters (a page size the defaults leave to the pager is the one it chooses for that buffer) or, in a
warm-started study, at the warm start's best point.

A front found by the strategy alone spans only the buffers it happens to try with good parameters (Ax, in 15
trials of bfs at 4 GiB, tried 1 GiB and 2 GiB only with slower parameters: a front of 3 points); the ladder puts a
point at every rung by construction, and the strategy goes on from there, told of the rungs as of any trial it did
not propose (autopager.tuner.first_points). A rung is the nearest sampled buffer to its geometric target, so a space
of fewer buffers than rungs gets each of them once; a rung whose point is not feasible (a warm start's page size
larger than half the rung's buffer) is left out, and so is the one that is the defaults' own point (measured
already). The rungs are search trials: they count against the budget, and the table's ``proposed_by`` says
``ladder``. A rung that improves on the best is an improvement for the plateau (autopager.tuner.stopping); one that
does not is no trial without improvement, since the ladder is slower below the largest buffer on purpose.
"""
from __future__ import annotations

import math
from typing import Any

from autopager.errors import ConfigError
from autopager.tuner.space import Params, Space

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
    """The ladder's points, smallest buffer first: the defaults at each rung's buffer (``at``: that point instead)."""
    dimension = space.dimensions.get("buffer_size")
    if dimension is None or count == 0:
        return []
    points = [space.start(buffer) if at is None else {**at, "buffer_size": buffer}
              for buffer in rung_buffers(dimension.values, count)]
    return [point for point in points if space.feasible(point)]
