"""LLNL UMap at the evaluation's sizes: its own programs (umapsort, bfs) with the pager's buffer, through
experiments/bench_llnl.py's programs and runs, at each of LLNL_PAGE_SIZES in interleaved rounds; its figure is
the best page size's median of the program's own timing line (the sort's, the search's: what our workloads
time). Kept as ``<out>/llnl/<scale>/<workload>.json``; skipped, with a message, without ``--llnl PREFIX`` or
``--llnl-source`` and ``--llnl-apps-source``.
"""
from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import bench_llnl
from autopager.confirmation import in_turn
from autopager.params import parse_size
from evaluation.plan import LLNL_PAGE_SIZES, MEMORY, LlnlSpec, Plan
from evaluation.studies import Places


def result_path(places: Places, scale: str, workload: str) -> Path:
    return places.out / "llnl" / scale / f"{workload}.json"


def load_llnl(places: Places, scale: str, workload: str) -> dict[str, Any] | None:
    path = result_path(places, scale, workload)
    return json.loads(path.read_text()) if path.is_file() else None


def measure_llnl(spec: LlnlSpec, plan: Plan, places: Places, prefix: Path | None, timeout: float) -> dict[str, Any] | None:
    """The runs, saved and returned; None (with a message) when LLNL UMap is not given."""
    saved = load_llnl(places, spec.scale, spec.workload)
    if saved is not None:
        return saved
    if prefix is None:
        print(f"evaluation: {spec.label} skipped: LLNL UMap is not given (--llnl PREFIX, its install directory, or "
              "--llnl-source and --llnl-apps-source, its sources)", flush=True)
        return None
    size = plan.size(spec.workload, spec.scale)
    args = bench_llnl.parse_args([
        "--llnl", str(prefix), "--data-dir", str(places.data_dir), "--buffer", size.buffer,
        "--bfs-memory", size.buffer if spec.scale == MEMORY else "0", "--timeout", str(timeout),
        "--rounds", str(spec.rounds), *(["--sort-size", f"{size.size}MiB"] if spec.workload == "sort"
                                         else ["--scale", str(size.size)])])
    libraries = {"llnl": prefix / "lib"}
    if not (libraries["llnl"] / "libumap.so").exists():
        raise OSError(f"no libumap.so in {libraries['llnl']}")
    program = (bench_llnl.sort_program(args, prefix / "bin") if spec.workload == "sort"
               else bench_llnl.bfs_program(args, prefix / "bin", size.buffer))
    variants = [bench_llnl.Variant("llnl", parse_size(page)) for page in LLNL_PAGE_SIZES]
    runs = []
    for round_ in range(spec.rounds):
        for variant in in_turn(variants, round_):
            run = bench_llnl.run_once(program, variant, args, libraries) | {"round": round_}
            shown = run.get("error") or ("no timing line" if run["phase"] is None else f"{run['phase']:.1f} s")
            print(f"evaluation: LLNL UMap {variant.label}: {shown}", flush=True)
            runs.append(run)
    by_page = {page: [r["phase"] for r in runs if r["variant"] == variant.label and r.get("phase") is not None]
               for page, variant in zip(LLNL_PAGE_SIZES, variants)}
    medians = {page: statistics.median(values) for page, values in by_page.items() if values}
    best = min(medians, key=medians.get) if medians else None
    record = {"workload": spec.workload, "scale": spec.scale, "program": program.name, "buffer": size.buffer,
              "page_size": best, "value": medians.get(best), "values": by_page.get(best, []),
              "medians": medians, "error": None if best else "no run finished", "runs": runs}
    path = result_path(places, spec.scale, spec.workload)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")
    return record
