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
configuration, ``tuner.lock`` (one tuner a study) and ``trials.csv`` (autopager.tuner.table), one row a trial: its
parameters, status, metric (the median of the repeats), the repeats, wall time, timeout, exit code, error, the
tail of stderr, the checksum of its answer, when it was asked for, how long the strategy took to propose it and
what proposed it. The table is rewritten after every trial. Trials run through the study's launcher
(autopager.tuner.launchers), ``launcher.workers`` at once, each with the node it ran on and when its run started and
ended there; the trials in flight are listed in ``in_flight.json`` (autopager.tuner.in_flight), so a study killed at any moment loses no finished trial; running it
again (same workload, space, strategy and study name) runs again the trials that were in flight, gives the
finished trials back to the strategy and goes on. SIGTERM ends the study as Ctrl-C does: the trials in flight
are killed, the finished ones are kept.

The defaults' first run is the reference: it validates the program's answer in full, and its checksum (a summary
of the answer the workload prints, in the table's ``checksum`` column) is what every later run of the study must
print; those runs skip their workload's expensive checks (autopager.run.runner). A run that prints another checksum
has failed: a wrong answer.

A strategy may propose parameters the study has already measured (Ax's model, continuous, maps several of
its points to one point of the sampled space): that trial is not run again; its recorded result is given
back and the table has a row of kind ``reused`` naming the trial it came from (``reused_from``).

With ``baseline.mmap=true`` the study also measures the workload on the kernel's mmap after the defaults
(autopager/run/kernel_mmap.py): a row of kind ``mmap``, which is no trial (no strategy is told of it). A strategy that
keeps a state of its own (Ax) saves it beside the table at the end (``Strategy.save``), for the analysis.
"""
from __future__ import annotations

import contextlib
import errno
import functools
import statistics
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from omegaconf import DictConfig, OmegaConf

from autopager.checks import flag
from autopager.errors import ConfigError, StudyError
from autopager.parameters import format_size, show_params
from autopager.run.kernel_mmap import mmap_runner
from autopager.run import setup_warnings
from autopager.run.runner import RESULT, Runner
from autopager.run.settings import StudySettings
from autopager.run.workloads import Workload
from autopager.tuner import outcome
from autopager.tuner.buffer_ladder import DEFAULT_RUNGS, LADDER, ladder, rung_count
from autopager.tuner.confirmation import Confirmation, Verdict
from autopager.tuner.first_points import FirstPoints
from autopager.tuner.front_confirmation import summary_lines
from autopager.tuner.in_flight import InFlight, InFlightRecord
from autopager.tuner.interrupts import terminate_as_interrupt
from autopager.tuner.launchers import launcher_settings, make_launcher
from autopager.tuner.measuring import Proposal, defaults_runs, relative_noise
from autopager.tuner.memory_front import Objective
from autopager.tuner.progress import OUTPUTS, Progress, pager_pages, format_value
from autopager.tuner.scheduler import Scheduler
from autopager.tuner.search import Search
from autopager.tuner.space import MMAP as MMAP_SETTING, Space
from autopager.tuner.stopping import AUTO as PLATEAU_AUTO, plateau_trials
from autopager.tuner.strategies import check_settings, make_strategy
from autopager.tuner.strategies.base import Strategy
from autopager.tuner.study_directory import (CONFIG, TABLE, changed_identity, check_resumable, default_directory,
                                             default_name, study_directory)
from autopager.tuner.studylock import FINISHED, RUNNING, StudyLock
from autopager.tuner.table import StudyTable, write_atomically
from autopager.tuner.trial import Kind, Status, Trial
from autopager.tuner.trial_pool import TrialPool
from autopager.tuner.trials import MEASURED, Trials
from autopager.tuner.warm_start import ORIGIN as WARM, seeds as warm_seeds

WRITE_FAILURES = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO, errno.EFBIG}


# (study directory, state, trial budget, why the search stopped early)
SummaryWriter = Callable[[Path, str, Optional[int], Optional[str]], None]


class Study:
    def __init__(self, config: DictConfig, space_name: str = "default", write_summary: SummaryWriter | None = None):
        """Check everything the study needs (settings, space, workload) without running or writing anything.
        ``write_summary`` (autopager.analysis.summary.write_summary; None: no summary.json) is called after every
        trial and at the end: the summary reads the table as the analysis does, a layer above the tuner."""
        self.config = config
        self.summary_writer = write_summary
        for setting in ("study.resume", "study.save_profile", "baseline.mmap"):
            flag(setting, OmegaConf.select(config, setting, default=False))
        for setting in ("study.root", "profile_dir"):
            if not str(OmegaConf.select(config, setting, default="") or "").strip():
                raise ConfigError(f"{setting} must be a directory, not empty")
        self.settings = StudySettings.from_config(config)
        self.workload = Workload.from_config(config.workload, config.data_dir)
        self.space = Space(config.space, config.baseline)
        self.baseline = self.space.defaults
        check_settings(config.strategy)
        self.strategy_name = config.strategy.name
        self.objective = Objective.from_config(config, self.space.dimensions)
        self.plateau = plateau_trials(config.budget.get("plateau", PLATEAU_AUTO), self.strategy_name)
        self.warm_start = (warm_seeds(str(config.warm_start), self.space, self.workload.goal, self.workload.buffer_size,
                                      Path(config.profile_dir).expanduser()) if config.get("warm_start") else None)
        rungs = rung_count(config.get("buffer_ladder", DEFAULT_RUNGS))
        self.ladder_at = self.warm_start[0][0] if self.warm_start and self.warm_start[0] else None
        self.ladder = ladder(self.space, rungs if self.objective.weighs_memory else 0, self.ladder_at)
        self.runner = Runner.from_config(self.workload, config.runner)
        self.mmap_runner = mmap_runner(self.workload, config.runner) if config.baseline.get(MMAP_SETTING) else None
        launcher_settings(config.launcher)
        self.passed_over: list[Path] = []  # default-named studies of other settings, beside which this one goes
        if config.study.name:
            self.directory = study_directory(config.study.root, self.workload.name, str(config.study.name))
        else:
            name = default_name(self.strategy_name, space_name, self.workload.size, self.workload.buffer_size,
                                self.runner.repeats)
            self.directory, self.passed_over = default_directory(config.study.root, self.workload.name, name, config)
        check_resumable(self.directory, config)
        self.workload.check()
        self.lock = StudyLock(self.directory)
        self.table: StudyTable  # read under the lock when the study begins
        output = config.study.get("output", "normal")
        if output not in OUTPUTS:
            raise ConfigError(f"study.output must be one of {', '.join(OUTPUTS)} (-q, -v), not {output!r}")
        self.progress = Progress(self.workload.metric, self.workload.goal, self.space.dimensions, output=output)

    # --- the study -------------------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        """The defaults (unless a resumed study has them), the strategy's trials, the confirmation; the summary."""
        with terminate_as_interrupt(), self.writing_stops_the_study():
            self.begin()
            try:
                with make_launcher(self.config.launcher, self.directory) as launcher:
                    pool = TrialPool(launcher, InFlightRecord(self.directory), self.workload,
                                     OmegaConf.to_container(self.config.runner, resolve=True))
                    self.scheduler = Scheduler(pool, self.trials, self.space, self.runner, self.report)
                    left = self.rerun_left_trials()
                    self.progress.loading(self.strategy_name)
                    launched = self.launch_defaults()
                    strategy = make_strategy(self.strategy_name, self.space, self.workload.goal,
                                             OmegaConf.to_container(self.config.strategy, resolve=True),
                                             self.settings.seed, self.objective.strategy_settings())  # set up (Ax: imported) while the defaults run
                    warm, origin = self.warm_start or ([], "")
                    first = [(point, origin) for point in warm] + [(point, LADDER) for point in self.ladder]
                    if first:
                        strategy = FirstPoints(strategy, first)
                    self.search = Search(strategy, self.strategy_name, self.scheduler, self.trials, self.space,
                                         self.settings, self.progress, self.report, self.shown_limit, self.plateau,
                                         caps_by_buffer=self.objective.weighs_memory)
                    if pool.launcher.workers > 1 and isinstance(launched, InFlight) and pool.count == 1:
                        launched = self.search.run(None, alongside=launched)  # the other workers search
                    default = self.defaults(launched)
                    kernel = self.kernel_mmap(default)
                    self.scheduler.drain(left)  # the trials an earlier tuner left: in the table before the search
                    self.search.run(default)
                    self.search.measure_front_again(default, self.objective)
                    verdict = self.confirm(default)
                    self.scheduler.drain()  # the defaults' runs of the search still in flight, without confirmation
                    strategy.save(self.directory)
                return self.finish(default, kernel, strategy, verdict)
            finally:
                self.lock.release()

    def rerun_left_trials(self) -> list[InFlight]:
        """Launch again the trials an earlier tuner of the study left in flight; those trials."""
        if any(trial.kind is Kind.DEFAULT and trial.measured_by == RESULT for trial in self.table.rows):
            self.runner.require_result()  # as the defaults' run showed, before the left trials are launched again
        pool = self.scheduler.pool
        again = pool.left_by_earlier_tuner(self.table.rows)
        if again:
            self.progress.print(f"running again {len(again)} trial(s) in flight when the study stopped")
        for entry in again:
            pool.submit(entry, result_required=not self.runner.times_process, checksum=self.trials.reference_checksum())
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
        check_resumable(self.directory, self.config)
        table = StudyTable(self.directory / TABLE)
        write_atomically(self.directory / CONFIG, OmegaConf.to_yaml(self.config, resolve=True))
        self.table = table
        self.trials = Trials(table, self.workload, self.settings)
        self.search: Search | None = None  # once the strategy is set up
        resumed = len(self.table.rows)
        state = f"resuming after {resumed} trials" if resumed else "new"
        if self.passed_over:
            state += (f"; {self.passed_over[-1]} holds a study of other "
                      f"{', '.join(changed_identity(self.passed_over[-1], self.config))} settings")
        self.progress.print(f"study {self.directory} ({state}): workload {self.workload.name}, "
                            f"strategy {self.strategy_name}\nspace:\n{self.space.describe()}")
        if self.warm_start is not None:
            points, origin = self.warm_start
            self.progress.print(f"warm start: {len(points)} point(s) from {origin[len(WARM):]} measured first")
        if self.ladder:
            at = "at the warm start's best other parameters" if self.ladder_at else "the defaults at each"
            self.progress.print(f"buffer ladder: {', '.join(format_size(point['buffer_size']) for point in self.ladder)}"
                                f" measured first, {at}")
        self.runner.prepare_or_fail(self.progress.print)

    def launch_defaults(self) -> InFlight | Trial | None:
        """The defaults' first trial, unless the study has it (None): in flight (left by a killed tuner and running
        again, or handed to the launcher now: in full, unless runner.defaults_timeout bounds it)."""
        if self.trials.measured_defaults() is not None:
            return None
        left = next((entry for entry in self.scheduler.pool.flying.values() if entry.kind == Kind.DEFAULT), None)
        if left is not None:
            return left
        self.progress.running(self.table.next_trial(), None, self.baseline)
        return self.scheduler.launch(self.baseline, Kind.DEFAULT, Proposal.starting(), self.trials.timeout(None),
                           self.settings.runner.defaults_timeout)

    def defaults(self, launched: InFlight | Trial | None) -> Trial:
        """The defaults' first trial (``launched`` by ``launch_defaults``), once it has ended. Its failure ends the
        study."""
        done = self.trials.measured_defaults()
        if launched is None and done is not None:
            if done.measured_by == RESULT:
                self.runner.require_result()
            return done
        trial = self.scheduler.wait_for(launched) if isinstance(launched, InFlight) else launched
        self.report(trial, None)
        if trial.ok:  # the data is there now, also where the program writes it
            self.progress.warn(setup_warnings.data_in_buffer(self.workload))
            self.progress.warn(setup_warnings.short_run(trial.wall_seconds, len(trial.values)))
        if trial.measured_by == RESULT:
            self.runner.require_result()
        if trial.status is Status.FAILED:
            failure = f"the defaults' run failed: {trial.error}\n{trial.stderr_tail or ''}".rstrip()
        else:
            failure = self.pager_unused(trial)
        if failure:
            for entry in [entry for entry in self.scheduler.pool.flying.values() if entry.kind == Kind.SEARCH]:
                self.scheduler.pool.drop(entry)  # started alongside the defaults: not measured, not to be run again
            raise StudyError(failure)
        return trial

    def pager_unused(self, default: Trial) -> str | None:
        """Why a program that does not use the pager has nothing to tune (the study stops after the defaults)."""
        faults = default.stats.get("faults")
        if (self.strategy_name == "default" or self.settings.trials == 0 or not default.ok or (faults or 0) > 0):
            return None  # nothing to tune, or a run stopped before it could print its statistics
        seen = ("printed no pager statistics" if faults is None
                else "took no page faults through the pager")
        return (f"the program {seen} in the defaults' run (UMAP_PRINT_STATS=1): it does not use the pager, so its "
                f"paging parameters cannot change its time; tuning would measure noise. Run it on autopager (link "
                f"libumap, or use autopager.memmap) and tune again")

    def kernel_mmap(self, default: Trial) -> Trial | None:
        """With baseline.mmap, the kernel-mmap trial: measured now unless the study has it. Its failure is reported,
        and the study goes on."""
        if self.mmap_runner is None:
            return None
        done = [trial for trial in self.table.rows if trial.kind is Kind.MMAP]
        if done:
            return done[-1]
        limit = format_size(self.mmap_runner.memory_limit)
        left = next((entry for entry in self.scheduler.pool.flying.values() if entry.kind == Kind.MMAP), None)
        if left is not None:  # left in flight by a killed tuner, and running again
            trial = self.scheduler.wait_for(left)
        else:  # on a node, in a memory cgroup there
            self.progress.warn(setup_warnings.kernel_holds_data(self.workload, self.mmap_runner.memory_limit))
            self.progress.print(f"measuring the kernel's mmap in a {limit} memory cgroup...")
            trial = self.scheduler.run_trial({}, Kind.MMAP, Proposal.starting(), self.trials.timeout(default), None)
        outcome_text = format_value(trial.value, self.workload.metric) if trial.ok else f"FAILED ({trial.error})"
        self.progress.print(f"kernel mmap ({limit} memory cgroup): {outcome_text}")
        return trial

    def confirm(self, default: Trial) -> Verdict | None:
        """The defaults and the best few trials measured again in interleaved rounds (autopager.tuner.confirmation)."""
        if self.settings.confirm.rounds == 0:
            return None
        profile_dir = Path(self.config.profile_dir).expanduser() if self.config.study.save_profile else None
        return Confirmation(self.scheduler, self.space, self.settings, self.progress, profile_dir, default,
                            self.objective).run()

    def shown_limit(self, limit: int | None) -> int | None:
        """The last trial number of the search, as planned from its start so that it does not grow: trial numbers
        count the defaults' runs (those planned among ``limit`` search trials: one every noise.defaults_every, up
        to noise.defaults_runs) and the kernel-mmap row too."""
        if limit is None:
            return None
        noise = self.settings.noise
        planned = 1 + min(max(0, noise.defaults_runs - 1), max(0, limit - 1) // max(1, noise.defaults_every))
        defaults = max(planned, sum(trial.kind is Kind.DEFAULT for trial in self.table.rows))
        return limit + defaults + (self.mmap_runner is not None) - 1

    def report(self, trial: Trial, limit: int | None) -> None:
        best = self.trials.incumbent()
        runs = defaults_runs(self.table.rows)
        measured = self.trials.measured_defaults()
        self.progress.trial(trial, self.shown_limit(limit), best and best.value,
                            statistics.median(runs) if runs else None, measured and measured.number)
        self.write_summary()

    # --- the end ---------------------------------------------------------------------------------------

    def finish(self, default: Trial, kernel: Trial | None, strategy: Strategy,
               verdict: Verdict | None) -> dict[str, Any]:
        best = self.trials.incumbent()
        metric, goal = self.workload.metric, self.workload.goal
        trials = [trial for trial in self.table.rows if trial.kind is not Kind.MMAP]
        failed = sum(trial.status is Status.FAILED for trial in trials)
        capped = sum(trial.status is Status.CAPPED for trial in trials)
        reused = sum(trial.kind is Kind.REUSED for trial in trials)
        searched = sum(trial.kind in (Kind.SEARCH, Kind.REUSED) for trial in trials)
        budget = self.search.limit if self.search is not None else None
        reference = self.trials.defaults_value(default)
        gain = goal.speedup(best.value, reference[0])
        runs = len(defaults_runs(self.table.rows))
        of_runs = f"median of {runs} runs" if runs > 1 else "1 run"
        lines = [("study", str(self.directory)),
                 ("best measured", f"{format_value(best.value, metric)} (trial {best.number}, "
                                   f"{len(best.runs)} run{'s' if len(best.runs) > 1 else ''})"),
                 ("parameters", show_params(dict(best.params))),
                 ("speedup over defaults", f"{'at least ' if reference[1] else ''}{gain:.2f}x (defaults: "
                                           f"{'over ' if reference[1] else ''}{format_value(reference[0], metric)}"
                                           f"{'' if reference[1] else f', {of_runs} during the search'}"
                                           f"{pager_pages(default)})")]
        modelled = strategy.modelled_best()
        if modelled is not None:
            params, mean, sem = modelled
            error = f" +- {sem:.3g}" if sem is not None else ""
            lines.append(("Ax's modelled best",
                          f"{format_value(mean, metric)}{error} predicted: {show_params(params)}"))
        pagesize = outcome.pagesize_best(self.directory, OmegaConf.to_container(self.config.workload, resolve=True), goal)
        if pagesize:
            lines.append(("speedup over page size", f"{goal.speedup(best.value, pagesize[0]):.2f}x "
                                                    f"(page-size-only best: {format_value(pagesize[0], metric)})"))
        if kernel is not None:
            lines.append(("speedup over kernel mmap", f"{goal.speedup(best.value, kernel.value):.2f}x "
                                                      f"(kernel mmap: {format_value(kernel.value, metric)})"
                          if kernel.ok else f"- (kernel mmap failed: {kernel.error})"))
        lines.append(("noise", outcome.noise_line(self.trials.noise(), runs,
                                                  relative_noise(defaults_runs(self.table.rows)) is not None)))
        if verdict is not None:
            lines += outcome.confirmed_lines(verdict, metric, self.table.rows)
        lines += outcome.read_amplification(self.workload, self.trials, best)
        answered = f", {reused} answered from an earlier trial" if reused else ""
        if self.search is not None and self.search.stopped is not None:
            lines.append(("stopped", self.search.stopped.line()))
        objective_lines, front_table = summary_lines(self.objective, self.table.rows, goal, metric,
                                                     self.settings.confirm.rounds)
        lines += objective_lines
        chosen = self.objective.chosen(self.table.rows, goal, best)
        defaults, confirmation = (sum(trial.kind is kind for trial in trials) for kind in (Kind.DEFAULT, Kind.CONFIRM))
        lines += [("trials", outcome.trial_counts(f"{searched}{f'/{budget}' if budget else ''}", defaults, confirmation,
                                                  failed, capped) + answered),
                  ("tuning time", f"{self.progress.elapsed():.1f} s this session, loading and preparation included "
                                  f"({self.trials.tuning_seconds():.1f} s in the study's trials)")]
        summary = {"directory": self.directory, "best": best, "default": default, "kernel_mmap": kernel,
                   "speedup": gain, "trials": len(trials),
                   "failed": failed, "capped": capped, "reused": reused, "tuning_seconds": self.trials.tuning_seconds(),
                   "profile": None, "verdict": verdict, "stopped": self.search and self.search.stopped}
        if self.config.study.save_profile:
            record_of = functools.partial(outcome.profile_record, self.workload, self.strategy_name, self.trials,
                                          self.directory, self.space.dimensions)
            saved = (outcome.save(record_of, Path(self.config.profile_dir).expanduser(), goal, chosen, default,
                                  goal.speedup(chosen.value, reference[0]), verdict, summary) if chosen is not None else "not saved: no trial meets the objective")
            lines.append(("profile", saved))
        self.progress.summary(lines)
        for line in front_table:
            self.progress.show(line)
        run = [trial for trial in self.trials.ok_rows() if trial.kind in MEASURED]
        top = sorted(run, key=lambda trial: goal.loss(trial.value))[:5]
        self.progress.table(top, list(self.space.dimensions))
        self.write_summary(FINISHED)
        return summary

    def write_summary(self, state: str = RUNNING) -> None:
        """summary.json beside the table, rewritten after every trial."""
        if self.summary_writer is not None:
            stopped = None if self.search is None or self.search.stopped is None else self.search.stopped.line()
            self.summary_writer(self.directory, state, None if self.search is None else self.search.limit, stopped)
