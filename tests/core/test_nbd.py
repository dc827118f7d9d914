"""Arrays and workloads on an NBD export served by a real nbdkit (memory and file plugins) that the tests
start and stop: memmap("nbd+unix://...") with every byte compared, each compression, the modes an export
allows, a server that is not there or that dies (reads SIGBUS in a child, never zeros), and the workloads'
--nbd option (STREAM, randio and bfs) giving the same checked answer as on their files.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import autopager
from autopager.run.nbdkit import Nbdkit
from tests.helpers import REPO

BIN = Path(os.environ.get("AUTOPAGER_BIN") or REPO / "build" / "workloads")
SMALL = {"page_size": "16KiB", "buffer_size": "512KiB"}

pytestmark = pytest.mark.skipif(shutil.which("nbdkit") is None, reason="nbdkit is not installed (apt-get install nbdkit)")


@pytest.fixture
def nbd_memory(tmp_path):
    server = Nbdkit(tmp_path, "memory", "64M")
    yield server
    server.stop()


@pytest.mark.parametrize("compression", ["none", "lz4", "zstd"])
def test_memmap_on_an_export_keeps_every_byte(nbd_memory, compression):
    rng = np.random.default_rng(1)
    values = np.concatenate([np.arange(300_000, dtype=np.float64), rng.random(300_000)])  # compressible, then not
    with autopager.Pager(compression=compression, **SMALL) as pager:
        assert pager.config["compression"] == compression
        array = pager.memmap(nbd_memory.uri, dtype=np.float64, mode="r+", shape=values.shape)
        array[:] = values
        pager.flush()
        assert np.array_equal(array, values)  # read back through evictions (the buffer holds 1/9 of it)
        del array
    # Raw pages on the export hold the data as it is; the same pager settings read it all back.
    if compression == "none":
        again = autopager.memmap(nbd_memory.uri, dtype=np.float64, mode="r", shape=values.shape, **SMALL)
        assert np.array_equal(again, values)


def test_export_is_its_own_size_and_modes_say_what_fits(nbd_memory):
    whole = autopager.memmap(nbd_memory.uri, mode="r", **SMALL)
    assert whole.shape == (64 << 20,)
    assert whole.filename == nbd_memory.uri
    part = autopager.memmap(nbd_memory.uri, dtype=np.uint32, mode="r+", offset=1 << 20, shape=(1000,), **SMALL)
    part[:] = np.arange(1000, dtype=np.uint32)
    del part
    raw = autopager.memmap(nbd_memory.uri, dtype=np.uint32, mode="r", shape=((1 << 20) // 4 + 1000,), **SMALL)
    assert np.array_equal(raw[(1 << 20) // 4:], np.arange(1000, dtype=np.uint32))
    with pytest.raises(ValueError, match="does not grow"):
        autopager.memmap(nbd_memory.uri, mode="r+", shape=(65 << 20,), **SMALL)
    with pytest.raises(ValueError, match="mode 'r\\+'"):
        autopager.memmap(nbd_memory.uri, mode="w+", shape=(10,), **SMALL)
    copy = autopager.memmap(nbd_memory.uri, dtype=np.uint32, mode="c", offset=1 << 20, shape=(1000,), **SMALL)
    copy[:] = 7
    del copy
    assert np.array_equal(autopager.memmap(nbd_memory.uri, dtype=np.uint32, mode="r", offset=1 << 20, shape=(1000,),
                                           **SMALL), np.arange(1000, dtype=np.uint32))


def test_file_plugin_serves_the_file(tmp_path):
    path = tmp_path / "data.bin"
    data = np.arange(1 << 18, dtype=np.uint32)
    data.tofile(path)
    server = Nbdkit(tmp_path, "file", str(path))
    try:
        array = autopager.memmap(server.uri, dtype=np.uint32, mode="r+", **SMALL)
        assert np.array_equal(array, data)
        array[::5] = 1
        del array
        expected = data.copy()
        expected[::5] = 1
        assert np.array_equal(np.fromfile(path, dtype=np.uint32), expected)
    finally:
        server.stop()


def test_no_server_and_bad_compression_are_clear_errors(tmp_path):
    with pytest.raises(OSError, match="nbd.sock"):
        autopager.memmap(f"nbd+unix:///?socket={tmp_path}/nbd.sock", mode="r", **SMALL)
    with pytest.raises(ValueError, match="^compression=gzip: not one of its values; allowed: one of none, lz4, zstd"):
        autopager.Pager(compression="gzip", **SMALL)


def test_server_killed_mid_run_is_sigbus_not_zeros(nbd_memory):
    script = f"""
import sys, numpy as np, autopager
array = autopager.memmap({nbd_memory.uri!r}, mode="r+", page_size="16KiB", buffer_size="256KiB")
array[:1000] = 3
print(int(array[0]), flush=True)
sys.stdin.readline()             # the test kills the server here
print(int(array[40 << 20]), flush=True)  # a page never read: SIGBUS, never 0
"""
    child = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(REPO)})
    assert child.stdout.readline().strip() == "3"
    nbd_memory.kill()
    out, _ = child.communicate("\n", timeout=120)
    assert out == "" and child.returncode == -signal.SIGBUS


@pytest.mark.parametrize("compression", ["none", "lz4"])
@pytest.mark.parametrize("case", [["stream", "--size-mib", "6"], ["randio", "--size-mib", "4", "--ops", "3000",
                                  "--write-percent", "30"], ["randio", "--size-mib", "4", "--ops", "3000",
                                  "--write-percent", "30", "--contents", "random"], ["bfs", "--scale", "12"]])
def test_workloads_on_an_export_give_the_checked_answer(nbd_memory, tmp_path, case, compression):
    program = BIN / case[0]
    if not program.exists():
        pytest.fail(f"{program} is missing: build the workloads (cmake --build build) or set AUTOPAGER_BIN")
    data = ["--data-dir", str(tmp_path / "data"), "--threads", "2"]
    env = {**os.environ, "UMAP_PAGESIZE": "16384", "UMAP_BUFSIZE": "32", "UMAP_COMPRESSION": compression}
    subprocess.run([program, *case[1:], *data, "--generate"], check=True, env=env)
    local = subprocess.run([program, *case[1:], *data], env=env, capture_output=True, text=True)
    remote = subprocess.run([program, *case[1:], *data, "--nbd", nbd_memory.uri], env=env, capture_output=True,
                            text=True)
    assert local.returncode == 0, local.stderr
    assert remote.returncode == 0, remote.stderr
    on_file, on_export = json.loads(local.stdout.splitlines()[-1]), json.loads(remote.stdout.splitlines()[-1])
    assert on_export["check"] == "ok" and on_export["checksum"] == on_file["checksum"]
    assert on_export["stats"]["fills"] > 0


def test_workload_nbd_option_is_checked(tmp_path):
    program = BIN / "stream"
    result = subprocess.run([program, "--data-dir", str(tmp_path), "--nbd", "/tmp/file"], capture_output=True, text=True)
    assert result.returncode == 2 and "--nbd must be an NBD URI" in result.stderr
