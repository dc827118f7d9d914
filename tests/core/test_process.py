"""autopager arrays in a process that forks, and a pager that cannot start (each in a Python subprocess,
so that its exit handlers and destructors run as in a user's program)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from autopager.run.memory_limit import MemoryLimit, MemoryLimitError
from tests.helpers import REPO

N = 1 << 16  # int64 values: 512 KiB, 128 pages of 4 KiB

# The parent maps the file (mode r or r+), reads it, writes in r+ (leaving pages dirty), and forks. The
# child either exits normally after deleting the array (destructors and exit handlers run) or touches
# the array; then it maps the file again itself. The parent then reads and writes everything.
FORK_SCRIPT = textwrap.dedent("""
    import os, signal, sys, warnings
    import numpy as np
    import autopager

    path, mode, child_does = sys.argv[1], sys.argv[2], sys.argv[3]
    n = {n}
    a = autopager.memmap(path, dtype=np.int64, mode=mode, buffer_size="64KiB")
    assert int(a[::512].sum()) == sum(range(0, n, 512))
    if mode == "r+":
        a[::1000] = -1                       # dirty, not flushed at the fork
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        child = os.fork()
    if child == 0:
        signal.alarm(60)
        if child_does == "touch":
            print(int(a[n - 1]))             # SIGSEGV: the region is not mapped in the child
        elif child_does == "map":
            b = autopager.memmap(path, dtype=np.int64, mode="r")
            assert int(b[5]) == 5 and int(b[n - 1]) == n - 1
            del b
        del a
        sys.exit(0)                          # a normal exit: atexit, destructors, the pager's exit flush
    _, status = os.waitpid(child, 0)
    print("child", os.waitstatus_to_exitcode(status), flush=True)
    expected = np.arange(n, dtype=np.int64)
    if mode == "r+":
        expected[::1000] = -1
        a[7::1000] = -2                      # writes after the child: no page is left write-protected
        expected[7::1000] = -2
    assert np.array_equal(np.asarray(a), expected), "the parent's view changed"
    del a
    print("parent done", flush=True)
""").format(n=N)


@pytest.mark.parametrize("mode", ["r", "r+"])
@pytest.mark.parametrize("child_does", ["exit", "touch", "map"])
def test_a_forked_child_never_touches_the_parents_file_or_pager(tmp_path, mode, child_does):
    path = tmp_path / "values.i64"
    np.arange(N, dtype=np.int64).tofile(path)
    done = subprocess.run([sys.executable, "-c", FORK_SCRIPT, str(path), mode, child_does], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    child_status = -signal.SIGSEGV if child_does == "touch" else 0
    assert f"child {child_status}\n" in done.stdout, done.stdout + done.stderr
    assert "parent done" in done.stdout
    expected = np.arange(N, dtype=np.int64)
    if mode == "r+":
        expected[::1000] = -1
        expected[7::1000] = -2
    assert np.array_equal(np.fromfile(path, dtype=np.int64), expected)


def test_a_pager_whose_buffers_cannot_be_allocated_raises(tmp_path):
    script = textwrap.dedent("""
        import resource, errno
        import autopager
        from autopager import _native  # loaded before the limit, with its libraries (libnbd's are large)
        with open("/proc/self/status") as status:
            vm_kib = next(int(line.split()[1]) for line in status if line.startswith("VmSize:"))
        limit = (vm_kib << 10) + (112 << 20)  # room for the threads (the watch too), not for a 256 MiB staging page
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        try:
            autopager.Pager(page_size="256MiB", buffer_size="512MiB", fillers=1, evictors=1)
        except OSError as error:
            print("raised", errno.errorcode[error.errno], error)
    """)
    # One BLAS thread: OpenBLAS allocates a buffer per thread lazily, and would die of the limit first.
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO), "OPENBLAS_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("raised ENOMEM"), done.stdout + done.stderr


@pytest.fixture
def memory_cgroup_160mib():
    """A child memory cgroup of 160 MiB (the package's MemoryLimit); skips, saying why, without one."""
    try:
        limit = MemoryLimit(160 << 20).__enter__()
    except MemoryLimitError as error:
        pytest.skip(str(error))
    yield limit
    limit.__exit__(None, None, None)


READ_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import autopager
    path, how = sys.argv[1], sys.argv[2]
    a = np.memmap(path, dtype=np.int64, mode="r") if how == "numpy" else autopager.memmap(path, dtype=np.int64, mode="r")
    n = a.shape[0]
    total = sum(int(a[i:i + (1 << 20)].sum()) for i in range(0, n, 1 << 20))
    assert total == n * (n - 1) // 2, total
    if how == "autopager":
        print("buffer", autopager.default_pager().config["buffer_size"])
    print("read", n * 8)
""")


@pytest.mark.parametrize("how", ["numpy", "autopager"])
def test_reading_more_than_the_memory_cgroup_holds_finishes(tmp_path, memory_cgroup_160mib, how):
    path = tmp_path / "values.i64"
    np.arange(24 << 20, dtype=np.int64).tofile(path)  # 192 MiB

    done = subprocess.run([sys.executable, "-c", READ_SCRIPT, str(path), how], capture_output=True, text=True,
                          timeout=600, cwd=tmp_path, preexec_fn=memory_cgroup_160mib.enter,
                          env={**os.environ, "PYTHONPATH": str(REPO), "OPENBLAS_NUM_THREADS": "1"})
    assert done.returncode == 0, f"status {done.returncode} (-9: the out-of-memory killer)\n{done.stderr}"
    assert f"read {192 << 20}" in done.stdout
    if how == "autopager":
        buffer = int(done.stdout.split("buffer ")[1].split()[0])
        assert buffer <= (160 << 20) * 8 // 10
