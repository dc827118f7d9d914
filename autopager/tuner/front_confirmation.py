"""Time against memory, confirmed: what the chosen point of the front costs against the front's fastest point.

The confirmation of a study of time against memory runs the chosen point and the front's fastest in the same
interleaved rounds, with the defaults (autopager.tuner.confirmation; the defaults' runs stand for a point that is
the defaults'). The k-th runs of the two are the k-th round's: the comparison is the ratio of their medians, as a
speedup of the fastest over the chosen (how many times better the fastest's figure is: 1.07x is the chosen 7%
slower), with the range of the per-round ratios. It is read from the table (the rows of kind ``confirm``), so the
tuner's summary, summary.json and ``autopager report`` give the same figures; a study whose confirmation did not
run the fastest (made before it did) has none.
"""
from __future__ import annotations

import dataclasses
import statistics

from autopager.parameters import format_size
from autopager.run.goal import Goal
from autopager.tuner.confirmation import Candidate, completed, confirmed_speedup, recorded_candidates
from autopager.tuner.memory_front import Objective, confirmed_as, memory_bytes
from autopager.tuner.progress import format_value
from autopager.tuner.trial import Kind, Trial


@dataclasses.dataclass(frozen=True)
class FrontPoint:
    """A point of the front as the confirmation measured it: its trial (the defaults' first for a run of the
    defaults), its buffer, its memory during the search and its confirmation runs."""
    trial: int
    defaults: bool
    buffer_size: int | None
    memory_bytes: float | None
    runs: tuple[float, ...]

    @classmethod
    def of(cls, row: Trial, candidate: Candidate, rows: list[Trial]) -> "FrontPoint":
        return cls(confirmed_as(row, rows), row.kind is Kind.DEFAULT, row.params.get("buffer_size"),
                   memory_bytes(row), tuple(candidate.values))

    @property
    def median(self) -> float:
        return statistics.median(self.runs)

    def describe(self) -> str:
        buffer = format_size(self.buffer_size) if self.buffer_size else "the default buffer"
        return f"{'the defaults, ' if self.defaults else ''}trial {self.trial}, {buffer}"

    def as_json(self) -> dict:
        return {"trial": self.trial, "defaults": self.defaults, "buffer_size": self.buffer_size,
                "memory_bytes": self.memory_bytes, "value": self.median, "runs": list(self.runs)}


@dataclasses.dataclass(frozen=True)
class AgainstFastest:
    chosen: FrontPoint
    fastest: FrontPoint
    ratio: float                    # the fastest's median over the chosen's, as a speedup
    per_round: tuple[float, float]  # the range of the per-round ratios

    def line(self, metric: str) -> str:
        if self.chosen.trial == self.fastest.trial:
            return (f"the chosen point is the fastest ({self.chosen.describe()}): "
                    f"{format_value(self.chosen.median, metric)}, median of {len(self.chosen.runs)} runs")
        low, high = self.per_round
        return (f"{self.ratio:.2f}x better at the fastest (per round {low:.2f}-{high:.2f}x): the fastest ({self.fastest.describe()}) "
                f"{format_value(self.fastest.median, metric)} against the chosen ({self.chosen.describe()}) "
                f"{format_value(self.chosen.median, metric)}, medians of {len(self.chosen.runs)} interleaved runs")

    def as_json(self) -> dict:
        return {"chosen": self.chosen.as_json(), "fastest": self.fastest.as_json(), "ratio": self.ratio,
                "per_round": list(self.per_round)}


def against_fastest(rows: list[Trial], objective: Objective, goal: Goal, rounds: int) -> AgainstFastest | None:
    """The chosen point's confirmation against the fastest's, from the table; None if the objective weighs no
    memory, no point is chosen, or either was not confirmed in every round."""
    chosen, fastest = objective.chosen(rows, goal, None), objective.fastest(rows, goal)
    if not objective.weighs_memory or chosen is None or fastest is None:
        return None
    recorded = recorded_candidates(rows)
    confirmed = [recorded.get(confirmed_as(row, rows)) for row in (chosen, fastest)]
    if any(candidate is None or not completed([candidate], rounds) for candidate in confirmed):
        return None
    ratio, per_round = confirmed_speedup(goal, confirmed[1].values, confirmed[0].values)
    return AgainstFastest(FrontPoint.of(chosen, confirmed[0], rows), FrontPoint.of(fastest, confirmed[1], rows),
                          ratio, per_round)


def summary_lines(objective: Objective, rows: list[Trial], goal: Goal, metric: str,
                  rounds: int) -> tuple[list[tuple[str, str]], list[str]]:
    """The objective's lines of the summary (autopager.tuner.memory_front.Objective.summary) and, for time against
    memory with a confirmation, the chosen point against the fastest."""
    lines, table = objective.summary(rows, goal, metric)
    if objective.weighs_memory and rounds:
        compared = against_fastest(rows, objective, goal, rounds)
        lines.append(("chosen vs fastest", compared.line(metric) if compared is not None
                      else "not measured: the chosen and the fastest point were not both confirmed in every round"))
    return lines, table
