"""`autopager profile list | show | export | delete`: the saved profiles (autopager.profiles)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from autopager.checks import one_of
from autopager.errors import ConfigError
from autopager.parameters import show, to_environment
from autopager.profiles import Profile, default_profile_dir, delete_profile, find_profile, scan_profiles
from autopager.tuner.progress import format_value


def profile_command(args: Sequence[str]) -> int:
    directory = default_profile_dir()
    words = []
    for arg in args:
        if arg.startswith("profile_dir="):
            directory = Path(arg.split("=", 1)[1]).expanduser()
        else:
            words.append(arg)
    if words == ["list"]:
        profiles, broken = scan_profiles(directory)
        if not profiles and not broken:
            print(f"no profiles in {directory}")
            return 0
        print(f"{'profile':56} {'buffer':>8}  {'value':18} {'speedup':9} {'confirmed':9}  date")
        for profile in profiles:
            data = profile.data
            gain = data.get("speedup_over_default")
            buffer = profile.params.get("buffer_size")
            print(f"{profile.name:56} {show('buffer_size', buffer) if buffer else '-':>8}  "
                  f"{format_value(data.get('value'), data.get('metric', '')):18} "
                  f"{f'{gain}x' if gain else '-':9} {'yes' if data.get('confirmed') else 'no':9}  {profile.date}")
        for path, reason in broken:
            print(f"{path.parent.name}/{path.stem:50} BROKEN: {reason}")
        return 0
    if len(words) == 2 and words[0] == "delete":
        print(f"deleted {delete_profile(words[1], directory)}")
        return 0
    if len(words) == 2 and words[0] == "show":
        profile = find_profile(words[1], directory)
        print(f"# {profile.path}\n{profile.to_yaml()}", end="")
        return 0
    export = export_format(words)
    if export is not None:
        name, format_ = export
        print(exported(find_profile(name, directory), format_), end="")
        return 0
    raise ConfigError("profile: expected `profile list`, `profile show NAME`, `profile export NAME "
                      f"[--format {'|'.join(EXPORT_FORMATS)}]` or `profile delete NAME`")


EXPORT_FORMATS = ("env", "json", "slurm", "systemd")


def export_format(words: list[str]) -> tuple[str, str] | None:
    """(NAME, format) of `profile export NAME [--format F | --format=F]`, or None if the words are not that."""
    if len(words) < 2 or words[0] != "export":
        return None
    rest, format_ = list(words[1:]), "env"
    for i, word in enumerate(rest):
        if word.startswith("--format="):
            format_ = word.split("=", 1)[1]
            del rest[i]
            break
        if word == "--format" and i + 1 < len(rest):
            format_ = rest[i + 1]
            del rest[i:i + 2]
            break
    if len(rest) != 1:
        return None
    return rest[0], one_of("profile export: --format", format_, EXPORT_FORMATS)


def exported(profile: Profile, format_: str) -> str:
    """A profile's tuned parameters as the pager's environment: shell exports, JSON, SLURM or a systemd drop-in."""
    environment = to_environment(profile.tuned_params)
    if format_ == "json":
        return json.dumps({"profile": profile.name, "workload": profile.workload, "params": profile.tuned_params,
                           "environment": environment}, indent=1) + "\n"
    if format_ == "slurm":
        pairs = ",".join(f"{name}={value}" for name, value in environment.items())
        return (f"# profile {profile.name}: in a batch script, or sbatch/srun --export=ALL,...\n"
                f"#SBATCH --export=ALL{',' + pairs if pairs else ''}\n")
    if format_ == "systemd":
        return (f"# profile {profile.name}: a drop-in, e.g. /etc/systemd/system/NAME.service.d/autopager.conf\n"
                "[Service]\n" + "".join(f'Environment="{name}={value}"\n' for name, value in environment.items()))
    searched = "" if environment else " searched no parameter: the pager's defaults"
    return f"# profile {profile.name}{searched}\n" + "".join(f"export {name}={value}\n"
                                                            for name, value in environment.items())
