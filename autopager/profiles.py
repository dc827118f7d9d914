"""Profiles: the best paging parameters found for a workload, kept as small readable YAML files.

A profile lives at ``<profile_dir>/<workload>/<data>@<machine>.yaml``, for example
``~/.config/autopager/profiles/bfs/size=16,threads=2@2cpu-23GiB.yaml``:

- ``<data>`` names the workload's size knobs (``size=16,threads=2``; ``default`` when it has none),
- ``<machine>`` names the hardware it was found on (hardware threads and memory in GiB),

so tuning again on other data or another machine keeps both profiles. A profile is named either by a path
to its file, by ``<workload>/<data>@<machine>``, or by the workload alone: ``load_profile("bfs")`` picks the
newest profile found on this machine, else the newest of all.

The profile directory is ``$AUTOPAGER_PROFILE_DIR`` if set, else ``~/.config/autopager/profiles``.
"""
from __future__ import annotations

import datetime
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import yaml

from autopager.errors import ConfigError
from autopager.machine import this_machine
from autopager.params import PARAMETERS, format_size, parse_size

SIZE_PARAMETERS = ("page_size", "buffer_size")
SUFFIX = ".yaml"


class ProfileError(ConfigError, LookupError):
    """No such profile, or a profile file that cannot be read."""


def default_profile_dir() -> Path:
    return Path(os.environ.get("AUTOPAGER_PROFILE_DIR") or "~/.config/autopager/profiles").expanduser()


def machine_key(machine: Mapping[str, Any]) -> str:
    """The machine part of a profile's name: hardware threads and memory, e.g. ``2cpu-23GiB``."""
    return f"{machine['cores']}cpu-{format_size(parse_size(machine['memory']))}"


def data_key(knobs: Mapping[str, Any]) -> str:
    """The data part of a profile's name from the workload's size knobs, e.g. ``size=16,threads=2``."""
    parts = [f"{name}={value}" for name, value in knobs.items() if value is not None]
    return ",".join(parts) or "default"


def readable_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """Parameters as written in a profile: sizes as "64KiB" rather than bytes."""
    return {name: format_size(int(value)) if name in SIZE_PARAMETERS and value is not None else value
            for name, value in params.items()}


def parse_params(params: Mapping[str, Any], source: str) -> dict[str, Any]:
    """Parameters as used in Python: sizes in bytes, the rest ints. Unknown names are an error."""
    unknown = set(params) - set(PARAMETERS)
    if unknown:
        raise ProfileError(f"{source}: unknown parameter(s) {sorted(unknown)}; known: {', '.join(PARAMETERS)}")
    try:
        return {name: None if value is None else parse_size(value) if name in SIZE_PARAMETERS else int(value)
                for name, value in params.items()}
    except ValueError as error:
        raise ProfileError(f"{source}: {error}") from None


@dataclass(frozen=True)
class Profile:
    path: Path
    data: Mapping[str, Any]

    @property
    def name(self) -> str:
        """``<workload>/<data>@<machine>``: what ``profile show`` and ``load_profile`` accept."""
        return f"{self.path.parent.name}/{self.path.name[:-len(SUFFIX)]}"

    @property
    def workload(self) -> str:
        return str(self.data.get("workload", self.path.parent.name))

    @property
    def params(self) -> dict[str, Any]:
        return parse_params(self.data.get("params") or {}, str(self.path))

    @property
    def machine_key(self) -> str | None:
        machine = (self.data.get("found_on") or {}).get("machine")
        return machine_key(machine) if machine else None

    @property
    def date(self) -> str:
        return str(self.data.get("date", ""))

    def to_yaml(self) -> str:
        return yaml.safe_dump(dict(self.data), sort_keys=False)


def read_profile(path: Path) -> Profile:
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise ProfileError(f"cannot read profile {path}: {error}") from None
    if not isinstance(data, dict) or not isinstance(data.get("params"), dict):
        raise ProfileError(f"{path} is not a profile: expected a YAML mapping with 'params'")
    profile = Profile(path, data)
    profile.params  # validates
    return profile


def list_profiles(directory: Path | None = None) -> list[Profile]:
    """Every profile in the directory, by workload then newest first."""
    directory = Path(directory) if directory else default_profile_dir()
    profiles = [read_profile(path) for path in sorted(directory.glob(f"*/*{SUFFIX}"))]
    return sorted(sorted(profiles, key=lambda p: p.date, reverse=True), key=lambda p: p.workload)


def find_profile(name_or_path: str | os.PathLike, directory: Path | None = None) -> Profile:
    """The profile named by a file path, by ``<workload>/<data>@<machine>``, or by a workload name."""
    directory = Path(directory) if directory else default_profile_dir()
    path = Path(name_or_path).expanduser()
    if path.is_file():
        return read_profile(path)
    name = str(name_or_path)
    if "/" in name:
        candidate = directory / (name if name.endswith(SUFFIX) else name + SUFFIX)
        if candidate.is_file():
            return read_profile(candidate)
        raise ProfileError(f"no profile file {path} nor profile {name!r} in {directory} "
                           f"(see `autopager profile list`)")
    profiles = [read_profile(p) for p in sorted((directory / name).glob(f"*{SUFFIX}"))]
    if not profiles:
        raise ProfileError(f"no profile for workload {name!r} in {directory}: tune it first "
                           f"(`autopager tune workload={name}`) or set AUTOPAGER_PROFILE_DIR")
    here = machine_key(this_machine())
    return max(profiles, key=lambda p: (p.machine_key == here, p.date))


def load_profile(name_or_path: str | os.PathLike, directory: Path | None = None) -> dict[str, Any]:
    """The parameters of a profile (DESIGN.md names; page_size and buffer_size in bytes).

    ``name_or_path`` is a profile file, ``<workload>/<data>@<machine>``, or a workload name, in which case
    the newest profile found on this machine is used, else the newest. Raises ProfileError if none.
    """
    return find_profile(name_or_path, directory).params


def profile_path(directory: Path, workload: str, knobs: Mapping[str, Any], machine: Mapping[str, Any]) -> Path:
    return Path(directory) / workload / f"{data_key(knobs)}@{machine_key(machine)}{SUFFIX}"


def is_better(value: float, than: float, goal: str) -> bool:
    return value < than if goal == "minimize" else value > than


def save_profile(record: Mapping[str, Any], directory: Path | None = None) -> tuple[Path, bool]:
    """Write a profile unless one for the same workload, data and machine already has a better value.

    ``record`` holds workload, params (bytes), metric, goal, value and found_on (workload knobs, machine).
    Returns the file's path and whether it was written.
    """
    directory = Path(directory) if directory else default_profile_dir()
    found_on = record["found_on"]
    path = profile_path(directory, record["workload"], found_on["workload"], found_on["machine"])
    if path.is_file():
        old = read_profile(path).data
        if (old.get("metric") == record["metric"] and old.get("value") is not None
                and not is_better(record["value"], old["value"], record["goal"])):
            return path, False
    return write_profile(record, directory), True


def write_profile(record: Mapping[str, Any], directory: Path | None = None) -> Path:
    """Write a profile (record as for save_profile), replacing any for the same workload, data and machine."""
    directory = Path(directory) if directory else default_profile_dir()
    found_on = record["found_on"]
    path = profile_path(directory, record["workload"], found_on["workload"], found_on["machine"])
    data = dict(record)
    data["params"] = readable_params(record["params"])
    data.setdefault("date", datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(yaml.safe_dump(data, sort_keys=False))
    os.replace(temporary, path)
    return path
