"""Runs a program inside the cgroup named by $AUTOPAGER_EVALUATION_CGROUP: ``python3 -S incgroup.py PROGRAM [ARGS...]``.

The tuner starts each trial's command itself, with no hook to place it in a cgroup; prefixing the workload's
command with this launcher puts every run, pager or kernel mmap alike, under the same memory limit. The
cgroup comes from the environment, so the command (part of a study's identity) is the same when a study is
resumed by another process with another cgroup. The launcher moves itself into the cgroup, then becomes the
program (exec), so the program's result line is the last one.
"""
import os
import sys

VARIABLE = "AUTOPAGER_EVALUATION_CGROUP"


def main() -> None:
    if len(sys.argv) < 2 or not os.environ.get(VARIABLE):
        sys.exit(f"usage: {VARIABLE}=CGROUP_DIR incgroup.py PROGRAM [ARGS...]")
    with open(os.path.join(os.environ[VARIABLE], "cgroup.procs"), "w") as procs:
        procs.write(str(os.getpid()))
    os.execvp(sys.argv[1], sys.argv[1:])


if __name__ == "__main__":
    main()
