"""A Ray cluster on this machine for the launcher tests and benchmark: nodes started with `ray start --block`, each
in a session of its own (ending its process group ends that node: never `ray stop`, which would end every Ray
process of the machine, other users' clusters included), on loopback, each declaring units of the node resource.

Every node gets AUTOPAGER_NODE=<its name> (the table's ``node``) and this checkout on PYTHONPATH, so that its
workers import this autopager.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator, Sequence

import ray
from experiments import pythonpath_with_repo

RESOURCE = "autopager_node"
RAY = str(Path(sys.executable).parent / "ray")
START_SECONDS = 120
ATTEMPTS = 5  # a loaded machine can exceed the 30 s Ray gives a node to register


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_node(args: Sequence[str], name: str, units: int, log: Path) -> subprocess.Popen:
    env = dict(os.environ, AUTOPAGER_NODE=name, RAY_USAGE_STATS_ENABLED="0", RAY_raylet_start_wait_time_s="120",
               PYTHONPATH=pythonpath_with_repo())
    return subprocess.Popen([RAY, "start", "--block", "--num-cpus=1", "--node-ip-address=127.0.0.1",
                             f"--resources={json.dumps({RESOURCE: units})}", *args],
                            env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)


def stop_node(process: subprocess.Popen) -> None:
    """End the node's process group (its Ray processes may outlive a `ray start` that gave up)."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        pass
    time.sleep(1)
    try:
        os.killpg(process.pid, signal.SIGKILL)  # whatever did not end on SIGTERM
    except ProcessLookupError:
        pass
    process.wait()


def wait_for_units(expected: int, node: subprocess.Popen, log: Path) -> bool:
    """Whether the cluster reaches ``expected`` units before ``node`` exits (or the time runs out: an error)."""
    deadline = time.monotonic() + START_SECONDS
    while ray.cluster_resources().get(RESOURCE, 0) < expected:
        if node.poll() is not None:
            return False
        if time.monotonic() > deadline:
            raise RuntimeError(f"a Ray node did not join in {START_SECONDS} s:\n{log.read_text()}")
        time.sleep(1)
    return True


def connect(head: subprocess.Popen, address: str, log: Path) -> bool:
    """Connect this process to the head at ``address``; False if the head exits first (it did not start)."""
    deadline = time.monotonic() + START_SECONDS
    while True:  # `ray status` and then drivers are answered a little after the head process starts
        if subprocess.run([RAY, "status", f"--address={address}"], capture_output=True).returncode == 0:
            try:
                ray.init(address=address, log_to_driver=False, configure_logging=False)
                return True
            except (ConnectionError, RuntimeError):
                pass
        if head.poll() is not None:
            return False
        if time.monotonic() > deadline:
            raise RuntimeError(f"the Ray head did not start in {START_SECONDS} s:\n{log.read_text()}")
        time.sleep(2)


@contextlib.contextmanager
def local_cluster(nodes: Sequence[tuple[str, int]]) -> Iterator[str]:
    """Nodes (name, units of the resource), the first the head; the cluster's address while they run."""
    temp = Path(tempfile.mkdtemp(prefix="ray", dir="/tmp"))  # short: Ray's socket paths must fit
    started = []
    try:
        (head, units), others = nodes[0], nodes[1:]
        for attempt in range(ATTEMPTS):
            port = free_port()
            address = f"127.0.0.1:{port}"
            log = temp / f"{head}-{attempt}.log"
            started.append(start_node(["--head", f"--port={port}", "--include-dashboard=false",
                                       f"--temp-dir={temp}"], head, units, log))
            if connect(started[-1], address, log):
                break
        else:
            raise RuntimeError(f"the Ray head did not start:\n{log.read_text()}")
        try:
            total = units
            for name, units in others:
                total += units
                for attempt in range(ATTEMPTS):
                    log = temp / f"{name}-{attempt}.log"
                    started.append(start_node([f"--address={address}"], name, units, log))
                    if wait_for_units(total, started[-1], log):
                        break
                else:
                    raise RuntimeError(f"Ray node {name} did not join:\n{log.read_text()}")
        finally:
            ray.shutdown()
        yield address
    finally:
        for node in reversed(started):
            stop_node(node)
