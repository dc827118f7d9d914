"""`autopager tune` and `run` as Hydra applications: Hydra's flags, multirun with Hydra's basic launcher, `hydra.*`
settings honoured or refused, and Hydra's sweep syntax for the space. Each runs the real command."""
import os
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.helpers import autopager_process

QUICK = ["workload=synthetic", "workload.size=1", "runner.page_cache=keep"]
INTERNAL = ("Traceback", "Exception", "HYDRA_FULL_ERROR")


def autopager(*args: str, timeout: float = 300) -> tuple[int, str, str]:
    process = autopager_process(*args)
    out, err = process.communicate(timeout=timeout)
    for text in INTERNAL:
        assert text not in out + err, out + err
    return process.returncode, out, err


def test_cfg_shows_the_composed_configuration_without_running(tuner_home):
    code, out, err = autopager("tune", *QUICK, "strategy=grid", "--cfg", "job")
    assert code == 0, err
    job = yaml.safe_load(out)
    assert job["workload"]["name"] == "synthetic" and job["workload"]["size"] == 1
    assert job["strategy"] == {"name": "grid"}
    code, out, err = autopager("tune", *QUICK, "--cfg", "hydra")
    assert code == 0, err
    assert "launcher:" in out and "sweeper:" in out and yaml.safe_load(out)["hydra"]["job"]["name"] == "tune"
    code, out, err = autopager("tune", *QUICK, "--cfg", "job", "--resolve")
    assert code == 0 and yaml.safe_load(out)["baseline"]["buffer_size"] == "64MiB", err
    assert not os.path.exists("outputs")


def test_the_baseline_is_the_pagers_defaults(tuner_home):
    from autopager import _native
    code, out, err = autopager("tune", *QUICK, "--cfg", "job", "--resolve")
    assert code == 0, err
    baseline, native = yaml.safe_load(out)["baseline"], _native.Config.defaults()
    assert baseline["page_size"] is None  # the pager's choice for the buffer
    for name in ("fillers", "evictors", "evict_high_water", "evict_low_water", "evict_retain", "eviction",
                 "read_ahead", "max_fault_events", "direct_io"):
        assert baseline[name] == getattr(native, name), name


def test_info_and_help(tuner_home):
    code, out, err = autopager("tune", *QUICK, "--info", "defaults")
    assert code == 0, err
    assert "workload/synthetic" in out and "strategy/ax" in out
    code, out, err = autopager("tune", "--help")
    assert code == 0, err
    for text in ("usage: autopager tune", "== Configuration groups", "workload: bfs, command",
                 "--multirun,-m", "hydra-submitit-launcher", "runner:\n  repeats: 1"):
        assert text in out, out
    code, out, err = autopager("run", "workload=sort", "--help")
    assert code == 0 and "usage: autopager run" in out and "run.rounds=N" in out and "name: sort" in out, err
    assert not os.path.exists("outputs")


def test_multirun_runs_a_study_for_each_combination_with_the_basic_launcher(tuner_home):
    code, out, err = autopager("tune", "-m", *QUICK[:1], "workload.size=1,2", "runner.page_cache=keep",
                               "strategy=random", "strategy.trials=1", "hydra/launcher=basic",
                               "confirm.rounds=0", "noise.defaults_runs=1")
    assert code == 0, err
    assert "Launching 2 jobs locally" in out
    for size in (1, 2):
        table = pd.read_csv(f"outputs/synthetic/random-size{size}-buf64MiB/trials.csv")
        assert list(table.kind) == ["default", "search"] and (table.status == "ok").all()
    assert len(list(Path("outputs/multirun").glob("*/multirun.yaml"))) == 1  # hydra.sweep.dir


def test_multirun_checks_every_job_before_the_first_runs(tuner_home):
    code, out, err = autopager("tune", "-m", "workload=synthetic,sort", "workload.size=1",
                               "runner.page_cache=keep", "space.fillers=1,0")
    assert code == 2 and "space.fillers=0: out of range" in err, err
    assert not os.path.exists("outputs/synthetic")


def test_hydra_settings_are_honoured_or_refused(tuner_home):
    code, out, err = autopager("tune", *QUICK, "strategy=default", "hydra.run.dir=hydra_run",
                               "hydra.output_subdir=.hydra")
    assert code == 0, err
    saved = yaml.safe_load(Path("hydra_run/.hydra/overrides.yaml").read_text())
    assert "strategy=default" in saved
    for args, message in [
        (["hydra/sweeper=nope"], "unknown hydra/sweeper 'nope'; the options are: basic"),
        (["hydra/launcher=submitit_slurm"], "pip install hydra-submitit-launcher"),
        (["hydra.no_such_setting=1"], "unknown Hydra setting 'hydra.no_such_setting'"),
        (["--no-such-flag"], "unrecognized arguments: --no-such-flag"),
    ]:
        code, out, err = autopager("tune", *QUICK, *args)
        assert code == 2 and err.startswith("autopager: error: ") and message in err, err
    assert not os.path.exists("outputs/synthetic/ax-size1-buf64MiB")


@pytest.mark.parametrize("values", ["[0,4]", "choice(0,4)", "0,4", "range(0,8,4)"])
def test_sweep_syntax_gives_the_values_a_space_parameter_is_searched_over(tuner_home, values):
    code, out, err = autopager("tune", *QUICK, f"space.read_ahead={values}", "--cfg", "job")
    assert code == 0, err
    assert yaml.safe_load(out)["space"]["read_ahead"] == {"values": [0, 4]}


def test_a_study_searches_the_listed_values(tuner_home):
    code, out, err = autopager("tune", *QUICK, "strategy=grid", "space=small", "space.page_size=64KiB",
                               "space.fillers=1", "space.evictors=1", "space.evict_high_water=90",
                               "space.evict_low_water=70", "space.read_ahead=choice(0,4)")
    assert code == 0, err
    table = pd.read_csv("outputs/synthetic/grid-small-size1-buf64MiB/trials.csv")
    assert sorted(table[table.kind == "search"].read_ahead) == [0, 4]


@pytest.mark.parametrize("args, message", [
    (["space.read_ahead=interval(0,4)"], "give space.read_ahead={min:A,max:B,step:S}"),
    (["workload.size=1,2"], "add -m (--multirun)"),
    (["budget.trials=x=y"], "cannot read the override 'budget.trials=x=y'"),
    (["space.page_size={min:4KiB,max:oops"], "cannot read the override"),
    (["--cfg", "job", "-m"], "give only one of --run, --multirun, --cfg"),
    (["--resolve"], "--resolve goes with --cfg or --help"),
])
def test_sweeps_and_syntax_errors_are_refused_with_the_spelling_that_works(tuner_home, args, message):
    code, out, err = autopager("tune", *QUICK, *args)
    assert code == 2 and err.startswith("autopager: error: ") and message in err, err


def test_a_config_dir_of_ones_own_adds_workloads(tuner_home):
    (tuner_home / "mine" / "workload").mkdir(parents=True)
    (tuner_home / "mine" / "workload" / "myapp.yaml").write_text(
        "name: myapp\ncommand: 'true'\nmetric: seconds\ngoal: minimize\nbuffer_size: 8MiB\ntime_process: true\n")
    code, out, err = autopager("tune", "workload=myapp", "--config-dir", "mine", "--cfg", "job")
    assert code == 0 and yaml.safe_load(out)["workload"]["name"] == "myapp", err
