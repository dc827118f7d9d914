"""``autopager exec``: run an unmodified program with its file mappings served by the pager.

``autopager exec [KEY=VALUE ...] [profile=NAME] -- COMMAND [ARGS...]`` runs COMMAND with the preload library
(``libautopager_preload.so``, docs/TRANSPARENT.md) in ``LD_PRELOAD`` and the paging parameters in the
``UMAP_*`` environment. KEY is a paging parameter as the tuner names it (``page_size=1MiB buffer_size=2GiB
fillers=2``), ``min_size`` (files smaller than this are left to the kernel), ``paths`` (``fnmatch`` patterns
separated by ``:``; only matching files are served), ``heap=DIR`` (large anonymous private mappings, malloc's
big blocks and numpy's arrays, served by the pager from unlinked scratch files in DIR; ``heap=on``: in
``$TMPDIR``, else /tmp), ``heap_min`` (smaller anonymous mappings are left to the kernel; default 32MiB),
``print_stats=1``, or a ``UMAP_*`` variable given as is.
``profile=NAME`` starts from a saved profile's searched parameters (a buffer size its study did not search is
the user's, as in ``autopager run``); the other keys override it. Every setting is checked as the pager checks
it before COMMAND starts: a bad one is a ConfigError (status 2) naming it, and COMMAND is not run.

The library is ``$AUTOPAGER_PRELOAD``, else the one installed in the package, else a developer build's.
"""
from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from autopager.errors import ConfigError
from autopager.parameters import PARAMETERS, parse_size, to_environment
from autopager.profiles import default_profile_dir, find_profile

LIBRARY = "libautopager_preload.so"
PACKAGE = Path(__file__).resolve().parent
# exec's own keys -> the variable the preload reads
SETTINGS = {"min_size": "UMAP_PRELOAD_MIN_SIZE", "paths": "UMAP_PRELOAD_PATHS", "print_stats": "UMAP_PRINT_STATS",
            "heap": "UMAP_PRELOAD_HEAP", "heap_min": "UMAP_PRELOAD_HEAP_MIN"}
SIZES = ("min_size", "heap_min")  # settings given as sizes (4MiB), passed as bytes
USAGE = "usage: autopager exec [KEY=VALUE ...] [profile=NAME] -- COMMAND [ARGS...]"
HELP = f"""{USAGE}

Runs COMMAND with its file mappings served by the pager (the preload library in LD_PRELOAD).
KEY is a paging parameter ({', '.join(PARAMETERS)}; sizes as 64KiB),
min_size (files smaller than this are left to the kernel), paths (fnmatch patterns separated by ':'),
heap=DIR (large anonymous memory, malloc's big blocks, served from scratch files in DIR; on: $TMPDIR),
heap_min (smaller anonymous memory is the kernel's; 32MiB), print_stats=1, profile=NAME (a saved profile's
parameters; profile_dir=DIR), or a UMAP_* variable.
Every setting is checked as the pager checks it before COMMAND starts (status 2 when one is refused)."""


def preload_library() -> Path:
    """The preload library's path; a ConfigError with the fix when it is not built."""
    if os.environ.get("AUTOPAGER_PRELOAD"):
        candidates = [Path(os.environ["AUTOPAGER_PRELOAD"]).expanduser()]
    else:
        candidates = [PACKAGE / LIBRARY, PACKAGE.parent / "build" / "native" / "src" / "preload" / LIBRARY]
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve()
    raise ConfigError(f"the preload library {LIBRARY} is not in {', '.join(map(str, candidates))}: build it "
                      f"(`pip install .`, or `cmake -B build && cmake --build build`) or set AUTOPAGER_PRELOAD")


def with_preload(env: Mapping[str, str]) -> dict[str, str]:
    """`env` with the preload library first in LD_PRELOAD."""
    result = dict(env)
    others = [entry for entry in result.get("LD_PRELOAD", "").split() if entry]
    result["LD_PRELOAD"] = " ".join([str(preload_library())] + others)
    return result


def transparent_argv(argv: Sequence[str], heap: str | None = None) -> list[str]:
    """`argv` run with the preload library first in LD_PRELOAD (and its heap in `heap`, as ``heap=``)."""
    variables = [f"{SETTINGS['heap']}={heap_directory(heap)}"] if heap else []
    return ["env", f"LD_PRELOAD={with_preload(os.environ)['LD_PRELOAD']}", *variables, *argv]


def heap_directory(value: str) -> str:
    """The directory of the heap's scratch files that ``heap=VALUE`` names, checked."""
    directory = Path(os.environ.get("TMPDIR") or "/tmp") if value == "on" else Path(value).expanduser()
    if not value or not directory.is_dir() or not os.access(directory, os.W_OK | os.X_OK):
        raise ConfigError(f"exec: heap={value!r} must be a writable directory for the heap's scratch files (or on: "
                          f"$TMPDIR, else /tmp)")
    return str(directory.resolve())


def parse(args: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """The variables to set and the command, from exec's arguments."""
    args = list(args)
    if "--" in args:
        split = args.index("--")
        settings, command = args[:split], args[split + 1:]
    else:
        split = next((i for i, arg in enumerate(args) if "=" not in arg), len(args))
        settings, command = args[:split], args[split:]
    if not command:
        raise ConfigError(f"exec: no command to run\n{USAGE}")
    params: dict[str, Any] = {}
    variables: dict[str, str] = {}
    profile = profile_dir = None
    for setting in settings:
        key, sep, value = setting.partition("=")
        if not sep or not key:
            raise ConfigError(f"exec: expected KEY=VALUE before the command, not {setting!r}\n{USAGE}")
        if key == "profile":
            profile = value
        elif key == "profile_dir":
            profile_dir = value
        elif key in PARAMETERS:
            params[key] = value
        elif key in SIZES:
            try:
                variables[SETTINGS[key]] = str(parse_size(value))
            except ValueError as error:
                raise ConfigError(f"exec: {key}: {error}") from None
            if key == "heap_min" and int(variables[SETTINGS[key]]) == 0:
                raise ConfigError("exec: heap_min must be at least one byte, not 0")
        elif key == "heap":
            variables[SETTINGS[key]] = heap_directory(value)
        elif key in SETTINGS:
            variables[SETTINGS[key]] = value
        elif key.startswith("UMAP_"):
            variables[key] = value
        else:
            raise ConfigError(f"exec: unknown setting {key!r}; the parameters are {', '.join(PARAMETERS)}, "
                              f"and {', '.join(SETTINGS)}, profile, profile_dir or a UMAP_* variable")
    if profile:
        found = find_profile(profile, Path(profile_dir).expanduser() if profile_dir else default_profile_dir())
        params = {**found.tuned_params, **params}
    try:
        environment = to_environment(params)
    except ValueError as error:
        raise ConfigError(f"exec: {error}") from None
    environment.update(variables)
    check_with_pager(environment)
    return environment, command


@contextlib.contextmanager
def environment_with(variables: Mapping[str, str]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def check_with_pager(variables: Mapping[str, str]) -> None:
    """A ConfigError naming the setting the pager would refuse in this environment with `variables`: the preload
    reads its configuration as Config.from_environment does, and refused, would leave COMMAND to the kernel."""
    try:
        from autopager import _native
    except ImportError as error:
        raise ConfigError(f"exec: the native module, which checks the settings, is not built ({error}): build it "
                          f"(`pip install .`, or `cmake -B build && cmake --build build`)") from None
    with environment_with(variables):
        try:
            _native.Config.from_environment()
        except ValueError as error:
            raise ConfigError(f"exec: {error}") from None


def exec_command(args: Sequence[str]) -> int:
    """Replaces this process with the command; returns only when it cannot be started (or prints exec's help)."""
    if args[:1] and args[0] in ("-h", "--help"):
        print(HELP)
        return 0
    variables, command = parse(args)
    env = with_preload({**os.environ, **variables})
    try:
        os.execvpe(command[0], command, env)
    except OSError as error:
        print(f"autopager: exec: cannot run {command[0]!r}: {error.strerror}", file=sys.stderr)
        return 127
    return 0  # not reached
