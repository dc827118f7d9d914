"""The paging parameters' table (autopager/parameters.py) is the pager's own (native/src/config.cpp), and every
consumer (exec's settings, profiles, the search space, the Python API) refuses what the pager refuses, in one
line naming the parameter and what it allows."""
import pytest

import autopager
from autopager import _native
from autopager.errors import ConfigError
from autopager.parameters import PARAMETER_TABLE, SYSTEM_PAGE, check_params, check_value
from autopager.profiles import ProfileError, parse_params
from autopager.tuner.space import Space

NATIVE_ONLY = {"monitor_interval", "keep_writes"}  # read by the pager (UMAP_MONITOR_FREQ, UMAP_KEEP_WRITES), never tuned


def test_the_python_table_is_the_native_one():
    native = {entry.name: entry for entry in _native.parameter_limits()}
    assert set(native) - NATIVE_ONLY == {parameter.name for parameter in PARAMETER_TABLE if not parameter.choices}
    for parameter in (p for p in PARAMETER_TABLE if not p.choices):
        entry = native[parameter.name]
        assert (entry.env, entry.min, entry.max, entry.unit, entry.zero_turns_off) == (
            parameter.env, parameter.low, parameter.high, parameter.unit, parameter.zero_turns_off), parameter.name


def native_config(name, value):
    """The pager's defaults with `name` at `value` (the watermarks set around it), as Config.validate sees them."""
    config = _native.Config.defaults()
    config.evict_high_water, config.evict_low_water = 100, 0
    setattr(config, name, bool(value) if name == "direct_io" else value)
    if name == "page_size":
        config.buffer_pages = 2
    return config


# buffer_size's ends depend on page_size (below); compression's values are names natively (its own test)
@pytest.mark.parametrize("parameter", [p for p in PARAMETER_TABLE if p.name != "buffer_size" and not p.choices],
                         ids=lambda p: p.name)
def test_each_range_ends_where_the_native_pager_ends_it(parameter):
    """Both ends are accepted by the pager's own Config.validate and by check_value; one step past them, by neither."""
    step = SYSTEM_PAGE if parameter.name in ("page_size", "read_ahead_run", "read_around") else 1
    for value in (parameter.low, parameter.high):
        native_config(parameter.name, value).validate()
        assert check_value(parameter.name, value) == value
    for value in (parameter.low - step, parameter.high + step):
        if value < 0:
            continue
        if parameter.name != "direct_io":  # a bool natively
            with pytest.raises(ValueError, match="out of range"):
                native_config(parameter.name, value).validate()
        with pytest.raises(ValueError, match=f"^{parameter.name}={value}: out of range; allowed: "):
            check_value(parameter.name, value)


@pytest.mark.parametrize("params, message", [
    ({"page_size": 3000}, "page_size=3000: not a multiple of the system page size; allowed: a multiple of"),
    ({"page_size": 1 << 40}, "page_size=1099511627776: out of range; allowed:"),
    ({"page_size": 10 ** 400}, r"page_size=10000000000000000000\.\.\.\(401 characters\): out of range"),
    ({"page_size": "9" * 400 + "KiB"}, r"page_size=99999999999999999999\.\.\.\(403 characters\): out of range"),
    ({"fillers": 5000}, "fillers=5000: out of range; allowed: an integer from 1 to 1024$"),
    ({"fillers": "abc"}, "fillers=abc: not an integer; allowed: an integer from 1 to 1024$"),
    ({"read_ahead": True}, "read_ahead=True: not an integer"),
    ({"read_ahead": 1.5}, "read_ahead=1.5: not an integer"),
    ({"buffer_size": 100}, "buffer_size=100: out of range; allowed: from two pages of page_size"),
    ({"buffer_size": 2 ** 70}, "buffer_size=1180591620717411303424: out of range"),
    ({"buffer_size": "1MiB", "page_size": "1MiB"}, "buffer_size=1MiB: 1 pages of page_size=1MiB"),
    ({"evict_low_water": 95, "evict_high_water": 90}, "evict_low_water=95: not below the high water mark"),
])
def test_bad_values_are_one_line_naming_the_parameter(params, message):
    with pytest.raises(ValueError, match=message) as error:
        check_params(params)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("params, message", [
    ({"fillers": 5000}, "params.fillers=5000: out of range"),
    ({"page_size": "1TiB"}, "params.page_size=1TiB: out of range"),
    ({"read_ahead": True}, "params.read_ahead=True: not an integer"),
    ({"page_size": 10 ** 400}, "params.page_size=1000"),
    ({"page_size": "64KiB", "buffer_size": "64KiB"}, "params.buffer_size=64KiB: 1 pages of page_size=64KiB"),
])
def test_profiles_refuse_what_the_pager_refuses(params, message):
    with pytest.raises(ProfileError, match=message):
        parse_params(params, "p.yaml")


@pytest.mark.parametrize("spec, message", [
    ({"page_size": {"min": "4KiB", "max": "1TiB", "factor": 2}}, "space.page_size=1TiB: out of range"),
    ({"fillers": {"values": [1, 5000]}}, "space.fillers=5000: out of range; allowed: an integer from 1 to 1024"),
    ({"max_fault_events": {"min": 1, "max": 8192, "factor": 2}}, "space.max_fault_events=8192: out of range"),
    ({"read_ahead": {"values": [0, 2 ** 21]}}, "space.read_ahead=2097152: out of range"),
])
def test_the_space_refuses_ranges_beyond_the_pager(spec, message):
    with pytest.raises(ConfigError, match=message):
        Space(spec, {})


@pytest.mark.parametrize("params, message", [
    ({"page_size": 1e30}, r"^page_size=1e\+30: out of range; allowed: a multiple of the system page size"),
    ({"buffer_size": 2 ** 70}, r"^buffer_size=1180591620717411303424: out of range; allowed: from two pages"),
    ({"fillers": 2 ** 40}, r"^fillers=1099511627776: out of range; allowed: an integer from 1 to 1024$"),
])
def test_the_python_api_names_the_argument(tmp_path, params, message):
    path = tmp_path / "data.bin"
    path.write_bytes(bytes(8192))
    with pytest.raises(ValueError, match=message):
        autopager.memmap(path, mode="r", **params)


def test_an_offset_past_the_end_of_the_file_says_so(tmp_path):
    path = tmp_path / "data.bin"
    path.write_bytes(bytes(20000 - 9999))
    with pytest.raises(ValueError, match=rf"^offset 20000 is past the end of {path} \(10001 bytes\)"):
        autopager.memmap(path, mode="r", offset=20000)
