"""Transparent mode: real, unmodified programs (LMDB, the sqlite3 shell, numpy.memmap, Python's mmap) run
with and without `autopager exec` must read and write the same bytes, and the pager's statistics must show
that it served their mappings. The data is a few MiB; the pager's buffer is smaller.

With direct_io=1 the pager's stores read and write the files with O_DIRECT: the preload's summary counts the
mappings served so, and a file read and written that way is (but for its last page) not in the page cache after.

The preload library is $AUTOPAGER_PRELOAD, else build/native/src/preload (cmake --build build); the
workload programs are taken from $AUTOPAGER_BIN, else build/workloads.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from autopager.errors import ConfigError
from autopager.exec import parse, preload_library
from autopager.run.workloads import Workload
from tests.pager_support import small_tmpfs
from tests.helpers import REPO

BIN = Path(os.environ.get("AUTOPAGER_BIN") or REPO / "build" / "workloads")
# Small pages and a buffer of 1 MiB: every data file below is several times larger. Through the page cache
# (O_DIRECT is the pager's default) unless a test asks for O_DIRECT (exec_settings).
PAGE = 64 << 10
SETTINGS = ["page_size=64KiB", "buffer_size=1MiB", "fillers=2", "evictors=1", "direct_io=0", "min_size=1MiB",
            "print_stats=1"]


@pytest.fixture(scope="module", autouse=True)
def built():
    try:
        preload_library()
    except ConfigError as error:
        pytest.fail(str(error))


def environment() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("UMAP_") and k != "LD_PRELOAD"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    return env


def run(argv, cwd, transparent: bool, settings=SETTINGS, status: int = 0, env=None) -> subprocess.CompletedProcess:
    """`argv` as is, or under `autopager exec` with `settings` (and the variables `env` besides); it must end
    with `status` (-N: signal N)."""
    if transparent:
        argv = [sys.executable, "-m", "autopager.cli.main", "exec", *settings, "--", *argv]
    proc = subprocess.run(argv, cwd=cwd, env={**environment(), **(env or {})}, capture_output=True, text=True,
                          timeout=180)
    assert proc.returncode == status, f"{argv} ended with {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc


def run_python(script: str, cwd, transparent: bool, settings=SETTINGS, status: int = 0,
               env=None) -> subprocess.CompletedProcess:
    return run([sys.executable, "-c", textwrap.dedent(script)], cwd, transparent, settings, status, env)


def pager_stats(stderr: str) -> list[dict]:
    """The statistics each pager printed at exit (UMAP_PRINT_STATS=1)."""
    return [json.loads(line.split(":", 1)[1]) for line in stderr.splitlines() if line.startswith("autopager stats:")]


def preload_summary(stderr: str) -> tuple[int, int]:
    """(mappings served, mappings handed to the kernel) from the preload's line at exit."""
    match = re.search(r"autopager preload: served (\d+) file mappings .*handed (\d+) to the kernel", stderr)
    assert match, f"no preload summary in:\n{stderr}"
    return int(match.group(1)), int(match.group(2))


def direct_mappings(stderr: str) -> int:
    """Of the mappings served, those whose store read and wrote the file with O_DIRECT."""
    match = re.search(r"autopager preload: served \d+ file mappings \(.*, (\d+) with O_DIRECT\)", stderr)
    assert match, f"no preload summary in:\n{stderr}"
    return int(match.group(1))


def assert_served(proc: subprocess.CompletedProcess, mappings: int | None = None, handed_over: int | None = None,
                  direct_io: bool = False):
    stats = pager_stats(proc.stderr)
    assert stats and stats[0]["read_faults"] + stats[0]["write_faults"] > 0, proc.stderr
    assert stats[0]["fills"] > 0 and stats[0]["evictions"] > 0, stats  # out of core: the buffer is smaller
    served, handed = preload_summary(proc.stderr)
    if mappings is not None:
        assert served == mappings, proc.stderr
    if handed_over is not None:
        assert handed == handed_over, proc.stderr
    assert direct_mappings(proc.stderr) == (served if direct_io else 0), proc.stderr
    return stats[0]


def exec_settings(directory: Path, direct_io: bool) -> list[str]:
    """SETTINGS, with direct_io=1 if asked: then only on a file system with O_DIRECT (the test is skipped elsewhere,
    saying why: the store would use the page cache there, and nothing would show O_DIRECT)."""
    if not direct_io:
        return SETTINGS
    probe = directory / "o_direct.probe"
    probe.write_bytes(b"")
    try:
        os.close(os.open(probe, os.O_RDONLY | os.O_DIRECT))
    except OSError as error:
        pytest.skip(f"the file system of {directory} has no O_DIRECT ({error})")
    finally:
        probe.unlink()
    return [s for s in SETTINGS if s != "direct_io=0"] + ["direct_io=1"]


def cached_bytes(path: Path) -> int:
    """Bytes of the file in the kernel's page cache (fincore, of util-linux)."""
    fincore = shutil.which("fincore")
    assert fincore, "fincore is not installed (Debian: util-linux)"
    out = subprocess.run([fincore, "--bytes", "--noheadings", "--output", "RES", str(path)], capture_output=True,
                         text=True, check=True).stdout
    return int(out.split()[0])


def drop_from_page_cache(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    assert cached_bytes(path) == 0, f"{path} stays in the page cache"


def twin_files(tmp_path, name: str, data: bytes) -> tuple[Path, Path]:
    """The same bytes in two directories: one for the kernel's run, one for the preload's."""
    paths = []
    for side in ("kernel", "preload"):
        (tmp_path / side).mkdir(exist_ok=True)
        path = tmp_path / side / name
        path.write_bytes(data)
        paths.append(path)
    return paths[0], paths[1]


def numbers(megabytes: int, seed: int = 0) -> bytes:
    return np.random.default_rng(seed).integers(0, 1 << 40, megabytes << 17, dtype=np.int64).tobytes()


# --- numpy.memmap -------------------------------------------------------------------------------------

NUMPY_SCRIPT = """
    import hashlib, numpy as np
    a = np.memmap("data.bin", dtype=np.int64, mode="r")
    print("read", int(a.sum()), hashlib.sha256(a[::-1].tobytes()).hexdigest())
    del a
    w = np.memmap("data.bin", dtype=np.int64, mode="r+")
    w[::997] = w[::997] * 3 + 1
    w[-5:] = np.arange(5)
    w.flush()
    print("after flush", int(w.sum()))
    del w
    b = np.memmap("data.bin", dtype=np.int64, mode="r")
    print("reread", int(b.sum()), hashlib.sha256(b.tobytes()).hexdigest())
"""


# With direct_io, files whose last page is partial (the script writes their last bytes): 1000 bytes (not a
# multiple of the system page: written back through the page cache) or 8 KiB (aligned: with O_DIRECT).
@pytest.mark.parametrize("direct_io, tail", [(False, 0), (True, 1000), (True, 8192)],
                         ids=["page-cache", "direct-io-unaligned-end", "direct-io-short-last-page"])
def test_numpy_memmap_reads_and_writes_as_on_the_kernel(tmp_path, direct_io, tail):
    data = numbers(6) + numbers(1, seed=9)[:tail]
    kernel, preload = twin_files(tmp_path, "data.bin", data)
    settings = exec_settings(tmp_path, direct_io)
    if direct_io:
        drop_from_page_cache(preload)
    expected = run_python(NUMPY_SCRIPT, kernel.parent, transparent=False)
    served = run_python(NUMPY_SCRIPT, preload.parent, transparent=True, settings=settings)
    assert served.stdout == expected.stdout
    if direct_io:  # read and written around the page cache: at most the partial last page went through it
        assert cached_bytes(preload) <= PAGE, f"{cached_bytes(preload)} bytes of {len(data)} in the page cache"
    assert preload.stat().st_size == len(data)
    assert preload.read_bytes() == kernel.read_bytes()
    stats = assert_served(served, mappings=3, handed_over=0, direct_io=direct_io)
    assert stats["write_backs"] > 0


# --- the sqlite3 shell --------------------------------------------------------------------------------

def make_sqlite_database(path: Path) -> None:
    import sqlite3
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
    connection.executemany("INSERT INTO t VALUES (?, ?)", ((i, f"{i * 2654435761 % 4294967296:08x}" * 24)
                                                            for i in range(30000)))
    connection.commit()
    connection.close()


SQL_READ = ("PRAGMA mmap_size = 268435456; SELECT count(*), sum(length(v)), sum(unicode(substr(v, 3, 1)) * id) "
            "FROM t; SELECT v FROM t WHERE id IN (7, 20000, 29999);")
SQL_WRITE = ("PRAGMA mmap_size = 268435456; SELECT sum(unicode(substr(v, 3, 1)) * id) FROM t; "
             "UPDATE t SET v = upper(v) WHERE id % 7 = 0; SELECT sum(unicode(substr(v, 3, 1)) * id) FROM t; "
             "PRAGMA integrity_check;")


@pytest.mark.parametrize("direct_io", [False, True], ids=["page-cache", "direct-io"])
def test_sqlite3_shell_with_mmap_reads_and_writes_as_on_the_kernel(tmp_path, direct_io):
    sqlite3 = shutil.which("sqlite3")
    assert sqlite3, "the sqlite3 shell is not installed (Debian: sqlite3; .ci/run installs it)"
    settings = exec_settings(tmp_path, direct_io)
    make_sqlite_database(tmp_path / "base.db")
    kernel, preload = twin_files(tmp_path, "t.db", (tmp_path / "base.db").read_bytes())
    assert kernel.stat().st_size > 4 << 20

    expected = run([sqlite3, str(kernel), SQL_READ], tmp_path, transparent=False)
    served = run([sqlite3, str(preload), SQL_READ], tmp_path, transparent=True, settings=settings)
    assert served.stdout == expected.stdout
    assert_served(served, mappings=1, handed_over=0, direct_io=direct_io)

    # SQLite writes with pwrite() while its map is served: the map goes to the kernel at the first write.
    expected = run([sqlite3, str(kernel), SQL_WRITE], tmp_path, transparent=False)
    served = run([sqlite3, str(preload), SQL_WRITE], tmp_path, transparent=True, settings=settings)
    assert served.stdout == expected.stdout and served.stdout.strip().endswith("ok")
    assert_served(served, mappings=1, handed_over=1, direct_io=direct_io)
    check = run([sqlite3, str(preload), "PRAGMA integrity_check; " + SQL_READ], tmp_path, transparent=False)
    assert check.stdout == run([sqlite3, str(kernel), "PRAGMA integrity_check; " + SQL_READ], tmp_path,
                               transparent=False).stdout


# --- LMDB ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def lmdb_data(tmp_path_factory):
    program = BIN / "lmdb"
    if not program.exists():
        pytest.fail(f"the lmdb workload is not in {BIN}: build it (liblmdb-dev) or set AUTOPAGER_BIN")
    data = tmp_path_factory.mktemp("lmdb-data")
    run([str(program), "--generate", "--size-mib", "6", "--data-dir", str(data)], data, transparent=False)
    return data


@pytest.mark.parametrize("direct_io", [False, True], ids=["page-cache", "direct-io"])
@pytest.mark.parametrize("benchmark,length", [("readseq", []), ("readrandom", ["--lookups", "3000"]),
                                              ("readrandom", ["--seconds", "0.3"]), ("readreverse", [])],
                         ids=["readseq", "readrandom", "readrandom-time-boxed", "readreverse"])
def test_lmdb_workload_reads_the_same_through_the_preload(benchmark, length, direct_io, lmdb_data):
    argv = [str(BIN / "lmdb"), "--benchmark", benchmark, "--size-mib", "6", *length,
            "--data-dir", str(lmdb_data), "--threads", "2"]
    kernel = json.loads(run(argv, lmdb_data, transparent=False).stdout.splitlines()[-1])
    proc = run(argv, lmdb_data, transparent=True, settings=exec_settings(lmdb_data, direct_io))
    served = json.loads(proc.stdout.splitlines()[-1])
    assert kernel["check"] == served["check"] == "ok"
    assert served["checksum"] == kernel["checksum"]
    assert (kernel["mode"], served["mode"]) == ("mmap", "preload")
    assert served["stats"]["read_faults"] > 0  # the program's own report
    assert_served(proc, mappings=1, handed_over=0, direct_io=direct_io)


LMDB_SCRIPT = """
    import hashlib, sys, lmdb
    writemap = sys.argv[1] == "writemap"
    def digest(env):
        h = hashlib.sha256()
        with env.begin() as txn:
            for key, value in txn.cursor():
                h.update(key + value)
        return h.hexdigest()
    env = lmdb.open("db", map_size=64 << 20, writemap=writemap)
    print("before", digest(env))
    with env.begin(write=True) as txn:
        for i in range(0, 20000, 3):
            txn.put(b"key%08d" % i, b"updated %d " % i * 8)
        for i in range(20000, 21000):
            txn.put(b"key%08d" % i, b"new %d" % i)
        txn.delete(b"key%08d" % 5)
    with env.begin() as txn:  # read back through the map, in the process that wrote
        print("read back", txn.get(b"key%08d" % 3), txn.get(b"key%08d" % 20500), txn.get(b"key%08d" % 5))
    print("after", digest(env))
    env.close()
    env = lmdb.open("db", map_size=64 << 20, readonly=True)
    print("reopened", digest(env), env.stat()["entries"])
"""


def lmdb_digest(directory: Path) -> tuple[str, int]:
    """The database's records hashed in key order, and their number, read in this process (the kernel's mmap)."""
    import hashlib
    import lmdb
    env = lmdb.open(str(directory), map_size=64 << 20, readonly=True, lock=False)
    try:
        digest = hashlib.sha256()
        with env.begin() as txn:
            for key, value in txn.cursor():
                digest.update(key + value)
        return digest.hexdigest(), env.stat()["entries"]
    finally:
        env.close()


@pytest.mark.parametrize("direct_io", [False, True], ids=["page-cache", "direct-io"])
@pytest.mark.parametrize("mode", ["pwrite", "writemap"])
def test_lmdb_writes_are_read_back_and_survive_reopening(mode, direct_io, tmp_path):
    import lmdb
    settings = exec_settings(tmp_path, direct_io)
    for side in ("kernel", "preload"):
        (tmp_path / side).mkdir()
        env = lmdb.open(str(tmp_path / side / "db"), map_size=64 << 20)
        with env.begin(write=True) as txn:
            for i in range(20000):
                txn.put(b"key%08d" % i, b"value %d " % i * 20)
        env.close()
    assert (tmp_path / "preload" / "db" / "data.mdb").stat().st_size > 2 << 20
    script = [sys.executable, "-c", textwrap.dedent(LMDB_SCRIPT), mode]
    expected = run(script, tmp_path / "kernel", transparent=False)
    served = run(script, tmp_path / "preload", transparent=True, settings=settings)
    assert served.stdout == expected.stdout
    assert "b'new 20500'" in served.stdout and "None" in served.stdout
    # Without MDB_WRITEMAP LMDB writes with pwrite(): its read-only map goes to the kernel first.
    stats = assert_served(served, handed_over=1 if mode == "pwrite" else 0, direct_io=direct_io)
    if mode == "writemap":
        assert stats["write_backs"] > 0
    # Reopened afterwards here, on the kernel's mmap: the same database as the kernel's run made.
    assert lmdb_digest(tmp_path / "preload" / "db") == lmdb_digest(tmp_path / "kernel" / "db")


# --- fork, exec, one file mapped twice, write() while mapped, and changes to a served mapping ------------

FORK_SCRIPT = """
    import hashlib, mmap, os
    f = open("data.bin", "r+b")
    m = mmap.mmap(f.fileno(), 0)
    first = hashlib.sha256(m[: len(m) // 2]).hexdigest()
    m[100:200] = b"p" * 100                      # written by the parent before fork, not yet flushed
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(w, hashlib.sha256(m[:]).hexdigest().encode())
        os._exit(0)
    os.close(w)
    child = os.read(r, 100).decode()
    os.waitpid(pid, 0)
    m[len(m) - 10:] = b"q" * 10                   # and after
    print(first, child, hashlib.sha256(m[:]).hexdigest())
    m.close()
"""


def test_a_forked_child_sees_the_mapping_as_it_was(tmp_path):
    kernel, preload = twin_files(tmp_path, "data.bin", numbers(5, seed=1))
    expected = run_python(FORK_SCRIPT, kernel.parent, transparent=False)
    served = run_python(FORK_SCRIPT, preload.parent, transparent=True)
    assert served.stdout == expected.stdout
    assert preload.read_bytes() == kernel.read_bytes()
    assert_served(served, mappings=1, handed_over=0)


def test_writes_through_the_map_survive_os_exit(tmp_path):
    script = """
        import mmap, os
        f = open("data.bin", "r+b")
        m = mmap.mmap(f.fileno(), 0)
        m[1000:1010] = b"e" * 10
        m[len(m) - 10:] = b"z" * 10
        os._exit(0)                                # no flush, no close: the kernel's page cache keeps them
    """
    kernel, preload = twin_files(tmp_path, "data.bin", numbers(3, seed=6))
    run_python(script, kernel.parent, transparent=False)
    run_python(script, preload.parent, transparent=True)
    assert preload.read_bytes() == kernel.read_bytes()
    assert b"e" * 10 in preload.read_bytes()


PRIVATE_SCRIPT = """
    import hashlib, mmap, os
    import numpy as np
    c = np.memmap("data.bin", dtype=np.int64, mode="c")      # MAP_PRIVATE, PROT_READ | PROT_WRITE
    c[::501] = -7                                             # more than the buffer: written pages are evicted
    print("private", int(c.sum()), hashlib.sha256(c.tobytes()).hexdigest())
    r, w = os.pipe()
    pid = os.fork()                                           # the child gets the private view as it was
    if pid == 0:
        c[1] = 11
        os.write(w, b"%d" % int(c.sum()))
        os._exit(0)
    os.close(w)
    child = int(os.read(r, 100))
    os.waitpid(pid, 0)
    print("child", child, "parent", int(c.sum()), int(c[1]))
    f = open("other.bin", "rb")
    m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
    m[0:5] = b"hello"
    m.madvise(mmap.MADV_DONTNEED)                             # drops the private writes
    print("dropped", m[0:5] != b"hello", hashlib.sha256(m[:]).hexdigest())
"""


def test_private_writable_mappings_keep_their_writes_private(tmp_path):
    files = [twin_files(tmp_path, name, numbers(4, seed=seed)) for seed, name in enumerate(("data.bin", "other.bin"))]
    expected = run_python(PRIVATE_SCRIPT, tmp_path / "kernel", transparent=False)
    served = run_python(PRIVATE_SCRIPT, tmp_path / "preload", transparent=True)
    assert served.stdout == expected.stdout
    for kernel, preload in files:
        assert preload.read_bytes() == kernel.read_bytes() == numbers(4, seed=files.index((kernel, preload)))
    # fork hands the numpy array's mapping to the kernel, MADV_DONTNEED the other's
    stats = assert_served(served, mappings=2, handed_over=2)
    assert stats["write_backs"] > 0  # evicted private pages went to the scratch file


def test_private_writes_beyond_the_free_space_of_tmpdir_are_kept(tmp_path):
    script = """
        import hashlib, mmap
        f = open("data.bin", "rb")
        m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)    # MAP_PRIVATE, PROT_READ | PROT_WRITE
        for at in range(0, len(m), 4096):
            m[at:at + 8] = b"private!"                           # every page: 64 times the scratch space
        print(hashlib.sha256(m[:]).hexdigest(), m[4096 * 7:4096 * 7 + 8])
    """
    kernel, preload = twin_files(tmp_path, "data.bin", numbers(4, seed=11))
    with small_tmpfs(tmp_path / "small", 16 << 10) as fs:
        expected = run_python(script, kernel.parent, transparent=False)
        served = run_python(script, preload.parent, transparent=True, env={"TMPDIR": str(fs.directory)})
    assert served.stdout == expected.stdout and "b'private!'" in served.stdout, served.stderr
    assert preload.read_bytes() == kernel.read_bytes() == numbers(4, seed=11)
    stats = assert_served(served, mappings=1, handed_over=0)
    assert stats["write_backs"] > 0, stats  # evicted pages went to the scratch file, then to memory


EXEC_SCRIPT = """
    import hashlib, mmap, subprocess, sys
    with open("data.bin", "rb") as f:
        m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    print("parent", hashlib.sha256(m[:]).hexdigest())
    child = "import hashlib, mmap; f = open('data.bin', 'rb'); " \\
            "print('child', hashlib.sha256(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)[:]).hexdigest())"
    print(subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, check=True).stdout, end="")
"""


def test_a_child_program_is_served_too(tmp_path):
    kernel, preload = twin_files(tmp_path, "data.bin", numbers(5, seed=2))
    expected = run_python(EXEC_SCRIPT, kernel.parent, transparent=False)
    served = run_python(EXEC_SCRIPT, preload.parent, transparent=True)
    assert served.stdout == expected.stdout
    assert_served(served, mappings=1)
    # The child's own pager (its stderr went to the parent's capture) is not visible here; run it alone:
    child = run_python("import hashlib, mmap; f = open('data.bin', 'rb'); "
                       "print(hashlib.sha256(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)[:]).hexdigest())",
                       preload.parent, transparent=True)
    assert child.stdout.strip() in served.stdout
    assert_served(child, mappings=1)


TWICE_SCRIPT = """
    import hashlib, mmap
    f = open("data.bin", "r+b")
    a = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    b = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ, offset=mmap.ALLOCATIONGRANULARITY * 16)
    print("two readers", hashlib.sha256(a[:]).hexdigest(), hashlib.sha256(b[:]).hexdigest())
    w = mmap.mmap(f.fileno(), 0)                  # a writer beside them
    w[5000:5100] = b"w" * 100
    print("the readers see it", a[5000:5004], b[:4] == w[mmap.ALLOCATIONGRANULARITY * 16:][:4])
    w.flush()
"""


def test_one_file_mapped_twice_and_written_through_one(tmp_path):
    kernel, preload = twin_files(tmp_path, "data.bin", numbers(5, seed=3))
    expected = run_python(TWICE_SCRIPT, kernel.parent, transparent=False)
    served = run_python(TWICE_SCRIPT, preload.parent, transparent=True)
    assert served.stdout == expected.stdout and "b'wwww'" in served.stdout
    assert preload.read_bytes() == kernel.read_bytes()
    # Both readers served; the writer goes to the kernel, and the readers with it.
    assert_served(served, mappings=2, handed_over=2)


WRITE_SCRIPT = """
    import hashlib, mmap, os
    fd = os.open("data.bin", os.O_RDWR)
    m = mmap.mmap(fd, 0, mmap.MAP_SHARED, mmap.PROT_READ)
    before = hashlib.sha256(m[:]).hexdigest()
    other = os.open("data.bin", os.O_WRONLY)
    os.pwrite(other, b"x" * 5000, 12345)          # through another descriptor, while mapped and resident
    print(before, m[12340:12350], hashlib.sha256(m[:]).hexdigest())
"""


def test_a_write_to_a_mapped_file_is_read_back_through_the_map(tmp_path):
    kernel, preload = twin_files(tmp_path, "data.bin", numbers(5, seed=4))
    expected = run_python(WRITE_SCRIPT, kernel.parent, transparent=False)
    served = run_python(WRITE_SCRIPT, preload.parent, transparent=True)
    assert served.stdout == expected.stdout and "xxxxx" in served.stdout
    assert_served(served, mappings=1, handed_over=1)


READ_SCRIPT = """
    import ctypes, hashlib, mmap, os, subprocess, sys
    import numpy as np
    # Written through a writable map, then fsync: another process reads it from the file.
    fd = os.open("synced.bin", os.O_RDWR)
    m = mmap.mmap(fd, 0)
    m[4096:4106] = b"s" * 10
    os.fsync(fd)
    other = subprocess.run([sys.executable, "-c", "print(open('synced.bin', 'rb').read()[4096:4106])"],
                           env={k: v for k, v in os.environ.items() if k != "LD_PRELOAD"},
                           capture_output=True, text=True, check=True).stdout.strip()
    print("fsync", other)
    # Written through a writable map, then read with pread(): the read sees it.
    f = open("read.bin", "r+b")
    w = mmap.mmap(f.fileno(), 0)
    w[70000:70010] = b"r" * 10
    reader = os.open("read.bin", os.O_RDONLY)
    print("pread", os.pread(reader, 20, 69995), w[69995:70015])
    # A mapping with MAP_FIXED over part of a served one.
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    g = open("fixed.bin", "r+b")
    x = mmap.mmap(g.fileno(), 0)
    x[100:110] = b"f" * 10
    start = np.frombuffer(x, dtype=np.uint8).ctypes.data
    tail = len(x) // 2 // mmap.PAGESIZE * mmap.PAGESIZE
    placed = libc.mmap(start + tail, len(x) - tail, mmap.PROT_READ | mmap.PROT_WRITE,
                       mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x10, -1, 0)
    assert placed == start + tail, ctypes.get_errno()
    print("fixed", x[100:110], hashlib.sha256(x[:tail]).hexdigest(), x[tail:tail + 4], x[-4:])
    x[-4:] = b"anon"
    print("anonymous part", x[-4:])
"""


def test_reads_and_fsync_of_a_file_written_through_its_map_and_map_fixed(tmp_path):
    files = [twin_files(tmp_path, name, numbers(5, seed=seed))
             for seed, name in enumerate(("synced.bin", "read.bin", "fixed.bin"))]
    expected = run_python(READ_SCRIPT, tmp_path / "kernel", transparent=False)
    served = run_python(READ_SCRIPT, tmp_path / "preload", transparent=True)
    assert served.stdout == expected.stdout and "b'ssssssssss'" in served.stdout
    for kernel, preload in files:
        assert preload.read_bytes() == kernel.read_bytes()
    # fsync writes back and keeps the mapping served; pread and MAP_FIXED hand theirs to the kernel
    assert preload_summary(served.stderr) == (3, 2), served.stderr


CHANGES_SCRIPT = """
    import ctypes, hashlib, mmap, os
    import numpy as np
    libc = ctypes.CDLL(None, use_errno=True)
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    def address(m):
        return np.frombuffer(m, dtype=np.uint8).ctypes.data
    # madvise that keeps the contents is a no-op on a served mapping
    f = open("advise.bin", "r+b")
    size = os.fstat(f.fileno()).st_size
    a = mmap.mmap(f.fileno(), 0)
    a[0:3] = b"abc"
    a.madvise(mmap.MADV_DONTNEED)
    a.madvise(mmap.MADV_WILLNEED)
    print("advised", a[0:3], hashlib.sha256(a[:]).hexdigest())
    # mremap (mmap.resize, which truncates the file too) after a write through the map
    a[size - 3:size] = b"xyz"
    a.resize(size // 2)
    print("resized", a[0:3], len(a), hashlib.sha256(a[:]).hexdigest())
    a.close()
    # mprotect to read-only after a write
    f = open("protect.bin", "r+b")
    b = mmap.mmap(f.fileno(), 0)
    b[10:13] = b"def"
    assert libc.mprotect(address(b), len(b), mmap.PROT_READ) == 0, ctypes.get_errno()
    print("protected", b[10:13], hashlib.sha256(b[:]).hexdigest())
    b.flush()
    # munmap of the second half of one of two mappings
    f = open("unmap.bin", "rb")
    c = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    d = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    half = len(c) // 2 // mmap.PAGESIZE * mmap.PAGESIZE
    assert libc.munmap(address(c) + half, len(c) - half) == 0, ctypes.get_errno()
    print("half unmapped", hashlib.sha256(c[:half]).hexdigest(), hashlib.sha256(d[:]).hexdigest())
"""


def test_madvise_mremap_mprotect_and_partial_munmap_on_served_mappings(tmp_path):
    files = [twin_files(tmp_path, name, numbers(5, seed=seed))
             for seed, name in enumerate(("advise.bin", "protect.bin", "unmap.bin"))]
    settings = [s for s in SETTINGS if not s.startswith("buffer_size")] + ["buffer_size=8MiB"]
    expected = run_python(CHANGES_SCRIPT, tmp_path / "kernel", transparent=False)
    served = run_python(CHANGES_SCRIPT, tmp_path / "preload", transparent=True, settings=settings)
    assert served.stdout == expected.stdout
    for kernel, preload in files:
        assert preload.read_bytes() == kernel.read_bytes()
    # resize (its ftruncate), mprotect and the partial munmap hand their mapping to the kernel; the
    # advice does not. The other mapping of the file unmapped in part stays served.
    served_count, handed = preload_summary(served.stderr)
    assert (served_count, handed) == (4, 3), served.stderr


FULL_DISK_SCRIPT = """
    import ctypes, errno, os, subprocess
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    size, page = os.path.getsize("small/data.bin"), 64 << 10
    fd = os.open("small/data.bin", os.O_RDWR)
    base = libc.mmap(None, size, 3, 1, fd, 0)                   # PROT_READ | PROT_WRITE, MAP_SHARED
    for at in range(11, size, page):
        ctypes.memset(base + at, 7, 1)
    first = libc.munmap(base, size)                             # the tmpfs has no room for the pages
    print("first munmap", first, errno.errorcode.get(ctypes.get_errno()))
    print("still mapped", all(ctypes.string_at(base + at, 1) == b"\\x07" for at in range(11, size, page)))
    subprocess.run(["mount", "-o", "remount,size=4m", "small"], check=True)
    print("second munmap", libc.munmap(base, size))
"""


def test_a_munmap_whose_write_back_fails_keeps_the_mapping_for_a_later_munmap(tmp_path):
    with small_tmpfs(tmp_path / "small", 16 << 10) as fs:
        path = fs.directory / "data.bin"
        with open(path, "wb") as file:
            file.truncate(1 << 20)
        # Pages of 4 KiB: each write-back fits the tmpfs whole or fails with ENOSPC, never in part.
        settings = [s for s in SETTINGS if not s.startswith(("buffer_size", "page_size"))] + [
            "buffer_size=4MiB", "page_size=4KiB"]
        proc = run_python(FULL_DISK_SCRIPT, tmp_path, transparent=True, settings=settings)
        assert proc.stdout.splitlines() == ["first munmap -1 ENOSPC", "still mapped True", "second munmap 0"], \
            proc.stderr
        assert "it stays mapped" in proc.stderr
        data = path.read_bytes()
        assert all(data[at] == 7 for at in range(11, len(data), 64 << 10))
        assert data.count(0) == len(data) - len(data) // (64 << 10)


def test_a_program_whose_main_thread_calls_pthread_exit_ends_and_keeps_its_writes(tmp_path):
    script = """
        import ctypes, mmap
        f = open("data.bin", "r+b")
        m = mmap.mmap(f.fileno(), 0)
        for at in range(0, len(m), 4096):
            m[at] = 7
        print("written", flush=True)
        ctypes.CDLL(None).pthread_exit(None)                 # the last thread: glibc calls exit(0)
    """
    kernel, preload = twin_files(tmp_path, "data.bin", numbers(3, seed=12))
    expected = run_python(script, kernel.parent, transparent=False)
    served = run_python(script, preload.parent, transparent=True)
    assert served.stdout == expected.stdout == "written\n"
    assert preload.read_bytes() == kernel.read_bytes()
    assert_served(served, mappings=1, handed_over=0)


@pytest.mark.parametrize("call", ["os.execv('/bin/sh', ['sh', '-c', 'exit 0'])",
                                  "os.execlp('sh', 'sh', '-c', 'exit 0')"], ids=["execv", "execlp"])
def test_writes_through_the_map_survive_an_exec_of_the_process(tmp_path, call):
    script = f"""
        import mmap, os
        f = open("data.bin", "r+b")
        m = mmap.mmap(f.fileno(), 0)
        for at in range(0, len(m), 4096):
            m[at] = 9
        {call}                                                 # the kernel's page cache keeps the writes
    """
    kernel, preload = twin_files(tmp_path, "data.bin", numbers(3, seed=13))
    run_python(script, kernel.parent, transparent=False)
    run_python(script, preload.parent, transparent=True)
    assert preload.read_bytes() == kernel.read_bytes() != numbers(3, seed=13)


TRUNCATE_SCRIPT = """
    import ctypes, mmap, os
    libc = ctypes.CDLL(None, use_errno=True)
    libc.fopen.restype = ctypes.c_void_p
    libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    libc.fputs.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
    maps = {}
    for name in ("truncate.bin", "open.bin", "fopen.bin", "hole.bin", "zero.bin"):
        f = open(name, "r+b")
        m = mmap.mmap(f.fileno(), 0)
        m[100:110] = b"w" * 10
        m[len(m) - 10:] = b"z" * 10                          # dirty pages at both ends
        maps[name] = m
    os.truncate("truncate.bin", 6)                           # truncate(2)
    with open("open.bin", "w") as g:                         # open(O_TRUNC)
        g.write("hello\\n")
    stream = libc.fopen(b"fopen.bin", b"w")                  # the C library's own open
    libc.fputs(b"fopened\\n", stream)
    libc.fclose(stream)
    fd = os.open("hole.bin", os.O_RDWR)
    assert libc.fallocate(fd, 3, 0, 1 << 20) == 0, ctypes.get_errno()        # PUNCH_HOLE | KEEP_SIZE
    fd = os.open("zero.bin", os.O_RDWR)
    assert libc.fallocate(fd, 0x10, 4096, 8192) == 0, ctypes.get_errno()     # ZERO_RANGE
    for name, m in maps.items():                             # a truncated one only within its new end
        rest = (m[4090:4100], m[len(m) - 4:]) if name in ("hole.bin", "zero.bin") else ()
        print(name, os.path.getsize(name), m[:8], m[100:110], *rest)
"""


def test_truncation_and_fallocate_of_a_file_written_through_its_map(tmp_path):
    names = ("truncate.bin", "open.bin", "fopen.bin", "hole.bin", "zero.bin")
    files = [twin_files(tmp_path, name, numbers(3, seed=seed)) for seed, name in enumerate(names)]
    expected = run_python(TRUNCATE_SCRIPT, tmp_path / "kernel", transparent=False)
    served = run_python(TRUNCATE_SCRIPT, tmp_path / "preload", transparent=True)
    assert served.stdout == expected.stdout and "open.bin 6 b'hello\\n" in served.stdout
    # The stale dirty pages never come back over what the truncation, open or fallocate left.
    for kernel, preload in files:
        assert preload.read_bytes() == kernel.read_bytes(), preload.name
    assert [path.stat().st_size for path, _ in files[:3]] == [6, 6, 8]
    assert preload_summary(served.stderr) == (5, 5), served.stderr


TRUNCATED_READ_SCRIPT = """
    import mmap, os, sys
    f = open("data.bin", "r+b")
    m = mmap.mmap(f.fileno(), 0)
    m[len(m) - 10:] = b"z" * 10
    with open("data.bin", "wb") as g:
        g.write(b"short")
    print(m[:5], flush=True)
    print(m[len(m) - 1], flush=True)                         # past the new end: SIGBUS, as with the kernel
"""


def test_a_mapping_past_the_end_of_a_file_truncated_by_open_is_sigbus(tmp_path):
    kernel, preload = twin_files(tmp_path, "data.bin", numbers(3, seed=9))
    expected = run_python(TRUNCATED_READ_SCRIPT, kernel.parent, transparent=False, status=-signal.SIGBUS)
    served = run_python(TRUNCATED_READ_SCRIPT, preload.parent, transparent=True, status=-signal.SIGBUS)
    assert served.stdout == expected.stdout == "b'short'\n"
    assert preload.read_bytes() == kernel.read_bytes() == b"short"


SPAWN_SCRIPT = """
    import ctypes, mmap, os, subprocess, sys
    libc = ctypes.CDLL(None)
    libc.popen.restype = ctypes.c_void_p
    libc.popen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    libc.fgets.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p]
    libc.pclose.argtypes = [ctypes.c_void_p]
    f = open("data.bin", "r+b")
    m = mmap.mmap(f.fileno(), 0)
    def child(at):                                           # reads the file, not the map
        return ["dd", "if=data.bin", "bs=1", f"skip={at}", "count=8", "status=none"]
    def write(i):
        at = (i * 2 + 1) << 20
        m[at:at + 8] = b"spawned%d" % i
        m[i * 4096:i * 4096 + 4096] = b"%d" % i * 4096       # more dirty pages
        return at
    print("subprocess.run", subprocess.run(child(write(0)), capture_output=True).stdout, flush=True)
    out = os.popen(" ".join(child(write(1))))                # subprocess with a shell
    print("os.popen", out.read().encode(), flush=True)
    out.close()
    print("os.system", end=" ", flush=True)
    os.system(" ".join(child(write(2))) + "; echo")          # system(3)
    print("os.posix_spawn", end=" ", flush=True)
    os.waitpid(os.posix_spawnp("dd", child(write(3)), os.environ), 0)
    print(flush=True)
    stream = libc.popen(" ".join(child(write(4))).encode(), b"r")   # popen(3)
    line = ctypes.create_string_buffer(64)
    libc.fgets(line, 64, stream)
    libc.pclose(stream)
    print("popen", line.value, flush=True)
"""


def test_a_child_process_reads_what_was_written_through_the_map(tmp_path):
    kernel, preload = twin_files(tmp_path, "data.bin", numbers(12, seed=10))
    expected = run_python(SPAWN_SCRIPT, kernel.parent, transparent=False)
    served = run_python(SPAWN_SCRIPT, preload.parent, transparent=True)
    assert served.stdout == expected.stdout, served.stderr
    assert all(f"spawned{i}" in served.stdout for i in range(5)), served.stdout
    assert preload.read_bytes() == kernel.read_bytes()
    assert preload_summary(served.stderr) == (1, 0), served.stderr  # written back, still served


# --- `autopager exec` and the tuner ---------------------------------------------------------------------

def test_exec_settings_become_the_pagers_variables():
    env, command = parse(["page_size=64KiB", "buffer_size=1MiB", "min_size=2MiB", "paths=*.mdb:*/big/*",
                          "UMAP_READ_AHEAD=4", "--", "prog", "--flag", "x=y"])
    assert command == ["prog", "--flag", "x=y"]
    assert env == {"UMAP_PAGESIZE": "65536", "UMAP_BUFSIZE": "16", "UMAP_PRELOAD_MIN_SIZE": str(2 << 20),
                   "UMAP_PRELOAD_PATHS": "*.mdb:*/big/*", "UMAP_READ_AHEAD": "4"}
    assert parse(["fillers=2", "prog", "a=b"])[1] == ["prog", "a=b"]
    for bad in (["pagesize=4096", "--", "prog"], ["fillers=2", "--"], ["min_size=lots", "--", "prog"]):
        with pytest.raises(ConfigError):
            parse(bad)


def test_exec_applies_what_a_profile_searched_and_the_user_overrides_it(tmp_path):
    profile = tmp_path / "demo.yaml"
    profile.write_text("workload: demo\nparams:\n  page_size: 32KiB\n  buffer_size: 4MiB\n  fillers: 2\n"
                       "searched: [page_size, fillers]\n")
    env, _ = parse([f"profile={profile}", "--", "prog"])
    assert env == {"UMAP_PAGESIZE": "32768", "UMAP_PAGE_FILLERS": "2"}  # its study held the buffer fixed
    env, _ = parse([f"profile={profile}", "page_size=8KiB", "--", "prog"])
    assert env["UMAP_PAGESIZE"] == "8192"
    profile.write_text("workload: demo\nparams:\n  page_size: 32KiB\n  buffer_size: 4MiB\n"
                       "searched: [page_size, buffer_size]\n")
    assert parse([f"profile={profile}", "--", "prog"])[0] == {"UMAP_PAGESIZE": "32768", "UMAP_BUFSIZE": "128"}


# Random probes of a 16 MiB file through 1 MiB pages and a buffer of 2 of them read a page (most of them
# evicted since) a probe: about 30x the file. A scan reads it once.
PROBES_SCRIPT = """
    import mmap, random
    with open("data.bin", "rb") as f:
        m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
    rng = random.Random(7)
    print(sum(m[rng.randrange(len(m))] for _ in range(512)))
"""
SCAN_SCRIPT = """
    import mmap
    with open("data.bin", "rb") as f:
        m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
    print(sum(m[at] for at in range(0, len(m), 4096)))
"""
LARGE_PAGES = ["page_size=1MiB", "buffer_size=2MiB", "direct_io=0", "min_size=1MiB"]  # no print_stats
AMPLIFICATION = "pages too large or buffer too small for random access"


def test_exec_says_when_a_program_read_many_times_what_it_mapped(tmp_path):
    kernel, preload = twin_files(tmp_path, "data.bin", numbers(16))
    for script, many in ((PROBES_SCRIPT, True), (SCAN_SCRIPT, False)):
        expected = run_python(script, kernel.parent, transparent=False)
        served = run_python(script, preload.parent, transparent=True, settings=LARGE_PAGES)
        assert served.stdout == expected.stdout
        assert (AMPLIFICATION in served.stderr) == many, served.stderr
    line = next(line for line in run_python(PROBES_SCRIPT, preload.parent, transparent=True,
                                            settings=LARGE_PAGES).stderr.splitlines() if AMPLIFICATION in line)
    times = float(re.search(r", ([0-9.]+)x the 16.0 MiB it served", line).group(1))
    assert times > 10, line


def test_exec_reports_a_missing_command(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "autopager.cli.main", "exec", "--", str(tmp_path / "nothing")],
                          env=environment(), capture_output=True, text=True)
    assert proc.returncode == 127 and "cannot run" in proc.stderr


def test_only_matching_paths_are_served(tmp_path):
    path = tmp_path / "data.bin"
    path.write_bytes(numbers(3))
    script = "import mmap; f = open('data.bin', 'rb'); print(sum(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)[::4096]))"
    skipped = run_python(script, tmp_path, transparent=True, settings=SETTINGS + ["paths=*.mdb"])
    assert preload_summary(skipped.stderr) == (0, 0) and not pager_stats(skipped.stderr)
    small = run_python(script, tmp_path, transparent=True, settings=SETTINGS + ["min_size=4MiB"])
    assert preload_summary(small.stderr) == (0, 0)
    served = run_python(script, tmp_path, transparent=True, settings=SETTINGS + ["paths=*.mdb:*/data.bin"])
    assert served.stdout == skipped.stdout == small.stdout
    assert_served(served, mappings=1)


def test_a_transparent_workload_runs_through_the_preload(tmp_path, lmdb_data):
    config = {"name": "lmdb_readseq", "command": "{bin}/lmdb --benchmark readseq --size-mib {size} "
              "--data-dir {data_dir}", "size": 6, "transparent": True}
    workload = Workload.from_config(config, str(lmdb_data))
    argv = workload.argv()
    assert argv[0] == "env" and argv[1] == f"LD_PRELOAD={preload_library()}"
    env = {**environment(), "UMAP_PAGESIZE": "65536", "UMAP_BUFSIZE": "16"}
    result = json.loads(subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout)
    assert result["mode"] == "preload" and result["check"] == "ok" and result["stats"]["read_faults"] > 0


def test_autopager_run_on_an_lmdb_workload(tmp_path, lmdb_data):
    from omegaconf import OmegaConf
    for name in ("lmdb_readseq", "lmdb_readrandom", "lmdb_readreverse"):
        config = OmegaConf.load(REPO / "configs" / "workload" / f"{name}.yaml")
        workload = Workload.from_config(OmegaConf.to_container(config, resolve=True), str(lmdb_data))
        assert workload.transparent and workload.argv()[0] == "env"
        kernel = workload.kernel_mmap()  # baseline.mmap: the same program, without the preload
        assert not kernel.transparent and kernel.argv() == workload.argv()[2:]
    env = {**environment(), "AUTOPAGER_DATA_DIR": str(lmdb_data), "AUTOPAGER_PROFILE_DIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "autopager.cli.main", "run", "workload=lmdb_readrandom",
                           "workload.size=6", "workload.buffer_size=1MiB", "runner.page_cache=keep"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "ops/s:" in proc.stdout
