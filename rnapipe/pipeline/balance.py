"""Work shared out by predicted time: the order in which the CPU takes records (:func:`cpu_first`), records
cut into contiguous runs for several GPUs (:func:`among`), and jobs spread longest first over workers
(:func:`lpt`, :func:`spread`). The static and dynamic hybrid splits and the workflow's partition use these."""

from __future__ import annotations

import heapq

import numpy as np


def cpu_first(cpu_seconds: np.ndarray, gpu_seconds: np.ndarray) -> np.ndarray:
    """Record positions, those the CPU does relatively best (smallest t_CPU / t_GPU) first; records only the
    CPU can fold come first, those only the GPU can fold last; ties keep input order."""
    tc = np.asarray(cpu_seconds, dtype=np.float64)
    tg = np.asarray(gpu_seconds, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(np.isinf(tg), -np.inf, np.where(np.isinf(tc), np.inf, tc / tg))
    return np.argsort(ratio, kind="stable")


def among(seconds: np.ndarray, mask: np.ndarray, parts: int) -> np.ndarray:
    """The device (0 .. parts-1) of each record where ``mask`` is set, -1 elsewhere: those records, in input
    order, cut into ``parts`` contiguous runs of about equal predicted ``seconds`` (the boundaries between
    several GPUs of one kind)."""
    t = np.asarray(seconds, dtype=np.float64)
    where = np.full(t.size, -1, dtype=np.int64)
    picked = np.flatnonzero(mask)
    if parts <= 1 or picked.size == 0:
        where[picked] = 0
        return where
    w = t[picked]
    w = np.where(np.isfinite(w), w, 0.0)
    ends = np.cumsum(w)
    if ends[-1] <= 0:
        ends = np.arange(1, picked.size + 1, dtype=np.float64)
    # record k goes to the part its time's midpoint falls in
    device = np.minimum(((ends - 0.5 * np.diff(np.concatenate([[0.0], ends]))) * parts / ends[-1]).astype(np.int64),
                        parts - 1)
    where[picked] = device
    return where


def lpt(seconds: np.ndarray, threads: int) -> list[np.ndarray]:
    """Longest processing time first: indices into ``seconds``, one array a thread (longest first in each),
    each next one to the thread least loaded so far. Its longest thread ends within the mean load plus
    (1 - 1/threads) of the longest record."""
    t = np.asarray(seconds, dtype=np.float64)
    threads = max(1, min(threads, t.size))
    order = np.argsort(-t, kind="stable")
    if threads == 1:
        return [order]
    heap = [(0.0, j) for j in range(threads)]
    owner = np.empty(t.size, dtype=np.int64)
    for k in order.tolist():
        load, j = heapq.heappop(heap)
        owner[k] = j
        heapq.heappush(heap, (load + float(t[k]), j))
    owned = owner[order]
    return [order[owned == j] for j in range(threads)]


def spread(times: np.ndarray, members: np.ndarray, jobs: int) -> list[list[int]]:
    """Shards ``members`` over ``jobs`` jobs: longest first, each to the job with the least work so far."""
    out: list[list[int]] = [[] for _ in range(jobs)]
    if jobs == 0:
        return out
    heap = [(0.0, j) for j in range(jobs)]
    t = np.where(np.isfinite(times), times, 0.0)
    for k in sorted(members.tolist(), key=lambda k: (-t[k], k)):
        load, j = heapq.heappop(heap)
        out[j].append(k)
        heapq.heappush(heap, (load + float(t[k]), j))
    return out
