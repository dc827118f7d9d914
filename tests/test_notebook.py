"""notebooks/study_analysis.ipynb runs (nbclient, a real Jupyter kernel) on small real studies: an Ax study of
the synthetic workload, and a quick evaluation's study with its kernel-mmap measurement."""
from __future__ import annotations

import os
import subprocess
import sys

import nbformat
import pytest
from nbclient import NotebookClient

from autopager.cli import main
from conftest import REPO

NOTEBOOK = REPO / "notebooks" / "study_analysis.ipynb"


def execute(study, results, monkeypatch) -> str:
    """Runs the notebook on ``study``; returns its printed and displayed text."""
    monkeypatch.setenv("AUTOPAGER_STUDY", str(study))
    monkeypatch.setenv("AUTOPAGER_RESULTS", str(results))
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    texts = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            texts.append(output.get("text") or output.get("data", {}).get("text/plain", ""))
    return "\n".join(texts)


def test_notebook_on_an_ax_study_of_the_synthetic_workload(tuner_home, monkeypatch):
    assert main(["tune", "workload=synthetic", "workload.size=1", "strategy=ax", "strategy.initialization_trials=4",
                 "strategy.trials=6", "runner.page_cache=evict", "study.name=small-ax"]) == 0
    shown = execute(tuner_home / "outputs" / "synthetic" / "small-ax", tuner_home, monkeypatch)
    assert "strategy ax, 7 trials, 0 failed" in shown
    assert "share of variance explained" in shown
    assert "no kernel mmap measurement" in shown


@pytest.mark.skipif(os.geteuid() != 0 or not (REPO / "build" / "workloads" / "kv").exists(),
                    reason="the evaluation needs root (page cache, memory cgroups) and the built workloads")
def test_notebook_compares_with_the_kernel_mmap_of_a_quick_evaluation(tmp_path, monkeypatch):
    out = tmp_path / "evaluation"
    run = subprocess.run([sys.executable, str(REPO / "experiments" / "evaluate.py"), "--quick", "--out", str(out),
                          "--data-dir", str(tmp_path / "data"), "--workloads", "kv_readseq"],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    shown = execute(out / "studies" / "small" / "kv_readseq" / "ax", out, monkeypatch)
    assert "kernel mmap in a" in shown and "the best trial is" in shown
    assert "speedup_vs_mmap" in shown
