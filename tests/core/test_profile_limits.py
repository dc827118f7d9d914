"""A profile holding a value the pager refuses is refused by every command that reads it, in one line naming the
file and the field (no ZeroDivisionError in `run`, no OverflowError for a 400-digit size, `true` is no integer)."""
import sys

import pytest

from tests.helpers import TEST_WORKLOADS, autopager_process

BAD = [
    ("fillers: 5000", "params.fillers=5000: out of range; allowed: an integer from 1 to 1024"),
    ("page_size: 1TiB", "params.page_size=1TiB: out of range"),
    ("read_ahead: true", "params.read_ahead=True: not an integer"),
    (f"page_size: {'9' * 400}", "params.page_size=99999999999999999999...(400 characters): out of range"),
]


def autopager(*args: str) -> tuple[int, str, str]:
    process = autopager_process(*args)
    out, err = process.communicate(timeout=120)
    assert "Traceback" not in out + err, out + err
    return process.returncode, out, err


@pytest.mark.parametrize("field, message", BAD)
def test_every_command_refuses_the_profile(tuner_home, field, message):
    path = tuner_home / "profiles" / "envapp" / "default@1cpu-1GiB.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(f"workload: envapp\nparams: {{{field}}}\nsearched: [page_size, fillers, read_ahead]\n")
    name = "envapp/default@1cpu-1GiB"
    code, out, err = autopager("profile", "list")
    assert code == 0 and "BROKEN" in out and message in out, out + err
    marker = tuner_home / "ran"
    log = tuner_home / "runs.log"
    run = ["run", "workload=command", f"workload.command='{sys.executable} {TEST_WORKLOADS / 'environment.py'} {log}'",
           "workload.name=envapp", "workload.buffer_size=8MiB", "runner.page_cache=keep", f"profile={name}"]
    for command in (["profile", "show", name], ["profile", "export", name],
                    ["exec", f"profile={name}", "--", "touch", str(marker)], run):
        code, out, err = autopager(*command)
        assert code == 2 and str(path) in err and message in err, (command, err)
        assert len(err.splitlines()) == 1, (command, err)
    assert not marker.exists() and not log.exists()
