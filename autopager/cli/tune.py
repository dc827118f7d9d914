"""`autopager tune`: a study of a workload (autopager.tuner.study), as a Hydra application."""
from __future__ import annotations

from typing import Mapping, Sequence

from omegaconf import DictConfig

from autopager.analysis.summary import write_summary
from autopager.cli.help import HYDRA_HELP, TUNE_WHAT
from autopager.cli.hydra_app import run_application
from autopager.errors import ConfigError
from autopager.tuner.study import Study


def make_study(config: DictConfig, choices: Mapping[str, str]):
    return Study(config, space_name=choices.get("space", "default"), write_summary=write_summary)


def tune_job(config: DictConfig, choices: Mapping[str, str]) -> int:
    make_study(config, choices).run()
    return 0


OUTPUT_FLAGS = {"-q": "quiet", "--quiet": "quiet", "-v": "verbose", "--verbose": "verbose"}


def tune(argv: Sequence[str]) -> int:
    outputs = {OUTPUT_FLAGS[arg] for arg in argv if arg in OUTPUT_FLAGS}
    if len(outputs) > 1:
        raise ConfigError("give -q (quiet) or -v (verbose), not both")
    overrides = [arg for arg in argv if arg not in OUTPUT_FLAGS] + [f"study.output={output}" for output in outputs]
    return run_application("tune", overrides, tune_job, make_study,
                           HYDRA_HELP.format(command="tune", what=TUNE_WHAT))
