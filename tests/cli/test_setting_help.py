"""Help on one setting through the real command (`autopager tune --help runner.cap`), from the one source that
also writes the README's table of settings (autopager/cli/setting_help.py over configs/), and the typed settings'
defaults agreeing with that source."""
from __future__ import annotations

import dataclasses

import pytest

from autopager.cli.setting_help import markdown
from autopager.run.settings import ConfirmSettings, NoiseSettings, RunnerSettings
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
