"""Help on one setting (`autopager tune --help runner.cap`) and the README's reference of the settings, from one
source: the configuration files, each key's default as written and the comment beside it (continued on the
comment lines below, at the same column). A strategy's options are documented by the strategy itself (OPTIONS).

    python -m autopager.cli.setting_help --markdown     # the README's "Settings" table
"""
from __future__ import annotations

import itertools
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from autopager.errors import ConfigError
from autopager.run.workloads import config_dir

GROUPS = {"workload": "command", "space": "default", "strategy": "ax", "launcher": "local"}  # group: its default
CHOSEN = {  # the name of a group's option: what the command line chose (workload.name may be set)
    "workload": "the name its studies and profiles are kept by; workload=command: give one (workload.name=myapp)",
    "strategy": "the strategy chosen (strategy=NAME; `autopager --help` lists them)",
    "launcher": "the launcher chosen (launcher=NAME: local, ray, slurm)",
}
KEY = re.compile(r"([A-Za-z_]\w*):(?:\s|$)(.*)")
SKIPPED = ("defaults", "hydra")  # Hydra's own: `autopager tune --cfg hydra`


@dataclass(frozen=True)
class Setting:
    key: str        # dotted, as on the command line: runner.cap
    default: str    # as the file writes it
    help: str


def _value_and_comment(line: str, start: int) -> tuple[str, str, int]:
    """The value written from ``start`` on, its comment, and the comment's column (-1: none); a # in quotes is
    part of the value."""
    quote = ""
    for at in range(start, len(line)):
        char = line[at]
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (at == start or line[at - 1].isspace()):
            return line[start:at].strip(), line[at + 1:].strip(), at
    return line[start:].strip(), "", -1


def read_settings(path: Path, prefix: str = "") -> list[Setting]:
    """Every key of the YAML file that has a value (not the sections that group them), in the file's order."""
    found: list[Setting] = []
    sections: list[tuple[int, str]] = []
    column = -1  # where the last setting's comment is: a comment line there continues it
    for line in path.read_text().splitlines():
        indent = len(line) - len(line.lstrip())
        text = line.strip()
        if text.startswith("#") and found and indent == column:
            last = found[-1]
            found[-1] = Setting(last.key, last.default, f"{last.help} {text[1:].strip()}".strip())
            continue
        column = -1
        match = KEY.fullmatch(text)
        if not match:
            continue
        while sections and sections[-1][0] >= indent:
            sections.pop()
        value, comment, at = _value_and_comment(line, len(line) - len(match.group(2)))
        if not value:
            sections.append((indent, match.group(1)))
            continue
        names = [name for _, name in sections] + [match.group(1)]
        if names[0] in SKIPPED or names == ["name"]:
            continue
        found.append(Setting(prefix + ".".join(names), value, comment))
        column = at
    return found


def header_sentence(path: Path, key: str) -> str:
    """What the file's opening comment says of ``key`` ("size: MiB of the array (eight times the buffer).")."""
    header = " ".join(line[1:].strip() for line in itertools.takewhile(
        lambda line: line.startswith("#"), path.read_text().splitlines()))
    found = re.search(rf"(?:^|\s){re.escape(key)}: (.+?)\.(?:\s|$)", header)
    return found.group(1) if found else ""


def group_settings(group: str, choice: str) -> list[Setting]:
    """A group option's settings; one its file leaves without a comment is described by the file's opening comment
    (a workload's size), else by the comment of the same key in another option of the group (the group's default
    first: configs/workload/command.yaml documents every workload key)."""
    directory = config_dir() / group
    path = directory / f"{choice}.yaml"
    if not path.is_file():
        return []
    others = [directory / f"{GROUPS[group]}.yaml"] + sorted(directory.glob("*.yaml"))
    described: dict[str, str] = {}
    for other in others:
        for setting in read_settings(other, f"{group}."):
            if setting.help:
                described.setdefault(setting.key, setting.help)
    found = {f"{group}.name": Setting(f"{group}.name", choice, CHOSEN[group])} if group in CHOSEN else {}
    for option in [*bases(path), path]:  # an option may extend others (Hydra's defaults list)
        for setting in read_settings(option, f"{group}."):
            help_ = (setting.help or header_sentence(option, setting.key.split(".", 1)[1])
                     or (found[setting.key].help if setting.key in found else described.get(setting.key, "")))
            found[setting.key] = Setting(setting.key, setting.default, help_)
    return list(found.values())


def bases(path: Path) -> list[Path]:
    """The options of the same group that ``path`` extends (its ``defaults:`` list), theirs first."""
    listed = re.search(r"^defaults:\n((?:\s+- .*\n)+)", path.read_text(), re.M)
    names = [line.strip()[2:].strip() for line in listed.group(1).splitlines()] if listed else []
    found: list[Path] = []
    for name in names:
        if name != "_self_" and (path.parent / f"{name}.yaml").is_file():
            found += [*bases(path.parent / f"{name}.yaml"), path.parent / f"{name}.yaml"]
    return found


def settings(choices: dict[str, str] | None = None) -> list[Setting]:
    """The main configuration's settings, then each group's (the option ``choices`` names, else its default)."""
    chosen = {**GROUPS, **(choices or {})}
    every = read_settings(config_dir() / "config.yaml")
    for group, choice in chosen.items():
        if group == "strategy":
            every += [Setting("strategy.name", choice, CHOSEN[group])]
            every += _strategy_settings(choice)
        else:
            every += group_settings(group, choice)
    return every


def _strategy_settings(name: str) -> list[Setting]:
    from autopager.tuner.strategies import strategy_class
    return [Setting(f"strategy.{option.name}", str(option.default), option.help)
            for option in strategy_class(name).OPTIONS]


def help_on(key: str, choices: dict[str, str] | None = None) -> str:
    """The setting's default and meaning; a section's (runner) every setting; ConfigError for no such setting."""
    every = settings(choices)
    matching = [s for s in every if s.key == key] or [s for s in every if s.key.startswith(key + ".")]
    if not matching:
        near = sorted({s.key for s in every if s.key.split(".")[0] == key.split(".")[0]})
        hint = f"; the settings there: {', '.join(near)}" if near else "; `autopager tune --cfg job` shows them all"
        raise ConfigError(f"no setting {key!r}{hint}")
    return "\n".join(f"{s.key} = {s.default}\n    {s.help or '(no description)'}" for s in matching)


def show(key: str, overrides: list[str]) -> int:
    """Print the help on ``key``, with the group options the command line chose (workload=bfs)."""
    choices = dict(arg.split("=", 1) for arg in overrides if arg.split("=", 1)[0] in GROUPS and "=" in arg)
    print(help_on(key, choices))
    return 0


def markdown() -> str:
    """The README's table of the main configuration's settings."""
    rows = ["| setting | default | what it does |", "|---|---|---|"]
    for s in read_settings(config_dir() / "config.yaml"):
        rows.append(f"| `{s.key}` | `{s.default}` | {s.help.replace('|', '&#124;')} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    if sys.argv[1:] != ["--markdown"]:
        sys.exit("usage: python -m autopager.cli.setting_help --markdown")
    sys.stdout.write(markdown())
