"""Shared by the tests of the Python arrays and pagers: whether userfaultfd can be used here, running
a script in a new interpreter that imports this same autopager, and a small tmpfs that fills up."""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys

import pytest

import autopager


def userfaultfd_problem() -> str | None:
    """Why a pager cannot start here, or None."""
    try:
        autopager.Pager(buffer_size="1MiB").close()
    except OSError as error:
        return str(error)
    return None


_PROBLEM = userfaultfd_problem()
requires_userfaultfd = pytest.mark.skipif(_PROBLEM is not None, reason=f"userfaultfd unavailable: {_PROBLEM}")


def run_python(script, cwd, prefix=(), env=None):
    """`script` in a new interpreter importing this same autopager (the installed one or the tree's)."""
    package_root = os.path.dirname(os.path.dirname(autopager.__file__))
    env = {**os.environ, **(env or {}), "PYTHONPATH": package_root}
    return subprocess.run([*prefix, sys.executable, "-c", script], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60)


class SmallTmpfs:
    """A tmpfs of `size` bytes mounted on `directory`, so that writes fail with ENOSPC for real."""

    def __init__(self, directory, size):
        self.directory = directory
        directory.mkdir()
        result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(directory)],
                                capture_output=True, text=True)
        self.refused = None if result.returncode == 0 else (result.stderr.strip() or "mount failed")

    def grow(self, size):
        subprocess.run(["mount", "-o", f"remount,size={size}", str(self.directory)], check=True)

    def unmount(self):
        if self.refused is None:
            subprocess.run(["umount", "-l", str(self.directory)], check=False)


@contextlib.contextmanager
def small_tmpfs(directory, size):
    """A SmallTmpfs for the with-block, unmounted after; the test is skipped, saying why, where none can be
    mounted."""
    fs = SmallTmpfs(directory, size)
    if fs.refused is not None:
        pytest.skip(f"cannot mount a tmpfs here: {fs.refused}")
    try:
        yield fs
    finally:
        fs.unmount()
