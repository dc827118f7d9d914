"""The workload programs at tiny sizes: on the pager and on the kernel's mmap they must give the same
checked answer, and bad arguments or missing data must give a clear error and a non-zero exit.

The programs are taken from $AUTOPAGER_BIN, else from build/workloads (cmake -S . -B build && cmake
--build build).
"""
from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from tests.helpers import REPO, corrupt_bfs_vertex_zero

BIN = Path(os.environ.get("AUTOPAGER_BIN") or REPO / "build" / "workloads")
NATIVE = ("bfs", "sort", "kv", "randio", "stream", "lookup")
# A small buffer of small pages, so even tiny data is paged in and out.
PAGER_ENV = {"UMAP_PAGESIZE": "16384", "UMAP_BUFSIZE": "32"}

# (name, program and its size options): each is generated once, then run on both backends.
CASES = [
    ("bfs", ["bfs", "--scale", "12"]),
    ("bfs_searches", ["bfs", "--scale", "12", "--searches", "3"]),
    ("sort", ["sort", "--size-mib", "4"]),
    ("kv_readseq", ["kv", "--benchmark", "readseq", "--size-mib", "4"]),
    ("kv_readrandom", ["kv", "--benchmark", "readrandom", "--size-mib", "4", "--lookups", "3000"]),
    ("kv_readreverse", ["kv", "--benchmark", "readreverse", "--size-mib", "4", "--value-size", "64"]),
    ("kv_readseq_passes", ["kv", "--benchmark", "readseq", "--size-mib", "4", "--passes", "3"]),
    ("randio", ["randio", "--size-mib", "4", "--ops", "3000"]),
    ("randio_writes", ["randio", "--size-mib", "4", "--ops", "3000", "--write-percent", "30", "--record-size", "512"]),
    ("randio_random", ["randio", "--size-mib", "4", "--ops", "3000", "--write-percent", "30", "--contents", "random"]),
    ("stream", ["stream", "--size-mib", "6", "--iterations", "2"]),
    ("lookup_binsearch", ["lookup", "--benchmark", "binsearch", "--size-mib", "4", "--lookups", "5000"]),
    ("lookup_hash", ["lookup", "--benchmark", "hash", "--size-mib", "4", "--lookups", "5000"]),
    ("lookup_time_boxed", ["lookup", "--benchmark", "binsearch", "--size-mib", "4", "--seconds", "0.3"]),
    ("kv_readrandom_time_boxed", ["kv", "--benchmark", "readrandom", "--size-mib", "4", "--seconds", "0.3"]),
    ("numpy_gather", ["numpy_gather.py", "--size-mib", "4", "--gathers", "20000"]),
    ("numpy_gather_time_boxed", ["numpy_gather.py", "--size-mib", "4", "--seconds", "0.3"]),
    ("kv_readrandom_zipf", ["kv", "--benchmark", "readrandom", "--size-mib", "4", "--lookups", "3000", "--keys", "zipf"]),
    ("randio_zipf", ["randio", "--size-mib", "4", "--ops", "3000", "--keys", "zipf", "--zipf-exponent", "0.8"]),
    ("lookup_zipf", ["lookup", "--benchmark", "hash", "--size-mib", "4", "--lookups", "5000", "--keys", "zipf"]),
    ("numpy_gather_zipf", ["numpy_gather.py", "--size-mib", "4", "--gathers", "20000", "--keys", "zipf"]),
]


def command(program: str, *args: str) -> list[str]:
    path = BIN / program
    return ([sys.executable, str(path)] if program.endswith(".py") else [str(path)]) + list(args)


def run(program: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("UMAP_")}
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    environment.update(env or {})
    return subprocess.run(command(program, *args), capture_output=True, text=True, env=environment, timeout=120)


def result_line(proc: subprocess.CompletedProcess) -> dict:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module", autouse=True)
def built():
    missing = [p for p in (*NATIVE, "numpy_gather.py") if not (BIN / p).exists()]
    if missing:
        pytest.fail(f"workload programs {missing} not found in {BIN}: build them (cmake -S . -B build -G Ninja "
                    f"&& cmake --build build) or set AUTOPAGER_BIN")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("workload-data")


@pytest.fixture(scope="module")
def userfaultfd_problem(data_dir):
    """Why the pager cannot run here (userfaultfd refused or absent), or None."""
    proc = run("sort", "--size-mib", "1", "--data-dir", str(data_dir), env=PAGER_ENV)
    if proc.returncode != 0 and "userfaultfd" in proc.stderr:
        return proc.stderr.strip().splitlines()[-1]
    return None


def pager_problem(name: str, userfaultfd_problem: str | None) -> str | None:
    if userfaultfd_problem:
        return f"userfaultfd unavailable: {userfaultfd_problem}"
    if name == "numpy_gather":
        try:
            import autopager._native  # noqa: F401
        except ImportError as error:
            return f"autopager's native module is not built ({error})"
    return None


@pytest.mark.parametrize("name,argv", CASES, ids=[c[0] for c in CASES])
def test_same_checked_answer_on_pager_and_mmap(name, argv, data_dir, userfaultfd_problem):
    program, *args = argv
    args += ["--data-dir", str(data_dir), "--threads", "2"]
    generated = run(program, *args, "--generate")
    assert generated.returncode == 0, generated.stderr
    kernel = result_line(run(program, *args, "--mmap"))
    assert kernel["mode"] == "mmap" and kernel["check"] == "ok" and kernel["stats"] is None
    assert kernel["value"] > 0 and kernel["goal"] in ("minimize", "maximize")
    problem = pager_problem(name, userfaultfd_problem)
    if problem:
        print(f"pager run of {name} skipped: {problem}")
        pytest.skip(problem)
    pager = result_line(run(program, *args, env=PAGER_ENV))
    assert pager["mode"] == "umap" and pager["check"] == "ok"
    assert pager["checksum"] == kernel["checksum"]
    assert pager["metric"] == kernel["metric"] and pager["goal"] == kernel["goal"]
    assert pager["stats"]["fills"] > 0 and pager["stats"]["evictions"] > 0


@pytest.mark.parametrize("argv", [
    ["randio", "--size-mib", "4", "--ops", "1000"],
    ["lookup", "--benchmark", "hash", "--size-mib", "4", "--lookups", "1000"],
    ["numpy_gather.py", "--size-mib", "4", "--gathers", "1000"],
], ids=lambda argv: argv[0])
def test_zipf_keys_are_skewed_and_uniform_ones_not(argv, data_dir):
    # The same number of queries touches far fewer distinct pages when the keys are skewed: with a buffer as
    # large as the data, each page is read once, so the fills count the distinct pages.
    program, *args = argv
    args += ["--data-dir", str(data_dir), "--threads", "2"]
    assert run(program, *args, "--generate").returncode == 0
    whole = {"UMAP_PAGESIZE": "4096", "UMAP_BUFSIZE": str(2 * (4 << 20) // 4096), "UMAP_READ_AHEAD": "0",
             "UMAP_READ_AROUND": "0"}
    fills = {keys: result_line(run(program, *args, "--keys", keys, env=whole))["stats"]["fills"]
             for keys in ("uniform", "zipf")}
    assert fills["zipf"] < 0.8 * fills["uniform"], fills


def test_generated_data_is_reused(data_dir):
    args = ["--size-mib", "2", "--data-dir", str(data_dir)]
    assert run("kv", "--generate", *args).returncode == 0
    data = data_dir / "kv-2m-v128.data"
    before = data.stat().st_mtime_ns
    again = run("kv", "--generate", *args)
    assert again.returncode == 0 and "reusing" in again.stderr
    assert data.stat().st_mtime_ns == before


def test_random_contents_do_not_compress_and_sequences_do(data_dir):
    sizes = {}
    for contents in ("sequence", "random"):
        run("randio", "--size-mib", "4", "--contents", contents, "--generate", "--data-dir", str(data_dir))
        name = "randio-4m-r4096" + ("-random" if contents == "random" else "") + ".dat"
        data = (data_dir / name).read_bytes()
        sizes[contents] = len(zlib.compress(data, 1)) / len(data)
    assert sizes["random"] > 0.99 and sizes["sequence"] < 0.6, sizes


def test_bfs_answer_is_independent_of_threads(data_dir):
    args = ["--scale", "11", "--data-dir", str(data_dir), "--mmap"]
    assert run("bfs", "--generate", *args).returncode == 0
    one, two = (result_line(run("bfs", *args, "--threads", n))["checksum"] for n in ("1", "2"))
    assert one == two


def test_each_bfs_search_reads_the_graph_again_and_finds_the_same_levels(data_dir, userfaultfd_problem):
    if userfaultfd_problem:
        pytest.skip(f"userfaultfd unavailable: {userfaultfd_problem}")
    args = ["--scale", "12", "--data-dir", str(data_dir), "--threads", "2"]
    assert run("bfs", "--generate", *args).returncode == 0
    one, three = (result_line(run("bfs", *args, "--searches", n, env=PAGER_ENV)) for n in ("1", "3"))
    assert one["check"] == three["check"] == "ok" and one["checksum"] == three["checksum"]
    assert three["stats"]["fills"] >= 2 * one["stats"]["fills"], "each search maps the graph anew and reads it again"


def test_a_scan_of_several_passes_reads_every_record_each_time(data_dir):
    args = ["--benchmark", "readreverse", "--size-mib", "2", "--data-dir", str(data_dir), "--mmap"]
    assert run("kv", *args, "--generate").returncode == 0
    one, three = (result_line(run("kv", *args, "--passes", n))["checksum"].split() for n in ("1", "3"))
    assert one[0] == three[0] == "readreverse" and one[2] == three[2] == "values"
    assert int(three[1]) == 3 * int(one[1]) and int(three[3]) == 3 * int(one[3])


def test_a_time_boxed_run_lasts_its_seconds(data_dir):
    args = ["--benchmark", "binsearch", "--size-mib", "4", "--data-dir", str(data_dir), "--threads", "2", "--mmap"]
    assert run("lookup", *args, "--generate").returncode == 0
    started = time.monotonic()
    line = result_line(run("lookup", *args, "--seconds", "1"))
    assert time.monotonic() - started >= 1.0
    assert line["check"] == "ok" and line["checksum"] == "binsearch time-boxed, every lookup checked"
    assert line["value"] >= 64, "at least a chunk of lookups a thread in the second"


@pytest.mark.parametrize("program", NATIVE)
def test_unknown_option_is_a_usage_error(program):
    proc = run(program, "--no-such-option", "1")
    assert proc.returncode == 2
    assert "unknown option --no-such-option" in proc.stderr


@pytest.mark.parametrize("program,args,named", [
    ("bfs", ["--scale", "40"], "--scale"),
    ("bfs", ["--searches", "0"], "--searches"),
    ("sort", ["--size-mib", "many"], "--size-mib"),
    ("kv", ["--benchmark", "writerandom"], "--benchmark"),
    ("kv", ["--value-size", "12"], "--value-size"),
    ("randio", ["--record-size", "3000"], "--record-size"),
    ("randio", ["--write-percent", "101"], "--write-percent"),
    ("randio", ["--contents", "zeros"], "--contents"),
    ("stream", ["--iterations", "0"], "--iterations"),
    ("lookup", ["--threads", "0"], "--threads"),
    ("lookup", ["--lookups"], "--lookups"),
    ("lookup", ["--seconds", "-1"], "--seconds"),
    ("kv", ["--benchmark", "readseq", "--seconds", "1"], "--seconds"),
    ("kv", ["--benchmark", "readrandom", "--passes", "2"], "--passes"),
    ("kv", ["--benchmark", "readreverse", "--passes", "0"], "--passes"),
    ("kv", ["--benchmark", "readseq", "--keys", "zipf"], "--keys"),
    ("lookup", ["--keys", "pareto"], "--keys"),
    ("lookup", ["--keys", "zipf", "--zipf-exponent", "1"], "--zipf-exponent"),
    ("randio", ["--keys", "zipf", "--zipf-exponent", "0"], "--zipf-exponent"),
])
def test_bad_value_names_the_option(program, args, named, tmp_path):
    proc = run(program, *args, "--data-dir", str(tmp_path))
    assert proc.returncode == 2, proc.stderr
    assert named in proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize("argv", [
    ["bfs", "--scale", "10"],
    ["kv", "--benchmark", "readseq", "--size-mib", "1"],
    ["randio", "--size-mib", "1"],
    ["lookup", "--benchmark", "hash", "--size-mib", "1"],
    ["numpy_gather.py", "--size-mib", "1"],
], ids=lambda argv: argv[0])
@pytest.mark.parametrize("mode", [[], ["--mmap"]], ids=["umap", "mmap"])
def test_missing_data_is_a_clear_error(argv, mode, tmp_path):
    program, *args = argv
    proc = run(program, *args, *mode, "--data-dir", str(tmp_path / "empty"))
    assert proc.returncode == 1
    assert "--generate" in proc.stderr
    assert "missing" in proc.stderr or "no complete" in proc.stderr


def test_partial_generation_is_not_taken_for_data(tmp_path):
    (tmp_path / "kv-1m-v128.data.partial").write_bytes(b"\0" * 4096)
    proc = run("kv", "--size-mib", "1", "--data-dir", str(tmp_path), "--mmap")
    assert proc.returncode == 1 and "--generate" in proc.stderr


@pytest.mark.parametrize("argv,named", [(["--gathers", "0"], "--gathers"), (["--seconds", "-1"], "--seconds")])
def test_numpy_gather_bad_argument(argv, named):
    proc = run("numpy_gather.py", *argv)
    assert proc.returncode == 2 and named in proc.stderr


def test_numpy_gather_bad_validation_is_a_usage_error(tmp_path):
    proc = run("numpy_gather.py", "--data-dir", str(tmp_path), env={"AUTOPAGER_VALIDATE": "some"})
    assert proc.returncode == 2 and "AUTOPAGER_VALIDATE must be full or checksum, not 'some'" in proc.stderr


def test_numpy_gather_full_validation_reads_what_the_gathers_did_not(tmp_path):
    args = ["--size-mib", "1", "--gathers", "1000", "--data-dir", str(tmp_path), "--mmap"]
    assert run("numpy_gather.py", "--generate", *args).returncode == 0
    path = tmp_path / "numpy_gather-1m.f64"
    with open(path, "r+b") as data:  # element 7 is 7.0; gathering 1000 of 131072 elements leaves it alone
        data.seek(7 * 8)
        data.write(struct.pack("<d", 8.0))
    full = run("numpy_gather.py", *args)
    assert full.returncode == 1 and "check failed: reduction" in full.stderr
    cheap = result_line(run("numpy_gather.py", *args, env={"AUTOPAGER_VALIDATE": "checksum"}))
    assert cheap["check"] == "ok" and cheap["validation"] == "checksum"


def test_help_lists_the_options():
    proc = run("randio", "--help")
    assert proc.returncode == 0 and "--write-percent" in proc.stdout and "--mmap" in proc.stdout


# The programs that skip an expensive check when asked for their checksum only; the others check every read.
CHECKSUM_ONLY = ("bfs", "sort", "stream", "numpy_gather.py")


@pytest.mark.parametrize("name,argv", CASES, ids=[c[0] for c in CASES])
def test_checksum_mode_keeps_the_checksum_and_says_what_it_checked(name, argv, data_dir):
    program, *args = argv
    args += ["--data-dir", str(data_dir), "--threads", "2", "--mmap"]
    assert run(program, *args, "--generate").returncode == 0
    full = result_line(run(program, *args))
    cheap = result_line(run(program, *args, env={"AUTOPAGER_VALIDATE": "checksum"}))
    assert full["validation"] == "full" and full["check"] == cheap["check"] == "ok"
    assert cheap["validation"] == ("checksum" if program in CHECKSUM_ONLY else "full")
    assert cheap["checksum"] == full["checksum"] != ""


def test_bfs_full_validation_catches_what_checksum_mode_leaves_to_the_checksum(tmp_path):
    args = ["--scale", "10", "--data-dir", str(tmp_path), "--mmap"]
    assert run("bfs", "--generate", *args).returncode == 0
    intact = result_line(run("bfs", *args, env={"AUTOPAGER_VALIDATE": "checksum"}))
    corrupt_bfs_vertex_zero(tmp_path, 10)
    full = run("bfs", *args)
    assert full.returncode == 1 and "check failed: edge" in full.stderr
    assert json.loads(full.stdout.splitlines()[-1])["validation"] == "full"
    cheap = result_line(run("bfs", *args, env={"AUTOPAGER_VALIDATE": "checksum"}))
    assert cheap["check"] == "ok" and cheap["validation"] == "checksum"  # the edge check was skipped
    assert cheap["checksum"].startswith("reached 1 depth 0") and cheap["checksum"] != intact["checksum"]


@pytest.mark.parametrize("program", NATIVE)
def test_an_unknown_validation_is_a_usage_error(program, tmp_path):
    proc = run(program, "--data-dir", str(tmp_path), env={"AUTOPAGER_VALIDATE": "some"})
    assert proc.returncode == 2 and "AUTOPAGER_VALIDATE must be full or checksum, not 'some'" in proc.stderr
