"""The runner: runs a workload with paging parameters in its environment and measures it.

Each run starts the program as a subprocess in its own session, with the parameters as UMAP_* variables
(any UMAP_* variables of the caller are removed first), bounded by a timeout that kills the whole process
group. The run dies with the tuner, whatever ends it: an exception or signal in the tuner (the study turns
SIGTERM into one) kills the run's process group before it propagates, and the program is started through
util-linux's ``setpriv --pdeathsig KILL``, so the kernel kills it when the thread that started it dies, even of
SIGKILL (the program's own children are only reached by the group kill). Before each run the page cache is emptied so every run reads from storage: as root, all of it
(``sync; echo 3 > /proc/sys/vm/drop_caches``); otherwise the workload's data files are evicted with
``posix_fadvise(DONTNEED)`` (autopager/run/page_cache.py). With a memory limit, each run is in a memory cgroup of its
own of that size (autopager/run/memory_limit.py). The metric is the value of the JSON object on the program's last line of
standard output, or, for workloads that allow it (``time_process``, a metric in seconds to minimize, and a
program that has not printed a result before: ``require_result``), the process's wall time.

The answer is checked through the ``checksum`` a result line may carry (a summary of the answer, the same
whatever the paging parameters). Given the checksum of a reference run (a study's: the defaults' first run, which
validated its answer in full), the runs skip their workload's expensive checks (``AUTOPAGER_VALIDATE=checksum``:
no re-reading of the whole data) and must print that checksum; without one the first run validates in full
(``AUTOPAGER_VALIDATE`` unset) and is the reference of the others. A run whose checksum differs is a wrong answer.

A crash, a timeout, a kill (the out-of-memory killer's SIGKILL included), output without a result or a wrong
answer makes a failed run, described in ``error``; it never raises.
"""
from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import selectors
import shutil
import signal
import sys
import statistics
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from autopager.errors import ConfigError, StudyError
from autopager.parameters import ENV_VARS, parse_size, to_environment
from autopager.run.goal import Goal
from autopager.run.memory_limit import MemoryLimit, memory_cgroup, run_limit, run_memory_limit
from autopager.run.page_cache import drop_page_cache, evict_files
from autopager.run.pagerstats import ENVIRONMENT as PRINT_STATS, pager_stats, without_stats
from autopager.run.settings import RunnerSettings
from autopager.run.workloads import Workload

RESULT, WALL_TIME = "result", "wall time"  # what a run's value is: the program's result line, or its wall time
OUTPUT_GRACE = 1.0  # seconds: output read after the program's end from processes it left (a daemon)
VALIDATE = "AUTOPAGER_VALIDATE"  # unset: the workload validates its answer in full
CHECKSUM_ONLY = {VALIDATE: "checksum"}  # the workload skips its expensive checks; its checksum is compared


def death_signal_launcher() -> list[str]:
    """The words that make a program die with the thread that starts it (``setpriv`` from util-linux)."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        print("autopager: warning: setpriv (util-linux) not found: a trial outlives a tuner killed by SIGKILL",
              file=sys.stderr)
        return []
    return [setpriv, "--pdeathsig", "KILL", "--"]


@dataclass
class Measurement:
    """The outcome of a trial's runs: the median value of the repeats, or why it failed or was capped."""
    ok: bool
    value: float | None = None
    values: list[float] = field(default_factory=list)
    wall_seconds: float = 0.0          # all runs, end to end
    exit_code: int | None = None
    error: str = ""
    stderr_tail: str = ""
    stats: dict[str, Any] = field(default_factory=dict)  # the program's own "stats", if it printed any
    measured_by: str | None = None     # RESULT or WALL_TIME
    capped: bool = False               # stopped at the cap: slower than the cap allowed (not ok)
    timed_out: bool = False
    pager_stats: dict[str, float] | None = None  # autopager.run.pagerstats of the last run, if it printed them
    checksum: str | None = None        # the answer's checksum the program printed, if it printed one
    cgroup_peak_bytes: int | None = None  # the most its runs' memory cgroups held (runner.memory_limit), if any


def environment(params: Mapping[str, Any]) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if name not in (*ENV_VARS.values(), VALIDATE)}
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


def wrong_answer(checksum: str | None, expected: str, whose: str) -> str:
    printed = f"checksum {checksum!r}" if checksum else "no checksum"
    return f"wrong answer: {printed} differs from {whose} {expected!r}"


def stopped(wall: float, limit: float, timeout: float, **output: Any) -> Measurement:
    """A run killed at ``limit`` seconds: capped where that is below its ``timeout`` (slower than the cap allows; its
    wall time a lower bound of its time), else timed out (failed). Killed by the runner's timeout, or by the tuner
    (a trial launched before its cap was known)."""
    capped = limit < timeout
    error = f"capped after {limit:.3g} s (slower than the cap allows)" if capped else describe_exit(0, True, limit)
    return Measurement(ok=False, wall_seconds=wall, error=error, capped=capped, timed_out=True, **output)


def describe_exit(code: int, timed_out: bool, timeout: float) -> str:
    if timed_out:
        return f"timed out after {timeout:.3g} s (killed)"
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else f"signal {-code}"
        hint = " (by the out-of-memory killer?)" if -code == signal.SIGKILL else ""
        return f"killed by {name}{hint}"
    return f"exited with status {code}"


KEEPER = "autopager-keeper"  # the pager's keeper (native/src/keeper/): it holds the program's stderr until done


def only_keepers_hold(descriptors: list[int]) -> bool:
    """Whether every other process holding these pipes is a keeper writing back the pages of a program that
    died (it is in a session of its own, out of the run's process group, and ends when it is done)."""
    pipes = {f"pipe:[{os.fstat(descriptor).st_ino}]" for descriptor in descriptors}
    holders = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if any(os.readlink(fd) in pipes for fd in (entry / "fd").iterdir()):
                holders.add(os.path.basename(os.readlink(entry / "exe")))
    return bool(holders) and holders == {KEEPER}


def read_to_exit(process: subprocess.Popen, timeout: float | None) -> tuple[str, str, bool, float]:
    """The program's standard output and error, whether it was killed at ``timeout``, and when it ended
    (``time.perf_counter``). The run ends when the program's process ends: the pipes are read to their end, or,
    where something it left (a daemon) holds them open, for OUTPUT_GRACE seconds more; then what is left of its
    process group is killed. Only a keeper still writing back the program's pages is waited for, up to ``timeout``."""
    pid_ready = os.pidfd_open(process.pid)
    selector = selectors.DefaultSelector()
    output: dict[int, list[bytes]] = {process.stdout.fileno(): [], process.stderr.fileno(): []}
    for descriptor in output:
        os.set_blocking(descriptor, False)
        selector.register(descriptor, selectors.EVENT_READ)
    selector.register(pid_ready, selectors.EVENT_READ)
    deadline = run_deadline = None if timeout is None else time.monotonic() + timeout
    timed_out, open_pipes = False, len(output)
    try:
        while open_pipes or process.returncode is None:
            events = selector.select(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if not events and process.returncode is None:  # the timeout: the process group is killed
                timed_out = True
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                deadline = None
            elif not events and only_keepers_hold(list(output)):
                deadline = run_deadline  # a keeper writing back what the program left: its file is not done yet
            elif not events:  # the program ended OUTPUT_GRACE ago, and what it left holds the pipes
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)  # its leftovers in the group end with the run
                break
            for event, _ in events:
                if event.fd == pid_ready:
                    selector.unregister(pid_ready)
                    process.wait()
                    ended = time.perf_counter()
                    deadline = time.monotonic() + OUTPUT_GRACE
                    continue
                chunk = os.read(event.fd, 1 << 16)
                if chunk:
                    output[event.fd].append(chunk)
                else:
                    selector.unregister(event.fd)
                    open_pipes -= 1
    finally:
        selector.close()
        os.close(pid_ready)
    stdout, stderr = (b"".join(output[stream.fileno()]).decode(errors="replace")
                      for stream in (process.stdout, process.stderr))
    return stdout, stderr, timed_out, ended


class Runner:
    def __init__(self, workload: Workload, settings: RunnerSettings = RunnerSettings(),
                 memory_limit: int | None = None):
        self.workload = workload
        self.memory_limit = memory_limit
        self.settings = settings
        self.repeats = settings.repeats
        self.page_cache = settings.page_cache
        self.stderr_lines = settings.stderr_lines
        self._can_drop = settings.page_cache == "auto" and os.geteuid() == 0
        self._launcher = death_signal_launcher()
        # the wall time is a value of the metric only where the metric is the process's time
        self.times_process = workload.time_process and workload.metric == "seconds" and workload.goal is Goal.MINIMIZE

    @classmethod
    def from_config(cls, workload: Workload, section: Mapping[str, Any]) -> "Runner":
        """A runner from the ``runner`` settings; bad settings are a ConfigError."""
        settings = RunnerSettings.from_config({"runner": section})
        try:
            parse_size(section.get("memory_headroom") or 0)
        except ValueError as error:
            raise ConfigError(f"runner.memory_headroom: {error}") from None
        try:
            limit = run_memory_limit(section.get("memory_limit"), workload, section.get("memory_headroom"))
        except (TypeError, ValueError) as error:
            raise ConfigError(f"runner: {error}") from None
        return cls(workload, settings, limit)

    def require_result(self) -> None:
        """The program prints a result line (its first run did): from now on, a run without one has failed."""
        self.times_process = False

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

    def prepare_or_fail(self, say: Callable[[str], None] = functools.partial(print, flush=True)) -> None:
        """``prepare``, for what cannot go on without the data (a study, `autopager run`), told with ``say`` (data
        generation may take minutes): a failure is a StudyError with the preparation's error and the tail of its
        stderr."""
        if self.workload.prepare:
            say("preparing the workload (its data is reused when complete)...")
        prepared = self.prepare()
        if not prepared.ok:
            raise StudyError(f"the workload's preparation failed: {prepared.error}\n{prepared.stderr_tail or ''}".rstrip())

    def measure(self, params: Mapping[str, Any], timeout: float, cap: float | None = None,
                runs: int | None = None, checksum: str | None = None) -> Measurement:
        """Run ``runs`` (default ``repeats``) times, stopping at the first run that fails or is capped, and keep the
        median. A run is killed after ``timeout`` seconds (failed) or, if smaller, ``cap`` seconds (capped).
        ``checksum``: the reference run's; the runs validate only their checksum, which must be it. Without it the
        first run validates in full and its checksum is the reference of the others."""
        env = {**environment(params), **PRINT_STATS}
        limit = timeout if cap is None else min(timeout, cap)
        values, wall, last, peaks = [], 0.0, Measurement(ok=True), []
        expected, whose = checksum, "the reference run's"
        memory = run_limit(self.memory_limit, self.workload)
        for _ in range(runs or self.repeats):
            self.empty_page_cache()
            with memory_cgroup(memory) as cgroup:
                run_env = env if expected is None else {**env, **CHECKSUM_ONLY}
                run = self._result(*self._execute(self.workload.argv(), run_env, limit, cgroup))
                peak = cgroup.peak_bytes() if cgroup is not None else None
                peaks += [peak] if peak is not None else []
                run.cgroup_peak_bytes = max(peaks, default=None)
            wall += run.wall_seconds
            if run.timed_out:
                return stopped(wall, limit, timeout, values=values, stderr_tail=run.stderr_tail,
                               pager_stats=run.pager_stats)
            if run.ok and expected is not None and run.checksum != expected:
                run.ok, run.value, run.error = False, None, wrong_answer(run.checksum, expected, whose)
            if not run.ok:
                run.wall_seconds, run.values = wall, values
                return run
            if expected is None and run.checksum is not None:
                expected, whose = run.checksum, "the first run's"
            values.append(run.value)
            last = run
        return Measurement(ok=True, value=statistics.median(values), values=values, wall_seconds=wall, exit_code=0,
                           stats=last.stats, measured_by=last.measured_by, pager_stats=last.pager_stats,
                           checksum=expected, cgroup_peak_bytes=max(peaks, default=None))

    def _execute(self, argv: Sequence[str], env: Mapping[str, str], timeout: float | None,
                 cgroup: MemoryLimit | None = None) -> tuple[Measurement, str]:
        """Run a command to its end: whether it exited with status 0, and its standard output."""
        start = time.perf_counter()
        try:
            process = subprocess.Popen([*self._launcher, *argv], env=dict(env), stdin=subprocess.DEVNULL,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       start_new_session=True, preexec_fn=cgroup and cgroup.enter)
        except OSError as error:
            return Measurement(ok=False, error=f"cannot start {argv[0]!r}: {error}"), ""
        try:
            stdout, stderr, timed_out, ended = read_to_exit(process, timeout)
        except BaseException:  # interrupted: leave no process behind (it may have ended and been reaped already)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise
        finally:
            process.stdout.close()
            process.stderr.close()
        wall = ended - start
        stats = pager_stats(stderr)
        tail = "\n".join(without_stats(stderr).splitlines()[-self.stderr_lines:])
        code = process.returncode
        if timed_out or code != 0:
            return Measurement(ok=False, wall_seconds=wall, exit_code=None if timed_out else code,
                               error=describe_exit(code, timed_out, timeout or 0), stderr_tail=tail,
                               timed_out=timed_out, pager_stats=stats), stdout
        return Measurement(ok=True, wall_seconds=wall, exit_code=code, stderr_tail=tail, pager_stats=stats), stdout

    def _why_not_timed(self) -> str:
        if not self.workload.time_process:
            return ""
        if self.workload.metric != "seconds" or self.workload.goal is not Goal.MINIMIZE:
            return (f"; the metric ({self.workload.metric}, to {self.workload.goal}) is not the process's time, "
                    f"so its wall time cannot stand for it")
        return "; the program printed a result line before, so its wall time cannot stand for one"

    def _result(self, run: Measurement, stdout: str) -> Measurement:
        """The run with its metric: the result line's value, or the wall time where the workload allows."""
        if not run.ok:
            return run
        result = last_json_object(stdout)
        if result is not None and "value" in result:
            value, error = result_value(result)
            stats, checksum = result.get("stats"), result.get("checksum")
            run.stats = stats if isinstance(stats, dict) else {}
            run.checksum = str(checksum) if checksum not in (None, "") else None
            run.measured_by = RESULT
        elif self.times_process:
            value, error = run.wall_seconds, ""
            run.measured_by = WALL_TIME
        else:
            value, error = None, no_result(stdout) + self._why_not_timed()
        if value is None:
            run.ok, run.error = False, error
        else:
            run.value, run.values = value, [value]
        return run
