"""The ``autopager`` command: tune a workload, run it with its profile, and manage profiles.

``tune`` and ``run`` are Hydra applications (``autopager.cli.hydra_app``): everything after the subcommand is Hydra's
command line, overrides (``autopager tune workload=sort strategy=grid space.page_size.max=4MiB``) and Hydra's flags
(``--cfg job``, ``--info``, ``--help``, ``-m``). Bad input exits with status 2 and a message before anything runs;
a failed study or run exits with 1. A subcommand is a function of its arguments, named in ``COMMANDS``
and imported when it runs.
"""
from __future__ import annotations

import os
import sys
from importlib import import_module
from typing import Callable, Sequence

from autopager import __version__
from autopager.cli.exit_codes import exit_status
from autopager.cli.help import USAGE, help_text
from autopager.errors import ConfigError

__all__ = ["COMMANDS", "main"]

# Each command's module and function, imported when the command runs: a command brings only what it needs (the
# core's `exec` and `profile` run without the tuner's and the report's extras).
COMMANDS = {
    "tune": "autopager.cli.tune:tune", "run": "autopager.cli.run:run", "profile": "autopager.cli.profile:profile_command",
    "report": "autopager.analysis.report:main", "exec": "autopager.exec:exec_command",
    "studies": "autopager.analysis.summary:studies_command", "status": "autopager.analysis.summary:status_command",
    "export-optuna": "autopager.analysis.optuna_mirror:export_command",
    "dashboard": "autopager.analysis.optuna_mirror:dashboard_command"}
EXTRAS = {"ax": "tune", "torch": "tune", "hydra": "tune", "omegaconf": "tune", "pandas": "tune", "matplotlib": "report",
          "optuna": "dashboard", "optuna_dashboard": "dashboard"}


def load_command(name: str) -> Callable[[Sequence[str]], int]:
    """The function of command ``name``; a missing optional dependency is a ConfigError naming the extra."""
    module, function = COMMANDS[name].split(":")
    try:
        return getattr(import_module(module), function)
    except ModuleNotFoundError as error:
        missing = (error.name or "").split(".")[0]
        if missing not in EXTRAS:
            raise
        raise ConfigError(f"`autopager {name}` needs {missing}: pip install 'autopager[{EXTRAS[missing]}]'") from None


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
        status = command(list(sys.argv[1:] if argv is None else argv))
        sys.stdout.flush()  # output still buffered meets a closed pipe here, not in the interpreter's exit
        return status
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python's flush at exit would fail again
        return 141  # as a shell reports a command ended by SIGPIPE


def asked_setting(args: list[str]) -> str | None:
    """KEY of `autopager tune|run --help KEY` (help on one setting), else None."""
    if args[:1] not in (["tune"], ["run"]):
        return None
    for flag, following in zip(args[1:], args[2:]):
        if flag in ("-h", "--help") and not following.startswith("-") and "=" not in following:
            return following
    return None


def command(args: list[str]) -> int:
    if args[:1] == ["--version"] or (args[:1] in (["tune"], ["run"]) and "--version" in args[1:]):
        print(version_text())
        return 0
    if args[:1] in (["tune"], ["run"]) and ({"--shell-completion", "-sc"} & set(args[1:])):
        print(f"autopager: error: shell completion is not supported (Hydra's does not complete a subcommand, "
              f"`autopager {args[0]}`)", file=sys.stderr)
        return 2
    setting = asked_setting(args)
    if setting is not None:
        from autopager.cli.setting_help import show
        return exit_status(lambda: show(setting, args[1:]))
    if not args or args[0] in ("-h", "--help", "help") or (args[0] == "profile" and {"-h", "--help"} & set(args)):
        print(help_text())
        return 0

    def dispatch() -> int:
        if args[0] not in COMMANDS:
            raise ConfigError(f"unknown command {args[0]!r}\n{USAGE}")
        return load_command(args[0])(args[1:])

    try:
        return exit_status(dispatch)
    except KeyboardInterrupt:
        print("\nautopager: interrupted; run the same command again to resume the study", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
