"""A study: the defaults' run, then the trials a strategy asks for, each appended to the study's table.

The study directory (``<study.root>/<workload>/<study.name>/``) holds ``config.yaml``, the resolved
configuration, and ``trials.csv``, one row a trial: its parameters, status, metric (the median of the
repeats), the repeats, wall time, timeout, exit code, error and the tail of stderr, when it was asked for,
how long the strategy took to propose it and what proposed it, the node it ran on and when its run started
and ended there. Trials run through the study's launcher (autopager.launchers), ``launcher.workers`` at once.
The table is rewritten after every trial, and the trials in flight are listed in ``in_flight.json``
(autopager.in_flight), so a study killed at any moment loses no finished trial; running it again (same
workload, space, strategy and study name) runs again the trials that were in flight, gives the finished trials
back to the strategy and goes on.

With ``baseline.mmap=true`` the study also measures the workload on the kernel's mmap after the defaults
(autopager/kernel_mmap.py): a row of kind ``mmap``, which is no trial (no strategy is told of it). A strategy that
keeps a state of its own (Ax) saves it beside the table at the end (``Strategy.save``), for the analysis.

A strategy may propose parameters the study has already measured (Ax's model, continuous, maps several of
its points to one point of the sampled space): that trial is not run again; its recorded result is given
back and the table has a row of kind ``reused`` naming the trial it came from (``reused_from``).
"""
from __future__ import annotations

import dataclasses
import datetime
import math
import os
import time
from pathlib import Path
from typing import Any, Mapping

import pandas as pd
import yaml
from omegaconf import DictConfig, OmegaConf

from autopager.errors import ConfigError, StudyError
from autopager.in_flight import InFlight, InFlightRecord
from autopager.launchers import TrialResult, make_launcher
from autopager.kernel_mmap import MMAP, mmap_runner
from autopager.params import PARAMETERS, format_size
from autopager.profiles import save_profile, this_machine
from autopager.progress import Progress, format_value, speedup
from autopager.runner import Measurement, Runner
from autopager.space import MMAP as MMAP_SETTING, Params, Space, show_params
from autopager.strategies import check_settings, make_strategy
from autopager.strategies.base import Key, Strategy, key
from autopager.trial_pool import TrialPool
from autopager.workloads import Workload

COLUMNS = ["trial", "kind", "status", "value", *PARAMETERS, "repeats", "wall_seconds", "seconds", "timeout",
           "exit_code", "error", "stderr_tail", "started", "ask_seconds", "proposed_by", "reused_from", "node",
           "run_started", "run_ended"]
INTEGER_COLUMNS = ["trial", "exit_code", "reused_from", *PARAMETERS]
IDENTITY = ("workload", "space", "strategy", "baseline", "seed")  # what a resumed study must share
TABLE, CONFIG = "trials.csv", "config.yaml"


def row_params(row: Mapping[str, Any]) -> Params:
    return {name: row[name] for name in PARAMETERS if row.get(name) is not None}


def outcome(row: Mapping[str, Any]) -> float | None:
    """What a strategy is told of a trial: its metric, or None if it failed."""
    return row["value"] if row["status"] == "ok" else None


def identity(config: Mapping[str, Any], key: str) -> Any:
    """A setting that a resumed study must share; baseline.mmap may be turned on later."""
    value = config.get(key)
    return {k: v for k, v in value.items() if k != MMAP_SETTING} if key == "baseline" and value else value


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")


@dataclasses.dataclass(frozen=True)
class Proposal:
    """When a trial was asked for (wall clock and perf_counter), how long the strategy took, and what proposed it."""
    started: str
    begin: float
    ask_seconds: float = 0.0
    proposed_by: str | None = None

    @classmethod
    def starting(cls) -> "Proposal":
        return cls(now(), time.perf_counter())


class StudyTable:
    """The trials of a study, kept in a CSV file rewritten (atomically) after each trial."""

    def __init__(self, path: Path):
        self.path = path
        self.rows: list[dict[str, Any]] = self._read() if path.is_file() else []

    def _read(self) -> list[dict[str, Any]]:
        frame = pd.read_csv(self.path, dtype={"kind": str, "status": str, "error": str, "stderr_tail": str,
                                               "repeats": str, "started": str, "proposed_by": str, "node": str,
                                               "run_started": str, "run_ended": str})
        rows = frame.astype(object).where(frame.notna(), None).to_dict("records")
        for row in rows:
            for column in INTEGER_COLUMNS:
                if row.get(column) is not None:
                    row[column] = int(row[column])
        return rows

    def append(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        temporary = self.path.with_suffix(".tmp")
        frame = pd.DataFrame(self.rows, columns=COLUMNS)
        frame[INTEGER_COLUMNS] = frame[INTEGER_COLUMNS].astype("Int64")  # not 1.0 beside empty cells
        frame.to_csv(temporary, index=False)
        os.replace(temporary, self.path)


def default_name(strategy: str, space: str, size: Any) -> str:
    parts = [strategy] + ([] if space == "default" else [space]) + ([] if size is None else [f"size{size}"])
    return "-".join(parts)


class Study:
    def __init__(self, config: DictConfig, space_name: str = "default"):
        self.config = config
        self.workload = Workload.from_config(config.workload, config.data_dir)
        self.space = Space(config.space, config.baseline)
        self.baseline = self.space.defaults
        check_settings(config.strategy)
        self.strategy_name = config.strategy.name
        self.runner = Runner.from_config(self.workload, config.runner)
        self.mmap_runner = mmap_runner(self.workload, config.runner) if config.baseline.get(MMAP_SETTING) else None
        name = config.study.name or default_name(self.strategy_name, space_name, self.workload.size)
        self.directory = Path(config.study.root).expanduser() / self.workload.name / str(name)
        self._check_resumable()
        self.workload.check()
        self.table = StudyTable(self.directory / TABLE)
        self.progress = Progress(self.workload.metric, self.workload.goal, self.space.dimensions)

    def _check_resumable(self) -> None:
        saved = self.directory / CONFIG
        if not (self.directory / TABLE).is_file() or not saved.is_file():
            return
        if not self.config.study.resume:
            raise ConfigError(f"study {self.directory} exists and study.resume=false: choose another study.name "
                              f"or remove that directory")
        old = yaml.safe_load(saved.read_text()) or {}
        new = OmegaConf.to_container(self.config, resolve=True)
        changed = [key for key in IDENTITY if identity(old, key) != identity(new, key)]
        if changed:
            raise ConfigError(f"study {self.directory} was run with other {', '.join(changed)} settings: to resume "
                              f"it, use the same ones; to start another study, give study.name=NAME")

    # --- measuring -------------------------------------------------------------------------------------

    def timeout(self, default: Mapping[str, Any] | None) -> float:
        runner = self.config.runner
        if runner.timeout is not None:
            return float(runner.timeout)
        if self.workload.timeout is not None:
            return float(self.workload.timeout)
        if default is None:
            return float(runner.first_timeout)
        per_run = default["wall_seconds"] / max(1, len(str(default["repeats"]).split(";")))
        return max(float(runner.timeout_floor), float(runner.timeout_factor) * per_run)

    def launch(self, params: Params, kind: str, timeout: float, proposal: Proposal | None = None) -> dict[str, Any] | None:
        """Hand a trial to the launcher; an infeasible one is recorded at once, not run (its row returned)."""
        proposal = proposal or Proposal.starting()
        entry = InFlight(dict(params), kind, timeout, proposal.started, proposal.ask_seconds, proposal.proposed_by)
        if not self.space.feasible(params):
            failure = Measurement(ok=False, error="evict_low_water must be below evict_high_water: not run")
            return self.record(entry, TrialResult(failure), time.perf_counter() - proposal.begin)
        self.pool.submit(entry, proposal.begin)
        return None

    def record(self, entry: InFlight, result: TrialResult, seconds: float) -> dict[str, Any]:
        """Append a finished trial to the table (then strike it off the in-flight record)."""
        measured = result.measurement
        row = {
            "trial": len(self.table.rows), "kind": entry.kind, "status": "ok" if measured.ok else "failed",
            "value": measured.value, **{name: entry.params.get(name) for name in PARAMETERS},
            "repeats": ";".join(f"{v:.6g}" for v in measured.values), "wall_seconds": measured.wall_seconds,
            "seconds": seconds, "timeout": entry.timeout, "exit_code": measured.exit_code,
            "error": measured.error or None, "stderr_tail": measured.stderr_tail or None, "started": entry.started,
            "ask_seconds": entry.ask_seconds, "proposed_by": entry.proposed_by, "reused_from": None,
            "node": result.node, "run_started": result.run_started, "run_ended": result.run_ended,
        }
        self.table.append(row)
        self.pool.recorded(entry)
        return row

    def finished(self, limit: int | None) -> list[tuple[InFlight, dict[str, Any]]]:
        """Wait for trials in flight to end; record and report each."""
        done = []
        for entry, result, seconds in self.pool.wait():
            row = self.record(entry, result, seconds)
            self.report(row, limit)
            done.append((entry, row))
        return done

    def measured(self, params: Params) -> dict[str, Any] | None:
        """The first run trial (finished, ok or failed) with exactly these parameters."""
        return next((row for row in self.table.rows if row["kind"] not in ("reused", MMAP) and row_params(row) == params),
                    None)

    def reuse(self, earlier: Mapping[str, Any], proposal: Proposal) -> dict[str, Any]:
        """A trial answered from an earlier one with the same parameters: recorded, not run."""
        row = {**{column: earlier.get(column) for column in COLUMNS}, "trial": len(self.table.rows), "kind": "reused",
               "repeats": None, "wall_seconds": 0.0, "seconds": time.perf_counter() - proposal.begin, "timeout": None,
               "stderr_tail": None, "started": proposal.started, "ask_seconds": proposal.ask_seconds,
               "proposed_by": proposal.proposed_by, "reused_from": earlier["trial"]}
        self.table.append(row)
        return row

    # --- the study -------------------------------------------------------------------------------------

    def ok_rows(self, kind: str | None = None) -> list[dict[str, Any]]:
        return [row for row in self.table.rows
                if row["status"] == "ok" and (row["kind"] == kind if kind else row["kind"] != MMAP)]

    def best(self) -> dict[str, Any] | None:
        rows = self.ok_rows()
        pick = min if self.workload.goal == "minimize" else max
        return pick(rows, key=lambda row: row["value"]) if rows else None

    def tuning_seconds(self) -> float:
        """The time spent with a trial asked for or running: the union of the trials' spans (``seconds`` from
        ``started``), so that trials run at the same time on several nodes count once."""
        timed = [row for row in self.table.rows if row["seconds"] is not None]
        spans = sorted((start, start + row["seconds"]) for row in timed if row["started"]
                       for start in [datetime.datetime.fromisoformat(row["started"]).timestamp()])
        total = sum(row["seconds"] for row in timed if not row["started"])
        covered = -math.inf
        for start, end in spans:
            if end > covered:
                total += end - max(start, covered)
                covered = end
        return total

    def trial_limit(self, planned: int | None) -> int | None:
        return self.config.budget.trials if self.config.budget.trials is not None else planned

    def run(self) -> dict[str, Any]:
        """Measure the defaults (unless a resumed study has), then the strategy's trials; the summary."""
        self.begin()
        launcher = make_launcher(self.config.launcher, self.directory)
        with launcher:
            self.pool = TrialPool(launcher, InFlightRecord(self.directory), self.workload,
                                  OmegaConf.to_container(self.config.runner, resolve=True))
            self.rerun_left_trials()
            default = self.defaults()
            kernel = self.kernel_mmap(default)
            while self.pool.count:  # the trials an earlier tuner left, run again: in the table before the search
                self.finished(None)
            strategy = make_strategy(self.strategy_name, self.space, self.workload.goal, self.config.strategy,
                                     int(self.config.seed))
            for row in self.table.rows:  # the defaults, and a resumed study's trials
                if row["kind"] != MMAP:
                    strategy.tell(row_params(row), outcome(row), proposed_by=row.get("proposed_by"))
            limit = self.trial_limit(strategy.planned_trials())
            shown_limit = None if limit is None else limit + (kernel is not None)  # the last trial's number
            self.search(strategy, limit, shown_limit, self.timeout(default))
        strategy.save(self.directory)
        return self.finish(default, kernel)

    def search(self, strategy: Strategy, limit: int | None, shown_limit: int | None, timeout: float) -> None:
        """Keep the launcher's workers busy with the strategy's proposals until the strategy or the budget ends.

        A strategy with nothing to propose while trials are in flight (a line search waiting for its results,
        Ax at the end of its initialization) is asked again when one ends. Parameters proposed while the same
        ones are in flight are not run twice: when that trial ends, they get its result (a ``reused`` row).
        ``shown_limit``: the last trial's number, for the progress lines.
        """
        followers: dict[Key, list[tuple[Params, Proposal]]] = {}
        proposing = True
        while True:
            while proposing and self.pool.free():
                if not self.within_budget(limit, self.pool.count + sum(map(len, followers.values()))):
                    proposing = False  # the budget only shrinks
                    break
                proposal = Proposal.starting()
                params = strategy.ask()
                if params is None:
                    break
                proposal = dataclasses.replace(proposal, ask_seconds=time.perf_counter() - proposal.begin,
                                               proposed_by=strategy.proposed_by)
                earlier = self.measured(params)
                if earlier is None and key(params) in self.pool.keys():
                    followers.setdefault(key(params), []).append((params, proposal))
                    continue
                if earlier is None:
                    if self.pool.launcher.workers == 1:
                        self.progress.running(len(self.table.rows), shown_limit, params)
                    row = self.launch(params, "search", timeout, proposal)
                else:
                    row = self.reuse(earlier, proposal)
                if row is not None:
                    strategy.tell(params, outcome(row))
                    self.report(row, shown_limit)
            if not self.pool.count:
                return
            for entry, row in self.finished(shown_limit):
                strategy.tell(entry.params, outcome(row), proposed_by=entry.proposed_by)
                for params, proposal in followers.pop(key(entry.params), []):
                    reused = self.reuse(row, proposal)
                    strategy.tell(params, outcome(reused))
                    self.report(reused, shown_limit)

    def rerun_left_trials(self) -> None:
        again = self.pool.left_by_earlier_tuner(self.table.rows)
        if again:
            self.progress.print(f"running again {len(again)} trial(s) in flight when the study stopped")
        for entry in again:
            self.pool.submit(entry)

    def begin(self) -> None:
        """Create the study directory with the resolved configuration; prepare the workload."""
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / CONFIG).write_text(OmegaConf.to_yaml(self.config, resolve=True))
        resumed = len(self.table.rows)
        state = f"resuming after {resumed} trials" if resumed else "new"
        self.progress.print(f"study {self.directory} ({state}): workload {self.workload.name}, "
                            f"strategy {self.strategy_name}\nspace:\n{self.space.describe()}")
        if self.workload.prepare:
            self.progress.print("preparing the workload (its data is reused when complete)...")
        prepared = self.runner.prepare()
        if not prepared.ok:
            raise StudyError(f"the workload's preparation failed: {prepared.error}\n{prepared.stderr_tail}")

    def defaults(self) -> dict[str, Any]:
        """The defaults' trial: measured now unless the study already has it. Its failure ends the study."""
        done = self.ok_rows("default")
        if done:
            return done[0]
        row = None
        if not any(entry.kind == "default" for entry in self.pool.flying.values()):  # not left by a killed tuner
            self.progress.running(len(self.table.rows), None, self.baseline)
            row = self.launch(self.baseline, "default", self.timeout(None))
        while row is None:
            row = next((row for entry, row in self.finished(None) if entry.kind == "default"), None)
        if row["status"] != "ok":
            raise StudyError(f"the defaults' run failed: {row['error']}\n{row['stderr_tail'] or ''}".rstrip())
        return row

    def kernel_mmap(self, default: Mapping[str, Any]) -> dict[str, Any] | None:
        """With baseline.mmap, the kernel-mmap row: measured now unless the study has it. Its failure is reported,
        and the study goes on."""
        if self.mmap_runner is None:
            return None
        done = [row for row in self.table.rows if row["kind"] == MMAP]
        if done:
            return done[-1]
        limit = format_size(self.mmap_runner.memory_limit)
        self.progress.print(f"measuring the kernel's mmap in a {limit} memory cgroup...")
        row = self.launch({}, MMAP, self.timeout(default))  # on a node, in a memory cgroup there
        while row is None:
            row = next((row for entry, row in self.finished(None) if entry.kind == MMAP), None)
        outcome_text = (format_value(row["value"], self.workload.metric) if row["status"] == "ok"
                        else f"FAILED ({row['error']})")
        self.progress.print(f"kernel mmap ({limit} memory cgroup): {outcome_text}")
        return row

    def within_budget(self, limit: int | None, pending: int = 0) -> bool:
        """Whether another trial may start, with ``pending`` trials started and not yet recorded."""
        if limit is not None and sum(row["kind"] not in ("default", MMAP) for row in self.table.rows) + pending >= limit:
            return False
        minutes = self.config.budget.minutes
        if minutes is not None and self.tuning_seconds() >= 60 * minutes:
            self.progress.print(f"budget.minutes={minutes} reached")
            return False
        return True

    def report(self, row: Mapping[str, Any], limit: int | None) -> None:
        best = self.best()
        defaults = self.ok_rows("default")
        self.progress.trial(row, limit, best and best["value"], defaults[0]["value"] if defaults else None)

    # --- the end ---------------------------------------------------------------------------------------

    def pagesize_best(self) -> tuple[float, Path] | None:
        """The best result of a page-size-only study of the same workload and data, if one was run."""
        found = []
        for config_path in self.directory.parent.glob(f"*/{CONFIG}"):
            if config_path.parent == self.directory or not (config_path.parent / TABLE).is_file():
                continue
            other = yaml.safe_load(config_path.read_text()) or {}
            if (other.get("strategy", {}).get("name") != "pagesize"
                    or other.get("workload") != OmegaConf.to_container(self.config.workload, resolve=True)):
                continue
            values = [row["value"] for row in StudyTable(config_path.parent / TABLE).rows
                      if row["status"] == "ok" and row["kind"] != MMAP]
            if values:
                found.append(((min if self.workload.goal == "minimize" else max)(values), config_path.parent))
        if not found:
            return None
        return (min if self.workload.goal == "minimize" else max)(found, key=lambda item: item[0])

    def finish(self, default: Mapping[str, Any], kernel: Mapping[str, Any] | None) -> dict[str, Any]:
        best = self.best()
        metric, goal = self.workload.metric, self.workload.goal
        rows = [row for row in self.table.rows if row["kind"] != MMAP]
        failed = sum(row["status"] != "ok" for row in rows)
        reused = sum(row["kind"] == "reused" for row in rows)
        gain = speedup(best["value"], default["value"], goal)
        lines = [("study", str(self.directory)),
                 ("best", f"{format_value(best['value'], metric)} (trial {best['trial']})"),
                 ("parameters", show_params(row_params(best))),
                 ("speedup over defaults", f"{gain:.2f}x (defaults: {format_value(default['value'], metric)})")]
        pagesize = self.pagesize_best()
        if pagesize:
            lines.append(("speedup over page size", f"{speedup(best['value'], pagesize[0], goal):.2f}x "
                                                    f"(page-size-only best: {format_value(pagesize[0], metric)})"))
        if kernel is not None:
            lines.append(("speedup over kernel mmap", f"{speedup(best['value'], kernel['value'], goal):.2f}x "
                                                      f"(kernel mmap: {format_value(kernel['value'], metric)})"
                          if kernel["status"] == "ok" else f"- (kernel mmap failed: {kernel['error']})"))
        answered = f", {reused} answered from an earlier trial" if reused else ""
        lines += [("trials", f"{len(rows)} ({failed} failed{answered})"),
                  ("tuning time", f"{self.tuning_seconds():.1f} s")]
        summary = {"directory": self.directory, "best": best, "default": default, "kernel_mmap": kernel,
                   "speedup": gain, "trials": len(rows),
                   "failed": failed, "reused": reused, "tuning_seconds": self.tuning_seconds(), "profile": None}
        if self.config.study.save_profile:
            path, written = save_profile(self.profile_record(best, default, gain), Path(self.config.profile_dir).expanduser())
            summary["profile"] = path
            lines.append(("profile", f"{'saved' if written else 'kept (it is better)'}: {path}"))
        self.progress.summary(lines)
        run = [row for row in self.ok_rows() if row["kind"] != "reused"]
        top = sorted(run, key=lambda row: row["value"], reverse=goal == "maximize")[:5]
        self.progress.print("\nbest trials:")
        self.progress.table(top, list(self.space.dimensions))
        return summary

    def profile_record(self, best: Mapping[str, Any], default: Mapping[str, Any], gain: float) -> dict[str, Any]:
        return {
            "workload": self.workload.name,
            "params": row_params(best),
            "metric": self.workload.metric,
            "goal": self.workload.goal,
            "value": best["value"],
            "default_value": default["value"],
            "speedup_over_default": round(gain, 3) if math.isfinite(gain) else None,
            "found_on": {"workload": self.workload.knobs, "machine": this_machine()},
            "strategy": self.strategy_name,
            "trials": len(self.table.rows),
            "study": str(self.directory.resolve()),
        }
