"""Bad settings and unwritable places end the tuner with one line, never a traceback: checked before the study
directory is written where they can be (status 2), and a disk that fills mid-study stops it (status 1) leaving
no temporary file behind and its recorded trials resumable."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers import autopager_process

QUICK = ["workload=synthetic", "workload.size=1", "runner.page_cache=keep", "strategy=default", "confirm.rounds=0",
         "noise.defaults_runs=1"]


def autopager(*args: str) -> tuple[int, str, str]:
    process = autopager_process(*args)
    out, err = process.communicate(timeout=300)
    assert "Traceback" not in out + err, out + err
    return process.returncode, out, err


@pytest.fixture
def tmpfs(tmp_path):
    """A mount of its own (to make read-only or full), unmounted after the test."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (CI runs as root)")
    mounted = []

    def mount(size: str, *options: str) -> Path:
        point = tmp_path / f"mount{len(mounted)}"
        point.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join([f"size={size}", *options]), "tmpfs", str(point)],
                       check=True)
        mounted.append(point)
        return point
    yield mount
    for point in mounted:
        subprocess.run(["umount", "-l", str(point)], check=False)


@pytest.mark.parametrize("setting, message", [
    ("launcher.workers=0", "launcher.workers must be a whole number >= 1, not 0"),
    ("workload.size=-1", "workload.size must be positive, not -1"),
    ("study.name=../../x", "study.name='../../x' would leave study.root (outputs): give a name inside it"),
    ("study.name=/tmp/elsewhere", "study.name='/tmp/elsewhere' would leave study.root"),
    ("workload.name=..", "workload.name='..' would leave study.root"),
    ("data_dir=/proc/autopager-data", "data_dir: cannot create /proc/autopager-data: "),
    (["workload=command", "workload.command=true", "workload.name=app", "workload.data_files=[a.bin,b.bin]"],
     "workload.data_files must be one string"),
])
def test_bad_settings_are_one_line_before_the_study_directory_is_written(tuner_home, setting, message):
    code, out, err = autopager("tune", *QUICK, setting) if isinstance(setting, str) else autopager("tune", *setting,
                                                                                                   *QUICK[2:])
    assert code == 2 and err.startswith("autopager: error: ") and message in err, err
    assert len(err.splitlines()) == 1, err
    assert not (tuner_home / "outputs").exists() and not (tuner_home / "x").exists()


def test_a_read_only_study_root_is_one_line(tuner_home, tmpfs):
    root = tmpfs("1m", "ro")
    code, out, err = autopager("tune", *QUICK, f"study.root={root}")
    assert code == 2 and "study.root: cannot write the study in" in err and "Read-only file system" in err, err
    assert len(err.splitlines()) == 1, err


def test_a_full_study_root_is_one_line(tuner_home, tmpfs):
    root = tmpfs("64k")
    filler = os.open(root / "filler", os.O_WRONLY | os.O_CREAT)
    with pytest.raises(OSError):
        while True:
            os.write(filler, bytes(4096))
    os.close(filler)
    code, out, err = autopager("tune", *QUICK, f"study.root={root}")
    assert code == 2 and "study.root: cannot write the study in" in err and "No space left on device" in err, err
    assert len(err.splitlines()) == 1, err


def test_a_disk_that_fills_mid_study_stops_it_in_one_line_and_leaves_no_temporary_file(tuner_home, tmpfs):
    root = tmpfs("1m")
    program = tuner_home / "fill.py"
    program.write_text(textwrap.dedent(f"""\
        import json, os
        if not os.path.exists({str(tuner_home / 'filled')!r}):  # the first run fills the study's disk
            open({str(tuner_home / 'filled')!r}, "w").close()
            fill = os.open({str(root / 'disk-filler')!r}, os.O_WRONLY | os.O_CREAT)
            try:
                while True:
                    os.write(fill, bytes(4096))
            except OSError:
                os.close(fill)
        print(json.dumps({{"metric": "seconds", "value": 1.0}}))
        """))
    command = ["tune", "workload=command", f"workload.command='{sys.executable} {program}'", "workload.name=fill",
               "workload.time_process=false", "workload.buffer_size=8MiB", "runner.page_cache=keep",
               "strategy=default", "confirm.rounds=0", "noise.defaults_runs=1", f"study.root={root}"]
    code, out, err = autopager(*command)
    assert code == 1 and "the study stopped: cannot write" in err and "No space left on device" in err, err
    assert len([line for line in err.splitlines() if line.startswith("autopager")]) == 1, err
    left = [path.name for path in root.rglob("*") if path.name.endswith(".tmp")]
    assert not left, left
    (root / "disk-filler").unlink()
    code, out, err = autopager(*command)  # room again: the study resumes and ends
    assert code == 0, err
