"""Several workers against one: the same study on the synthetic workload with launcher.workers=4 and =1.

The synthetic workload sleeps for the time it reports, so trials running at the same time do not compete for
the CPU: a Ray cluster on this machine whose head declares 4 units of the node resource stands in for 4 nodes
(or give --address of a real cluster whose nodes declare one unit each). For each seed, an Ax study (the same
number of trials) with 1 worker, then with 4; reported: each one's best (from its table), the 4-worker best
over the 1-worker best (the target: within 5%), and the wall time of the 4-worker study over the 1-worker one
(the target: at most 0.35), and how busy the workers were: the time the nodes spent running trials (each row's
``run_started`` to ``run_ended``; a trial measured again counts its last run) over ``workers`` x the wall
time; what is left is the tuner's serial work (the defaults' first run alone, Ax's proposals) and start-up.

    python -m experiments.bench_launchers                      # runs of >= 1 s, 30 trials, 3 seeds
    python -m experiments.bench_launchers --size 20 --trials 4 --seeds 1 --initialization 2   # a try, in a minute

Needs ray (pip install '.[ray]'). Takes no figures on a loaded machine: run it on a quiet one. Writes a table
and the raw figures to results/launchers/.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

import pandas as pd

from experiments import RESULTS, pythonpath_with_repo
from autopager.analysis.markdown import table
from experiments.markdown import number
from experiments.ray_cluster import local_cluster

OUT = RESULTS / "launchers"
# the synthetic workload's search, runs of `size` ms at the optimum and up to ~10x that elsewhere
STUDY = ["workload=synthetic", "runner.page_cache=evict", "strategy=ax", "space=small", "study.save_profile=false"]


def tune(address: str, workers: int, seed: int, args: argparse.Namespace, home: Path) -> dict:
    name = f"w{workers}-s{seed}"
    command = [sys.executable, "-m", "autopager.cli.main", "tune", *STUDY, f"workload.size={args.size}",
               f"seed={seed}", f"budget.trials={args.trials}", f"strategy.initialization_trials={args.initialization}",
               "launcher=ray", f"launcher.address={address}", f"launcher.workers={workers}", f"study.name={name}",
               f"study.root={home / 'outputs'}", f"profile_dir={home / 'profiles'}", f"data_dir={home / 'data'}"]
    env = dict(os.environ, PYTHONPATH=pythonpath_with_repo())
    start = time.perf_counter()
    run = subprocess.run(command, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if run.returncode != 0:
        raise SystemExit(f"the study failed ({' '.join(command)}):\n{run.stderr[-3000:]}")
    rows = pd.read_csv(home / "outputs" / "synthetic" / name / "trials.csv")
    ok = rows[rows.status == "ok"]
    ran = rows.dropna(subset=["run_started", "run_ended"]).drop_duplicates(["run_started", "node"])  # not reused
    running = (pd.to_datetime(ran.run_ended) - pd.to_datetime(ran.run_started)).dt.total_seconds().sum()
    return {"workers": workers, "seed": seed, "trials": len(rows), "failed": int((rows.status != "ok").sum()),
            "best": float(ok.value.min()), "wall_seconds": wall, "busy": running / (workers * wall)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=1000, help="milliseconds a run at the optimum (default 1000)")
    parser.add_argument("--trials", type=int, default=30, help="trials after the defaults (default 30)")
    parser.add_argument("--initialization", type=int, default=10, help="Ax's Sobol trials (default 10)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--address", help="an existing Ray cluster (default: one started here)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="bench-launchers-"))
    cluster = nullcontext(args.address) if args.address else local_cluster([("head", args.workers)])
    records = []
    load = []
    with cluster as address:
        for seed in range(args.seeds):
            for workers in (1, args.workers):
                load.append(os.getloadavg()[0])
                records.append(tune(address, workers, seed, args, home))
                print(json.dumps(records[-1]), flush=True)
    frame = pd.DataFrame(records)
    one = frame[frame.workers == 1].set_index("seed")
    many = frame[frame.workers == args.workers].set_index("seed")
    compared = pd.DataFrame({"best_1": one.best, f"best_{args.workers}": many.best,
                             "best_ratio": many.best / one.best, "wall_1": one.wall_seconds,
                             f"wall_{args.workers}": many.wall_seconds, "wall_ratio": many.wall_seconds / one.wall_seconds,
                             "busy_1": one.busy, f"busy_{args.workers}": many.busy})
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    frame.to_csv(args.out / f"raw-{stamp}.csv", index=False)
    lines = [f"# {args.workers} workers against 1 (synthetic, runs of {args.size} ms at the optimum, "
             f"{args.trials} trials, {args.seeds} seeds)", "",
             f"load average before each study: {', '.join(f'{x:.2f}' for x in load)}", "",
             table(["seed", *compared.columns], [[seed, *map(number, row)] for seed, row in compared.iterrows()]), "",
             f"best within 5% of one worker's: {int((compared.best_ratio <= 1.05).sum())} of {len(compared)} seeds; "
             f"median wall time ratio {compared.wall_ratio.median():.3g} (target <= 0.35)"]
    (args.out / f"summary-{stamp}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
