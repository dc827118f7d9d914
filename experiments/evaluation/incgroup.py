"""Runs a program inside a cgroup: ``python3 -S incgroup.py CGROUP_DIR PROGRAM [ARGS...]``.

The tuner starts each trial's command itself, with no hook to place it in a cgroup; prefixing the workload's
command with this launcher puts every run, pager or kernel mmap alike, under the same memory limit. It moves
itself into the cgroup, then becomes the program (exec), so the program's result line is the last one.
"""
import os
import sys


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit("usage: incgroup.py CGROUP_DIR PROGRAM [ARGS...]")
    with open(os.path.join(sys.argv[1], "cgroup.procs"), "w") as procs:
        procs.write(str(os.getpid()))
    os.execvp(sys.argv[2], sys.argv[2:])


if __name__ == "__main__":
    main()
