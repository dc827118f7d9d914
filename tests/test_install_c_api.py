"""`pip install .` serves a C program too: the wheel carries libumap.so, umap.h and umap.pc inside the package
(autopager/lib, autopager/include), and a UMap program builds with `pkg-config --cflags --libs umap` and runs,
with no CMake and no LD_LIBRARY_PATH (umap.pc gives the library's directory as its rpath)."""
from __future__ import annotations

import json
import os
import subprocess
import sysconfig
from importlib import metadata
from pathlib import Path

import pytest

from tests.helpers import REPO

INSTALLED = Path(sysconfig.get_path("platlib")) / "autopager"


def installed_editable() -> bool:
    try:
        direct_url = metadata.distribution("autopager").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return False
    return bool(direct_url) and json.loads(direct_url).get("dir_info", {}).get("editable", False)


def test_a_c_program_builds_and_runs_on_the_installed_package_alone(tmp_path):
    if installed_editable():
        pytest.skip("autopager is installed editable: its C API is in the build tree, not in the environment")
    pkgconfig = INSTALLED / "lib" / "pkgconfig"
    assert (pkgconfig / "umap.pc").is_file(), f"no umap.pc in {pkgconfig}: the wheel lacks the C API"
    env = {**os.environ, "PKG_CONFIG_PATH": str(pkgconfig)}
    env.pop("LD_LIBRARY_PATH", None)
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "umap"], env=env, capture_output=True, text=True,
                           check=True).stdout.split()
    program = tmp_path / "umap_program"
    subprocess.run(["cc", str(REPO / "native" / "tests" / "umap_program.c"), *flags, "-o", str(program)], env=env,
                   check=True)
    done = subprocess.run([str(program), str(tmp_path / "data")], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "written and read back" in done.stdout
    linked = subprocess.run(["ldd", str(program)], capture_output=True, text=True, check=True).stdout
    umap = next(line.split("=>")[1].split()[0] for line in linked.splitlines() if "libumap" in line)
    assert Path(umap).resolve().parent == (INSTALLED / "lib").resolve(), linked
