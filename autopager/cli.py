"""The ``autopager`` command: tune a workload, run it with its profile, and manage profiles.

``tune`` and ``run`` are Hydra applications (``autopager.hydra_app``): everything after the subcommand is Hydra's
command line, overrides (``autopager tune workload=sort strategy=grid space.page_size.max=4MiB``) and Hydra's flags
(``--cfg job``, ``--info``, ``--help``, ``-m``). Bad input exits with status 2 and a message before anything runs;
a failed study or run exits with 1. A subcommand is a function of its arguments in ``COMMANDS``.
"""
from __future__ import annotations

import json
import os
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from omegaconf import DictConfig

from autopager import __version__
from autopager.errors import ConfigError, StudyError
from autopager.exec import exec_command
from autopager.hydra_app import compose, exit_status, run_application
from autopager.params import to_environment
from autopager.profiles import (Profile, ProfileNotFound, default_profile_dir, delete_profile, find_profile,
                                scan_profiles)
from autopager.progress import format_value, speedup
from autopager.runner import Runner
from autopager.space import Params, Space, show, show_params
from autopager.strategies import STRATEGIES
from autopager.workloads import Workload, available, config_dir

__all__ = ["COMMANDS", "compose", "main"]

USAGE = """\
usage: autopager tune workload=NAME [KEY=VALUE ...]     find the best paging parameters, save them as a profile
       autopager tune -q | -v workload=NAME ...           quiet (only the summary) or verbose (each run too)
       autopager tune -m workload=sort,bfs [KEY=A,B ...]  several studies (Hydra's multirun and launchers)
       autopager run workload=NAME [profile=NAME] [run.rounds=N] [KEY=VALUE ...]
                                                     run a workload with its profile, next to the defaults
       autopager profile list | show NAME | export NAME [--format env|json|slurm|systemd] | delete NAME
                                                     [profile_dir=DIR]
       autopager studies [study.root=DIR]                the studies, one line each
       autopager status STUDY [--json] [--watch [S]]     a study's state and outcome (its summary.json)
       autopager report STUDY_DIR [--out DIR]           a study's analysis: Markdown and PNG plots
       autopager export-optuna STUDY --storage URL       mirror a study into an Optuna storage
       autopager dashboard STUDY [--port P]              optuna-dashboard on the study (pip install 'autopager[dashboard]')
       autopager exec [KEY=VALUE ...] [profile=NAME] -- COMMAND [ARGS...]
                                                     run a program with its file mappings on the pager
       autopager tune --help | --cfg job | --info         Hydra's flags, for tune and run alike
       autopager --version                               the version, and how the pager reads (io_uring or not)
       autopager --help"""

EXAMPLES = """\
examples:
  autopager tune workload=bfs
  autopager tune workload=sort strategy=grid space=small budget.trials=40
  autopager tune workload=bfs space.page_size.max=4MiB space.fillers=2 runner.repeats=3
  autopager tune workload=sort space.read_ahead=[0,4,16]          (the values read_ahead is searched over)
  autopager tune -m workload=sort,bfs workload.size=16,32           (four studies, one after the other)
  autopager tune workload=command workload.name=myapp workload.command="./myapp --input big.bin"
  autopager run workload=bfs run.rounds=5
  eval "`autopager profile export bfs`" && ./my_umap_program"""

HYDRA_HELP = """\
usage: autopager {command} [Hydra flags] workload=NAME [KEY=VALUE ...]

{what}

== Configuration groups (group=option) ==
$APP_CONFIG_GROUPS

== Flags ==
-q, -v : quiet (only the summary) or verbose (each trial's runs too): study.output=quiet|verbose (tune)
--help,-h : this help
--hydra-help : Hydra's help
--version : autopager's version
--cfg,-c job|hydra|all : show the configuration instead of running (--resolve: with interpolations resolved)
--package,-p : the configuration package to show
--multirun,-m : several jobs, one a combination of the values given as A,B
--info,-i all|config|defaults|defaults-tree|plugins|searchpath : Hydra's information
--config-path,-cp / --config-name,-cn / --config-dir,-cd : another configuration directory or file
With -m, a setting given as A,B (or Hydra's choice(), range()) makes one job a value; hydra/launcher=NAME runs
the jobs elsewhere (pip install hydra-submitit-launcher: hydra/launcher=submitit_slurm, a SLURM job array).

== The configuration, with the overrides given ==
$CONFIG
"""

TUNE_WHAT = """\
Find the best paging parameters for a workload: measure the defaults, then the trials the strategy asks for,
appended to outputs/<workload>/<study>/trials.csv (run the same command again to resume); save the best as
the workload's profile. A space parameter given as a list, space.read_ahead=[0,4] (or without -m choice(0,4),
range(0,8,2), 0,4) is searched over those values."""

RUN_WHAT = """\
Run a workload with its profile (the newest found on this machine, or profile=NAME): the parameters the
profile's study searched, over the defaults (the buffer size stays this run's, workload.buffer_size).
run.rounds=N runs the defaults and the profile N times each, interleaved, and prints both with their spread;
the first run validates the program's answer in full, the later ones only its checksum, which must be the first's;
run.other_data=refuse refuses a profile found for another workload, data size or (unsearched) buffer size
(default: warn)."""


def describe_option(group: str, name: str) -> str:
    """The first comment line of a group option's file."""
    for line in (config_dir() / group / f"{name}.yaml").read_text().splitlines():
        if line.startswith("#"):
            return line.lstrip("# ").strip()
    return ""


def help_text() -> str:
    sections = [USAGE, "", "workloads (workload=NAME):"]
    sections += [f"  {name:16} {describe_option('workload', name)}" for name in available("workload")]
    sections += ["", "strategies (strategy=NAME):"]
    sections += [f"  {name:16} {describe_option('strategy', name)}" for name in STRATEGIES]
    sections += ["", f"spaces (space=NAME): {', '.join(available('space'))}; the default one "
                     f"(max_threads = {os.cpu_count()} here):"]
    sections += ["  " + line for line in (config_dir() / "space" / "default.yaml").read_text().splitlines()
                 if not line.startswith("#")]
    sections += ["", "settings: budget.trials, budget.minutes, runner.repeats, runner.timeout, runner.page_cache,",
                 "  study.name, study.root, study.output, profile_dir, data_dir, seed, run.rounds, run.other_data",
                 "  (`autopager tune workload=NAME --cfg job` shows them all)",
                 f"configuration: {config_dir()}", "", EXAMPLES]
    return "\n".join(sections)


# --- tune ---------------------------------------------------------------------------------------------------

def make_study(config: DictConfig, choices: Mapping[str, str]):
    from autopager.study import Study

    return Study(config, space_name=choices.get("space", "default"))


def tune_job(config: DictConfig, choices: Mapping[str, str]) -> int:
    make_study(config, choices).run()
    return 0


OUTPUT_FLAGS = {"-q": "quiet", "--quiet": "quiet", "-v": "verbose", "--verbose": "verbose"}


def tune(argv: Sequence[str]) -> int:
    outputs = {OUTPUT_FLAGS[arg] for arg in argv if arg in OUTPUT_FLAGS}
    if len(outputs) > 1:
        raise ConfigError("give -q (quiet) or -v (verbose), not both")
    overrides = [arg for arg in argv if arg not in OUTPUT_FLAGS] + [f"study.output={output}" for output in outputs]
    return run_application("tune", overrides, tune_job, make_study,
                           HYDRA_HELP.format(command="tune", what=TUNE_WHAT))


# --- run ----------------------------------------------------------------------------------------------------

OTHER_DATA = ("warn", "refuse")


@dataclass
class RunPlan:
    workload: Workload
    runner: Runner
    defaults: Params
    profile: Profile | None
    params: Params             # what runs: the defaults with the profile's tuned parameters
    mismatch: str              # how the profile's workload or data differ from this run's, if they do
    rounds: int
    timeout: float


def profile_mismatch(profile: Profile, workload: Workload, buffer_size: int | None) -> str:
    if profile.workload != workload.name:
        return f"profile {profile.name} was found for workload {profile.workload}, not {workload.name}"
    found = profile.found_for
    sizes = {knob: value for knob, value in workload.knobs.items() if knob != "buffer"}  # the buffer: below
    if any(found.get(knob) != value for knob, value in sizes.items()):
        shown = ", ".join(f"{knob}={found.get(knob)}" for knob in sizes)
        here = ", ".join(f"{knob}={value}" for knob, value in sizes.items())
        return f"profile {profile.name} was found with {shown}; this run has {here}"
    found_buffer = profile.params.get("buffer_size")
    if "buffer_size" not in profile.searched and None not in (found_buffer, buffer_size) and found_buffer != buffer_size:
        return (f"profile {profile.name} was found with a {show('buffer_size', found_buffer)} buffer; this run has "
                f"{show('buffer_size', buffer_size)}")
    return ""


def plan_run(config: DictConfig, choices: Mapping[str, str] | None = None) -> RunPlan:
    workload = Workload.from_config(config.workload, config.data_dir)
    runner = Runner.from_config(workload, config.runner)
    workload.check()
    rounds, other_data = config.run.rounds, config.run.other_data
    if not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 0:
        raise ConfigError(f"run.rounds must be a whole number (0: one run with the profile), not {rounds!r}")
    if other_data not in OTHER_DATA:
        raise ConfigError(f"run.other_data must be one of {', '.join(OTHER_DATA)}, not {other_data!r}")
    defaults = Space({}, config.baseline).defaults
    try:
        profile = find_profile(str(config.profile or workload.name), Path(config.profile_dir).expanduser(),
                               workload.knobs)
    except ProfileNotFound:
        if config.profile:
            raise
        profile = None
    mismatch = profile_mismatch(profile, workload, defaults.get("buffer_size")) if profile else ""
    if mismatch and other_data == "refuse":
        raise ConfigError(f"{mismatch} (run.other_data=refuse; run.other_data=warn applies it anyway)")
    params = {**defaults, **profile.tuned_params} if profile else defaults
    timeout = float(config.runner.timeout or workload.timeout or config.runner.first_timeout)
    return RunPlan(workload, runner, defaults, profile, params, mismatch, rounds, timeout)


def spread(values: Sequence[float], metric: str) -> str:
    if len(values) == 1:
        return format_value(values[0], metric)
    return (f"median {format_value(statistics.median(values), metric)} "
            f"({min(values):.4g}-{max(values):.4g} over {len(values)} runs)")


def run_job(config: DictConfig, choices: Mapping[str, str]) -> int:
    plan = plan_run(config)
    workload, profile = plan.workload, plan.profile
    if plan.mismatch:
        print(f"autopager: warning: {plan.mismatch}: its parameters may not suit this run "
              f"(run.other_data=refuse refuses such a profile)", file=sys.stderr)
    label = f"profile {profile.name}" if profile else "the defaults (no profile yet)"
    print(f"running {workload.name} with {label}: {show_params(plan.params)}", flush=True)
    prepared = plan.runner.prepare()
    if not prepared.ok:
        raise StudyError(f"the workload's preparation failed: {prepared.error}\n{prepared.stderr_tail}".rstrip())

    checksum: str | None = None  # the first run's, which validated its answer in full: the later runs must print it

    def measure(params: Params) -> float:
        nonlocal checksum
        result = plan.runner.measure(params, plan.timeout, checksum=checksum)
        if not result.ok:
            raise StudyError(f"the run failed: {result.error}\n{result.stderr_tail}".rstrip())
        checksum = result.checksum
        return result.value

    metric = workload.metric
    if plan.rounds:
        arms = {"the defaults": plan.defaults, **({label: plan.params} if profile else {})}
        values: dict[str, list[float]] = {name: [] for name in arms}
        for round_ in range(1, plan.rounds + 1):
            for name, params in arms.items():
                values[name].append(measure(params))
                print(f"round {round_}/{plan.rounds}: {name}: {format_value(values[name][-1], metric)}", flush=True)
        for name in arms:
            print(f"{name}: {spread(values[name], metric)}")
        if profile:
            gain = speedup(statistics.median(values[label]), statistics.median(values["the defaults"]), workload.goal)
            print(f"speedup over the defaults: {gain:.2f}x (medians of {plan.rounds} interleaved rounds)")
        return 0
    value = measure(plan.params)
    line = f"{metric}: {format_value(value, metric)}"
    stored = profile.data.get("default_value") if profile and not plan.mismatch else None
    if stored:
        line += (f"\n  the defaults: {format_value(stored, metric)}, the figure stored in the profile when it was "
                 f"tuned ({profile.date}), not measured now ({speedup(value, stored, workload.goal):.2f}x); "
                 f"run.rounds=N measures both, interleaved")
    print(line)
    return 0


def run(argv: Sequence[str]) -> int:
    return run_application("run", argv, run_job, plan_run, HYDRA_HELP.format(command="run", what=RUN_WHAT))


# --- profile ------------------------------------------------------------------------------------------------

def profile_command(args: Sequence[str]) -> int:
    directory = default_profile_dir()
    words = []
    for arg in args:
        if arg.startswith("profile_dir="):
            directory = Path(arg.split("=", 1)[1]).expanduser()
        else:
            words.append(arg)
    if words == ["list"]:
        profiles, broken = scan_profiles(directory)
        if not profiles and not broken:
            print(f"no profiles in {directory}")
            return 0
        print(f"{'profile':56} {'buffer':>8}  {'value':18} {'speedup':9} {'confirmed':9}  date")
        for profile in profiles:
            data = profile.data
            gain = data.get("speedup_over_default")
            buffer = profile.params.get("buffer_size")
            print(f"{profile.name:56} {show('buffer_size', buffer) if buffer else '-':>8}  "
                  f"{format_value(data.get('value'), data.get('metric', '')):18} "
                  f"{f'{gain}x' if gain else '-':9} {'yes' if data.get('confirmed') else 'no':9}  {profile.date}")
        for path, reason in broken:
            print(f"{path.parent.name}/{path.stem:50} BROKEN: {reason}")
        return 0
    if len(words) == 2 and words[0] == "delete":
        print(f"deleted {delete_profile(words[1], directory)}")
        return 0
    if len(words) == 2 and words[0] == "show":
        profile = find_profile(words[1], directory)
        print(f"# {profile.path}\n{profile.to_yaml()}", end="")
        return 0
    export = export_format(words)
    if export is not None:
        name, format_ = export
        print(exported(find_profile(name, directory), format_), end="")
        return 0
    raise ConfigError("profile: expected `profile list`, `profile show NAME`, `profile export NAME "
                      f"[--format {'|'.join(EXPORT_FORMATS)}]` or `profile delete NAME`")


EXPORT_FORMATS = ("env", "json", "slurm", "systemd")


def export_format(words: list[str]) -> tuple[str, str] | None:
    """(NAME, format) of `profile export NAME [--format F | --format=F]`, or None if the words are not that."""
    if len(words) < 2 or words[0] != "export":
        return None
    rest, format_ = list(words[1:]), "env"
    for i, word in enumerate(rest):
        if word.startswith("--format="):
            format_ = word.split("=", 1)[1]
            del rest[i]
            break
        if word == "--format" and i + 1 < len(rest):
            format_ = rest[i + 1]
            del rest[i:i + 2]
            break
    if len(rest) != 1:
        return None
    if format_ not in EXPORT_FORMATS:
        raise ConfigError(f"profile export: --format must be one of {', '.join(EXPORT_FORMATS)}, not {format_!r}")
    return rest[0], format_


def exported(profile: Profile, format_: str) -> str:
    """A profile's tuned parameters as the pager's environment: shell exports, JSON, SLURM or a systemd drop-in."""
    environment = to_environment(profile.tuned_params)
    if format_ == "json":
        return json.dumps({"profile": profile.name, "workload": profile.workload, "params": profile.tuned_params,
                           "environment": environment}, indent=1) + "\n"
    if format_ == "slurm":
        pairs = ",".join(f"{name}={value}" for name, value in environment.items())
        return (f"# profile {profile.name}: in a batch script, or sbatch/srun --export=ALL,...\n"
                f"#SBATCH --export=ALL{',' + pairs if pairs else ''}\n")
    if format_ == "systemd":
        return (f"# profile {profile.name}: a drop-in, e.g. /etc/systemd/system/NAME.service.d/autopager.conf\n"
                "[Service]\n" + "".join(f'Environment="{name}={value}"\n' for name, value in environment.items()))
    return "".join(f"export {name}={value}\n" for name, value in environment.items())


def report(argv: Sequence[str]) -> int:
    from autopager.report import main as report_main  # matplotlib, only needed here

    return report_main(argv)


def studies(argv: Sequence[str]) -> int:
    from autopager.studyview import studies_command

    return studies_command(argv)


def status(argv: Sequence[str]) -> int:
    from autopager.studyview import status_command

    return status_command(argv)


def export_optuna(argv: Sequence[str]) -> int:
    from autopager.optuna_mirror import export_command  # pandas and Optuna, only needed here

    return export_command(argv)


def dashboard(argv: Sequence[str]) -> int:
    from autopager.optuna_mirror import dashboard_command

    return dashboard_command(argv)


COMMANDS: dict[str, Callable[[Sequence[str]], int]] = {
    "tune": tune, "run": run, "profile": profile_command, "report": report, "exec": exec_command,
    "studies": studies, "status": status, "export-optuna": export_optuna, "dashboard": dashboard}


def version_text() -> str:
    """autopager's version, the native pager's and how its fillers read: a build without io_uring is slower."""
    try:
        from autopager import _native
    except ImportError as error:
        return f"autopager {__version__} (the native module is not built: {error})"
    slow = "" if _native.read_path() == "io_uring" else " (slower: rebuild with liburing installed)"
    return f"autopager {__version__} (native {_native.version()}), reads: {_native.read_path()}{slow}"


def main(argv: Sequence[str] | None = None) -> int:
    """The command; output cut short by a closed pipe (`autopager run --help | head`) ends it quietly."""
    try:
        return command(list(sys.argv[1:] if argv is None else argv))
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python's flush at exit would fail again
        return 141  # as a shell reports a command ended by SIGPIPE


def command(args: list[str]) -> int:
    if args[:1] == ["--version"] or (args[:1] in (["tune"], ["run"]) and "--version" in args[1:]):
        print(version_text())
        return 0
    if args[:1] in (["tune"], ["run"]) and ({"--shell-completion", "-sc"} & set(args[1:])):
        print(f"autopager: error: shell completion is not supported (Hydra's does not complete a subcommand, "
              f"`autopager {args[0]}`)", file=sys.stderr)
        return 2
    if not args or args[0] in ("-h", "--help", "help") or (args[0] == "profile" and {"-h", "--help"} & set(args)):
        print(help_text())
        return 0

    def dispatch() -> int:
        if args[0] not in COMMANDS:
            raise ConfigError(f"unknown command {args[0]!r}\n{USAGE}")
        return COMMANDS[args[0]](args[1:])

    try:
        return exit_status(dispatch)
    except KeyboardInterrupt:
        print("\nautopager: interrupted; run the same command again to resume the study", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
