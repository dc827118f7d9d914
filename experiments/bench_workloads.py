#!/usr/bin/env python3
"""Out-of-core benchmark of the workloads: the pager with its default page size and a few others, beside
the kernel's mmap, under the same memory limit.

Each workload runs as configured in configs/workload/NAME.yaml (data several times the pager buffer).
Every run starts with the page cache dropped and runs in a child memory cgroup limited to
buffer_size + headroom (+ the program's own arrays, e.g. bfs's levels): the kernel's mmap gets that much
memory for its page cache, the pager gets its buffer and the rest for its private memory and the page
cache. --variant adds the pager with any other parameters. Each variant
runs --repeats times, the variants interleaved, and the median is reported. --build compares builds: every
pager variant runs with each build's workload programs, interleaved with the others.

    sudo python3 -m experiments.bench_workloads [--workloads bfs,sort] [--repeats 3]
    sudo python3 -m experiments.bench_workloads --build before=../old/build/workloads --build after=build/workloads
    sudo python3 -m experiments.bench_workloads --workloads bfs --page-sizes 2MiB --variant page_size=2MiB,huge_pages=on \
        --perf dTLB-load-misses

A variant with huge_pages on (or auto) has a free 2 MiB huge page for every 2 MiB of the workload's buffer during
that workload's runs: the pool (/proc/sys/vm/nr_hugepages) is grown by what is missing and put back after
(experiments/huge_page_pool.py); the report says what was done. In memory, the buffer larger than the data:
--set workload.buffer_size=... .

--perf EVENTS counts those events (perf stat -a, the whole machine: run it alone) over each run; the report gives
each one's medians, or says the machine has no such counter (a VM without the CPU's performance counters).

Writes <out>/workloads.md (the table), <out>/workloads.csv (medians) and <out>/runs.jsonl (every run),
and prints the table. Needs root (drop_caches, cgroups, userfaultfd) and built workloads (build/workloads,
or AUTOPAGER_BIN).
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import statistics
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from autopager.tuner.config import compose
from autopager.run.memory_limit import pager_memory
from autopager.parameters import CATEGORIES, PARAMETERS, TABLE, format_size, parse_size
from autopager.run.rounds import in_turn
from autopager.exec import environment_with
from autopager.run.disk import read_ahead_of_disk, storage
from autopager.run.runner import Measurement, Runner
from autopager.run.workloads import Workload
from experiments import REPO, RESULTS, pythonpath_with_repo, stop_on_termination
from experiments.huge_page_pool import huge_pages_for, huge_pages_free
from experiments.quiet import wait_for_quiet
from autopager.analysis.markdown import table

WORKLOADS = ("bfs", "sort", "kv_readseq", "kv_readrandom", "kv_readreverse", "randio", "stream", "lookup",
             "numpy_gather")
KERNEL = "mmap"


@dataclass
class Variant:
    label: str
    pager: bool             # False: the kernel's mmap
    params: dict[str, int | str] = field(default_factory=dict)  # paging parameters given; the others: the pager's own
    programs: Path | None = None  # the workload programs of this build (AUTOPAGER_BIN); None: the environment's
    read_ahead_kib: int | None = None  # the kernel's: the disk's read-ahead during its runs (None: as it is)
    settings: dict[str, str] = field(default_factory=dict)  # variables of SETTINGS for its runs

    def run(self, workload: Workload, limit: int, timeout: float) -> Measurement:
        """One run in a memory cgroup of ``limit``, after the page cache is dropped (the tuner's runner)."""
        if not self.pager:
            with read_ahead_of_disk(workload.data_dir, self.read_ahead_kib):
                return Runner(workload.kernel_mmap(), memory_limit=limit).measure({}, timeout)
        with environment_with(self.environment()):
            return Runner(workload, memory_limit=limit).measure({"buffer_size": workload.buffer_size,
                                                                 **self.params}, timeout)

    def command(self, workload: Workload) -> list[str]:
        """The command its runs run, in its build's environment (a transparent workload's names that preload)."""
        if not self.pager:
            return workload.kernel_mmap().argv()
        with environment_with(self.environment()):
            return workload.argv()

    def environment(self) -> dict[str, str]:
        """The variables its pager runs run with: its build's, then its settings."""
        return {**build_environment(self.programs), **self.settings}


def build_environment(directory: Path | None) -> dict[str, str]:
    """The variables that run the build whose workload programs are in ``directory`` (None: the environment's):
    AUTOPAGER_BIN, and that build's preload (``directory``/../libautopager_preload.so, for the transparent
    workloads) and Python package (``directory``/../python/autopager, for numpy_gather) where they lie beside
    its programs."""
    if directory is None:
        return {}
    values = {"AUTOPAGER_BIN": str(directory)}
    preload, package = directory.parent / "libautopager_preload.so", directory.parent / "python"
    if preload.is_file():
        values["AUTOPAGER_PRELOAD"] = str(preload)
    if (package / "autopager").is_dir():
        values["PYTHONPATH"] = os.pathsep.join(filter(None, [str(package), os.environ.get("PYTHONPATH")]))
    return values


def with_builds(variants: list[Variant], builds: list[str]) -> list[Variant]:
    """Each pager variant once a build (``LABEL=DIR``), labelled ``variant [LABEL]``; the kernel's once."""
    if not builds:
        return variants
    out = [v for v in variants if not v.pager]
    for text in builds:
        label, _, directory = text.partition("=")
        if not label or not directory or not Path(directory).is_dir():
            raise SystemExit(f"bench_workloads: --build {text!r}: not LABEL=DIR of a directory of workload programs")
        out += [Variant(f"{v.label} [{label}]", True, v.params, Path(directory).resolve(), v.settings)
                for v in variants if v.pager]
    return out


# Pager settings that are no tuned parameter, given to a variant's runs as their variables.
SETTINGS = {"keep_writes": "UMAP_KEEP_WRITES"}


def variant_of(text: str) -> Variant:
    """``page_size=1MiB,read_ahead=4,eviction=s3fifo``: a variant with those parameters (and SETTINGS), labelled
    by them."""
    params, settings = {}, {}
    for item in text.split(","):
        name, _, value = item.partition("=")
        if name not in (*PARAMETERS, *SETTINGS) or not value:
            raise SystemExit(f"bench_workloads: --variant {text!r}: {item!r} is not NAME=VALUE of a parameter "
                             f"({', '.join((*PARAMETERS, *SETTINGS))})")
        if name in CATEGORIES and value not in CATEGORIES[name]:
            raise SystemExit(f"bench_workloads: --variant {text!r}: {name} is one of {', '.join(CATEGORIES[name])}")
        if name in SETTINGS:
            settings[SETTINGS[name]] = str(int(value))
        else:
            params[name] = (parse_size(value) if TABLE[name].size else value if name in CATEGORIES else int(value))
    return Variant(" ".join(f"{name}={value}" for name, value in (item.split("=") for item in text.split(","))),
                   True, params, settings=settings)


@dataclass
class Row:
    workload: Workload
    limit: int
    runs: dict[str, list[dict]] = field(default_factory=dict)
    huge_pages: str = ""  # what the huge-page pool had for its runs

    def median(self, label: str) -> float | None:
        values = [r["value"] for r in self.runs.get(label, []) if r.get("value") is not None]
        return statistics.median(values) if values else None

    def failure(self, label: str) -> str | None:
        runs = self.runs.get(label, [])
        bad = [r["error"] for r in runs if r.get("error")]
        return bad[0] if bad and len(bad) == len(runs) else None


class PerfCounts:
    """``perf stat -a`` of ``events`` (comma-separated) while the block runs; ``counts`` is then each event's count,
    None where perf says the machine cannot count it."""

    def __init__(self, events: str):
        self.events, self.counts = events, {}

    def __enter__(self) -> PerfCounts:
        self.output = tempfile.NamedTemporaryFile("r", suffix=".perf")
        self.process = subprocess.Popen(["perf", "stat", "-a", "-x,", "-e", self.events, "-o", self.output.name],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return self

    def __exit__(self, *exc) -> None:
        self.process.send_signal(signal.SIGINT)
        self.process.wait()
        for line in self.output.read().splitlines():
            fields = line.split(",")
            if len(fields) > 2 and not line.startswith("#"):
                self.counts[fields[2]] = None if fields[0].startswith("<") else float(fields[0])
        self.output.close()


def run_once(workload: Workload, variant: Variant, limit: int, timeout: float, perf: str = "") -> dict:
    load = os.getloadavg()[0]
    if perf:
        with PerfCounts(perf) as counted:
            result = variant.run(workload, limit, timeout)
    else:
        result = variant.run(workload, limit, timeout)
    command = variant.command(workload)
    return {"workload": workload.name, "variant": variant.label, "params": variant.params, "limit": limit,
            "load": load, "command": " ".join(command), "wall": result.wall_seconds, "metric": workload.metric,
            "value": result.value if result.ok else None, "error": result.error or None, "stats": result.stats,
            **({"perf": counted.counts} if perf else {})}


def perf_report(rows: list[Row], variants: list[Variant], events: str) -> str:
    """Each event's median count a workload and variant, or why there is none."""
    def median_count(row: Row, label: str, event: str) -> float | None:
        counts = [r["perf"][event] for r in row.runs.get(label, []) if r.get("perf", {}).get(event) is not None]
        return statistics.median(counts) if counts else None

    text = ""
    for event in filter(None, events.split(",")):
        medians = [[median_count(row, v.label, event) for v in variants] for row in rows]
        if all(m is None for line in medians for m in line):
            text += f"\nperf stat: {event} is not supported on this machine (no such hardware counter in this VM)\n"
            continue
        lines = [[row.workload.name, *["-" if m is None else f"{m:.4g}" for m in line]] for row, line in zip(rows, medians)]
        text += (f"\n{event} (perf stat -a, median of the runs)\n\n"
                 + table(["workload", *[v.label for v in variants]], lines) + "\n")
    return text


def huge_pages_wanted(workload: Workload, variants: list[Variant]) -> int:
    """Free huge pages the runs need: a buffer's worth where a variant maps huge pages (on, or auto), else none."""
    if any(v.params.get("huge_pages") in ("on", "auto") for v in variants):
        return huge_pages_for(workload.buffer_size)
    return 0


def huge_page_report(rows: list[Row], variants: list[Variant]) -> str:
    """Each variant in huge pages against the one of the same parameters in the system's pages (huge_pages off or
    not given), where there is one."""
    def others(variant: Variant) -> dict:
        return {name: value for name, value in variant.params.items() if name != "huge_pages"}

    pairs = [(huge, plain) for huge in variants if huge.params.get("huge_pages") in ("on", "auto")
             for plain in variants if plain.pager and plain.programs == huge.programs
             and plain.params.get("huge_pages", "off") == "off" and others(plain) == others(huge)]
    if not pairs:
        return ""
    lines = [[row.workload.name, *[ratio_text(speedup(row.workload, row.median(huge.label), row.median(plain.label)))
                                   for huge, plain in pairs]] for row in rows]
    return ("\nHuge pages against the system's pages at the same parameters (speedup)\n\n"
            + table(["workload", *[f"{huge.label} vs {plain.label}" for huge, plain in pairs]], lines) + "\n")


def speedup(workload: Workload, value: float | None, baseline: float | None) -> float | None:
    if not value or not baseline:
        return None
    return baseline / value if workload.goal == "minimize" else value / baseline


def cell(row: Row, label: str) -> str:
    value = row.median(label)
    if value is None:
        failure = row.failure(label)
        return ("timeout" if failure.startswith("timed out") else failure.split(" ")[0]) if failure else "-"
    return f"{value:.3g}"


def best_pager_label(row: Row, labels: list[str]) -> str | None:
    measured = [(row.median(label), label) for label in labels if row.median(label) is not None]
    if not measured:
        return None
    pick = min if row.workload.goal == "minimize" else max
    return pick(measured)[1]


def ratio_text(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def summary_table(rows: list[Row], variants: list[Variant]) -> tuple[list[str], list[list[str]]]:
    pager_labels = [v.label for v in variants if v.pager]
    default_label = pager_labels[0]
    header = ["workload", "metric", "data", "buffer", "memory limit", *[v.label for v in variants],
              "best page", "best vs default", "best vs mmap"]
    lines = []
    for row in rows:
        w = row.workload
        best = best_pager_label(row, pager_labels)
        best_value = row.median(best) if best else None
        lines.append([w.name, f"{w.metric} ({'lower' if w.goal == 'minimize' else 'higher'} is better)",
                      f"{data_bytes(w) / 2**20:.0f}MiB", format_size(w.buffer_size),
                      format_size(row.limit), *[cell(row, v.label) for v in variants], best or "-",
                      ratio_text(speedup(w, best_value, row.median(default_label))),
                      ratio_text(speedup(w, best_value, row.median(KERNEL)))])
    return header, lines


def data_bytes(workload: Workload) -> int:
    return sum(path.stat().st_size for path in workload.data_paths() if path.exists())


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default=",".join(WORKLOADS), help="comma-separated config names")
    parser.add_argument("--page-sizes", default="16KiB,64KiB,1MiB,4MiB",
                        help="pager page sizes beside the pager's own default")
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=VALUE[,NAME=VALUE...]",
                        help="a pager variant with these parameters, e.g. page_size=1MiB,read_ahead=4,direct_io=1 "
                        "(repeatable)")
    parser.add_argument("--build", action="append", default=[], metavar="LABEL=DIR",
                        help="compare builds: every pager variant also runs with the compiled workload programs in "
                        "DIR (repeatable; e.g. before=../old/build/workloads), and with the preload and the Python "
                        "package beside them where there are (DIR/../libautopager_preload.so, DIR/../python/autopager "
                        "with its _native module); otherwise the lmdb workloads and numpy_gather run this checkout's")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a configuration override for every workload, e.g. workload.size=3072 (repeatable)")
    parser.add_argument("--kernel-read-ahead", default="",
                        help="comma-separated KiB: the kernel's mmap also with the disk reading ahead that much, in the "
                        "same rounds (e.g. 128, the kernel's usual default)")
    parser.add_argument("--perf", default="", metavar="EVENTS",
                        help="count these perf events over each run (perf stat -a), e.g. dTLB-load-misses")
    parser.add_argument("--repeats", type=int, default=3, help="runs a variant; the median is reported")
    parser.add_argument("--headroom", default="16MiB", help="memory limit beyond buffer_size (both modes)")
    parser.add_argument("--timeout", type=float, default=60, help="seconds a run; a variant that times out "
                        "once is not repeated")
    parser.add_argument("--data-dir", default=str(REPO / "data"), help="where the workloads keep their data")
    parser.add_argument("--quiet-below", type=float, default=None, metavar="LOAD",
                        help="before each workload, wait until the 1-minute load average is under LOAD (recorded in "
                        "<out>/loads.txt)")
    parser.add_argument("--out", default=str(RESULTS / "workloads"))
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if os.geteuid() != 0:
        sys.exit("bench_workloads: run as root (drop_caches, memory cgroups, userfaultfd)")
    stop_on_termination("bench_workloads")
    variants = [Variant(KERNEL, False)]
    variants += [Variant(f"{KERNEL} ra={kib}KiB", False, read_ahead_kib=int(kib))
                 for kib in args.kernel_read_ahead.split(",") if kib]
    variants += [Variant("pager defaults", True)]
    variants += [Variant(format_size(parse_size(s)), True, {"page_size": parse_size(s)})
                 for s in args.page_sizes.split(",") if s]
    variants += [variant_of(text) for text in args.variant]
    variants = with_builds(variants, args.build)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    headroom = parse_size(args.headroom)
    os.environ["PYTHONPATH"] = pythonpath_with_repo()  # numpy_gather
    rows = []
    load_before = os.getloadavg()[1]
    with open(out / "runs.jsonl", "w") as raw:
        for name in args.workloads.split(","):
            config, _ = compose([f"workload={name}", f"data_dir={args.data_dir}", *args.set])
            workload = Workload.from_config(config.workload, config.data_dir)
            workload.data_dir.mkdir(parents=True, exist_ok=True)
            if workload.prepare_argv():
                subprocess.run(workload.prepare_argv(), check=True)
            if args.quiet_below is not None:
                wait_for_quiet(args.quiet_below, out / "loads.txt", name)
            row = Row(workload, pager_memory(workload, args.headroom))
            rows.append(row)
            with huge_pages_free(huge_pages_wanted(workload, variants)) as row.huge_pages:
                for repeat in range(args.repeats):
                    for variant in in_turn(variants, repeat):
                        earlier = row.runs.setdefault(variant.label, [])
                        if any((r.get("error") or "").startswith("timed out") for r in earlier):
                            continue
                        result = run_once(workload, variant, row.limit, args.timeout, args.perf)
                        earlier.append(result)
                        raw.write(json.dumps(result) + "\n")
                        raw.flush()
                        shown = result["error"] or f"{result['value']:.4g} {result['metric']}"
                        print(f"{name} {variant.label} #{repeat + 1}: {shown}", file=sys.stderr, flush=True)
    header, lines = summary_table(rows, variants)
    run_loads = [run["load"] for row in rows for runs in row.runs.values() for run in runs]
    with open(out / "workloads.csv", "w", newline="") as f:
        csv.writer(f).writerows([header, *lines])
    report = (f"# Workloads out of core: pager page sizes vs kernel mmap\n\n"
              f"Machine: {platform.node()}, {os.cpu_count()} cores, Linux {platform.release()}. "
              f"Medians of {args.repeats} runs (page cache dropped before each); every run in a memory cgroup "
              f"limited to the memory limit column (buffer + {format_size(headroom)} headroom + the program's "
              f"own arrays). Other pager parameters at their defaults; \"pager defaults\": no parameter "
              f"given, the pager's own choice. timeout: a run took over "
              f"{args.timeout:.0f} s (not repeated). Storage of the data (the kernel's mmap reads around a fault "
              f"by up to its read-ahead): {storage(Path(args.data_dir))}. "
              f"Load average (5 min) at start and end: {load_before:.1f}, {os.getloadavg()[1]:.1f}; "
              f"(1 min) at the start of a run: at most {max(run_loads, default=0):.2f}.\n\n"
              f"Command: `python3 -m experiments.bench_workloads {' '.join(argv or sys.argv[1:])}`\n\n"
              + "".join(f"Huge pages for {row.workload.name}: {row.huge_pages}.\n\n" for row in rows
                        if huge_pages_wanted(row.workload, variants))
              + table(header, lines) + "\n" + huge_page_report(rows, variants)
              + (perf_report(rows, variants, args.perf) if args.perf else ""))
    (out / "workloads.md").write_text(report)
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
