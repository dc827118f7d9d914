#!/usr/bin/env python3
"""How many bytes LLNL's bfs must read with a 1 GiB buffer, under page-replacement policies, by simulation.

LLNL UMap's bfs (examples/bfs/bfs_kernel.hpp) visits, level after level, every vertex of the level in vertex
order, each of its two threads over its half of the vertices (OpenMP's static schedule), reading the vertex's
two offsets and then its edges from one mapping of the CSR file (n+1 offsets, then the edges). This script
computes each vertex's level from the graph that bench_llnl.py wrote, replays the page accesses of that
traversal (the two threads interleaved by edges read) and counts the pages a buffer of ``--buffer`` must read
without read-ahead, under FIFO (the pager's policy), LRU, random replacement, FIFO with a share of the buffer
retained by the first pages filled (the pager's evict_retain) and Belady's optimum (evict the page used farthest
in the future), which bounds every policy.

    python3 -m experiments.bfs_replacement --graph /var/tmp/apdata/bfs-s24.llnl-csr --page-sizes 1MiB,256KiB

It answers whether a better replacement policy could make the bfs with a 1 GiB buffer read much less than
FIFO: the pager and the kernel's mmap are both bound by the disk's bandwidth there (results/
llnl-bfs-readahead).
"""
from __future__ import annotations

import argparse
import heapq
import random
import sys
from collections import OrderedDict

import numpy as np

from autopager.parameters import format_size, parse_size

UNREACHED = np.iinfo(np.uint16).max


def vertex_levels(offsets: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Each vertex's BFS level from the first vertex with an edge (LLNL's root), UNREACHED if none."""
    vertices = offsets.size - 1
    level = np.full(vertices, UNREACHED, np.uint16)
    root = int(np.argmax(np.diff(offsets) > 0))
    level[root] = 0
    frontier, depth = np.array([root]), 0
    while frontier.size:
        starts, ends = offsets[frontier].astype(np.int64), offsets[frontier + 1].astype(np.int64)
        counts = ends - starts
        positions = np.repeat(starts - np.concatenate(([0], np.cumsum(counts)[:-1])), counts) + np.arange(counts.sum())
        reached = np.unique(np.asarray(edges[positions]).astype(np.int64))
        frontier = reached[level[reached] == UNREACHED]
        depth += 1
        level[frontier] = depth
    return level


def thread_pages(level: np.ndarray, offsets: np.ndarray, lo: int, hi: int, depth: int, page_words: int):
    """The pages one thread touches at a level, in order (consecutive repeats dropped), and the edges it has read
    before each: its progress, by which the two threads are interleaved."""
    vertices = np.nonzero(level[lo:hi] == depth)[0] + lo
    first = offsets[vertices].astype(np.int64) + offsets.size
    end = offsets[vertices + 1].astype(np.int64) + offsets.size
    pages, progress, last, done = [], [], -1, 0
    for vertex, start, stop in zip((vertices // page_words).tolist(), first.tolist(), end.tolist()):
        for page in [vertex, *range(start // page_words, max(stop - 1, start) // page_words + 1)]:
            if page != last:
                pages.append(page)
                progress.append(done)
                last = page
        done += stop - start + 1
    return pages, progress


def traversal(level: np.ndarray, offsets: np.ndarray, page_bytes: int) -> list[int]:
    page_words, half = page_bytes // 8, level.size // 2
    order = []
    for depth in range(int(level[level != UNREACHED].max()) + 1):
        a, at = thread_pages(level, offsets, 0, half, depth, page_words)
        b, bt = thread_pages(level, offsets, half, level.size, depth, page_words)
        i = j = 0
        while i < len(a) or j < len(b):
            if j >= len(b) or (i < len(a) and at[i] <= bt[j]):
                order.append(a[i])
                i += 1
            else:
                order.append(b[j])
                j += 1
    return order


def fifo(order: list[int], capacity: int, recency: bool = False, retained_share: float = 0.0) -> int:
    """FIFO (LRU with ``recency``); with ``retained_share``, the pager's evict_retain: the first pages filled keep
    that share of the buffer for good."""
    retained_budget = int(capacity * retained_share)
    retained: set[int] = set()
    resident: OrderedDict[int, None] = OrderedDict()
    misses = 0
    for page in order:
        if page in retained:
            continue
        if page in resident:
            if recency:
                resident.move_to_end(page)
            continue
        misses += 1
        if len(retained) < retained_budget:
            retained.add(page)
            continue
        if len(resident) >= capacity - retained_budget:
            resident.popitem(last=False)
        resident[page] = None
    return misses


def lru(order: list[int], capacity: int) -> int:
    return fifo(order, capacity, recency=True)


def random_replacement(order: list[int], capacity: int) -> int:
    pick, slots, where, misses = random.Random(0), [], {}, 0
    for page in order:
        if page in where:
            continue
        misses += 1
        if len(slots) >= capacity:
            k = pick.randrange(len(slots))
            del where[slots[k]]
            slots[k] = slots[-1]
            where[slots[k]] = k
            slots.pop()
        where[page] = len(slots)
        slots.append(page)
    return misses


def belady(order: list[int], capacity: int) -> int:
    never = len(order)
    next_use, seen = [never] * len(order), {}
    for i in range(len(order) - 1, -1, -1):
        next_use[i] = seen.get(order[i], never)
        seen[order[i]] = i
    resident, farthest, misses = {}, [], 0
    for i, page in enumerate(order):
        if page not in resident:
            misses += 1
            if len(resident) >= capacity:
                while True:
                    use, victim = heapq.heappop(farthest)
                    if resident.get(victim) == -use:
                        break
                del resident[victim]
        resident[page] = next_use[i]
        heapq.heappush(farthest, (-next_use[i], page))
    return misses


POLICIES = {"fifo": fifo, "lru": lru, "random": random_replacement,
            **{f"retain {share}%": (lambda o, c, s=share: fifo(o, c, retained_share=s / 100)) for share in (50, 70, 85)},
            "belady": belady}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", required=True, help="LLNL's CSR file of the graph (bench_llnl.py writes it)")
    parser.add_argument("--vertices", type=int, default=1 << 24)
    parser.add_argument("--buffer", default="1GiB")
    parser.add_argument("--page-sizes", default="1MiB,256KiB")
    args = parser.parse_args(argv)
    words = np.memmap(args.graph, dtype=np.uint64, mode="r")
    offsets = np.array(words[:args.vertices + 1])
    level = vertex_levels(offsets, words[args.vertices + 1:args.vertices + 1 + int(offsets[-1])])
    reached = level[level != UNREACHED]
    print(f"graph {args.graph}: {args.vertices} vertices, {int(offsets[-1])} edges; vertices a level: "
          f"{np.bincount(reached).tolist()}\n")
    print(f"| page | buffer | accesses | pages | " + " | ".join(f"{p} GB read" for p in POLICIES) + " |")
    print("|---|---|---|---|" + "---|" * len(POLICIES))
    for page_bytes in map(parse_size, args.page_sizes.split(",")):
        order = traversal(level, offsets, page_bytes)
        capacity = parse_size(args.buffer) // page_bytes
        read = [f"{POLICIES[name](order, capacity) * page_bytes / 1e9:.1f}" for name in POLICIES]
        print(f"| {format_size(page_bytes)} | {args.buffer} | {len(order)} | {len(set(order))} | {' | '.join(read)} |",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
