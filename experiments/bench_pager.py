#!/usr/bin/env python3
"""Benchmark of the native pager (issue 2): autopager next to the bare userfaultfd floor, the kernel's
mmap of the same file, and fio on the same file.

Sections (each configuration is run --reps times, the page cache dropped before every disk run;
figures are medians, ratios are taken within one repetition and then their median):

  floor       uffd_floor: microseconds per 4 KiB fault of a minimal one-thread userfaultfd handler
  memory      the pager over its memory store: its own cost per 4 KiB fault, and a scan by page size
  random      random 4 KiB faults from a file larger than the buffer, fillers F: pager with 1, 2 and F
              application threads and with prefetch batches, the kernel's mmap with F threads, fio at
              iodepth F (O_DIRECT)
  sequential  a scan of the file by page size (buffered and O_DIRECT file store, with read-ahead), the
              kernel's mmap with its readahead, fio with 1 MiB reads

The pager's and the kernel mmap's disk runs each run in a memory cgroup of the pager's buffer plus
CAP_HEADROOM_MIB, so the kernel's page cache gets the memory the pager's buffer gets.

Writes <out>/README.md (tables, targets met or not), <out>/pager_bench.csv (one row a run) and
<out>/runs.jsonl (every raw result). Needs root (drop_caches, userfaultfd) and fio.

  python3 -m experiments.bench_pager --quick          # a small smoke run, a minute or two
  python3 -m experiments.bench_pager                  # the full benchmark, about 25 minutes
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from autopager.run.memory_limit import MemoryLimit
from autopager.run.page_cache import drop_page_cache
from experiments import REPO, RESULTS
from autopager.analysis.markdown import table

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30

# Targets of issue 2, "What it must reach".
RANDOM_TARGET = 0.9       # pager faults/s with F fillers over fio IOPS at iodepth F
SEQUENTIAL_TARGET = 1600  # MB/s with 1 MiB pages
FLOOR_TARGET = 1.3        # memory-store cost per 4 KiB fault over the floor's
FLOOR_ROW = "floor: bare userfaultfd round trip"
# Memory beside the buffer for a capped run: code, thread stacks, the fillers' staging slots.
CAP_HEADROOM_MIB = 64


@dataclass(frozen=True)
class Spec:
    """One configuration: a cell of a result table and the command that measures it."""
    section: str
    row: str
    column: str
    kind: str                 # floor | fault_bench | fio
    args: tuple = ()
    pinned: bool = False      # the whole process on CPU 0 (taskset)
    disk: bool = True         # drop the page cache before it
    capped: bool = False      # in a memory cgroup of the pager's buffer (plus CAP_HEADROOM_MIB)


@dataclass
class Plan:
    specs: list = field(default_factory=list)

    def add(self, *args, **kwargs):
        self.specs.append(Spec(*args, **kwargs))


def size_text(n: int) -> str:
    for unit, name in ((GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")):
        if n >= unit and n % unit == 0:
            return f"{n // unit} {name}"
    return f"{n} B"


def parse_list(text: str) -> list[int]:
    return [int(x, 0) for x in text.split(",") if x]


# ---------------------------------------------------------------------------------------------- plan

def make_plan(a) -> Plan:
    p = Plan()
    sections = set(a.sections.split(","))
    common = ("--seconds", str(a.seconds))
    buffer = ("--buffer-mib", str(a.buffer_mib))

    if "floor" in sections or "memory" in sections:
        mib = ("--mib", str(a.memory_mib))
        for place in ("any CPU", "1 CPU"):
            p.add("floor", FLOOR_ROW, place, "floor", mib, pinned=place == "1 CPU", disk=False)
            p.add("floor", "floor + one hand-off to a sleeping worker", place, "floor",
                  mib + ("--handoff", "sleep"), pinned=place == "1 CPU", disk=False)
        p.add("floor", "floor + one hand-off to a spinning worker", "any CPU", "floor",
              mib + ("--handoff", "spin"), disk=False)
        p.add("floor", "floor with 4 handlers each waiting on the userfaultfd (EPOLLEXCLUSIVE)", "any CPU", "floor",
              mib + ("--handlers", "4"), disk=False)

    if "memory" in sections:
        def memory(size_mib: int, buffer_mib: int, page_size: int, pattern: str) -> tuple:
            return ("--store", "memory", "--size", str(size_mib * MIB), "--buffer-mib", str(buffer_mib),
                    "--page-size", str(page_size), "--pattern", pattern)
        mem = memory(a.memory_mib, 2 * a.memory_mib, 4096, "random")
        for f in (1, 2):
            p.add("memory", f"pager, fillers {f}", "any CPU", "fault_bench", mem + ("--fillers", str(f)) + common,
                  disk=False)
        p.add("memory", "pager, fillers 1", "1 CPU", "fault_bench", mem + ("--fillers", "1") + common,
              pinned=True, disk=False)
        p.add("memory", "pager, fillers 1, evicting (region 4x buffer)", "any CPU", "fault_bench",
              memory(4 * a.memory_mib, a.memory_mib, 4096, "random") + ("--fillers", "1") + common, disk=False)
        for ps in a.page_sizes:
            row = size_text(ps)
            p.add("memory-scan", row, "floor", "floor",
                  ("--mib", str(a.scan_mib), "--page-size", str(ps), "--order", "sequential"), disk=False)
            scan = memory(a.scan_mib, 2 * a.scan_mib, ps, "sequential")
            p.add("memory-scan", row, "pager, fillers 1", "fault_bench", scan + ("--fillers", "1") + common,
                  disk=False)
            p.add("memory-scan", row, "pager, fillers 2, read_ahead 2", "fault_bench",
                  scan + ("--fillers", "2", "--read-ahead", "2") + common, disk=False)

    if "random" in sections:
        file = ("--file", a.data_file, "--pattern", "random")
        pager = file + buffer + ("--page-size", "4096", "--direct")
        for f in a.fillers:
            row = str(f)
            fs = ("--fillers", str(f), "--max-fault-events", str(max(f, 2)))
            p.add("random", row, "fio", "fio", ("randread", "4k", str(f)))
            # F handler threads, each reading a fault event, pread with O_DIRECT, then UFFDIO_COPY
            p.add("random", row, "uffd floor T=F", "floor",
                  ("--mib", str(a.file_size // MIB), "--file", a.data_file, "--seconds", str(a.seconds),
                   "--threads", str(f), "--handlers", str(f)))
            p.add("random", row, "pager T=1", "fault_bench", pager + fs + ("--threads", "1") + common, capped=True)
            p.add("random", row, "pager T=2", "fault_bench", pager + fs + ("--threads", "2") + common, capped=True)
            p.add("random", row, "pager T=F", "fault_bench", pager + fs + ("--threads", str(f)) + common,
                  capped=True)
            p.add("random", row, "pager T=1 prefetch F", "fault_bench",
                  pager + fs + ("--threads", "1", "--prefetch", str(f)) + common, capped=True)
            p.add("random", row, "mmap-private T=F", "fault_bench",
                  file + ("--backend", "mmap-private", "--threads", str(f)) + common, capped=True)
            p.add("random", row, "mmap-shared T=F", "fault_bench",
                  file + ("--backend", "mmap-shared", "--threads", str(f)) + common, capped=True)

    if "sequential" in sections:
        file = ("--file", a.data_file, "--pattern", "sequential")
        for ps in a.page_sizes:
            row = size_text(ps)
            pager = file + buffer + ("--page-size", str(ps))
            p.add("sequential", row, "pager buffered", "fault_bench", pager + ("--fillers", "2") + common,
                  capped=True)
            p.add("sequential", row, "pager direct", "fault_bench", pager + ("--fillers", "2", "--direct") + common,
                  capped=True)
            p.add("sequential", row, f"pager direct, read_ahead {a.read_ahead}", "fault_bench",
                  pager + ("--fillers", str(a.read_ahead_fillers), "--read-ahead", str(a.read_ahead),
                           "--direct") + common, capped=True)
        p.add("sequential", "kernel", "mmap-shared (default readahead)", "fault_bench",
              file + ("--backend", "mmap-shared") + common, capped=True)
        for qd in (1, 8):
            p.add("sequential", "fio", f"1 MiB reads, iodepth {qd}", "fio", ("read", "1m", str(qd)))
    return p


# ----------------------------------------------------------------------------------------------- run

def drop_caches() -> None:
    if not drop_page_cache():
        sys.exit("bench_pager: dropping the page cache needs root (echo 3 > /proc/sys/vm/drop_caches)")


def run_json(cmd: list[str], timeout: float, limit: MemoryLimit | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("UMAP_")}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                          preexec_fn=limit.enter if limit else None)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def fio_command(a, rw: str, bs: str, iodepth: str) -> list[str]:
    return ["fio", "--name=bench", f"--filename={a.data_file}", "--readonly", f"--rw={rw}", f"--bs={bs}",
            "--direct=1", f"--ioengine={a.fio_engine}", f"--iodepth={iodepth}", f"--runtime={a.seconds}",
            "--time_based", "--output-format=json"]


def run_fio(a, rw: str, bs: str, iodepth: str) -> dict:
    cmd = fio_command(a, rw, bs, iodepth)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=a.seconds * 3 + 60)
    if proc.returncode != 0:
        raise RuntimeError(f"fio failed: {proc.stderr.strip()[-2000:]}")
    job = json.loads(proc.stdout[proc.stdout.index("{"):])["jobs"][0]
    read = job["read"]
    cpu_seconds = (job["usr_cpu"] + job["sys_cpu"]) / 100 * job["job_runtime"] / 1e3
    return {"bench": "fio", "rw": rw, "bs": bs, "iodepth": int(iodepth), "pages_per_s": read["iops"],
            "mb_per_s": read["bw_bytes"] / 1e6, "us_per_page": read["clat_ns"]["mean"] / 1e3,
            "touch_p50_us": read["clat_ns"]["percentile"]["50.000000"] / 1e3,
            "touch_p99_us": read["clat_ns"]["percentile"]["99.000000"] / 1e3,
            "cpu_us_per_page": cpu_seconds * 1e6 / max(read["total_ios"], 1), "command": " ".join(cmd)}


def run_spec(a, spec: Spec) -> dict:
    if spec.disk:
        drop_caches()
    if spec.kind == "fio":
        return run_fio(a, *spec.args)
    binary = a.floor_bin if spec.kind == "floor" else a.bench_bin
    cmd = (["taskset", "-c", "0"] if spec.pinned else []) + [str(binary), *spec.args]
    if spec.capped:
        with MemoryLimit((a.buffer_mib + CAP_HEADROOM_MIB) * MIB) as limit:
            result = run_json(cmd, timeout=a.seconds * 4 + 120, limit=limit)
            result["memory_peak_bytes"] = limit.peak_bytes()
    else:
        result = run_json(cmd, timeout=a.seconds * 4 + 120)
    result["command"] = " ".join(cmd)
    if spec.kind == "floor":  # the names fault_bench uses, so that both fill the same columns
        result.update(pages_per_s=result["faults_per_s"], us_per_page=result["us_per_fault"],
                      touch_p50_us=result["p50_us"], touch_p99_us=result["p99_us"],
                      cpu_us_per_page=result["cpu_us_per_fault"], switches_per_page=result["switches_per_fault"])
    return result


def pressure(resource: str) -> float:
    """Share of the last 10 s in which some task waited for `resource` (Linux PSI), in %."""
    try:
        with open(f"/proc/pressure/{resource}") as f:
            return float(f.readline().split()[1].split("=")[1])
    except (OSError, IndexError, ValueError):
        return float("nan")


def run_measured(a, spec: Spec) -> dict:
    """run_spec, with how busy the machine was (other users of its 2 CPUs and its disk) around the run."""
    load_before = os.getloadavg()[0]
    result = run_spec(a, spec)
    result.update(load_before=load_before, load_after=os.getloadavg()[0], io_pressure=pressure("io"),
                  cpu_pressure=pressure("cpu"))
    return result


# ------------------------------------------------------------------------------------------- results

CSV_FIELDS = ["rep", "section", "row", "column", "bench", "backend", "store", "pattern", "direct", "threads",
              "fillers", "page_size", "read_ahead", "prefetch", "iodepth", "seconds", "pages", "pages_per_s",
              "mb_per_s", "us_per_page", "us_per_fault", "fault_service_mean_us", "fault_service_p99_us",
              "read_faults", "fills", "evictions", "major_faults", "cpu_user_s", "cpu_system_s", "cpu_us_per_page",
              "switches_per_page", "load_before", "load_after", "io_pressure", "cpu_pressure", "error", "command"]


class Results:
    def __init__(self, out: Path, rows: list[dict] | None = None):
        self.out = out
        self.rows: list[dict] = rows or []
        self.jsonl = None

    def start(self) -> None:
        """Begins a new run: empty results, runs.jsonl written from scratch."""
        self.out.mkdir(parents=True, exist_ok=True)
        self.rows = []
        self.jsonl = open(self.out / "runs.jsonl", "w")

    @classmethod
    def load(cls, out: Path) -> "Results":
        with open(out / "runs.jsonl") as f:
            return cls(out, [json.loads(line) for line in f if line.strip()])

    def add(self, rep: int, spec: Spec, result: dict) -> None:
        row = {"rep": rep, "section": spec.section, "row": spec.row, "column": spec.column, **result}
        self.rows.append(row)
        self.jsonl.write(json.dumps(row) + "\n")
        self.jsonl.flush()
        with open(self.out / "pager_bench.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
            w.writeheader()
            w.writerows(self.rows)

    def values(self, section, row, column, metric) -> dict[int, float]:
        """{rep: value} of one cell."""
        return {r["rep"]: r[metric] for r in self.rows
                if (r["section"], r["row"], r["column"]) == (section, row, column) and metric in r}

    def median(self, section, row, column, metric):
        v = list(self.values(section, row, column, metric).values())
        return statistics.median(v) if v else None

    def ratio(self, num: tuple, den: tuple, metric_num: str, metric_den: str | None = None):
        """Median over repetitions of num/den, each measured in the same repetition."""
        n = self.values(*num, metric_num)
        d = self.values(*den, metric_den or metric_num)
        r = [n[k] / d[k] for k in n if k in d and d[k]]
        return statistics.median(r) if r else None


METRIC_LABELS = {"touch_p50_us": "p50 µs", "cpu_us_per_page": "CPU µs", "switches_per_page": "switches"}


def fmt(v, digits=0) -> str:
    if v is None:
        return "-"
    return f"{v:,.{digits}f}"


def verdict(ok) -> str:
    return "-" if ok is None else ("**met**" if ok else "**not met**")


def floor_section(res: Results, targets: list) -> str:
    out = ["## Pager cost per 4 KiB fault (memory store) vs the bare userfaultfd floor", "",
           "One application thread touches every 4 KiB page of the region once, in random order; "
           "mean = run time / faults, p50 and p99 of the time of one touch. "
           "'any CPU': the scheduler places the threads; '1 CPU': the whole process pinned to CPU 0 "
           "(no cross-CPU wake-ups). Ratios: over the floor in the same repetition and placement. "
           "The hand-off rows are the floor plus what a fault reader passing the event to a filler adds; the "
           "EPOLLEXCLUSIVE row is a pool of handlers sharing the reading with no hand-off.", ""]
    rows = []
    cells = list(dict.fromkeys((x["section"], x["row"], x["column"]) for x in res.rows
                               if x["section"] in ("floor", "memory")))
    for section, r, place in cells:
        cell = (section, r, place)
        floor = ("floor", FLOOR_ROW, place)
        mean_ratio = res.ratio(cell, floor, "us_per_page")
        p50_ratio = res.ratio(cell, floor, "touch_p50_us")
        rows.append([f"{r} ({place})", fmt(res.median(*cell, "us_per_page"), 1),
                     fmt(res.median(*cell, "touch_p50_us"), 1), fmt(res.median(*cell, "touch_p99_us"), 1),
                     fmt(res.median(*cell, "fault_service_mean_us"), 1), fmt(res.median(*cell, "cpu_us_per_page"), 1),
                     fmt(res.median(*cell, "switches_per_page"), 2), fmt(mean_ratio, 2), fmt(p50_ratio, 2)])
        if r == "pager, fillers 1" and mean_ratio is not None:
            targets.append([f"memory store, 4 KiB fault, fillers 1 ({place}): within {FLOOR_TARGET}x of the floor",
                            f"{mean_ratio:.2f}x mean, {p50_ratio:.2f}x p50", verdict(mean_ratio <= FLOOR_TARGET)])
    out.append(table(["configuration", "mean µs per fault", "p50 µs", "p99 µs", "pager's service mean µs",
                      "CPU µs per fault (all threads)", "context switches per fault", "x floor (mean)", "x floor (p50)"], rows))
    scan_rows = [x for x in res.rows if x["section"] == "memory-scan"]
    scan_cols = list(dict.fromkeys(x["column"] for x in scan_rows))
    scan = [[r] + [fmt(res.median("memory-scan", r, c, "mb_per_s")) for c in scan_cols]
            + [fmt(res.ratio(("memory-scan", r, "pager, fillers 1"), ("memory-scan", r, "floor"), "mb_per_s"), 2)]
            for r in dict.fromkeys(x["row"] for x in scan_rows)]
    if scan:
        out += ["", "Sequential scan from memory, MB/s by page size: the floor's one handler thread "
                "(UFFDIO_COPY straight from the source) next to the pager over its memory store:", "",
                table(["page size"] + scan_cols + ["pager fillers 1 / floor"], scan)]
    return "\n".join(out)


def random_section(res: Results, targets: list) -> str:
    cols = ["fio", "uffd floor T=F", "pager T=1", "pager T=2", "pager T=F", "pager T=1 prefetch F",
            "mmap-private T=F", "mmap-shared T=F"]
    rows = []
    for f in dict.fromkeys(x["row"] for x in res.rows if x["section"] == "random"):
        cells = [fmt(res.median("random", f, c, "pages_per_s")) for c in cols]
        deep = res.ratio(("random", f, "pager T=F"), ("random", f, "fio"), "pages_per_s")
        ratios = [res.ratio(("random", f, c), ("random", f, "fio"), "pages_per_s")
                  for c in ("uffd floor T=F", "pager T=1", "pager T=1 prefetch F")]
        over_floor = res.ratio(("random", f, "pager T=F"), ("random", f, "uffd floor T=F"), "pages_per_s")
        rows.append([f] + cells + [fmt(deep, 2)] + [fmt(r, 2) for r in ratios] + [fmt(over_floor, 2)])
        if deep is not None:
            targets.append([f"random 4 KiB, {f} fillers, {f} faults in flight: >= {RANDOM_TARGET}x fio at iodepth {f}",
                            f"{deep:.2f}x", verdict(deep >= RANDOM_TARGET)])
    detail_cols = [("fio", "touch_p50_us"), ("uffd floor T=F", "touch_p50_us"), ("pager T=1", "touch_p50_us"),
                   ("pager T=F", "touch_p50_us"), ("mmap-private T=F", "touch_p50_us"), ("fio", "cpu_us_per_page"),
                   ("uffd floor T=F", "cpu_us_per_page"), ("pager T=1", "cpu_us_per_page"),
                   ("pager T=F", "cpu_us_per_page"), ("mmap-private T=F", "cpu_us_per_page"),
                   ("uffd floor T=F", "switches_per_page"), ("pager T=F", "switches_per_page"),
                   ("mmap-private T=F", "switches_per_page")]
    detail = [[f] + [fmt(res.median("random", f, c, m), 1) for c, m in detail_cols]
              for f in dict.fromkeys(x["row"] for x in res.rows if x["section"] == "random")]
    return "\n".join([
        "## Random 4 KiB faults from disk (faults/s)", "",
        "File larger than the pager's buffer, page cache dropped; pager file store with O_DIRECT. "
        f"Pager and mmap runs in a memory cgroup of the buffer plus {CAP_HEADROOM_MIB} MiB. "
        "Rows: fillers F (fio: iodepth F; mmap: F application threads, MADV_RANDOM). "
        "T: application threads; 'prefetch F': one thread prefetching batches of F pages ahead. "
        "Ratios: pager / fio in the same repetition; the target is judged on T=F (F faults in flight, as fio "
        "keeps F reads in flight). A prefetching thread also has its demand fault in flight, so 'prefetch F' may "
        "have up to F+1 reads outstanding. 'uffd floor T=F': the bare userfaultfd round trip from disk "
        "(uffd_floor --file): F application threads, F handler threads that each read one fault event, pread the "
        "page with O_DIRECT and install it with UFFDIO_COPY; what any userfaultfd pager serving one fault at a time "
        "per thread costs on this machine.", "",
        table(["F"] + cols + ["T=F / fio", "floor / fio", "T=1 / fio", "prefetch F / fio", "T=F / floor"], rows), "",
        "Latency of one read or fault (p50, µs; fio: completion latency), CPU time per page over all threads "
        "(µs; in this VM every I/O also pays virtio exits, fio included) and context switches per page:", "",
        table(["F"] + [f"{c} {METRIC_LABELS[m]}" for c, m in detail_cols], detail)])


def sequential_section(res: Results, targets: list) -> str:
    rows, best = [], None
    seq = [x for x in res.rows if x["section"] == "sequential"]
    pager_cols = list(dict.fromkeys(x["column"] for x in seq if x["column"].startswith("pager")))
    for r in dict.fromkeys(x["row"] for x in seq if x["column"].startswith("pager")):
        vals = [res.median("sequential", r, c, "mb_per_s") for c in pager_cols]
        rows.append([r] + [fmt(v) for v in vals])
        if r == "1 MiB":
            for c, v in zip(pager_cols, vals):
                if v is not None and (best is None or v > best[0]):
                    best = (v, c)
    other = [[f"{x_row}: {x_col}", fmt(res.median("sequential", x_row, x_col, "mb_per_s"))]
             for x_row, x_col in dict.fromkeys((x["row"], x["column"]) for x in seq if x["row"] in ("kernel", "fio"))]
    if best:
        targets.append([f"sequential scan, 1 MiB pages: >= {SEQUENTIAL_TARGET} MB/s", f"{best[0]:,.0f} MB/s ({best[1]})",
                        verdict(best[0] >= SEQUENTIAL_TARGET)])
    return "\n".join([
        "## Sequential scan from disk (MB/s)", "",
        "One application thread reads one word of every 4 KiB page in order; page cache dropped; the run "
        "stops at the deadline, so MB/s is over the part scanned. Pager and mmap runs in a memory cgroup of the "
        f"buffer plus {CAP_HEADROOM_MIB} MiB.", "",
        table(["page size"] + pager_cols, rows), "", "Baselines on the same file:", "",
        table(["baseline", "MB/s"], other)])


def run_metadata(a) -> dict:
    """What a report says about the run besides its results; kept in meta.json beside them."""
    return {
        "started": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"),
        "host": f"{platform.node()}: {os.cpu_count()} CPUs, "
                f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / GIB:.0f} GiB RAM, "
                f"kernel {platform.release()}",
        "commit": a.commit + (" (binaries not rebuilt: --no-build)" if a.no_build else ""),
        "file_size": a.file_size, "buffer_mib": a.buffer_mib, "seconds": a.seconds, "reps": a.reps,
        "fio_engine": a.fio_engine, "nice": a.nice, "command": " ".join(sys.argv),
    }


def write_report(meta: dict, res: Results) -> str:
    targets: list = []
    parts = []
    sections = set(x["section"] for x in res.rows)
    if sections & {"floor", "memory"}:
        parts.append(floor_section(res, targets))
    if "random" in sections:
        parts.append(random_section(res, targets))
    if "sequential" in sections:
        parts.append(sequential_section(res, targets))
    loads = [r[k] for r in res.rows for k in ("load_before", "load_after") if k in r]
    io_pressure = [r["io_pressure"] for r in res.rows if not math.isnan(r.get("io_pressure", math.nan))]
    busy = (f"1-minute load average during the runs (other users of the 2 CPUs): "
            f"{min(loads, default=0):.1f} to {max(loads, default=0):.1f}")
    if io_pressure:
        busy += (f"; disk pressure (PSI io some, avg10) "
                 f"{min(io_pressure):.0f}% to {max(io_pressure):.0f}%")
    head = [
        "# Benchmark of the native pager (issue 2)", "",
        f"Run {meta['started']} UTC on {meta['host']}, commit {meta['commit']}. "
        f"Data file {size_text(meta['file_size'])}, pager buffer {meta['buffer_mib']} MiB, {meta['seconds']} s a run, "
        f"{meta['reps']} repetitions (medians), fio engine {meta['fio_engine']}, runs at nice {meta['nice']}. "
        f"{busy}. Other sessions ran tests and benchmarks on the same CPUs and disk meanwhile: read the "
        f"same-repetition ratios, the CPU time and the context switches per fault rather than the absolute rates.", "",
        f"Command: `{meta['command']}`. Raw runs: pager_bench.csv, runs.jsonl.", "",
        "## Targets", "", table(["target", "measured", "verdict"], targets), ""]
    text = "\n".join(head + ["\n\n".join(parts), ""])
    (res.out / "README.md").write_text(text)
    return text


# ---------------------------------------------------------------------------------------------- main

def build(a) -> None:
    build_dir = Path(a.build_dir)
    if not (build_dir / "CMakeCache.txt").exists():
        subprocess.run(["cmake", "-S", str(REPO), "-B", str(build_dir), "-DCMAKE_BUILD_TYPE=Release",
                        "-DAUTOPAGER_BUILD_TESTS=OFF", "-DAUTOPAGER_BUILD_WORKLOADS=OFF",
                        "-DAUTOPAGER_BUILD_EXPERIMENTS=ON"] + (["-G", "Ninja"] if shutil.which("ninja") else []),
                       check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", str(build_dir), "--target", "fault_bench", "uffd_floor"], check=True,
                   stdout=subprocess.DEVNULL)


def source_commit() -> str:
    """HEAD, marked dirty when the pager's or the benchmark's sources differ from it."""
    git = ["git", "-C", str(REPO)]
    head = subprocess.run(git + ["rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(git + ["status", "--porcelain", "native", "experiments/pager"], capture_output=True,
                           text=True).stdout.strip()
    return head + ("-dirty" if dirty else "")


def make_data_file(path: Path, size: int) -> None:
    if path.exists() and path.stat().st_size == size:
        print(f"using the data file {path} ({size_text(size)})", flush=True)
        return
    print(f"writing {size_text(size)} to {path}", flush=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    chunk = 4 * MIB
    with open(path, "wb") as f:
        for _ in range(size // chunk):
            f.write(os.urandom(chunk))
        f.flush()
        os.fsync(f.fileno())


def fio_engine() -> str:
    probe = subprocess.run(["fio", "--name=probe", "--ioengine=io_uring", "--size=4k", "--filename=/dev/null",
                            "--rw=read", "--output-format=terse"], capture_output=True, text=True)
    return "io_uring" if probe.returncode == 0 else "libaio"


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a small smoke run: small file, 1 s runs, 1 repetition")
    ap.add_argument("--sections", default="floor,memory,random,sequential")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=4)
    ap.add_argument("--file-gib", type=float, default=4, help="size of the data file")
    ap.add_argument("--buffer-mib", type=int, default=256, help="pager buffer for the disk runs")
    ap.add_argument("--fillers", default="1,2,4,8,16,32", help="fillers F (and fio iodepths) of the random section")
    ap.add_argument("--page-sizes", default="4096,65536,1048576,4194304", help="page sizes of the scans")
    ap.add_argument("--read-ahead", type=int, default=16, help="read_ahead of the read-ahead scan column")
    ap.add_argument("--read-ahead-fillers", type=int, default=4, help="fillers of the read-ahead scan column")
    ap.add_argument("--memory-mib", type=int, default=256, help="region of the floor and memory-store fault runs")
    ap.add_argument("--scan-mib", type=int, default=1024, help="region of the floor and memory-store scans")
    ap.add_argument("--data-dir", default="/var/tmp/autopager-bench")
    ap.add_argument("--keep-data", action="store_true", help="keep the data file after the run")
    ap.add_argument("--build-dir", default=str(REPO / "build-bench"))
    ap.add_argument("--no-build", action="store_true", help="use the binaries already in --build-dir")
    ap.add_argument("--nice", type=int, default=-10,
                    help="niceness of the runs: other users of the 2 CPUs disturb the figures less (0: leave it)")
    ap.add_argument("--report-only", action="store_true",
                    help="rewrite README.md from the runs.jsonl and meta.json already in --out, running nothing")
    ap.add_argument("--out", default=None, help="results folder (default results/pager, or .../quick)")
    a = ap.parse_args(argv)
    if a.quick:
        a.reps, a.seconds, a.file_gib, a.buffer_mib = 1, 1, 0.5, 64
        a.fillers, a.page_sizes, a.memory_mib, a.scan_mib = "1,4", "4096,1048576", 32, 128
    a.fillers = parse_list(a.fillers)
    a.page_sizes = parse_list(a.page_sizes)
    a.file_size = int(a.file_gib * GIB) // (4 * MIB) * (4 * MIB)
    a.data_file = str(Path(a.data_dir) / "data.bin")
    a.out = Path(a.out) if a.out else RESULTS / "pager" / ("quick" if a.quick else "")
    a.bench_bin = Path(a.build_dir) / "experiments" / "fault_bench"
    a.floor_bin = Path(a.build_dir) / "experiments" / "uffd_floor"
    return a


def main(argv=None) -> int:
    a = parse_args(argv)
    if a.report_only:
        print(write_report(json.loads((a.out / "meta.json").read_text()), Results.load(a.out)))
        return 0
    if os.geteuid() != 0:
        sys.exit("bench_pager: run as root (drop_caches, userfaultfd)")
    if not shutil.which("fio"):
        sys.exit("bench_pager: fio is missing (apt-get install -y fio)")
    a.commit = source_commit()
    if not a.no_build:
        build(a)
    a.fio_engine = fio_engine()
    if a.nice:
        os.nice(a.nice)  # inherited by every run
    meta = run_metadata(a)
    plan = make_plan(a)
    needs_file = any(s.section in ("random", "sequential") for s in plan.specs)
    if needs_file:
        make_data_file(Path(a.data_file), a.file_size)
    res = Results(a.out)
    res.start()
    (a.out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    try:
        for rep in range(a.reps):
            for i, spec in enumerate(plan.specs):
                try:
                    result = run_measured(a, spec)
                except (RuntimeError, subprocess.TimeoutExpired, ValueError) as e:
                    print(f"[rep {rep + 1}/{a.reps} {i + 1}/{len(plan.specs)}] {spec.section} | {spec.row} | "
                          f"{spec.column}: FAILED: {e}", flush=True)
                    res.add(rep, spec, {"error": str(e)[-500:]})
                    continue
                res.add(rep, spec, result)
                print(f"[rep {rep + 1}/{a.reps} {i + 1}/{len(plan.specs)}] {spec.section} | {spec.row} | "
                      f"{spec.column}: {result.get('pages_per_s', result.get('faults_per_s', 0)):,.0f} pages/s, "
                      f"{result.get('mb_per_s', 0):,.1f} MB/s, "
                      f"{result.get('us_per_page', result.get('us_per_fault', 0)):.1f} µs", flush=True)
            write_report(meta, res)
    finally:
        if needs_file and not a.keep_data:
            Path(a.data_file).unlink(missing_ok=True)
    print(write_report(meta, res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
