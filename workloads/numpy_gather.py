#!/usr/bin/env python3
"""numpy_gather: a numpy program over autopager.memmap (or numpy.memmap with --mmap).

Random gathers (a[indices].sum() in batches) over a file of float64 whose element i is i % 4096, so every
batch's sum is an exact integer that can be checked. Threads split the batches (numpy releases the GIL).
A run gathers --gathers elements, or as many batches as fit in --seconds. The indices are uniform, or with
--keys zipf skewed as workloads/common/keys.cpp skews the native workloads' keys. Metric: elements gathered a second.
With full validation (AUTOPAGER_VALIDATE unset or full) a chunked reduction (a.sum()) then reads the whole
file, untimed, and checks it; AUTOPAGER_VALIDATE=checksum skips it. The last line of stdout is the result as
JSON.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

PERIOD = 4096
SEED = 0x9A7
GENERATE_CHUNK = 1 << 20
REDUCE_CHUNK = 1 << 22
SHOW_PROGRESS_BYTES = 256 << 20


class DataError(Exception):
    """A missing or partial data file."""


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="numpy_gather", description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=512, help="array size in MiB (default 512)")
    parser.add_argument("--gathers", type=int, default=1 << 20, help="random elements gathered (default 2^20)")
    parser.add_argument("--seconds", type=float, default=0.0,
                        help="gather for this many seconds, as many batches as fit, instead of --gathers (0: --gathers)")
    parser.add_argument("--batch", type=int, default=1 << 14, help="elements gathered at once (default 2^14)")
    parser.add_argument("--data-dir", default="data", help="directory of the data (default data)")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="worker threads")
    parser.add_argument("--mmap", action="store_true", help="use numpy.memmap instead of autopager.memmap")
    parser.add_argument("--generate", action="store_true", help="only make the data (reused when present)")
    parser.add_argument("--keys", choices=("uniform", "zipf"), default="uniform",
                        help="how batches choose elements: uniform, or zipf (skewed, --zipf-exponent)")
    parser.add_argument("--zipf-exponent", type=float, default=0.99,
                        help="with --keys zipf: rank r's weight is 1/(r+1)^exponent, 0 < exponent < 1")
    args = parser.parse_args(argv)
    if not 0 < args.zipf_exponent < 1:
        parser.error(f"--zipf-exponent must be above 0 and below 1, got {args.zipf_exponent}")
    for name in ("size_mib", "gathers", "batch", "threads"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if not 0 <= args.seconds <= 86400:
        parser.error(f"--seconds must be from 0 to 86400, got {args.seconds}")
    args.validation = os.environ.get("AUTOPAGER_VALIDATE", "") or "full"
    if args.validation not in ("full", "checksum"):
        parser.error(f"AUTOPAGER_VALIDATE must be full or checksum, not '{args.validation}'")
    return args


def data_file(args: argparse.Namespace) -> tuple[str, int]:
    elements = (args.size_mib << 20) // 8
    return os.path.join(args.data_dir, f"numpy_gather-{args.size_mib}m.f64"), elements


def generate(path: str, elements: int) -> None:
    """Write the array under a temporary name, renamed when complete, and leave it out of the page cache."""
    if os.path.exists(path) and os.path.getsize(path) == elements * 8:
        print(f"reusing {path}", file=sys.stderr)
        return
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    partial = path + ".partial"
    show = elements * 8 >= SHOW_PROGRESS_BYTES
    with open(partial, "wb") as out:
        for start in range(0, elements, GENERATE_CHUNK):
            stop = min(elements, start + GENERATE_CHUNK)
            (np.arange(start, stop, dtype=np.int64) % PERIOD).astype(np.float64).tofile(out)
            if show and (start // GENERATE_CHUNK) % 64 == 0:
                print(f"writing {path}: {100 * start // elements}%", file=sys.stderr)
        out.flush()
        os.fdatasync(out.fileno())
        os.posix_fadvise(out.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    os.rename(partial, path)


def open_array(path: str, elements: int, kernel_mmap: bool) -> np.ndarray:
    if not os.path.exists(path) or os.path.getsize(path) != elements * 8:
        raise DataError(f"missing or partial data file {path}; make it with --generate (same --size-mib)")
    if kernel_mmap:
        return np.memmap(path, dtype=np.float64, mode="r", shape=(elements,))
    import autopager

    return autopager.memmap(path, dtype=np.float64, mode="r", shape=(elements,))


def mix64(x: np.ndarray) -> np.ndarray:
    """workloads/common/random.hpp's mix64 (SplitMix64's finalizer) of each element."""
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


class Zipf:
    """Ranks with weight 1/(r+1)^exponent over ``keys`` keys, scattered over them by a hash: KeyChooser::zipf of
    workloads/common/keys.cpp (Gray et al.'s closed form), here over numpy's uniform draws."""

    EXACT_TERMS = 1 << 20

    def __init__(self, keys: int, exponent: float):
        self.keys, self.exponent = keys, exponent
        self.zeta = self.harmonic(keys)
        self.alpha = 1 / (1 - exponent)
        self.eta = (1 - (2 / keys) ** (1 - exponent)) / (1 - self.harmonic(2) / self.zeta)

    def harmonic(self, n: int) -> float:
        exact = min(n, self.EXACT_TERMS)
        total = float(np.sum(np.arange(1, exact + 1, dtype=np.float64) ** -self.exponent))
        if n > exact:
            a, b = exact + 0.5, n + 0.5
            total += (b ** (1 - self.exponent) - a ** (1 - self.exponent)) / (1 - self.exponent)
        return total

    def indices(self, u: np.ndarray) -> np.ndarray:
        uz = u * self.zeta
        ranks = (self.keys * (self.eta * u - self.eta + 1) ** self.alpha).astype(np.uint64)
        ranks = np.where(uz < 1 + 0.5 ** self.exponent, np.uint64(1), ranks)
        ranks = np.where(uz < 1, np.uint64(0), np.minimum(ranks, np.uint64(self.keys - 1)))
        return (mix64(ranks ^ np.uint64(0x5A1F)) % np.uint64(self.keys)).astype(np.int64)


def gather_batch(array: np.ndarray, number: int, size: int, zipf: Zipf | None = None) -> str | None:
    """Gather batch ``number`` (its indices depend on the number alone) and check its sum: what went wrong, or None."""
    rng = np.random.default_rng([SEED, number])
    indices = zipf.indices(rng.random(size)) if zipf else rng.integers(0, array.shape[0], size=size, dtype=np.int64)
    gathered, expected = float(array[indices].sum()), int((indices % PERIOD).sum())
    return None if gathered == expected else f"batch {number} summed to {gathered:.0f}, expected {expected}"


def gather_counted(array: np.ndarray, gathers: int, batch: int, pool: ThreadPoolExecutor,
                   zipf: Zipf | None) -> tuple[int, list[str]]:
    """Batches 0, 1, ... of ``gathers`` random elements in all: how many were gathered, and what failed."""
    sizes = [min(batch, gathers - start) for start in range(0, gathers, batch)]
    problems = pool.map(lambda number: gather_batch(array, number, sizes[number], zipf), range(len(sizes)))
    return gathers, [problem for problem in problems if problem]


def gather_for(array: np.ndarray, seconds: float, batch: int, threads: int, pool: ThreadPoolExecutor,
               zipf: Zipf | None) -> tuple[int, list[str]]:
    """Batches 0, 1, ... until ``seconds`` have passed, the threads taking the next number each: how many elements
    were gathered, and what failed."""
    deadline, numbers = time.perf_counter() + seconds, itertools.count()

    def worker() -> tuple[int, list[str]]:
        done, problems = 0, []
        while not done or time.perf_counter() < deadline:
            problem = gather_batch(array, next(numbers), batch, zipf)
            problems += [problem] if problem else []
            done += batch
        return done, problems

    per_thread = [future.result() for future in [pool.submit(worker) for _ in range(threads)]]
    return sum(count for count, _ in per_thread), [problem for _, problems in per_thread for problem in problems]


def reduce_sum(array: np.ndarray, pool: ThreadPoolExecutor) -> float:
    starts = range(0, array.shape[0], REDUCE_CHUNK)
    return sum(pool.map(lambda start: float(array[start:start + REDUCE_CHUNK].sum()), starts))


def expected_reduction(elements: int) -> int:
    cycles, rest = divmod(elements, PERIOD)
    return cycles * (PERIOD * (PERIOD - 1) // 2) + rest * (rest - 1) // 2


def pager_stats(kernel_mmap: bool) -> dict | None:
    if kernel_mmap:
        return None
    import autopager

    return autopager.default_pager().stats()


def run(args: argparse.Namespace) -> int:
    path, elements = data_file(args)
    if args.generate:
        generate(path, elements)
        return 0
    array = np.asarray(open_array(path, elements, args.mmap))
    zipf = Zipf(elements, args.zipf_exponent) if args.keys == "zipf" else None
    with ThreadPoolExecutor(max_workers=args.threads) as pool:
        start = time.perf_counter()
        if args.seconds > 0:
            gathered, problems = gather_for(array, args.seconds, args.batch, args.threads, pool, zipf)
            checksum = "time-boxed, every batch checked"
        else:
            gathered, problems = gather_counted(array, args.gathers, args.batch, pool, zipf)
            checksum = f"gathered {gathered} elements, every batch checked"
        seconds = time.perf_counter() - start
        stats = pager_stats(args.mmap)
        if args.validation == "full":
            reduced = reduce_sum(array, pool)
            if reduced != expected_reduction(elements):
                problems.append(f"reduction {reduced:.0f}, expected {expected_reduction(elements)}")
    check = "; ".join(problems[:3]) or "ok"
    result = {"metric": "gathers/s", "value": gathered / seconds, "goal": "maximize",
              "mode": "mmap" if args.mmap else "umap", "check": check, "validation": args.validation,
              "workload": "numpy_gather", "threads": args.threads, "seconds": seconds, "checksum": checksum,
              "stats": stats}
    print(json.dumps(result), flush=True)
    if problems:
        print(f"numpy_gather: check failed: {check}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        return run(args)
    except (DataError, OSError, ValueError, ImportError) as error:
        print(f"numpy_gather: error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
