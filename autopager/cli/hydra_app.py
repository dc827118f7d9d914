"""The subcommands that take a configuration (``tune``, ``run``) as Hydra applications.

Everything after the subcommand is Hydra's command line: overrides and Hydra's own flags (``--cfg``, ``--info``,
``--help``, ``-m``/``--multirun``, ``--config-dir``, ...). Hydra itself carries them out (``hydra.main``), with
every ``hydra.*`` setting and ``hydra/...`` group it knows (launchers, sweepers, logging, output directories).
Before Hydra runs anything the overrides are read as autopager.tuner.config describes, and every job's
configuration is composed and checked (with ``-m`` and Hydra's basic sweeper, every combination), so a bad
setting ends the command with status 2 and one line before the first run.

A job's outcome is its exit status (0, 1 a failed study or run, 2 bad input); the command's status is the worst
of its jobs run in this process (a launcher that runs jobs elsewhere, such as submitit, reports them in the jobs'
logs).
"""
from __future__ import annotations

import re
import sys
from typing import Any, Iterator, Sequence

from omegaconf import DictConfig

from autopager.cli.exit_codes import exit_status
from autopager.errors import ConfigError
from autopager.tuner.config import (HELP_TEMPLATES, Check, Job, Source, app_choices, parse_override, register_resolvers,
                                    resolved, rewrite)

_statuses: list[int] = []  # the exit status of each job this process ran


def args_parser(command: str):
    """Hydra's own argument parser, whose errors are ConfigErrors."""
    from hydra._internal.utils import get_args_parser

    parser = get_args_parser()
    parser.prog = f"autopager {command}"

    def error(message: str):
        raise ConfigError(f"{message} (see `autopager {command} --help`)")

    parser.error = error  # type: ignore[method-assign]
    return parser


def flags(args: Any) -> list[str]:
    """Hydra's flags of a parsed command line, as command-line words again."""
    words = []
    for name, option in (("help", "--help"), ("hydra_help", "--hydra-help"), ("multirun", "-m"), ("run", "-r"),
                         ("resolve", "--resolve"), ("shell_completion", "--shell-completion")):
        if getattr(args, name):
            words.append(option)
    for name, option in (("cfg", "--cfg"), ("package", "--package"), ("info", "--info"),
                         ("config_path", "--config-path"), ("config_name", "--config-name"),
                         ("config_dir", "--config-dir"), ("experimental_rerun", "--experimental-rerun")):
        if getattr(args, name) is not None:
            words += [option, getattr(args, name)]
    return words


def jobs(source: Source, overrides: list[str]) -> Iterator[list[str]]:
    """Each job's overrides in a multirun, as Hydra's basic sweeper makes them (another sweeper: the fixed ones)."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = [parse_override(text) for text in overrides]
    hydra_overrides = [o.input_line for o in parsed if o.is_hydra_override()]
    hydra_config = source.compose(hydra_overrides).hydra
    if hydra_config.runtime.choices.get("hydra/sweeper") != "basic":
        yield [o.input_line for o in parsed if not o.is_sweep_override()]
        return
    params = [f"{key}={value}" for key, value in (hydra_config.sweeper.params or {}).items()]
    task = OverridesParser.create().parse_overrides(params + [o.input_line for o in parsed if not o.is_hydra_override()])
    for batch in BasicSweeper.split_arguments(task, None):
        for job_overrides in batch:
            yield hydra_overrides + rewrite(job_overrides, multirun=False)


def run_application(command: str, argv: Sequence[str], job: Job, check: Check, help_template: str) -> int:
    """``autopager COMMAND ARGV...`` as a Hydra application; ``check`` refuses a job's bad settings before any runs."""
    import hydra
    from hydra.core.hydra_config import HydraConfig

    register_resolvers()
    HELP_TEMPLATES[command] = help_template
    parser = args_parser(command)
    args = parser.parse_intermixed_args(list(argv))  # flags may come after overrides
    if args.run + (args.cfg is not None) + args.multirun + args.shell_completion + (args.info is not None) > 1:
        raise ConfigError("give only one of --run, --multirun, --cfg, --info and --shell-completion")
    if args.resolve and args.cfg is None and not args.help:
        raise ConfigError("--resolve goes with --cfg or --help")
    source = Source(args)
    if args.config_path:
        args.config_path = str(source.directory)  # relative to the working directory, not to this file
    passthrough = args.shell_completion or args.experimental_rerun
    overrides = [f"hydra.job.name={command}"] + list(args.overrides)
    multirun = args.multirun or any(re.fullmatch(r"hydra\.mode=MULTIRUN", text) for text in overrides)
    if not passthrough:
        overrides = rewrite(overrides, multirun)
        showing = args.cfg is not None or args.info is not None or args.help or args.hydra_help
        for job_overrides in (jobs(source, overrides) if multirun and not showing else [overrides]):
            config = source.compose(job_overrides)
            if not showing:
                choices = app_choices(config.hydra.runtime.choices)
                check(resolved(config, choices), choices)

    def task(config: DictConfig) -> int:
        register_resolvers()  # a launcher may run the job in another process
        choices = app_choices(HydraConfig.get().runtime.choices)
        status = exit_status(lambda: job(resolved(config, choices), choices))
        _statuses.append(status)
        return status

    _statuses.clear()
    saved = sys.argv
    sys.argv = [f"autopager {command}", *flags(args), *overrides]
    try:
        hydra.main(config_path=str(source.directory), config_name=source.name, version_base=None)(task)()
    except SystemExit as end:  # Hydra's own errors and --help end this way
        if end.code not in (None, 0):
            return end.code if isinstance(end.code, int) else 1
    finally:
        sys.argv = saved
    return max(_statuses, default=0)
