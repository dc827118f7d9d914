"""The tests' fixtures: an isolated place for studies, profiles and data (the shared helpers: tests/helpers.py)."""
from __future__ import annotations

import os

import pytest

from tests.helpers import REPO


@pytest.fixture
def tuner_home(tmp_path, monkeypatch):
    """Profiles, data and studies under tmp_path (also for subprocesses, through the environment)."""
    monkeypatch.setenv("AUTOPAGER_PROFILE_DIR", str(tmp_path / "profiles"))
    monkeypatch.setenv("AUTOPAGER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    monkeypatch.chdir(tmp_path)
    return tmp_path
