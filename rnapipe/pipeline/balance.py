"""Work shared out by predicted time: the order in which the CPU takes records (:func:`cpu_first`), the
boundary between the CPU's prefix of that order and the GPUs' rest (:func:`best_prefix`, :data:`MIN_GAIN`),
records cut into contiguous runs for several GPUs (:func:`among`), and work spread longest first over
workers (:func:`lpt`). The static and dynamic hybrid splits, ``--device auto`` and the workflow's partition
use these."""

from __future__ import annotations

import heapq

import numpy as np

from .. import config

# The static split, ``--device auto`` and the workflow's partition give the CPU work only where it gains this much
# (config.HYBRID_MIN_GAIN says why).
MIN_GAIN = config.HYBRID_MIN_GAIN


def cpu_first(cpu_seconds: np.ndarray, gpu_seconds: np.ndarray) -> np.ndarray:
    """Record positions, those the CPU does relatively best (smallest t_CPU / t_GPU) first; records only the
    CPU can fold come first, those only the GPU can fold last; ties keep input order."""
    tc = np.asarray(cpu_seconds, dtype=np.float64)
    tg = np.asarray(gpu_seconds, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(np.isinf(tg), -np.inf, np.where(np.isinf(tc), np.inf, tc / tg))
    return np.argsort(ratio, kind="stable")


def best_prefix(cpu_end: np.ndarray, gpu_end: np.ndarray, must: int, min_gain: float,
                fit: float | None = None) -> int:
    """How many records of :func:`cpu_first`'s order the CPU takes, from the two sides' predicted ends for
    every prefix: ``cpu_end[j]`` and ``gpu_end[j]`` (j = 0 .. n) when the CPU takes the first j records and
    the GPUs the rest.

    Each prefix ends the work at the later of its two ends (NaN counted as never). The prefix chosen is the
    one that ends it soonest (the first of equals). With ``fit`` (the CPU's predictions being the riskier),
    it is the longest prefix j >= 1 whose CPU end is within ``fit`` of the GPUs' end (counted: the CPU's end
    only grows with the prefix and the GPUs' only shrinks, so these are all the prefixes up to some length),
    and a prefix's CPU end counts as ``cpu_end / fit``. The first ``must`` records (those only the CPU can
    fold) are the fallback: a longer prefix is kept only where it ends the work at least ``min_gain`` (a
    fraction) sooner than they do. The answer may be below ``must`` (where every prefix's end is infinite,
    or with ``fit`` where even ``must`` records overrun it); callers that must give the CPU those records
    raise it."""
    c = np.asarray(cpu_end, dtype=np.float64)
    g = np.asarray(gpu_end, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        if fit is None:
            finish = np.maximum(c, g)
        else:
            finish = np.maximum(c / fit, g)
    finish = np.where(np.isnan(finish), np.inf, finish)
    if fit is None:
        k = int(np.argmin(finish))
    else:
        with np.errstate(invalid="ignore"):
            k = int(np.count_nonzero(c[1:] <= fit * g[1:]))
    if k > must and finish[k] > (1.0 - min_gain) * finish[must]:
        k = must
    return k


def among(seconds: np.ndarray, mask: np.ndarray, parts: int) -> np.ndarray:
    """The device (0 .. parts-1) of each record where ``mask`` is set, -1 elsewhere: those records, in input
    order, cut into ``parts`` contiguous runs of about equal predicted ``seconds`` (the boundaries between
    several GPUs of one kind).

    Runs, not :func:`rnapipe.gpu.devices.split_for_gpus`'s dealing by rank: a GPU's share of a hybrid batch
    is then one slice of the batch's packed text (no gather, no scatter), balanced on the cost model's
    seconds."""
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


def lpt(seconds: np.ndarray, workers: int) -> list[np.ndarray]:
    """Longest processing time first: positions in ``seconds`` spread over ``workers`` workers, one array per
    worker (each longest first; equal times in position order), each next one to the worker least loaded so
    far (of equals, the lowest numbered). Workers beyond the number of records get empty arrays. The busiest
    worker ends within the mean load plus (1 - 1/workers) of the longest record."""
    t = np.asarray(seconds, dtype=np.float64)
    order = np.argsort(-t, kind="stable")
    if workers <= 1:
        return [order] if workers == 1 else []
    heap = [(0.0, j) for j in range(workers)]
    owner = np.empty(t.size, dtype=np.int64)
    for k in order.tolist():
        load, j = heapq.heappop(heap)
        owner[k] = j
        heapq.heappush(heap, (load + float(t[k]), j))
    owned = owner[order]
    return [order[owned == j] for j in range(workers)]
