#!/usr/bin/env python3
"""Workloads on network-attached memory: STREAM, bfs and randio with their data on an nbdkit memory export
behind nbdkit's rate filter (a link of 10 Gbit/s, 1 Gbit/s, or none), with compression none, lz4 and zstd,
against the same data on the local disk; and nbdcopy's read speed from the same export as the reference.

Each workload runs as configured in configs/workload/NAME.yaml (data several times the pager buffer), with
the pager's defaults and --nbd URI (the data is copied onto the export before the timed part, untimed). Every
run gets a fresh server: `nbdkit --filter=stats [--filter=rate rate=LINK] memory SIZE`, whose stats file gives
the bytes that crossed the link. The variants run interleaved, --repeats rounds, and the medians are reported.

    sudo python3 -m experiments.bench_nbd [--workloads stream,bfs,randio] [--links none,10G,1G] [--repeats 3]

Writes <out>/nbd.md (the table), <out>/nbd.csv (medians) and <out>/runs.jsonl (every run), and prints the
table. Needs nbdkit and nbdcopy (Debian: nbdkit, libnbd-bin), root for userfaultfd, and built workloads
(build/workloads, or AUTOPAGER_BIN).
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from autopager.tuner.config import compose
from autopager.run.rounds import in_turn
from autopager.run.nbdkit import Nbdkit
from autopager.parameters import COMPRESSIONS, to_environment
from autopager.run.workloads import Workload
from experiments import RESULTS
from experiments.quiet import wait_for_quiet
from autopager.analysis.markdown import table

WORKLOADS = ("stream", "bfs", "randio")
LINKS = ("none", "10G", "1G")  # nbdkit rate filter's rate=, bits per second; none: no filter
LOCAL = "local disk"


@dataclass(frozen=True)
class Variant:
    label: str
    link: str | None          # None: the data on the local disk
    compression: str = "none"


def start_server(directory: Path, size: int, link: str) -> Nbdkit:
    """A fresh nbdkit memory export counting its bytes, behind the rate filter unless ``link`` is none."""
    rate = () if link == "none" else ("rate",)
    return Nbdkit(directory, "memory", str(size), *([] if link == "none" else [f"rate={link}"]), filters=rate,
                  stats=True)


def result_line(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


def run_workload(workload: Workload, variant: Variant, directory: Path, export_size: int, timeout: float) -> dict:
    env = {**os.environ, **to_environment({"buffer_size": workload.buffer_size, "compression": variant.compression})}
    argv = workload.argv()
    server = start_server(directory, export_size, variant.link) if variant.link else None
    try:
        if server:
            argv += ["--nbd", server.uri]
        started = time.monotonic()
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
        wall = time.monotonic() - started
    finally:
        moved = server.stop() if server else {"read": 0, "write": 0}
    if done.returncode != 0:
        return {"failed": done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"], "wall_s": wall}
    line = result_line(done.stdout)
    stats = line.get("stats") or {}
    return {"value": line["value"], "metric": line["metric"], "check": line["check"], "wall_s": wall,
            "bytes_read": moved["read"], "bytes_written": moved["write"],
            "pager_bytes_read": stats.get("bytes_read"), "pager_bytes_written": stats.get("bytes_written")}


def nbdcopy_read(data: Path, directory: Path, link: str, export_size: int) -> dict:
    """nbdcopy's read of `data`'s bytes from the export (copied there first), in MB/s."""
    server = start_server(directory, export_size, link)
    try:
        subprocess.run(["nbdcopy", str(data), server.uri], check=True)
        started = time.monotonic()
        subprocess.run(["nbdcopy", "--no-extents", server.uri, "null:"], check=True)
        seconds = time.monotonic() - started
    finally:
        server.stop()
    return {"value": export_size / seconds / 1e6, "metric": "MB/s", "wall_s": seconds}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--links", default=",".join(LINKS), help="rate filter rates (bits/s), none: no filter")
    parser.add_argument("--compressions", default=",".join(COMPRESSIONS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=1800, help="seconds for one run")
    parser.add_argument("--out", type=Path, default=RESULTS / "nbd")
    parser.add_argument("--override", action="append", default=[],
                        help="a config override for every workload, e.g. workload.size=8 (a quick check)")
    parser.add_argument("--quiet-below", type=float, default=None, metavar="LOAD",
                        help="before each workload, wait until the 1-minute load average is under LOAD (recorded in "
                        "<out>/loads.txt)")
    args = parser.parse_args()
    links = [link for link in args.links.split(",") if link]
    variants = [Variant(LOCAL, None)] + [Variant(f"nbd {link} {c}", link, c) for link in links
                                         for c in args.compressions.split(",") if c]
    args.out.mkdir(parents=True, exist_ok=True)
    runs_path = args.out / "runs.jsonl"
    medians = []
    with tempfile.TemporaryDirectory(prefix="autopager-nbd-bench-") as scratch, open(runs_path, "w") as runs:
        directory = Path(scratch)
        for name in args.workloads.split(","):
            config, _ = compose([f"workload={name}", *args.override])
            workload = Workload.from_config(config.workload, config.data_dir)
            workload.check()
            subprocess.run(workload.prepare_argv() or workload.argv() + ["--generate"], check=True)
            if args.quiet_below is not None:
                wait_for_quiet(args.quiet_below, args.out / "loads.txt", name)
            data = workload.data_paths()
            # Every data file on the export, each at a 1 MiB-aligned offset (mapping.cpp), with room to spare.
            export_size = sum(((p.stat().st_size >> 20) + 2) << 20 for p in data) + (64 << 20)
            results: dict[str, list[dict]] = {v.label: [] for v in variants}
            results.update({f"nbdcopy {link}": [] for link in links})
            for round_ in range(args.repeats):
                for variant in in_turn(variants, round_):
                    outcome = run_workload(workload, variant, directory, export_size, args.timeout)
                    results[variant.label].append(outcome)
                    runs.write(json.dumps({"workload": name, "variant": variant.label, "round": round_, **outcome}) + "\n")
                    runs.flush()
                    print(f"{name:8} {variant.label:20} round {round_}: {outcome}", file=sys.stderr)
                for link in links:
                    outcome = nbdcopy_read(data[0], directory, link, data[0].stat().st_size)
                    results[f"nbdcopy {link}"].append(outcome)
                    runs.write(json.dumps({"workload": name, "variant": f"nbdcopy {link}", "round": round_, **outcome}) + "\n")
            local = [r["value"] for r in results[LOCAL] if "value" in r]
            for label, outcomes in results.items():
                values = [r["value"] for r in outcomes if "value" in r]
                moved = [r.get("bytes_read", 0) + r.get("bytes_written", 0) for r in outcomes if "value" in r]
                medians.append({
                    "workload": name, "variant": label, "runs": len(values), "failed": len(outcomes) - len(values),
                    "metric": next((r["metric"] for r in outcomes if "metric" in r), ""),
                    "median": statistics.median(values) if values else None,
                    "vs_local": statistics.median(values) / statistics.median(local) if values and local and not label.startswith("nbdcopy") else None,
                    "bytes_moved_median": statistics.median(moved) if moved and not label.startswith(("nbdcopy", LOCAL)) else None,
                })
    with open(args.out / "nbd.csv", "w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=list(medians[0]))
        writer.writeheader()
        writer.writerows(medians)
    shown = lambda v, f: "" if v is None else format(v, f)  # noqa: E731
    lines = [table(["workload", "variant", "median", "metric", "vs local disk", "bytes over the link", "runs (failed)"],
                   [[m["workload"], m["variant"], shown(m["median"], ".4g"), m["metric"], shown(m["vs_local"], ".2f"),
                     shown(m["bytes_moved_median"], ",.0f"), f"{m['runs']} ({m['failed']})"] for m in medians])]
    lines += ["", "vs local disk: the median over the local disk's (for seconds, above 1 is slower). Bytes over the link: "
              "what the export's stats filter counted, the untimed copy onto the export (and back, for writable data) "
              "included. nbdcopy: MB/s reading the workload's first data file from the same export."]
    (args.out / "nbd.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
