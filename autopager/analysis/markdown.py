"""The one Markdown table writer of the reports (the study report and the evaluation's): a header row, the
separator, one line a row; a missing cell (None) is shown as "-"."""
from __future__ import annotations

from typing import Any, Sequence


def table(header: Sequence[Any], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(map(str, header)) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join("-" if cell is None else str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)
