"""Bayesian optimization with Ax (``ax.Client``): Sobol initialization, then a BoTorch Gaussian process.

Geometric and listed dimensions are ordered choice parameters; linear ones are integer ranges, so the
watermarks can carry Ax's parameter constraint ``evict_low_water <= evict_high_water - 1``. Trials Ax did not
generate (the defaults' run, a resumed study's trials) are attached to its experiment with their outcome.
"""
from __future__ import annotations

import logging
import sys
import warnings
from typing import Any, Mapping

from autopager.space import HIGH, LOW, Params, Space
from autopager.strategies.base import Key, Strategy, key

OBJECTIVE = "objective"


def quiet_ax() -> None:
    from ax.utils.common.logger import set_ax_logger_levels, set_stderr_log_level
    set_ax_logger_levels(logging.WARNING)
    set_stderr_log_level(logging.WARNING)
    warnings.filterwarnings("ignore", module=r"(ax|botorch|gpytorch|linear_operator|torch)\b")


class AxStrategy(Strategy):
    def __init__(self, space: Space, goal: str, settings: Mapping[str, Any], seed: int):
        super().__init__(space, goal, settings, seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from ax import ChoiceParameterConfig, Client, RangeParameterConfig
        quiet_ax()
        self.pending: dict[Key, int] = {}
        self.client = None
        if not space.dimensions:
            return
        parameters = [
            RangeParameterConfig(name=name, bounds=(dimension.low, dimension.high), parameter_type="int")
            if dimension.linear else
            ChoiceParameterConfig(name=name, values=list(dimension.values), parameter_type="int", is_ordered=True)
            for name, dimension in space.dimensions.items()]
        constraints = [f"{LOW} <= {HIGH} - 1"] if space.watermarks_searched_linearly else []
        self.client = Client(random_seed=seed)
        self.client.configure_experiment(parameters=parameters, parameter_constraints=constraints,
                                         name="autopager")
        self.client.configure_optimization(objective=OBJECTIVE if goal == "maximize" else f"-{OBJECTIVE}")
        self.client.configure_generation_strategy(
            initialization_budget=int(settings.get("initialization_trials", 10)),
            initialization_random_seed=seed)

    def searched(self, params: Mapping[str, Any]) -> dict[str, int]:
        return {name: int(params[name]) for name in self.space.dimensions}

    def ask(self) -> Params | None:
        if self.client is None:
            return None
        try:
            ((index, searched),) = self.client.get_next_trials(max_trials=1).items()
        except Exception as error:  # e.g. a small discrete space used up: end the study with the reason
            print(f"autopager: Ax proposes no more trials: {error}", file=sys.stderr)
            return None
        params = self.space.complete({name: int(value) for name, value in searched.items()})
        self.pending[key(params)] = index
        return params

    def tell(self, params: Params, value: float | None) -> None:
        if self.client is None:
            return
        index = self.pending.pop(key(params), None)
        if index is None:
            if not self.space.contains(params):
                return  # e.g. the defaults, outside a narrowed space: Ax's model cannot place it
            index = self.client.attach_trial(parameters=self.searched(params))
        if value is None:
            self.client.mark_trial_failed(trial_index=index, failed_reason="the run failed")
        else:
            self.client.complete_trial(trial_index=index, raw_data={OBJECTIVE: float(value)})
