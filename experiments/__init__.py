"""The experiments that measure autopager: benchmarks and the evaluation, each run from the repository's root as
``python -m experiments.NAME`` (``--help`` lists its options). Their results are committed under ``results/``."""
from __future__ import annotations

import os
import signal
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "results"
# the experiments' own configuration groups (search spaces only they use), beside the product's configs/
CONFIG_SEARCH_PATH = f"hydra.searchpath=[file://{REPO / 'experiments' / 'configs'}]"


def pythonpath_with_repo() -> str:
    """``PYTHONPATH`` for a child process that imports autopager or experiments from this checkout."""
    return os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))


def stop_on_termination(script: str) -> None:
    """SIGTERM and SIGHUP end the script through its ``finally`` blocks, as SIGINT does, so that what it set up for
    its runs (a swap file, the huge-page pool, a disk's read-ahead) is undone."""
    def stop(signum: int, _frame) -> None:
        raise SystemExit(f"{script}: stopped by {signal.Signals(signum).name}")

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, stop)
