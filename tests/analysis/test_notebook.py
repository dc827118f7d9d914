"""Analysis of a user's own study: a tiny synthetic study run with the real CLI (Ax, two runs a trial, the
kernel-mmap baseline where memory cgroups can be made), then notebooks/study_analysis.ipynb executed (nbclient,
a real Jupyter kernel) from a directory outside the checkout, with the package imported as installed, and
`autopager report` on the same study."""
from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tomllib

import nbformat
import pandas as pd
import pytest
from nbclient import NotebookClient

from tests.helpers import REPO
from tests.run.test_kernel_mmap import cgroups_unavailable
from tests.analysis.test_study_figures import drifting_study

NOTEBOOK = REPO / "notebooks" / "study_analysis.ipynb"
MMAP = not cgroups_unavailable()
PNG = b"\x89PNG\r\n\x1a\n"


def autopager(*args: str, cwd, env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autopager.cli.main", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=900)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A directory outside the checkout, and the environment in which the package imports as installed."""
    home = tmp_path_factory.mktemp("user")
    env = {**os.environ, "PYTHONPATH": str(REPO), "AUTOPAGER_PROFILE_DIR": str(home / "profiles"),
           "AUTOPAGER_DATA_DIR": str(home / "data")}
    return home, env


@pytest.fixture(scope="module")
def study(installed):
    home, env = installed
    run = autopager("tune", "workload=synthetic", "workload.size=1", "strategy=ax", "strategy.initialization_trials=4",
                    "strategy.trials=6", "runner.repeats=2", "runner.page_cache=evict", "study.name=small-ax",
                    "confirm.rounds=0", "noise.defaults_runs=1", "noise.max_runs=2",
                    f"baseline.mmap={str(MMAP).lower()}", cwd=home, env=env)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    directory = home / "outputs" / "synthetic" / "small-ax"
    assert (directory / "ax_client.json").is_file()
    return directory


def test_notebook_shows_the_study_given_by_path(study, installed, monkeypatch):
    home, env = installed
    workdir = home / "notebook"
    workdir.mkdir()
    copy = shutil.copy(NOTEBOOK, workdir)
    notebook = nbformat.read(copy, as_version=4)
    parameters = next(cell for cell in notebook.cells if "parameters" in cell.metadata.get("tags", []))
    parameters.source = f"study_dir = {str(study)!r}"  # as papermill -p study_dir would
    monkeypatch.setenv("PYTHONPATH", env["PYTHONPATH"])
    NotebookClient(notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(workdir)}}).execute()
    texts, images = [], 0
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            texts.append(output.get("text") or output.get("data", {}).get("text/plain", ""))
            images += "image/png" in output.get("data", {})
    shown = "\n".join(texts)
    table = pd.read_csv(study / "trials.csv")
    trials = table[table.kind != "mmap"]
    assert f"{study}: workload synthetic" in shown and (f"strategy ax; trials: {len(trials) - 1}/6 searched; 1 run of "
                                                        "the defaults, 0 confirmation runs; 0 failed, 0 capped") in shown
    assert "The study ran no confirmation (confirm.rounds=0)." in shown
    assert "Ax's model from trial" in shown
    assert "from Ax's sensitivity analysis" in shown and "evict_high_water" in shown
    assert "_OH_PARAM_" not in shown  # a choice (eviction) is one parameter, not Ax's one input a value
    best, defaults = trials.value.min(), trials.value.iloc[0]
    assert f"{defaults / best:.2f}x the defaults" in shown
    if MMAP:
        kernel = table[table.kind == "mmap"].value.iloc[0]
        assert f"the best trial is {kernel / best:.2f}x the kernel's mmap" in shown
    else:
        assert "no kernel mmap measurement in this study" in shown
    assert images >= 2 + MMAP  # convergence, importance (and the kernel's mmap)


def test_report_writes_markdown_and_plots_of_the_study(study, installed):
    home, env = installed
    out = home / "report"
    run = autopager("report", str(study), "--out", str(out), cwd=home, env=env)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    text = (out / "report.md").read_text()
    table = pd.read_csv(study / "trials.csv")
    trials = table[table.kind != "mmap"]
    best = trials.loc[trials.value.idxmin()]
    assert f"the best trial ({best.trial})" in text
    assert f"{trials.value.iloc[0] / best.value:.2f}x the defaults" in text
    first_model = trials[trials.proposed_by == "MBM"].trial.min()
    assert f"Ax's model proposed the trials from trial {first_model} on" in text
    assert "several times is drawn at its median, its bar the range of its runs" in text
    assert "From Ax's sensitivity analysis of its model" in text
    plots = ["convergence.png", "importance.png"] + (["mmap.png"] if MMAP else [])
    for plot in plots:
        assert (out / plot).read_bytes()[:8] == PNG and f"({plot})" in text
    if MMAP:
        kernel = table[table.kind == "mmap"].value.iloc[0]
        assert f"The pager's best trial is {kernel / best.value:.2f}x the kernel's mmap" in text
        assert "in a 82MiB memory cgroup" in text
    else:
        assert "Not measured: run the study with `baseline.mmap=true`" in text


def test_report_refuses_a_directory_without_a_study(installed):
    home, env = installed
    run = autopager("report", str(home), cwd=home, env=env)
    assert run.returncode == 2 and f"no study in {home}" in run.stderr


def test_a_damaged_ax_state_is_reported_and_not_used(study, installed):
    home, env = installed
    copy = home / "damaged"
    shutil.copytree(study, copy, ignore=shutil.ignore_patterns("report"))
    (copy / "ax_client.json").write_text('{"experiment": ')
    run = autopager("report", str(copy), cwd=home, env=env)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    text = (copy / "report" / "report.md").read_text()
    assert f"Ax's state {copy / 'ax_client.json'} cannot be read" in text
    assert "From the trials alone" in text and "Ax's sensitivity analysis of its model" not in text


def test_notebook_names_the_confirmed_winner_and_ranks_trials_as_the_report(tuner_home, monkeypatch):
    """A study whose runs drift (test_study_figures): a confirmation run better than any trial is no trial, and the
    notebook names the confirmed winner with its ratio and per-round range, as the tuner's summary does."""
    out, table = drifting_study(tuner_home)
    directory = tuner_home / "outputs" / "drifting" / "drift"
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    parameters = next(cell for cell in notebook.cells if "parameters" in cell.metadata.get("tags", []))
    parameters.source = f"study_dir = {str(directory)!r}"
    NotebookClient(notebook, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(tuner_home)}}).execute()
    shown = "\n".join(output.get("text") or output.get("data", {}).get("text/plain", "")
                      for cell in notebook.cells for output in cell.get("outputs", []))
    trials = table[table.kind.isin(["default", "search"])]
    best = trials.loc[trials.value.idxmin()]
    speedup, low, high = re.search(r"confirmed speedup: +([0-9.]+)x \(per round ([0-9.]+)-([0-9.]+)x", out).groups()
    assert f"(trial {best.trial}), {trials[trials.kind == 'default'].value.median() / best.value:.2f}x the defaults" \
        in shown, shown
    assert f"{speedup}x the defaults' confirmation runs (per round {low}-{high}x)" in shown, shown


def extra_requirements(extra: str, project: dict) -> set[str]:
    """The distributions an extra of pyproject.toml names, autopager's own extras followed."""
    names = set()
    for requirement in project["optional-dependencies"][extra]:
        name = re.match(r"[A-Za-z0-9_.-]+", requirement).group(0).lower().replace("_", "-")
        inner = re.fullmatch(r"autopager\[([a-z]+)\]", requirement)
        names |= extra_requirements(inner.group(1), project) if inner else {name}
    return names


def test_the_notebook_extra_installs_what_the_notebook_imports():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    given = extra_requirements("notebook", project) | {re.match(r"[A-Za-z0-9_.-]+", r).group(0).lower()
                                                       for r in project["dependencies"]}
    assert "jupyterlab" in given  # something to open it with
    source = "\n".join(cell.source for cell in nbformat.read(NOTEBOOK, as_version=4).cells if cell.cell_type == "code")
    modules = set(re.findall(r"^\s*(?:from|import) ([A-Za-z_]\w*)", source, re.M)) - {"autopager"}
    modules |= {"pandas", "matplotlib"}  # what autopager.analysis.report imports
    providers = importlib.metadata.packages_distributions()
    for module in modules - set(sys.stdlib_module_names):
        assert {name.lower() for name in providers[module]} & given, (module, providers[module], given)
