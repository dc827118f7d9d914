"""The search space: parsing, constraints and the sampled grid."""
import random

import pytest

from autopager.errors import ConfigError
from autopager.parameters import parse_size
from autopager.tuner.config import compose
from autopager.tuner.space import Space

DEFAULTS = {"page_size": 4096, "fillers": 2, "evictors": 2, "buffer_size": "64MiB", "evict_high_water": 90,
            "evict_low_water": 70, "read_ahead": 0, "max_fault_events": 2}


def test_geometric_linear_listed_and_fixed_parameters():
    space = Space({"page_size": {"min": "4KiB", "max": "1MiB", "factor": 2},
                   "fillers": {"values": [4, 1, 2]},
                   "evict_high_water": {"min": 60, "max": 100, "step": 20},
                   "evict_low_water": 30, "read_ahead": {"min": 0, "max": 0, "step": 1}}, DEFAULTS)
    assert space.values("page_size") == [4096 << k for k in range(9)]
    assert space.values("fillers") == [1, 2, 4]
    assert space.values("evict_high_water") == [60, 80, 100]
    assert space.fixed["evict_low_water"] == 30 and space.fixed["read_ahead"] == 0  # one value: fixed
    assert space.fixed["buffer_size"] == 64 << 20  # unnamed: the default
    assert space.grid_size() == 9 * 3 * 3


def test_watermark_constraint_is_kept_in_grid_samples_and_start():
    space = Space({"evict_high_water": {"min": 10, "max": 50, "step": 10},
                   "evict_low_water": {"min": 0, "max": 90, "step": 10}}, DEFAULTS)
    points = list(space.grid())
    assert points and all(p["evict_low_water"] < p["evict_high_water"] for p in points)
    assert space.values("evict_low_water") == [0, 10, 20, 30, 40]  # values that can never fit are dropped
    rng = random.Random(1)
    assert all(space.feasible(space.sample(rng)) for _ in range(50))
    start = space.start()  # defaults 90/70 moved into the space
    assert space.contains(start) and start["evict_high_water"] == 50


@pytest.mark.parametrize("spec, message", [
    ({"page_size": "12KiB"}, "not a power-of-two multiple of the system page"),
    ({"page_size": {"min": "4KiB", "max": "16KiB", "step": "4KiB"}}, "12KiB is not a power-of-two"),
    ({"evict_low_water": 80, "evict_high_water": 70}, "must be below"),
    ({"evict_low_water": {"min": 60, "max": 90, "step": 10}, "evict_high_water": {"values": [40, 50]}},
     "must be below"),
    ({"fillers": 0}, "out of range"),
    ({"fillers": {"min": 8, "max": 2, "factor": 2}}, "above max"),
    ({"fillers": {"min": 1, "max": 8, "factor": 2, "step": 1}}, "not both"),
    ({"fillers": {"min": 1, "max": 8, "by": 2}}, "unknown key"),
    ({"buffer_size": "lots"}, "not a size"),
    ({"page_sise": 4096}, "unknown paging parameter(s) ['page_sise']"),
])
def test_bad_spaces_are_refused_with_the_reason(spec, message):
    with pytest.raises(ConfigError, match=None) as error:
        Space(spec, DEFAULTS)
    assert message in str(error.value)


def test_page_sizes_that_leave_a_fixed_buffer_a_few_pages_are_not_searched():
    space = Space({"page_size": {"min": "4KiB", "max": "16MiB", "factor": 2}, "buffer_size": "8MiB"}, {})
    assert max(space.values("page_size")) == (8 << 20) // 8
    assert min(space.values("page_size")) == 4096
    with pytest.raises(ConfigError, match="fewer than 8 pages"):
        Space({"page_size": {"min": "2MiB", "max": "16MiB", "factor": 2}, "buffer_size": "8MiB"}, {})


def test_the_eviction_space_searches_the_policy_alone_at_the_defaults():
    config, _ = compose(["workload=lookup_zipf", "space=eviction", "strategy=grid"])
    space = Space(config.space, config.baseline)
    assert list(space.dimensions) == ["eviction"] and space.values("eviction") == ["fifo", "hotfifo", "s3fifo", "clock"]
    assert [params["eviction"] for params in space.grid()] == ["fifo", "hotfifo", "s3fifo", "clock"]
    assert space.fixed["evict_high_water"] == 90 and space.fixed["buffer_size"] == parse_size(config.workload.buffer_size)
