"""Data is sacred: a failed write-back raises (flush, close) and keeps the writes, a normal exit with
writes that could not be saved fails with one message, a full scratch space in mode "c" keeps its writes
in memory (a private write never fails, as with numpy.memmap), and a file truncated under an array raises SIGBUS like numpy.memmap
(the kernel's mmap) does, instead of reading zeros."""
import errno
import os
import signal
import textwrap

import numpy as np
import pytest

import autopager
from tests.pager_support import requires_userfaultfd, run_python, small_tmpfs


pytestmark = requires_userfaultfd

PAGE = 4096


@pytest.fixture
def tmpfs(tmp_path):
    with small_tmpfs(tmp_path / "small", 16 * PAGE) as fs:
        yield fs


def sparse_file(directory, size):
    path = directory / "data.bin"
    with open(path, "wb") as file:
        file.truncate(size)
    return path


def test_flush_and_close_raise_when_the_disk_is_full_and_keep_the_writes(tmpfs):
    path = sparse_file(tmpfs.directory, 256 * PAGE)
    pager = autopager.Pager(page_size=PAGE, buffer_size=1024 * PAGE)
    a = pager.memmap(path, dtype=np.uint8, mode="r+")
    a[11::PAGE] = 7
    with pytest.raises(OSError) as failure:
        a.flush()
    assert failure.value.errno == errno.ENOSPC
    with pytest.raises(OSError) as failure:
        pager.close()
    assert failure.value.errno == errno.ENOSPC
    assert not pager.closed, "a pager whose pages could not be written stays open"
    assert pager.stats()["dirty_pages"] > 0
    assert (a[11::PAGE] == 7).all(), "the writes are still in the array"

    tmpfs.grow(1024 * PAGE)
    a.flush()
    pager.close()
    del a
    expected = np.zeros(256 * PAGE, dtype=np.uint8)
    expected[11::PAGE] = 7
    assert np.array_equal(np.fromfile(path, dtype=np.uint8), expected)


def test_a_normal_exit_with_unwritten_pages_fails_with_one_message(tmpfs):
    path = sparse_file(tmpfs.directory, 256 * PAGE)
    script = textwrap.dedent(f"""
        import numpy as np, autopager
        a = autopager.memmap({str(path)!r}, dtype=np.uint8, mode="r+", page_size={PAGE}, buffer_size={1024 * PAGE})
        a[11::{PAGE}] = 7
        print("written", flush=True)
    """)
    result = run_python(script, tmpfs.directory.parent)
    assert "written" in result.stdout, result.stderr
    assert result.returncode == 74, result.stderr
    lines = result.stderr.splitlines()
    assert sum("could not be written back at exit" in line for line in lines) == 1, result.stderr
    assert len(lines) == 1, result.stderr


def test_mode_c_with_its_scratch_space_full_keeps_its_writes_in_memory(tmpfs, tmp_path):
    path = tmp_path / "base.bin"
    np.arange(256 * PAGE, dtype=np.uint8).tofile(path)
    script = textwrap.dedent(f"""
        import numpy as np, autopager
        a = autopager.memmap({str(path)!r}, dtype=np.uint8, mode="c", page_size={PAGE}, buffer_size={8 * PAGE})
        a[:] = 1                                  # 16 times the scratch space, 32 times the buffer
        a[::{PAGE}] = 2
        print("kept", int(a.sum()), flush=True)
    """)
    result = run_python(script, tmp_path, env={"TMPDIR": str(tmpfs.directory)})
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"kept {256 * PAGE + 256}\n", result.stderr  # as numpy.memmap: a private write never fails
    assert (np.fromfile(path, dtype=np.uint8) == np.arange(256 * PAGE, dtype=np.uint8)).all(), "mode c never writes the file"


@pytest.mark.parametrize("reader", ["numpy.memmap", "autopager.memmap"])
def test_a_file_truncated_under_an_array_raises_sigbus(tmp_path, reader):
    path = tmp_path / "data.bin"
    np.arange(64 * PAGE, dtype=np.uint8).tofile(path)
    open_array = (f"np.memmap({str(path)!r}, dtype=np.uint8, mode='r')" if reader == "numpy.memmap" else
                  f"autopager.memmap({str(path)!r}, dtype=np.uint8, mode='r', page_size={PAGE}, "
                  f"buffer_size={8 * PAGE})")
    script = textwrap.dedent(f"""
        import os, numpy as np, autopager
        a = {open_array}
        first = int(a[0]) + int(a[-1])
        os.truncate({str(path)!r}, {2 * PAGE})
        print("truncated", int(a[{PAGE + 5}]), flush=True)
        print("read past the end:", int(a[{40 * PAGE}]), flush=True)
    """)
    result = run_python(script, tmp_path)
    assert f"truncated {(PAGE + 5) % 256}" in result.stdout, result.stderr
    assert "read past the end" not in result.stdout, result.stdout
    assert result.returncode == -signal.SIGBUS, result.stderr
