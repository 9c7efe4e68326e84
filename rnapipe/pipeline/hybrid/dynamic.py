"""The dynamic split of ``--device hybrid --split dynamic``: each batch planned on the costs as measured so far
in the stream, the CPU given records only where that is predicted to pay after every risk is counted.

The CPU's part of a batch is fixed before the batch starts (:func:`plan`) and spread over its threads longest
first (:func:`..balance.lpt`), so that each CPU thread folds its records in one compiled call without the
GIL (:func:`rnapipe.cpu.zuker_packed.fold_share`); the GPUs fold the rest meanwhile. What each side took is
measured after every batch (:class:`Scales`): the CPU's seconds per record over its prediction, each GPU's
alone, and each GPU's while the CPU folds beside it (the CPU's threads share the host's memory bandwidth,
caches and cores with the GPUs' feeding threads). The next batch is planned on those, so the split follows
what the devices really did.

The rules of :func:`plan`:

* the CPU takes records in the order of its relative speed (smallest t_CPU / t_GPU first,
  :func:`..balance.cpu_first`), each one that alone would end after ``CPU_FIT`` of the GPUs' time left out;
* the CPU's threads must end (longest-processing-time bound: their mean load plus the longest record's
  (1 - 1/threads)) within ``CPU_FIT`` of the GPUs' predicted time for the rest, slowed by the CPU beside
  them: the longest such prefix of that order (:func:`..balance.best_prefix`);
* the CPU gets nothing unless that ends the batch at least ``MIN_SAVING`` sooner than the GPUs alone; until a
  batch has measured the GPUs beside the CPU, they are taken as ``SLOWDOWN_PRIOR`` times slower, and until the
  CPU has been measured its records must end within ``CPU_FIT_UNMEASURED``;
* records a GPU cannot fold go to the CPU whatever their time.
"""

from __future__ import annotations

import threading

import numpy as np

from ..balance import best_prefix, cpu_first

CPU_FIT = 0.8                 # the CPU's threads end by this fraction of the GPUs' predicted time for the rest
CPU_FIT_UNMEASURED = 0.7      # and by this fraction while the CPU's costs in this stream are not measured
MIN_SAVING = 0.02             # the CPU gets records only where, every risk counted, they end the batch this
                              # much sooner (a fraction of its end without them)
SLOWDOWN_PRIOR = 1.03         # the GPUs' time beside a busy CPU over their time alone, until measured
PRIOR = 0.25                  # the profile's word on a batch counts as this share of the batch's predicted time



def gpu_factors(scale: dict, gpus: int) -> tuple[float, float]:
    """(alone, beside the CPU): the GPUs' measured over predicted seconds, each the mean over the GPUs; alone,
    unmeasured, is the profile's (measured alone on this host: 1), and beside the CPU, unmeasured,
    SLOWDOWN_PRIOR times alone; beside is never taken as faster than alone."""
    alone = [scale[f"gpu{i}"] for i in range(gpus) if f"gpu{i}" in scale]
    beside = [scale[f"gpu{i}+cpu"] for i in range(gpus) if f"gpu{i}+cpu" in scale]
    a = sum(alone) / len(alone) if alone else 1.0
    b = sum(beside) / len(beside) if beside else a * SLOWDOWN_PRIOR
    return a, max(a, b)


def max_gain(cpu_one: np.ndarray, gpu: np.ndarray, threads: int, gpus: int, scale: dict) -> float:
    """An upper bound of the share of the GPUs' time alone that the CPU could save on records with these
    predicted one-thread CPU and one-GPU seconds (the best ratio among them, the CPU busy ``CPU_FIT`` of the
    time, the GPUs slowed beside it)."""
    alone, beside = gpu_factors(scale, gpus)
    sc = scale.get("cpu", 1.0)
    fit = CPU_FIT if "cpu" in scale else CPU_FIT_UNMEASURED
    with np.errstate(divide="ignore", invalid="ignore"):
        k = (np.asarray(cpu_one) * sc / threads) / (np.asarray(gpu) * beside / gpus) / fit
    k = k[np.isfinite(k)]
    if not k.size:
        return 0.0
    best = float(k.min())
    return 1.0 - (beside / alone) * best / (best + 1.0)


def plan(cpu_one: np.ndarray, gpu: np.ndarray, threads: int, gpus: int, scale: dict) -> tuple[np.ndarray, dict]:
    """The records (positions) the CPU folds in a batch, from each record's predicted seconds on one CPU thread
    and on one GPU (``np.inf`` where a device cannot fold it), and the prediction: {'cpu', 'gpus', 'alone'}
    seconds (the CPU's threads, the GPUs on the rest beside it, the GPUs on everything alone)."""
    tc = np.asarray(cpu_one, dtype=np.float64)
    tg = np.asarray(gpu, dtype=np.float64)
    alone_f, beside_f = gpu_factors(scale, gpus)
    sc = scale.get("cpu", 1.0)
    fit = CPU_FIT if "cpu" in scale else CPU_FIT_UNMEASURED
    must = np.flatnonzero(np.isinf(tg))
    shared = np.isfinite(tg)
    total_g = float(tg[shared].sum())
    alone = total_g * alone_f / gpus
    none = np.zeros(0, dtype=np.int64)
    # the records the CPU may take: those the GPUs cannot fold, and those whose time alone on a thread ends
    # within the fit of the GPUs' time
    offered = np.flatnonzero(np.isinf(tg) | (shared & (tc * sc <= fit * total_g * beside_f / gpus)))
    order = offered[cpu_first(tc[offered], tg[offered])]
    if not order.size:
        return none, {"cpu": 0.0, "gpus": alone, "alone": alone}
    c = tc[order] * sc
    m = max(1, threads)
    # each prefix's ends: the CPU's threads by the LPT bound, the GPUs on the rest beside it (none: alone)
    cpu_end = np.concatenate([[0.0], np.cumsum(c) / m + (1.0 - 1.0 / m) * np.maximum.accumulate(c)])
    g = np.where(np.isfinite(tg[order]), tg[order], 0.0)
    gpu_end = np.concatenate([[alone], (total_g - np.cumsum(g)) * beside_f / gpus])
    k = max(must.size, best_prefix(cpu_end, gpu_end, must.size, MIN_SAVING, fit))
    if k == 0:
        return none, {"cpu": 0.0, "gpus": alone, "alone": alone}
    return order[:k], {"cpu": float(cpu_end[k]), "gpus": float(gpu_end[k]), "alone": alone}


class Scales:
    """Measured over predicted seconds per device ('cpu'; 'gpu<i>' alone; 'gpu<i>+cpu' beside the CPU), from
    the batches folded so far in the stream (each weighted by its predicted time; older batches count half at
    each new batch)."""

    def __init__(self):
        self._sums: dict[str, list[float]] = {}
        self._lock = threading.Lock()

    def add(self, device: str, measured: float, predicted: float) -> None:
        if predicted <= 0 or not np.isfinite(predicted):
            return
        with self._lock:
            m = self._sums.setdefault(device, [0.0, 0.0])
            m[0] += measured
            m[1] += predicted

    def age(self) -> None:
        with self._lock:
            for m in self._sums.values():
                m[0] *= 0.5
                m[1] *= 0.5

    def current(self, gpu_prior: float = 0.0, cpu_prior: float = 0.0) -> dict:
        """Each device's measured over predicted seconds, the profile's own word (1) counted beside the
        measurements as ``gpu_prior`` predicted GPU seconds (``cpu_prior`` CPU thread-seconds) more: with
        :data:`PRIOR` times the batch at hand, batches much smaller than it (whose GPU time is one
        sequence's latency more than the engine's throughput) move its plan little."""
        with self._lock:
            out = {}
            for d, (measured, predicted) in self._sums.items():
                prior = cpu_prior if d == "cpu" else gpu_prior
                if predicted + prior > 0:
                    out[d] = min(10.0, max(0.1, (measured + prior) / (predicted + prior)))
            return out
