"""Number formats for the experiments' pages (their tables: autopager.analysis.markdown.table)."""
from __future__ import annotations

import math
from typing import Any


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
