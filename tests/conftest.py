"""Shared test helpers: the repository's paths and an isolated place for studies, profiles and data."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TEST_WORKLOADS = REPO / "tests" / "workloads"


@pytest.fixture
def tuner_home(tmp_path, monkeypatch):
    """Profiles, data and studies under tmp_path (also for subprocesses, through the environment)."""
    monkeypatch.setenv("AUTOPAGER_PROFILE_DIR", str(tmp_path / "profiles"))
    monkeypatch.setenv("AUTOPAGER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def autopager_process(*args: str, **kwargs) -> subprocess.Popen:
    """`autopager ARGS` as a subprocess (the module, so it works without installing the package)."""
    return subprocess.Popen([sys.executable, "-m", "autopager.cli.main", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)


def corrupt_bfs_vertex_zero(data_dir: Path, scale: int) -> None:
    """Make every neighbour of vertex 0 in bfs's graph vertex 0 itself: a search from it reaches nothing else (another
    answer), and the graph is no longer undirected (its neighbours still list it), which bfs's full check finds."""
    offsets = data_dir / f"bfs-s{scale}.off"
    first, end = (int.from_bytes(offsets.read_bytes()[8 * i:8 * i + 8], "little") for i in (0, 1))
    with open(data_dir / f"bfs-s{scale}.adj", "r+b") as neighbors:
        neighbors.seek(4 * first)
        neighbors.write(bytes(4 * (end - first)))
