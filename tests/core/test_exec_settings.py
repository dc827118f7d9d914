"""`autopager exec` checks its settings as the pager checks them before the program starts: a refused one is one
line naming it and what it allows, status 2, and the program never runs; `exec --help` is exec's help."""
import pytest

from tests.helpers import autopager_process


def autopager(*args: str) -> tuple[int, str, str]:
    process = autopager_process(*args)
    out, err = process.communicate(timeout=120)
    assert "Traceback" not in out + err, out + err
    return process.returncode, out, err


@pytest.mark.parametrize("setting, message", [
    ("page_size=3000", "page_size=3000: not a multiple of the system page size; allowed: a multiple of"),
    ("page_size=3KiB", "page_size=3KiB: not a multiple of the system page size"),
    ("page_size=1TiB", "page_size=1TiB: out of range; allowed: a multiple of the system page size"),
    ("fillers=5000", "fillers=5000: out of range; allowed: an integer from 1 to 1024"),
    ("fillers=abc", "fillers=abc: not an integer; allowed: an integer from 1 to 1024"),
    ("evict_low_water=95", "evict_low_water (UMAP_EVICT_LOW_WATER_THRESHOLD) = 95: not below the high water mark"),
    ("UMAP_PAGESIZE=abc", 'UMAP_PAGESIZE="abc" is not a number; page_size takes a multiple of the system page size'),
    ("UMAP_PAGE_FILLERS=5000", "fillers (UMAP_PAGE_FILLERS) = 5000: out of range; allowed: an integer from 1 to 1024"),
])
def test_a_setting_the_pager_refuses_stops_exec_before_the_program(tuner_home, setting, message):
    marker = tuner_home / "ran"
    code, out, err = autopager("exec", setting, "--", "touch", str(marker))
    assert code == 2 and err.startswith("autopager: error: exec: ") and message in err, err
    assert len(err.splitlines()) == 1, err
    assert not marker.exists()


def test_good_settings_run_the_program(tuner_home):
    marker = tuner_home / "ran"
    code, out, err = autopager("exec", "page_size=8KiB", "fillers=2", "evict_low_water=50", "UMAP_READ_AHEAD=0",
                               "--", "touch", str(marker))
    assert code == 0 and marker.exists(), err


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_exec_help_is_execs_help(flag):
    code, out, err = autopager("exec", flag)
    assert code == 0 and out.startswith("usage: autopager exec [KEY=VALUE ...]"), out + err
    assert "page_size" in out and "heap=DIR" in out and "heap_min" in out, out
    assert "cannot run" not in err, err
