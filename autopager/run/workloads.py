"""Workloads: the programs a study runs, read from ``configs/workload/NAME.yaml``, and where they live.

A workload's ``command`` (and optional ``prepare``) is split into words like a shell would, then each word's
placeholders are filled in: ``{bin}`` the directory of the workload executables, ``{data_dir}``, ``{size}``,
``{threads}``, ``{python}`` (this interpreter) and ``{package}`` (the autopager package directory).

``{bin}`` is, in order: ``$AUTOPAGER_BIN``; ``<package>/bin`` (where ``pip install`` puts the executables);
``<repo>/build/workloads`` (a developer build).
"""
from __future__ import annotations

import dataclasses
import glob
import os
import shlex
import shutil
import string
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from autopager.checks import flag, number, whole
from autopager.errors import ConfigError
from autopager.exec import PACKAGE, heap_directory, preload_library, transparent_argv
from autopager.parameters import format_size, parse_size
from autopager.run.goal import Goal

REPO = PACKAGE.parent
PLACEHOLDERS = ("bin", "data_dir", "size", "threads", "python", "package")


def config_dir() -> Path:
    """The Hydra configuration: ``$AUTOPAGER_CONFIG_DIR``, else ``<package>/configs``, else ``<repo>/configs``."""
    if os.environ.get("AUTOPAGER_CONFIG_DIR"):
        return Path(os.environ["AUTOPAGER_CONFIG_DIR"]).resolve()
    for candidate in (PACKAGE / "configs", REPO / "configs"):
        if (candidate / "config.yaml").is_file():
            return candidate
    raise ConfigError(f"no autopager configuration found in {PACKAGE / 'configs'} or {REPO / 'configs'}; "
                      f"set AUTOPAGER_CONFIG_DIR to the directory holding config.yaml")


def available(group: str) -> list[str]:
    """The options of a config group (workload, space, strategy)."""
    return sorted(path.stem for path in (config_dir() / group).glob("*.yaml"))


def bin_candidates() -> list[Path]:
    if os.environ.get("AUTOPAGER_BIN"):
        return [Path(os.environ["AUTOPAGER_BIN"]).expanduser()]
    return [PACKAGE / "bin", REPO / "build" / "workloads"]


def locate_bin(program: str) -> Path:
    """The directory holding the workload executable ``program``."""
    candidates = bin_candidates()
    for directory in candidates:
        if os.access(directory / program, os.X_OK):
            return directory
    raise ConfigError(f"workload executable {program!r} not found in {', '.join(map(str, candidates))}: "
                      f"build the workloads (`pip install .`, or `cmake -B build && cmake --build build`) "
                      f"or set AUTOPAGER_BIN to the directory holding them")


def placeholders(word: str) -> set[str]:
    return {field for _, field, _, _ in string.Formatter().parse(word) if field is not None}


@dataclass(frozen=True)
class Workload:
    name: str
    command: str
    prepare: str | None
    size: Any
    threads: Any
    metric: str
    goal: Goal
    buffer_size: int | None
    data_files: str | None
    timeout: float | None
    time_process: bool
    data_dir: Path
    mmap_command: str | None = None   # the same program on the kernel's mmap (our workloads: --mmap)
    private_memory: int = 0           # bytes the program needs besides its paged data (its own arrays)
    transparent: bool = False         # run through `autopager exec`'s preload: the program's own mmap()s on the pager
    heap: str | None = None           # with transparent: exec's heap= (its large anonymous mappings on the pager too)

    @classmethod
    def from_config(cls, config: Mapping[str, Any], data_dir: str) -> "Workload":
        name = config.get("name") or "workload"
        command = config.get("command")
        if not command or not str(command).strip():
            raise ConfigError(f"workload {name}: no command; give one with workload.command=\"./myapp --input big.bin\"")
        try:
            goal = Goal.parse(config.get("goal", Goal.MINIMIZE.value))
        except ValueError as error:
            raise ConfigError(f"workload.goal {error}") from None
        try:
            buffer_size = None if config.get("buffer_size") is None else parse_size(config["buffer_size"])
        except ValueError as error:
            raise ConfigError(f"workload.buffer_size: {error}") from None
        try:
            private_memory = parse_size(config.get("private_memory") or 0)
        except ValueError as error:
            raise ConfigError(f"workload.private_memory: {error}") from None
        for setting in ("prepare", "data_files", "mmap_command"):
            if config.get(setting) is not None and not isinstance(config[setting], str):
                raise ConfigError(f"workload.{setting} must be one string (words separated by spaces, as on a command "
                                  f"line), not {config[setting]!r}")
        size = config.get("size")
        if isinstance(size, (int, float)) and not isinstance(size, bool) and size <= 0:
            raise ConfigError(f"workload.size must be positive, not {size!r}")
        timeout = config.get("timeout")
        number("workload.timeout", timeout, 0, above=True, optional=True)  # seconds
        whole("workload.threads", config.get("threads"), 1, optional=True)
        for setting in ("transparent", "time_process"):
            flag(f"workload.{setting}", config.get(setting, False))
        if not str(data_dir).strip():
            raise ConfigError("data_dir must be a directory, not empty (data_dir=~/.cache/autopager/data)")
        workload = cls(name=str(name), command=str(command), prepare=config.get("prepare"), size=size,
                       threads=config.get("threads"), metric=str(config.get("metric", "seconds")), goal=goal,
                       buffer_size=buffer_size, data_files=config.get("data_files"), timeout=timeout,
                       time_process=bool(config.get("time_process", False)),
                       data_dir=Path(str(data_dir)).expanduser(), mmap_command=config.get("mmap_command") and str(config["mmap_command"]),
                       private_memory=private_memory,
                       transparent=bool(config.get("transparent", False)) or bool(config.get("heap")),
                       heap=config.get("heap") and str(config["heap"]))
        for template in (workload.command, workload.prepare, workload.data_files, workload.mmap_command):
            if template:
                workload._fill_words(template, check_only=True)
        return workload

    def kernel_mmap(self) -> "Workload":
        """The same workload on the kernel's mmap: its ``mmap_command``."""
        if not self.mmap_command:
            raise ConfigError(f"workload {self.name} has no kernel-mmap mode: give the command that runs it on the "
                              f"kernel's mmap as workload.mmap_command=\"...\"")
        return dataclasses.replace(self, command=self.mmap_command, transparent=False, heap=None)

    @property
    def knobs(self) -> dict[str, Any]:
        """What a profile is for, beside the workload and the machine: its data part is named after these (the
        buffer too: parameters tuned for one buffer are not those of another)."""
        return {"size": self.size, "threads": self.threads,
                "buffer": None if self.buffer_size is None else format_size(self.buffer_size)}

    def _fill_words(self, template: str, check_only: bool = False) -> list[str]:
        try:
            words = shlex.split(template)
        except ValueError as error:
            raise ConfigError(f"workload {self.name}: cannot split {template!r}: {error}") from None
        fields = set().union(*(placeholders(word) for word in words)) if words else set()
        unknown = fields - set(PLACEHOLDERS)
        if unknown:
            raise ConfigError(f"workload {self.name}: unknown placeholder(s) {sorted(unknown)} in {template!r}; "
                              f"known: {', '.join('{%s}' % p for p in PLACEHOLDERS)}")
        if check_only:
            return words
        values = {"data_dir": self.data_dir, "size": self.size, "threads": self.threads,
                  "python": sys.executable, "package": PACKAGE}
        if "bin" in fields:
            program = next(w for w in words if "{bin}" in w).split("{bin}", 1)[1].lstrip("/").split("/")[0]
            values["bin"] = locate_bin(program)
        return [word.format(**values) for word in words]

    def argv(self) -> list[str]:
        words = self._fill_words(self.command)
        if self.transparent:
            return transparent_argv(words, self.heap)
        return words

    def prepare_argv(self) -> list[str] | None:
        return self._fill_words(self.prepare) if self.prepare else None

    def data_paths(self) -> list[Path]:
        """The files to evict from the page cache before a run."""
        if not self.data_files:
            return []
        return [Path(p) for pattern in self._fill_words(self.data_files) for p in sorted(glob.glob(pattern))]

    def check(self) -> None:
        """Fail early, with the fix, if the program cannot be started."""
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise ConfigError(f"data_dir: cannot create {self.data_dir}: {error.strerror}") from None
        if self.transparent:
            preload_library()
            if self.heap:
                heap_directory(self.heap)
        for argv in (self._fill_words(self.command), self.prepare_argv()):
            if argv is None:
                continue
            program = argv[0]
            found = os.access(program, os.X_OK) if "/" in program else shutil.which(program) is not None
            if not found:
                raise ConfigError(f"workload {self.name}: cannot run {program!r}: no such executable")
