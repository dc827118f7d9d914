"""experiments.bench_workloads with --build: each build's runs, and the command it records for them, use that
build's programs and its preload library, never the environment's."""
from __future__ import annotations

import os
import shutil

import pytest

from autopager.errors import ConfigError
from autopager.exec import preload_library
from autopager.run.workloads import Workload, locate_bin
from autopager.tuner.config import compose
from experiments.bench_workloads import KERNEL, Variant


def test_a_builds_command_names_its_own_programs_and_preload(tmp_path, monkeypatch):
    built = locate_bin("lmdb") / "lmdb"
    build = tmp_path / "build"
    (build / "workloads").mkdir(parents=True)
    shutil.copy2(built, build / "workloads" / "lmdb")
    shutil.copy2(preload_library(), build / "libautopager_preload.so")
    config, _ = compose(["workload=lmdb_readrandom", f"data_dir={tmp_path / 'data'}"])
    workload = Workload.from_config(config.workload, config.data_dir)
    # the environment's preload is elsewhere (here: nowhere): the build's own must be the one named
    monkeypatch.setenv("AUTOPAGER_PRELOAD", str(tmp_path / "missing.so"))

    command = Variant("pager defaults [b]", True, {}, build / "workloads").command(workload)
    assert command[:2] == ["env", f"LD_PRELOAD={build / 'libautopager_preload.so'}"]
    assert str(build / "workloads" / "lmdb") in command
    assert os.environ["AUTOPAGER_PRELOAD"] == str(tmp_path / "missing.so")  # given back afterwards

    kernel = Variant(KERNEL, False).command(workload)
    assert not any(word.startswith("LD_PRELOAD=") for word in kernel) and kernel[0].endswith("/lmdb")
    with pytest.raises(ConfigError, match="preload library"):
        workload.argv()  # outside the build's environment: the environment's preload, missing here
