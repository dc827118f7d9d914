"""Benchmarks wait for a quiet machine and record the load they started at."""
import os

from experiments.quiet import wait_for_quiet


def test_a_quiet_machine_starts_at_once_and_the_load_is_recorded(tmp_path):
    log = tmp_path / "loads.txt"
    load = wait_for_quiet(os.getloadavg()[0] + 1000, log, "stream")
    wait_for_quiet(1000 + load, log, "sort")
    lines = log.read_text().splitlines()
    assert [line.split()[1:3] for line in lines] == [["start", "stream"], ["start", "sort"]]
    assert lines[0].endswith(f"at load {load:.2f}")


def test_a_busy_machine_is_waited_for(monkeypatch, tmp_path):
    loads = iter([3.0, 1.2, 0.3])
    monkeypatch.setattr(os, "getloadavg", lambda: (next(loads), 0.0, 0.0))
    assert wait_for_quiet(0.5, tmp_path / "loads.txt", "bfs", poll=0) == 0.3
    assert (tmp_path / "loads.txt").read_text().endswith("start bfs at load 0.30\n")
