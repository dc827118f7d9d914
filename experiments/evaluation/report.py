"""The evaluation's written results: figures.csv and summary.md."""
from __future__ import annotations

from pathlib import Path

from evaluation.plan import Plan
from evaluation.studies import Places


def write_report(plan: Plan, places: Places, command: str) -> Path:
    path = places.out / "summary.md"
    path.write_text(f"# Evaluation\n\nCommand: `{command}`\n")
    return path
