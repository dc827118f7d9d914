"""The runner: runs a workload with paging parameters in its environment and measures it.

Each run starts the program as a subprocess in its own session, with the parameters as UMAP_* variables
(any UMAP_* variables of the caller are removed first), bounded by a timeout that kills the whole process
group. Before each run the page cache is emptied so every run reads from storage: as root, all of it
(``sync; echo 3 > /proc/sys/vm/drop_caches``); otherwise the workload's data files are evicted with
``posix_fadvise(DONTNEED)`` (autopager/page_cache.py). With a memory limit, each run is in a memory cgroup of its
own of that size (autopager/memory_limit.py). The metric is the value of the JSON object on the program's last line of
standard output, or, for workloads that allow it, the process's wall time.

A crash, a timeout, a kill (the out-of-memory killer's SIGKILL included) or output without a result makes a
failed run, described in ``error``; it never raises.
"""
from __future__ import annotations

import json
import math
import os
import signal
import statistics
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from autopager.errors import ConfigError
from autopager.memory_limit import MemoryLimit, memory_cgroup, run_memory_limit
from autopager.page_cache import drop_page_cache, evict_files
from autopager.params import ENV_VARS, to_environment
from autopager.workloads import Workload

PAGE_CACHE_MODES = ("auto", "evict", "keep")


@dataclass
class Measurement:
    """The outcome of a trial's runs: the median value of the repeats, or why it failed."""
    ok: bool
    value: float | None = None
    values: list[float] = field(default_factory=list)
    wall_seconds: float = 0.0          # all runs, end to end
    exit_code: int | None = None
    error: str = ""
    stderr_tail: str = ""
    stats: dict[str, Any] = field(default_factory=dict)  # the program's own "stats", if it printed any


def environment(params: Mapping[str, Any]) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if name not in ENV_VARS.values()}
    env.update(to_environment({name: value for name, value in params.items() if value is not None}))
    return env


def last_json_object(stdout: str) -> dict[str, Any] | None:
    """The JSON object on the last non-empty line of standard output, if there is one."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    try:
        result = json.loads(lines[-1]) if lines else None
    except ValueError:
        return None
    return result if isinstance(result, dict) else None


def no_result(stdout: str) -> str:
    lines = [line for line in stdout.splitlines() if line.strip()]
    if not lines:
        return 'no output: expected a last line such as {"metric": "seconds", "value": 1.2}'
    return f'the last line of output is not a JSON object with a "value": {lines[-1].strip()[:200]!r}'


def result_value(result: Mapping[str, Any]) -> tuple[float | None, str]:
    """(value, error) of a program's result object."""
    value = result.get("value")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None, f'the result\'s "value" is not a finite number: {value!r}'
    return float(value), ""


def describe_exit(code: int, timed_out: bool, timeout: float) -> str:
    if timed_out:
        return f"timed out after {timeout:.3g} s (killed)"
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else f"signal {-code}"
        hint = " (by the out-of-memory killer?)" if -code == signal.SIGKILL else ""
        return f"killed by {name}{hint}"
    return f"exited with status {code}"


class Runner:
    def __init__(self, workload: Workload, repeats: int = 1, page_cache: str = "auto", stderr_lines: int = 20,
                 memory_limit: int | None = None):
        if page_cache not in PAGE_CACHE_MODES:
            raise ValueError(f"page_cache must be one of {', '.join(PAGE_CACHE_MODES)}, not {page_cache!r}")
        if repeats < 1:
            raise ValueError(f"repeats must be at least 1, not {repeats}")
        self.workload = workload
        self.repeats = repeats
        self.page_cache = page_cache
        self.stderr_lines = stderr_lines
        self.memory_limit = memory_limit
        self._can_drop = page_cache == "auto" and os.geteuid() == 0

    @classmethod
    def from_config(cls, workload: Workload, settings: Mapping[str, Any]) -> "Runner":
        """A runner from the ``runner`` settings; bad settings are a ConfigError."""
        try:
            return cls(workload, int(settings["repeats"]), settings["page_cache"], int(settings["stderr_lines"]),
                       run_memory_limit(settings.get("memory_limit"), workload, settings.get("memory_headroom")))
        except (TypeError, ValueError) as error:
            raise ConfigError(f"runner: {error}") from None

    def empty_page_cache(self) -> None:
        if self.page_cache == "keep":
            return
        if self._can_drop:
            self._can_drop = drop_page_cache()  # e.g. a read-only /proc/sys in a container: evict the files instead
            if self._can_drop:
                return
        evict_files(self.workload.data_paths())

    def prepare(self) -> Measurement:
        """Run the workload's preparation (data generation) once, untimed and without paging parameters."""
        argv = self.workload.prepare_argv()
        return self._execute(argv, environment({}), timeout=None)[0] if argv else Measurement(ok=True)

    def measure(self, params: Mapping[str, Any], timeout: float) -> Measurement:
        """Run ``repeats`` times (stopping at the first failure) and keep the median."""
        env = environment(params)
        values, stats, wall = [], {}, 0.0
        for _ in range(self.repeats):
            self.empty_page_cache()
            with memory_cgroup(self.memory_limit) as cgroup:
                run = self._result(*self._execute(self.workload.argv(), env, timeout, cgroup))
            wall += run.wall_seconds
            if not run.ok:
                run.wall_seconds, run.values = wall, values
                return run
            values.append(run.value)
            stats = run.stats
        return Measurement(ok=True, value=statistics.median(values), values=values, wall_seconds=wall,
                           exit_code=0, stats=stats)

    def _execute(self, argv: Sequence[str], env: Mapping[str, str], timeout: float | None,
                 cgroup: MemoryLimit | None = None) -> tuple[Measurement, str]:
        """Run a command to its end: whether it exited with status 0, and its standard output."""
        start = time.perf_counter()
        try:
            process = subprocess.Popen(argv, env=dict(env), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True, errors="replace",
                                       start_new_session=True, preexec_fn=cgroup and cgroup.enter)
        except OSError as error:
            return Measurement(ok=False, error=f"cannot start {argv[0]!r}: {error}"), ""
        timed_out = False
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(process.pid, signal.SIGKILL)
            stdout, stderr = process.communicate()
        except BaseException:  # interrupted: leave no process behind
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise
        wall = time.perf_counter() - start
        tail = "\n".join(stderr.splitlines()[-self.stderr_lines:])
        code = process.returncode
        if timed_out or code != 0:
            return Measurement(ok=False, wall_seconds=wall, exit_code=None if timed_out else code,
                               error=describe_exit(code, timed_out, timeout or 0), stderr_tail=tail), stdout
        return Measurement(ok=True, wall_seconds=wall, exit_code=code, stderr_tail=tail), stdout

    def _result(self, run: Measurement, stdout: str) -> Measurement:
        """The run with its metric: the result line's value, or the wall time where the workload allows."""
        if not run.ok:
            return run
        result = last_json_object(stdout)
        if result is not None and "value" in result:
            value, error = result_value(result)
            stats = result.get("stats")
            run.stats = stats if isinstance(stats, dict) else {}
        elif self.workload.time_process:
            value, error = run.wall_seconds, ""
        else:
            value, error = None, no_result(stdout)
        if value is None:
            run.ok, run.error = False, error
        else:
            run.value, run.values = value, [value]
        return run
