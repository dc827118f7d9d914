"""The heap extension against the kernel's swap: workloads/numpy_heap.py, arrays four times its memory limit.

Ways of running the same unmodified program in the same memory cgroup (autopager.run.memory_limit):
  exec heap         `autopager exec heap=DIR` at the defaults: the pager serves its arrays from scratch files in DIR
  exec heap K=V,..  the same with exec's settings K=V (--variant, repeatable): the tuned parameters
  kernel swap       the program bare, swapping to a swap file in DIR (same disk): xmap's baseline
in interleaved rounds (the order turned each round), medians of the rounds. The swap file is made with
fallocate, mkswap and swapon before the first round and removed with swapoff and rm after the last, even when
a run fails or the script is interrupted (SIGINT, SIGTERM, SIGHUP); no other swap may be on (the kernel's runs
would use it), checked before every round. Each run's checksum must be the one the program computes from its
updates alone, what it would be in memory (the program exits 1 otherwise), and the same across ways; every
exec run must have had all its arrays served (the preload's summary line). Each run records the bytes read from
and written to the disk (all of the disk's: run alone), and the pager's own counts (its statistics: a first touch,
zeros, counts as read) or the kernel's swapped in and out (/proc/vmstat; the only swap on is the script's).
Needs root.

    python -m experiments.bench_heap --dir /var/tmp                         # 4 GiB of arrays, 1 GiB limit, 3 rounds
    python -m experiments.bench_heap --dir /var/tmp --size 1GiB --limit 256MiB --rounds 5

The tuned parameters: a short coordinate descent of the tuner's numpy_heap workload (configs/workload/
numpy_heap.yaml, the same program under `exec heap=`) at the same size and limit, e.g.

    autopager tune workload=numpy_heap workload.heap=/var/tmp workload.size=4096 workload.buffer_size=800MiB \
        runner.memory_limit=1GiB strategy=coordinate budget.trials=16

saves them as the profile numpy_heap; `--variant profile=numpy_heap` runs exec with it (its buffer size, which the
study did not search, is left to exec: 80% of what the cgroup leaves), or give them as
`--variant page_size=...,fillers=...,evictors=...` (`autopager profile show numpy_heap`).

Writes bench_heap_DATE.md (the table), .json (the medians and every run) and .runs.jsonl (each run as it ends)
to --out (default results/heap/).
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator, Optional

from autopager.analysis.markdown import table as md_table
from autopager.errors import ConfigError
from autopager.exec import parse as parse_exec_settings
from autopager.parameters import format_size, parse_size
from autopager.run.disk import bytes_read_from_disk, bytes_written_to_disk, storage
from autopager.run.memory_limit import MemoryLimit
from autopager.run.pagerstats import pager_stats
from experiments import REPO, RESULTS, pythonpath_with_repo, stop_on_termination
from experiments.markdown import seconds as seconds_text, times

PROGRAM = REPO / "workloads" / "numpy_heap.py"
OUT = RESULTS / "heap"
KERNEL = "kernel swap"
DEFAULTS = "exec heap"
STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
HEAP_MIN_MIB = 32  # exec's default heap_min
HEAP_SUMMARY = re.compile(r"autopager preload: served (\d+) anonymous mappings from .*, left (\d+) to the kernel")


def swaps_on() -> list[str]:
    return [line.split()[0] for line in Path("/proc/swaps").read_text().splitlines()[1:]]


def check_no_other_swap(ours: Path | None = None) -> None:
    others = [name for name in swaps_on() if ours is None or name != str(ours)]
    if others:
        raise SystemExit(f"bench_heap: other swap is on ({', '.join(others)}); turn it off (swapoff) first")


@contextlib.contextmanager
def swap_file(path: Path, size: int) -> Iterator[None]:
    """A swap file of `size` bytes at `path`, on for the with-block, then off and removed (not interrupted)."""
    check_no_other_swap()
    try:
        subprocess.run(["fallocate", "-l", str(size), str(path)], check=True)
        path.chmod(0o600)
        subprocess.run(["mkswap", str(path)], check=True, capture_output=True)
        subprocess.run(["swapon", str(path)], check=True)
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_BLOCK, STOPPING)
        try:
            if str(path) in swaps_on() and subprocess.run(["swapoff", str(path)]).returncode != 0:
                print(f"bench_heap: swapoff {path} failed; it is still on: `swapoff {path} && rm {path}`",
                      file=sys.stderr)
            else:
                path.unlink(missing_ok=True)
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPPING)


def swapped_bytes() -> dict[str, int]:
    """Bytes swapped in and out so far, machine-wide (/proc/vmstat pswpin and pswpout, in pages)."""
    counts = dict(line.split() for line in Path("/proc/vmstat").read_text().splitlines())
    page = os.sysconf("SC_PAGE_SIZE")
    return {"read": int(counts["pswpin"]) * page, "written": int(counts["pswpout"]) * page}


def disk_bytes(path: Path) -> dict[str, int | None]:
    """Bytes read from and written to the disk holding ``path`` so far, by anyone (the runs are alone on it)."""
    return {"read": bytes_read_from_disk(path), "written": bytes_written_to_disk(path)}


def program_argv(args: argparse.Namespace) -> list[str]:
    return [sys.executable, str(PROGRAM), "--size-mib", str(args.size >> 20), "--array-mib", str(args.array_mib),
            "--updates", str(args.updates)]


def exec_settings(args: argparse.Namespace, variant: str) -> list[str]:
    """exec's settings for a way: heap=DIR, the preload's summary, and the variant's KEY=VALUE items."""
    return [f"heap={args.dir}", "print_stats=1", *filter(None, variant.split(","))]


def checked_ways(args: argparse.Namespace) -> dict[str, list[str] | None]:
    """Each way's exec settings (None: the kernel's), every variant checked by exec before anything runs."""
    ways: dict[str, list[str] | None] = {}
    for variant in ["", *args.variant]:
        settings = exec_settings(args, variant)
        try:
            parse_exec_settings([*settings, "--", "true"])
        except ConfigError as error:
            raise SystemExit(f"bench_heap: {'--variant ' + repr(variant) if variant else '--dir'}: {error}") from None
        ways[" ".join([DEFAULTS, *settings[2:]])] = settings
    ways[KERNEL] = None
    return ways


def run_once(way: str, settings: list[str] | None, args: argparse.Namespace, limit_bytes: int) -> dict:
    program = program_argv(args)
    argv = program if settings is None else [sys.executable, "-m", "autopager.cli.main", "exec", *settings, "--",
                                             *program]
    env = {**os.environ, "PYTHONPATH": pythonpath_with_repo()}
    swapped_before, disk_before = swapped_bytes(), disk_bytes(args.dir)
    with MemoryLimit(limit_bytes, swap=settings is None) as limit:
        start = time.perf_counter()
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, preexec_fn=limit.enter)
        wall = time.perf_counter() - start
        peak = limit.peak_bytes()
    swapped, disk = swapped_bytes(), disk_bytes(args.dir)
    if proc.returncode != 0:
        killed = " (SIGKILL: the memory cgroup's OOM killer, if dmesg says so)" if proc.returncode == -9 else ""
        raise RuntimeError(f"{way}: {' '.join(argv)} failed ({proc.returncode}{killed}):\n{proc.stdout}\n"
                           f"{proc.stderr[-4000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    run = {"seconds": result["value"], "wall": wall, "checksum": result["checksum"], "peak": peak,
           **{f"disk_{key}": None if disk[key] is None or disk_before[key] is None else disk[key] - disk_before[key]
              for key in disk}}
    if settings is None:
        return {**run, **{f"swapped_{key}": swapped[key] - swapped_before[key] for key in swapped}}
    summary = HEAP_SUMMARY.search(proc.stderr)
    if not summary or int(summary.group(1)) == 0 or int(summary.group(2)) != 0:
        raise RuntimeError(f"{way}: the pager did not serve every array (the preload said: "
                           f"{summary.group(0) if summary else 'nothing'}):\n{proc.stderr[-4000:]}")
    stats = pager_stats(proc.stderr) or {}
    return {**run, "pager_read": stats.get("bytes_read"), "pager_written": stats.get("bytes_written"),
            "served": int(summary.group(1))}


def median_of(runs: list[dict], key: str) -> float | None:
    values = [run[key] for run in runs if run.get(key) is not None]
    return statistics.median(values) if values else None


def report(args: argparse.Namespace, command: str, load: float, limit_bytes: int, runs: dict[str, list[dict]],
           checksum: int) -> str:
    medians = {way: median_of(way_runs, "seconds") for way, way_runs in runs.items()}
    def mib(way: str, key: str) -> str:
        value = median_of(runs[way], key)
        return "-" if value is None else f"{value / 2**20:,.0f} MiB"

    rows = [[way, seconds_text(medians[way], 2), times(medians[KERNEL] / medians[way]), mib(way, "disk_read"),
             mib(way, "disk_written"), mib(way, "peak")] for way in runs]
    return "\n".join([
        f"numpy_heap: {format_size(args.size)} in arrays of {args.array_mib} MiB, {args.updates} random updates and "
        f"a reduction, memory cgroup {format_size(limit_bytes)}; heap scratch files and swap file in {args.dir} on "
        f"{storage(args.dir)}; median of {args.rounds} interleaved rounds. Linux {platform.release()}, "
        f"{os.cpu_count()} cores, load average (1 min) at the start {load:.2f}. Every run's checksum "
        f"{checksum}, as computed in memory.",
        "", f"Command: `{command}`", "",
        md_table(["way", "seconds", "vs kernel swap", "disk read", "disk written", "cgroup peak"], rows)])


def main(argv: Optional[list] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", type=Path, required=True,
                        help="directory on the disk for both the heap's scratch files and the swap file")
    parser.add_argument("--size", default="4GiB", help="arrays in all (default 4GiB)")
    parser.add_argument("--limit", default=None, help="the memory cgroup's limit (default: a quarter of --size)")
    parser.add_argument("--array-mib", type=int, default=None,
                        help=f"MiB of each array (default: 1/64 of --size, at least exec's heap_min, "
                        f"{HEAP_MIN_MIB} MiB: smaller arrays are not served)")
    parser.add_argument("--updates", type=int, default=4_000_000, help="random updates (default 4000000)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds; medians reported (default 3)")
    parser.add_argument("--variant", action="append", default=[], metavar="KEY=VALUE[,KEY=VALUE...]",
                        help="exec heap also with these settings of exec, e.g. page_size=256KiB,fillers=2 or "
                        "profile=numpy_heap (repeatable)")
    parser.add_argument("--out", type=Path, default=OUT, help=f"where the table and the runs go (default {OUT})")
    args = parser.parse_args(argv)
    command = "python -m experiments.bench_heap " + " ".join(argv if argv is not None else sys.argv[1:])
    load = os.getloadavg()[0]
    if os.geteuid() != 0:
        raise SystemExit("bench_heap: run as root (swapon, memory cgroups)")
    try:
        args.size, limit_bytes = parse_size(args.size), parse_size(args.limit) if args.limit else None
    except ValueError as error:
        raise SystemExit(f"bench_heap: --size/--limit: {error}") from None
    limit_bytes = limit_bytes or args.size // 4
    args.array_mib = args.array_mib or max(HEAP_MIN_MIB, (args.size >> 20) // 64)
    args.dir = args.dir.resolve()
    ways = checked_ways(args)
    runs: dict[str, list[dict]] = {way: [] for way in ways}
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    name = args.out / f"bench_heap_{stamp}"
    stop_on_termination("bench_heap")
    swap_path = args.dir / f"bench_heap-{os.getpid()}.swap"
    with swap_file(swap_path, args.size + (256 << 20)), open(f"{name}.runs.jsonl", "w") as raw:
        for round_number in range(1, args.rounds + 1):
            check_no_other_swap(swap_path)
            for way in list(ways) if round_number % 2 else list(ways)[::-1]:
                run = run_once(way, ways[way], args, limit_bytes)
                runs[way].append(run)
                raw.write(json.dumps({"round": round_number, "way": way, **run}) + "\n")
                raw.flush()
                print(f"round {round_number}: {way}: {run['seconds']:.2f} s, checksum {run['checksum']}", flush=True)
    checksums = {run["checksum"] for way in ways for run in runs[way]}
    if len(checksums) != 1:
        raise SystemExit(f"bench_heap: the ways disagree: checksums {sorted(checksums)}")
    checksum = checksums.pop()
    text = report(args, command, load, limit_bytes, runs, checksum)
    print("\n" + text)
    record = {"date": stamp, "command": command, "load_1min": load,
              "machine": {"cores": os.cpu_count(), "kernel": platform.release(), "storage": storage(args.dir)},
              "size": args.size, "array_mib": args.array_mib, "limit": limit_bytes, "updates": args.updates,
              "rounds": args.rounds, "dir": str(args.dir), "ways": ways, "checksum": checksum,
              "medians": {way: median_of(runs[way], "seconds") for way in ways}, "runs": runs}
    Path(f"{name}.json").write_text(json.dumps(record, indent=2))
    Path(f"{name}.md").write_text(text + "\n")
    print(f"\nwritten to {name}.{{md,json,runs.jsonl}}")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit("bench_heap: interrupted (the swap file is off and removed; the finished runs are in --out)")
