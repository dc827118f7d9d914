"""Writes kept through the program's death (keep_writes, UMAP_KEEP_WRITES=1; DESIGN.md, "Pager: writes kept through the
process's death"): a Python program writes a file through autopager.memmap, or through its own mmap under
`autopager exec`, and dies without a flush (os._exit, SIGKILL). Every byte it wrote must be in the file, as with
the kernel's mmap, with a buffer much smaller than the file and with the default one. The program's stderr is a
pipe that the keeper holds until it has written back, so subprocess.run returns once the file is complete."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tests.pager_support import requires_userfaultfd
from tests.helpers import REPO

pytestmark = requires_userfaultfd

WORDS = 4 << 20  # 32 MiB of int64

MEMMAP_SCRIPT = """
    import os, signal, sys
    import numpy as np
    import autopager
    sizes = {} if sys.argv[2] == "default" else {"buffer_size": sys.argv[2], "page_size": "4KiB"}
    a = autopager.memmap(sys.argv[1], dtype=np.int64, mode="r+", **sizes)
    a[: len(a) // 4] = np.arange(len(a) // 4, dtype=np.int64) * 3 + 1
    a.flush()                                    # pages written before a flush and after it alike
    a[len(a) // 4 :] = np.arange(len(a) // 4, len(a), dtype=np.int64) * 3 + 1
    if sys.argv[3] == "exit":
        os._exit(0)
    os.kill(os.getpid(), signal.SIGKILL)
"""

MMAP_SCRIPT = """
    import mmap, os, signal, sys
    import numpy as np
    with open(sys.argv[1], "r+b") as f:
        m = mmap.mmap(f.fileno(), 0)
    a = np.frombuffer(m, dtype=np.int64)
    a[:] = np.arange(len(a), dtype=np.int64) * 3 + 1
    os.kill(os.getpid(), signal.SIGKILL)
"""


def environment() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("UMAP_") and k != "LD_PRELOAD"}
    env["UMAP_KEEP_WRITES"] = "1"  # off by default (its cost: native/src/config.cpp)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    return env


def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "data.bin"
    np.full(WORDS, -5, dtype=np.int64).tofile(path)
    return path


def assert_all_written(path: Path, proc: subprocess.CompletedProcess) -> None:
    values = np.fromfile(path, dtype=np.int64)
    assert len(values) == WORDS
    lost = np.flatnonzero(values != np.arange(WORDS, dtype=np.int64) * 3 + 1)
    assert len(lost) == 0, (f"{len(lost)} of {WORDS} words not written, the first at byte {lost[0] * 8}; "
                            f"status {proc.returncode}; stderr:\n{proc.stderr}")


@pytest.mark.parametrize("buffer", ["1MiB", "default"])
@pytest.mark.parametrize("death", ["exit", "kill"])
def test_memmap_writes_reach_the_file_when_the_program_dies(tmp_path, buffer, death):
    path = data_file(tmp_path)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(MEMMAP_SCRIPT), str(path), buffer, death],
                          env=environment(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == (0 if death == "exit" else -signal.SIGKILL), proc.stderr
    assert_all_written(path, proc)


def test_memmap_with_keep_writes_off_loses_what_a_kill_cuts_off(tmp_path):
    path = data_file(tmp_path)
    env = {**environment(), "UMAP_KEEP_WRITES": "0"}
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(MEMMAP_SCRIPT), str(path), "1MiB", "kill"],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    values = np.fromfile(path, dtype=np.int64)
    assert (values[-1024:] == -5).all(), "the last buffer's worth of writes cannot reach the file without the keeper"


@pytest.mark.parametrize("buffer", ["1MiB", "default"])
def test_a_program_under_exec_killed_keeps_its_writes(tmp_path, buffer):
    path = data_file(tmp_path)
    sizes = ["page_size=64KiB", "buffer_size=1MiB"] if buffer != "default" else []
    argv = [sys.executable, "-m", "autopager.cli.main", "exec", *sizes, "min_size=1MiB", "--",
            sys.executable, "-c", textwrap.dedent(MMAP_SCRIPT), str(path)]
    proc = subprocess.run(argv, env=environment(), capture_output=True, text=True, timeout=300)
    assert proc.returncode in (-signal.SIGKILL, 128 + signal.SIGKILL), proc.stderr
    assert_all_written(path, proc)
