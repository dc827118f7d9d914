"""The heap extension against the kernel's swap: workloads/numpy_heap.py, arrays four times its memory limit.

Two ways of running the same unmodified program in the same memory cgroup (autopager.run.memory_limit):
  exec heap=DIR   `autopager exec heap=DIR` at the defaults: the pager serves its arrays from scratch files in DIR
  kernel swap     the program bare, swapping to a swap file in DIR (same disk): xmap's baseline
in interleaved rounds (the order turned each round), medians of the rounds. The swap file is made with
fallocate, mkswap and swapon before the first round and removed with swapoff and rm after the last, even when
a run fails or the script is interrupted; no other swap may be on during the rounds (the kernel's runs would
use it). Each run's checksum must be the one the program computes from its updates (it exits 1 otherwise)
and the same across ways. Needs root.

    python -m experiments.bench_heap --dir /var/tmp                         # 4 GiB of arrays, 1 GiB limit, 3 rounds
    python -m experiments.bench_heap --dir /var/tmp --size 1GiB --limit 256MiB --rounds 5

Writes a table and the raw times to results/heap/.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator, Optional

from autopager.run.memory_limit import MemoryLimit
from autopager.parameters import format_size, parse_size
from experiments import REPO, RESULTS, pythonpath_with_repo
from autopager.analysis.markdown import table as md_table

PROGRAM = REPO / "workloads" / "numpy_heap.py"
OUT = RESULTS / "heap"


def swaps_on() -> list[str]:
    return [line.split()[0] for line in Path("/proc/swaps").read_text().splitlines()[1:]]


@contextlib.contextmanager
def swap_file(path: Path, size: int) -> Iterator[None]:
    """A swap file of `size` bytes at `path`, on for the with-block, then off and removed."""
    if swaps_on():
        raise SystemExit(f"bench_heap: swap is already on ({', '.join(swaps_on())}); turn it off (swapoff) first")
    try:
        subprocess.run(["fallocate", "-l", str(size), str(path)], check=True)
        path.chmod(0o600)
        subprocess.run(["mkswap", str(path)], check=True, capture_output=True)
        subprocess.run(["swapon", str(path)], check=True)
        yield
    finally:
        if str(path) in swaps_on():
            subprocess.run(["swapoff", str(path)], check=False)
        path.unlink(missing_ok=True)


def run_once(way: str, args: argparse.Namespace, limit_bytes: int) -> dict:
    program = [sys.executable, str(PROGRAM), "--size-mib", str(args.size >> 20), "--updates", str(args.updates)]
    if way == "exec heap":
        argv = [sys.executable, "-m", "autopager.cli.main", "exec", f"heap={args.dir}", "--", *program]
    else:
        argv = program
    env = {**os.environ, "PYTHONPATH": pythonpath_with_repo()}
    with MemoryLimit(limit_bytes, swap=(way == "kernel swap")) as limit:
        start = time.perf_counter()
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, preexec_fn=limit.enter)
        wall = time.perf_counter() - start
        peak = limit.peak_bytes()
    if proc.returncode != 0:
        raise RuntimeError(f"{way}: {argv} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr[-4000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"seconds": result["value"], "wall": wall, "checksum": result["checksum"], "peak": peak}


def main(argv: Optional[list] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", type=Path, required=True,
                        help="directory on the disk for both the heap's scratch files and the swap file")
    parser.add_argument("--size", default="4GiB", help="arrays in all (default 4GiB)")
    parser.add_argument("--limit", default=None, help="the memory cgroup's limit (default: a quarter of --size)")
    parser.add_argument("--updates", type=int, default=4_000_000, help="random updates (default 4000000)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds; medians reported (default 3)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    args.size = parse_size(args.size)
    limit_bytes = parse_size(args.limit) if args.limit else args.size // 4
    args.dir = args.dir.resolve()
    ways = ["exec heap", "kernel swap"]
    runs: dict[str, list[dict]] = {way: [] for way in ways}
    with swap_file(args.dir / f"bench_heap-{os.getpid()}.swap", args.size + (256 << 20)):
        for round_number in range(1, args.rounds + 1):
            for way in ways if round_number % 2 else ways[::-1]:
                run = run_once(way, args, limit_bytes)
                runs[way].append(run)
                print(f"round {round_number}: {way:12s} {run['seconds']:9.2f} s  checksum {run['checksum']}", flush=True)
    checksums = {run["checksum"] for way in ways for run in runs[way]}
    if len(checksums) != 1:
        raise SystemExit(f"bench_heap: the ways disagree: checksums {sorted(checksums)}")
    medians = {way: statistics.median(run["seconds"] for run in runs[way]) for way in ways}
    table = "\n".join([
        f"numpy_heap: {format_size(args.size)} of arrays, {args.updates} random updates and a reduction, memory cgroup "
        f"{format_size(limit_bytes)}; heap and swap file in {args.dir}; median of {args.rounds} interleaved rounds",
        "", md_table(["way", "seconds", "vs kernel swap"],
                     [[way, f"{medians[way]:.2f}", f"{medians['kernel swap'] / medians[way]:.2f}x"] for way in ways])])
    print("\n" + table)
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    record = {"date": stamp, "machine": {"cores": os.cpu_count(), "kernel": platform.release()},
              "size": args.size, "limit": limit_bytes, "updates": args.updates, "rounds": args.rounds,
              "dir": str(args.dir), "checksum": checksums.pop(), "medians": medians, "runs": runs}
    (args.out / f"bench_heap_{stamp}.json").write_text(json.dumps(record, indent=2))
    (args.out / f"bench_heap_{stamp}.md").write_text(table + "\n")
    print(f"\nwritten to {args.out}/bench_heap_{stamp}.{{json,md}}")


if __name__ == "__main__":
    main()
