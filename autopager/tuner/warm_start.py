"""Warm start (``warm_start=STUDY_DIR_OR_PROFILE``): the new study measures first the best points of an earlier
study, or a profile's parameters, and its strategy goes on from them.

The seeds are at most ``SEEDS`` points: the earlier study's best distinct ``ok`` search trials (its defaults aside:
this study measures its own), or the one point of a profile. Each is moved into this study: where the two studies'
buffers differ (the small-to-large transfer), a searched ``buffer_size`` is scaled by the ratio of this study's
``workload.buffer_size`` to the earlier one's; then every searched parameter takes the space's sampled value
nearest to the seed's, and every other parameter this study's own value. Seeds that land on one point are one.

Across sizes, each seed is measured twice: as it was and with this study's own watermarks (``evict_high_water``,
``evict_low_water``, their values in the defaults). The watermarks set how far eviction empties the buffer, and what
that evicts depends on what is hot in the data, which changes with its size: lookup's small study (1 GiB of data,
a 256 MiB buffer) had all its best points at a low watermark of 10%; at 4 GiB they ran at 0.66-0.82x the cold
study's best, found at low watermarks of 80-90% (results/warm-start-4gib).

The seeds are run here, as this study's first search trials (they count against its budget; the table's
``proposed_by`` is ``warm:<origin>``): the earlier study's figures are never taken for this study's, since they
were measured at another size, another time or on another machine. They are proposed before the strategy's own
points, and the strategy starts from the best of them (autopager.tuner.first_points). The study measures and
confirms against its defaults as any other.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping

import yaml

from autopager.errors import ConfigError
from autopager.parameters import HIGH, LOW, parse_size
from autopager.profiles import ProfileError, find_profile, looks_like_path
from autopager.run.goal import Goal
from autopager.tuner.space import Params, Space
from autopager.tuner.strategies.base import Key, key
from autopager.tuner.study_directory import CONFIG, TABLE
from autopager.tuner.table import StudyTable
from autopager.tuner.trial import Kind, Status

SEEDS = 5         # the points that seed this one at most
ORIGIN = "warm:"  # proposed_by of a seed's trial: warm:<the earlier study's directory or the profile's name>


def _buffer(value: Any) -> int | None:
    return None if value is None else parse_size(value)


def _study_seeds(directory: Path, goal: Goal) -> tuple[list[Params], int | None]:
    """The best distinct ok search trials of the study in ``directory``, best first, and its workload's buffer."""
    config = yaml.safe_load((directory / CONFIG).read_text()) if (directory / CONFIG).is_file() else {}
    rows = [row for row in StudyTable(directory / TABLE).rows
            if row.kind is Kind.SEARCH and row.status is Status.OK]
    rows.sort(key=lambda row: goal.loss(row.value))
    return [dict(row.params) for row in rows], _buffer(((config or {}).get("workload") or {}).get("buffer_size"))


WATERMARKS = (HIGH, LOW)  # measured beside each seed at this study's own values when the size differs


def moved(params: Mapping[str, Any], space: Space, ratio: float | None) -> Params | None:
    """A seed's parameters in ``space``: its buffer scaled by ``ratio`` where the buffer is searched, each searched
    parameter at the nearest sampled value, the others the space's own; None if no feasible point."""
    seed = dict(params)
    if ratio is not None and seed.get("buffer_size") is not None:
        seed["buffer_size"] = int(seed["buffer_size"] * ratio)
    searched = {}
    for name, dimension in space.dimensions.items():
        value = seed.get(name)
        if value is None:
            continue
        if dimension.categorical:
            if value in dimension.values:
                searched[name] = value
        else:
            # nearest on a log scale where the values are positive (the spaces sample sizes by factors)
            logarithmic = min(dimension.values) > 0 and value > 0
            searched[name] = min(dimension.values, key=lambda v: abs(math.log(v / value)) if logarithmic
                                 else abs(v - value))
    start = space.start()
    point = space.complete({**{name: start[name] for name in space.dimensions}, **searched})
    return point if space.feasible(point) else None


def with_own_watermarks(point: Params, space: Space) -> Params:
    """``point`` with the watermarks this study starts from (its defaults' in the space) where they are searched."""
    start = space.start()
    return {**point, **{name: start[name] for name in WATERMARKS if name in space.dimensions}}


def seeds(setting: str, space: Space, goal: Goal, buffer_size: int | None, profile_dir: Path) -> tuple[list[Params], str]:
    """The points that seed a study (``warm_start``), moved into its space, and their origin for the table."""
    path = Path(setting).expanduser()
    if path.is_dir():
        if not (path / TABLE).is_file():
            raise ConfigError(f"warm_start={setting}: the directory holds no study table ({TABLE})")
        points, earlier_buffer = _study_seeds(path, goal)
        if not points:
            raise ConfigError(f"warm_start={setting}: the study has no ok search trial to start from")
        origin = f"{ORIGIN}{path.parent.name}/{path.name}"
    else:
        try:
            profile = find_profile(setting, profile_dir)
        except ProfileError as error:
            where = "" if looks_like_path(setting) else " (nor a study directory)"
            raise ConfigError(f"warm_start={setting}: {error}{where}") from None
        points, earlier_buffer = [profile.params], _buffer(profile.found_for.get("buffer"))
        origin = f"{ORIGIN}{profile.name}"
    ratio = buffer_size / earlier_buffer if buffer_size and earlier_buffer else None
    unique: dict[Key, Params] = {}
    for params in points:
        point = moved(params, space, ratio)
        if point is None:
            continue
        for seed in (point, with_own_watermarks(point, space)) if ratio not in (None, 1) else (point,):
            if len(unique) < SEEDS:
                unique.setdefault(key(seed), seed)
        if len(unique) == SEEDS:
            break
    return list(unique.values()), origin
