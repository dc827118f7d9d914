"""A study mirrored into Optuna, through the real command: `autopager export-optuna` writes one Optuna trial a trial
(read back with Optuna), and `autopager dashboard` serves optuna-dashboard on it, on a loopback port, whose page,
loaded in a real headless browser (Debian's chromium), shows the study's trials."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pandas as pd
import pytest

from tests.helpers import autopager_process

try:
    import optuna
    import optuna_dashboard  # noqa: F401
except ImportError as error:
    pytest.skip(f"optuna and optuna-dashboard are not installed ({error}): pip install 'autopager[dashboard]'",
                allow_module_level=True)

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
NAME = "mirrored"


def autopager(*args: str) -> tuple[int, str, str]:
    process = autopager_process(*args)
    out, err = process.communicate(timeout=600)
    return process.returncode, out, err


@pytest.fixture
def study(tuner_home):
    code, out, err = autopager("tune", "workload=synthetic", "workload.size=1", "runner.page_cache=keep",
                               "strategy=random", "budget.trials=3", "confirm.rounds=0", "noise.defaults_runs=1",
                               f"study.name={NAME}")
    assert code == 0, out + err
    directory = tuner_home / "outputs" / "synthetic" / NAME
    table = pd.read_csv(directory / "trials.csv")
    return directory, table[table.kind.isin(["default", "search"])]


def test_export_optuna_writes_one_trial_a_trial(study, tuner_home):
    directory, trials = study
    storage = f"sqlite:///{tuner_home / 'x.db'}"
    code, out, err = autopager("export-optuna", f"synthetic/{NAME}", "--storage", storage)
    assert code == 0, out + err
    mirrored = optuna.load_study(study_name=f"synthetic/{NAME}", storage=storage)
    assert mirrored.direction == optuna.study.StudyDirection.MINIMIZE and mirrored.metric_names == ["seconds"]
    exported = sorted(mirrored.trials, key=lambda trial: trial.user_attrs["autopager_trial"])
    assert [trial.user_attrs["autopager_trial"] for trial in exported] == list(trials.trial)
    for trial, (_, row) in zip(exported, trials.iterrows()):
        assert trial.state == optuna.trial.TrialState.COMPLETE and trial.value == pytest.approx(row.value)
        assert trial.params and trial.user_attrs["kind"] == row.kind
        assert all(value == (str(row[name]) if isinstance(value, str) else row[name])
                   for name, value in trial.params.items()), (trial.params, row)
    code, out, err = autopager("export-optuna", f"synthetic/{NAME}", "--storage", storage)  # again: replaced
    assert code == 0 and len(optuna.load_study(study_name=f"synthetic/{NAME}", storage=storage).trials) == len(trials)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def get_json(url: str, server: subprocess.Popen) -> dict:
    """The server's answer, once it is up (it exports the study first); the server must not have ended."""
    deadline = time.monotonic() + 300
    while True:
        try:
            with urllib.request.urlopen(url, timeout=30) as answer:
                return json.loads(answer.read())
        except (urllib.error.URLError, ConnectionError):
            assert server.poll() is None, server.communicate()
            assert time.monotonic() < deadline, "the dashboard never answered"
            time.sleep(0.5)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_the_dashboard_serves_the_study_and_its_page_shows_the_trials(study, tuner_home):
    directory, trials = study
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "autopager.cli.main", "dashboard", NAME, "--port", str(port)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        studies = get_json(f"http://127.0.0.1:{port}/api/studies", server)["study_summaries"]
        assert [s["study_name"] for s in studies] == [f"synthetic/{NAME}"], studies
        detail = get_json(f"http://127.0.0.1:{port}/api/studies/{studies[0]['study_id']}", server)
        assert len(detail["trials"]) == len(trials)
        page = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                               f"--user-data-dir={tuner_home / 'chromium'}", "--virtual-time-budget=15000",
                               "--dump-dom", f"http://127.0.0.1:{port}/dashboard/studies/{studies[0]['study_id']}/trials"],
                              capture_output=True, text=True, timeout=300, env={**os.environ, "HOME": str(tuner_home)})
        assert page.returncode == 0, page.stderr[-2000:]
        for number in range(len(trials)):
            assert f"Trial {number}" in page.stdout, page.stdout[-3000:]
        assert "autopager_trial" in page.stdout  # the trial's attributes, as the mirror wrote them
    finally:
        server.terminate()
        _, err = server.communicate(timeout=60)
    assert (directory / "optuna.db").is_file()
    assert "Warning" not in err, err  # a newcomer's terminal shows what it serves, not torch's deprecations
