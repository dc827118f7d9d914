"""Markdown tables and number formats for the experiments' pages; the table itself is autopager's writer."""
from __future__ import annotations

import math
from typing import Any, Sequence

import pandas as pd

from autopager.analysis.markdown import table as markdown_table


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown table of ``rows`` (cells as written, None as ``-``)."""
    cells = [["-" if cell is None else str(cell) for cell in row] for row in rows]
    return markdown_table(pd.DataFrame(cells, columns=list(header)))


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
