#!/usr/bin/env python3
"""numpy_gather: a numpy program over autopager.memmap (or numpy.memmap with --mmap).

Random gathers (a[indices].sum() in batches) and a chunked reduction (a.sum()) over a file of float64
whose element i is i % 4096, so both sums are exact integers that can be checked. Threads split the
batches and the chunks (numpy releases the GIL in both). The last line of stdout is the result as JSON;
metric: seconds of the gathers and the reduction. Its checks re-read nothing, so it validates in full whatever
AUTOPAGER_VALIDATE asks.
"""
from __future__ import annotations

import argparse
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
    parser.add_argument("--batch", type=int, default=1 << 14, help="elements gathered at once (default 2^14)")
    parser.add_argument("--data-dir", default="data", help="directory of the data (default data)")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="worker threads")
    parser.add_argument("--mmap", action="store_true", help="use numpy.memmap instead of autopager.memmap")
    parser.add_argument("--generate", action="store_true", help="only make the data (reused when present)")
    args = parser.parse_args(argv)
    for name in ("size_mib", "gathers", "batch", "threads"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
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


def gather_sum(array: np.ndarray, batches: list[np.ndarray], pool: ThreadPoolExecutor) -> float:
    return sum(pool.map(lambda indices: float(array[indices].sum()), batches))


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
    indices = np.random.default_rng(SEED).integers(0, elements, size=args.gathers, dtype=np.int64)
    batches = [indices[start:start + args.batch] for start in range(0, args.gathers, args.batch)]
    with ThreadPoolExecutor(max_workers=args.threads) as pool:
        start = time.perf_counter()
        gathered = gather_sum(array, batches, pool)
        reduced = reduce_sum(array, pool)
        seconds = time.perf_counter() - start
    stats = pager_stats(args.mmap)
    expected_gathered = int((indices % PERIOD).sum())
    problems = []
    if gathered != expected_gathered:
        problems.append(f"gathered sum {gathered:.0f}, expected {expected_gathered}")
    if reduced != expected_reduction(elements):
        problems.append(f"reduction {reduced:.0f}, expected {expected_reduction(elements)}")
    check = "; ".join(problems) or "ok"
    result = {"metric": "seconds", "value": seconds, "goal": "minimize", "mode": "mmap" if args.mmap else "umap",
              "check": check, "validation": "full", "workload": "numpy_gather", "threads": args.threads,
              "checksum": f"gathered {gathered:.0f} reduced {reduced:.0f}", "stats": stats}
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
