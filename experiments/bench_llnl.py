#!/usr/bin/env python3
"""LLNL UMap's own programs, umapsort and bfs, on LLNL's library, on ours and on the kernel's mmap.

The programs are LLNL's, unchanged and built once against LLNL UMap; the same binaries run with our
libumap.so first on the library path (the UMap C API is the same). Give LLNL UMap's sources
(``--llnl-source UMAP_DIR --llnl-apps-source APPS_DIR``: checkouts of github.com/LLNL/umap at v2.1.0 and of
github.com/LLNL/umap-apps), built once into ``DATA_DIR/llnl-umap`` (experiments/llnl_build.py), or a directory
LLNL UMap was installed into (``--llnl PREFIX``: ``PREFIX/bin/umapsort``, ``PREFIX/bin/bfs``,
``PREFIX/lib/libumap.so``, both programs loading libumap.so); without either there is nothing to run and the
benchmark says so.

Each round runs every variant once, in a fresh order, with the page cache dropped before each run; the
kernel's mmap runs in a memory cgroup of the pager's buffer plus ``--mmap-headroom``. Medians over the
rounds; ratios are taken within a round. The load average is recorded before every run.

    sudo python3 -m experiments.bench_llnl --llnl-source umap --llnl-apps-source umap-apps [--rounds 3]
    sudo python3 -m experiments.bench_llnl --llnl /opt/llnl-umap ...

The bfs graph is the R-MAT graph of our own bfs workload (``--scale``), written once in LLNL's CSR layout
(n+1 64-bit offsets, then the 64-bit neighbours) under ``--data-dir``. Results: ``<out>/runs.jsonl`` (every
run) and ``<out>/llnl.md`` (the tables).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import os
import random
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

from autopager import _native
from autopager.run.disk import bytes_read_from_disk, read_ahead_of_disk, storage
from autopager.machine import cpu_model, memory_bytes
from autopager.run.memory_limit import MemoryLimit
from autopager.run.page_cache import drop_page_cache
from autopager.parameters import ENV_VARS, format_size, parse_size
from autopager.run.workloads import locate_bin
from experiments import REPO, RESULTS
from experiments.llnl_build import add_source_arguments, llnl_prefix, without_shared_umap
from autopager.analysis.markdown import table

KERNEL = "mmap"
UMAP_DEFAULT_PAGE = 4096  # LLNL UMap's page size when none is given


@dataclasses.dataclass(frozen=True)
class Variant:
    library: str              # "ours", "llnl" or KERNEL
    page_size: int | None     # None: the library's own default
    settings: tuple[tuple[str, str], ...] = ()  # more of our paging parameters (name, value)
    disk_read_ahead_kib: int | None = None  # the kernel's: the disk's read-ahead for its runs (None: as it is)

    @property
    def label(self) -> str:
        if self.library == KERNEL:
            return KERNEL if self.disk_read_ahead_kib is None else f"{KERNEL}, read-ahead {self.disk_read_ahead_kib} KiB"
        size = "default" if self.page_size is None else format_size(self.page_size)
        more = "".join(f" {name}={value}" for name, value in self.settings)
        return f"{self.library} {size}{more}"


@dataclasses.dataclass
class Program:
    name: str
    argv: Callable[[int], list[str]]  # by page size; the kernel's mmap adds the program's own flag
    mmap_flag: str
    buffer_bytes: int
    metric: re.Pattern           # the program's own timing line
    check: re.Pattern            # what must be the same in every run

    def command(self, variant: Variant, page_size: int) -> list[str]:
        return self.argv(page_size) + ([self.mmap_flag] if variant.library == KERNEL else [])


def sort_program(args: argparse.Namespace, bin_dir: Path) -> Program:
    data = Path(args.data_dir) / "umapsort.data"
    total = parse_size(args.sort_size)
    return Program(
        "umapsort", lambda page: [str(bin_dir / "umapsort"), "-f", str(data), "-p", str(total // page),
                                  "-t", str(args.threads), "-N", "1"],
        "--usemmap", parse_size(args.buffer),
        re.compile(r"Sort took ([0-9.]+) seconds"), re.compile(r"Validate took"))


def llnl_graph(args: argparse.Namespace) -> tuple[Path, int, int]:
    """Our bfs workload's graph in LLNL's CSR layout, made once: (file, vertices, edges)."""
    data_dir = Path(args.data_dir)
    offsets_path, neighbours_path = (data_dir / f"bfs-s{args.scale}.off", data_dir / f"bfs-s{args.scale}.adj")
    if not offsets_path.exists():
        subprocess.run([str(locate_bin("bfs") / "bfs"), "--generate", "--scale", str(args.scale),
                        "--data-dir", str(data_dir)], check=True)
    offsets = np.memmap(offsets_path, dtype=np.uint64, mode="r")
    vertices, edges = len(offsets) - 1, int(offsets[-1])
    graph = data_dir / f"bfs-s{args.scale}.llnl-csr"
    expected = (vertices + 1 + edges) * 8
    if not graph.exists() or graph.stat().st_size < expected:
        print(f"writing {graph} ({expected / 2**30:.1f} GiB)", file=sys.stderr)
        neighbours = np.memmap(neighbours_path, dtype=np.uint32, mode="r")
        with open(graph.with_suffix(".tmp"), "wb") as out:
            out.write(np.asarray(offsets).tobytes())
            chunk = 1 << 26
            for start in range(0, edges, chunk):
                out.write(neighbours[start:start + chunk].astype(np.uint64).tobytes())
        graph.with_suffix(".tmp").rename(graph)
    return graph, vertices, edges


def bfs_program(args: argparse.Namespace, bin_dir: Path, buffer: str) -> Program:
    graph, vertices, edges = llnl_graph(args)
    return Program(
        f"bfs ({'in memory' if buffer == args.bfs_memory else buffer + ' buffer'})",
        lambda page: [str(bin_dir / "bfs"), "-n", str(vertices), "-m", str(edges), "-g", str(graph)],
        "-s", parse_size(buffer),
        re.compile(r"BFS took \(s\)\s+([0-9.]+)"), re.compile(r"^\d+\t\d+$", re.MULTILINE))


def run_once(program: Program, variant: Variant, args: argparse.Namespace, libraries: dict[str, Path]) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("UMAP_")}
    env["OMP_NUM_THREADS"] = str(args.threads)
    page = variant.page_size or UMAP_DEFAULT_PAGE
    if variant.library != KERNEL:
        env["LD_LIBRARY_PATH"] = str(libraries[variant.library])
        # Without a page size, a UMap buffer is counted in pages of its default size.
        env["UMAP_BUFSIZE"] = str(program.buffer_bytes // page)
        if variant.page_size is not None:
            env["UMAP_PAGESIZE"] = str(variant.page_size)
        elif variant.library == "ours":
            page = _native.page_size_for_buffer(program.buffer_bytes)  # what our pager picks for that buffer
        env.update({ENV_VARS[name]: value for name, value in variant.settings})
    else:
        env["LD_LIBRARY_PATH"] = str(libraries["llnl"])
    record = {"program": program.name, "variant": variant.label, "page_size": page, "load": os.getloadavg()[0],
              "command": " ".join(program.command(variant, page))}
    if not drop_page_cache():
        sys.exit("bench_llnl: dropping the page cache needs root")
    limit = program.buffer_bytes + parse_size(args.mmap_headroom) if variant.library == KERNEL else None
    with MemoryLimit(limit) if limit else _no_limit() as cgroup, \
            read_ahead_of_disk(Path(args.data_dir), variant.disk_read_ahead_kib):
        read_before = bytes_read_from_disk(Path(args.data_dir))
        start = time.perf_counter()
        try:
            proc = subprocess.run(program.command(variant, page), env=env, capture_output=True, text=True,
                                  timeout=args.timeout, preexec_fn=cgroup.enter if cgroup else None)
        except subprocess.TimeoutExpired:
            return {**record, "error": f"over {args.timeout:.0f} s"}
        wall = time.perf_counter() - start
        read_after = bytes_read_from_disk(Path(args.data_dir))
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or [""])[-1][-200:]
        return {**record, "error": f"exit {proc.returncode} after {wall:.1f} s: {last}"}
    record["wall"] = wall
    if read_before is not None and read_after is not None:
        record["read_gb"] = (read_after - read_before) / 1e9
    phase = program.metric.search(output)
    record["phase"] = float(phase.group(1)) if phase else None
    record["check"] = "\n".join(program.check.findall(output))
    return record


class _no_limit:
    def __enter__(self):
        return None

    def __exit__(self, *exc_info):
        return None


def median(runs: list[dict], key: str) -> float | None:
    values = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(values) if values else None


def program_table(program: Program, variants: list[Variant], runs: list[dict]) -> str:
    rows = []
    for variant in variants:
        mine = [r for r in runs if r["variant"] == variant.label]
        failed = [r["error"] for r in mine if "error" in r]
        wall = median(mine, "wall")
        shown = "; ".join(f"{r['wall']:.1f}" for r in mine if "wall" in r)
        wall_text = "-" if wall is None else f"{wall:.1f}"
        phase = median(mine, "phase")
        phase_text = "-" if phase is None else f"{phase:.1f}"
        read = median(mine, "read_gb")
        read_text = "-" if read is None else f"{read:.1f}"
        failure = f" ({failed[0]})" if failed else ""
        loads = ", ".join(f"{r['load']:.2f}" for r in mine)
        rows.append([variant.label, wall_text, f"{shown}{failure}", phase_text, read_text, loads])
    checks = {r["check"] for r in runs if "check" in r}
    header = ["variant", "wall s (median)", "runs", "phase s (median)", "GB read from the disk (median)",
              "load at start"]
    return (table(header, rows)
            + f"\n\nResult checks: {'the same in every run' if len(checks) <= 1 else 'DIFFER between runs'}.")


def variants_of(args: argparse.Namespace) -> list[Variant]:
    """What a round runs: both pagers at each --page-sizes, the kernel, ours alone at each --ours-page-sizes, the
    --defaults, the kernel at each --kernel-read-ahead, and ours with each --ours-with at every page size of ours."""
    sizes = [parse_size(s) for s in args.page_sizes.split(",")]
    variants = [Variant(lib, size) for size in sizes for lib in ("ours", "llnl")] + [Variant(KERNEL, None)]
    ours_sizes = [parse_size(s) for s in args.ours_page_sizes.split(",") if s]
    variants += [Variant("ours", size) for size in ours_sizes]
    variants += [Variant(library, None) for library in args.defaults.split(",") if library]
    variants += [Variant(KERNEL, None, disk_read_ahead_kib=int(kib)) for kib in args.kernel_read_ahead.split(",") if kib]
    for text in args.ours_with:
        settings = tuple(tuple(item.split("=", 1)) for item in text.split(","))
        unknown = [name for name, _ in settings if name not in ENV_VARS or name in ("page_size", "buffer_size")]
        if unknown:
            sys.exit(f"bench_llnl: --ours-with {text!r}: not a parameter besides page_size and buffer_size: {unknown}")
        variants += [Variant("ours", size, settings) for size in sizes + ours_sizes]
    return variants


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llnl", help="LLNL UMap's install prefix (bin/umapsort, bin/bfs, lib/libumap.so)")
    add_source_arguments(parser)
    parser.add_argument("--ours", default=str(REPO / "build" / "native"), help="the directory of our libumap.so")
    parser.add_argument("--programs", default="sort,bfs,bfs-memory")
    parser.add_argument("--page-sizes", default="1MiB,4MiB", help="page sizes run by both pagers")
    parser.add_argument("--ours-page-sizes", default="", help="page sizes run by our pager only, e.g. 4KiB,64KiB "
                        "(LLNL UMap's small pages take minutes on these programs)")
    parser.add_argument("--defaults", default="", help="pagers also run at their own defaults: ours, llnl or "
                        "ours,llnl (LLNL's are 4 KiB pages: about 700 s on the 4 GiB sort)")
    parser.add_argument("--ours-with", action="append", default=[], metavar="NAME=VALUE[,NAME=VALUE...]",
                        help="our library also at each page size with these parameters, e.g. direct_io=1,read_ahead=4 "
                        "(repeatable)")
    parser.add_argument("--kernel-read-ahead", default="", metavar="KiB[,KiB...]",
                        help="the kernel's mmap also with the disk's read-ahead set to each of these (e.g. 128, the "
                        "kernel's usual default), restored after each run; needs root")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--sort-size", default="4GiB")
    parser.add_argument("--buffer", default="1GiB", help="the pager buffer of the out-of-core runs")
    parser.add_argument("--bfs-memory", default="8GiB", help="the buffer of the in-memory bfs runs")
    parser.add_argument("--mmap-headroom", default="256MiB", help="the kernel's cgroup beyond the buffer")
    parser.add_argument("--scale", type=int, default=24)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--data-dir", default="/var/tmp/autopager-bench")
    parser.add_argument("--out", default=str(RESULTS / "llnl"))
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    llnl = llnl_prefix(args, Path(args.data_dir))
    if llnl is None:
        print("bench_llnl: LLNL UMap is not given (--llnl PREFIX, or --llnl-source and --llnl-apps-source): its "
              "umapsort and bfs programs are what this benchmark runs, so there is nothing to measure", file=sys.stderr)
        return 0
    libraries = {"llnl": llnl / "lib", "ours": Path(args.ours)}
    for library, path in libraries.items():
        if not (path / "libumap.so").exists():
            sys.exit(f"bench_llnl: no libumap.so in {path} ({library})")
    static = without_shared_umap(llnl)
    if static:
        sys.exit(f"bench_llnl: UMap is linked into {', '.join(map(str, static))}, not loaded as libumap.so, so our "
                 "library cannot stand in for LLNL's there: build them with --llnl-source and --llnl-apps-source")
    Path(args.data_dir).mkdir(parents=True, exist_ok=True)
    programs = {"sort": lambda: sort_program(args, llnl / "bin"),
                "bfs": lambda: bfs_program(args, llnl / "bin", args.buffer),
                "bfs-memory": lambda: bfs_program(args, llnl / "bin", args.bfs_memory)}
    chosen = [programs[name]() for name in args.programs.split(",")]
    variants = variants_of(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    shuffle = random.Random(0)
    sections = []
    with open(out / "runs.jsonl", "a") as raw:
        for program in chosen:
            runs = []
            for round_number in range(args.rounds):
                order = variants[:]
                shuffle.shuffle(order)
                for variant in order:
                    record = run_once(program, variant, args, libraries) | {"round": round_number}
                    runs.append(record)
                    raw.write(json.dumps(record) + "\n")
                    raw.flush()
                    shown = record.get("error") or f"{record['wall']:.1f} s"
                    print(f"{program.name} round {round_number + 1} {variant.label}: {shown} "
                          f"(load {record['load']:.2f})", file=sys.stderr, flush=True)
            sections.append(f"## {program.name}, buffer {format_size(program.buffer_bytes)}\n\n"
                            f"`{' '.join(program.command(Variant('ours', None), UMAP_DEFAULT_PAGE))}` (at 4 KiB pages; "
                            f"UMAP_PAGESIZE and UMAP_BUFSIZE set a variant's page and buffer)\n\n"
                            + program_table(program, variants, runs))
    report = (f"# LLNL UMap's programs: our library, LLNL's, the kernel's mmap\n\n"
              f"Machine: {cpu_model()}, {os.cpu_count()} hardware threads, {format_size(memory_bytes())} of memory, "
              f"Linux {platform.release()}; the data on {storage(Path(args.data_dir))} (the kernel's mmap reads "
              f"around a fault by up to its read-ahead). {args.threads} application threads; "
              f"{args.rounds} interleaved rounds; the kernel's mmap in a memory cgroup of the buffer + "
              f"{args.mmap_headroom}.\n\nCommand: `python3 -m experiments.bench_llnl "
              f"{' '.join(argv if argv is not None else sys.argv[1:])}`\n\n" + "\n\n".join(sections) + "\n")
    (out / "llnl.md").write_text(report)
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
