"""The search space: which paging parameters a study varies, over which values, under which constraint.

Each parameter of ``configs/space/*.yaml`` is either fixed (a plain value: ``buffer_size: 64MiB``) or
searched, given as one of

- ``{min: 4KiB, max: 16MiB, factor: 2}``: a geometric series (powers of two for page sizes),
- ``{min: 50, max: 100, step: 10}``: a linear range, sampled every ``step``,
- ``{values: [0, 1, 4, 16]}``: an explicit list (the only form for a categorical parameter, ``eviction``, whose
  values are names: ``{values: [fifo, s3fifo]}``).

Every strategy searches the sampled values. Parameters the space does not name stay at the defaults. The pager requires
``evict_low_water < evict_high_water``; no strategy proposes a candidate breaking it.
"""
from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

from autopager.checks import whole
from autopager.errors import ConfigError
from autopager.parameters import CATEGORIES, HIGH, LOW, PARAMETERS, SIZES, check_names, check_params, parse_size, parse_value, show

MIN_BUFFER_PAGES = 8   # the fewest pages a searched page size may leave a fixed buffer
SPEC_KEYS = {"min", "max", "step", "factor", "values"}
MMAP = "mmap"  # baseline.mmap: whether a study also measures the kernel's mmap (not a parameter)

Params = dict[str, Any]


@dataclass(frozen=True)
class Dimension:
    """A searched parameter and its sampled values, ascending (a categorical one's names, in the space's order)."""
    name: str
    values: tuple[Any, ...]

    @property
    def categorical(self) -> bool:
        return self.name in CATEGORIES

    def nearest(self, value: Any) -> Any:
        if self.categorical:
            return value if value in self.values else self.values[0]
        return min(self.values, key=lambda v: (abs(v - value), v))

    def describe(self) -> str:
        shown = [show(self.name, v) for v in self.values]
        listed = ", ".join(shown) if len(shown) <= 8 else f"{', '.join(shown[:3])}, ..., {shown[-1]}"
        return f"{listed} ({len(shown)} values)" if len(shown) > 1 else listed


def parse_dimension(name: str, spec: Mapping[str, Any]) -> Dimension:
    unknown = set(spec) - SPEC_KEYS
    if unknown:
        raise ConfigError(f"space.{name}: unknown key(s) {sorted(unknown)}; a searched parameter has "
                          f"min and max with step or factor, or values")
    if spec.get("values") is not None:
        parsed = [parse_value(name, v) for v in spec["values"]]
        values = list(dict.fromkeys(parsed)) if name in CATEGORIES else sorted(set(parsed))
        if not values:
            raise ConfigError(f"space.{name}.values is empty")
        return Dimension(name, tuple(values))
    if name in CATEGORIES:
        raise ConfigError(f"space.{name}: a name, or values: [{', '.join(CATEGORIES[name])}] (any of them)")
    if spec.get("min") is None or spec.get("max") is None:
        raise ConfigError(f"space.{name}: give min and max (with step or factor), or values")
    low, high = parse_value(name, spec["min"]), parse_value(name, spec["max"])
    if low > high:
        raise ConfigError(f"space.{name}: min ({show(name, low)}) is above max ({show(name, high)})")
    step, factor = spec.get("step"), spec.get("factor")
    if step is not None and factor is not None:
        raise ConfigError(f"space.{name}: give step (a linear range) or factor (a geometric one), not both")
    if factor is not None:
        whole(f"space.{name}.factor", factor, 2)
        if low == 0:
            raise ConfigError(f"space.{name}: a geometric range (factor) needs min >= 1")
        values = [low]
        while values[-1] * factor <= high:
            values.append(values[-1] * factor)
        return Dimension(name, tuple(values))
    step = 1 if step is None else parse_size(step) if name in SIZES else step
    whole(f"space.{name}.step", step, 1)
    return Dimension(name, tuple(parse_value(name, v) for v in range(low, high + 1, step)))


def pager_page_size(buffer_size: int | None, writable: bool = True) -> int:
    """The page size the pager chooses when none is given, for a buffer of ``buffer_size`` bytes (None: its default),
    for writable regions or read-only ones."""
    from autopager import _native  # the pager's own rule (Config.defaults, page_size_for_buffer)

    if not buffer_size:
        config = _native.Config.defaults()
        return config.page_size if writable or not config.read_only_page_size else config.read_only_page_size
    return (_native.page_size_for_buffer(buffer_size) if writable
            else min(_native.read_only_page_size_for_buffer(buffer_size), _native.page_size_for_buffer(buffer_size)))


class Space:
    """The searched dimensions and fixed values over all parameters (unnamed ones at ``defaults``)."""

    def __init__(self, spec: Mapping[str, Any], defaults: Mapping[str, Any]):
        try:
            check_names([*spec, *(name for name in defaults if name != MMAP)])
        except ValueError as error:
            raise ConfigError(str(error)) from None
        self.defaults = {name: parse_value(name, defaults[name], "baseline") for name in PARAMETERS
                         if defaults.get(name) is not None}
        self.fixed: Params = {}
        self.dimensions: dict[str, Dimension] = {}
        for name in PARAMETERS:
            value = spec.get(name, self.defaults.get(name))
            if isinstance(value, Mapping):
                dimension = parse_dimension(name, value)
                if len(dimension.values) == 1:
                    self.fixed[name] = dimension.values[0]
                else:
                    self.dimensions[name] = dimension
            elif value is not None:
                self.fixed[name] = parse_value(name, value)
        if self.defaults.get(LOW, 0) >= self.defaults.get(HIGH, 100):
            raise ConfigError(f"the default {LOW} ({self.defaults[LOW]}) must be below {HIGH} "
                              f"({self.defaults[HIGH]})")
        self._restrict_watermarks()
        self._restrict_page_sizes()

    def _restrict_page_sizes(self) -> None:
        """Drop page sizes that leave a fixed buffer only a few pages: threads faulting on different
        pages would evict each other's pages over and over, and such a trial only burns its timeout."""
        buffer_size = self.fixed.get("buffer_size")
        if buffer_size is None or "page_size" not in self.dimensions:
            return
        keep = [v for v in self.values("page_size") if buffer_size // v >= MIN_BUFFER_PAGES]
        if not keep:
            raise ConfigError(f"every page size of the space leaves the buffer ({show('buffer_size', buffer_size)}) "
                              f"fewer than {MIN_BUFFER_PAGES} pages: lower space.page_size.max or raise the buffer")
        if len(keep) == 1:
            del self.dimensions["page_size"]
            self.fixed["page_size"] = keep[0]
        else:
            self.dimensions["page_size"] = Dimension("page_size", tuple(keep))

    def _restrict_watermarks(self) -> None:
        """Drop watermark values that cannot satisfy low < high whatever the other one is."""
        low, high = self.values(LOW), self.values(HIGH)
        if not low or not high:
            return
        keep_low = [v for v in low if v < max(high)]
        keep_high = [v for v in high if v > min(low)]
        if not keep_low or not keep_high:
            raise ConfigError(f"{LOW} must be below {HIGH}, but the space allows {LOW} {self.describe_one(LOW)} "
                              f"and {HIGH} {self.describe_one(HIGH)}: lower space.{LOW} or raise space.{HIGH}")
        for name, keep in ((LOW, keep_low), (HIGH, keep_high)):
            if name in self.dimensions:
                if len(keep) == 1:
                    del self.dimensions[name]
                    self.fixed[name] = keep[0]
                else:
                    self.dimensions[name] = Dimension(name, tuple(keep))

    def values(self, name: str) -> list[int]:
        if name in self.dimensions:
            return list(self.dimensions[name].values)
        return [self.fixed[name]] if name in self.fixed else []

    def describe_one(self, name: str) -> str:
        if name in self.dimensions:
            return self.dimensions[name].describe()
        return show(name, self.fixed[name]) + " (fixed)" if name in self.fixed else "(pager default)"

    def describe(self) -> str:
        return "\n".join(f"  {name:17} {self.describe_one(name)}" for name in PARAMETERS)

    def feasible(self, params: Mapping[str, Any]) -> bool:
        return self.infeasible(params) is None

    def infeasible(self, params: Mapping[str, Any]) -> str | None:
        """Why the pager cannot run ``params``: low water not below high water, or what the pager refuses (a
        searched buffer smaller than two pages of a searched page size)."""
        low, high = params.get(LOW), params.get(HIGH)
        if low is not None and high is not None and low >= high:
            return f"{LOW} must be below {HIGH}"
        try:
            check_params({name: value for name, value in params.items() if value is not None})
        except ValueError as error:
            return str(error)
        return None

    def contains(self, params: Mapping[str, Any]) -> bool:
        return (all(params.get(n) == v for n, v in self.fixed.items())
                and all(params.get(n) in d.values for n, d in self.dimensions.items())
                and self.feasible(params))

    def complete(self, searched: Mapping[str, Any]) -> Params:
        """A full parameter set from values of the searched dimensions, in the parameters' order."""
        merged = {**self.fixed, **searched}
        return {name: merged[name] for name in PARAMETERS if name in merged}

    def grid_size(self) -> int:
        return sum(1 for _ in self.grid())

    def grid(self) -> Iterator[Params]:
        """Every feasible combination of the sampled values."""
        names = list(self.dimensions)
        for combination in itertools.product(*(self.dimensions[n].values for n in names)):
            params = self.complete(dict(zip(names, combination)))
            if self.feasible(params):
                yield params

    def sample(self, rng: random.Random) -> Params:
        while True:
            params = self.complete({n: rng.choice(d.values) for n, d in self.dimensions.items()})
            if self.feasible(params):
                return params

    def defaults_as_run(self, buffer_size: int | None = None) -> Params:
        """The defaults as their run is recorded (at ``buffer_size``, else at their own buffer): a page size they
        leave to the pager is the one it chooses for the buffer, where that is every region's (the pager gives
        read-only regions a smaller page than writable ones at most buffers: then no page size is recorded)."""
        defaults = dict(self.defaults) if buffer_size is None else {**self.defaults, "buffer_size": buffer_size}
        if "page_size" in defaults:
            return defaults
        chosen = pager_page_size(defaults.get("buffer_size"))
        if pager_page_size(defaults.get("buffer_size"), writable=False) != chosen:
            return defaults
        return {**defaults, "page_size": chosen}

    def start(self) -> Params:
        """The defaults moved into the space: the nearest sampled value of each searched parameter (for a page size
        the defaults leave to the pager, the one it chooses for the buffer's writable regions)."""
        defaults = dict(self.defaults)
        if "page_size" in self.dimensions and "page_size" not in defaults:
            defaults["page_size"] = pager_page_size(defaults.get("buffer_size"))
        params = self.complete({n: d.nearest(defaults.get(n, d.values[0])) for n, d in self.dimensions.items()})
        if not self.feasible(params):
            pairs = [(low, high) for low in self.values(LOW) for high in self.values(HIGH) if low < high]
            params[LOW], params[HIGH] = min(
                pairs, key=lambda pair: abs(pair[0] - params[LOW]) + abs(pair[1] - params[HIGH]))
        return params
