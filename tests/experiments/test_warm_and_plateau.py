"""python -m experiments.warm_and_plateau at a tiny size, for real: the synthetic workload's small, cold, warm and
plateau Ax studies through the tuner, its tables checked against the study tables they were made from, and a second
run that measures nothing again."""
from __future__ import annotations

import re
import subprocess
import sys

import pandas as pd

from tests.helpers import REPO
from autopager.analysis.result import load_study

SCRIPT = [sys.executable, "-m", "experiments.warm_and_plateau"]  # from the repository's root (cwd=REPO)
NOISE_BAND = 2.0


def run(out, data) -> subprocess.CompletedProcess:
    arguments = ["--out", str(out), "--data-dir", str(data), "--warm", "synthetic", "--plateau", "synthetic",
                 "--small", "1:16MiB", "--large", "2:64MiB", "--trials", "8", "--initialization", "3",
                 "--plateau-setting", "2", "--set", "runner.memory_limit=null", "--set", "runner.page_cache=keep"]
    return subprocess.run([*SCRIPT, *arguments], cwd=REPO, capture_output=True, text=True, timeout=1200)


def searched(study_dir) -> pd.DataFrame:
    table = pd.read_csv(study_dir / "trials.csv")
    return table[table.kind.isin(["search", "reused"])].sort_values("trial")


def cells(summary: str, heading: str) -> list[str]:
    """The one data row of the table under ``heading``."""
    section = summary[summary.index(heading):]
    row = [line for line in section.splitlines() if line.startswith("| synthetic |")][0]
    return [cell.strip() for cell in row.strip("|").split("|")]


def test_warm_start_and_plateau_studies_run_and_their_tables_match_the_studies(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOPAGER_PROFILE_DIR", str(tmp_path / "profiles"))
    out = tmp_path / "out"
    done = run(out, tmp_path / "data")
    assert done.returncode == 0, done.stderr[-3000:]
    studies = out / "studies"
    small, cold, warm, plateau = (studies / "small/synthetic/ax", studies / "large/synthetic/ax",
                                  studies / "large/synthetic/ax-warm", studies / "large/synthetic/ax-plateau")
    for study in (small, cold, warm, plateau):
        assert {"trials.csv", "config.yaml", "summary.json"} <= {path.name for path in study.iterdir()}
    assert sorted(path.name for path in (studies / "large/synthetic").iterdir()) == ["ax", "ax-plateau", "ax-warm"]

    # the warm study measures the small study's best points first, as its own search trials
    warm_rows = searched(warm)
    assert warm_rows.proposed_by.iloc[0] == "warm:synthetic/ax"
    assert len(searched(cold)) == len(warm_rows) == 8  # the whole budget: budget.plateau=0

    summary = (out / "summary.md").read_text()
    row = cells(summary, "## Warm start from the small size")
    target = load_study(cold).confirmed()["value"]
    defaults = pd.read_csv(cold / "trials.csv")
    defaults = defaults[(defaults.kind == "default") & (defaults.status == "ok")].value
    noise = defaults.std() / defaults.mean() if len(defaults) > 1 else 0.05
    for study, cell in ((cold, row[3]), (warm, row[4])):
        rows = searched(study)
        reached = [count for count, (status, value) in enumerate(zip(rows.status, rows.value), 1)
                   if status == "ok" and value <= target * (1 + NOISE_BAND * noise)]
        assert cell == (f"{reached[0]} of {len(rows)}" if reached else f"not in {len(rows)}")
    assert row[7] == ("yes" if re.match(r"\d+", row[4]) and 3 * int(row[4].split()[0]) <= 8 else "no")

    row = cells(summary, "## Stopping on a plateau")
    whole, stopped = len(searched(cold)), len(searched(plateau))
    assert (row[1], row[2]) == (str(whole), str(stopped))
    assert stopped < whole and row[3] == f"{100 * (1 - stopped / whole):.0f}%"
    assert stopped >= 2 + 2  # Ax's 2 Sobol trials (the defaults are its third) do not count towards the plateau
    assert row[7].startswith("plateau: ") and f"after {stopped} search trials" in row[7]
    assert row[4].startswith(f"{load_study(cold).confirmed()['value']:.4g} ")
    assert row[5].startswith(f"{load_study(plateau).confirmed()['value']:.4g} ")

    commands = summary[summary.index("## Commands"):]
    assert commands.count("autopager tune ") == 4 and "warm_start=" in commands and "budget.plateau=2" in commands

    # the whole-budget study replayed: the rule stops it where a plateau study with its trials would have stopped
    replayed = subprocess.run([*SCRIPT, "--out", str(tmp_path / "replay"), "--plateau-setting", "2", "--replay",
                               str(cold)], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert replayed.returncode == 0, replayed.stderr[-3000:]
    row = [cell.strip() for cell in next(line for line in (tmp_path / "replay/summary.md").read_text().splitlines()
                                         if line.startswith(f"| {cold} |")).strip("|").split("|")]
    assert row[1] == str(whole) and (row[2] == "never" or 4 <= int(row[2]) <= whole)
    assert row[4].startswith(f"{load_study(cold).confirmed()['value']:.4g} ")

    # run again: every study is confirmed already, nothing is measured
    tables = {study: (study / "trials.csv").read_bytes() for study in (small, cold, warm, plateau)}
    again = run(out, tmp_path / "data")
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stdout.count("confirmed already") == 4
    assert all((study / "trials.csv").read_bytes() == table for study, table in tables.items())
