"""Launchers: where a study's trials run (``launcher=local``, ``ray`` or ``slurm``), one module each behind
``base.Launcher``."""
from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, Mapping

from autopager.errors import ConfigError
from autopager.launchers.base import Launcher, LauncherSettings, TrialResult, TrialTask

# name -> module and class, imported on use (Ray takes seconds to import)
LAUNCHERS = {
    "local": ("autopager.launchers.local", "LocalLauncher"),
    "ray": ("autopager.launchers.ray", "RayLauncher"),
    "slurm": ("autopager.launchers.slurm", "SlurmLauncher"),
}


def launcher_settings(settings: Mapping[str, Any]) -> LauncherSettings:
    """The ``launcher`` section checked (a ConfigError names a bad setting), before anything is written."""
    parsed = LauncherSettings.from_config(settings)
    if parsed.name not in LAUNCHERS:
        raise ConfigError(f"unknown launcher {parsed.name!r}; the launchers are: {', '.join(LAUNCHERS)}")
    return parsed


def make_launcher(settings: Mapping[str, Any], directory: Path) -> Launcher:
    parsed = launcher_settings(settings)
    module, cls = LAUNCHERS[parsed.name]
    return getattr(importlib.import_module(module), cls)(parsed, directory)


__all__ = ["LAUNCHERS", "Launcher", "LauncherSettings", "TrialResult", "TrialTask", "launcher_settings", "make_launcher"]
