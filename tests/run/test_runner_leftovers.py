"""A run ends when its program ends: a daemon the program started that keeps its standard output and error open
does not hold the tuner until the daemon exits, and the program's result is measured."""
import os
import signal
import sys
import textwrap

import pytest

from autopager.run.runner import Runner
from autopager.run.settings import RunnerSettings
from autopager.run.workloads import Workload


@pytest.mark.parametrize("own_session", [True, False], ids=["daemon", "background child"])
def test_a_process_left_holding_the_output_does_not_hold_the_run(tmp_path, own_session):
    pid_file = tmp_path / "daemon.pid"
    program = tmp_path / "starts_a_daemon.py"
    program.write_text(textwrap.dedent(f"""\
        import json, subprocess, sys
        # stdout and stderr inherited: the daemon holds both pipes open for ten minutes
        daemon = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                                  start_new_session={own_session})
        open({str(pid_file)!r}, "w").write(str(daemon.pid))
        print("working", file=sys.stderr)
        print(json.dumps({{"metric": "seconds", "value": 2.5}}))
        """))
    workload = Workload.from_config({"name": "daemon", "command": f"{sys.executable} {program}",
                                     "time_process": False}, str(tmp_path / "data"))
    try:
        measurement = Runner(workload, RunnerSettings(page_cache="keep")).measure({}, timeout=120)
    finally:
        if pid_file.exists():
            try:
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
            except ProcessLookupError:
                pass  # the background child went with the run's process group
    assert measurement.ok and not measurement.timed_out, measurement
    assert measurement.value == 2.5
