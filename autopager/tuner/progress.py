"""What a study shows: one line a trial while it tunes, and a summary at the end.

On a terminal the trial in flight has a line of its own with its elapsed time, ticking every second, replaced by
its result line when it ends. Off a terminal (a SLURM log, nohup) a trial's start is a line of its own too, so a
long trial and a hung one can be told apart in the log.

``study.output`` (``-q``/``-v`` on the command line) sets how much: ``quiet`` prints only the summary, ``normal`` a
line a trial, ``verbose`` also each trial's runs and where it ran. A trial's figure with several runs is their
median, and its line says so.
"""
from __future__ import annotations

import sys
import threading
import time
from typing import Any, Iterable, Mapping, TextIO

from autopager.parameters import format_size, show, show_params
from autopager.run.goal import Goal
from autopager.tuner.trial import Kind, Status, Trial

OUTPUTS = ("quiet", "normal", "verbose")


def format_value(value: float | None, metric: str) -> str:
    return "-" if value is None else f"{value:.4g} {metric}"


def pager_pages(trial: Trial) -> str:
    """The page size a trial's run used, as its pager reported it (the pager chooses it when none is given, as for
    the defaults and the buffer ladder's rungs: by region, a read-only one's and a writable one's)."""
    size = trial.params.get("page_size") or trial.stats.get("pager_page_size")
    read_only = trial.stats.get("pager_read_only_page_size")
    if not trial.params.get("page_size") and size and read_only and read_only != size:
        return f", pages of {format_size(read_only)} read-only and {format_size(size)} writable"
    return f", pages of {format_size(size)}" if size else ""


def counter(trial: int, planned: int | None) -> str:
    return f"[{trial:>3}/{planned}]" if planned else f"[{trial:>3}]"


def duration(seconds: float) -> str:
    """A duration for people: 42 s, 7.5 min, 3.2 h, 2.1 days."""
    for unit, size in (("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= 2 * size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} s"


class Progress:
    def __init__(self, metric: str, goal: str, searched: Iterable[str], out: TextIO | None = None,
                 output: str = "normal"):
        self.metric = metric
        self.goal = goal
        self.searched = list(searched)
        self.out = out or sys.stdout
        self.quiet, self.verbose = output == "quiet", output == "verbose"
        self.started = time.monotonic()
        self._ticking: tuple[threading.Thread, threading.Event] | None = None

    def print(self, text: str = "") -> None:
        """A line of progress (none when quiet)."""
        if not self.quiet:
            self.show(text)

    def show(self, text: str = "") -> None:
        """A line of the study's outcome, printed whatever study.output is."""
        print(text, file=self.out, flush=True)

    def warn(self, text: str | None) -> None:
        """A warning on stderr, printed whatever study.output is (none for None)."""
        if text:
            print(f"autopager: warning: {text}", file=sys.stderr, flush=True)

    def elapsed(self) -> float:
        """Seconds since the study began here: what the user waited."""
        return time.monotonic() - self.started

    def loading(self, strategy: str) -> None:
        if strategy == "ax":
            self.print("loading Ax and PyTorch (some seconds)...")

    def plan(self, strategy: str, planned: int | None, limit: int | None, done: int, trial_seconds: float) -> None:
        """How many trials are to come and, at the defaults' time a trial, about how long they take."""
        if not limit:
            return
        left = max(0, limit - done)
        size = f"the grid has {planned:,} points; " if strategy == "grid" else ""
        cut = (f", drawn evenly from the grid's {planned:,} (raise budget.trials for more)"
               if strategy == "grid" and planned is not None and limit < planned else "")
        estimate = f": about {duration(left * trial_seconds)} at the defaults' time a trial" if left else ""
        self.print(f"{size}{left:,} of {limit:,} trials to run{cut}{estimate}")

    def running(self, trial: int, planned: int | None, params: Mapping[str, Any]) -> None:
        """The trial in flight: on a terminal a line that shows its elapsed time, else a line in the log."""
        shown = show_params({name: params[name] for name in self.searched if name in params}) or "defaults"
        line = f"{counter(trial, planned)} running  {shown}"
        if self.quiet:
            return
        if not self.out.isatty():
            self.print(line)
            return
        stop = threading.Event()
        begin = time.monotonic()

        def tick() -> None:
            while True:
                self.out.write(f"\r\033[K{line}  ({duration(time.monotonic() - begin)})")
                self.out.flush()
                if stop.wait(1.0):
                    return

        thread = threading.Thread(target=tick, name="autopager-progress", daemon=True)
        self._ticking = (thread, stop)
        thread.start()

    def trial(self, trial: Trial, planned: int | None, best: float | None,
              default: float | None, defaults_trial: int | None) -> None:
        """A trial's result line; ``defaults_trial``: the defaults' first trial, whose confirmation runs show as the
        defaults (they leave the page size to the pager, as the defaults' own runs)."""
        if self._ticking:
            thread, stop = self._ticking
            stop.set()
            thread.join()
            self._ticking = None
        if self.quiet:
            return
        if self.out.isatty():
            self.out.write("\r\033[K")  # erase the running line
        count = counter(trial.number, planned)
        runs = trial.runs
        if trial.ok:
            outcome = format_value(trial.value, self.metric) + (f" (median of {len(runs)})" if len(runs) > 1 else "")
        elif trial.status is Status.CAPPED:  # slower than the cap allows: worse than the best, not failed
            outcome = trial.error or "capped"
        else:
            outcome = f"FAILED ({trial.error})"
        gain = f" ({Goal.parse(self.goal).speedup(best, default):.2f}x the defaults)" if None not in (best, default) else ""
        of_defaults = trial.kind is Kind.DEFAULT or (trial.kind is Kind.CONFIRM and defaults_trial is not None
                                                     and trial.confirms == defaults_trial)
        shown = f"defaults{pager_pages(trial)}" if of_defaults else show_params(
            {name: trial.params.get(name) for name in self.searched})
        if not of_defaults and "page_size" in self.searched and trial.params.get("page_size") is None:
            shown += pager_pages(trial)
        if trial.kind is Kind.REUSED:
            shown += f"  (measured in trial {trial.reused_from}: not run again)"
        self.print(f"{count} {outcome:<22} best {format_value(best, self.metric)}{gain}  {shown}")
        if self.verbose and runs:
            where = f" on {trial.node}" if trial.node else ""
            self.print(f"      runs: {'; '.join(f'{value:.4g}' for value in runs)} {self.metric}, "
                       f"{trial.wall_seconds or 0:.2f} s of wall time{where}")

    def summary(self, lines: Iterable[tuple[str, str]]) -> None:
        self.show()
        for label, text in lines:
            self.show(f"{label + ':':<26}{text}")

    def table(self, trials: list[Trial], names: list[str]) -> None:
        """The best trials, one a line, best first (``pager``: a value left to the pager, as the defaults leave it)."""
        self.show("\nbest trials:")
        header = ["trial", self.metric] + names
        cells = [[str(trial.number), f"{trial.value:.4g}"]
                 + ["pager" if trial.params.get(name) is None else show(name, trial.params[name]) for name in names]
                 for trial in trials]
        widths = [max(len(column[i]) for column in [header] + cells) for i in range(len(header))]
        for line in [header] + cells:
            self.show("  " + "  ".join(cell.rjust(width) for cell, width in zip(line, widths)))
