#!/usr/bin/env python3
"""Issue 50's bars for warm starts and stopping on a plateau, measured with the tuner's own studies.

Warm start from the small size (``--warm W1,W2,...``): for each workload an Ax study at the small size, then at the
large size a cold Ax study and one warm-started from the small study (``warm_start=`` its directory). Reported:
after how many search trials each large study first reached the cold study's confirmed best within the noise (a
trial whose figure is better, or worse by at most NOISE_BAND x the cold study's noise, the spread of its defaults'
runs), against the bar of a third of the cold study's trials.

Stopping on a plateau (``--plateau W1,...``): for each workload an Ax study with ``budget.plateau=0`` (the whole
budget) and one with the default plateau (``--plateau-setting``, auto: 10 trials); reported: the search trials each
used, the share of the budget the plateau saved, and both confirmed bests, with their ratio against the noise (the
larger of the two studies' noise). A workload in both lists shares its cold study and its whole-budget study: they
are the same study (``ax``, ``budget.plateau=0``).

Every study runs on the evaluation's protocol (experiments/evaluation/studies.py: capped runs, noise runs, the
confirmation in 3 interleaved rounds, each run in a memory cgroup of the pager's memory) at the evaluation's sizes
(experiments/evaluation/plan.py: large 4 GiB of data with a 1 GiB buffer, small a quarter; ``--quick``: its tiny
sizes), or at ``--small``/``--large`` for every workload. The warm-start studies search their whole budget
(``budget.plateau=0``), so that "after how many trials" is not cut by a plateau. Each study is kept under
``OUT/studies/<scale>/<workload>/<study>/`` (its table, configuration and summary.json): a confirmed study is not run
again, one cut short resumes where it stopped, and none is removed. ``OUT/summary.md`` has the two tables and the
commands.

    sudo python3 -m experiments.warm_and_plateau --out results/warm-and-plateau --data-dir /var/tmp/apdata \\
        --warm sort,bfs,lookup --plateau stream,lmdb_readseq
"""
from __future__ import annotations

import argparse
import datetime
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from omegaconf import open_dict

from autopager.analysis.markdown import table
from autopager.analysis.result import StudyResult, load_study
from autopager.analysis.summary import read_summary, write_summary
from autopager.errors import ConfigError, StudyError
from autopager.parameters import format_size, parse_size
from autopager.run.goal import Goal
from autopager.run.workloads import Workload
from autopager.tuner.confirmation import outcome, recorded_candidates
from autopager.tuner.measuring import NOISE_BAND, defaults_runs, measured_defaults, relative_noise
from autopager.tuner.stopping import AUTO, plateau_stop, plateau_trials
from autopager.tuner.study import Study
from autopager.tuner.trial import Kind
from experiments import stop_on_termination
from experiments.evaluation.plan import BUDGETS, LARGE, REAL, REAL_QUICK, RUN_LENGTHS, SIZES, SMALL, Plan, Size, StudySpec
from experiments.evaluation.studies import Places, compose_workload, load_optimizer, prepare, study_overrides
from experiments.markdown import number, times

COLD, WARM, PLATEAU = "ax", "ax-warm", "ax-plateau"  # the large studies; the small one is SMALL/<workload>/ax
SUMMARY = "summary.md"


@dataclass(frozen=True)
class Setup:
    """What every study of a run shares: its sizes, Ax's budget, the plateau's setting, the extra overrides."""
    plan: Plan
    places: Places
    trials: int
    initialization: int
    plateau: str
    extra: tuple[str, ...]

    def spec(self, workload: str, scale: str, name: str, *overrides: str) -> StudySpec:
        return StudySpec(workload, scale, name, "ax", overrides=(
            f"strategy.initialization_trials={self.initialization}", f"strategy.trials={self.trials}",
            *overrides, *self.extra))

    def studies(self, warm: list[str], plateau: list[str]) -> list[StudySpec]:
        """In run order: a warm start's small study before its large ones."""
        specs: dict[str, StudySpec] = {}
        for workload in warm:
            small = self.spec(workload, SMALL, COLD, "budget.plateau=0")
            for spec in (small, self.spec(workload, LARGE, COLD, "budget.plateau=0"),
                         self.spec(workload, LARGE, WARM, "budget.plateau=0",
                                   f"warm_start={self.places.study(SMALL, workload, COLD)}")):
                specs[spec.label] = spec
        for workload in plateau:
            for spec in (self.spec(workload, LARGE, COLD, "budget.plateau=0"),
                         self.spec(workload, LARGE, PLATEAU, f"budget.plateau={self.plateau}")):
                specs.setdefault(spec.label, spec)
        return list(specs.values())

    def overrides(self, spec: StudySpec) -> list[str]:
        return study_overrides(spec, self.plan, self.places)


def run(spec: StudySpec, setup: Setup, prepared: set[tuple[str, ...]]) -> None:
    """The study, unless it is confirmed already (a study cut short resumes); its summary.json beside its table."""
    study = load_study(setup.places.study(spec.scale, spec.workload, spec.method))
    if study is not None and study.confirmed() is not None:
        print(f"{spec.label}: confirmed already")
        return
    config, choices = compose_workload(spec.workload, spec.scale, setup.overrides(spec), setup.plan)
    prepare(Workload.from_config(config.workload, config.data_dir), prepared)
    with open_dict(config):
        config.workload.prepare = None  # generated once a process, above
    print(f"{spec.label}: running", flush=True)
    Study(config, space_name=choices.get("space", "default"), write_summary=write_summary).run()


def noise(study: StudyResult) -> float:
    """The study's run-to-run noise, as its tuner measured it: the spread of its defaults' runs, else assumed."""
    measured = relative_noise(study.default_values())
    return measured if measured is not None else float((study.config.get("noise") or {}).get("assumed", 0.05))


def within(goal: Goal, value: float, target: float, band: float) -> bool:
    """``value`` as good as ``target`` within the noise: better, or worse by at most ``band`` of it."""
    return goal.better(value, target) or abs(value - target) <= band * abs(target)


def searched(study: StudyResult) -> list:
    """The search's trials in trial order, as its budget counts them (answered ones included)."""
    return sorted(study.of_kind(Kind.SEARCH, Kind.REUSED), key=lambda trial: trial.number)


def first_reaching(study: StudyResult, target: float, band: float) -> int | None:
    """After how many search trials the study first had one within ``band`` of ``target`` (None: never)."""
    goal = Goal.parse(study.goal)
    return next((count for count, trial in enumerate(searched(study), 1)
                 if trial.ok and within(goal, trial.value, target, band)), None)


def confirmed_text(study: StudyResult | None) -> str | None:
    confirmed = study and study.confirmed()
    if not confirmed:
        return None if study is None else study.unconfirmed()
    return (f"{number(confirmed['value'])} (trial {confirmed['trial']}, {times(confirmed['speedup'])} the defaults, "
            f"{confirmed['low']:.2f}-{confirmed['high']:.2f}x a round)")


def warm_rows(workloads: list[str], places: Places) -> list[list]:
    rows = []
    for workload in workloads:
        small, cold, warm = (load_study(places.study(scale, workload, name))
                             for scale, name in ((SMALL, COLD), (LARGE, COLD), (LARGE, WARM)))
        target = cold and cold.confirmed()
        if not target:
            rows.append([workload, confirmed_text(small), confirmed_text(cold), None, None, confirmed_text(warm),
                         None, None])
            continue
        band = NOISE_BAND * noise(cold)
        cold_at = first_reaching(cold, target["value"], band)
        warm_at = warm and first_reaching(warm, target["value"], band)
        budget = len(searched(cold))
        meets = reached = None
        if warm is not None:
            meets = "yes" if warm_at is not None and 3 * warm_at <= budget else "no"
            reached = f"{warm_at} of {len(searched(warm))}" if warm_at else f"not in {len(searched(warm))}"
        rows.append([workload, confirmed_text(small), f"{confirmed_text(cold)}; within {100 * band:.1f}%",
                     f"{cold_at} of {budget}", reached, confirmed_text(warm), f"{budget / 3:g}", meets])
    return rows


def plateau_rows(workloads: list[str], places: Places) -> list[list]:
    rows = []
    for workload in workloads:
        whole, stopped = (load_study(places.study(LARGE, workload, name)) for name in (COLD, PLATEAU))
        used = [None if study is None else len(searched(study)) for study in (whole, stopped)]
        saved = None if None in used or not used[0] else f"{100 * (1 - used[1] / used[0]):.0f}%"
        confirmed = [study and study.confirmed() for study in (whole, stopped)]
        ratio = meets = None
        if all(confirmed):
            goal = Goal.parse(whole.goal)
            band = NOISE_BAND * max(noise(whole), noise(stopped))
            ratio = f"{times(goal.speedup(confirmed[1]['value'], confirmed[0]['value']))} (noise band {100 * band:.1f}%)"
            kept = within(goal, confirmed[1]["value"], confirmed[0]["value"], band)
            meets = "yes" if kept and 1 - used[1] / used[0] >= 0.3 else "no"
        summary = read_summary(places.study(LARGE, workload, PLATEAU)) if stopped is not None else None
        rows.append([workload, used[0], used[1], saved, confirmed_text(whole), confirmed_text(stopped), ratio,
                     (summary or {}).get("stopped") or "-", meets])
    return rows


def replayed_stop(study: StudyResult, plateau: int) -> int | None:
    """After how many search trials ``budget.plateau=plateau`` would have ended the study (None: never)."""
    goal, trials = Goal.parse(study.goal), searched(study)
    assumed = float((study.config.get("noise") or {}).get("assumed", 0.05))
    rows = sorted((row for row in study.recorded if row.kind not in (Kind.MMAP, Kind.CONFIRM)),
                  key=lambda row: row.number)
    for count, trial in enumerate(trials, 1):
        before = [row for row in rows if row.number <= trial.number]
        measured = relative_noise(defaults_runs(before))
        if plateau_stop(before, goal, assumed if measured is None else measured, plateau, count, len(trials)):
            return count
    return None


def replay_rows(directories: list[Path], plateau: int) -> list[list]:
    rows = []
    for directory in directories:
        study = load_study(directory)
        whole = study and study.confirmed()
        if not whole:
            why = "no study's table here" if study is None else confirmed_text(study)
            rows.append([str(directory), None, None, None, why, None, None, "not known"])
            continue
        goal, trials = Goal.parse(study.goal), searched(study)
        stop = replayed_stop(study, plateau)
        if stop is None:
            rows.append([str(directory), len(trials), "never", "0%", confirmed_text(study), "the same", "1.00x", "no"])
            continue
        last = trials[stop - 1].number
        candidates = recorded_candidates(study.recorded)
        defaults = candidates.pop(measured_defaults(study.recorded).number, None)
        kept = [c for c in candidates.values() if c.trial is not None and c.trial <= last]
        winner, _, _ = outcome(goal, defaults, kept, study.confirm_rounds)
        saved = 1 - stop / len(trials)
        band = NOISE_BAND * noise(study)
        before = [trial for trial in trials[:stop] if trial.ok]
        if winner is None and before:
            first, everything = (goal.best(ok, key=lambda trial: trial.value)
                                 for ok in (before, [trial for trial in trials if trial.ok]))
            stopped = (f"none of the {len(candidates)} candidates came before it; its best search run "
                       f"{number(first.value)} (trial {first.number}) against the whole's {number(everything.value)}")
            ratio, meets = f"{times(goal.speedup(first.value, everything.value))}, search runs", "not known"
        elif winner is None:
            stopped, ratio, meets = "no search trial succeeded before it", None, "no"
        else:
            stopped = (f"{number(winner.median)} (trial {winner.trial}; {len(kept)} of {len(candidates)} candidates "
                       f"before the stop)")
            ratio = f"{times(goal.speedup(winner.median, whole['value']))} (noise band {100 * band:.1f}%)"
            meets = "yes" if within(goal, winner.median, whole["value"], band) and saved >= 0.3 else "no"
        rows.append([str(directory), len(trials), stop, f"{100 * saved:.0f}%", confirmed_text(study), stopped, ratio,
                     meets])
    return rows


def write_replay_page(out: Path, directories: list[Path], plateau: int, command: str) -> Path:
    lines = [f"# Stopping on a plateau, replayed (issue 50), {datetime.date.today().isoformat()}", "",
             f"Studies run to their whole budget, read back: where budget.plateau={plateau} would have ended each (the "
             "rule sees only the trials before each stop, so this is where it stops), and the confirmed best it would "
             "have kept: the best, in the whole study's confirmation rounds, of its candidates up to the stop. The "
             "ratio is that over the whole study's confirmed best, as a speedup (below 1: worse). The bar: at least "
             "30% of the trials saved, the confirmed best within the noise.", "",
             table(["study", "search trials", "stops after", "saved", "confirmed best, whole budget",
                    "confirmed best, stopped", "ratio", "bar met"], replay_rows(directories, plateau)), "",
             "## Command", "", "```", command, "```", ""]
    path = out / SUMMARY
    path.write_text("\n".join(lines))
    return path


def write_summary_page(setup: Setup, warm: list[str], plateau: list[str], command: str) -> Path:
    places = setup.places
    lines = [f"# Warm start and stopping on a plateau (issue 50), {datetime.date.today().isoformat()}", "",
             f"Ax studies of {setup.trials} trials ({setup.initialization} Sobol), on the evaluation's protocol "
             f"(capped runs, noise runs, the confirmation in 3 interleaved rounds); the studies are in studies/.", ""]
    if warm:
        lines += ["## Warm start from the small size", "",
                  "A trial reaches the cold study's confirmed best when its figure is better, or worse by at most "
                  f"{NOISE_BAND:g} x the cold study's noise (the spread of its defaults' runs); the trials are the "
                  "search's, the warm seeds included. The bar: the warm study reaches it within a third of the cold "
                  "study's trials.", "",
                  table(["workload", "small: confirmed best", "large cold: confirmed best", "cold reached it after",
                         "warm reached it after", "large warm: confirmed best", "a third of cold's trials",
                         "bar met"], warm_rows(warm, places)), ""]
    if plateau:
        lines += ["## Stopping on a plateau", "",
                  f"The same Ax study with budget.plateau=0 (the whole budget) and with budget.plateau={setup.plateau}. "
                  "The ratio is the plateau study's confirmed best over the whole budget's, as a speedup (below 1: "
                  "worse). The bar: at least 30% of the trials saved, the confirmed best within the noise.", "",
                  table(["workload", "trials, whole budget", "trials, plateau", "saved", "confirmed best, whole budget",
                         "confirmed best, plateau", "ratio", "why it stopped", "bar met"],
                        plateau_rows(plateau, places)), ""]
    lines += ["## Commands", "", "```", command, "```", "", "Each study, as `autopager tune` runs it:", "", "```"]
    lines += [f"autopager tune {' '.join(shlex.quote(item) for item in setup.overrides(spec))}"
              for spec in setup.studies(warm, plateau)]
    lines += ["```", ""]
    path = places.out / SUMMARY
    path.write_text("\n".join(lines))
    return path


def size(text: str) -> Size:
    """``--small``/``--large``: SIZE:BUFFER (the workload's size knob and its buffer)."""
    knob, _, buffer = text.partition(":")
    try:
        return Size(int(knob), format_size(parse_size(buffer)))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not SIZE:BUFFER (e.g. 4096:1GiB)") from None


def sizes(mode: str, workloads: list[str], small: Size | None, large: Size | None) -> dict[str, dict[str, Size]]:
    """Each workload's small and large size: the evaluation's, or ``--small``/``--large`` for every workload."""
    given = {scale: value for scale, value in ((SMALL, small), (LARGE, large)) if value}
    found = {}
    for workload in workloads:
        known = SIZES[mode].get(workload, {})
        if not all(scale in given or scale in known for scale in (SMALL, LARGE)):
            sys.exit(f"warm_and_plateau: the evaluation's plan has no size of workload {workload}: give --small and "
                     f"--large")
        found[workload] = {scale: given.get(scale) or known[scale] for scale in (SMALL, LARGE)}
    return found


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="where the studies and summary.md go")
    parser.add_argument("--data-dir", type=Path, default=Path("/var/tmp/autopager-evaluation"),
                        help="where the workloads keep their data")
    parser.add_argument("--warm", default="", help="comma-separated workloads for the warm start's bar")
    parser.add_argument("--plateau", default="", help="comma-separated workloads for the plateau's bar")
    parser.add_argument("--quick", action="store_true", help="the evaluation's tiny sizes instead of its real ones")
    parser.add_argument("--small", type=size, help="SIZE:BUFFER of every workload's small study (e.g. 1024:256MiB)")
    parser.add_argument("--large", type=size, help="SIZE:BUFFER of every workload's large studies (e.g. 4096:1GiB)")
    parser.add_argument("--trials", type=int, default=30, help="Ax's trials a study (30)")
    parser.add_argument("--initialization", type=int, default=10, help="Ax's Sobol trials, the defaults' included (10)")
    parser.add_argument("--plateau-setting", default="auto", help="budget.plateau of the plateau study (auto: 10)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a tuner setting for every study, after the protocol's (e.g. runner.memory_limit=null)")
    parser.add_argument("--report-only", action="store_true", help="write summary.md from the recorded studies")
    parser.add_argument("--replay", type=Path, nargs="+", metavar="STUDY",
                        help="studies run to their whole budget: where the plateau would have stopped each")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    warm, plateau = ([name for name in text.split(",") if name] for text in (args.warm, args.plateau))
    command = " ".join(["python3 -m experiments.warm_and_plateau", *map(shlex.quote, argv or sys.argv[1:])])
    if args.replay:
        try:
            setting = plateau_trials(args.plateau_setting if args.plateau_setting == AUTO else
                                     int(args.plateau_setting), "ax")
        except (ValueError, ConfigError):
            sys.exit(f"warm_and_plateau: --plateau-setting must be a whole number >= 1 or auto, "
                     f"not {args.plateau_setting!r}")
        if setting is None:
            sys.exit("warm_and_plateau: --replay needs a plateau (--plateau-setting >= 1 or auto)")
        args.out.mkdir(parents=True, exist_ok=True)
        print(f"warm_and_plateau: {write_replay_page(args.out, args.replay, setting, command)}")
        return 0
    if not warm and not plateau:
        sys.exit("warm_and_plateau: give --warm and/or --plateau workloads, or --replay studies")
    mode = REAL_QUICK if args.quick else REAL
    workloads = list(dict.fromkeys(warm + plateau))
    plan = Plan(mode, tuple(workloads), sizes(mode, workloads, args.small, args.large), BUDGETS[mode], RUN_LENGTHS[mode])
    setup = Setup(plan, Places(args.out.resolve(), args.data_dir.resolve()), args.trials, args.initialization,
                  args.plateau_setting, tuple(args.set))
    setup.places.out.mkdir(parents=True, exist_ok=True)
    failed = []
    if not args.report_only:
        stop_on_termination("warm_and_plateau")
        load_optimizer()
        prepared: set[tuple[str, ...]] = set()
        for spec in setup.studies(warm, plateau):
            try:
                run(spec, setup, prepared)
            except (StudyError, ConfigError) as error:
                print(f"{spec.label}: failed: {error}", file=sys.stderr)
                failed.append(spec.label)
    path = write_summary_page(setup, warm, plateau, command)
    print(f"warm_and_plateau: {path}" + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
