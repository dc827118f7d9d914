"""Profiles: the best paging parameters found for a workload, kept as small readable YAML files.

A profile lives at ``<profile_dir>/<workload>/<data>@<machine>.yaml``, for example
``~/.config/autopager/profiles/bfs/size=16,threads=2@2cpu-23GiB.yaml``:

- ``<data>`` names the workload's size knobs and its buffer (``size=16,threads=2,buffer=2GiB``; ``default`` when
  it has none): a study at another buffer neither confirms nor replaces a profile made at this one,
- ``<machine>`` names the hardware it was found on (hardware threads and memory in GiB),

so tuning again on other data or another machine keeps both profiles. A profile is named either by a path
to its file, by ``<workload>/<data>@<machine>``, or by the workload alone: ``load_profile("bfs")`` picks the
newest profile found on this machine, else the newest of all.

A name is looked up in the profile directory (``bfs``, ``bfs/size=16,threads=2@2cpu-23GiB``) and never leaves it;
only what looks like a path (ending in ``.yaml``, or starting with ``/``, ``./``, ``../`` or ``~``) is read as a file.

A profile's ``searched`` lists the parameters its study searched; the others (the buffer size in particular, the
user's constraint) were fixed by the study and are not applied from the profile (``tuned_params``). A profile
without ``searched`` (hand-written, or older) counts every parameter but ``buffer_size`` as tuned.

Every profile is validated when read; a bad one is a ProfileError naming the file and the field.

The profile directory is ``$AUTOPAGER_PROFILE_DIR`` if set, else ``~/.config/autopager/profiles``.
"""
from __future__ import annotations

import datetime
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import yaml

from autopager.errors import ConfigError
from autopager.machine import this_machine
from autopager.parameters import PARAMETERS, check_names, check_params, format_size, parse_size, parse_value

SIZE_PARAMETERS = ("page_size", "buffer_size", "read_ahead_run", "read_around")
SUFFIX = ".yaml"


class ProfileError(ConfigError, LookupError):
    """No such profile, or a profile file that cannot be read."""


class ProfileNotFound(ProfileError):
    """No profile of that name."""


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
    """Parameters as used in Python: sizes in bytes, the rest ints, each checked against what the pager accepts."""
    if not isinstance(params, Mapping):
        raise ProfileError(f"{source}: params must be a mapping of parameter: value, not {params!r}")
    try:
        check_names(params, "params")
    except ValueError as error:
        raise ProfileError(f"{source}: {error}") from None
    try:
        parsed = {name: None if value is None else parse_value(name, value, "params") for name, value in params.items()}
    except ConfigError as error:
        raise ProfileError(f"{source}: {error}") from None
    try:
        check_params(parsed)
    except ValueError as error:
        raise ProfileError(f"{source}: params.{error}") from None
    return parsed


def check_fields(data: Mapping[str, Any], source: str) -> None:
    """The fields beside ``params``: what a profile file may hold, each of the right kind."""
    def number(value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)

    for name in ("value", "default_value", "speedup_over_default"):
        if data.get(name) is not None and not number(data[name]):
            raise ProfileError(f"{source}: {name}: {data[name]!r} is not a number")
    if data.get("goal") is not None and data["goal"] not in ("minimize", "maximize"):
        raise ProfileError(f"{source}: goal: {data['goal']!r} is not minimize or maximize")
    for name in ("workload", "metric", "strategy"):
        if data.get(name) is not None and not isinstance(data[name], str):
            raise ProfileError(f"{source}: {name}: {data[name]!r} is not a string")
    searched = data.get("searched")
    if searched is not None and (not isinstance(searched, list) or set(searched) - set(PARAMETERS)):
        raise ProfileError(f"{source}: searched: {searched!r} is not a list of parameters ({', '.join(PARAMETERS)})")
    found_on = data.get("found_on")
    if found_on is not None and (not isinstance(found_on, Mapping) or not all(
            isinstance(found_on.get(part) or {}, Mapping) for part in ("workload", "machine"))):
        raise ProfileError(f"{source}: found_on: expected a mapping with workload and machine mappings")
    machine = (found_on or {}).get("machine")
    if machine:
        try:
            machine_key(machine)
        except (KeyError, TypeError, ValueError):
            raise ProfileError(f"{source}: found_on.machine: expected cores and memory, not {machine!r}") from None


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
    def searched(self) -> list[str]:
        """The parameters the profile's study searched (without that record: all but the buffer size)."""
        if self.data.get("searched") is not None:
            return list(self.data["searched"])
        return [name for name in PARAMETERS if name != "buffer_size"]

    @property
    def tuned_params(self) -> dict[str, Any]:
        """What the profile sets: the parameters its study searched, not the ones it held fixed."""
        return {name: value for name, value in self.params.items() if name in self.searched and value is not None}

    @property
    def found_for(self) -> dict[str, Any]:
        """The workload's size knobs the profile was found with, its buffer included (a profile written before the
        buffer was part of them: the buffer of its parameters)."""
        found = dict((self.data.get("found_on") or {}).get("workload") or {})
        if "buffer" not in found and self.params.get("buffer_size"):
            found["buffer"] = format_size(self.params["buffer_size"])
        return found

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
    except (OSError, ValueError, yaml.YAMLError) as error:  # ValueError: a number of more digits than Python reads
        raise ProfileError(f"cannot read profile {path}: {str(error).splitlines()[0]}") from None
    if not isinstance(data, dict) or not isinstance(data.get("params"), dict):
        raise ProfileError(f"{path} is not a profile: expected a YAML mapping with 'params'")
    profile = Profile(path, data)
    profile.params  # validates
    check_fields(data, str(path))
    return profile


def scan_profiles(directory: Path | None = None) -> tuple[list[Profile], list[tuple[Path, str]]]:
    """Every profile in the directory, by workload then newest first, and the files that are not valid profiles
    with the reason."""
    directory = Path(directory) if directory else default_profile_dir()
    profiles, broken = [], []
    for path in sorted(directory.glob(f"*/*{SUFFIX}")):
        try:
            profiles.append(read_profile(path))
        except ProfileError as error:
            broken.append((path, str(error)))
    return sorted(sorted(profiles, key=lambda p: p.date, reverse=True), key=lambda p: p.workload), broken


def list_profiles(directory: Path | None = None) -> list[Profile]:
    """Every valid profile in the directory, by workload then newest first."""
    return scan_profiles(directory)[0]


def looks_like_path(name: str) -> bool:
    return name.endswith(SUFFIX) or name.startswith(("/", "./", "../", "~"))


def profiles_named(name: str, directory: Path) -> list[Path]:
    """The files in the directory a profile name stands for: ``<workload>`` (all of its) or ``<workload>/<file>``."""
    parts = name.split("/")
    if not name or len(parts) > 2 or any(part in ("", ".", "..") for part in parts):
        raise ProfileNotFound(f"no profile named {name!r}: a profile is named <workload> or <workload>/<data>@<machine> "
                              f"(see `autopager profile list`), or given as a file path ending in {SUFFIX}")
    if len(parts) == 1:
        return sorted((directory / name).glob(f"*{SUFFIX}"))
    path = directory / parts[0] / (parts[1] + SUFFIX)
    return [path] if path.is_file() else []


def find_profile(name_or_path: str | os.PathLike, directory: Path | None = None,
                 knobs: Mapping[str, Any] | None = None) -> Profile:
    """The profile named by a file path, by ``<workload>/<data>@<machine>``, or by a workload name (its profiles:
    the newest found on this machine, of those found with ``knobs`` if any was)."""
    directory = Path(directory) if directory else default_profile_dir()
    name = os.fspath(name_or_path)
    if isinstance(name_or_path, os.PathLike) or looks_like_path(name):
        path = Path(name).expanduser()
        if not path.is_file():
            raise ProfileNotFound(f"no profile file {path}")
        return read_profile(path)
    paths = profiles_named(name, directory)
    if not paths:
        raise ProfileNotFound(f"no profile named {name!r} in {directory} (see `autopager profile list`; "
                              f"a workload's profile is made by `autopager tune workload=NAME`)")
    profiles = [read_profile(path) for path in paths]
    here = machine_key(this_machine())
    return max(profiles, key=lambda p: (p.machine_key == here, knobs is not None and all(
        p.found_for.get(knob) == value for knob, value in knobs.items()), p.date))


def load_profile(name_or_path: str | os.PathLike, directory: Path | None = None) -> dict[str, Any]:
    """The parameters a profile sets (DESIGN.md names; page_size in bytes): those its study searched.

    ``name_or_path`` is a profile file, ``<workload>/<data>@<machine>``, or a workload name, in which case
    the newest profile found on this machine is used, else the newest. Raises ProfileError if none.
    """
    return find_profile(name_or_path, directory).tuned_params


def delete_profile(name_or_path: str, directory: Path | None = None) -> Path:
    """Remove one profile file, valid or not; a workload name with several profiles is refused with their names."""
    directory = Path(directory) if directory else default_profile_dir()
    if looks_like_path(name_or_path):
        path = Path(name_or_path).expanduser()
        if not path.is_file():
            raise ProfileNotFound(f"no profile file {path}")
    else:
        paths = profiles_named(name_or_path, directory)
        if not paths:
            raise ProfileNotFound(f"no profile named {name_or_path!r} in {directory} (see `autopager profile list`)")
        if len(paths) > 1:
            names = ", ".join(f"{p.parent.name}/{p.name[:-len(SUFFIX)]}" for p in paths)
            raise ConfigError(f"{name_or_path!r} has {len(paths)} profiles: delete one of them by name: {names}")
        path = paths[0]
    path.unlink()
    return path


def profile_path(directory: Path, workload: str, knobs: Mapping[str, Any], machine: Mapping[str, Any]) -> Path:
    return Path(directory) / workload / f"{data_key(knobs)}@{machine_key(machine)}{SUFFIX}"


def at_other_buffers(directory: Path, workload: str, knobs: Mapping[str, Any]) -> list[Profile]:
    """The workload's profiles found with these knobs but another buffer (what a study at this buffer leaves be)."""
    others = {knob: value for knob, value in knobs.items() if knob != "buffer"}
    return [profile for profile in list_profiles(directory)
            if profile.workload == workload and profile.found_for.get("buffer") != knobs.get("buffer")
            and all(profile.found_for.get(knob) == value for knob, value in others.items())]


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
        try:
            old = read_profile(path).data
        except ProfileError as error:
            print(f"autopager: replacing a broken profile: {error}", file=sys.stderr)
            old = {}
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
