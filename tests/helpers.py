"""Shared by the tests: the repository's paths, `autopager` as a subprocess, and a workload's data damaged on
purpose. Imported as a module of the tests package (``from tests.helpers import REPO``)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TEST_WORKLOADS = REPO / "tests" / "workloads"


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
