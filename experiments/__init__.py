"""The experiments that measure autopager: benchmarks and the evaluation, each run from the repository's root as
``python -m experiments.NAME`` (``--help`` lists its options). Their results are committed under ``results/``."""
from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "results"
# the experiments' own configuration groups (search spaces only they use), beside the product's configs/
CONFIG_SEARCH_PATH = f"hydra.searchpath=[file://{REPO / 'experiments' / 'configs'}]"


def pythonpath_with_repo() -> str:
    """``PYTHONPATH`` for a child process that imports autopager or experiments from this checkout."""
    return os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
