"""Time against memory: each trial's memory, the Pareto front of a study's trials (metric against memory), the rule
that chooses one point of it (``select``), and the memory bound of a single-objective study (``constraint.memory``).

A trial's memory (``memory_bytes``) is the pager's peak of resident pages (the table's ``resident_bytes``), else the
peak of its memory cgroup where the runs had one (``cgroup_peak_bytes``: a program that prints no pager statistics),
else its buffer size. The cgroup's peak is recorded beside it but is not the figure where the pager's is known: it
counts the page cache the program fills through its own reads and writes, which the kernel takes back under a limit
(sort rewrites its 4 GiB input before it maps it: each of its trials peaked at 4.45 GB whatever its buffer), while
what the program holds beside the pager (its own arrays) is the same in every trial.

The front is made of the ``ok`` search and defaults' trials that no other such trial dominates (as good or better in
both, better in one). Memory is compared with the buffer as its tie-break: where the data fits, buffers of 4 and 8
GiB peak at the same resident bytes, and the smaller stays on the front however the noise orders their figures, so
that a rule choosing the least memory chooses the smaller buffer. ``smallest_within:P%`` chooses the least memory
whose figure is within P% of the front's best, ``fastest_within:SIZE`` the best figure within SIZE of memory. After
the search, a point whose one run could turn the choice within the noise is measured again, up to noise.max_runs
runs (``Objective.unsettled``). The confirmation runs the chosen point and the front's fastest in the same
interleaved rounds, with the defaults (autopager.tuner.front_confirmation); its result is the chosen point's,
however the fastest fares.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Mapping

from autopager.errors import ConfigError
from autopager.parameters import format_size, parse_size
from autopager.run.goal import Goal
from autopager.tuner.measuring import NOISE_BAND, measured_defaults
from autopager.tuner.trial import Kind, Status, Trial

METRIC, METRIC_AND_MEMORY = "metric", "metric_and_memory"  # objective=
OBJECTIVES = (METRIC, METRIC_AND_MEMORY)
SMALLEST_WITHIN, FASTEST_WITHIN = "smallest_within", "fastest_within"
DEFAULT_SELECT = f"{SMALLEST_WITHIN}:10%"


def memory_bytes(row: Trial) -> float | None:
    """A trial's memory: the pager's peak of resident pages, else its cgroup's peak where measured, else its buffer."""
    return row.stats.get("resident_bytes") or row.cgroup_peak_bytes or row.params.get("buffer_size")


def footprint(row: Trial) -> tuple[float, float]:
    """A trial's memory, then its buffer: the order in which the front and ``select`` weigh memory."""
    memory = memory_bytes(row)
    return memory, row.params.get("buffer_size") or memory


def front(rows: Iterable[Trial], goal: Goal) -> list[Trial]:
    """The trials on the Pareto front of figure against memory, least memory first."""
    points = [row for row in rows if row.kind in (Kind.DEFAULT, Kind.SEARCH) and row.status is Status.OK
              and memory_bytes(row) is not None]

    def dominates(a: Trial, b: Trial) -> bool:
        la, lb, ma, mb = goal.loss(a.value), goal.loss(b.value), footprint(a), footprint(b)
        return la <= lb and ma <= mb and (la < lb or ma < mb)

    kept = [row for row in points if not any(dominates(other, row) for other in points)]
    unique: dict[tuple[tuple[float, float], float], Trial] = {}
    for row in sorted(kept, key=lambda row: (footprint(row), goal.loss(row.value), row.number)):
        unique.setdefault((footprint(row), row.value), row)  # equal points: the first trial stands for them
    return list(unique.values())


def confirmed_as(row: Trial, rows: list[Trial]) -> int:
    """The trial the confirmation runs of a front's point name (``confirms``): the point itself, or for a run of the
    defaults the defaults' first trial, whose point the confirmation's defaults' runs measure."""
    reference = measured_defaults(rows)
    return reference.number if row.kind is Kind.DEFAULT and reference is not None else row.number


@dataclasses.dataclass(frozen=True)
class Selection:
    """A rule choosing one point of the front (``select=``)."""
    rule: str
    bound: float  # a fraction of the best figure (smallest_within) or bytes (fastest_within)

    @classmethod
    def parse(cls, text: Any) -> "Selection":
        rule, _, bound = str(text).partition(":")
        try:
            if rule == SMALLEST_WITHIN and bound.endswith("%"):
                return cls(rule, float(bound[:-1]) / 100)
            if rule == FASTEST_WITHIN:
                return cls(rule, float(parse_size(bound)))
        except ValueError:
            pass
        raise ConfigError(f"select must be {SMALLEST_WITHIN}:P% (the least memory within P% of the best figure) or "
                          f"{FASTEST_WITHIN}:SIZE (the best figure within SIZE of memory), not {text!r}")

    def describe(self) -> str:
        if self.rule == SMALLEST_WITHIN:
            return f"the least memory within {100 * self.bound:g}% of the best"
        return f"the best within {format_size(int(self.bound))} of memory"

    def contested(self, points: list[Trial], goal: Goal, noise: float) -> list[Trial]:
        """The points of the front whose figures could turn the choice within the noise (NOISE_BAND x ``noise``, a
        fraction of the figure): for ``smallest_within`` the best figure, which sets the bound, and those within the
        noise of the bound; for ``fastest_within`` those within SIZE and within the noise of the best there."""
        band = NOISE_BAND * noise
        if self.rule == SMALLEST_WITHIN:
            if not points:
                return []
            best = goal.best(points, key=lambda row: row.value)
            edge = 1 / (1 + self.bound)
            return [row for row in points if row is best or abs(goal.speedup(row.value, best.value) - edge) <= band]
        within = [row for row in points if memory_bytes(row) <= self.bound]
        if not within:
            return []
        best = goal.best(within, key=lambda row: row.value)
        return [row for row in within if goal.speedup(row.value, best.value) >= 1 - band]

    def choose(self, points: list[Trial], goal: Goal) -> Trial | None:
        """The point of the front (least memory first) the rule chooses; None if none qualifies."""
        if not points:
            return None
        if self.rule == SMALLEST_WITHIN:
            best = goal.best(points, key=lambda row: row.value).value
            within = [row for row in points if goal.speedup(row.value, best) >= 1 / (1 + self.bound)]
            return min(within, key=footprint)
        within = [row for row in points if memory_bytes(row) <= self.bound]
        return goal.best(within, key=lambda row: row.value) if within else None


def memory_limit(setting: Any) -> int | None:
    """``constraint.memory``: bytes, or None (no bound)."""
    if setting is None:
        return None
    try:
        return parse_size(setting)
    except ValueError:
        raise ConfigError(f"constraint.memory must be a size (2GiB) or null, not {setting!r}") from None


def within_memory(rows: Iterable[Trial], limit: int | None) -> list[Trial]:
    """The trials whose memory stays within ``limit`` (all of them without one)."""
    return [row for row in rows if limit is None or (memory_bytes(row) or 0) <= limit]


def shown_bytes(nbytes: float) -> str:
    """A size for the front's table: exact where it is a whole number of KiB, else in MiB."""
    whole = int(nbytes)
    return format_size(whole) if whole % 1024 == 0 else f"{nbytes / (1 << 20):.1f}MiB"


def front_lines(points: list[Trial], chosen: Trial | None, metric: str) -> list[str]:
    """The front as a table for the summary, the chosen point marked."""
    header = ["", "trial", metric, "memory", "buffer_size"]
    cells = [["*" if row is chosen else "", str(row.number), f"{row.value:.4g}",
              shown_bytes(memory_bytes(row)), shown_bytes(row.params["buffer_size"]) if row.params.get("buffer_size") else "-"]
             for row in points]
    widths = [max(len(line[i]) for line in [header, *cells]) for i in range(len(header))]
    return ["  " + "  ".join(cell.rjust(width) for cell, width in zip(line, widths)) for line in [header, *cells]]


@dataclasses.dataclass(frozen=True)
class Objective:
    """What a study optimizes (``objective``, ``select``, ``constraint.memory``), and so which of its trials are
    confirmed and which one its profile is made of."""
    name: str = METRIC
    selection: Selection = Selection(SMALLEST_WITHIN, 0.10)
    limit: int | None = None

    @classmethod
    def from_config(cls, config: Mapping[str, Any], searched: Iterable[str]) -> "Objective":
        name = config.get("objective", METRIC)
        if name not in OBJECTIVES:
            raise ConfigError(f"objective must be one of {', '.join(OBJECTIVES)}, not {name!r}")
        if name == METRIC_AND_MEMORY and "buffer_size" not in searched:
            raise ConfigError("objective=metric_and_memory searches the buffer with the other parameters: give "
                              "space.buffer_size a range (for example '{min:256MiB,max:4GiB,factor:2}')")
        return cls(name, Selection.parse(config.get("select") or DEFAULT_SELECT),
                   memory_limit((config.get("constraint") or {}).get("memory")))

    @property
    def weighs_memory(self) -> bool:
        return self.name == METRIC_AND_MEMORY

    def strategy_settings(self) -> dict[str, Any]:
        """What a strategy that weighs memory itself (Ax) is told of the objective, beside its own settings."""
        return {"objective": self.name, "memory_limit": self.limit}

    def chosen(self, rows: list[Trial], goal: Goal,
               incumbent: Trial | None) -> Trial | None:
        """The trial the study stands for: the front's point by ``select``, the best within ``constraint.memory``, or
        the incumbent."""
        if self.weighs_memory:
            return self.selection.choose(front(rows, goal), goal)
        if self.limit is None:
            return incumbent
        within = [row for row in within_memory(rows, self.limit)
                  if row.kind in (Kind.DEFAULT, Kind.SEARCH) and row.status is Status.OK]
        return goal.best(within, key=lambda row: row.value) if within else None

    def fastest(self, rows: list[Trial], goal: Goal) -> Trial | None:
        """Time against memory: the front's point of the best figure (None: no front, or the metric alone)."""
        points = front(rows, goal) if self.weighs_memory else []
        return goal.best(points, key=lambda row: row.value) if points else None

    def unsettled(self, rows: list[Trial], goal: Goal, noise: float, most_runs: int) -> list[Trial]:
        """Time against memory: the front's search trials of fewer than ``most_runs`` runs whose figures could turn
        the choice within the noise (Selection.contested), to be measured again before it is read."""
        if not self.weighs_memory:
            return []
        return [row for row in self.selection.contested(front(rows, goal), goal, noise)
                if row.kind is Kind.SEARCH and len(row.runs) < most_runs]

    def candidates(self, searched: list[Trial], rows: list[Trial], goal: Goal,
                   count: int) -> list[Trial] | None:
        """The search trials to confirm, when the objective chooses them (None: the best ``count``, as always): for
        time against memory the chosen point and the front's fastest (those of them that are search trials: the
        defaults run in every round anyway), none if no point is chosen."""
        if self.weighs_memory:
            chosen = self.chosen(rows, goal, None)
            if chosen is None:
                return []
            fastest = self.fastest(rows, goal)
            return [row for row in searched if row.number in (chosen.number, fastest.number)]
        if self.limit is not None:
            return sorted(within_memory(searched, self.limit), key=lambda row: goal.loss(row.value))[:count]
        return None

    def confirmed_winner(self, rows: list[Trial], goal: Goal) -> int | None:
        """The trial whose confirmation is the study's result where the objective names it (time against memory: the
        chosen point, as ``confirms`` names it), else None: the candidate with the best median."""
        chosen = self.chosen(rows, goal, None) if self.weighs_memory else None
        return None if chosen is None else confirmed_as(chosen, rows)

    def summary(self, rows: list[Trial], goal: Goal, metric: str) -> tuple[list[tuple[str, str]], list[str]]:
        """The summary's lines (label, text) and, for time against memory, the front as a table."""
        if self.weighs_memory:
            points = front(rows, goal)
            chosen = self.selection.choose(points, goal)
            picked = (f"trial {chosen.number}: {self.selection.describe()} (select)" if chosen is not None else f"none: no point of the front is {self.selection.describe()}")
            return ([("Pareto front", f"{len(points)} points of {metric} against memory (* chosen)"),
                     ("chosen", picked)], front_lines(points, chosen, metric))
        if self.limit is not None:
            chosen = self.chosen(rows, goal, None)
            return [("memory constraint", f"{shown_bytes(self.limit)}: best within it "
                                          f"{'trial ' + str(chosen.number) if chosen else 'none'}")], []
        return [], []
