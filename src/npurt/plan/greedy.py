"""Greedy-by-size best-fit placement (the TFLite arena planner rule) with an efficient overlap query.

The overlap query splits "placed buffers whose lifetime meets [s, e)" into two disjoint sets:
buffers that contain the time point s (a stabbing query on a static segment tree over the compressed
timeline, each buffer stored at O(log T) nodes) and buffers that start inside (s, e) (a slice of the
start-sorted order). Both are filtered by "already placed", so one placement costs O(log T + k) numpy
work for k candidates instead of a scan over all placed buffers: O(n log n + Σk) per pass.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from npurt.plan.problem import Arrays, Problem, Solution, peak_live


@dataclass(frozen=True)
class OverlapIndex:
    """Index of a buffer set, specialised to one placement order, answering "which already placed
    buffers overlap buffer i in time". Segment-tree node lists are sorted by placement rank, so the
    placed buffers stored at a node are a prefix whose length is a per-node counter."""

    by_start: np.ndarray      # buffer indices sorted by start
    after_lo: np.ndarray      # per buffer: slice of by_start holding buffers starting inside (s, e)
    after_hi: np.ndarray
    leaf: np.ndarray          # per buffer: segment-tree leaf node of its start
    node_ptr: np.ndarray      # CSR over segment-tree nodes -> buffers stored there, by rank
    node_items: np.ndarray
    buf_ptr: np.ndarray       # CSR over buffers -> the segment-tree nodes storing it
    buf_nodes: np.ndarray

    @staticmethod
    def build(start: np.ndarray, end: np.ndarray, rank: np.ndarray) -> "OverlapIndex":
        n = len(start)
        times = np.unique(np.concatenate([start, end]))
        s = np.searchsorted(times, start).astype(np.int64)
        e = np.searchsorted(times, end).astype(np.int64)
        by_start = np.argsort(s, kind="stable")
        ss = s[by_start]
        after_lo = np.searchsorted(ss, s, "right")
        after_hi = np.searchsorted(ss, e, "left")
        width = 1
        while width < max(1, len(times)):
            width *= 2
        lo, hi, who = s + width, e + width, np.arange(n, dtype=np.int64)
        nodes, items = [], []
        while len(who):
            take = (lo & 1).astype(bool) & (lo < hi)
            nodes.append(lo[take]); items.append(who[take]); lo = lo + take
            take = (hi & 1).astype(bool) & (lo < hi)
            hi = hi - take
            nodes.append(hi[take]); items.append(who[take])
            lo, hi = lo >> 1, hi >> 1
            live = lo < hi
            lo, hi, who = lo[live], hi[live], who[live]
        node_arr = np.concatenate(nodes) if nodes else np.zeros(0, np.int64)
        item_arr = np.concatenate(items) if items else np.zeros(0, np.int64)
        order = np.lexsort((rank[item_arr], node_arr))
        node_ptr = np.searchsorted(node_arr[order], np.arange(2 * width + 1))
        by_buf = np.argsort(item_arr, kind="stable")
        buf_ptr = np.searchsorted(item_arr[by_buf], np.arange(n + 1))
        return OverlapIndex(by_start, after_lo, after_hi, s + width, node_ptr, item_arr[order],
                            buf_ptr, node_arr[by_buf])


def place_in_order(a: Arrays, order: np.ndarray, first_fit: bool = False,
                   keep: np.ndarray | None = None, kept: np.ndarray | None = None) -> np.ndarray:
    """Place buffers one by one in `order`, each at the best-fitting (smallest slack; or lowest, with
    `first_fit`) aligned gap between already placed buffers that overlap it in time, else on top of
    them. With `keep` (a mask) the buffers it marks are already placed at `kept` offsets and `order`
    lists the others (re-placing part of a plan costs O(n log n) numpy work plus O(that part)).
    Returns int64 offsets (zero-size buffers get 0 and block nothing)."""
    n = len(a.size)
    rank = np.empty(n, np.int64)
    if keep is None:
        keep = np.zeros(n, bool)
        offsets = np.zeros(n, np.int64)
    else:
        offsets = np.where(keep & (a.size > 0), kept, 0).astype(np.int64)
        rank[keep] = np.arange(int(keep.sum()))
    rank[order] = np.arange(n - len(order), n)
    placed = keep.copy()
    tops = np.where(keep, offsets + a.size, 0)
    ix = OverlapIndex.build(a.start, a.end, rank)
    ptr, items, by_start, leafs = ix.node_ptr, ix.node_items, ix.by_start, ix.leaf.tolist()
    after_lo, after_hi = ix.after_lo.tolist(), ix.after_hi.tolist()
    buf_ptr, buf_nodes = ix.buf_ptr, ix.buf_nodes
    # the kept buffers come first in every node's rank-sorted list: they are its placed prefix
    count_l = np.bincount(buf_nodes[np.repeat(keep, np.diff(buf_ptr))], minlength=len(ptr)).tolist()
    ptr_l = ptr.tolist()
    size_l, align_l = a.size.tolist(), a.align.tolist()
    concat, flatnonzero = np.concatenate, np.flatnonzero
    for i in order.tolist():
        sz = size_l[i]
        al = align_l[i]
        after = by_start[after_lo[i]:after_hi[i]]
        parts = [after[placed[after]]]
        node = leafs[i]
        while node:
            c = count_l[node]
            if c:
                p0 = ptr_l[node]
                parts.append(items[p0:p0 + c])
            node >>= 1
        cand = concat(parts) if len(parts) > 1 else parts[0]
        off = 0
        if len(cand) and sz:
            lows = offsets[cand]
            srt = lows.argsort()
            lows = lows[srt]
            highs = np.maximum.accumulate(tops[cand[srt]])
            prev = np.empty_like(highs)
            prev[0] = 0
            prev[1:] = highs[:-1]
            if al > 1:
                prev = -(-prev // al) * al
            slack = lows - prev - sz
            ok = flatnonzero(slack >= 0)
            if len(ok):
                j = ok[0] if first_fit else ok[slack[ok].argmin()]
                off = int(prev[j])
            else:
                top = int(highs[-1])
                off = -(-top // al) * al
        offsets[i] = off
        tops[i] = off + sz
        placed[i] = True
        for node in buf_nodes[buf_ptr[i]:buf_ptr[i + 1]].tolist():
            count_l[node] += 1
    return offsets


def size_order(a: Arrays) -> np.ndarray:
    """TFLite order: decreasing size, ties by earlier start, then index."""
    return np.lexsort((np.arange(len(a.size)), a.start, -a.size))


def to_solution(problem: Problem, offsets: np.ndarray, lb: int, t0: float, method: str) -> Solution:
    """Wrap index-based offsets as a `Solution` keyed by buffer id."""
    ids = [b.id for b in problem.buffers]
    sizes = np.fromiter((b.size for b in problem.buffers), np.int64, len(ids))
    arena = int((offsets + sizes).max()) if len(ids) else 0
    fits = None if problem.capacity is None else arena <= problem.capacity
    return Solution(dict(zip(ids, offsets.tolist())), arena, lb, time.perf_counter() - t0, method, fits)


def greedy_by_size(problem: Problem) -> Solution:
    """TFLite-arena-style baseline: decreasing size, best-fit gap between time-overlapping buffers."""
    t0 = time.perf_counter()
    a = problem.arrays()
    offsets = place_in_order(a, size_order(a))
    return to_solution(problem, offsets, peak_live(a.start, a.end, a.size), t0, "greedy")
