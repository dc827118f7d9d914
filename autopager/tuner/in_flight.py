"""The trials a study has handed to its launcher and not yet recorded: ``<study>/in_flight.json``.

Only the tuner writes it (atomically, like the table). A trial is written down before it is submitted and
struck off after its row is in the table, so when a killed tuner is started again every trial it had in
flight is either in the table already (its row matches the entry's ``started`` time, kind and parameters: it
is dropped, never counted twice) or run again (its old run, if still going, is cancelled first).
"""
from __future__ import annotations

import dataclasses
import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any, Iterable

from autopager.parameters import PARAMETERS
from autopager.tuner.table import write_atomically
from autopager.tuner.trial import Trial

FILE = "in_flight.json"


@dataclasses.dataclass
class InFlight:
    params: dict[str, Any]
    kind: str
    timeout: float
    started: str                       # when it was asked for (the table's ``started``)
    ask_seconds: float = 0.0
    proposed_by: str | None = None
    cap: float | None = None
    confirms: int | None = None        # the trial a confirmation run confirms
    continues: int | None = None       # the trial this one measures once more (a run added to its row)
    launcher: str | None = None        # the launcher that runs it, and its handle there
    handle: str | None = None
    id: str = dataclasses.field(default_factory=lambda: uuid.uuid4().hex)

    def recorded_in(self, trials: Iterable[Trial]) -> bool:
        return any(trial.started == self.started and trial.kind == self.kind
                   and all(trial.params.get(name) == self.params.get(name) for name in PARAMETERS) for trial in trials)


class InFlightRecord:
    def __init__(self, directory: Path):
        self.path = directory / FILE
        self.entries: dict[str, InFlight] = {}

    def load(self) -> list[InFlight]:
        """The entries a previous tuner left; a damaged file is reported and set aside, not trusted."""
        if not self.path.is_file():
            return []
        try:
            entries = [InFlight(**entry) for entry in json.loads(self.path.read_text())]
        except (ValueError, TypeError) as error:
            damaged = self.path.with_suffix(".damaged")
            os.replace(self.path, damaged)
            print(f"autopager: {self.path} is damaged ({error}); set aside as {damaged}: the trials it listed "
                  f"will be proposed again", file=sys.stderr)
            return []
        self.entries = {entry.id: entry for entry in entries}
        return entries

    def add(self, entry: InFlight) -> None:
        self.entries[entry.id] = entry
        self._save()

    def remove(self, entry: InFlight) -> None:
        self.entries.pop(entry.id, None)
        self._save()

    def _save(self) -> None:
        write_atomically(self.path, json.dumps([dataclasses.asdict(entry) for entry in self.entries.values()], indent=1))
