"""What a new user meets first, through the real command: the version, help piped into head, a launcher whose
extra is not installed, shell completion, -q/-v, the profile list and its exports, a profile for a buffer, and the
view of studies (studies, status, summary.json), warnings of a set-up that cannot show the paging, the data's
generation, the Python snippet from the repository's root, and the README's examples on the quick start's study."""
from __future__ import annotations

import itertools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

import numpy
import pandas as pd
import pytest

from autopager.cli.tune import make_study
from autopager.tuner.config import compose
from tests.helpers import REPO, TEST_WORKLOADS, autopager_process
from tests.run.test_kernel_mmap import cgroups_unavailable

QUICK = ["workload=synthetic", "workload.size=1", "runner.page_cache=keep"]
PYPROJECT_VERSION = re.search(r'^version = "([^"]+)"', (REPO / "pyproject.toml").read_text(), re.M).group(1)


def autopager(*args: str, env=None) -> tuple[int, str, str]:
    process = autopager_process(*args, env=env)
    out, err = process.communicate(timeout=600)
    return process.returncode, out, err


@pytest.mark.parametrize("args", [["--version"], ["tune", "--version"], ["run", "workload=synthetic", "--version"]])
def test_version_is_autopagers(tuner_home, args):
    code, out, err = autopager(*args)
    assert code == 0, err
    assert out.startswith(f"autopager {PYPROJECT_VERSION}") and "Hydra" not in out, out
    version = subprocess.run([sys.executable, "-c", "import autopager; print(autopager.__version__)"],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert version == PYPROJECT_VERSION


def test_help_into_a_closed_pipe_ends_without_a_traceback(tuner_home):
    read, write = os.pipe()
    os.close(read)  # as `| head` that has read what it wanted: every write fails with EPIPE
    process = subprocess.Popen([sys.executable, "-m", "autopager.cli.main", "run", "--help"], stdout=write,
                               stderr=subprocess.PIPE, text=True)
    os.close(write)
    _, err = process.communicate(timeout=120)
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert process.returncode == 141


def test_launcher_ray_without_ray_is_one_line_naming_the_extra(tuner_home):
    hide = tuner_home / "hide_ray"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text(  # `import ray` fails as without Ray installed
        "import sys\n"
        "class Hide:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'ray' or name.startswith('ray.'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, Hide())\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hide), os.environ["PYTHONPATH"]])}
    code, out, err = autopager("tune", *QUICK, "launcher=ray", "budget.trials=1", env=env)
    assert code == 2, out + err
    assert err == "autopager: error: launcher=ray needs ray, which is not installed: pip install 'autopager[ray]'\n"
    assert not (tuner_home / "outputs").exists()


def test_shell_completion_is_not_advertised_and_refused_in_one_line(tuner_home):
    code, out, err = autopager("tune", "--help")
    assert code == 0, err
    assert "shell-completion" not in out and "-sc" not in out and "--version : autopager's version" in out
    code, out, err = autopager("tune", "--shell-completion", "install=bash")
    assert code == 2 and err.startswith("autopager: error: shell completion is not supported") and not out


def test_quiet_prints_only_the_summary_and_verbose_each_run(tuner_home):
    code, quiet, err = autopager("tune", *QUICK, "-q", "strategy=random", "budget.trials=1", "confirm.rounds=0",
                                 "study.name=quiet")
    assert code == 0, err
    assert quiet.lstrip().startswith("study:") and "running" not in quiet and "[  0]" not in quiet, quiet
    assert "speedup over defaults:" in quiet and "best trials:" in quiet
    code, verbose, err = autopager("tune", *QUICK, "-v", "strategy=random", "budget.trials=1", "confirm.rounds=0",
                                   "runner.repeats=2", "study.name=verbose")
    assert code == 0, err
    assert len(re.findall(r"^      runs: [0-9.]+; [0-9.]+ seconds, [0-9.]+ s of wall time", verbose, re.M)) == 2, verbose
    code, out, err = autopager("tune", *QUICK, "-q", "-v")
    assert code == 2 and "give -q (quiet) or -v (verbose), not both" in err


@pytest.fixture
def two_buffers(tuner_home):
    """A profile made at a 1MiB buffer, then a study of the same workload and data at a 64MiB buffer."""
    code, out, err = autopager("tune", *QUICK, "workload.buffer_size=1MiB", "strategy=random", "budget.trials=2")
    assert code == 0, out + err
    code, out, err = autopager("tune", *QUICK, "workload.buffer_size=64MiB", "strategy=default")
    assert code == 0, out + err
    return tuner_home, out


def test_a_study_at_another_buffer_neither_confirms_nor_replaces_a_profile(two_buffers):
    home, out = two_buffers
    table = pd.read_csv(home / "outputs" / "synthetic" / "default-size1-buf64MiB" / "trials.csv")
    assert not (table.buffer_size == 1 << 20).any(), table  # the 1MiB profile was not measured here
    assert "kept: the saved profile" not in out
    assert ("profile synthetic/size=1,threads=1,buffer=1MiB@" in out
            and "was made at a 1MiB buffer: this study's buffer (64MiB) neither confirms nor replaces it" in out), out
    profiles = sorted(path.name for path in (home / "profiles" / "synthetic").iterdir())
    assert len(profiles) == 2 and profiles[0].startswith("size=1,threads=1,buffer=1MiB@"), profiles
    assert profiles[1].startswith("size=1,threads=1,buffer=64MiB@")
    # `run` at a buffer takes the profile made at that buffer, the newer one at another buffer aside
    for buffer in ("1MiB", "64MiB"):
        code, out, err = autopager("run", *QUICK, f"workload.buffer_size={buffer}")
        assert code == 0 and f"with profile synthetic/size=1,threads=1,buffer={buffer}@" in out, out + err
        assert "warning" not in err, err


def test_profile_list_has_a_header_and_the_buffer_and_export_has_formats(two_buffers):
    home, _ = two_buffers
    code, out, err = autopager("profile", "list")
    assert code == 0, err
    header, *rows = out.splitlines()
    assert header.split() == ["profile", "buffer", "value", "speedup", "confirmed", "date"]
    assert len(rows) == 2 and {row.split()[1] for row in rows} == {"1MiB", "64MiB"}, out
    name = next(row.split()[0] for row in rows if row.split()[1] == "1MiB")
    code, env, err = autopager("profile", "export", name)
    assert code == 0 and re.fullmatch(rf"# profile {re.escape(name)}\n(export UMAP_[A-Z_]+=\w+\n)+", env), env + err
    variables = dict(line[len("export "):].split("=") for line in env.splitlines()[1:])
    searched_nothing = next(row.split()[0] for row in rows if row.split()[1] == "64MiB")  # strategy=default's
    code, out, err = autopager("profile", "export", searched_nothing)
    assert code == 0 and out == f"# profile {searched_nothing} searched no parameter: the pager's defaults\n", out
    code, out, err = autopager("profile", "export", name, "--format", "json")
    assert code == 0 and json.loads(out)["environment"] == variables, out + err
    code, out, err = autopager("profile", "export", name, "--format=slurm")
    assert code == 0 and f"#SBATCH --export=ALL,{','.join(f'{k}={v}' for k, v in variables.items())}\n" in out, out
    code, out, err = autopager("profile", "export", name, "--format", "systemd")
    assert code == 0 and out.split("\n", 1)[1] == "[Service]\n" + "".join(
        f'Environment="{k}={v}"\n' for k, v in variables.items()), out
    code, out, err = autopager("profile", "export", name, "--format", "xml")
    assert code == 2 and "--format must be one of env, json, slurm, systemd, not 'xml'" in err


def test_studies_status_and_summary_json(tuner_home):
    code, out, err = autopager("tune", *QUICK, "strategy=random", "budget.trials=2", "study.name=first")
    assert code == 0, out + err
    directory = tuner_home / "outputs" / "synthetic" / "first"
    summary = json.loads((directory / "summary.json").read_text())
    table = pd.read_csv(directory / "trials.csv")
    confirmed = re.search(r"confirmed speedup: +([0-9.]+)x \(per round ([0-9.]+)-([0-9.]+)x", out).groups()
    counted = re.search(r"^trials: +(.*)$", out, re.M).group(1)
    assert counted == (f"2/2 searched; {summary['trials']['defaults_runs']} run of the defaults, "
                       f"{summary['trials']['confirmation_runs']} confirmation runs; 0 failed, 0 capped"), counted
    noise = re.search(r"^noise: +\+-([0-9.]+)% a run", out, re.M).group(1)
    assert f"{100 * summary['noise']['relative']:.1f}" == noise and summary["noise"]["assumed"] is True  # one run
    assert summary["state"] == "finished" and summary["trials"]["done"] == 2 and summary["trials"]["budget"] == 2
    assert summary["trials"]["confirmation_runs"] == int((table.kind == "confirm").sum()) > 0
    assert f"{summary['confirmed']['speedup']:.2f}" == confirmed[0]
    assert summary["buffer_size"] == 64 << 20 and summary["workload"] == "synthetic"
    # a study cut short after its defaults: its table, and a summary.json written after that trial
    code, out, err = autopager("tune", *QUICK, "strategy=random", "budget.trials=0", "study.name=second",
                               "confirm.rounds=0")
    assert code == 0, out + err
    assert json.loads((tuner_home / "outputs" / "synthetic" / "second" / "summary.json").read_text())["trials"][
        "done"] == 0
    code, out, err = autopager("studies")
    assert code == 0, err
    header, *lines = out.splitlines()
    assert header.split()[:4] == ["study", "workload", "trials", "state"] and len(lines) == 2, out
    first = next(line for line in lines if line.startswith("synthetic/first "))
    assert re.search(rf"synthetic \(buffer 64MiB\) +2/2 trials +finished +confirmed {confirmed[0]}x "
                     rf"\({confirmed[1]}-{confirmed[2]}x a round\), trial \d+: ", first), first
    code, out, err = autopager("status", "first")
    assert code == 0, err
    assert "(finished)" in out and f"trials:      {counted}\n" in out and f"confirmed {confirmed[0]}x" in out, out
    assert f"noise:       +-{noise}% a run, assumed (noise.assumed)\n" in out, out
    code, out, err = autopager("report", str(directory))
    assert code == 0, out + err
    assert f"trials: {counted};" in (directory / "report" / "report.md").read_text()
    code, out, err = autopager("status", "synthetic/first", "--json")
    assert code == 0 and json.loads(out)["confirmed"] == summary["confirmed"], out + err
    code, out, err = autopager("status", "nope")
    assert code == 2 and "no study 'nope'" in err


def test_a_study_whose_confirmation_the_saved_profile_wins_names_it(tuner_home):
    """A second study that searches nothing confirms only the saved profile's parameters: the winner is no trial."""
    code, out, err = autopager("tune", *QUICK, "strategy=random", "budget.trials=2", "study.name=first")
    assert code == 0 and "profile:                  saved" in out, out + err
    code, out, err = autopager("tune", *QUICK, "strategy=default", "study.name=again")
    assert code == 0, out + err
    assert re.search(r"^confirmed best: .*, profile: ", out, re.M), out
    code, out, err = autopager("studies")
    again = next(line for line in out.splitlines() if line.startswith("synthetic/again "))
    assert "trial None" not in again and re.search(r"confirmed [0-9.]+x \(.*\), the saved profile: ", again), again
    code, out, err = autopager("report", "outputs/synthetic/again")
    assert code == 0, out + err
    assert ("The confirmed winner: the saved profile's parameters, "
            in (tuner_home / "outputs" / "synthetic" / "again" / "report" / "report.md").read_text())


def test_status_watch_follows_a_running_study_to_its_end(tuner_home):
    gate = tuner_home / "gate"
    command = f"workload.command='{sys.executable} {TEST_WORKLOADS / 'gated.py'} {gate}'"
    tuner = autopager_process("tune", "workload=command", "workload.name=gated", command, "strategy=random",
                              "budget.trials=1", "confirm.rounds=0", "runner.page_cache=keep", "study.name=watched")
    watcher = None
    try:
        summary = tuner_home / "outputs" / "gated" / "watched" / "summary.json"
        while not summary.is_file():  # the defaults' run recorded; the search trial waits at the gate
            assert tuner.poll() is None, tuner.communicate()
            time.sleep(0.1)
        watcher = subprocess.Popen([sys.executable, "-m", "autopager.cli.main", "status", "gated/watched", "--watch", "0.2"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = watcher.stdout.readline()
        assert first.startswith("study:") and first.rstrip().endswith("(running)"), first
        gate.touch()
        out, err = watcher.communicate(timeout=300)
        assert watcher.returncode == 0, err
        assert out.rstrip().split("\n\n")[-1].splitlines()[0].endswith("(finished)"), out  # the last status
        assert "trials:      1/1 searched" in out.split("(finished)")[-1], out
    finally:
        gate.touch()
        tuner.communicate(timeout=300)
        if watcher is not None and watcher.poll() is None:
            watcher.kill()
    assert tuner.returncode == 0


SORT = ["workload=sort", "workload.size=4", "runner.page_cache=keep", "strategy=default", "confirm.rounds=0"]


def test_a_study_that_cannot_show_the_paging_says_so(tuner_home):
    code, out, err = autopager("tune", *SORT, "workload.buffer_size=64MiB")
    assert code == 0, out + err
    assert ("autopager: warning: the workload's data (4MiB) fits in its buffer (workload.buffer_size=64MiB): nothing "
            "is evicted") in err, err
    code, out, err = autopager("tune", "workload=command", "workload.name=instant", "workload.command=/bin/true",
                               "strategy=default", "confirm.rounds=0", "runner.page_cache=keep")
    assert code == 0, out + err
    assert re.search(r"autopager: warning: the defaults' run took \d+ ms: at this length starting the program and "
                     r"the machine's noise outweigh the paging; give a larger workload\.size", err), err
    code, out, err = autopager("tune", *SORT, "workload.buffer_size=1MiB", "study.name=paged")
    assert code == 0, out + err
    assert "fits in its buffer" not in err, err


@pytest.mark.skipif(bool(cgroups_unavailable()), reason=cgroups_unavailable() or "-")
def test_a_kernel_baseline_whose_cgroup_holds_the_data_says_so(tuner_home):
    code, out, err = autopager("tune", *SORT, "workload.buffer_size=1MiB", "baseline.mmap=true")
    assert code == 0, out + err
    assert re.search(r"autopager: warning: the kernel's mmap runs in a \S+ memory cgroup, which holds all the "
                     r"workload's data \(4MiB\): its figure is of data in memory, not paged", err), err


def test_tune_and_run_say_that_they_generate_the_data(tuner_home):
    bfs = ["workload=bfs", "workload.size=8", "workload.buffer_size=1MiB", "runner.page_cache=keep"]
    preparing = "preparing the workload (its data is reused when complete)..."
    code, out, err = autopager("tune", *bfs, "strategy=default", "confirm.rounds=0")
    assert code == 0 and preparing in out.splitlines(), out + err
    code, out, err = autopager("run", *bfs)
    assert code == 0, out + err
    assert out.splitlines()[1] == preparing, out


def test_read_amplification_gives_the_data_in_kib_or_mib(tuner_home):
    """bfs's graph is no whole number of KiB: the summary rounds it (once printed as 556592 bytes' digits).

    A search through a buffer of 8 pages reads the graph about 3 times over (it reads nothing ahead there,
    read_ahead.hpp): two searches, each on a new mapping, read it over 4 times."""
    code, out, err = autopager("tune", "workload=bfs", "workload.size=12", "workload.buffer_size=32KiB",
                               "workload.command='{bin}/bfs --scale {size} --data-dir {data_dir} --threads {threads} "
                               "--searches 2'", "strategy=default", "runner.page_cache=keep")
    assert code == 0, out + err
    data = sum(path.stat().st_size for path in (tuner_home / "data").glob("bfs-s12.*"))
    assert data % 1024 and re.search(rf"^read amplification: +1 of 1 trials read 4x or more of the "
                                     rf"{data / 1024:.0f}KiB of data \(up to [0-9.]+x", out, re.M), out


def test_the_readme_multirun_makes_one_study_a_combination(tuner_home):
    readme = (REPO / "README.md").read_text()
    sweep = re.search(r"^autopager tune -m (.*?)#", readme, re.M).group(1).split()
    settings = [[f"{key}={value}" for value in values.split(",")] for key, values in (w.split("=", 1) for w in sweep)]
    combinations = list(itertools.product(*settings))
    directories = set()
    for overrides in combinations:
        config, choices = compose(list(overrides))
        directories.add(make_study(config, choices).directory)
    assert len(combinations) == 4 and len(directories) == 4, directories


def test_the_readme_python_snippet_runs_as_written_from_the_repository_root(tuner_home):
    """The README's snippet, verbatim, in a fresh clone's root after `pip install .` and the quick start (here its
    profile made small): `import autopager` finds the checkout's autopager/, which has no native module built into
    it; the installed package's (here the repository's, on the path after) serves."""
    code, out, err = autopager("tune", "workload=sort", "workload.size=4", "workload.buffer_size=1MiB",
                               "strategy=default", "confirm.rounds=0", "runner.page_cache=keep")
    assert code == 0 and "profile:" in out, out + err
    snippet = re.search(r"^```python\n(.*?)^```$", (REPO / "README.md").read_text(), re.M | re.S).group(1)
    root = tuner_home / "clone"
    shutil.copytree(REPO / "autopager", root / "autopager", ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    run = subprocess.run([sys.executable, "-"], input=snippet + "print(autopager.__file__)\n", cwd=root,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    total, read, last, module = run.stdout.split()
    words = (1 << 22)
    assert float(total) == words * (words - 1) / 2 and float(last) == words - 1 and int(read) > 0, run.stdout
    assert module == str(root / "autopager" / "__init__.py")
    assert numpy.array_equal(numpy.fromfile(root / "x.bin"), numpy.arange(words - 1000, words, dtype=numpy.float64))


def test_the_readme_shell_lines_are_commands():
    """Every `autopager ...` line of the README's shell blocks names a command the CLI has, one command a line."""
    readme = (REPO / "README.md").read_text()
    lines = [line.split("#")[0].strip() for block in re.findall(r"^```bash\n(.*?)^```$", readme, re.M | re.S)
             for line in block.splitlines() if line.startswith("autopager ")]
    code, usage, err = autopager("--help")
    assert code == 0, err
    commands = set(re.findall(r"^\s+autopager ([a-z-]+)", usage, re.M)) | {"--version", "--help"}
    assert len(lines) > 20 and {"tune", "run", "profile", "exec", "status", "report"} <= commands, commands
    for line in lines:
        words = shlex.split(line)
        assert words[1] in commands and "|" not in words, line
        if words[1] == "profile":
            assert words[2] in ("list", "show", "export", "delete"), line


def test_a_study_of_other_settings_goes_beside_the_default_named_one(tuner_home):
    """The README's `tune workload=sort space.read_ahead=[0,4,16]` then `tune workload=sort baseline.mmap=true`: the
    second study, of the same default name but another space, goes beside the first; each command resumes its own."""
    searched = ["space.read_ahead=[0,4]", "strategy=random", "budget.trials=1", "confirm.rounds=0"]
    plain = ["strategy=random", "budget.trials=1", "confirm.rounds=0"]
    studies = tuner_home / "outputs" / "synthetic"
    code, out, err = autopager("tune", *QUICK, *searched)
    assert code == 0 and "study outputs/synthetic/random-size1-buf64MiB (new)" in out, out + err
    code, out, err = autopager("tune", *QUICK, *plain)
    assert code == 0, out + err
    assert ("study outputs/synthetic/random-size1-buf64MiB-2 (new; outputs/synthetic/random-size1-buf64MiB holds a "
            "study of other space settings)") in out, out
    for args, name in ((searched, "random-size1-buf64MiB"), (plain, "random-size1-buf64MiB-2")):
        code, out, err = autopager("tune", *QUICK, *args)
        assert code == 0 and f"study outputs/synthetic/{name} (resuming after" in out, out + err
    assert sorted(path.name for path in studies.iterdir()) == ["random-size1-buf64MiB", "random-size1-buf64MiB-2"]
    code, out, err = autopager("tune", *QUICK, *plain, "study.name=random-size1-buf64MiB")
    assert code == 2 and "was run with other space settings" in err, out + err  # a name given is that study


def test_the_readme_names_the_study_its_quick_start_makes(tuner_home):
    """The README's status, report and dashboard examples name the quick start's study; its status and report
    commands run as written on it (the quick start cut to the defaults' run)."""
    readme = (REPO / "README.md").read_text()
    quick = re.search(r"^apt-get .*?(autopager tune [^\n]+)$", readme, re.M).group(1).split()[2:]
    code, out, err = autopager("tune", *quick, "budget.trials=0", "confirm.rounds=0", "runner.page_cache=keep")
    assert code == 0, out + err
    study = re.search(r"^study: +outputs/(\S+)$", out, re.M).group(1)
    examples = re.findall(r"^autopager (status|report|dashboard) (\S+)(.*?)#", readme, re.M)
    assert {command for command, _, _ in examples} == {"status", "report", "dashboard"}, examples
    for command, name, flags in examples:
        assert name in (study, f"outputs/{study}"), (command, name)
        if command != "dashboard":  # which serves until stopped
            code, out, err = autopager(command, name, *flags.split())
            assert code == 0, out + err
    report = (tuner_home / "outputs" / study / "report" / "report.md").read_text()
    assert re.search(r"The defaults: \S+ seconds \(their one run during the search\)", report), report
