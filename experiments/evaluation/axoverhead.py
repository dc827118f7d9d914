"""Ax's own time a trial on this machine, without the workload: the tuner's Ax strategy proposes a study's
trials over the comparison's space (sort's, ``experiments/configs/space/comparison.yaml``: the space of Ax against an
exhaustive grid in ``results/evaluation/ax_vs_grid.md``) and is told at once the cost the
synthetic workload's model gives each proposal (``autopager/synthetic.py``); each ask (a Sobol draw, or a model
fit and the acquisition's optimization) is timed, and so is the first strategy's construction (Ax's import).

Variants: Ax out of the box (its acquisition optimizer's defaults, torch with a thread a core), the same with
one torch thread, and the tuner's settings (``configs/strategy/ax.yaml``). One variant a process, since torch's
thread count is the process's: the rows accumulate in ``ax_overhead.csv``, summarized in ``ax_overhead.md``.
"""
from __future__ import annotations

import datetime
import os
import time
from pathlib import Path

import pandas as pd
from omegaconf import OmegaConf

from autopager.tuner.config import compose
from autopager.tuner.space import Space
from autopager.run.synthetic import cost
from experiments import CONFIG_SEARCH_PATH
from autopager.analysis.markdown import table as markdown_table
from experiments import markdown as md
from experiments.evaluation.plan import Size

SPACE = "comparison"
SORT = Size(32, "4MiB")  # the comparison's sort: 288 points with page sizes up to an eighth of the buffer
UNSET = {"acquisition_restarts": None, "acquisition_raw_samples": None}
VARIANTS = {
    "out-of-the-box": {"threads": os.cpu_count(), **UNSET},
    "one-thread": {"threads": 1, **UNSET},
    "tuner": {},
}
COLUMNS = ["variant", "seed", "trial", "proposed_by", "seconds", "import_seconds", "load", "finished", "command"]


def space_and_settings(variant: str) -> tuple[Space, dict]:
    config, _ = compose([CONFIG_SEARCH_PATH, "workload=sort", f"workload.size={SORT.size}", f"workload.buffer_size={SORT.buffer}",
                         f"space={SPACE}", f"space.page_size.max={SORT.largest_page}"])
    settings = {**OmegaConf.to_container(config.strategy, resolve=True), **VARIANTS[variant]}
    return Space(config.space, config.baseline), settings


def metric(params: dict) -> float:
    return cost(params["page_size"], params["fillers"], params["evictors"], params["evict_high_water"],
                params["evict_low_water"], params["read_ahead"])


def measure_once(variant: str, seed: int) -> list[dict]:
    space, settings = space_and_settings(variant)
    start = time.perf_counter()
    from autopager.tuner.strategies.ax import AxStrategy
    strategy = AxStrategy(space, "minimize", settings, seed)
    imported = time.perf_counter() - start
    strategy.tell(space.defaults, metric(space.defaults))
    rows = []
    for trial in range(1, int(settings["trials"]) + 1):
        start = time.perf_counter()
        params = strategy.ask()
        seconds = time.perf_counter() - start
        strategy.tell(params, metric(params))
        rows.append({"variant": variant, "seed": seed, "trial": trial, "proposed_by": strategy.proposed_by,
                     "seconds": seconds, "import_seconds": imported if trial == 1 else None,
                     "load": os.getloadavg()[0]})
    return rows


def summary(table: pd.DataFrame) -> str:
    rows = []
    for variant, part in table.groupby("variant", sort=False):
        per_study = part.groupby(["finished", "seed"]).seconds.sum()
        model = part[part.proposed_by == "MBM"].seconds
        rows.append([variant, len(per_study), md.number(part[part.proposed_by == "Sobol"].seconds.mean()),
                     md.number(model.mean()), md.number(model.max()), md.number(per_study.mean()),
                     md.number(part.import_seconds.dropna().mean()), f"{part.load.min():.1f}-{part.load.max():.1f}"])
    header = ["variant", "studies", "Sobol ask, mean (s)", "model ask, mean (s)", "model ask, max (s)",
              "all asks of a study (s)", "Ax import and setup (s)", "load average"]
    return "\n\n".join([
        "# Ax's own time a trial on this machine",
        f"Generated {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC from `ax_overhead.csv`, "
        "made by " + ", ".join(f"`{c}`" for c in table.command.unique()) + ". The tuner's Ax strategy over the "
        f"comparison's space (`experiments/configs/space/{SPACE}.yaml`, sort's sizes: 288 points), told the synthetic "
        "workload's cost model at once, so only Ax's time is measured: a study's 30 asks (the defaults' trial "
        "given, Sobol draws, then the model's fit and acquisition each trial). Variants: `out-of-the-box` (Ax's "
        "acquisition optimizer: 20 restarts, 1024 raw samples; torch with a thread a core), `one-thread` (the "
        "same, one torch thread), `tuner` (`configs/strategy/ax.yaml`: one thread, 8 restarts, 256 raw samples).",
        markdown_table(header, rows)])


def measure_overhead(variant: str, seeds: int, out: Path, command: str) -> Path:
    path = out / "ax_overhead.csv"
    rows = [row for seed in range(seeds) for row in measure_once(variant, seed)]
    finished = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    new = pd.DataFrame([{**row, "finished": finished, "command": command} for row in rows], columns=COLUMNS)
    table = pd.concat([pd.read_csv(path), new]) if path.is_file() else new
    table.to_csv(path, index=False)
    report = out / "ax_overhead.md"
    report.write_text(summary(table) + "\n")
    return report
