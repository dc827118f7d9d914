"""The command line: help, and bad input refused with status 2 and a clear message before any trial."""
import os

import pytest

from autopager.cli.main import main
from tests.helpers import autopager_process


def test_help_lists_workloads_strategies_and_the_space(tuner_home):
    process = autopager_process("--help")
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    for text in ("autopager tune workload=NAME", "synthetic", "command", "coordinate", "pagesize",
                 "page_size: {min: 4KiB, max: 16MiB, factor: 2}", "budget.trials"):
        assert text in out


@pytest.mark.parametrize("args, message", [
    (["tune", "workload=synthetic", "space.foo=3"], "unknown parameter 'foo' in space.foo"),
    (["tune", "workload=synthetic", "space.evict_low_water=80", "space.evict_high_water=70"],
     "evict_low_water must be below evict_high_water"),
    (["tune", "workload=synthetic", "space.page_size=12KiB"],
     "space.page_size: 12KiB is not a power-of-two multiple of the system page"),
    (["tune", "workload=synthetic", "space.page_size.max=24KiB"], "24KiB is not a power-of-two multiple"),
    (["tune", "workload=synthetic", "space.fillers={min:1,max:8,factor:2,by:3}"], "unknown key(s) ['by']"),
    (["tune", "workload=nope"], "unknown workload 'nope'; the workloads are: "),
    (["tune"], "choose a workload: workload=NAME, one of: "),
    (["tune", "workload=synthetic", "strategy=nope"], "unknown strategy 'nope'; the strategies are: "),
    (["tune", "workload=command"], "workload.command is required"),
    (["tune", "workload=command", "workload.command=/no/such/program"], "cannot run '/no/such/program'"),
    (["tune", "workload=synthetic", "budget.trial=3"], "unknown setting 'budget.trial'"),
    (["tune", "workload=synthetic", "budget.trials=x=y"], "mismatched input"),
    (["tune", "workload=synthetic", "runner.page_cache=sometimes"], "runner.page_cache must be one of"),
    (["tune", "workload=synthetic", "strategy=coordinate", "strategy.order=[page_size,pagesize]"],
     "strategy.order: unknown paging parameter(s) ['pagesize']"),
    (["tune", "workload=synthetic", "strategy.trials=0"], "strategy.trials must be a whole number >= 1 or null, not 0"),
    (["tune", "workload=synthetic", "budget.trials=-1"], "budget.trials must be a whole number >= 0"),
    (["tune", "workload=synthetic", "budget.minutes=soon"], "budget.minutes must be a number > 0"),
    (["tune", "workload=synthetic", "confirm.rounds=-1"], "confirm.rounds must be a whole number >= 0, not -1"),
    (["tune", "workload=synthetic", "study.resume=maybe"], "study.resume must be true or false, not 'maybe'"),
    (["tune", "workload=synthetic", "study.save_profile=x"], "study.save_profile must be true or false, not 'x'"),
    (["tune", "workload=synthetic", "baseline.mmap=x"], "baseline.mmap must be true or false, not 'x'"),
    (["tune", "workload=synthetic", "runner.memory_headroom=x"], "runner.memory_headroom: not a size: 'x'"),
    (["tune", "workload=synthetic", "workload.threads=x"], "workload.threads must be a whole number >= 1"),
    (["tune", "workload=synthetic", "max_threads=x"], "max_threads must be a whole number >= 1, not 'x'"),
    (["tune", "workload=synthetic", "data_dir="], "data_dir must be a directory, not empty"),
    (["tune", "workload=synthetic", "study.root="], "study.root must be a directory, not empty"),
    (["tune", "workload=synthetic", "profile_dir="], "profile_dir must be a directory, not empty"),
    (["run", "workload=synthetic", "max_threads=0"], "max_threads must be a whole number >= 1, not 0"),
    (["run", "workload=synthetic", "profile=nope"], "no profile named 'nope'"),
    (["run", "workload=synthetic", "run.rounds=-2"], "run.rounds must be a whole number"),
    (["profile", "show", "nope"], "no profile named 'nope'"),
    (["profile", "delete", "x"], "no profile named 'x'"),
    (["profile", "remove", "x"], "expected `profile list`"),
    (["tunes", "workload=synthetic"], "unknown command 'tunes'"),
])
def test_bad_input_exits_2_with_a_clear_message_before_any_trial(tuner_home, capsys, args, message):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("autopager: error: ") and message in err, err
    assert message in err.splitlines()[0] and (err.count("\n") == 1 or args[0] not in ("tune", "run")), err
    # a bad setting: one line (an unknown command is followed by the usage)
    assert not os.path.exists("outputs")
