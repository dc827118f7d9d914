"""Help on one setting (`autopager tune --help runner.cap`) and the README's reference of the settings, from one
source: the configuration files, each key's default as written and the comment beside it (continued on the
comment lines below, at the same column). A strategy's options are documented by the strategy itself (OPTIONS).

    python -m autopager.cli.setting_help --markdown     # the README's "Settings" table
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from autopager.errors import ConfigError
from autopager.run.workloads import config_dir

GROUPS = {"workload": "command", "space": "default", "strategy": "ax", "launcher": "local"}  # group: its default
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


def settings(choices: dict[str, str] | None = None) -> list[Setting]:
    """The main configuration's settings, then each group's (the option ``choices`` names, else its default)."""
    chosen = {**GROUPS, **(choices or {})}
    every = read_settings(config_dir() / "config.yaml")
    for group, choice in chosen.items():
        if group == "strategy":
            every += _strategy_settings(choice)
            continue
        path = config_dir() / group / f"{choice}.yaml"
        if path.is_file():
            every += read_settings(path, f"{group}.")
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
