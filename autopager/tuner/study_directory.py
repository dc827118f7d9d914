"""Where a study lives and what a resumed one must share: ``<study.root>/<workload>/<study.name>/`` (its name
made from its settings when none is given) holding ``config.yaml`` and ``trials.csv``; running the same study
again resumes it, unless a setting of its identity changed: then a study named by study.name is refused, and one
named by default goes beside it (``<name>-2``).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

import yaml
from omegaconf import DictConfig, OmegaConf

from autopager.errors import ConfigError
from autopager.parameters import format_size
from autopager.tuner.space import MMAP as MMAP_SETTING

IDENTITY = ("workload", "space", "strategy", "baseline", "seed", "runner.repeats")  # what a resumed study must share
TABLE, CONFIG = "trials.csv", "config.yaml"


def identity(config: Mapping[str, Any], key: str) -> Any:
    """A setting (a dotted path) that a resumed study must share; baseline.mmap may be turned on later."""
    value: Any = config
    for part in key.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return {k: v for k, v in value.items() if k != MMAP_SETTING} if key == "baseline" and value else value


def default_name(strategy: str, space: str, size: Any, buffer_size: int | None = None, repeats: int = 1) -> str:
    """<strategy>[-<space>][-size<size>][-buf<buffer>][-x<repeats>]: what tells studies of a workload apart."""
    parts = ([strategy] + ([] if space == "default" else [space]) + ([] if size is None else [f"size{size}"])
             + ([] if buffer_size is None else [f"buf{format_size(buffer_size)}"])
             + ([] if repeats == 1 else [f"x{repeats}"]))
    return "-".join(parts)


def study_directory(root: str, workload: str, name: str) -> Path:
    """``<root>/<workload>/<name>``; a ConfigError when the workload's or the study's name would leave study.root."""
    for setting, part in (("workload.name", workload), ("study.name", name)):
        normal = os.path.normpath(part)
        if os.path.isabs(part) or normal == "." or normal.split(os.sep)[0] == "..":
            raise ConfigError(f"{setting}={part!r} would leave study.root ({root}): give a name inside it "
                              f"(not absolute, no leading '..')")
    return Path(root).expanduser() / workload / name


def changed_identity(directory: Path, config: DictConfig) -> list[str]:
    """The settings of its identity that the study in ``directory`` (if any) was run with otherwise than ``config``."""
    saved = directory / CONFIG
    if not (directory / TABLE).is_file() or not saved.is_file():
        return []
    old = yaml.safe_load(saved.read_text()) or {}
    new = OmegaConf.to_container(config, resolve=True)
    return [key for key in IDENTITY if identity(old, key) != identity(new, key)]


def default_directory(root: str, workload: str, name: str, config: DictConfig) -> tuple[Path, list[Path]]:
    """Where a study without a study.name goes: the first of ``<name>``, ``<name>-2``, ``<name>-3``, ... that is new or
    holds a study of the same identity (which the same command thus resumes), and the directories passed over,
    studies of that name run with other settings (another space, ...), which are left as they are."""
    passed: list[Path] = []
    while True:
        directory = study_directory(root, workload, name if not passed else f"{name}-{len(passed) + 1}")
        if not changed_identity(directory, config):
            return directory, passed
        passed.append(directory)


def check_resumable(directory: Path, config: DictConfig) -> None:
    """A ConfigError if ``directory`` holds a study that ``config`` may not resume."""
    if not (directory / TABLE).is_file() or not (directory / CONFIG).is_file():
        return
    if not config.study.resume:
        raise ConfigError(f"study {directory} exists and study.resume=false: choose another study.name "
                          f"or remove that directory")
    changed = changed_identity(directory, config)
    if changed:
        raise ConfigError(f"study {directory} was run with other {', '.join(changed)} settings: to resume "
                          f"it, use the same ones; to start another study, give study.name=NAME")
