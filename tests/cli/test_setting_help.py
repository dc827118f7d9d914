"""Help on one setting through the real command (`autopager tune --help runner.cap`), from the one source that
also writes the README's table of settings (autopager/cli/setting_help.py over configs/), and the typed settings'
defaults agreeing with that source."""
from __future__ import annotations

import dataclasses

import pytest
from omegaconf import OmegaConf

from autopager.cli.setting_help import help_on, markdown
from autopager.run.settings import ConfirmSettings, NoiseSettings, RunnerSettings
from autopager.run.workloads import available
from autopager.tuner.config import compose
from tests.cli.test_first_hour import autopager
from tests.helpers import REPO


def test_help_on_one_setting_gives_its_default_and_meaning():
    status, out, err = autopager("tune", "--help", "runner.cap")
    assert status == 0, err
    assert out.splitlines()[0] == "runner.cap = 2"
    assert "incumbent's time" in out


def test_help_on_a_setting_continues_its_comment_and_follows_the_chosen_group():
    status, out, _ = autopager("tune", "--help", "budget.plateau")
    assert status == 0 and "run their whole plan" in out  # the comment's third line
    status, out, _ = autopager("tune", "workload=numpy_heap", "--help", "workload.private_memory")
    assert status == 0 and out.splitlines()[0] == "workload.private_memory = 64MiB" and "numpy" in out
    status, out, _ = autopager("tune", "strategy=coordinate", "--help", "strategy.min_improvement")
    assert status == 0 and out.splitlines()[0] == "strategy.min_improvement = 0.01"


def leaf_keys(node: dict, prefix: str = "") -> list[str]:
    """The settings of a composed configuration, as on the command line (a searched parameter's range is one)."""
    keys = []
    for name, value in node.items():
        if isinstance(value, dict) and value and not set(value) <= {"min", "max", "step", "factor", "values"}:
            keys += leaf_keys(value, f"{prefix}{name}.")
        else:
            keys.append(prefix + name)
    return keys


@pytest.mark.parametrize("group", ["workload", "space", "strategy", "launcher"])
def test_help_describes_every_setting_of_every_option(group):
    """`autopager tune GROUP=OPTION --help KEY` has a description for every setting the composed configuration has
    (what the command calls, in process: one command a setting would take minutes)."""
    for option in available(group):
        overrides = [f"{group}={option}"] + (["workload.command=true"] if option == "command" else [])
        config, choices = compose(overrides + ([] if group == "workload" else ["workload=synthetic"]))
        for key in leaf_keys(OmegaConf.to_container(config, resolve=True)):
            described = help_on(key, choices)
            assert "(no description)" not in described, (option, key, described)


def test_help_on_a_workload_setting_says_what_that_workload_counts():
    status, out, err = autopager("tune", "workload=bfs", "--help", "workload.size")
    assert status == 0, err
    assert out.splitlines() == ["workload.size = 21", "    log2 of the vertices (scale 21: 2M vertices, 64M directed "
                                "edges, 284 MB of CSR files, nine times the buffer)"]
    status, out, err = autopager("tune", "workload=stream_nbd", "--help", "workload.size")  # from stream.yaml
    assert status == 0 and "MiB of the three arrays together" in out, out + err


def test_help_on_a_section_lists_its_settings():
    status, out, _ = autopager("run", "--help", "confirm")
    assert status == 0
    assert [line.split(" = ")[0] for line in out.splitlines() if not line.startswith(" ")] == [
        "confirm.rounds", "confirm.candidates"]


def test_help_on_no_such_setting_is_one_line_naming_the_near_ones():
    status, out, err = autopager("tune", "--help", "runner.cpa")
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and "no setting 'runner.cpa'" in err and "runner.cap" in err


def test_the_readme_table_of_settings_is_the_generated_one():
    readme = (REPO / "README.md").read_text()
    begin, end = "<!-- settings: python -m autopager.cli.setting_help --markdown -->\n", "<!-- settings end -->"
    assert begin in readme and end in readme
    assert readme.split(begin, 1)[1].split(end, 1)[0] == markdown()


@pytest.mark.parametrize("settings, section", [(RunnerSettings, "runner"), (NoiseSettings, "noise"),
                                               (ConfirmSettings, "confirm")])
def test_the_typed_settings_defaults_are_the_configurations(settings, section):
    config, _ = compose(["workload=synthetic"])
    for field in dataclasses.fields(settings):
        assert field.default == config[section][field.name], f"{section}.{field.name}"
