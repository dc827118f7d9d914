"""The core installs light (pyproject: numpy and PyYAML; the tuner and the report are extras): importing the
package, mapping a file and running `autopager exec` or `autopager profile` load none of the extras' packages,
and a command whose extra is missing names the extra to install. Each check runs in a fresh interpreter."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

EXTRAS = ("ax", "torch", "pandas", "matplotlib", "hydra", "omegaconf", "optuna", "scipy")


def loaded_extras(code: str) -> list[str]:
    """The extras' top-level packages in sys.modules after ``code`` ran in a new interpreter."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted({{name.split('.')[0] for name in sys.modules}})))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return sorted(set(json.loads(done.stdout.splitlines()[-1])) & set(EXTRAS))


def test_the_array_api_exec_and_profile_load_no_extra(tmp_path):
    path = tmp_path / "data.bin"
    np.arange(1024, dtype=np.float64).tofile(path)
    code = (f"import autopager, contextlib, io, numpy as np\n"
            f"a = autopager.memmap({str(path)!r}, dtype=np.float64, mode='r')\n"
            f"assert a.sum() == {float(np.arange(1024).sum())!r}\n"
            f"with autopager.Pager(page_size='64KiB', buffer_size='1MiB') as pager: pass\n"
            f"from autopager.cli.main import main\n"
            f"with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    assert main(['exec', '--help']) == 0\n"
            f"    assert main(['profile', 'list', 'profile_dir={tmp_path}']) == 0\n")
    assert loaded_extras(code) == []


def test_a_missing_extra_is_named(tmp_path):
    # A meta path finder refusing pandas stands for an install without the extra.
    code = ("import sys, importlib.abc\n"
            "class Missing(importlib.abc.MetaPathFinder):\n"
            "    def find_spec(self, name, path, target=None):\n"
            "        if name.split('.')[0] == 'pandas':\n"
            "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
            "sys.meta_path.insert(0, Missing())\n"
            "from autopager.cli.main import main\n"
            f"sys.exit(main(['studies', 'study.root={tmp_path}']))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == "autopager: error: `autopager studies` needs pandas: pip install 'autopager[tune]'"
