"""autopager: a user-space pager (userfaultfd) with per-application paging parameters, and a tuner.

The array API mirrors numpy.memmap::

    import autopager, numpy as np
    a = autopager.memmap("data.bin", dtype=np.float64, mode="r", page_size="1MiB", buffer_size="2GiB")
    total = a.sum()

    with autopager.Pager(page_size="64KiB", buffer_size="512MiB") as pager:
        x = pager.memmap("x.bin", dtype=np.float32, mode="r+")
        y = pager.empty(x.shape, np.float32)          # scratch, may exceed memory

The native module is loaded on first use of these names, so the tuner's modules (autopager.parameters,
autopager.cli.main, ...) import without it.
"""
from __future__ import annotations

import re
import sys
from importlib import import_module, metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any


def _version() -> str:
    """The installed distribution's version; in a source tree not installed, pyproject.toml's."""
    try:
        return metadata.version("autopager")
    except metadata.PackageNotFoundError:
        pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
        found = re.search(r'^version\s*=\s*"([^"]+)"', pyproject.read_text(), re.M) if pyproject.is_file() else None
        return found.group(1) if found else "unknown"


__version__ = _version()


def _native_of_the_installed_copy() -> None:
    """In the repository's root after `pip install .`, `import autopager` finds the checkout's autopager/, which has
    no built native module: the installed copy's package directory (on sys.path after the checkout) gives it."""
    here = Path(__file__).resolve().parent
    if any(here.glob("_native*.so")):
        return
    for entry in sys.path:
        installed = Path(entry or ".").resolve() / "autopager"
        if installed != here and any(installed.glob("_native*.so")):
            __path__.append(str(installed))
            return


_native_of_the_installed_copy()

_LAZY = {
    "memmap": "autopager.pager",
    "empty": "autopager.pager",
    "Pager": "autopager.pager",
    "default_pager": "autopager.pager",
    "PagedArray": "autopager.array",
}
__all__ = sorted([*_LAZY, "__version__"])

if TYPE_CHECKING:
    from autopager.array import PagedArray
    from autopager.pager import Pager, default_pager, empty, memmap


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'autopager' has no attribute {name!r}")


def __dir__() -> list:
    return sorted(set(globals()) | set(_LAZY))
