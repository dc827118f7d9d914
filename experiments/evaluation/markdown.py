"""Markdown tables and number formats for the summary."""
from __future__ import annotations

import math
from typing import Any, Sequence


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join("-" if cell is None else str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def times(value: Any) -> str:
    """A speedup: 1.23x."""
    return "-" if missing(value) else f"{value:.2f}x"


def number(value: Any) -> str:
    return "-" if missing(value) else f"{value:.4g}"


def seconds(value: Any, digits: int = 0) -> str:
    if missing(value):
        return "-"
    return f"{value:.{digits}f} s" if value < 600 else f"{value / 60:.1f} min"
