"""Trials on several nodes: a Ray cluster (a head and a worker node started here with `ray start`), SLURM through
submitit (its local executor runs the jobs; the job script for a real cluster is checked), and a tuner killed
with trials in flight."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from autopager.cli.main import main
from tests.helpers import autopager_process

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install '.[ray]')")
submitit = pytest.importorskip("submitit", reason="submitit is not installed (pip install '.[slurm]')")
from experiments.ray_cluster import RESOURCE, local_cluster  # noqa: E402 (after the skips: it imports ray)

# runs of 0.3-2 s: page sizes 16KiB..1MiB by 4 (fillers 1 and 4), the rest at the optimum
GRID = ["workload=synthetic", "workload.size=300", "runner.page_cache=evict", "strategy=grid",
        "space.page_size={min:16KiB,max:1MiB,factor:4}", "space.fillers={values:[1,4]}", "space.evictors=2",
        "space.evict_high_water=80", "space.evict_low_water=50", "space.evict_retain=0", "space.eviction=fifo", "space.read_ahead=4",
        "space.max_fault_events=2", "space.direct_io=0",
        "baseline.fillers=2", "baseline.evictors=2", "baseline.max_fault_events=2",
        "confirm.rounds=0", "noise.defaults_runs=1", "noise.max_runs=1"]  # one row a trial (their own tests below)
GRID_TRIALS = 4 * 2
PARAMS = ["page_size", "fillers", "evictors", "evict_high_water", "evict_low_water", "read_ahead"]


@pytest.fixture(scope="module")
def ray_cluster():
    """A head and a worker node on loopback, each declaring one unit of the node resource; its address."""
    with local_cluster([("head", 1), ("worker1", 1)]) as address:
        yield address


def table(study: str) -> pd.DataFrame:
    return pd.read_csv(f"outputs/synthetic/{study}/trials.csv")


def overlapping(rows: pd.DataFrame) -> list[tuple[int, int]]:
    spans = [(row.trial, pd.Timestamp(row.run_started), pd.Timestamp(row.run_ended)) for row in rows.itertuples()]
    return [(a, b) for i, (a, start_a, end_a) in enumerate(spans) for b, start_b, end_b in spans[i + 1:]
            if start_a < end_b and start_b < end_a]


def handed_out_together(rows: pd.DataFrame, first: pd.DataFrame) -> bool:
    """Whether a row of ``rows`` and one of ``first`` were in the tuner's hands at once: each asked for (``started``)
    before the other's row was recorded (``started`` + ``seconds``). The tuner's own times, not the nodes': it pins
    that the study handed both out, whatever the nodes' clocks and start-up delays."""
    def spans(frame: pd.DataFrame) -> list[tuple[int, pd.Timestamp, pd.Timestamp]]:
        return [(row.trial, pd.Timestamp(row.started), pd.Timestamp(row.started) + pd.Timedelta(seconds=row.seconds))
                for row in frame.itertuples()]
    return any(a != b and start_a < end_b and start_b < end_a
               for a, start_a, end_a in spans(rows) for b, start_b, end_b in spans(first))


def in_flight(study: str) -> list:
    return json.loads(Path(f"outputs/synthetic/{study}/in_flight.json").read_text())


def test_a_study_on_two_ray_nodes_runs_trials_at_once_one_a_node(tuner_home, ray_cluster, capsys):
    assert main(["tune", *GRID, "launcher=ray", f"launcher.address={ray_cluster}", "launcher.workers=2",
                 "study.name=ray"]) == 0
    rows = table("ray")
    assert len(rows) == 1 + GRID_TRIALS and (rows.status == "ok").all()
    assert list(rows.trial) == list(range(len(rows))) and not rows[rows.kind == "search"].duplicated(PARAMS).any()
    assert set(rows.node) == {"head", "worker1"}
    assert overlapping(rows), "no two trials ran at the same time"
    for node, on_node in rows.groupby("node"):
        assert not overlapping(on_node), f"two trials at once on {node}"
    assert in_flight("ray") == []
    assert "speedup over defaults" in capsys.readouterr().out


def test_more_workers_than_ray_nodes_is_refused(tuner_home, ray_cluster, capsys):
    assert main(["tune", *GRID, "launcher=ray", f"launcher.address={ray_cluster}", "launcher.workers=3"]) == 2
    assert f"declare 2 unit(s) of '{RESOURCE}'" in capsys.readouterr().err


def processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every process."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError):
            continue
        found[int(entry.name)] = (parent, command)
    return found


def kill_a_trials_worker(process: subprocess.Popen, table_path: Path, size: int, deadline: float) -> str:
    """Once the defaults are recorded, SIGKILL the process that runs a trial (the workload's parent); its command."""
    while not (table_path.is_file() and (pd.read_csv(table_path).kind == "default").any()):
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.05)
    while time.monotonic() < deadline:
        everything = processes()
        for parent, command in everything.values():
            if f"synthetic.py --size {size}" in command and parent in everything:
                os.kill(parent, signal.SIGKILL)
                return everything[parent][1]
        time.sleep(0.05)
    pytest.fail("no trial seen running")


@pytest.mark.parametrize("launcher, reason", [
    (["launcher=ray", "launcher.workers=2"], "the trial's Ray task did not finish"),
    (["launcher=slurm", "launcher.cluster=local", "launcher.workers=2"], "ended without a result"),
])
def test_a_worker_killed_during_a_trial_fails_that_trial_and_the_study_goes_on(tuner_home, ray_cluster, launcher,
                                                                                reason):
    size = 301 if "launcher=ray" in launcher else 302  # tells this study's workload processes apart
    args = [*[a.replace("workload.size=300", f"workload.size={size}") for a in GRID], *launcher,
            f"launcher.address={ray_cluster}" if "launcher=ray" in launcher else "study.name=slurm"]
    study = "grid-size301-buf64MiB" if "launcher=ray" in launcher else "slurm"
    process = autopager_process("tune", *args)
    killed = kill_a_trials_worker(process, Path(f"outputs/synthetic/{study}/trials.csv"), size,
                                  time.monotonic() + 300)
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0, err
    rows = table(study)
    assert len(rows) == 1 + GRID_TRIALS, out
    failed = rows[rows.status != "ok"]
    assert len(failed) == 1 and reason in failed.error.iloc[0], (killed, failed.error.tolist())
    assert in_flight(study) == []


def test_slurm_through_submitits_local_executor(tuner_home):
    assert main(["tune", *GRID, "launcher=slurm", "launcher.cluster=local", "launcher.workers=2",
                 "study.name=slurm"]) == 0
    rows = table("slurm")
    assert len(rows) == 1 + GRID_TRIALS and (rows.status == "ok").all()
    assert overlapping(rows)
    results = list(Path("outputs/synthetic/slurm/slurm").glob("*_result.pkl"))  # one job a trial
    assert len(results) == 1 + GRID_TRIALS


def test_the_slurm_job_script_asks_for_a_whole_node_with_the_settings_given(tuner_home, monkeypatch):
    """The script submitit's SlurmExecutor writes and hands to sbatch, with stand-ins for SLURM's commands."""
    from autopager.tuner.launchers.base import TrialTask
    from autopager.tuner.launchers import make_launcher
    from autopager.run.workloads import Workload

    commands = tuner_home / "slurm-commands"
    commands.mkdir()
    calls = tuner_home / "calls"
    for name, output in (("srun", ""), ("sbatch", "Submitted batch job 4242"), ("scancel", "")):
        (commands / name).write_text(f'#!/bin/sh\necho "{name} $*" >> {calls}\necho "{output}"\n')
        (commands / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{commands}{os.pathsep}{os.environ['PATH']}")
    settings = {"name": "slurm", "workers": 2, "cluster": "slurm", "partition": "short", "account": "proj7",
                "time_limit": 30, "parameters": {"slurm_qos": "high", "mem_gb": 64}}
    workload = Workload.from_config({"name": "synthetic", "command": "{python} {package}/synthetic.py"}, "data")
    launcher = make_launcher(settings, tuner_home / "synthetic" / "study")
    assert launcher.submit(TrialTask(workload, {"repeats": 1, "page_cache": "keep", "stderr_lines": 5},
                                     {"page_size": 65536}, 10.0)) == "4242"
    script = (tuner_home / "synthetic/study/slurm/4242_submission.sh").read_text()
    flags = {line for line in script.splitlines() if line.startswith("#SBATCH")}
    assert {"#SBATCH --partition=short", "#SBATCH --account=proj7", "#SBATCH --time=30", "#SBATCH --exclusive",
            "#SBATCH --nodes=1", "#SBATCH --ntasks-per-node=1", "#SBATCH --qos=high", "#SBATCH --mem=64GB",
            "#SBATCH --job-name=autopager-synthetic-study"} <= flags, flags
    command = script.strip().splitlines()[-1]
    assert command.startswith("srun ") and f"{sys.executable} -u -m submitit.core._submit" in command
    assert (tuner_home / "synthetic/study/slurm/4242_submitted.pkl").is_file()  # the trial, pickled for the node
    launcher.close()  # the job still queued is cancelled
    assert "scancel 4242" in calls.read_text()


def test_a_tuner_killed_with_trials_in_flight_runs_them_again_once(tuner_home, ray_cluster):
    args = [*GRID, "launcher=ray", f"launcher.address={ray_cluster}", "launcher.workers=2", "study.name=killed"]
    process = autopager_process("tune", *args)
    record = Path("outputs/synthetic/killed/in_flight.json")
    deadline = time.monotonic() + 300
    while not (record.is_file() and len(json.loads(record.read_text())) == 2 and Path(
            "outputs/synthetic/killed/trials.csv").is_file() and len(table("killed")) >= 2):
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.05)
    process.kill()
    process.communicate()
    left = json.loads(record.read_text())
    before = table("killed")

    assert main(["tune", *args]) == 0
    rows = table("killed")
    assert len(rows) == 1 + GRID_TRIALS and (rows.status == "ok").all()
    assert not rows[rows.kind == "search"].duplicated(PARAMS).any()
    pd.testing.assert_frame_equal(rows.iloc[:len(before)], before)
    again = rows.iloc[len(before):]
    for entry in left:  # recorded after the restart, with the time they were first asked for
        if entry["started"] not in set(before.started):
            assert (again.started == entry["started"]).sum() == 1
    assert in_flight("killed") == []


def test_a_trial_recorded_just_before_the_tuner_died_is_not_run_again(tuner_home):
    args = ["tune", *GRID, "workload.size=5", "budget.trials=3", "study.name=window"]
    assert main(args) == 0
    rows = table("window")
    measured = {tuple(row[PARAMS]) for _, row in rows.iterrows()}
    all_points = [{"page_size": p, "fillers": f, "evictors": 2, "evict_high_water": 80, "evict_low_water": 50,
                   "read_ahead": 4} for p in (16 << 10, 64 << 10, 256 << 10, 1 << 20) for f in (1, 4)]
    unmeasured = next(p for p in all_points if tuple(p.values()) not in measured)
    recorded = rows.iloc[2]
    common = {"buffer_size": int(recorded.buffer_size), "evict_retain": 0, "eviction": "fifo", "max_fault_events": 2,
              "direct_io": 0}
    left = [  # the first is in the table already (killed between the two writes); the second never ended
        {"params": {**{n: int(recorded[n]) for n in PARAMS}, **common}, "kind": "search", "timeout": 10.0,
         "started": recorded.started, "launcher": "local", "handle": "local-3", "id": "a"},
        {"params": {**unmeasured, **common}, "kind": "search", "timeout": 10.0, "started": "2026-01-01T00:00:00.000+00:00",
         "launcher": "local", "handle": "local-4", "id": "b"}]
    Path("outputs/synthetic/window/in_flight.json").write_text(json.dumps(left))

    assert main([*args[:-2], "budget.trials=8", "study.name=window"]) == 0
    rows = table("window")
    assert len(rows) == 1 + GRID_TRIALS and not rows[rows.kind == "search"].duplicated(PARAMS).any()
    assert (rows.started == left[1]["started"]).sum() == 1 and (rows.started == recorded.started).sum() == 1
    assert in_flight("window") == []


def test_measuring_again_capping_and_confirmation_go_through_the_nodes(tuner_home, ray_cluster, capsys):
    """With 2 workers: the defaults measured again among the trials (in flight beside search trials), trials within the
    noise measured again (a run added to their row, on whichever node is free), the confirmation rounds on the nodes,
    2 runs at once, each run's node recorded."""
    args = [arg for arg in GRID if not arg.startswith(("confirm.", "noise."))]
    assert main(["tune", *args, "launcher=ray", f"launcher.address={ray_cluster}", "launcher.workers=2",
                 "noise.defaults_runs=2", "noise.defaults_every=2", "noise.max_runs=2", "noise.assumed=0.5",
                 "confirm.rounds=2", "confirm.candidates=2", "study.name=noisy"]) == 0
    rows = table("noisy")
    search = rows[rows.kind == "search"]
    assert len(search) == GRID_TRIALS and not search.duplicated(PARAMS).any()
    assert (rows.kind == "default").sum() == 2 and (rows.kind == "confirm").sum() == 2 * 3
    assert (search.repeats.astype(str).str.count(";") == 1).any(), "no trial was measured again"
    assert rows.node.notna().all() and set(rows.node) <= {"head", "worker1"}
    confirm, defaults = rows[rows.kind == "confirm"], rows[rows.kind == "default"]
    assert handed_out_together(confirm, confirm), "the confirmation ran one run at a time"
    assert handed_out_together(defaults.iloc[1:], search), "the defaults' second run waited for the search trials"
    assert (confirm.trial > search.trial.max()).all()
    out = capsys.readouterr().out
    assert "confirmed best" in out and "confirmed on nodes" in out
    assert in_flight("noisy") == []


def test_search_trials_start_on_the_free_workers_while_the_defaults_first_run_is_in_flight(tuner_home, ray_cluster):
    # the defaults at 16MiB pages take ~2.5 s, several search trials' time
    assert main(["tune", *GRID, "baseline.page_size=16MiB", "launcher=ray", f"launcher.address={ray_cluster}",
                 "launcher.workers=2", "study.name=alongside"]) == 0
    rows = table("alongside")
    assert len(rows) == 1 + GRID_TRIALS and (rows.status == "ok").all()
    assert list(rows.trial) == list(range(len(rows))) and not rows[rows.kind == "search"].duplicated(PARAMS).any()
    defaults = rows[rows.kind == "default"].iloc[0]
    search = rows[rows.kind == "search"]
    alongside = search[pd.to_datetime(search.run_started) < pd.Timestamp(defaults.run_ended)]
    assert len(alongside), "no search trial ran while the defaults' first run was in flight"
    assert in_flight("alongside") == []


# every parameter at the synthetic optimum, the defaults too; the one search point (1GiB pages) costs 22.6x them
CHEAP_DEFAULTS_SLOW_POINT = [
    "workload=synthetic", "workload.size=1000", "workload.buffer_size=16GiB", "runner.page_cache=evict",
    "baseline.page_size=256KiB", "baseline.fillers=4", "baseline.evictors=2", "baseline.evict_high_water=80",
    "baseline.evict_low_water=50", "baseline.read_ahead=4", "baseline.max_fault_events=2", "strategy=pagesize",
    "space.page_size={values:[256KiB,1GiB]}", "runner.cap=2", "runner.cap_floor=0", "confirm.rounds=0",
    "noise.defaults_runs=1", "noise.max_runs=1"]


def test_a_trial_started_alongside_the_defaults_is_capped_by_the_tuner_once_their_time_is_known(tuner_home,
                                                                                                 ray_cluster, capsys):
    assert main(["tune", *CHEAP_DEFAULTS_SLOW_POINT, "launcher=ray", f"launcher.address={ray_cluster}",
                 "launcher.workers=2", "study.name=capped"]) == 0
    rows = table("capped")
    assert list(rows.kind) == ["default", "search"]  # the defaults' point is not proposed again
    defaults, slow = rows[rows.kind == "default"].iloc[0], rows[rows.kind == "search"].iloc[0]
    assert pd.Timestamp(slow.started) < pd.Timestamp(defaults.started) + pd.Timedelta(seconds=defaults.seconds)
    assert defaults.status == "ok" and slow.status == "capped" and pd.isna(slow.value)
    assert slow.page_size == 1 << 30 and "capped after" in slow.error
    assert slow.timeout == pytest.approx(2 * defaults.wall_seconds)  # the cap: 2x the incumbent, the defaults
    assert slow.wall_seconds < 22.6 * defaults.wall_seconds / 2  # stopped, not run to its end (22.6x)
    assert "1 capped" in capsys.readouterr().out
    assert in_flight("capped") == []


def test_trials_started_alongside_defaults_that_show_no_pager_are_cancelled(tuner_home, ray_cluster, capsys):
    program = tuner_home / "no_pager.py"  # the defaults (no UMAP_PAGESIZE) end at once; a search trial sleeps
    program.write_text("import os, time\ntime.sleep(60 if 'UMAP_PAGESIZE' in os.environ else 0.01)\n")
    command = f"workload.command='{sys.executable} {program}'"
    assert main(["tune", "workload=command", command, "runner.page_cache=keep", "strategy=random",
                 "strategy.trials=5", "launcher=ray", f"launcher.address={ray_cluster}", "launcher.workers=2",
                 "study.name=nopager"]) == 1
    assert "printed no pager statistics" in capsys.readouterr().err
    rows = pd.read_csv("outputs/command/nopager/trials.csv")
    assert list(rows.kind) == ["default"]  # the cancelled trial is no result
    assert json.loads(Path("outputs/command/nopager/in_flight.json").read_text()) == []
    deadline = time.monotonic() + 120
    while any(str(program) in command for _, command in processes().values()):
        assert time.monotonic() < deadline, "the cancelled trial's program still runs"
        time.sleep(0.5)
