"""Profiles: the file format, choosing among profiles, and the round trip tune -> profile -> export -> run."""
import json
import os
import re
import subprocess
import sys

import pytest
import yaml

from autopager.cli.main import main
from autopager.errors import ConfigError
from autopager.profiles import (ProfileError, find_profile, list_profiles, load_profile, machine_key,
                                save_profile, this_machine)
from autopager.run.workloads import PACKAGE


def record(value, machine=None, size=16, date=None, **params):
    data = {"workload": "bfs", "params": {"page_size": 1 << 20, "buffer_size": 64 << 20, **params},
            "metric": "seconds", "goal": "minimize", "value": value,
            "found_on": {"workload": {"size": size, "threads": 2}, "machine": machine or this_machine()}}
    return {**data, "date": date} if date else data


def test_saved_profiles_are_readable_and_kept_apart_by_data_and_machine(tmp_path):
    other = {**this_machine(), "cores": 999}
    here, _ = save_profile(record(2.0, date="2026-01-01T00:00:00+00:00"), tmp_path)
    save_profile(record(1.0, size=20), tmp_path)
    there, _ = save_profile(record(0.5, machine=other, date="2026-12-31T00:00:00+00:00", fillers=3), tmp_path)
    assert here.name == f"size=16,threads=2@{machine_key(this_machine())}.yaml"
    assert there.name == "size=16,threads=2@999cpu-" + here.name.split("cpu-")[1]
    text = yaml.safe_load(here.read_text())
    assert text["params"] == {"page_size": "1MiB", "buffer_size": "64MiB"}  # readable sizes
    assert len(list_profiles(tmp_path)) == 3
    # this machine's newest, though another machine's is newer and better; the buffer size, not searched, is not set
    assert load_profile("bfs", tmp_path) == {"page_size": 1 << 20}
    assert find_profile("bfs", tmp_path).data["found_on"]["workload"]["size"] == 20
    assert load_profile(str(there)) == {"page_size": 1 << 20, "fillers": 3}
    assert load_profile(find_profile(str(there)).name, tmp_path)["fillers"] == 3
    os.remove(find_profile("bfs", tmp_path).path)
    os.remove(here)
    assert load_profile("bfs", tmp_path)["fillers"] == 3  # none from this machine: the newest


def test_a_worse_result_does_not_replace_a_profile(tmp_path):
    path, written = save_profile(record(1.0), tmp_path)
    assert written and save_profile(record(1.5), tmp_path) == (path, False)
    assert save_profile(record(0.7), tmp_path) == (path, True)
    assert yaml.safe_load(path.read_text())["value"] == 0.7


def test_missing_or_bad_profiles_are_clear_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOPAGER_PROFILE_DIR", str(tmp_path))
    with pytest.raises(ProfileError, match="no profile named 'bfs'.*autopager tune workload=NAME"):
        load_profile("bfs")
    bad = tmp_path / "bad.yaml"
    bad.write_text("params: {page_sise: 4096}\n")
    with pytest.raises(ConfigError, match="unknown paging parameter"):
        load_profile(bad)
    bad.write_text("just text\n")
    with pytest.raises(ProfileError, match="is not a profile"):
        load_profile(bad)


def test_tune_then_profile_list_show_export_and_run(tuner_home, capsys):
    common = ["workload=synthetic", "workload.size=1", "runner.page_cache=evict"]
    assert main(["run", *common]) == 0
    assert "with the defaults (no profile yet)" in capsys.readouterr().out

    assert main(["tune", *common, "strategy=pagesize"]) == 0
    capsys.readouterr()
    assert main(["profile", "list"]) == 0
    listed = capsys.readouterr().out
    header, row = listed.splitlines()
    assert header.split()[:2] == ["profile", "buffer"] and row.startswith("synthetic/size=1,threads=1,buffer=64MiB@")
    assert re.search(r" 64MiB +[0-9.]+ seconds +[0-9.]+x ", row), row

    assert main(["profile", "show", "synthetic"]) == 0
    shown = yaml.safe_load(capsys.readouterr().out)
    assert shown["params"]["page_size"] == "256KiB" and shown["strategy"] == "pagesize"
    assert shown["found_on"]["machine"]["cores"] == os.cpu_count()

    assert main(["profile", "export", "synthetic"]) == 0
    exported = capsys.readouterr().out
    assert "export UMAP_PAGESIZE=262144\n" in exported
    assert "UMAP_BUFSIZE" not in exported  # the study did not search the buffer size
    # the exported environment reproduces the profile's result with the program itself
    script = f"{exported}\n{sys.executable} -S {PACKAGE / 'run' / 'synthetic.py'} --size 1"
    result = json.loads(subprocess.run(["bash", "-c", script], capture_output=True, text=True).stdout)
    assert result["value"] == pytest.approx(shown["value"])

    assert main(["run", *common]) == 0
    out = capsys.readouterr().out
    assert "with profile synthetic/size=1,threads=1,buffer=64MiB@" in out and "page_size=256KiB" in out
    assert f"{shown['speedup_over_default']:.2f}x" in out
