"""A study's default name tells apart what makes studies distinct (the buffer size, the repeats), so changing
one of them starts another study instead of refusing to resume; the README's examples name their programs."""
import re

from tests.helpers import REPO, autopager_process

QUICK = ["workload=synthetic", "workload.size=1", "runner.page_cache=keep", "strategy=default"]


def autopager(*args: str) -> tuple[int, str, str]:
    process = autopager_process(*args)
    out, err = process.communicate(timeout=300)
    return process.returncode, out, err


def test_buffer_size_and_repeats_are_in_the_default_name_and_the_identity(tuner_home):
    for extra in (["workload.buffer_size=32MiB"], ["workload.buffer_size=16MiB"], ["runner.repeats=2"]):
        code, out, err = autopager("tune", *QUICK, *extra)
        assert code == 0, err
    assert sorted(p.name for p in (tuner_home / "outputs" / "synthetic").iterdir()) == [
        "default-size1-buf16MiB", "default-size1-buf32MiB", "default-size1-buf64MiB-x2"]
    assert autopager("tune", *QUICK, "study.name=fixed")[0] == 0
    code, out, err = autopager("tune", *QUICK, "study.name=fixed", "runner.repeats=3")
    assert code == 2 and "runner.repeats" in err, err


def test_the_readme_names_every_command_workload():
    examples = re.findall(r"autopager tune[^\n]*workload=command[^\n]*", (REPO / "README.md").read_text())
    assert examples and all("workload.name=" in example for example in examples), examples
