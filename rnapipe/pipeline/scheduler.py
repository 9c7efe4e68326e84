"""The dynamic split of ``--device hybrid --split dynamic``: one batch's records in one length-sorted queue that
the devices pull from as they come free, the GPUs in chunks from the short end, each CPU thread a few records
at a time from the long end, so that all of them end together.

The queue only decides; the threads that fold (:mod:`.hybrid`) ask it for work and tell it when they are done.
Every decision is made on predicted seconds (:mod:`.costmodel`), each device's times scaled by what its chunks
took so far (``scale``), and on the time the caller gives (``now``), so that a simulation can drive it.

The rules:

* the predicted common end ``E`` is when the unclaimed work would be done if every device took its part of it
  from the moment it is free (water-filling over the GPUs and the CPU threads, the CPU's rate that of the
  unclaimed records: its one-thread seconds over the GPU's seconds);
* a GPU takes ``GPU_TAKE`` of what it has left before ``E`` (at least ``GPU_MIN_SECONDS`` and
  ``GPU_MIN_RECORDS``, or all that is left): large chunks first, smaller ones towards the end, so that no device
  waits long on another's last chunk; records the CPU will never take (too long for one thread before ``E``)
  go into a GPU's next chunk;
* a CPU thread takes the longest records whose one-thread time ends within ``CPU_FIT`` of ``E`` (never one
  that would outlast the GPUs' remaining work; ``CPU_FIT_UNMEASURED`` until the CPU's first records of the
  stream are measured), about ``CPU_GROUP_SECONDS`` of them at once; records the GPU cannot fold go to the CPU
  first, whatever their time.
"""

from __future__ import annotations

import threading

import numpy as np

GPU_TAKE = 0.75               # a GPU's chunk: this much of its predicted time left before the common end
GPU_MIN_SECONDS = 0.004       # and no less than this much predicted work (an engine call costs ~1 ms)
GPU_MIN_RECORDS = 128         # nor fewer records (a GPU needs many sequences at once for its full rate)
CPU_FIT = 0.7                 # a CPU thread's records end by this fraction of the time left to the common end
CPU_FIT_UNMEASURED = 0.3      # and by this fraction while no CPU time has been measured (its scale unknown)
CPU_GROUP_SECONDS = 0.005     # a CPU thread takes about this much one-thread work a call


class Queue:
    """One batch: ``lens`` (nucleotides), ``cpu_one`` (each record's predicted seconds on one CPU thread) and
    ``gpu`` (on one GPU), ``np.inf`` where a device cannot fold it; ``gpus`` GPUs and ``cpu_threads`` CPU
    threads. ``scale`` maps 'cpu' and 'gpu<i>' to the factor their measured times ran above prediction."""

    def __init__(self, lens, cpu_one, gpu, gpus: int, cpu_threads: int, scale: dict | None = None):
        lens = np.asarray(lens, dtype=np.int64)
        tc = np.asarray(cpu_one, dtype=np.float64)
        tg = np.asarray(gpu, dtype=np.float64)
        self.count = lens.size
        self.gpus, self.threads = gpus, cpu_threads
        self.scale = scale if scale is not None else {}
        cpu_only = np.isinf(tg)
        gpu_only = np.isinf(tc) & ~cpu_only
        both = ~(cpu_only | gpu_only)
        self.must_cpu = np.flatnonzero(cpu_only)[::-1].tolist()       # taken one by one, by the CPU
        self.cpu_only_seconds = tc
        self.tg_all = tg
        shared = np.flatnonzero(both)
        self.order = shared[np.argsort(lens[shared], kind="stable")]     # by length, ties in input order
        self.tc = tc[self.order]
        self.tg = tg[self.order]
        self.cum_c = np.concatenate([[0.0], np.cumsum(self.tc)])
        self.cum_g = np.concatenate([[0.0], np.cumsum(self.tg)])
        self.lo, self.top = 0, len(self.order)          # unclaimed: order[lo:top] and the GPUs' leftovers
        self.left = np.flatnonzero(gpu_only).tolist()       # records for the GPUs only (input positions)
        self.left_g = float(tg[gpu_only].sum())
        self.gpu_free = [0.0] * gpus                     # when each device is predicted to be free
        self.cpu_free = [0.0] * cpu_threads
        self.cpu_done = [False] * cpu_threads

    # ------------------------------------------------------------------------------------------------
    def _scale_g(self) -> float:
        values = [self.scale.get(f"gpu{i}", 1.0) for i in range(self.gpus)]
        return sum(values) / len(values) if values else 1.0

    def _fit(self) -> float:
        return CPU_FIT if "cpu" in self.scale else CPU_FIT_UNMEASURED

    def end(self, now: float) -> float:
        """The predicted common end of the unclaimed work (see the module's rules)."""
        sg, sc = self._scale_g(), self.scale.get("cpu", 1.0)
        shared_g = (self.cum_g[self.top] - self.cum_g[self.lo]) * sg
        work = shared_g + self.left_g * sg
        gpus = [max(now, t) for t in self.gpu_free]
        threads = [max(now, t) for t, done in zip(self.cpu_free, self.cpu_done) if not done]
        if shared_g > 0 and threads:
            rho = (self.cum_c[self.top] - self.cum_c[self.lo]) * sc / shared_g    # CPU-thread s per GPU s
        else:
            rho, threads = np.inf, []
        # capacity until E: sum over GPUs of (E - a)+ plus over CPU threads of (E - b)+ / rho
        points = sorted([(a, 1.0) for a in gpus] + [(b, 1.0 / rho) for b in threads])
        if not points:
            return now
        rate, at, filled = 0.0, points[0][0], 0.0
        for k, (t, r) in enumerate(points):
            if rate > 0 and filled + rate * (t - at) >= work:
                return at + (work - filled) / rate
            filled += rate * (t - at)
            at, rate = t, rate + r
        return at + (work - filled) / rate if rate > 0 else np.inf

    # ------------------------------------------------------------------------------------------------
    def gpu_next(self, i: int, now: float) -> np.ndarray | None:
        """Input positions of GPU ``i``'s next chunk (None: nothing left for it), and its predicted seconds
        in ``self.last_seconds``."""
        if not (self.lo < self.top or self.left):
            return None
        sg, sc = self.scale.get(f"gpu{i}", 1.0), self.scale.get("cpu", 1.0)
        self.gpu_free[i] = now
        end = self.end(now)
        fit = self._fit()
        # records too long for any CPU thread before the end are the GPUs' now; the longest of the others,
        # as many as the CPU threads are predicted to fold by the end, are kept for them
        self._leave(self.lo + int(np.searchsorted(self.tc[self.lo:self.top], fit * (end - now) / sc,
                                                  side="right")))
        capacity = fit * sum(max(0.0, end - max(now, b)) for b, done in zip(self.cpu_free, self.cpu_done)
                                 if not done) / sc
        cap = int(np.searchsorted(self.cum_c, self.cum_c[self.top] - capacity, side="left"))
        cap = min(max(cap, self.lo), self.top)
        target = max(GPU_MIN_SECONDS, GPU_TAKE * (end - now)) / sg
        picked, seconds = self._take_left(target)
        need = target - seconds
        hi = self.lo
        if self.lo < self.top and (need > 0 or not picked):
            # the longest run from lo with at most ``need`` predicted seconds (one record at least), short of
            # the CPU's part
            hi = int(np.searchsorted(self.cum_g, self.cum_g[self.lo] + max(need, 0.0), side="right")) - 1
            # the smallest chunk: GPU_MIN_RECORDS records or GPU_MIN_SECONDS of work, the fewer
            least = min(self.lo + GPU_MIN_RECORDS,
                        int(np.searchsorted(self.cum_g, self.cum_g[self.lo] + GPU_MIN_SECONDS / sg, side="left")))
            if not picked:
                hi = max(hi, least)
            hi = min(max(hi, self.lo + 1), cap)
            if hi <= self.lo and not picked:           # only the CPU's part is left: the GPU helps with it
                hi = min(self.top, max(least, self.lo + 1))
            if self.cum_g[self.top] - self.cum_g[hi] < GPU_MIN_SECONDS / sg:
                hi = self.top                                   # too little left to be worth a chunk
        run = self.order[self.lo:hi]
        seconds += float(self.cum_g[hi] - self.cum_g[self.lo])
        self.lo = hi
        positions = np.concatenate([np.asarray(picked, dtype=np.int64), run]) if picked else run
        self.last_seconds = seconds
        self.gpu_free[i] = now + seconds * sg
        return positions

    def cpu_next(self, j: int, now: float) -> np.ndarray | None:
        """Input positions for CPU thread ``j`` (None: nothing left that it may take), and their predicted
        one-thread seconds in ``self.last_seconds``."""
        self.cpu_free[j] = now
        if self.must_cpu:
            k = self.must_cpu.pop()
            self.last_seconds = float(self.cpu_only_seconds[k])
            return np.array([k], dtype=np.int64)
        sc = self.scale.get("cpu", 1.0)
        if self.lo >= self.top:
            self.cpu_done[j] = True
            return None
        fit = self._fit()
        bound = fit * (self.end(now) - now) / sc
        # the longest record that fits: t on one thread grows with the length, so the order is sorted by it
        p = int(np.searchsorted(self.tc[self.lo:self.top], bound, side="right")) + self.lo
        if p > self.lo:
            # what lies above p does not fit now, and the time left only shrinks: it is the GPUs'
            self._leave(p)
        else:
            # none fits the balance: still take the longest record that ends before the GPUs would end the rest
            # without it (the end of a batch of few, long records)
            sg = self._scale_g()
            free = sum(max(now, t) for t in self.gpu_free)
            rest = (self.cum_g[self.top] - self.cum_g[self.lo] + self.left_g) * sg
            ends = (free + rest - self.tg[self.lo:self.top] * sg) / self.gpus - now      # GPUs' end without it
            fits = np.flatnonzero(self.tc[self.lo:self.top] * sc <= fit * ends)
            if fits.size == 0:
                self.cpu_done[j] = True
                return None
            p = self.lo + int(fits[-1]) + 1
            self.last_seconds = float(self.tc[p - 1])
            positions = self.order[p - 1:p].copy()
            self.order[self.lo + 1:p] = self.order[self.lo:p - 1].copy()    # keep the rest contiguous
            self.tc[self.lo + 1:p] = self.tc[self.lo:p - 1].copy()
            self.tg[self.lo + 1:p] = self.tg[self.lo:p - 1].copy()
            self.lo += 1
            self.cum_c = np.concatenate([[0.0], np.cumsum(self.tc)])
            self.cum_g = np.concatenate([[0.0], np.cumsum(self.tg)])
            self.cpu_free[j] = now + self.last_seconds * sc
            return positions
        group = max(CPU_GROUP_SECONDS / sc, self.tc[p - 1])
        q = int(np.searchsorted(self.cum_c, self.cum_c[p] - min(group, bound), side="left"))
        q = max(self.lo, min(q, p - 1))
        positions = self.order[q:p]
        self.last_seconds = float(self.cum_c[p] - self.cum_c[q])
        self.top = q
        self.cpu_free[j] = now + self.last_seconds * sc
        return positions

    def _take_left(self, target: float) -> tuple[list, float]:
        """Records of the GPUs' own list, the longest first, up to ``target`` predicted seconds (one at least)."""
        if not self.left:
            return [], 0.0
        t = self.tg_all[np.asarray(self.left, dtype=np.int64)]
        after = np.cumsum(t[::-1])                       # from the end of the list: the longest
        k = min(len(t), max(1, int(np.searchsorted(after, target, side="right"))))
        picked = self.left[len(t) - k:]
        seconds = float(after[k - 1])
        del self.left[len(t) - k:]
        self.left_g = max(0.0, self.left_g - seconds) if self.left else 0.0
        return picked, seconds

    def _leave(self, p: int) -> None:
        if p < self.top:
            self.left.extend(self.order[p:self.top].tolist())
            self.left_g += float(self.cum_g[self.top] - self.cum_g[p])
            self.top = p


class Scales:
    """Measured over predicted seconds per device ('cpu', 'gpu0', ...), from the chunks finished so far in the
    stream (each weighted by its predicted time; older batches count half at each new batch)."""

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

    def current(self) -> dict:
        with self._lock:
            return {d: min(10.0, max(0.1, m[0] / m[1])) for d, m in self._sums.items() if m[1] > 0}
