"""What a study shows on screen: one line a trial while it tunes, and a summary at the end."""
from __future__ import annotations

import sys
from typing import Any, Iterable, Mapping, TextIO

from autopager.space import show, show_params


def format_value(value: float | None, metric: str) -> str:
    return "-" if value is None else f"{value:.4g} {metric}"


def speedup(value: float, reference: float, goal: str) -> float:
    """How many times better ``value`` is than ``reference`` (above 1: better)."""
    if goal == "minimize":
        return reference / value if value > 0 else float("inf")
    return value / reference if reference > 0 else float("inf")


def counter(trial: int, planned: int | None) -> str:
    return f"[{trial:>3}/{planned}]" if planned else f"[{trial:>3}]"


class Progress:
    def __init__(self, metric: str, goal: str, searched: Iterable[str], out: TextIO | None = None):
        self.metric = metric
        self.goal = goal
        self.searched = list(searched)
        self.out = out or sys.stdout

    def print(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    def running(self, trial: int, planned: int | None, params: Mapping[str, Any]) -> None:
        """On a terminal, the trial in flight, replaced by its result line when it ends."""
        if self.out.isatty():
            shown = show_params({name: params[name] for name in self.searched if name in params})
            self.out.write(f"\r{counter(trial, planned)} running...  {shown}")
            self.out.flush()

    def trial(self, row: Mapping[str, Any], planned: int | None, best: float | None,
              default: float | None) -> None:
        if self.out.isatty():
            self.out.write("\r\033[K")  # erase the running line
        count = counter(row["trial"], planned)
        if row["status"] == "ok":
            outcome = format_value(row["value"], self.metric)
        else:
            outcome = f"FAILED ({row['error']})"
        gain = f" ({speedup(best, default, self.goal):.2f}x the defaults)" if None not in (best, default) else ""
        shown = "defaults" if row["kind"] == "default" else show_params(
            {name: row[name] for name in self.searched})
        if row["kind"] == "reused":
            shown += f"  (measured in trial {row['reused_from']}: not run again)"
        self.print(f"{count} {outcome:<22} best {format_value(best, self.metric)}{gain}  {shown}")

    def summary(self, lines: Iterable[tuple[str, str]]) -> None:
        self.print()
        for label, text in lines:
            self.print(f"{label + ':':<26}{text}")

    def table(self, rows: list[Mapping[str, Any]], names: list[str]) -> None:
        """The best trials, one a line, best first."""
        header = ["trial", self.metric] + names
        cells = [[str(row["trial"]), f"{row['value']:.4g}"] + [show(name, row[name]) for name in names]
                 for row in rows]
        widths = [max(len(column[i]) for column in [header] + cells) for i in range(len(header))]
        for line in [header] + cells:
            self.print("  " + "  ".join(cell.rjust(width) for cell, width in zip(line, widths)))
