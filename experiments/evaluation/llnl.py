"""LLNL UMap at the evaluation's sizes: its own programs (umapsort, bfs) with the pager's buffer, through
experiments/bench_llnl.py's programs and runs, at each of LLNL_PAGE_SIZES, and the same programs on our library
(standing in for LLNL's libumap.so) with our defaults and with the best tuned winner's parameters, one run each in
interleaved rounds. A figure is the median of the program's own timing line (the sort's, the search's: what our
workloads time); LLNL UMap's is its best page size's. A round gives the ratio of our pager over LLNL UMap at that
page size on LLNL's own program. Kept as ``<out>/llnl/<scale>/<workload>.json``; skipped, with a message, without
``--llnl PREFIX`` or ``--llnl-source`` and ``--llnl-apps-source``.
"""
from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any, Callable

from experiments import bench_llnl
from autopager.run.rounds import in_turn
from autopager.parameters import parse_size
from experiments.evaluation.plan import LLNL_PAGE_SIZES, MEMORY, LlnlSpec, Plan
from experiments.evaluation.rounds import TUNED, same_round_ratios
from experiments.evaluation.studies import Places

LLNL = "llnl"
OURS_DEFAULT = "default"


def result_path(places: Places, scale: str, workload: str) -> Path:
    return places.out / "llnl" / scale / f"{workload}.json"


def load_llnl(places: Places, scale: str, workload: str) -> dict[str, Any] | None:
    path = result_path(places, scale, workload)
    return json.loads(path.read_text()) if path.is_file() else None


def measure_llnl(spec: LlnlSpec, plan: Plan, places: Places, prefix: Path | None, timeout: float,
                 winner: Callable[[], tuple[str, dict[str, int]]]) -> dict[str, Any] | None:
    """The runs, saved and returned; None (with a message) when LLNL UMap is not given. ``winner`` gives the best
    tuned search's name and its winner's parameters (side_by_side.tuned_winner)."""
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
    libraries = {"llnl": prefix / "lib", "ours": Path(args.ours)}
    for library, path in libraries.items():
        if not (path / "libumap.so").exists():
            raise OSError(f"no libumap.so in {path} ({library})")
    method, tuned = winner()
    program = (bench_llnl.sort_program(args, prefix / "bin") if spec.workload == "sort"
               else bench_llnl.bfs_program(args, prefix / "bin", size.buffer))
    llnl = {page: bench_llnl.Variant("llnl", parse_size(page)) for page in LLNL_PAGE_SIZES}
    ours = {OURS_DEFAULT: bench_llnl.Variant("ours", None),
            TUNED: bench_llnl.Variant("ours", tuned["page_size"], tuple(
                (name, str(value)) for name, value in tuned.items() if name not in ("page_size", "buffer_size")))}
    contenders = {**{f"{LLNL} {page}": variant for page, variant in llnl.items()}, **ours}
    runs = []
    for round_ in range(spec.rounds):
        for name in in_turn(list(contenders), round_):
            run = bench_llnl.run_once(program, contenders[name], args, libraries) | {"round": round_,
                                                                                     "contender": name}
            shown = run.get("error") or ("no timing line" if run["phase"] is None else f"{run['phase']:.1f} s")
            print(f"evaluation: round {round_ + 1}/{spec.rounds}, {contenders[name].label}: {shown}", flush=True)
            runs.append(run)

    record = {"workload": spec.workload, "scale": spec.scale, "program": program.name, "buffer": size.buffer,
              "goal": "minimize", "tuned_method": method, "tuned_params": tuned, **figures_of(runs), "runs": runs}
    path = result_path(places, spec.scale, spec.workload)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")
    return record


def figures_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """From the runs (``contender``: ``llnl PAGE``, OURS_DEFAULT or TUNED; ``phase``, None or absent when the
    program printed no timing or failed): LLNL UMap's best page size, its median there and its median at each,
    our library's medians, the rounds of LLNL UMap at its best page size beside ours (``round``, ``contender``,
    ``value``), and the first failure."""
    def phases(name: str) -> list[float]:
        return [r["phase"] for r in runs if r["contender"] == name and r.get("phase") is not None]

    by_page = {page: phases(f"{LLNL} {page}") for page in LLNL_PAGE_SIZES}
    medians = {page: statistics.median(values) for page, values in by_page.items() if values}
    best = min(medians, key=medians.get) if medians else None
    ours = (OURS_DEFAULT, TUNED)
    rounds = [{"round": r["round"], "contender": LLNL if r["contender"] == f"{LLNL} {best}" else r["contender"],
               "value": r.get("phase")} for r in runs if r["contender"] in ours or r["contender"] == f"{LLNL} {best}"]
    failed = [f"{r['contender']}: {r['error']}" for r in runs if r.get("error")]
    return {"page_size": best, "value": medians.get(best), "values": by_page.get(best, []), "medians": medians,
            "ours": {name: statistics.median(phases(name)) if phases(name) else None for name in ours},
            "rounds": rounds, "error": failed[0] if failed else None if best else "no run of LLNL UMap finished"}


def ours_over_llnl(record: dict[str, Any]) -> dict[str, tuple[float, float, float]]:
    """Our pager on LLNL's program, with the tuned winner's parameters (TUNED) and with our defaults, over LLNL
    UMap at its best page size in the same rounds: the ratio of the medians and the range of the per-round ratios
    (empty for a record from before our library ran in its rounds)."""
    if "rounds" not in record:
        return {}
    rounds = {"goal": record["goal"], "runs": record["rounds"]}
    return {name: ratios[LLNL] for name in (TUNED, OURS_DEFAULT)
            if LLNL in (ratios := same_round_ratios(rounds, base=name))}
