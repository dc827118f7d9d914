"""A study's (or a run's) configuration, composed by Hydra from configs/ and the command line's overrides, with
every value resolved and present (``compose``); the front end that runs it is autopager.cli.hydra_app.

The overrides are read before Hydra composes them:

- an override Hydra cannot parse is refused, quoted, with the parser's reason;
- Hydra's sweep syntax on a parameter of the space (``space.read_ahead=choice(0,4)``, ``=0,4``, ``=range(0,8,2)``)
  gives the values it is searched over in one study; with ``-m`` it keeps Hydra's meaning (one study a value). A
  list, ``space.read_ahead=[0,4]``, always gives the searched values. ``interval()`` is refused: the space is
  sampled. ``space.P={min:..,max:..}`` replaces P's range instead of merging into it;
- a sweep of any other setting without ``-m`` is refused with the fix.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException

from autopager.checks import whole
from autopager.errors import ConfigError
from autopager.parameters import PARAMETERS, system_page_size
from autopager.run.workloads import available, config_dir

CONFIG_NAME = "config"
Job = Callable[[DictConfig, Mapping[str, str]], int]
Check = Callable[[DictConfig, Mapping[str, str]], None]

HELP_TEMPLATES: dict[str, str] = {}  # command -> its help template (the ``hydra.help.template`` resolver's answer)


def cores(factor: float = 1) -> int:
    """The hardware threads times ``factor``, at least one: ``${cores:}``, ``${cores:2}``, ``${cores:0.5}``."""
    return max(1, int((os.cpu_count() or 1) * factor))


def register_resolvers() -> None:
    OmegaConf.register_new_resolver("cores", cores, replace=True)
    OmegaConf.register_new_resolver("system_page", system_page_size, replace=True)
    OmegaConf.register_new_resolver("shift", lambda value, bits: int(value) << int(bits), replace=True)
    OmegaConf.register_new_resolver("autopager_help", lambda command: HELP_TEMPLATES.get(command, ""), replace=True)


# --- messages -----------------------------------------------------------------------------------------------

def plural(group: str) -> str:
    return {"strategy": "strategies", "space": "spaces"}.get(group, group + "s")


def hydra_message(error: Exception, group_options: Callable[[str], list[str]] = available) -> str:
    """A short, actionable message for a Hydra composition error."""
    text = str(error)
    missing = re.search(r"Could not find '([^']+)/([^'/]+)'", text)
    if missing:
        group, option = missing.groups()
        if group.startswith("hydra/"):
            hint = (" (a launcher or sweeper plugin must be installed first, e.g. "
                    "`pip install hydra-submitit-launcher`)" if group in ("hydra/launcher", "hydra/sweeper") else "")
            return f"unknown {group} {option!r}; the options are: {', '.join(group_options(group))}{hint}"
        return f"unknown {group} {option!r}; the {plural(group)} are: {', '.join(group_options(group))}"
    override = re.search(r"Could not override '([^']+)'", text)
    if override:
        path = override.group(1)
        parts = path.split(".")
        if parts[0] == "space" and len(parts) > 1 and parts[1] not in PARAMETERS:
            return f"unknown parameter {parts[1]!r} in {path}; the parameters are: {', '.join(PARAMETERS)}"
        if parts[0] == "space" and len(parts) > 2:
            return (f"cannot set {path}: a searched parameter has min, max and step or factor, or values; "
                    f"to replace it give the whole range, e.g. space.{parts[1]}={{min:1,max:8,factor:2}}")
        if parts[0] == "hydra":
            return f"unknown Hydra setting {path!r} (see `autopager tune --cfg hydra`)"
        return f"unknown setting {path!r} (see `autopager tune --help` and configs/config.yaml)"
    cause = f": {error.__cause__}" if error.__cause__ else ""
    return text.splitlines()[0] + cause if text else f"bad configuration{cause}"


# --- the command line ---------------------------------------------------------------------------------------

def parse_override(text: str) -> Any:
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import OverrideParseException

    try:
        (override,) = OverridesParser.create().parse_overrides([text])
    except OverrideParseException as error:
        reason = str(error).splitlines()[0]
        raise ConfigError(f"cannot read the override {text!r}: {reason} "
                          f"(Hydra's syntax: key=value; quote a value with spaces: key='a b')") from None
    return override


def searched_values(override: Any, multirun: bool) -> list[str] | None:
    """The values a space override gives its parameter in Hydra's list or sweep syntax, else None."""
    from hydra.core.override_parser.types import Transformer

    key = override.key_or_group
    if override.is_interval_sweep():
        raise ConfigError(f"{override.input_line}: the space is sampled, not continuous: give "
                          f"{key}={{min:A,max:B,step:S}} (or factor:F instead of step), or {key}=[A,B,...]")
    if override.is_sweep_override():
        if multirun:
            return None  # Hydra's meaning: one study a value
        if not override.is_discrete_sweep() or override.value_type.name == "GLOB_CHOICE_SWEEP":
            raise ConfigError(f"{override.input_line}: give the values as a list, {key}=[A,B,...]")
        return [Transformer.str(value) for value in override.sweep_iterator()]
    if isinstance(override.value(), list):
        return [Transformer.str(value) for value in override.value()]
    return None


def rewrite(overrides: Sequence[str], multirun: bool) -> list[str]:
    """The overrides as Hydra is to see them (see the module's description)."""
    result = []
    for text in overrides:
        override = parse_override(text)
        key = override.key_or_group
        if key.startswith("space.") and not override.is_delete():
            values = searched_values(override, multirun)
            whole = values is not None or isinstance(override.value(), dict)
            if whole and key.count(".") == 1:
                result.append(f"{override.get_key_element()}=null")  # replace the range, do not merge into it
            if values is not None:
                result.append(f"{override.get_key_element()}={{values:[{','.join(values)}]}}")
                continue
        elif override.is_sweep_override() and not multirun:
            raise ConfigError(f"{text} sweeps over several values, one study (or run) each: add -m (--multirun) "
                              f"to run them all, or quote a value that is one string: {key}='A,B'")
        result.append(text)
    return result


# --- composing ----------------------------------------------------------------------------------------------

class Source:
    """Where the configuration comes from: a directory, a primary config, perhaps another directory searched."""

    def __init__(self, args: Any = None):
        path = getattr(args, "config_path", None)
        self.directory = Path(path).resolve() if path else config_dir()
        self.name = getattr(args, "config_name", None) or CONFIG_NAME
        extra = getattr(args, "config_dir", None)
        self.search = [f"hydra.searchpath=[file://{Path(extra).resolve()}]"] if extra else []

    def compose(self, overrides: Sequence[str]) -> DictConfig:
        """The configuration with Hydra's node, unresolved."""
        from hydra import compose as hydra_compose, initialize_config_dir
        from hydra.core.global_hydra import GlobalHydra
        from hydra.errors import HydraException

        register_resolvers()
        with initialize_config_dir(str(self.directory), version_base=None, job_name="autopager"):
            loader = GlobalHydra.instance().config_loader()

            def options(group: str) -> list[str]:
                return sorted(loader.get_group_options(group))

            try:
                return hydra_compose(self.name, overrides=[*self.search, *overrides], return_hydra_config=True)
            except (HydraException, OmegaConfBaseException, ValueError) as error:
                raise ConfigError(hydra_message(error, options)) from None


def app_choices(choices: Mapping[str, Any]) -> dict[str, str]:
    return {group: option for group, option in choices.items() if not group.startswith("hydra")}


def resolved(config: DictConfig, choices: Mapping[str, Any]) -> DictConfig:
    """The configuration of a job, every value resolved and present, Hydra's node left out."""
    if not choices.get("workload"):
        raise ConfigError(f"choose a workload: workload=NAME, one of: {', '.join(available('workload'))}")
    config = config.copy()
    with open_dict(config):
        config.pop("hydra", None)
    if "max_threads" in config:  # read by the space's interpolations, which would not name it
        try:
            whole("max_threads", config.max_threads, 1)
        except OmegaConfBaseException as error:
            raise ConfigError(f"max_threads: {str(error).splitlines()[0]}") from None
    try:
        OmegaConf.resolve(config)
        OmegaConf.to_container(config, throw_on_missing=True)
    except OmegaConfBaseException as error:
        key = getattr(error, "full_key", None) or "a setting"
        raise ConfigError(f"{key} is required: give it on the command line ({key}=...)" if "Missing" in
                          type(error).__name__ else f"{key}: {str(error).splitlines()[0]}") from None
    return config


def compose(overrides: Sequence[str]) -> tuple[DictConfig, dict[str, str]]:
    """The resolved configuration for one job's overrides (no Hydra flags), and the chosen option of each group."""
    config = Source().compose(rewrite(overrides, multirun=False))
    choices = app_choices(config.hydra.runtime.choices)
    return resolved(config, choices), choices
