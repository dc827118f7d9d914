"""autopager.Pager from Python: parameters, profiles, statistics, several pagers in one process."""
import os
import threading
import time

import numpy as np
import pytest

import autopager
from autopager import _native
from autopager.pager import native_config
from autopager.parameters import parse_size
from tests.pager_support import requires_userfaultfd, run_python


pytestmark = requires_userfaultfd

STATS = {"page_size", "read_only_page_size", "read_ahead_run_bytes", "read_faults", "write_faults", "fills",
         "read_around_pages", "reads", "bytes_read", "evictions",
         "write_backs", "bytes_written", "write_errors", "read_errors", "resident_bytes", "peak_resident_bytes",
         "dirty_pages", "fault_service_mean_us", "fault_service_p99_us", "policy_refaults", "policy_promotions",
         "policy_second_chances", "policy_demotions", "victim_hits"}


@pytest.fixture
def path(tmp_path):
    path = tmp_path / "data.bin"
    np.arange(1 << 20, dtype=np.float32).tofile(path)  # 4 MiB
    return path


def test_parameters_in_bytes_and_notation():
    with autopager.Pager(page_size="64KiB", buffer_size="2MiB", fillers=3, evictors=2, evict_high_water=80,
                         evict_low_water=40, evict_retain=30, eviction="s3fifo", read_ahead=2, read_ahead_run="256KiB",
                         read_around="512KiB", max_fault_events=16, direct_io=1, compression="lz4") as pager:
        assert pager.config == {"page_size": 65536, "fillers": 3, "evictors": 2, "buffer_size": 2 << 20,
                                "evict_high_water": 80, "evict_low_water": 40, "evict_retain": 30, "eviction": "s3fifo",
                                "read_ahead": 2, "read_ahead_run": 256 << 10, "read_around": 512 << 10,
                                "max_fault_events": 16, "direct_io": 1,
                                "compression": "lz4", "huge_pages": "off"}
        assert "page_size=65536" in repr(pager) and "open" in repr(pager)


def test_a_buffer_too_small_for_every_fillers_slot_starts_fewer_fillers(path, capfd):
    # Each filler's read slot comes out of the buffer, the slots a quarter of it at most: 8 pages, 2 fillers.
    with autopager.Pager(page_size="64KiB", buffer_size="512KiB", fillers=4) as pager:
        assert pager.config["fillers"] == 2 and pager.config["buffer_size"] == 512 << 10
        array = pager.memmap(path, dtype=np.float32, mode="r")
        assert np.array_equal(array[::4097], np.arange(1 << 20, dtype=np.float32)[::4097])
        del array
    assert "fillers (UMAP_PAGE_FILLERS) = 4 reduced to 2" in capfd.readouterr().err


def test_direct_io_reads_and_writes_the_same_bytes_as_numpy(path, monkeypatch, capfd):
    # O_DIRECT where the file system has it (else the page cache, and the same bytes); the INFO line says which
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_DIRECT))
        has_direct_io = True
    except OSError:
        has_direct_io = False
    monkeypatch.setenv("UMAP_LOG_LEVEL", "INFO")
    expected = np.arange(1 << 20, dtype=np.float32)
    with autopager.Pager(page_size="64KiB", buffer_size="1MiB", direct_io=1) as pager:
        a = pager.memmap(path, dtype=np.float32, mode="r+")
        assert np.array_equal(a, expected)
        a[::1000] = -1.0
        expected[::1000] = -1.0
        del a
    assert np.array_equal(np.fromfile(path, dtype=np.float32), expected)
    mapped = [line for line in capfd.readouterr().err.splitlines() if f"mapped {4 << 20} bytes" in line]
    assert len(mapped) == 1 and mapped[0].endswith(", read and written with O_DIRECT") == has_direct_io, mapped


def test_direct_io_is_zero_or_one():
    with pytest.raises(ValueError, match="direct_io=2"):
        autopager.Pager(direct_io=2)


def test_eviction_is_a_policy_name_and_a_bad_one_names_the_variable(monkeypatch):
    with pytest.raises(ValueError, match="^eviction=lru: not one of its values; allowed: one of fifo, hotfifo"):
        autopager.Pager(eviction="lru")
    with pytest.raises(ValueError, match="eviction=2"):
        autopager.Pager(eviction=2)
    monkeypatch.setenv("UMAP_EVICTION", "lru")
    with pytest.raises(ValueError, match=r'eviction \(UMAP_EVICTION\) = "lru"'):
        autopager.Pager()


def test_a_policy_that_sees_refaults_counts_them(tmp_path):
    # A hot page among a scan of more than the buffer, under S3-FIFO: evicted from its small FIFO, faulted
    # again while its ghost queue remembers it, the hot page is counted as a refault and kept.
    path = tmp_path / "data"
    page, pages = 64 << 10, 256
    path.write_bytes(bytes(page * pages))
    with autopager.Pager(page_size=page, buffer_size=32 * page, eviction="s3fifo", read_ahead=0) as pager:
        a = pager.memmap(path, mode="r")
        for p in range(1, pages):
            assert a[p * page] == 0 and a[0] == 0
        stats = pager.stats()
        del a
    assert stats["policy_refaults"] >= 1 and stats["policy_promotions"] >= 1, stats
    assert stats["fills"] < 2 * pages, stats


def test_changing_only_the_page_size_keeps_the_buffer_in_bytes():
    with autopager.Pager(buffer_size="8MiB") as small, autopager.Pager(page_size="1MiB") as large:
        assert small.config["buffer_size"] == 8 << 20
        default = autopager.Pager(buffer_size=None)
        # The default is a share of the memory available at each pager's start, which moves a little between
        # the two; one counted in pages of the new size would be many times larger.
        assert large.config["buffer_size"] == pytest.approx(default.config["buffer_size"], rel=0.05)
        default.close()


def test_stats_count_the_paging(path):
    with autopager.Pager(page_size=65536, buffer_size="1MiB") as pager:
        a = pager.memmap(path, dtype=np.float32, mode="r+")
        assert a.sum() == np.arange(1 << 20, dtype=np.float32).sum()
        a[:1000] = 0
        stats = pager.stats()
        assert set(stats) == STATS
        assert stats["fills"] >= 64 and stats["bytes_read"] >= 4 << 20 and stats["evictions"] >= 48
        assert stats["resident_bytes"] <= stats["peak_resident_bytes"] <= 16 * 65536
        pager.flush()
        assert pager.stats()["dirty_pages"] == 0 and pager.stats()["write_backs"] >= 1
    assert pager.stats()["fills"] >= 64  # the counters at closing


def test_two_pagers_with_different_page_sizes_at_once(path, tmp_path):
    other = tmp_path / "other.bin"
    with autopager.Pager(page_size=4096, buffer_size="256KiB") as small, \
            autopager.Pager(page_size="1MiB", buffer_size="2MiB") as large:
        a = small.memmap(path, dtype=np.float32, mode="r")
        b = large.memmap(other, dtype=np.float32, mode="w+", shape=a.shape)
        for start in range(0, a.size, 100_000):
            b[start:start + 100_000] = a[start:start + 100_000] * 2
        assert small.stats()["fills"] >= 1024 and large.stats()["fills"] >= 4
        assert large.stats()["bytes_read"] % (1 << 20) == 0
        del a, b
    assert np.array_equal(np.fromfile(other, dtype=np.float32), np.arange(1 << 20, dtype=np.float32) * 2)


def test_several_arrays_share_one_buffer(path, tmp_path):
    with autopager.Pager(page_size=65536, buffer_size="1MiB") as pager:
        arrays = [pager.memmap(path, dtype=np.float32, mode="r") for _ in range(3)]
        assert all(a[-1] == (1 << 20) - 1 for a in arrays)
        assert pager.stats()["resident_bytes"] <= 16 * 65536
        assert all(a.region.pager is arrays[0].region.pager for a in arrays)


def test_arrays_without_parameters_share_the_default_pager(path):
    a = autopager.memmap(path, dtype=np.float32, mode="r")
    b = autopager.memmap(path, dtype=np.float32, mode="c")
    assert a.region.pager is b.region.pager
    config = autopager.default_pager().config
    # the page chosen for the default buffer, of which the buffer keeps the whole pages
    pages, page = config["buffer_size"] // config["page_size"], config["page_size"]
    assert _native.page_size_for_buffer(pages * page) <= page <= _native.page_size_for_buffer(pages * page + page - 1)
    assert autopager.default_pager().stats()["page_size"] == page


def test_a_buffer_without_a_page_size_gets_the_pagers_page_for_it(monkeypatch):
    monkeypatch.delenv("UMAP_PAGESIZE", raising=False)
    system = os.sysconf("SC_PAGE_SIZE")
    for buffer_size, page_size in (("64KiB", system), ("8MiB", max(system, 8192)), ("64MiB", max(system, 65536)),
                                   ("1GiB", 1 << 20), ("4GiB", 1 << 20)):
        config = native_config({"buffer_size": buffer_size})
        assert config.page_size == page_size and config.buffer_bytes() == parse_size(buffer_size)
    config = native_config({"buffer_size": "8MiB", "page_size": "64KiB"})  # a page size given wins
    assert config.page_size == 65536 and config.buffer_pages == 128
    monkeypatch.setenv("UMAP_PAGESIZE", str(system))  # so does one in the environment: UMap's 4 KiB pages
    config = native_config({"buffer_size": "1GiB"})
    assert config.page_size == system and config.buffer_bytes() == 1 << 30


def test_umap_bufsize_without_a_page_size_counts_system_pages(path):
    script = ("import autopager; p = autopager.default_pager(); "
              "print(p.config['page_size'], p.config['buffer_size'])")
    system = os.sysconf("SC_PAGE_SIZE")
    result = run_python(script, path.parent, env={"UMAP_BUFSIZE": str((256 << 20) // system)})
    assert result.stdout.split() == [str(max(system, 256 << 10)), str(256 << 20)], result.stderr
    result = run_python(script, path.parent, env={"UMAP_BUFSIZE": "1000", "UMAP_PAGESIZE": str(system)})
    assert result.stdout.split() == [str(system), str(1000 * system)], result.stderr


def test_the_environment_configures_the_default_pager(path):
    script = ("import autopager; p = autopager.default_pager(); "
              "print(p.config['page_size'], p.config['fillers'], p.config['buffer_size'])")
    result = run_python(script, path.parent, env={"UMAP_PAGESIZE": "16384", "UMAP_PAGE_FILLERS": "3",
                                                  "UMAP_BUFSIZE": "100"})
    assert result.stdout.split() == ["16384", "3", str(100 * 16384)], result.stderr


def test_a_profile_mapping_file_or_name(path, tmp_path, monkeypatch):
    pytest.importorskip("autopager.profiles")
    monkeypatch.setenv("AUTOPAGER_PROFILE_DIR", str(tmp_path / "profiles"))
    profile_file = tmp_path / "profiles" / "demo" / "default@here.yaml"
    profile_file.parent.mkdir(parents=True)
    profile_file.write_text("workload: demo\nparams:\n  page_size: 32KiB\n  buffer_size: 4MiB\n  fillers: 2\n"
                            "searched: [page_size, buffer_size, fillers]\n")
    for profile in ({"page_size": "32KiB", "buffer_size": "4MiB", "fillers": 2}, profile_file, "demo"):
        with autopager.Pager(profile=profile) as pager:
            assert pager.config["page_size"] == 32768 and pager.config["buffer_size"] == 4 << 20
    # a buffer size the profile's study did not search is the user's, not the profile's
    profile_file.write_text("workload: demo\nparams:\n  page_size: 32KiB\n  buffer_size: 4MiB\n  fillers: 2\n"
                            "searched: [page_size, fillers]\n")
    monkeypatch.setenv("UMAP_BUFSIZE", "1000")  # pages of the system page
    for profile in (profile_file, "demo"):
        with autopager.Pager(profile=profile) as pager:
            assert pager.config["page_size"] == 32768 and pager.config["fillers"] == 2
            assert pager.config["buffer_size"] == 1000 * os.sysconf("SC_PAGE_SIZE")
        with autopager.Pager(profile=profile, buffer_size="2MiB") as pager:
            assert pager.config["buffer_size"] == 2 << 20
    with autopager.Pager(profile="demo", page_size="8KiB") as pager:  # arguments override the profile
        assert pager.config["page_size"] == 8192 and pager.config["fillers"] == 2
    a = autopager.memmap(path, dtype=np.float32, mode="r", profile="demo")
    assert a[123] == 123


def test_write_protect_is_reported():
    with autopager.Pager(buffer_size="1MiB") as pager:
        assert isinstance(pager.has_write_protect, bool)


def test_flush_lets_other_threads_run(tmp_path):
    """A long write-back releases the GIL: a Python thread keeps counting meanwhile."""
    with autopager.Pager(page_size=4096, buffer_size="64MiB") as pager:
        a = pager.memmap(tmp_path / "dirty.bin", mode="w+", shape=48 << 20)
        a[::4096] = 1  # 12288 dirty pages
        counter, done = [0], threading.Event()

        def count():
            while not done.is_set():
                counter[0] += 1

        thread = threading.Thread(target=count)
        thread.start()
        time.sleep(0.05)
        before, start = counter[0], time.perf_counter()
        pager.flush()
        during, seconds = counter[0] - before, time.perf_counter() - start
        done.set()
        thread.join()
    assert pager.stats()["write_backs"] >= 12288
    assert during > 1000 * seconds, f"the counter advanced {during} in {seconds:.3f} s of flush"
