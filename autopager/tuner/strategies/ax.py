"""Bayesian optimization with Ax (``ax.Client``): Sobol initialization, then a BoTorch Gaussian process.

Ax searches a continuous box, which keeps its model fitting and acquisition fast (integer and choice
parameters, and linear constraints, make each step many times slower): each parameter is searched by its
position in the space's sampled values, rounded to the nearest one. When both watermarks are searched, the
low one is searched as a share of the values below the high one, so every proposal keeps
``evict_low_water < evict_high_water`` without a constraint. A categorical parameter (``eviction``: names with
no order) is Ax's unordered choice parameter, searched by its names.
Trials Ax did not propose (the defaults' run, a resumed study's trials) are attached with their outcome, also
while trials it proposed are running (with several workers the defaults' first run ends after the first Sobol
trials were asked for). A point outside its space (the defaults' run in a narrowed space, the buffer ladder's
rungs, which leave the page to the pager) cannot be attached; a rung still counts toward the initialization
budget, as an attached trial does, so that a short study keeps its model's trials (15 trials of bfs at 4 GiB drew
10 Sobol points and 1 of the model's after 4 rungs it could not count, results/time-memory-ladder-4gib).
Several proposals may be in flight at once: each ``get_next_trials`` call leaves its trial RUNNING in Ax's
experiment, and the next call treats the running ones as pending points (the Sobol step draws past them, the
BoTorch step conditions its acquisition on them). When Ax will not propose while trials are pending (its
initialization budget drawn, too few of those trials observed yet), ``ask`` returns None until one is told.
A failed trial (a crash, a timeout, the out-of-memory killer) is given to Ax as the worst value seen so far:
marked failed, it taught Ax's model nothing, and the model kept proposing the same point. A capped trial comes
as the study's bound, worse than the incumbent; a trial measured several times as the mean of its runs. Its
standard error is not given: Ax's model cannot fit outcomes with a standard error beside outcomes without one (the
single runs; "Input data contains NaN values", and Ax proposes nothing more), so it infers one noise level for all.
``modelled_best`` is Ax's best point
by its model's prediction (``Client.get_best_parameterization``), which the summary shows beside the best measured.

With ``objective=metric_and_memory`` (autopager.tuner.memory_front) Ax optimizes two objectives, the metric and
the trial's memory (``"-objective, -memory"``: its multi-objective model, with the thresholds it infers), and is
told both of each trial; with ``constraint.memory`` the memory is an outcome constraint (``"memory <= N"``).

The generation strategy is Ax's default (``Client.configure_generation_strategy``'s: Sobol, then the modular
BoTorch model), with two changes made through Ax's own generator settings: a resumed study continues the
seeded Sobol sequence after the points its earlier runs drew (counted from the table's ``proposed_by``), instead
of drawing them again; and the acquisition function's optimizer may be given fewer restarts and raw samples
(``strategy.acquisition_restarts`` and ``strategy.acquisition_raw_samples``), which on small models like these
cuts the time a Bayesian step takes.

At the end of a study Ax's state (the experiment, with every trial's point in this encoding, and the generation
strategy) is saved as ``ax_client.json`` in the study's directory (``Client.save_to_json_file``), so that its own
analyses (the model's sensitivity to each parameter) can be computed afterwards (autopager/analysis/result.py).
"""
from __future__ import annotations

import logging
import math
import os
import sys
import warnings
from pathlib import Path
from typing import Any, Mapping

from autopager.run.goal import Goal
from autopager.tuner.space import HIGH, LOW, Dimension, Params, Space
from autopager.tuner.strategies.base import Key, Option, Strategy, count, key

OBJECTIVE = "objective"
MEMORY = "memory"  # the trial's memory in bytes: a second objective (objective=metric_and_memory) or a constraint
STATE = "ax_client.json"  # Ax's state, in the study's directory
LOW_SHARE = "evict_low_water_share"
SOBOL, MODEL = "Sobol", "MBM"  # node names in Ax's default generation strategy
OPTIMIZER = {"acquisition_restarts": "num_restarts", "acquisition_raw_samples": "raw_samples"}


def quiet_ax() -> None:
    logging.disable(logging.INFO)  # Ax logs at INFO while it is imported, before its levels can be set
    try:
        from ax.utils.common.logger import set_ax_logger_levels, set_stderr_log_level
    finally:
        logging.disable(logging.NOTSET)
    set_ax_logger_levels(logging.WARNING)
    set_stderr_log_level(logging.WARNING)
    warnings.filterwarnings("ignore", module=r"(ax|botorch|gpytorch|linear_operator|torch)\b")


def bounds(dimension: Dimension) -> tuple[float, float]:
    return 0.0, len(dimension.values) - 1.0


def decode(dimension: Dimension, position: Any) -> Any:
    if dimension.categorical:
        return position
    return dimension.values[min(max(round(position), 0), len(dimension.values) - 1)]


def encode(dimension: Dimension, value: Any) -> Any:
    return value if dimension.categorical else float(dimension.values.index(value))


def lows_below(dimension: Dimension, high: int) -> list[int]:
    return [value for value in dimension.values if value < high]


class AxStrategy(Strategy):
    OPTIONS = (Option("initialization_trials", 10, "Sobol trials, the trials Ax is given included", count),
               Option("trials", 30, "trials after the defaults'", count),
               Option("threads", 1, "torch threads for the model fits (null: one a core)", count),
               Option("acquisition_restarts", 8, "the acquisition optimizer's starts (null: Ax's, 20)", count),
               Option("acquisition_raw_samples", 256, "the acquisition optimizer's raw samples (null: Ax's, 1024)",
                      count))

    def __init__(self, space: Space, goal: Goal, settings: Mapping[str, Any], seed: int,
                 objective: Mapping[str, Any] | None = None):
        super().__init__(space, goal, settings, seed, objective)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import torch
            quiet_ax()
            from ax import ChoiceParameterConfig, Client, RangeParameterConfig
        if self.settings["threads"]:
            torch.set_num_threads(self.settings["threads"])
        self.pending: dict[Key, list[int]] = {}  # Ax's RUNNING trials, by the point they round to
        self.client = None
        self.generation = None  # made at the first ask, once the told trials show where Sobol stopped
        self.sobol_drawn = 0
        self.unplaced_proposals = 0  # told points outside the space that a study proposed (the ladder's rungs)
        self.losses: list[float] = []
        if not space.dimensions:
            return
        self.low_share = LOW in space.dimensions and HIGH in space.dimensions
        boxes = {name: bounds(dimension) for name, dimension in space.dimensions.items() if not dimension.categorical}
        if self.low_share:
            del boxes[LOW]
            boxes[LOW_SHARE] = (0.0, 1.0)
        choices = [ChoiceParameterConfig(name=name, values=list(dimension.values), parameter_type="str", is_ordered=False)
                   for name, dimension in space.dimensions.items() if dimension.categorical]
        self.client = Client(random_seed=seed)
        self.client.configure_experiment(
            parameters=[RangeParameterConfig(name=name, bounds=box, parameter_type="float")
                        for name, box in boxes.items()] + choices, name="autopager")
        metric = OBJECTIVE if self.goal is Goal.MAXIMIZE else f"-{OBJECTIVE}"
        self.weighs_memory = self.objective.get("objective") == "metric_and_memory"
        self.memory_limit = self.objective.get("memory_limit")
        self.client.configure_optimization(
            objective=f"{metric}, -{MEMORY}" if self.weighs_memory else metric,
            outcome_constraints=[f"{MEMORY} <= {self.memory_limit}"] if self.memory_limit else None)

    def generation_strategy(self):
        """Ax's default generation strategy, changed as the module says."""
        from ax.api.utils.generation_strategy_dispatch import choose_generation_strategy
        from ax.api.utils.structs import GenerationStrategyDispatchStruct

        strategy = choose_generation_strategy(GenerationStrategyDispatchStruct(
            initialization_budget=max(1, (self.settings["initialization_trials"] or 10) - self.unplaced_proposals),
            initialization_random_seed=self.seed))
        nodes = strategy.nodes_by_name
        if SOBOL in nodes:
            nodes[SOBOL].generator_specs[0].generator_kwargs["init_position"] = self.sobol_drawn
        optimizer = {name: self.settings[option] for option, name in OPTIMIZER.items() if self.settings[option]}
        if optimizer:
            nodes[MODEL].generator_specs[0].generator_gen_kwargs["model_gen_options"] = {"optimizer_kwargs": optimizer}
        return strategy

    def to_params(self, point: Mapping[str, float]) -> Params:
        searched = {name: decode(dimension, point[name]) for name, dimension in self.space.dimensions.items()
                    if name != LOW or not self.low_share}
        if self.low_share:
            lows = lows_below(self.space.dimensions[LOW], searched[HIGH])
            searched[LOW] = lows[round(point[LOW_SHARE] * (len(lows) - 1))]
        return self.space.complete(searched)

    def to_point(self, params: Mapping[str, Any]) -> dict[str, Any]:
        point = {name: encode(dimension, params[name]) for name, dimension in self.space.dimensions.items()
                 if name != LOW or not self.low_share}
        if self.low_share:
            lows = lows_below(self.space.dimensions[LOW], params[HIGH])
            point[LOW_SHARE] = lows.index(params[LOW]) / (len(lows) - 1) if len(lows) > 1 else 0.0
        return point

    def save(self, directory: Path) -> None:
        if self.generation is not None:  # it proposed trials in this process (else the saved state stands)
            temporary = directory / f"{STATE}.tmp"
            self.client.save_to_json_file(str(temporary))
            os.replace(temporary, directory / STATE)

    def ask(self) -> Params | None:
        if self.client is None:
            return None
        if self.generation is None:
            self.generation = self.generation_strategy()
            self.client.set_generation_strategy(self.generation)
        try:
            ((index, point),) = self.client.get_next_trials(max_trials=1).items()
        except Exception as error:  # Ax may give up on a space it considers used up: end with the reason
            if not self.pending:  # else it waits for the pending trials' data
                print(f"autopager: Ax proposes no more trials: {error}", file=sys.stderr)
            return None
        self.proposed_by = self.generation.current_node_name
        params = self.to_params(point)
        self.pending.setdefault(key(params), []).append(index)
        return params

    def tell(self, params: Params, value: float | None, sem: float | None = None,
             proposed_by: str | None = None, memory: float | None = None) -> None:
        if self.client is None:
            return
        if value is not None:
            self.losses.append(self.loss(value))
        waiting = self.pending.get(key(params))
        index = waiting.pop(0) if waiting else None
        if not waiting:
            self.pending.pop(key(params), None)
        if index is None:
            self.sobol_drawn += proposed_by == SOBOL
            if not self.space.contains(params):
                self.unplaced_proposals += bool(proposed_by)
                return  # e.g. the defaults, outside a narrowed space: Ax's model cannot place it
            index = self.client.attach_trial(parameters=self.to_point(params))
        if value is None and self.losses:
            value = self.loss(max(self.losses))  # the worst so far, back in the metric's direction
        if value is None:
            self.client.mark_trial_failed(trial_index=index, failed_reason="the run failed")
        else:
            measured = {OBJECTIVE: float(value)}
            if (self.weighs_memory or self.memory_limit) and memory is not None:
                measured[MEMORY] = float(memory)
            self.client.complete_trial(trial_index=index, raw_data=measured)

    def modelled_best(self) -> tuple[Params, float, float | None] | None:
        if self.client is None or self.generation is None:
            return None
        try:
            # its prediction there is a variance; predict gives the standard error
            point, _, _, _ = self.client.get_best_parameterization(use_model_predictions=True)
            mean, sem = self.client.predict(points=[point])[0][OBJECTIVE]
        except Exception:  # no model yet (Sobol only) or nothing completed: nothing to show
            return None
        return self.to_params(point), float(mean), None if math.isnan(sem) else float(sem)
