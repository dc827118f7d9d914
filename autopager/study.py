"""A study: the defaults' run, then the trials a strategy asks for, each appended to the study's table.

With several workers (``launcher.workers`` > 1) the search does not wait for the defaults' first run: while it is
in flight the free workers run trials the strategy proposes (Ax's first are Sobol points, which need no data; the
other strategies are told to expect the defaults' point, so they do not propose it, and coordinate descent waits
for its result). Those trials start without a cap, since no incumbent is known; once one is (the defaults' run
ends), a trial still running past the cap is stopped by the tuner and recorded as capped, as the runner records a
run it caps. The strategy is told the defaults' result when it comes. A defaults' run that fails, or shows that the
program does not use the pager, ends the study as before; the trials started beside it are cancelled and left
out of the table. With one worker the defaults' run ends before the search starts.

The study directory (``<study.root>/<workload>/<study.name>/``) holds ``config.yaml``, the resolved
configuration, ``tuner.lock`` (one tuner a study) and ``trials.csv`` (autopager.table), one row a trial: its
parameters, status, metric (the median of the repeats), the repeats, wall time, timeout, exit code, error, the
tail of stderr, the checksum of its answer, when it was asked for, how long the strategy took to propose it and
what proposed it. The table is rewritten after every trial. Trials run through the study's launcher
(autopager.launchers), ``launcher.workers`` at once, each with the node it ran on and when its run started and
ended there; the trials in flight are listed in ``in_flight.json`` (autopager.in_flight), so a study killed at any moment loses no finished trial; running it
again (same workload, space, strategy and study name) runs again the trials that were in flight, gives the
finished trials back to the strategy and goes on. SIGTERM ends the study as Ctrl-C does: the trials in flight
are killed, the finished ones are kept.

The defaults' first run is the reference: it validates the program's answer in full, and its checksum (a summary
of the answer the workload prints, in the table's ``checksum`` column) is what every later run of the study must
print; those runs skip their workload's expensive checks (autopager.runner). A run that prints another checksum
has failed: a wrong answer.

A strategy may propose parameters the study has already measured (Ax's model, continuous, maps several of
its points to one point of the sampled space): that trial is not run again; its recorded result is given
back and the table has a row of kind ``reused`` naming the trial it came from (``reused_from``).

With ``baseline.mmap=true`` the study also measures the workload on the kernel's mmap after the defaults
(autopager/kernel_mmap.py): a row of kind ``mmap``, which is no trial (no strategy is told of it). A strategy that
keeps a state of its own (Ax) saves it beside the table at the end (``Strategy.save``), for the analysis.
"""
from __future__ import annotations

import contextlib
import datetime
import errno
import math
import os
import signal
import statistics
import threading
import time
from pathlib import Path
from typing import Any, Iterator, Mapping

import yaml
from omegaconf import DictConfig, OmegaConf

from autopager.confirmation import Confirmation, Verdict, round_ratios
from autopager.errors import ConfigError, StudyError
from autopager.in_flight import InFlight, InFlightRecord
from autopager.kernel_mmap import mmap_runner
from autopager.launchers import TrialResult, launcher_settings, make_launcher
from autopager.measuring import (NOISE_BAND, Proposal, add_runs, defaults_runs, mean_and_sem, measured_defaults,
                                 relative_noise, run_seconds, runs_of, trial_row)
from autopager.machine import this_machine
from autopager.profiles import save_profile, write_profile
from autopager.progress import OUTPUTS, Progress, defaults_pages, format_value
from autopager.runner import RESULT, Measurement, Runner, stopped
from autopager.settings import StudySettings
from autopager.params import format_size
from autopager.space import MMAP as MMAP_SETTING, Params, Space, show_params
from autopager.strategies import check_settings, make_strategy
from autopager.strategies.base import Key, Strategy, key
from autopager.studylock import StudyLock
from autopager.studyview import FINISHED, RUNNING, write_summary
from autopager.table import COLUMNS, Kind, Status, StudyTable, row_params, write_atomically
from autopager.trial_pool import TrialPool
from autopager.workloads import Workload

IDENTITY = ("workload", "space", "strategy", "baseline", "seed", "runner.repeats")  # what a resumed study must share
TABLE, CONFIG = "trials.csv", "config.yaml"
WRITE_FAILURES = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO, errno.EFBIG}
MEASURED = (Kind.DEFAULT, Kind.SEARCH)  # rows that are trials run by the search (not reused, not confirmation)
READ_AMPLIFICATION = 4.0  # a trial reading this many times its data through the pager gets the summary's warning


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt while the study runs, so the trial in flight is killed as with Ctrl-C."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def identity(config: Mapping[str, Any], key: str) -> Any:
    """A setting (a dotted path) that a resumed study must share; baseline.mmap may be turned on later."""
    value: Any = config
    for part in key.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return {k: v for k, v in value.items() if k != MMAP_SETTING} if key == "baseline" and value else value


def default_name(strategy: str, space: str, size: Any, buffer_size: int | None = None, repeats: int = 1) -> str:
    """<strategy>[-<space>][-size<size>][-buf<buffer>][-x<repeats>]: what tells studies of a workload apart."""
    parts = ([strategy] + ([] if space == "default" else [space]) + ([] if size is None else [f"size{size}"])
             + ([] if buffer_size is None else [f"buf{format_size(buffer_size)}"])
             + ([] if repeats == 1 else [f"x{repeats}"]))
    return "-".join(parts)


def study_directory(root: str, workload: str, name: str) -> Path:
    """``<root>/<workload>/<name>``; a ConfigError when the workload's or the study's name would leave study.root."""
    for setting, part in (("workload.name", workload), ("study.name", name)):
        normal = os.path.normpath(part)
        if os.path.isabs(part) or normal == "." or normal.split(os.sep)[0] == "..":
            raise ConfigError(f"{setting}={part!r} would leave study.root ({root}): give a name inside it "
                              f"(not absolute, no leading '..')")
    return Path(root).expanduser() / workload / name


class Study:
    def __init__(self, config: DictConfig, space_name: str = "default"):
        """Check everything the study needs (settings, space, workload) without running or writing anything."""
        self.config = config
        self.settings = StudySettings.from_config(config)
        self.workload = Workload.from_config(config.workload, config.data_dir)
        self.space = Space(config.space, config.baseline)
        self.baseline = self.space.defaults
        check_settings(config.strategy)
        self.strategy_name = config.strategy.name
        self.runner = Runner.from_config(self.workload, config.runner)
        self.mmap_runner = mmap_runner(self.workload, config.runner) if config.baseline.get(MMAP_SETTING) else None
        launcher_settings(config.launcher)
        name = config.study.name or default_name(self.strategy_name, space_name, self.workload.size,
                                                 self.workload.buffer_size, self.runner.repeats)
        self.directory = study_directory(config.study.root, self.workload.name, str(name))
        self._check_resumable()
        self.workload.check()
        self.lock = StudyLock(self.directory)
        self.table: StudyTable  # read under the lock when the study begins
        output = config.study.get("output", "normal")
        if output not in OUTPUTS:
            raise ConfigError(f"study.output must be one of {', '.join(OUTPUTS)} (-q, -v), not {output!r}")
        self.progress = Progress(self.workload.metric, self.workload.goal, self.space.dimensions, output=output)

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
        runner = self.settings.runner
        if runner.timeout is not None:
            return runner.timeout
        if self.workload.timeout is not None:
            return float(self.workload.timeout)
        if default is None:
            return runner.first_timeout
        return max(runner.timeout_floor, runner.timeout_factor * run_seconds(default))

    def cap_seconds(self, reference: Mapping[str, Any] | None) -> float | None:
        """Where a run stops as capped: runner.cap x a run of ``reference`` (the incumbent), at least cap_floor."""
        runner = self.settings.runner
        if runner.cap is None or reference is None:
            return None
        return max(runner.cap_floor, runner.cap * run_seconds(reference))

    def run_trial(self, params: Params, kind: Kind, proposal: Proposal, timeout: float, cap: float | None,
                  confirms: int | None = None) -> dict[str, Any]:
        """Measure a parameter set on a node and append its row to the table (and those of trials in flight that
        end meanwhile)."""
        launched = self.launch(params, kind, proposal, timeout, cap, confirms)
        return self.wait_for(launched) if isinstance(launched, InFlight) else launched

    def wait_for(self, awaited: InFlight) -> dict[str, Any]:
        """The row of a trial in flight, once it has ended; the other trials that end meanwhile are reported."""
        while True:
            for entry, row in self.finished():
                if entry is awaited:
                    return row
                self.report(row, None)

    def launch(self, params: Params, kind: Kind, proposal: Proposal, timeout: float, cap: float | None,
               confirms: int | None = None, continues: int | None = None) -> InFlight | dict[str, Any]:
        """Hand a trial to the launcher (``continues``: one more run of that trial); an infeasible one is recorded
        at once, not run, and its row returned."""
        entry = InFlight(dict(params), kind.value, timeout, proposal.started, proposal.ask_seconds,
                         proposal.proposed_by, cap=cap, confirms=confirms, continues=continues)
        if not self.space.feasible(params):
            failure = Measurement(ok=False, error="evict_low_water must be below evict_high_water: not run")
            return self.record(entry, TrialResult(failure), proposal)
        self.pool.submit(entry, proposal.begin, result_required=not self.runner.times_process,
                         checksum=self.reference_checksum())
        return entry

    def record(self, entry: InFlight, result: TrialResult, proposal: Proposal) -> dict[str, Any]:
        """Put a finished trial in the table (a new row, or more runs of the trial it continues), then strike it off
        the in-flight record."""
        where = {"node": result.node, "run_started": result.run_started, "run_ended": result.run_ended}
        if entry.continues is not None:
            row = next(row for row in self.table.rows if row["trial"] == entry.continues)
            add_runs(row, result.measurement)
            row.update(where)
            self.table.write()
        else:
            limit = entry.timeout if entry.cap is None else min(entry.timeout, entry.cap)
            row = {**trial_row(self.table.next_trial(), Kind(entry.kind), entry.params, result.measurement, limit,
                               proposal, entry.confirms), **where}
            self.table.append(row)
        self.pool.recorded(entry)
        return row

    def finished(self) -> list[tuple[InFlight, dict[str, Any]]]:
        """Wait for trials in flight to end; record each. A search trial launched before its limits were known
        (``late_limits``) is stopped by the tuner once it runs past them, and recorded as the runner records a run
        stopped there: capped (or, past the timeout, failed)."""
        late = self.late_limits()
        soonest = min((limit + startup - self.pool.running_seconds(entry) for entry, limit, _, startup in late),
                      default=None)
        ended = self.pool.wait(None if soonest is None else max(0.0, soonest))
        for entry, limit, timeout, startup in late:
            if entry.handle in self.pool.flying and self.pool.running_seconds(entry) >= limit + startup:
                wall = self.pool.running_seconds(entry) - startup
                entry.timeout, entry.cap = timeout, limit
                ended.append((entry, TrialResult(stopped(wall, limit, timeout)), self.pool.stop(entry)))
        return [(entry, self.record(entry, result, Proposal(entry.started, begin, entry.ask_seconds, entry.proposed_by)))
                for entry, result, begin in ended]

    def late_limits(self) -> list[tuple[InFlight, float, float, float]]:
        """The search trials in flight that were launched without a cap (alongside the defaults' first run, before
        any incumbent) and would now get a lower limit: each with the limit and timeout a trial launched now gets,
        and the seconds its run is taken to start after its submission (the launch and the workload's preparation
        on the node, as they took for the trial that sets the cap): the tuner cannot see when it started."""
        if self.pool.launcher.workers == 1:
            return []
        default = self.measured_defaults()
        reference = self.incumbent() or default
        cap, timeout_now = self.cap_seconds(reference), self.timeout(default)
        startup = max(0.0, reference["seconds"] - reference["wall_seconds"]) if reference else 0.0
        late = []
        for entry in self.pool.flying.values():
            if entry.kind != Kind.SEARCH or entry.cap is not None:
                continue
            timeout = min(entry.timeout, timeout_now)
            limit = timeout if cap is None else min(timeout, cap)
            if limit < entry.timeout:
                late.append((entry, limit, timeout, startup))
        return late

    def measured(self, params: Params) -> dict[str, Any] | None:
        """The first run trial (finished, ok or failed) with exactly these parameters."""
        return next((row for row in self.table.rows if row["kind"] in MEASURED and row_params(row) == params), None)

    def reuse(self, earlier: Mapping[str, Any], proposal: Proposal) -> dict[str, Any]:
        """A trial answered from an earlier one with the same parameters: recorded, not run."""
        row = {**{column: earlier.get(column) for column in COLUMNS}, "trial": self.table.next_trial(),
               "kind": Kind.REUSED, "repeats": None, "wall_seconds": 0.0,
               "seconds": time.perf_counter() - proposal.begin, "timeout": None, "stderr_tail": None,
               "started": proposal.started, "ask_seconds": proposal.ask_seconds, "proposed_by": proposal.proposed_by,
               "reused_from": earlier["trial"], "confirms": None}
        self.table.append(row)
        return row

    # --- what the table says -------------------------------------------------------------------------

    def ok_rows(self, kind: Kind | None = None) -> list[dict[str, Any]]:
        return [row for row in self.table.rows if row["status"] is Status.OK and kind in (None, row["kind"])]

    def incumbent(self, other_than: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
        """The best trial measured so far (the defaults' runs included), confirmation runs aside."""
        rows = [row for row in self.ok_rows() if row["kind"] in MEASURED and row is not other_than]
        return self.workload.goal.best(rows, key=lambda row: row["value"]) if rows else None

    def noise(self) -> float:
        """Relative run-to-run noise: the spread of the defaults' runs, else noise.assumed."""
        measured = relative_noise(defaults_runs(self.table.rows))
        return measured if measured is not None else self.settings.noise.assumed

    def within_noise(self, row: Mapping[str, Any]) -> bool:
        incumbent = self.incumbent(other_than=row)
        if row["status"] is not Status.OK or incumbent is None:
            return False
        return abs(row["value"] - incumbent["value"]) <= NOISE_BAND * self.noise() * abs(incumbent["value"])

    def told(self, row: Mapping[str, Any]) -> tuple[float | None, float | None]:
        """What a strategy is told of a trial: (value, standard error). Failed: (None, None). Capped: worse than the
        incumbent by the cap, so that no strategy takes a capped point for a good one."""
        if row["status"] is Status.OK:
            runs = runs_of(row)
            return mean_and_sem(runs) if len(runs) > 1 else (row["value"], None)
        incumbent, cap = self.incumbent(), self.settings.runner.cap
        if row["status"] is Status.CAPPED and incumbent is not None and cap is not None:
            return self.workload.goal.worse_by(incumbent["value"], cap), None
        return None, None  # failed, or capped with nothing to compare (Ax substitutes the worst value seen)

    def tuning_seconds(self) -> float:
        """The time spent with a trial asked for or running: the union of the trials' spans (``seconds`` from
        ``started``), so that trials run at the same time on several nodes count once."""
        spans = sorted((start, start + row["seconds"]) for row in self.table.rows if row["seconds"] is not None
                       for start in [datetime.datetime.fromisoformat(row["started"]).timestamp()])
        total, covered = 0.0, -math.inf
        for start, end in spans:
            if end > covered:
                total += end - max(start, covered)
                covered = end
        return total

    def trial_limit(self, planned: int | None) -> int | None:
        return self.settings.trials if self.settings.trials is not None else planned

    # --- the study -------------------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        """The defaults (unless a resumed study has them), the strategy's trials, the confirmation; the summary."""
        with terminate_as_interrupt(), self.writing_stops_the_study():
            self.begin()
            try:
                with make_launcher(self.config.launcher, self.directory) as launcher:
                    self.pool = TrialPool(launcher, InFlightRecord(self.directory), self.workload,
                                          OmegaConf.to_container(self.config.runner, resolve=True))
                    left = self.rerun_left_trials()
                    self.progress.loading(self.strategy_name)
                    launched = self.launch_defaults()
                    strategy = make_strategy(self.strategy_name, self.space, self.workload.goal, self.config.strategy,
                                             self.settings.seed)  # set up (Ax: imported) while the defaults run
                    if self.pool.launcher.workers > 1 and isinstance(launched, InFlight) and self.pool.count == 1:
                        launched = self.search(strategy, None, alongside=launched)  # the other workers search
                    default = self.defaults(launched)
                    kernel = self.kernel_mmap(default)
                    self.drain(left)  # the trials an earlier tuner left: in the table before the search
                    self.search(strategy, default)
                    verdict = self.confirm(default)
                    self.drain()  # the defaults' runs of the search still in flight, without confirmation
                    strategy.save(self.directory)
                return self.finish(default, kernel, strategy, verdict)
            finally:
                self.lock.release()

    def rerun_left_trials(self) -> list[InFlight]:
        """Launch again the trials an earlier tuner of the study left in flight; those trials."""
        if any(row["kind"] is Kind.DEFAULT and row["measured_by"] == RESULT for row in self.table.rows):
            self.runner.require_result()  # as the defaults' run showed, before the left trials are launched again
        again = self.pool.left_by_earlier_tuner(self.table.rows)
        if again:
            self.progress.print(f"running again {len(again)} trial(s) in flight when the study stopped")
        for entry in again:
            self.pool.submit(entry, result_required=not self.runner.times_process, checksum=self.reference_checksum())
        return again

    @contextlib.contextmanager
    def writing_stops_the_study(self) -> Iterator[None]:
        """A file of the study that cannot be written (a read-only or full disk) ends the study with one line: at its
        start a ConfigError naming study.root, later a StudyError; the trials recorded until then are kept."""
        try:
            yield
        except OSError as error:
            if error.errno not in WRITE_FAILURES:
                raise
            where = error.filename or self.directory
            if not hasattr(self, "table"):
                raise ConfigError(f"study.root: cannot write the study in {where}: {error.strerror}") from None
            raise StudyError(f"the study stopped: cannot write {where}: {error.strerror}; the trials recorded are "
                             f"kept: run the same command again to resume") from None

    def begin(self) -> None:
        """Create the study directory, take its lock, read its table; write the configuration; prepare the workload."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self.lock.acquire()
        self._check_resumable()
        table = StudyTable(self.directory / TABLE)
        write_atomically(self.directory / CONFIG, OmegaConf.to_yaml(self.config, resolve=True))
        self.table = table
        resumed = len(self.table.rows)
        self.searched_before = sum(row["kind"] in (Kind.SEARCH, Kind.REUSED) for row in self.table.rows)
        self.told_trials: set[int] = set()  # the rows the strategy has been told of
        self.limit: int | None = None  # the search's budget of trials, once the strategy is known
        self.followers: dict[Key, list[tuple[Params, Proposal]]] = {}  # proposed again while in flight
        state = f"resuming after {resumed} trials" if resumed else "new"
        self.progress.print(f"study {self.directory} ({state}): workload {self.workload.name}, "
                            f"strategy {self.strategy_name}\nspace:\n{self.space.describe()}")
        if self.workload.prepare:
            self.progress.print("preparing the workload (its data is reused when complete)...")
        prepared = self.runner.prepare()
        if not prepared.ok:
            raise StudyError(f"the workload's preparation failed: {prepared.error}\n{prepared.stderr_tail}")

    def drain(self, entries: list[InFlight] | None = None) -> None:
        """Record the trials in flight as they end (until none of ``entries`` is in flight, if given)."""
        while self.pool.count if entries is None else any(self.pool.flying.get(entry.handle) is entry
                                                          for entry in entries):
            for _, row in self.finished():
                self.report(row, None)

    def measured_defaults(self) -> dict[str, Any] | None:
        """The defaults' first trial that did not fail, if the study has it."""
        return measured_defaults(self.table.rows)

    def reference_checksum(self) -> str | None:
        """The checksum of the defaults' first run, which validated its answer in full: every later run (a search
        trial, the defaults again, a confirmation, the kernel's mmap) validates only its checksum, which must be
        this one. None until that run has ended, or if it printed none: then runs validate as they always do."""
        default = self.measured_defaults()
        return default["checksum"] if default else None

    def launch_defaults(self) -> InFlight | dict[str, Any] | None:
        """The defaults' first trial, unless the study has it (None): in flight (left by a killed tuner and running
        again, or handed to the launcher now: in full, unless runner.defaults_timeout bounds it)."""
        if self.measured_defaults() is not None:
            return None
        left = next((entry for entry in self.pool.flying.values() if entry.kind == Kind.DEFAULT), None)
        if left is not None:
            return left
        self.progress.running(self.table.next_trial(), None, self.baseline)
        return self.launch(self.baseline, Kind.DEFAULT, Proposal.starting(), self.timeout(None),
                           self.settings.runner.defaults_timeout)

    def defaults(self, launched: InFlight | dict[str, Any] | None) -> dict[str, Any]:
        """The defaults' first trial (``launched`` by ``launch_defaults``), once it has ended. Its failure ends the
        study."""
        done = self.measured_defaults()
        if launched is None and done is not None:
            if done["measured_by"] == RESULT:
                self.runner.require_result()
            return done
        row = self.wait_for(launched) if isinstance(launched, InFlight) else launched
        self.report(row, None)
        if row["measured_by"] == RESULT:
            self.runner.require_result()
        if row["status"] is Status.FAILED:
            failure = f"the defaults' run failed: {row['error']}\n{row['stderr_tail'] or ''}".rstrip()
        else:
            failure = self.pager_unused(row)
        if failure:
            for entry in [entry for entry in self.pool.flying.values() if entry.kind == Kind.SEARCH]:
                self.pool.drop(entry)  # started alongside the defaults: not measured, not to be run again
            raise StudyError(failure)
        return row

    def pager_unused(self, default: Mapping[str, Any]) -> str | None:
        """Why a program that does not use the pager has nothing to tune (the study stops after the defaults)."""
        if (self.strategy_name == "default" or self.settings.trials == 0 or default["status"] is not Status.OK
                or (default["faults"] or 0) > 0):
            return None  # nothing to tune, or a run stopped before it could print its statistics
        seen = ("printed no pager statistics" if default["faults"] is None
                else "took no page faults through the pager")
        return (f"the program {seen} in the defaults' run (UMAP_PRINT_STATS=1): it does not use the pager, so its "
                f"paging parameters cannot change its time; tuning would measure noise. Run it on autopager (link "
                f"libumap, or use autopager.memmap) and tune again")

    def kernel_mmap(self, default: Mapping[str, Any]) -> dict[str, Any] | None:
        """With baseline.mmap, the kernel-mmap row: measured now unless the study has it. Its failure is reported,
        and the study goes on."""
        if self.mmap_runner is None:
            return None
        done = [row for row in self.table.rows if row["kind"] is Kind.MMAP]
        if done:
            return done[-1]
        limit = format_size(self.mmap_runner.memory_limit)
        left = next((entry for entry in self.pool.flying.values() if entry.kind == Kind.MMAP), None)
        if left is not None:  # left in flight by a killed tuner, and running again
            row = self.wait_for(left)
        else:  # on a node, in a memory cgroup there
            self.progress.print(f"measuring the kernel's mmap in a {limit} memory cgroup...")
            row = self.run_trial({}, Kind.MMAP, Proposal.starting(), self.timeout(default), None)
        outcome_text = (format_value(row["value"], self.workload.metric) if row["status"] is Status.OK
                        else f"FAILED ({row['error']})")
        self.progress.print(f"kernel mmap ({limit} memory cgroup): {outcome_text}")
        return row

    def search(self, strategy: Strategy, default: Mapping[str, Any] | None,
               alongside: InFlight | None = None) -> dict[str, Any] | None:
        """The strategy's trials, with the defaults measured again among them, until the budget or the strategy ends.
        It ends when no search trial is in flight: the defaults' runs still in flight end during the confirmation.
        ``alongside``: the defaults' first trial, in flight (``default`` is None): the free workers run the strategy's
        trials until it ends, without a cap (none is known yet; ``finished`` caps them later); its row is returned."""
        strategy.expect(None if alongside is None else self.space.defaults_as_run())
        limit = self.limit = self.trial_limit(strategy.planned_trials())
        self.tell_recorded(strategy, default, limit)
        if default is not None:
            done = sum(row["kind"] in (Kind.SEARCH, Kind.REUSED) for row in self.table.rows)
            self.progress.plan(self.strategy_name, strategy.planned_trials(), limit, done, default["wall_seconds"])
        proposing = True
        while True:
            waiting = False  # the strategy proposes nothing until a search trial in flight ends, or at all
            while proposing and self.pool.free():
                if not self.within_budget(limit, self.pool.searching() + sum(map(len, self.followers.values()))):
                    proposing = False  # the budget only shrinks
                    break
                if self.defaults_due():
                    self.launch_defaults_again(default)
                    continue
                proposal = Proposal.starting()
                params = strategy.ask()
                if params is None:
                    waiting = True  # done, or waiting for trials in flight: asked again when one ends
                    break
                proposal = Proposal(proposal.started, proposal.begin, time.perf_counter() - proposal.begin,
                                    strategy.proposed_by)
                earlier = self.measured(params)
                if earlier is None and key(params) in self.pool.keys():
                    self.followers.setdefault(key(params), []).append((params, proposal))
                    continue
                if earlier is not None:
                    row = self.reuse(earlier, proposal)
                else:
                    if self.pool.launcher.workers == 1:
                        self.progress.running(self.table.next_trial(), self.shown_limit(limit), params)
                    row = self.launch(params, Kind.SEARCH, proposal, self.timeout(default),
                                      self.cap_seconds(self.incumbent() or default))
                if not isinstance(row, InFlight):
                    self.tell(strategy, row, params)
                    self.report(row, limit)
            searching = any(entry.kind == Kind.SEARCH for entry in self.pool.flying.values())
            if alongside is None and (not self.pool.count or (not searching and (waiting or not proposing))):
                break  # nothing more to propose: the defaults' runs still in flight end during the confirmation
            ended = None
            for entry, row in self.finished():
                if entry is alongside:
                    ended = row  # told when the search goes on (``defaults`` reports it)
                elif entry.kind != Kind.SEARCH or self.measure_again(entry, row):
                    self.report(row, None if entry.kind != Kind.SEARCH else limit)
                else:
                    self.tell(strategy, row, entry.params, entry.proposed_by)
                    self.report(row, limit)
                    self.answer_followers(strategy, row, limit)
            if ended is not None:
                return ended
        if self.searched_before and self.searched_before == sum(row["kind"] in (Kind.SEARCH, Kind.REUSED)
                                                                for row in self.table.rows):
            self.progress.print("study complete: every trial it plans was run before (raise budget.trials, or "
                                "give another study.name, to run more)")
        return None

    def tell(self, strategy: Strategy, row: Mapping[str, Any], params: Params,
             proposed_by: str | None = None) -> None:
        self.told_trials.add(row["trial"])
        strategy.tell(params, *self.told(row), proposed_by=proposed_by)

    def tell_recorded(self, strategy: Strategy, default: Mapping[str, Any] | None, limit: int | None) -> None:
        """Tell the strategy of the rows it has not been told of: the defaults', a resumed study's trials, and those
        that ended while no search ran (started alongside the defaults' first run), except a trial being measured
        again; answer the proposals that waited for them."""
        continuing = {entry.continues for entry in self.pool.flying.values()}
        for row in list(self.table.rows):
            if ((row["kind"] is Kind.SEARCH or row["kind"] is Kind.REUSED or row is default)
                    and row["trial"] not in self.told_trials and row["trial"] not in continuing):
                self.tell(strategy, row, row_params(row), row.get("proposed_by"))
                self.answer_followers(strategy, row, limit)

    def answer_followers(self, strategy: Strategy, row: Mapping[str, Any], limit: int | None) -> None:
        """The proposals of a trial's parameters made while it was in flight: answered from its row."""
        for params, proposal in self.followers.pop(key(row_params(row)), []):
            reused = self.reuse(row, proposal)
            self.tell(strategy, reused, params)
            self.report(reused, limit)

    def measure_again(self, entry: InFlight, row: Mapping[str, Any]) -> bool:
        """Whether a search trial within the noise of the incumbent is measured once more (up to noise.max_runs
        runs), so that no single lucky run makes it the incumbent: then it is launched again, continuing its row."""
        if len(runs_of(row)) >= self.settings.noise.max_runs or not self.within_noise(row):
            return False
        proposal = Proposal(entry.started, time.perf_counter(), entry.ask_seconds, entry.proposed_by)
        self.launch(entry.params, Kind.SEARCH, proposal, entry.timeout, entry.cap, continues=row["trial"])
        return True

    def defaults_due(self) -> bool:
        """Whether to measure the defaults again now (noise.defaults_runs in all, every noise.defaults_every)."""
        defaults = [row for row in self.table.rows if row["kind"] is Kind.DEFAULT]
        if len(defaults) >= self.settings.noise.defaults_runs or any(
                entry.kind == Kind.DEFAULT for entry in self.pool.flying.values()):
            return False
        since = sum(row["kind"] is Kind.SEARCH and row["trial"] > defaults[-1]["trial"] for row in self.table.rows)
        return since >= self.settings.noise.defaults_every

    def launch_defaults_again(self, default: Mapping[str, Any]) -> None:
        if self.pool.launcher.workers == 1:
            self.progress.running(self.table.next_trial(), None, self.baseline)
        self.launch(self.baseline, Kind.DEFAULT, Proposal.starting(), self.timeout(default),
                    self.settings.runner.defaults_timeout)

    def within_budget(self, limit: int | None, pending: int = 0) -> bool:
        """Whether another search trial may start, with ``pending`` search trials started and not yet recorded."""
        searched = sum(row["kind"] in (Kind.SEARCH, Kind.REUSED) for row in self.table.rows)
        if limit is not None and searched + pending >= limit:
            return False
        minutes = self.settings.minutes
        if minutes is not None and self.tuning_seconds() >= 60 * minutes:
            self.progress.print(f"budget.minutes={minutes:g} reached")
            return False
        return True

    def confirm(self, default: Mapping[str, Any]) -> Verdict | None:
        """The defaults and the best few trials measured again in interleaved rounds (autopager.confirmation)."""
        if self.settings.confirm.rounds == 0:
            return None
        return Confirmation(self, default).run()

    def shown_limit(self, limit: int | None) -> int | None:
        """The last trial number of the search, as planned from its start so that it does not grow: trial numbers
        count the defaults' runs (those planned among ``limit`` search trials: one every noise.defaults_every, up
        to noise.defaults_runs) and the kernel-mmap row too."""
        if limit is None:
            return None
        noise = self.settings.noise
        planned = 1 + min(max(0, noise.defaults_runs - 1), max(0, limit - 1) // max(1, noise.defaults_every))
        defaults = max(planned, sum(row["kind"] is Kind.DEFAULT for row in self.table.rows))
        return limit + defaults + (self.mmap_runner is not None) - 1

    def report(self, row: Mapping[str, Any], limit: int | None) -> None:
        best = self.incumbent()
        runs = defaults_runs(self.table.rows)
        measured = self.measured_defaults()
        self.progress.trial(row, self.shown_limit(limit), best and best["value"],
                            statistics.median(runs) if runs else None, measured and measured["trial"])
        self.write_summary()

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
                      if row["status"] is Status.OK and row["kind"] in MEASURED]
            if values:
                found.append((self.workload.goal.best(values, key=float), config_path.parent))
        if not found:
            return None
        return self.workload.goal.best(found, key=lambda item: item[0])

    def finish(self, default: Mapping[str, Any], kernel: Mapping[str, Any] | None, strategy: Strategy,
               verdict: Verdict | None) -> dict[str, Any]:
        best = self.incumbent()
        metric, goal = self.workload.metric, self.workload.goal
        rows = [row for row in self.table.rows if row["kind"] is not Kind.MMAP]
        failed = sum(row["status"] is Status.FAILED for row in rows)
        capped = sum(row["status"] is Status.CAPPED and row["kind"] is Kind.SEARCH for row in rows)
        reused = sum(row["kind"] is Kind.REUSED for row in rows)
        reference = self.defaults_value(default)
        gain = goal.speedup(best["value"], reference[0])
        runs = len(defaults_runs(self.table.rows))
        of_runs = f"median of {runs} runs" if runs > 1 else "1 run"
        lines = [("study", str(self.directory)),
                 ("best measured", f"{format_value(best['value'], metric)} (trial {best['trial']}, "
                                   f"{len(runs_of(best))} run{'s' if len(runs_of(best)) > 1 else ''})"),
                 ("parameters", show_params(row_params(best))),
                 ("speedup over defaults", f"{'at least ' if reference[1] else ''}{gain:.2f}x (defaults: "
                                           f"{'over ' if reference[1] else ''}{format_value(reference[0], metric)}"
                                           f"{'' if reference[1] else f', {of_runs} during the search'}"
                                           f"{defaults_pages(default)})")]
        modelled = strategy.modelled_best()
        if modelled is not None:
            params, mean, sem = modelled
            error = f" +- {sem:.3g}" if sem is not None else ""
            lines.append(("Ax's modelled best",
                          f"{format_value(mean, metric)}{error} predicted: {show_params(params)}"))
        pagesize = self.pagesize_best()
        if pagesize:
            lines.append(("speedup over page size", f"{goal.speedup(best['value'], pagesize[0]):.2f}x "
                                                    f"(page-size-only best: {format_value(pagesize[0], metric)})"))
        if kernel is not None:
            lines.append(("speedup over kernel mmap", f"{goal.speedup(best['value'], kernel['value']):.2f}x "
                                                      f"(kernel mmap: {format_value(kernel['value'], metric)})"
                          if kernel["status"] is Status.OK else f"- (kernel mmap failed: {kernel['error']})"))
        measured_noise = relative_noise(defaults_runs(self.table.rows))
        lines.append(("noise", f"+-{100 * self.noise():.1f}% a run (the spread of the defaults' {runs} runs)"
                      if measured_noise is not None else f"+-{100 * self.noise():.1f}% a run, assumed (noise.assumed): "
                      f"{'the defaults ran once' if runs == 1 else 'no run of the defaults measured it'}"))
        if verdict is not None:
            lines += self.confirmed_lines(verdict)
        lines += self.read_amplification(best)
        answered = f", {reused} answered from an earlier trial" if reused else ""
        lines += [("trials", f"{len(rows)} ({failed} failed, {capped} capped{answered})"),
                  ("tuning time", f"{self.progress.elapsed():.1f} s this session, loading and preparation included "
                                  f"({self.tuning_seconds():.1f} s in the study's trials)")]
        summary = {"directory": self.directory, "best": best, "default": default, "kernel_mmap": kernel,
                   "speedup": gain, "trials": len(rows),
                   "failed": failed, "capped": capped, "reused": reused, "tuning_seconds": self.tuning_seconds(),
                   "profile": None, "verdict": verdict}
        if self.config.study.save_profile:
            lines.append(("profile", self.save(best, default, gain, verdict, summary)))
        self.progress.summary(lines)
        run = [row for row in self.ok_rows() if row["kind"] in MEASURED]
        top = sorted(run, key=lambda row: goal.loss(row["value"]))[:5]
        self.progress.table(top, list(self.space.dimensions))
        self.write_summary(FINISHED)
        return summary

    def read_amplification(self, best: Mapping[str, Any]) -> list[tuple[str, str]]:
        """A line when the trials read many times the workload's data (its data_files) through the pager, from the
        pager statistics the table records: pages too large, or a buffer too small, for the access pattern."""
        data = sum(path.stat().st_size for path in self.workload.data_paths() if path.is_file())
        read = [(row, row["bytes_read"] / data) for row in self.ok_rows() if row["kind"] in MEASURED
                and data and row.get("bytes_read")]
        many = [(row, ratio) for row, ratio in read if ratio >= READ_AMPLIFICATION]
        if not many:
            return []
        best_ratio = next((ratio for row, ratio in read if row is best), None)
        of_best = (f"; the best trial {best['trial']} read {best_ratio:.1f}x" if best_ratio is not None else "")
        return [("read amplification", f"{len(many)} of {len(read)} trials read {READ_AMPLIFICATION:g}x or more of "
                                       f"the {format_size(data)} of data (up to {max(r for _, r in many):.1f}x"
                                       f"{of_best}): pages too large or buffer too small for random access")]

    def write_summary(self, state: str = RUNNING) -> None:
        """summary.json beside the table (autopager.studyview), rewritten after every trial."""
        write_summary(self.directory, state, self.limit)

    def defaults_value(self, default: Mapping[str, Any]) -> tuple[float, bool]:
        """The defaults' value (the median of their runs) and whether it is only a bound (their runs were capped
        at runner.defaults_timeout: then the wall time they ran is a lower bound of their time)."""
        runs = defaults_runs(self.table.rows)
        if runs:
            return statistics.median(runs), False
        return default["wall_seconds"], True

    def confirmed_lines(self, verdict: Verdict) -> list[tuple[str, str]]:
        metric = self.workload.metric
        if verdict.winner is None:
            return [("confirmed", "no candidate completed its confirmation runs")]
        winner = verdict.winner
        low, high = min(winner.values), max(winner.values)
        lines = [("confirmed best", f"{format_value(winner.median, metric)} median of {len(winner.values)} runs "
                                    f"({low:.4g}-{high:.4g}), {winner.label}: {show_params(winner.params)}")]
        if verdict.speedup is not None and verdict.speedup_spread is not None:
            low, high = verdict.speedup_spread
            lines.append(("confirmed speedup", f"{verdict.speedup:.2f}x (per round {low:.2f}-{high:.2f}x; "
                                               f"noise +-{100 * verdict.noise:.1f}%)"))
        nodes = sorted({row["node"] for row in self.table.rows if row["kind"] is Kind.CONFIRM and row["node"]})
        if len(nodes) > 1:  # several workers: the rounds' runs went to whichever node was free
            lines.append(("confirmed on nodes", f"{', '.join(nodes)} (each run's node is in the table)"))
        return lines

    def save(self, best: Mapping[str, Any], default: Mapping[str, Any], gain: float, verdict: Verdict | None,
             summary: dict[str, Any]) -> str:
        """Save the profile: the confirmed winner (if it replaces the saved profile), else without confirmation the
        best measured trial (if better than the saved one). What the summary says of it."""
        directory = Path(self.config.profile_dir).expanduser()
        if verdict is None:
            path, written = save_profile(self.profile_record(row_params(best), best["value"], default["value"], gain),
                                         directory)
            summary["profile"] = path
            return f"{'saved' if written else 'kept (it is better)'}: {path}"
        if not verdict.replace_profile:
            if verdict.winner is None or verdict.speedup is None or verdict.speedup <= 1:
                return "not saved: no candidate beat the defaults in the confirmation"
            if verdict.profile is verdict.winner:
                return "kept: the saved profile's parameters are the confirmed best"
            return "kept: the saved profile is within the noise of the confirmed best"
        winner = verdict.winner
        record = self.profile_record(winner.params, winner.median, verdict.defaults.median, verdict.speedup)
        record.update(runs=len(winner.values), spread=[min(winner.values), max(winner.values)],
                      speedup_spread=[round(x, 3) for x in verdict.speedup_spread], noise=round(verdict.noise, 4),
                      confirmed=True)
        path = write_profile(record, directory)
        summary["profile"] = path
        low, high = verdict.speedup_spread
        if low <= 1:
            ratios = round_ratios(self.workload.goal, winner.values, verdict.defaults.values)
            slower = sum(ratio <= 1 for ratio in ratios)
            return (f"saved, confirmed on the median only ({slower} of {len(ratios)} rounds no better "
                    f"than the defaults: {low:.2f}-{high:.2f}x): {path}")
        return f"saved (confirmed): {path}"

    def profile_record(self, params: Params, value: float, default_value: float, gain: float) -> dict[str, Any]:
        return {
            "workload": self.workload.name,
            "params": params,
            "metric": self.workload.metric,
            "goal": self.workload.goal.value,
            "value": value,
            "default_value": default_value,
            "speedup_over_default": round(gain, 3) if math.isfinite(gain) else None,
            "found_on": {"workload": self.workload.knobs, "machine": this_machine()},
            "strategy": self.strategy_name,
            "trials": len(self.table.rows),
            "study": str(self.directory.resolve()),
            "searched": [name for name in self.space.dimensions  # the parameters its trials varied
                         if len({row[name] for row in self.table.rows if row["kind"] != "reused"}) > 1],
        }
