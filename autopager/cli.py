"""The ``autopager`` command: tune a workload, run it with its profile, and manage profiles.

Configuration is Hydra's (``configs/config.yaml`` and the groups workload/, space/, strategy/); everything after
the subcommand is a Hydra override: ``autopager tune workload=sort strategy=grid space.page_size.max=4MiB``.
Bad input exits with status 2 and a message before anything runs; a failed study or run exits with 1.
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Sequence

from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException

from autopager.errors import ConfigError, StudyError
from autopager.exec import exec_command
from autopager.params import PARAMETERS, system_page_size, to_environment
from autopager.profiles import ProfileError, default_profile_dir, find_profile, list_profiles
from autopager.progress import format_value, speedup
from autopager.runner import Runner
from autopager.space import Space, show_params
from autopager.strategies import STRATEGIES
from autopager.workloads import Workload, available, config_dir

USAGE = """\
usage: autopager tune workload=NAME [KEY=VALUE ...]     find the best paging parameters, save them as a profile
       autopager run workload=NAME [profile=NAME] [KEY=VALUE ...]
                                                     run a workload with its profile (or the defaults)
       autopager profile list | show NAME | export NAME [profile_dir=DIR]
       autopager report STUDY_DIR [--out DIR]           a study's analysis: Markdown and PNG plots
       autopager exec [KEY=VALUE ...] [profile=NAME] -- COMMAND [ARGS...]
                                                     run a program with its file mappings on the pager
       autopager --help"""

EXAMPLES = """\
examples:
  autopager tune workload=bfs
  autopager tune workload=sort strategy=grid space=small budget.trials=40
  autopager tune workload=bfs space.page_size.max=4MiB space.fillers=2 runner.repeats=3
  autopager tune workload=command workload.name=myapp workload.command="./myapp --input big.bin"
  eval "$(autopager profile export bfs)" && ./my_umap_program"""


def register_resolvers() -> None:
    OmegaConf.register_new_resolver("cores", lambda: os.cpu_count() or 1, replace=True)
    OmegaConf.register_new_resolver("system_page", system_page_size, replace=True)
    OmegaConf.register_new_resolver("shift", lambda value, bits: int(value) << int(bits), replace=True)


def hydra_message(error: Exception) -> str:
    """A short, actionable message for a Hydra composition error."""
    text = str(error)
    missing = re.search(r"Could not find '([^/']+)/([^']+)'", text)
    if missing:
        group, option = missing.groups()
        plural = {"strategy": "strategies", "space": "spaces"}.get(group, group + "s")
        return f"unknown {group} {option!r}; the {plural} are: {', '.join(available(group))}"
    mandatory = re.search(r"You must specify '([^']+)'", text)
    if mandatory:
        group = mandatory.group(1)
        return f"choose a {group}: {group}=NAME, one of: {', '.join(available(group))}"
    override = re.search(r"Could not override '([^']+)'", text)
    if override:
        path = override.group(1)
        parts = path.split(".")
        if parts[0] == "space" and len(parts) > 1 and parts[1] not in PARAMETERS:
            return f"unknown parameter {parts[1]!r} in {path}; the parameters are: {', '.join(PARAMETERS)}"
        if parts[0] == "space" and len(parts) > 2:
            return (f"cannot set {path}: a searched parameter has min, max and step or factor, or values; "
                    f"to replace it give the whole range, e.g. space.{parts[1]}={{min:1,max:8,factor:2}}")
        return f"unknown setting {path!r} (see `autopager --help` and configs/config.yaml)"
    cause = f": {error.__cause__}" if error.__cause__ else ""
    return text.splitlines()[0] + cause if text else f"bad configuration{cause}"


def whole_ranges(overrides: Sequence[str]) -> list[str]:
    """``space.P={...}`` replaces P's range: Hydra would merge the mappings, so clear P first."""
    result = []
    for override in overrides:
        match = re.match(r"^(space\.\w+)=\{", override)
        if match:
            result.append(f"{match.group(1)}=null")
        result.append(override)
    return result


def compose(overrides: Sequence[str]) -> tuple[DictConfig, dict[str, str]]:
    """The resolved configuration for the overrides, and the chosen option of each group."""
    from hydra import compose as hydra_compose, initialize_config_dir
    from hydra.errors import HydraException

    register_resolvers()
    try:
        with initialize_config_dir(str(config_dir()), version_base=None, job_name="autopager"):
            config = hydra_compose("config", overrides=whole_ranges(overrides), return_hydra_config=True)
    except HydraException as error:
        raise ConfigError(hydra_message(error)) from None
    choices = {group: option for group, option in config.hydra.runtime.choices.items()
               if not group.startswith("hydra")}
    with open_dict(config):
        del config["hydra"]
    try:
        OmegaConf.resolve(config)
        OmegaConf.to_container(config, throw_on_missing=True)
    except OmegaConfBaseException as error:
        key = getattr(error, "full_key", None) or "a setting"
        raise ConfigError(f"{key} is required: give it on the command line ({key}=...)" if "Missing" in
                          type(error).__name__ else f"{key}: {str(error).splitlines()[0]}") from None
    return config, choices


def tune(overrides: Sequence[str]) -> int:
    from autopager.study import Study

    config, choices = compose(overrides)
    study = Study(config, space_name=choices.get("space", "default"))
    study.run()
    return 0


def run(overrides: Sequence[str]) -> int:
    config, _ = compose(overrides)
    workload = Workload.from_config(config.workload, config.data_dir)
    runner = Runner.from_config(workload, config.runner)
    workload.check()
    try:
        profile = find_profile(config.profile or workload.name, Path(config.profile_dir).expanduser())
    except ProfileError:
        if config.profile:
            raise
        profile = None
    found_on = ((profile.data.get("found_on") or {}).get("workload") or {}) if profile else {}
    same_data = all(found_on.get(knob) == value for knob, value in workload.knobs.items())
    if profile:
        params, label = profile.params, f"profile {profile.name}"
        if not same_data:
            print(f"note: the profile was found with {found_on}, this run has {workload.knobs}")
    else:
        params, label = Space({}, config.baseline).defaults, "the defaults (no profile yet)"
    print(f"running {workload.name} with {label}: {show_params(params)}", flush=True)
    prepared = runner.prepare()
    if not prepared.ok:
        raise StudyError(f"the workload's preparation failed: {prepared.error}\n{prepared.stderr_tail}".rstrip())
    result = runner.measure(params, float(config.runner.timeout or workload.timeout or config.runner.first_timeout))
    if not result.ok:
        raise StudyError(f"the run failed: {result.error}\n{result.stderr_tail}".rstrip())
    line = f"{workload.metric}: {format_value(result.value, workload.metric)}"
    default = profile.data.get("default_value") if profile and same_data else None
    if default:
        line += (f"  (the defaults: {format_value(default, workload.metric)} when tuned; "
                 f"{speedup(result.value, default, workload.goal):.2f}x)")
    print(line)
    return 0


def profile_command(args: Sequence[str]) -> int:
    directory = default_profile_dir()
    words = []
    for arg in args:
        if arg.startswith("profile_dir="):
            directory = Path(arg.split("=", 1)[1]).expanduser()
        else:
            words.append(arg)
    if words == ["list"]:
        profiles = list_profiles(directory)
        if not profiles:
            print(f"no profiles in {directory}")
        for profile in profiles:
            data = profile.data
            gain = data.get("speedup_over_default")
            print(f"{profile.name:48} {format_value(data.get('value'), data.get('metric', ''))}"
                  f"{f'  {gain}x the defaults' if gain else ''}  {profile.date}")
        return 0
    if len(words) == 2 and words[0] in ("show", "export"):
        profile = find_profile(words[1], directory)
        if words[0] == "show":
            print(f"# {profile.path}\n{profile.to_yaml()}", end="")
        else:
            for name, value in to_environment({k: v for k, v in profile.params.items() if v is not None}).items():
                print(f"export {name}={value}")
        return 0
    raise ConfigError("profile: expected `profile list`, `profile show NAME` or `profile export NAME`")


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
                 "  study.name, study.root, profile_dir, data_dir, seed (see configs/config.yaml)",
                 f"configuration: {config_dir()}", "", EXAMPLES]
    return "\n".join(sections)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if args and args[0] == "exec":  # before --help: the command's own options are its own
            return exec_command(args[1:])
        if not args or args[0] in ("-h", "--help", "help") or {"-h", "--help"} & set(args[1:]):
            print(help_text())
            return 0
        command, rest = args[0], args[1:]
        if command == "tune":
            return tune(rest)
        if command == "run":
            return run(rest)
        if command == "profile":
            return profile_command(rest)
        if command == "report":
            return __import__("autopager.report", fromlist=["main"]).main(rest)
        raise ConfigError(f"unknown command {command!r}\n{USAGE}")
    except ConfigError as error:
        print(f"autopager: error: {error}", file=sys.stderr)
        return 2
    except StudyError as error:
        print(f"autopager: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\nautopager: interrupted; run the same command again to resume the study", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
