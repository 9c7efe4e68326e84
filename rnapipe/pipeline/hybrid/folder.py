"""``--device hybrid``: each batch folded by the CPU and the GPUs at once (Lei et al.'s CPU-GPU hybrid Zuker).

Two ways to share a batch (``--split``):

* ``static``: the batch is split once by :func:`.static.split` on the host's profile (:mod:`.costmodel`),
  the GPUs' part cut into one contiguous run per GPU (:func:`..balance.among`);
* ``dynamic``: each batch is planned by :func:`.dynamic.plan` on the costs as measured so far in the stream
  (:class:`.dynamic.Scales`: the CPU's, each GPU's alone and beside the busy CPU), the CPU given records only
  where that is predicted to end the batch sooner after every risk is counted, else nothing (the GPUs alone,
  at no cost beyond a look at a few lengths, whose answer is kept for the next batches of the same range).

Either way each GPU folds its records in one call on a feeding thread of its own, and the CPU's records are
spread over its threads longest first (:func:`..balance.lpt`), each thread folding its own in one compiled
call without the GIL (:func:`rnapipe.cpu.zuker_packed.fold_share`), so that the CPU's threads and the GPUs'
feeding threads do not wait on each other; the results are put back in the batch's order. The two Zuker
engines agree bit for bit, so the output is the same as any device's alone.
"""

from __future__ import annotations

import os
import queue
import threading
import time
import weakref
from typing import Callable

import numpy as np

from ... import config
from ...cpu.batch import POOL, MemoryGate
from ...cpu.zuker import tables_copy
from ...errors import UsageError
from ...gpu.devices import gpu_available
from ...io import packed
from ...model import Model
from . import NoGpuForHybrid, NoHybridMode, costmodel, dynamic
from ...cpu import zuker_packed
from ..balance import MIN_GAIN, among, lpt
from ..folding.folder import Folder
from .profile import load_or_measure
from .static import split, split_at
from ..input.reader import LengthCheck
from ..records import Records

ALGORITHMS = ("zuker",)        # engines whose CPU and GPU results are identical, structures included
SPLITS = config.HYBRID_SPLITS
# Threads of the CPU folder left out of a hybrid batch, beyond one core per GPU: for the stream's reading,
# parsing and writing threads, so that the GPUs' feeding threads keep a core each.
CPU_SPARE = 1
# Batches for which the dynamic split's answer "the GPU alone" for a length range is kept (see _gpu_only).
MEMO_BATCHES = 16



def default_split() -> str:
    """The split when none is asked for: RNAPIPE_HYBRID_SPLIT, else config.HYBRID_SPLIT."""
    split = os.environ.get("RNAPIPE_HYBRID_SPLIT") or config.HYBRID_SPLIT
    if split not in SPLITS:
        raise UsageError(f"RNAPIPE_HYBRID_SPLIT={split!r}: choose from {', '.join(SPLITS)}")
    return split


class _Batch:
    """One batch's packed text and lengths; picks records out of it and puts their results back."""

    def __init__(self, text: bytes, lens: np.ndarray):
        self.text, self.lens = text, lens
        self.src = np.frombuffer(text, dtype=np.uint8)
        self.starts = packed.offsets(lens)
        self.scores = np.empty(len(lens), dtype=np.int64)
        self.out = np.empty(len(text), dtype=np.uint8)
        self.cpu_seconds: list[float] = []          # each CPU thread's and each GPU's time on this batch
        self.gpu_seconds: list[float] = []

    @staticmethod
    def _run(positions: np.ndarray) -> tuple[int, int] | None:
        """(a, b) when positions are a .. b-1 in order."""
        if len(positions) and positions[-1] - positions[0] == len(positions) - 1 and \
                (len(positions) < 3 or bool(np.all(np.diff(positions) == 1))):
            return int(positions[0]), int(positions[-1]) + 1
        return None

    def records(self, positions: np.ndarray) -> Records:
        positions = np.asarray(positions, dtype=np.int64)
        n = len(positions)
        run = self._run(positions)
        if run is not None:
            text = self.text[self.starts[run[0]]:self.starts[run[1]]]
        else:
            out = np.empty(int(self.lens[positions].sum()) + n, dtype=np.uint8)
            packed.gather(self.src, self.starts, self.lens, positions, out)
            text = out.tobytes()
        return Records(b"", text, np.zeros(n, dtype=np.int64), self.lens[positions], np.arange(n, dtype=np.int64))

    def put(self, positions: np.ndarray, scores: np.ndarray, structures: bytes) -> None:
        positions = np.asarray(positions, dtype=np.int64)
        self.scores[positions] = scores
        got = np.frombuffer(structures, dtype=np.uint8)
        run = self._run(positions)
        if run is not None:
            self.out[self.starts[run[0]]:self.starts[run[1]]] = got
        else:
            packed.scatter(got, self.starts, self.lens, positions, self.out)


class _Feeder:
    """One GPU's feeding thread, kept for the folder's life: the GPU engine keeps its device buffers per
    thread, so each GPU is fed from the same thread, batch after batch."""

    def __init__(self, name: str):
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._serve, name=name, daemon=True).start()

    def submit(self, job: Callable[[], None]) -> None:
        self._jobs.put(job)

    def close(self) -> None:
        self._jobs.put(None)

    def _serve(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            job()


def _close_all(feeders: list) -> None:
    for feeder in feeders:
        feeder.close()


class HybridFolder:
    """The :class:`~..folding.folder.Folder` interface over a CPU folder and one or more GPU folders."""

    device = "hybrid"

    def __init__(self, algorithm: str, variant: str | None = None, threads: int | None = None, gpus=None,
                 options: dict | None = None, progress: Callable[[int], None] | None = None,
                 reprofile: bool = False, say: Callable[[str], None] | None = None, cpu=None, gpu=None,
                 profile: costmodel.Profile | None = None, split: str | None = None):
        if algorithm not in ALGORITHMS:
            raise NoHybridMode(algorithm, ALGORITHMS)
        self.split = split or default_split()
        if self.split not in SPLITS:
            raise UsageError(f"unknown split {self.split!r} (choose from {', '.join(SPLITS)})")
        if gpu is None and not gpu_available():
            raise NoGpuForHybrid()
        cores = threads or config.default_threads()
        if gpu is None:
            gpu = [Folder(algorithm, variant, "gpu", 1, [g], options, progress) for g in (gpus or [0])]
        self.gpu_folders = list(gpu) if isinstance(gpu, (list, tuple)) else [gpu]
        self.gpu = self.gpu_folders[0]
        n = len(self.gpu_folders)
        # one core per GPU for its feeding thread, the rest for the CPU engine
        self.cpu = cpu or Folder(algorithm, variant, "cpu", config.cpu_threads(cores, n), None, options, progress)
        self._model_tables = Model.from_options(self.cpu.options).tables()
        self._local = threading.local()
        self._lock = threading.Lock()
        # the CPU threads' compiled call loaded meanwhile (its first call would count in the CPU's measured time)
        self._warm = threading.Thread(target=zuker_packed.warm, args=(self._model_tables,), name="rnapipe-warm-cpu",
                                      daemon=True)
        self._warm.start()
        self.algorithm, self.variant, self.options = algorithm, self.cpu.variant, self.cpu.options
        self.threads = cores
        self.profile = profile or load_or_measure(self.cpu, self.gpu, reprofile=reprofile, say=say)
        self.cpu_cost = self.profile.costs["cpu"]
        self.gpu_cost = self.profile.costs["gpu"]
        self.scales = dynamic.Scales()
        self.feeders = [_Feeder(f"rnapipe-gpu{i}") for i in range(n)]
        weakref.finalize(self, _close_all, self.feeders)       # their threads end with the folder
        self.records = 0
        self.cpu_records = 0
        self.predicted = [0.0, 0.0]         # CPU, GPU seconds predicted for their shares
        self.measured = [0.0, 0.0]          # and measured (busy seconds of the devices, GPUs summed)
        self.cpu_share: float | None = None  # a forced share of each batch's records for the CPU (sweeps)
        self._batches = 0
        self._note = None                   # the dynamic plan's prediction and scales for the batch's log line
        self.log = os.environ.get("RNAPIPE_HYBRID_LOG") or None     # a TSV line per split batch (tuning)
        self._memo: dict = {}               # (shortest, longest) -> (batch, may the CPU gain, GPU s per record)
        limits = [g.length_check().longest for g in self.gpu_folders]
        known = [x for x in limits if x is not None]
        self.longest = (self.cpu.length_check().longest, min(known) if known else None)

    def length_check(self) -> LengthCheck:
        checks = [self.cpu.length_check()] + [g.length_check() for g in self.gpu_folders]
        return max(checks, key=lambda c: c.longest or 0)

    def predict(self, lens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Predicted seconds of each record on the CPU (its throughput on all its threads) and on one GPU
        (inf where one cannot fold it)."""
        tc = self.cpu_cost.seconds(lens)
        tg = self.gpu_cost.seconds(lens)
        for t, longest in zip((tc, tg), self.longest):
            if longest is not None:
                t[lens > longest] = np.inf
        return tc, tg

    def _split(self, tc: np.ndarray, tg: np.ndarray) -> np.ndarray:
        n = len(self.gpu_folders)
        if self.cpu_share is not None:
            return split_at(tc, tg, int(round(self.cpu_share * len(tc))))
        # the profile's CPU costs are per record on all the CPU folder's threads; a batch runs on fewer
        threads = self.cpu_threads()
        return split(tc * (self.cpu.threads / threads), tg / n, threads, self.profile.calls.get("cpu", 0.0),
                     MIN_GAIN)

    def assign(self, tc: np.ndarray, tg: np.ndarray) -> np.ndarray:
        """Static split: the device of each record, -1 the CPU, i GPU i."""
        mask = self._split(tc, tg)
        where = among(tg, ~mask, len(self.gpu_folders))
        where[mask] = -1
        return where

    # ------------------------------------------------------------------------------------------------
    def cpu_threads(self) -> int:
        """The CPU threads of a hybrid batch: the CPU folder's (a core per GPU left out) less one more, for the
        threads that read, parse and write the stream beside the GPUs' feeding threads."""
        return max(1, self.cpu.threads - CPU_SPARE)

    def fold_packed(self, parts: list) -> tuple[np.ndarray, bytes]:
        if any(p.shape is not None or p.cons_text is not None for p in parts):
            # SHAPE data or constraint lines: the batch on the first GPU (its engine applies them as the CPU
            # engine does)
            self.records += sum(len(p) for p in parts)
            self._batches += 1
            return self.gpu_folders[0].fold_packed(parts)
        text = parts[0].seqs_text if len(parts) == 1 else b"".join(p.seqs_text for p in parts)
        lens = parts[0].lens if len(parts) == 1 else np.concatenate([p.lens for p in parts])
        count = len(lens)
        if count == 0:
            return np.zeros(0, dtype=np.int64), b""
        self.records += count
        self._batches += 1
        if self.split == "dynamic" and self.cpu_share is None and len(self.gpu_folders) == 1:
            predicted = self._gpu_only(lens)
            if predicted is not None:                          # the GPU alone, nothing predicted per record
                result = self._gpu_alone(0, parts, predicted, count)
                self.scales.age()
                return result
        tc, tg = self.predict(lens)
        threads = self.cpu_threads()
        if self.split == "dynamic" and self.cpu_share is None:
            scales = self._scales(float(tg[np.isfinite(tg)].sum()) / len(self.gpu_folders))
            cpu_part, predicted = dynamic.plan(tc * self.cpu.threads, tg, threads, len(self.gpu_folders), scales)
            self._note = (predicted, scales)
            where = among(tg, np.ones(count, dtype=bool), len(self.gpu_folders))
            where[cpu_part] = -1
        else:
            where = self.assign(tc, tg)
        result = self._fold(parts, text, lens, tc * self.cpu.threads, tg, where, threads)
        self.scales.age()
        return result

    def _gpu_only(self, lens: np.ndarray) -> float | None:
        """The GPU's predicted seconds for a batch of these lengths where no dynamic split can gain
        (:meth:`_may_gain`), else None. The answer for a batch's length range is kept for ``MEMO_BATCHES``
        batches: the scales it depends on move little from one batch to the next, and a batch of a few
        milliseconds should not pay for planning it."""
        lo, hi = int(lens.min()), int(lens.max())
        hit = self._memo.get((lo, hi))
        fresh = hit is not None and self._batches - hit[0] < MEMO_BATCHES
        if fresh and hit[1]:
            return None
        if fresh:
            one = hit[2]
        else:
            one = float(self.gpu_cost.seconds(np.array([lo]))[0]) if lo == hi else None
        alone = len(lens) * one if one is not None else float(self.gpu_cost.seconds(lens).sum())
        if not fresh:
            if len(self._memo) >= 256:
                self._memo.clear()
            hit = self._memo[(lo, hi)] = (self._batches, self._may_gain(lo, hi, alone), one)
        return None if hit[1] else alone

    def _scales(self, alone: float) -> dict:
        """The measured scales for a batch the GPUs alone are predicted to fold in ``alone`` seconds (the
        profile's word counted as :data:`.dynamic.PRIOR` of it)."""
        prior = dynamic.PRIOR * alone
        return self.scales.current(prior, prior * self.cpu_threads())

    def _may_gain(self, lo: int, hi: int, alone: float = 0.0) -> bool:
        """False where no dynamic split of a batch of lengths ``lo`` to ``hi`` (the GPUs alone: ``alone``
        seconds) can save :data:`.dynamic.MIN_SAVING` of the GPU's time (:func:`.dynamic.max_gain` on a few
        lengths from the shortest to the longest and the lengths the profile timed between them, not every
        record). True where a device cannot fold one."""
        cpu_limit, gpu_limit = self.longest
        if (gpu_limit is not None and hi > gpu_limit) or (cpu_limit is not None and hi > cpu_limit):
            return True
        if lo == hi:
            grid = np.array([lo], dtype=np.int64)
        else:
            timed = np.asarray(self.gpu_cost.lengths, dtype=np.int64)
            grid = np.unique(np.concatenate([np.linspace(lo, hi, 33).astype(np.int64),
                                             timed[(timed > lo) & (timed < hi)]]))
        gain = dynamic.max_gain(self.cpu_cost.seconds(grid) * self.cpu.threads, self.gpu_cost.seconds(grid),
                                  self.cpu_threads(), len(self.gpu_folders), self._scales(alone))
        return gain >= dynamic.MIN_SAVING

    def _fold(self, parts, text, lens, tc1, tg, where, threads) -> tuple[np.ndarray, bytes]:
        """Fold a batch as ``where`` says (-1 the CPU, i GPU i): each GPU's records in one call on its feeding
        thread, the CPU's spread over ``threads`` threads (longest processing time first on ``tc1``, the
        one-thread seconds), each thread's in one compiled call. Measures each side into the scales."""
        gpu_parts = [np.flatnonzero(where == i) for i in range(len(self.gpu_folders))]
        cpu_part = np.flatnonzero(where < 0)
        if not cpu_part.size and sum(1 for p in gpu_parts if p.size) == 1:      # one GPU: no split, no thread
            i = next(i for i, p in enumerate(gpu_parts) if p.size)
            return self._gpu_alone(i, parts, float(tg.sum()), len(lens))
        batch = _Batch(text, lens)
        jobs = []
        beside = "+cpu" if cpu_part.size else ""
        for i, positions in enumerate(gpu_parts):
            if positions.size:
                jobs.append((i, self._gpu_job(batch, i, positions, float(tg[positions].sum()), beside)))
        if cpu_part.size:
            gate = MemoryGate(self.cpu.budget)
            for share in lpt(tc1[cpu_part], min(threads, cpu_part.size)):
                positions = cpu_part[share]
                jobs.append((-1, self._cpu_job(batch, gate, positions, float(tc1[positions].sum()))))
        start = time.perf_counter()
        self._run(jobs)
        if self.log is not None:
            self._log_batch(batch, cpu_part, time.perf_counter() - start)
        return batch.scores, batch.out.tobytes()

    def _log_batch(self, batch: _Batch, cpu_part: np.ndarray, wall: float) -> None:
        """One line of RNAPIPE_HYBRID_LOG for a split batch: its records and lengths, the CPU's records, what
        the dynamic plan predicted (the CPU's threads, the GPUs beside it, the GPUs alone) on which scales, and
        what was measured (the CPU's longest thread, the longest GPU call, the batch)."""
        predicted, scales = self._note or ({}, {})
        self._note = None
        lens = batch.lens
        fields = [self._batches, len(lens), int(lens.min()), int(lens.max()), len(cpu_part),
                  int(lens[cpu_part].max()) if len(cpu_part) else 0]
        fields += [f"{predicted.get(k, float('nan')):.4f}" for k in ("cpu", "gpus", "alone")]
        fields += [f"{max(batch.cpu_seconds, default=0.0):.4f}", f"{max(batch.gpu_seconds, default=0.0):.4f}",
                   f"{wall:.4f}", " ".join(f"{k}={v:.3f}" for k, v in sorted(scales.items()))]
        with self._lock, open(self.log, "a") as handle:
            if handle.tell() == 0:
                handle.write("batch\trecords\tshortest\tlongest\tcpu_records\tcpu_longest\tpredicted_cpu\t"
                             "predicted_gpus\tpredicted_alone\tcpu_thread_max\tgpu_max\twall\tscales\n")
            handle.write("\t".join(str(f) for f in fields) + "\n")

    def _gpu_alone(self, i: int, parts: list, predicted: float, records: int) -> tuple[np.ndarray, bytes]:
        """The whole batch on GPU i, on the calling thread; measured into the scales."""
        start = time.perf_counter()
        result = self.gpu_folders[i].fold_packed(parts)
        seconds = time.perf_counter() - start
        self._count(i, seconds, predicted, records)
        self.scales.add(f"gpu{i}", seconds, predicted)
        return result

    def _gpu_job(self, batch: _Batch, i: int, positions: np.ndarray, predicted: float, beside: str):
        def job() -> None:
            start = time.perf_counter()
            scores, structures = self.gpu_folders[i].fold_packed([batch.records(positions)])
            seconds = time.perf_counter() - start
            batch.put(positions, scores, structures)
            batch.gpu_seconds.append(seconds)
            self.scales.add(f"gpu{i}{beside}", seconds, predicted)
            with self._lock:
                self._count(i, seconds, predicted, len(positions))
        return job

    def _cpu_job(self, batch: _Batch, gate: MemoryGate, positions: np.ndarray, predicted: float):
        def job() -> None:
            self._warm.join()
            need = zuker_packed.bytes_needed(batch.lens, positions)
            gate.take(need)
            try:
                seconds = zuker_packed.fold_share(self._tables(), batch.src, batch.starts, batch.lens, positions,
                                             batch.scores, batch.out)
            finally:
                gate.give_back(need)
            batch.cpu_seconds.append(seconds)
            self.scales.add("cpu", seconds, predicted)
            with self._lock:
                self._count(-1, seconds, predicted, len(positions))
            if self.cpu.progress is not None:
                self.cpu.progress(len(positions))
        return job

    def _tables(self):
        """This thread's copy of the CPU engine's energy tables (kept per thread for the folder's life)."""
        mine = getattr(self._local, "tables", None)
        if mine is None:
            mine = self._local.tables = tables_copy(self._model_tables)
        return mine

    def _count(self, device: int, seconds: float, predicted: float, records: int) -> None:
        side = 0 if device < 0 else 1
        self.measured[side] += seconds
        self.predicted[side] += predicted
        if device < 0:
            self.cpu_records += records

    def _run(self, jobs: list) -> None:
        """Run each job, ``jobs`` being (device, job) pairs: a GPU's on its feeding thread, the CPU's on a
        pooled thread each. The first error is raised here once every job has ended (a CPU job is one compiled
        call: it cannot be stopped part way)."""
        done: queue.SimpleQueue = queue.SimpleQueue()
        failed: list[BaseException] = []

        def run(job) -> None:
            try:
                job()
            except BaseException as err:                 # raised on the calling thread
                failed.append(err)
            finally:
                done.put(None)

        for device, job in jobs:
            runner = POOL if device < 0 else self.feeders[device]
            runner.submit(lambda job=job: run(job))
        for _ in jobs:
            done.get()
        if failed:
            raise failed[0]

    def summary(self) -> str:
        share = 100.0 * self.cpu_records / self.records if self.records else 0.0
        gpus = len(self.gpu_folders)
        return (f"hybrid ({self.split}{f', {gpus} GPUs' if gpus > 1 else ''}): the CPU folded "
                f"{self.cpu_records:,} of {self.records:,} records ({share:.1f} %); "
                f"predicted {self.predicted[0]:.1f} s CPU / {self.predicted[1]:.1f} s GPU, "
                f"measured {self.measured[0]:.1f} s / {self.measured[1]:.1f} s")
