"""autopager.memmap against numpy.memmap on an out-of-core file, with the page cache dropped before each run.

Two kernels over a float64 file several times larger than the pager's buffer:
  sum     np.sum(a): one sequential pass
  gather  a[idx] for random idx (fixed seed, unsorted)
timed for numpy.memmap (the kernel's mmap and page cache, with the device's read-ahead) and for
autopager.memmap at several page sizes, each without and with read-ahead: the median of several runs,
interleaved across methods. Dropping the page cache needs root; without it the figures are marked warm.

    python -m experiments.bench_numpy                       # 2 GiB file, 256 MiB buffer, 3 runs
    python -m experiments.bench_numpy --size 1GiB --buffer 128MiB --runs 5 --page-sizes 4KiB,1MiB --read-ahead 0

Needs the package: `pip install .`, or PYTHONPATH=. with the native module built. Prints a table and
writes it, with the raw times, to results/numpy/.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Callable, Optional

import numpy as np

import autopager
from autopager.run.page_cache import drop_page_cache
from autopager.parameters import format_size, parse_size
from experiments import RESULTS
from autopager.analysis.markdown import table

OUT = RESULTS / "numpy"


def make_data_file(path: Path, size: int) -> None:
    """float64 values 0, 1, 2, ... so that every kernel's result can be checked."""
    if path.exists() and path.stat().st_size == size:
        return
    count, chunk = size // 8, 1 << 24
    with open(path, "wb") as file:
        for start in range(0, count, chunk):
            np.arange(start, min(start + chunk, count), dtype=np.float64).tofile(file)


def time_kernel(open_array: Callable[[], np.ndarray], kernel: Callable[[np.ndarray], object],
                check: Callable[[object], bool]) -> tuple[float, bool]:
    """Seconds of `kernel` on a freshly opened array with a cold cache (opening is not timed)."""
    cold = drop_page_cache()
    array = open_array()
    start = time.perf_counter()
    result = kernel(array)
    seconds = time.perf_counter() - start
    if not check(result):
        raise AssertionError(f"wrong result from {kernel.__name__}")
    del array
    return seconds, cold


def main(argv: Optional[list] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", default="2GiB", help="data file size (default 2GiB)")
    parser.add_argument("--buffer", default="256MiB", help="autopager buffer_size (default 256MiB)")
    parser.add_argument("--page-sizes", default="64KiB,256KiB,1MiB",
                        help="autopager page sizes, comma separated (default 64KiB,256KiB,1MiB)")
    parser.add_argument("--read-ahead", default="0,4MiB",
                        help="read-ahead amounts in bytes, comma separated; each becomes read_ahead = amount // "
                             "page_size pages for every page size (default 0,4MiB)")
    parser.add_argument("--gather", type=int, default=5_000, help="random indices gathered (default 5000)")
    parser.add_argument("--runs", type=int, default=3, help="runs per figure; the median is reported")
    parser.add_argument("--data-dir", default=os.environ.get("AUTOPAGER_DATA_DIR")
                        or os.path.join(tempfile.gettempdir(), "autopager-bench"))
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)

    size, buffer_size = parse_size(args.size), parse_size(args.buffer)
    page_sizes = [parse_size(p) for p in args.page_sizes.split(",")]
    read_aheads = [parse_size(r) for r in args.read_ahead.split(",")]
    data_dir = Path(args.data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / f"bench_numpy_{format_size(size)}.f64"
    make_data_file(path, size)
    count = size // 8
    idx = np.random.default_rng(0).integers(0, count, args.gather)

    def total(a):
        return np.sum(a)

    def gather(a):
        return a[idx]

    kernels = {"sum": (total, lambda r: r == count * (count - 1) / 2),
               "gather": (gather, lambda r: np.array_equal(r, idx.astype(np.float64)))}
    methods = {"numpy.memmap": lambda: np.memmap(path, dtype=np.float64, mode="r")}
    for page_size in page_sizes:
        for read_ahead in sorted({amount // page_size for amount in read_aheads}):
            methods[f"autopager {format_size(page_size)} ra={read_ahead}"] = (
                lambda p=page_size, r=read_ahead: autopager.memmap(path, dtype=np.float64, mode="r", page_size=p,
                                                                   buffer_size=buffer_size, read_ahead=r))

    # Runs are interleaved (every method once per round) so that a change in machine load hits all alike.
    times = {(name, kernel): [] for name in methods for kernel in kernels}
    all_cold = True
    for round_number in range(1, args.runs + 1):
        for name, open_array in methods.items():
            for kernel_name, (kernel, check) in kernels.items():
                seconds, cold = time_kernel(open_array, kernel, check)
                times[name, kernel_name].append(seconds)
                all_cold &= cold
            print(f"round {round_number}: {name:26s} sum {times[name, 'sum'][-1]:8.3f} s   "
                  f"gather {times[name, 'gather'][-1]:8.3f} s", flush=True)
    rows = []
    for name in methods:
        row = {"method": name}
        for kernel_name in kernels:
            row[kernel_name] = statistics.median(times[name, kernel_name])
            row[f"{kernel_name}_runs"] = times[name, kernel_name]
        rows.append(row)

    table = format_table(rows, size, buffer_size, args, all_cold)
    print("\n" + table)
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    record = {"date": stamp, "machine": {"cores": os.cpu_count(), "kernel": platform.release(),
                                         "memory": format_size(memory >> 20 << 20)},
              "file_size": size, "buffer_size": buffer_size, "gather": args.gather, "runs": args.runs,
              "page_cache_dropped": all_cold, "rows": rows}
    (args.out / f"bench_numpy_{stamp}.json").write_text(json.dumps(record, indent=2))
    (args.out / f"bench_numpy_{stamp}.md").write_text(table + "\n")
    print(f"\nwritten to {args.out}/bench_numpy_{stamp}.{{json,md}}")


def format_table(rows: list, size: int, buffer_size: int, args: argparse.Namespace, cold: bool) -> str:
    baseline = rows[0]
    lines = [f"np.sum and a[idx] ({args.gather} random idx) over a {format_size(size)} float64 file, "
             f"autopager buffer {format_size(buffer_size)} (ra: read_ahead in pages); median of {args.runs} "
             f"interleaved runs, page cache "
             f"{'dropped before each run' if cold else 'NOT dropped (not root): warm figures'}",
             "",
             table(["method", "sum (s)", "sum GB/s", "sum vs numpy.memmap", "gather (s)", "gather vs numpy.memmap"],
                   [[row["method"], f"{row['sum']:.3f}", f"{size / row['sum'] / 1e9:.2f}",
                     f"{baseline['sum'] / row['sum']:.2f}x", f"{row['gather']:.3f}",
                     f"{baseline['gather'] / row['gather']:.2f}x"] for row in rows])]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
