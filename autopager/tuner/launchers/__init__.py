"""Launchers: where a study's trials run (``launcher=local``, ``ray`` or ``slurm``), one module each behind
``base.Launcher``."""
from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from typing import Any, Mapping

from autopager.errors import ConfigError
from autopager.tuner.launchers.base import Launcher, LauncherSettings, TrialResult, TrialTask

# name -> module and class, imported on use (Ray takes seconds to import)
LAUNCHERS = {
    "local": ("autopager.tuner.launchers.local", "LocalLauncher"),
    "ray": ("autopager.tuner.launchers.ray", "RayLauncher"),
    "slurm": ("autopager.tuner.launchers.slurm", "SlurmLauncher"),
}


# name -> the module it needs and the extra that installs it
NEEDS = {"ray": ("ray", "ray"), "slurm": ("submitit", "slurm")}


def missing(name: str) -> str | None:
    """Why launcher ``name`` cannot run here (what to install), or None."""
    if name not in NEEDS:
        return None
    module, extra = NEEDS[name]
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    return None if found else (f"launcher={name} needs {module}, which is not installed: "
                               f"pip install 'autopager[{extra}]'")


def launcher_settings(settings: Mapping[str, Any]) -> LauncherSettings:
    """The ``launcher`` section checked (a ConfigError names a bad setting, or what to install), before anything
    runs or is written."""
    parsed = LauncherSettings.from_config(settings)
    if parsed.name not in LAUNCHERS:
        raise ConfigError(f"unknown launcher {parsed.name!r}; the launchers are: {', '.join(LAUNCHERS)}")
    reason = missing(parsed.name)
    if reason:
        raise ConfigError(reason)
    return parsed


def make_launcher(settings: Mapping[str, Any], directory: Path) -> Launcher:
    parsed = launcher_settings(settings)
    module, cls = LAUNCHERS[parsed.name]
    try:
        return getattr(importlib.import_module(module), cls)(parsed, directory)
    except ImportError as error:
        raise ConfigError(f"{missing(parsed.name) or f'launcher={parsed.name}'} ({error})") from None


__all__ = ["LAUNCHERS", "Launcher", "LauncherSettings", "TrialResult", "TrialTask", "launcher_settings", "make_launcher"]
