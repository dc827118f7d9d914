"""Runs under a memory limit (a real memory cgroup), and a study's kernel-mmap baseline (baseline.mmap=true):
measured once after the defaults in a cgroup of the pager's memory, recorded as its own row kind, never told
to the strategy, compared in the summary, and not measured again when the study resumes."""
from __future__ import annotations

import os
import sys

import pandas as pd
import pytest

from autopager.cli.main import main
from autopager.tuner.config import compose
from autopager.run.memory_limit import MemoryLimitError, check_memory_limits, run_limit
from autopager.run.runner import Runner
from autopager.run.synthetic import MMAP_SLOWDOWN
from autopager.run.workloads import Workload


def cgroups_unavailable() -> str:
    if os.geteuid() != 0:
        return "memory cgroups need root"
    try:
        check_memory_limits(64 << 20)
    except MemoryLimitError as error:
        return str(error)
    return ""


needs_cgroups = pytest.mark.skipif(bool(cgroups_unavailable()), reason=cgroups_unavailable() or "-")
ALLOCATE = "memory = bytearray(192 << 20)\nmemory[::4096] = bytes(len(memory[::4096]))\n"  # 192 MiB, touched
RANDOM = ["workload=synthetic", "workload.size=1", "strategy=random", "strategy.trials=3", "runner.page_cache=evict",
          "study.save_profile=false", "confirm.rounds=0", "noise.defaults_runs=1"]


@needs_cgroups
def test_a_run_beyond_its_memory_limit_is_killed_and_reported(tuner_home):
    program = tuner_home / "allocate.py"
    program.write_text(ALLOCATE)
    config, _ = compose(["workload=command", f'workload.command="{sys.executable} -S {program}"',
                         "workload.buffer_size=32MiB", "runner.memory_limit=auto"])
    workload = Workload.from_config(config.workload, config.data_dir)
    runner = Runner.from_config(workload, config.runner)
    assert runner.memory_limit == (32 + 1 + 16) << 20  # the buffer, its pages' bookkeeping and the headroom
    limited = runner.measure({}, timeout=60)
    assert not limited.ok and "SIGKILL" in limited.error
    assert Runner(workload).measure({}, timeout=60).ok  # the same program without the limit


def test_a_runs_limit_adds_the_page_tables_mapping_its_data(tuner_home):
    data = tuner_home / "data.bin"
    with open(data, "wb") as sparse:
        sparse.truncate(512 << 20)
    config, _ = compose(["workload=command", "workload.command=cat", f"workload.data_files={data}",
                         "workload.buffer_size=32MiB"])
    workload = Workload.from_config(config.workload, config.data_dir)
    assert run_limit(49 << 20, workload) == (49 << 20) + (1 << 20)  # 8 bytes a 4 KiB page of data
    assert run_limit(None, workload) is None


@needs_cgroups
def test_the_kernel_mmap_is_measured_once_after_the_defaults(tuner_home, capsys):
    assert main(["tune", *RANDOM, "baseline.mmap=true", "study.name=m"]) == 0
    shown = capsys.readouterr().out
    table = pd.read_csv(tuner_home / "outputs" / "synthetic" / "m" / "trials.csv")
    assert list(table.kind[:2]) == ["default", "mmap"]
    kernel = table[table.kind == "mmap"].iloc[0]
    assert kernel.status == "ok" and kernel.value == pytest.approx(MMAP_SLOWDOWN * 1e-3)
    assert table.loc[table.kind == "mmap", ["page_size", "fillers", "buffer_size"]].isna().all(axis=None)
    assert (table.kind == "search").sum() == 3  # the mmap row is not a trial of the budget
    assert "in a 82MiB memory cgroup" in shown  # 64MiB buffer, 2MiB for its pages' bookkeeping, 16MiB headroom
    best = table[table.kind != "mmap"].value.min()
    assert f"speedup over kernel mmap: {kernel.value / best:.2f}x" in shown
    assert main(["tune", *RANDOM, "baseline.mmap=true", "study.name=m", "budget.trials=4"]) == 0
    resumed = pd.read_csv(tuner_home / "outputs" / "synthetic" / "m" / "trials.csv")
    assert (resumed.kind == "mmap").sum() == 1 and (resumed.kind == "search").sum() == 4


@needs_cgroups
def test_a_study_may_add_the_kernel_mmap_when_resumed(tuner_home):
    assert main(["tune", *RANDOM, "study.name=later"]) == 0
    assert main(["tune", *RANDOM, "study.name=later", "baseline.mmap=true"]) == 0
    table = pd.read_csv(tuner_home / "outputs" / "synthetic" / "later" / "trials.csv")
    assert list(table.kind) == ["default", "search", "search", "search", "mmap"]


def test_a_workload_without_a_kernel_mmap_mode_is_refused_before_any_run(tuner_home, capsys):
    assert main(["tune", "workload=command", "workload.command=cat", "workload.buffer_size=8MiB",
                 "baseline.mmap=true"]) == 2
    assert "has no kernel-mmap mode: give the command that runs it on the kernel's mmap as workload.mmap_command" \
        in capsys.readouterr().err
    assert not (tuner_home / "outputs").exists()


def test_the_kernel_mmap_needs_the_pagers_buffer(tuner_home, capsys):
    assert main(["tune", "workload=command", "workload.command=cat", "workload.mmap_command=cat",
                 "baseline.mmap=true"]) == 2
    assert "give workload.buffer_size" in capsys.readouterr().err
