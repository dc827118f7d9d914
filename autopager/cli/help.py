"""`autopager --help` and the help of the Hydra subcommands: the usage, the workloads, strategies and spaces
there are, examples."""
from __future__ import annotations

import os
from typing import Any

from autopager.run.workloads import available, config_dir
from autopager.tuner.strategies import STRATEGIES, strategy_class


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
  autopager tune -m workload=sort workload.size=64,128 strategy=ax,random   (four studies, one after the other)
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


def shown_default(default: Any) -> str:
    return "" if isinstance(default, (list, tuple)) else f"={default}"  # a list's is in the strategy's file


def help_text() -> str:
    sections = [USAGE, "", "workloads (workload=NAME):"]
    sections += [f"  {name:16} {describe_option('workload', name)}" for name in available("workload")]
    sections += ["", "strategies (strategy=NAME):"]
    for name in STRATEGIES:
        sections.append(f"  {name:16} {describe_option('strategy', name)}")
        sections += [f"  {'':16}   strategy.{option.name}{shown_default(option.default)}: {option.help}"
                     for option in strategy_class(name).OPTIONS]
    sections += ["", f"spaces (space=NAME): {', '.join(available('space'))}; the default one "
                     f"(max_threads = {os.cpu_count()} here):"]
    sections += ["  " + line for line in (config_dir() / "space" / "default.yaml").read_text().splitlines()
                 if not line.startswith("#")]
    sections += ["", "settings: budget.trials, budget.minutes, budget.plateau, runner.repeats, runner.timeout,",
                 "  runner.page_cache, study.name, study.root, study.output, profile_dir, data_dir, seed, run.rounds,",
                 "  run.other_data, warm_start, objective, select, constraint.memory",
                 "  (`autopager tune workload=NAME --cfg job` shows them all)",
                 f"configuration: {config_dir()}", "", EXAMPLES]
    return "\n".join(sections)
