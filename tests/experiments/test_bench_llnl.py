"""experiments/bench_llnl.py: its graph, our bfs workload's R-MAT graph, generated on first use and written in
LLNL's CSR layout (n+1 64-bit offsets, then the 64-bit neighbours) for LLNL's own bfs program; and the variants a
round runs."""
from __future__ import annotations

import os

import numpy as np
import pytest

from tests.helpers import REPO
from experiments import bench_llnl

BUILT = (REPO / "build" / "workloads" / "bfs").exists() or bool(os.environ.get("AUTOPAGER_BIN"))


@pytest.mark.skipif(not BUILT, reason="needs the built bfs workload (build/workloads or AUTOPAGER_BIN)")
def test_llnl_graph_generates_our_graph_once_and_writes_it_in_llnl_csr_layout(tmp_path):
    args = bench_llnl.parse_args(["--data-dir", str(tmp_path), "--scale", "10"])
    graph, vertices, edges = bench_llnl.llnl_graph(args)
    offsets = np.fromfile(tmp_path / "bfs-s10.off", dtype=np.uint64)
    neighbours = np.fromfile(tmp_path / "bfs-s10.adj", dtype=np.uint32)
    assert (vertices, edges) == (len(offsets) - 1, int(offsets[-1]))
    assert edges > 0
    csr = np.fromfile(graph, dtype=np.uint64)
    assert len(csr) == vertices + 1 + edges
    assert np.array_equal(csr[:vertices + 1], offsets)
    assert np.array_equal(csr[vertices + 1:], neighbours[:edges].astype(np.uint64))

    written = graph.stat().st_mtime_ns
    assert bench_llnl.llnl_graph(args) == (graph, vertices, edges)
    assert graph.stat().st_mtime_ns == written


def test_ours_page_sizes_run_on_our_library_alone_and_with_every_ours_with():
    args = bench_llnl.parse_args(["--page-sizes", "1MiB", "--ours-page-sizes", "64KiB",
                                  "--ours-with", "evict_retain=50"])
    labels = [variant.label for variant in bench_llnl.variants_of(args)]
    assert sorted(labels) == sorted(["ours 1MiB", "llnl 1MiB", "mmap", "ours 64KiB",
                                     "ours 1MiB evict_retain=50", "ours 64KiB evict_retain=50"])
