"""Shared by the tests of the Python arrays and pagers: whether userfaultfd can be used here, and running
a script in a new interpreter that imports this same autopager."""
from __future__ import annotations

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
