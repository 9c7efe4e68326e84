"""Which records the CPU folds and which the GPU, so that both finish together.

Lei et al.'s rule for n sequences of one length: with K = t_CPU / t_GPU (one sequence's time on the
multithreaded CPU over its time on the GPU), the CPU takes the first B = n / (K + 1). For mixed lengths the
split balances predicted time (:mod:`.costmodel`), not counts: records are ordered by how much better the
CPU does on them (t_CPU / t_GPU, smallest first; ties keep input order), and the CPU takes the prefix of that
order that makes the larger of the two totals smallest. That is the best split when a record may be cut in
two, and within one record's time of the best whole-record split; with equal lengths it is B = n / (K + 1)
rounded to the nearer better side, the first B records to the CPU.
"""

from __future__ import annotations

import numpy as np

from ..balance import best_prefix, cpu_first


def split(cpu_seconds: np.ndarray, gpu_seconds: np.ndarray, cpu_parallel: int = 1,
          cpu_call: float = 0.0, min_gain: float = 0.0) -> np.ndarray:
    """Boolean mask of the records the CPU folds, from each record's predicted seconds on either device
    (``np.inf`` where a device cannot fold it; the CPU's seconds are its throughput on all its threads).

    The CPU folds a sequence on one thread, so its share cannot finish before its longest record does on one
    of its ``cpu_parallel`` threads (``cpu_parallel`` × that record's seconds), and each call costs
    ``cpu_call`` seconds more: records that alone would outlast the GPU's whole batch are not offered to it,
    and it gets nothing unless that beats the GPU alone by at least ``min_gain`` (a fraction of the GPU's
    time)."""
    tc = np.asarray(cpu_seconds, dtype=np.float64)
    tg = np.asarray(gpu_seconds, dtype=np.float64)
    n = tc.size
    mask = np.zeros(n, dtype=bool)
    if n == 0:
        return mask
    only_cpu = np.isinf(tg)
    if min_gain > 0 and not only_cpu.any():
        # no split saves more than 1 / (r + 1) of the GPU's time, r the smallest t_CPU / t_GPU: when that is
        # below min_gain, the CPU gets nothing (and the batch is not sorted)
        with np.errstate(divide="ignore", invalid="ignore"):
            best_ratio = float(np.min(tc / tg))
        if 1.0 / (best_ratio + 1.0) < min_gain:
            return mask
    gpu_alone = float(np.sum(tg[~only_cpu]))
    offered = tc.copy()
    offered[~only_cpu & (cpu_parallel * tc + cpu_call >= gpu_alone)] = np.inf    # too long to help
    order = cpu_first(offered, tg)
    tco = offered[order]
    cpu_total = np.concatenate([[0.0], np.maximum(np.cumsum(tco), cpu_parallel * np.maximum.accumulate(tco))])
    cpu_total[1:] += cpu_call
    gpu_total = np.concatenate([[0.0], np.cumsum(tg[order][::-1])])[::-1]      # GPU the rest
    must = int(np.count_nonzero(only_cpu))                 # records the GPU cannot fold go first in the order
    k = best_prefix(cpu_total, gpu_total, must, min_gain)
    mask[order[:max(k, must)]] = True
    return mask


def split_at(cpu_seconds: np.ndarray, gpu_seconds: np.ndarray, count: int) -> np.ndarray:
    """The mask that gives the CPU ``count`` records, in :func:`cpu_first`'s order (a forced share, for
    sweeps)."""
    mask = np.zeros(len(cpu_seconds), dtype=bool)
    mask[cpu_first(cpu_seconds, gpu_seconds)[:max(0, count)]] = True
    return mask
