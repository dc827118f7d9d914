"""Profiles through the real command: `run` next to the defaults, the user's buffer size kept, profiles of other
data warned about or refused, export of what was tuned only, delete, names never read as files of the working
directory, and broken profiles reported with their file and field."""
import json
import sys
from pathlib import Path

from tests.helpers import TEST_WORKLOADS, autopager_process


def autopager(*args: str) -> tuple[int, str, str]:
    process = autopager_process(*args)
    out, err = process.communicate(timeout=300)
    assert "Traceback" not in out + err, out + err
    return process.returncode, out, err


def app(log: Path, name: str = "envapp", buffer_size: str = "8MiB") -> list[str]:
    return ["workload=command", f"workload.command='{sys.executable} {TEST_WORKLOADS / 'environment.py'} {log}'",
            f"workload.name={name}", "workload.time_process=false", f"workload.buffer_size={buffer_size}",
            "runner.page_cache=keep"]


def runs(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def tuned(log: Path) -> None:
    code, out, err = autopager("tune", *app(log), "strategy=pagesize", "space.page_size={min:4KiB,max:256KiB,factor:4}")
    assert code == 0, err


def test_run_keeps_the_buffer_size_and_measures_the_defaults_in_rounds(tuner_home):
    log = tuner_home / "runs.log"
    tuned(log)
    code, out, err = autopager("profile", "export", "envapp")
    assert code == 0 and out.startswith("# profile envapp/") and out.splitlines()[1:] == [
        "export UMAP_PAGESIZE=65536"], out  # the buffer was not tuned: not exported

    code, out, err = autopager("run", *app(log, buffer_size="32MiB"))
    assert code == 0, err
    last = runs(log)[-1]
    assert last["UMAP_PAGESIZE"] == "65536" and last["UMAP_BUFSIZE"] == str((32 << 20) // (64 << 10))
    assert "warning: profile envapp/" in err and "8MiB buffer; this run has 32MiB" in err
    code, out, err = autopager("run", *app(log, buffer_size="32MiB"), "run.other_data=refuse")
    assert code == 2 and "8MiB buffer" in err and "run.other_data=refuse" in err

    code, out, err = autopager("run", *app(log))
    assert code == 0 and "the figure stored in the profile" in out and "run.rounds=N" in out, out

    before = len(runs(log))
    code, out, err = autopager("run", *app(log), "run.rounds=2")
    assert code == 0, err
    # interleaved, the order turned each round (the defaults do not always run first); the defaults give no page
    # size (the pager chooses it) and the buffer in system pages
    assert [run.get("UMAP_PAGESIZE") for run in runs(log)[before:]] == [None, "65536", "65536", None]
    assert "round 2/2: the defaults: 5 seconds" in out and "round 2/2: profile envapp/" in out
    assert "the defaults: median 5 seconds (5-5 over 2 runs)" in out
    assert "speedup over the defaults: 5.00x" in out


def test_a_profile_of_another_workload_is_applied_with_a_warning_or_refused(tuner_home):
    log = tuner_home / "runs.log"
    tuned(log)
    code, out, err = autopager("run", *app(log, name="otherapp"), "profile=envapp")
    assert code == 0 and "profile envapp/" in err and "was found for workload envapp, not otherapp" in err
    assert runs(log)[-1]["UMAP_PAGESIZE"] == "65536"
    code, out, err = autopager("run", *app(log, name="otherapp"), "profile=envapp", "run.other_data=refuse")
    assert code == 2 and "not otherapp" in err
    code, out, err = autopager("run", *app(log, name="otherapp"))
    assert code == 0 and "with the defaults (no profile yet)" in out


def test_names_are_looked_up_in_the_profile_directory_only(tuner_home):
    log = tuner_home / "runs.log"
    tuned(log)
    Path("envapp").write_bytes(b"\x7fELF\x00\xff\xfe binary")  # the user's program, next to them
    code, out, err = autopager("profile", "export", "envapp")
    assert code == 0 and out.splitlines()[1:] == ["export UMAP_PAGESIZE=65536"], out + err
    (tuner_home / "secret.yaml").write_text("params: {page_size: 4KiB}\nvalue: 42\n")
    for name in ("../secret", "envapp/../../secret", ".."):
        code, out, err = autopager("profile", "show", name)
        assert code == 2 and "value: 42" not in out and "no profile" in err, (name, out, err)


def test_broken_profiles_are_named_with_their_field_and_do_not_break_the_list(tuner_home):
    log = tuner_home / "runs.log"
    tuned(log)
    broken = tuner_home / "profiles" / "envapp" / "size=9@1cpu-1GiB.yaml"
    broken.write_text("workload: envapp\nparams: {page_size: 64KiB, fillers: many}\ndate: '2999-01-01'\n")
    code, out, err = autopager("profile", "list")
    assert code == 0, err
    lines = out.splitlines()
    assert any(line.startswith("envapp/buffer=8MiB@") for line in lines), out  # the tuned profile, for its buffer
    assert any("BROKEN" in line and "params.fillers=many: not an integer" in line for line in lines), out
    code, out, err = autopager("run", *app(log))
    assert code == 2 and str(broken) in err and "params.fillers" in err, err

    code, out, err = autopager("profile", "delete", "envapp")
    assert code == 2 and "has 2 profiles" in err
    code, out, err = autopager("profile", "delete", "envapp/size=9@1cpu-1GiB")
    assert code == 0 and not broken.exists()
    code, out, err = autopager("profile", "delete", "envapp")
    assert code == 0 and out.startswith("deleted ")
    code, out, err = autopager("run", *app(log), "profile=envapp")
    assert code == 2 and "no profile named 'envapp'" in err
