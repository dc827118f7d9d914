"""autopager.memmap and autopager.empty against numpy.memmap: modes, layouts, persistence, out-of-core."""
import os
import textwrap

import numpy as np
import pytest

import autopager
from tests.pager_support import requires_userfaultfd, run_python


pytestmark = requires_userfaultfd

SMALL = {"page_size": 4096, "buffer_size": "256KiB", "fillers": 2, "evictors": 1}


@pytest.fixture
def data_file(tmp_path):
    """A file of 1,000,003 random bytes (not a whole number of pages)."""
    path = tmp_path / "data.bin"
    np.random.default_rng(1).integers(0, 256, 1_000_003, dtype=np.uint8).tofile(path)
    return path


LAYOUTS = [
    {"dtype": np.uint8},
    {"dtype": np.float64, "shape": (1000, 120), "order": "F"},
    {"dtype": np.int32, "offset": 4100, "shape": (3000, 7)},
    {"dtype": np.int16, "offset": 12345},
]


@pytest.mark.parametrize("mode", ["r", "r+", "c"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_reads_the_same_values_as_numpy_memmap(data_file, mode, layout):
    if layout.get("offset") == 12345 and "shape" not in layout:
        layout = {**layout, "shape": (1_000_003 - 12345) // 2}
    expected = np.memmap(data_file, mode="r", **layout)
    actual = autopager.memmap(data_file, mode=mode, **layout, **SMALL)
    assert isinstance(actual, autopager.PagedArray) and actual.mode == mode
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    assert actual.flags.f_contiguous == expected.flags.f_contiguous
    assert actual.tobytes(order="A") == expected.tobytes(order="A")  # random bytes: floats may be NaN
    assert actual.filename == os.path.abspath(data_file)


@pytest.mark.parametrize("mode", ["r+", "c"])
def test_writes_read_back_like_numpy_memmap(data_file, tmp_path, mode):
    copy = tmp_path / "copy.bin"
    copy.write_bytes(data_file.read_bytes())
    expected = np.memmap(copy, dtype=np.uint16, mode=mode, shape=400_000)
    actual = autopager.memmap(data_file, dtype=np.uint16, mode=mode, shape=400_000, **SMALL)
    for array in (expected, actual):
        array[::3] += 7
        array[1000:2000] = np.arange(1000)
    assert np.array_equal(actual, expected)
    actual.flush()
    expected.flush()
    assert data_file.read_bytes() == copy.read_bytes()


def test_mode_w_plus_creates_the_same_file_as_numpy_memmap(tmp_path):
    ours, theirs = tmp_path / "ours.bin", tmp_path / "theirs.bin"
    ours.write_bytes(b"old contents to be replaced")
    a = autopager.memmap(ours, dtype=np.float32, mode="w+", shape=(300, 301), offset=8, **SMALL)
    b = np.memmap(theirs, dtype=np.float32, mode="w+", shape=(300, 301), offset=8)
    assert not a.any()
    a[:] = b[:] = np.linspace(0, 1, 300 * 301, dtype=np.float32).reshape(300, 301)
    del a, b
    assert ours.read_bytes() == theirs.read_bytes()


def test_mode_r_plus_extends_a_short_file(tmp_path):
    path = tmp_path / "short.bin"
    path.write_bytes(b"\x01" * 10)
    a = autopager.memmap(path, mode="r+", shape=50_000, **SMALL)
    assert path.stat().st_size == 50_000
    assert a[:10].tolist() == [1] * 10 and not a[10:].any()


def test_copy_on_write_never_changes_the_file_even_after_eviction(data_file):
    original = data_file.read_bytes()
    a = autopager.memmap(data_file, mode="c", page_size=4096, buffer_size="64KiB")
    a[:] = 42  # 245 pages through a 16-page buffer: written pages are evicted and read back
    a.flush()
    assert (a == 42).all()
    assert data_file.read_bytes() == original


def test_the_array_memory_is_the_region(data_file):
    a = autopager.memmap(data_file, dtype=np.uint8, mode="r", offset=4096, **SMALL)
    region = a.region
    assert region.address <= a.ctypes.data < region.address + region.length
    assert a.ctypes.data + a.nbytes <= region.address + region.length
    view = a[100:200]
    assert view.region is region and np.shares_memory(view, a)
    assert type(a + 1) is np.ndarray and type(a[[1, 2, 3]]) is np.ndarray
    assert isinstance(a.sum(), np.integer)


def test_a_window_write_touches_no_byte_outside_it(data_file):
    before = np.fromfile(data_file, dtype=np.uint8)
    a = autopager.memmap(data_file, mode="r+", offset=5000, shape=10_001, page_size=65536)
    a[:] = 255
    del a
    after = np.fromfile(data_file, dtype=np.uint8)
    assert (after[5000:15001] == 255).all()
    assert np.array_equal(after[:5000], before[:5000]) and np.array_equal(after[15001:], before[15001:])


@pytest.mark.parametrize("ending", ["flush", "pager close", "del"])
def test_writes_persist(tmp_path, ending):
    path = tmp_path / "out.bin"
    with autopager.Pager(**SMALL) as pager:
        a = pager.memmap(path, dtype=np.int64, mode="w+", shape=100_000)
        a[:] = np.arange(100_000)
        if ending == "flush":
            a.flush()
        elif ending == "del":
            del a
    assert np.array_equal(np.fromfile(path, dtype=np.int64), np.arange(100_000))


@pytest.mark.parametrize("pager", ["default", "own", "shared"])
def test_writes_persist_after_interpreter_exit(tmp_path, pager):
    path = tmp_path / "exit.bin"
    arguments = {"default": "", "own": ", page_size=8192, buffer_size='128KiB'",
                 "shared": ", pager=autopager.Pager(buffer_size='128KiB')"}[pager]
    script = textwrap.dedent(f"""
        import numpy as np, autopager
        a = autopager.memmap({str(path)!r}, dtype=np.int32, mode="w+", shape=200_000{arguments})
        a[:] = np.arange(200_000)
        b = a[::2]  # a live view at exit
    """)
    result = run_python(script, tmp_path)
    assert result.returncode == 0, result.stderr
    assert np.array_equal(np.fromfile(path, dtype=np.int32), np.arange(200_000))


def test_an_array_8x_its_buffer_reads_and_writes_correctly(tmp_path):
    path = tmp_path / "big.bin"
    n = 2 * 1024 * 1024  # 16 MiB of float64 through a 2 MiB buffer of 4 KiB pages
    with autopager.Pager(page_size=4096, buffer_size="2MiB") as pager:
        a = pager.memmap(path, dtype=np.float64, mode="w+", shape=n)
        for start in range(0, n, 1 << 18):
            a[start:start + (1 << 18)] = np.arange(start, start + (1 << 18))
        assert a.sum() == n * (n - 1) / 2
        idx = np.random.default_rng(2).integers(0, n, 20_000)
        assert np.array_equal(a[idx], idx.astype(np.float64))
        a[idx] = -1.0
        stats = pager.stats()
        assert stats["evictions"] > 2000 and stats["resident_bytes"] <= 2 << 20
        del a
    expected = np.arange(n, dtype=np.float64)
    expected[idx] = -1.0
    assert np.array_equal(np.fromfile(path, dtype=np.float64), expected)


def test_several_files_are_one_array(tmp_path):
    parts = [np.random.default_rng(i).integers(0, 1000, size, dtype=np.int32) for i, size in
             enumerate([1000, 7, 4096, 2500])]
    paths = []
    for i, part in enumerate(parts):
        paths.append(tmp_path / f"part{i}.bin")
        part.tofile(paths[-1])
    whole = np.concatenate(parts)
    a = autopager.memmap(paths, dtype=np.int32, mode="r", **SMALL)
    assert a.filename == [os.path.abspath(p) for p in paths]
    assert np.array_equal(a, whole)
    window = autopager.memmap(paths, dtype=np.int32, mode="r", offset=4 * 1003, shape=5000, **SMALL)
    assert np.array_equal(window, whole[1003:6003])

    b = autopager.memmap(paths, dtype=np.int32, mode="r+", **SMALL)
    b[990:1010] = -5  # across the first three files
    del b
    assert (np.fromfile(paths[0], dtype=np.int32)[990:] == -5).all()
    assert (np.fromfile(paths[1], dtype=np.int32) == -5).all()
    assert (np.fromfile(paths[2], dtype=np.int32)[:3] == -5).all()
    assert np.fromfile(paths[2], dtype=np.int32)[3] == parts[2][3]


@pytest.mark.parametrize("store", ["file", "memory"])
def test_empty_is_a_zero_filled_array_larger_than_its_buffer(tmp_path, store):
    a = autopager.empty((512, 1024), np.float64, store=store, scratch_dir=tmp_path, page_size=4096,
                        buffer_size="512KiB")
    assert a.shape == (512, 1024) and not a.any()
    a[:] = np.arange(1024)
    assert a.sum() == 512 * 1023 * 1024 / 2
    assert list(tmp_path.iterdir()) == []  # the scratch file is unlinked


def test_zero_size_arrays(tmp_path):
    path = tmp_path / "empty.bin"
    path.write_bytes(b"")
    assert autopager.memmap(path, mode="r").shape == (0,)
    assert autopager.empty((0, 5)).shape == (0, 5)


def test_system_calls_read_and_write_the_array_memory(data_file, tmp_path):
    """The kernel touches pages that are not resident (write(2) from the array, readinto into it)."""
    a = autopager.memmap(data_file, mode="r", page_size=4096, buffer_size="64KiB")
    copy = tmp_path / "copy.bin"
    a.tofile(copy)
    assert copy.read_bytes() == data_file.read_bytes()
    b = autopager.empty(a.shape, np.uint8, page_size=4096, buffer_size="64KiB")
    with open(data_file, "rb") as file:
        assert file.readinto(b) == a.size
    assert np.array_equal(a, b)
