"""``--device hybrid``: each batch folded by the CPU and the GPUs at once (Lei et al.'s CPU-GPU hybrid Zuker).

Two ways to share a batch (``--split``):

* ``static``: the batch is split once by :func:`.partition.split` on the host's profile (:mod:`.costmodel`),
  the GPUs' part cut into one contiguous run per GPU (:func:`.partition.among`); each share is folded on a
  thread of its own (the CPU engine on the cores left after one feeding thread per GPU), and the results are
  put back in the batch's order;
* ``dynamic``: the records wait in one length-sorted queue (:class:`.scheduler.Queue`); one feeding thread per
  GPU takes chunks from the short end, each CPU thread a few records at a time from the long end, and the
  predicted times are scaled by what the finished chunks took (:class:`.scheduler.Scales`, kept over the
  whole stream), so that every device ends the batch at about the same time.

A batch is dynamic, the stream is not: the streaming core hands over up to 131,072 records at a time and takes
their results in order before the next, so each batch ends together; what the devices learned (their scales)
carries on to the next batch. The two Zuker engines agree bit for bit, so the output is the same as any device's
alone.
"""

from __future__ import annotations

import copy
import os
import queue
import sys
import threading
import time
import weakref
from typing import Callable

import numpy as np
from numba import njit

from .. import config
from ..cpu.batch import POOL, MemoryGate
from ..errors import UnavailableError, UsageError
from . import costmodel, scheduler
from .partition import among, split, split_at
from .reader import LengthCheck
from .records import Records

ALGORITHMS = ("zuker",)        # engines whose CPU and GPU results are identical, structures included
SPLITS = config.HYBRID_SPLITS
# Static split: the CPU gets a share of a batch only where that is predicted to finish the batch this much
# sooner than the GPU alone: the profile's costs are throughputs of large batches, and a CPU share of a few
# records has taken 3-4 times its prediction (benchmarks/RESULTS.md, hybrid sweep).
MIN_GAIN = 0.05
# Dynamic split: the queue is used where the CPU could save at least this much of the GPUs' time (a CPU
# thread never takes a record that would outlast the GPUs, so a wrong prediction costs less than above).
DYNAMIC_MIN_GAIN = 0.02
# While the devices of a batch fold at once, threads hand the GIL over this often (the interpreter's default is 5 ms: a
# CPU thread back from a fold would wait that long for the GPU's feeding thread at every record group).
SWITCH_INTERVAL = 0.0005


def gpu_name(device: int = 0) -> str:
    import cupy

    name = cupy.cuda.runtime.getDeviceProperties(device)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def default_split() -> str:
    """The split when none is asked for: RNAPIPE_HYBRID_SPLIT, else config.HYBRID_SPLIT."""
    split = os.environ.get("RNAPIPE_HYBRID_SPLIT") or config.HYBRID_SPLIT
    if split not in SPLITS:
        raise UsageError(f"RNAPIPE_HYBRID_SPLIT={split!r}: choose from {', '.join(SPLITS)}")
    return split


@njit(nogil=True, cache=True)
def _gather(src, starts, lens, positions, out):
    """Records ``positions`` of a packed text (each record followed by a newline) into ``out``, in that order."""
    o = 0
    for k in positions:
        n = lens[k] + 1
        out[o:o + n] = src[starts[k]:starts[k] + n]
        o += n


@njit(nogil=True, cache=True)
def _scatter(dst, starts, lens, positions, src):
    """The inverse of _gather: ``src`` (records ``positions`` in that order) back to their places in ``dst``."""
    o = 0
    for k in positions:
        n = lens[k] + 1
        dst[starts[k]:starts[k] + n] = src[o:o + n]
        o += n


class _Batch:
    """One batch's packed text and lengths; picks records out of it and puts their results back."""

    def __init__(self, text: bytes, lens: np.ndarray):
        self.text, self.lens = text, lens
        self.src = np.frombuffer(text, dtype=np.uint8)
        self.starts = np.zeros(len(lens) + 1, dtype=np.int64)
        np.cumsum(lens + 1, out=self.starts[1:])
        self.scores = np.empty(len(lens), dtype=np.int64)
        self.out = np.empty(len(text), dtype=np.uint8)

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
            _gather(self.src, self.starts, self.lens, positions, out)
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
            _scatter(self.out, self.starts, self.lens, positions, got)


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
    """The :class:`~.stream.Folder` interface over a CPU folder and one or more GPU folders."""

    device = "hybrid"

    def __init__(self, algorithm: str, variant: str | None = None, threads: int | None = None, gpus=None,
                 options: dict | None = None, progress: Callable[[int], None] | None = None,
                 reprofile: bool = False, say: Callable[[str], None] | None = None, cpu=None, gpu=None,
                 profile: costmodel.Profile | None = None, split: str | None = None):
        from .stream import Folder

        from ..engines import gpu_available

        if algorithm not in ALGORITHMS:
            raise UnavailableError(f"{algorithm} on device 'hybrid' is not available: --device hybrid folds "
                                   f"{', '.join(ALGORITHMS)} only (the {algorithm} engines of the CPU and the GPU "
                                   "may pick different structures of the same score)")
        self.split = split or default_split()
        if self.split not in SPLITS:
            raise UsageError(f"unknown split {self.split!r} (choose from {', '.join(SPLITS)})")
        if gpu is None and not gpu_available():
            raise UnavailableError("--device hybrid needs an NVIDIA GPU and CuPy (pip install 'rnapipe[gpu]'); "
                                   "none was found: use --device cpu")
        cores = threads or config.default_threads()
        if gpu is None:
            gpu = [Folder(algorithm, variant, "gpu", 1, [g], options, progress) for g in (gpus or [0])]
        self.gpu_folders = list(gpu) if isinstance(gpu, (list, tuple)) else [gpu]
        self.gpu = self.gpu_folders[0]
        n = len(self.gpu_folders)
        # one core a GPU for its feeding thread, the rest for the CPU engine
        self.cpu = cpu or Folder(algorithm, variant, "cpu", max(1, cores - n), None, options, progress)
        self.cpu_one = copy.copy(self.cpu)          # the same engine on one thread (a dynamic CPU thread's calls)
        self.cpu_one.threads = 1
        self.algorithm, self.variant, self.options = algorithm, self.cpu.variant, self.cpu.options
        self.threads = cores
        self.profile = profile or load_or_measure(self.cpu, self.gpu, reprofile, say)
        self.cpu_cost = self.profile.costs["cpu"]
        self.gpu_cost = self.profile.costs["gpu"]
        self.scales = scheduler.Scales()
        self.feeders = [_Feeder(f"rnapipe-gpu{i}") for i in range(n)]
        weakref.finalize(self, _close_all, self.feeders)       # their threads end with the folder
        self.records = 0
        self.cpu_records = 0
        self.predicted = [0.0, 0.0]         # CPU, GPU seconds predicted for their shares
        self.measured = [0.0, 0.0]          # and measured (busy seconds of the devices, GPUs summed)
        self.cpu_share: float | None = None  # a forced share of each batch's records for the CPU (sweeps)
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

    def plan(self, lens: np.ndarray) -> np.ndarray:
        """The records of a batch the CPU folds in the static split (mask)."""
        return self._split(*self.predict(lens))

    def _split(self, tc: np.ndarray, tg: np.ndarray) -> np.ndarray:
        n = len(self.gpu_folders)
        if self.cpu_share is not None:
            return split_at(tc, tg, int(round(self.cpu_share * len(tc))))
        return split(tc, tg / n, self.cpu.threads, self.profile.calls.get("cpu", 0.0), MIN_GAIN)

    def assign(self, tc: np.ndarray, tg: np.ndarray) -> np.ndarray:
        """Static split: the device of each record, -1 the CPU, i GPU i."""
        mask = self._split(tc, tg)
        where = among(tg, ~mask, len(self.gpu_folders))
        where[mask] = -1
        return where

    # ------------------------------------------------------------------------------------------------
    def fold_packed(self, parts: list) -> tuple[np.ndarray, bytes]:
        text = parts[0].seqs_text if len(parts) == 1 else b"".join(p.seqs_text for p in parts)
        lens = parts[0].lens if len(parts) == 1 else np.concatenate([p.lens for p in parts])
        count = len(lens)
        if count == 0:
            return np.zeros(0, dtype=np.int64), b""
        if self.split == "dynamic" and self.cpu_share is None and len(self.gpu_folders) == 1 and \
                not self._may_gain(lens):                      # the GPU alone, nothing predicted a record
            start = time.perf_counter()
            result = self.gpu.fold_packed(parts)
            self._count(0, time.perf_counter() - start, 0.0, count)
            self.records += count
            return result
        tc, tg = self.predict(lens)
        if self.split == "dynamic" and self.cpu_share is None:
            if self._worth_a_queue(tc, tg):
                result = self._dynamic(text, lens, tc, tg)
            elif len(self.gpu_folders) == 1:                 # the GPU alone: no split, no thread
                start = time.perf_counter()
                result = self.gpu.fold_packed(parts)
                self._count(0, time.perf_counter() - start, float(tg.sum()), count)
            else:
                result = self._static(parts, text, lens, tc, tg, among(tg, np.ones(count, dtype=bool),
                                                                       len(self.gpu_folders)))
        else:
            result = self._static(parts, text, lens, tc, tg, self.assign(tc, tg))
        self.records += count
        self.scales.age()
        return result

    def _may_gain(self, lens: np.ndarray) -> bool:
        """False where no dynamic split of a batch of these lengths can save DYNAMIC_MIN_GAIN: the gain is at
        most 1 / (K + 1), K the smallest t_CPU / t_GPU (scaled) over the lengths from the batch's shortest to
        its longest (a few lengths predicted, not every record). True where a device cannot fold one."""
        lo, hi = int(lens.min()), int(lens.max())
        cpu_limit, gpu_limit = self.longest
        if (gpu_limit is not None and hi > gpu_limit) or (cpu_limit is not None and hi > cpu_limit):
            return True
        grid = np.unique(np.linspace(lo, hi, 33).astype(np.int64))
        scale = self.scales.current()
        n = len(self.gpu_folders)
        sg = np.mean([scale.get(f"gpu{i}", 1.0) for i in range(n)]) / n
        with np.errstate(divide="ignore", invalid="ignore"):
            k = self.cpu_cost.seconds(grid) * scale.get("cpu", 1.0) / (self.gpu_cost.seconds(grid) * sg)
        return not 1.0 / (float(np.nanmin(k)) + 1.0) < DYNAMIC_MIN_GAIN if np.isfinite(k).any() else True

    def _worth_a_queue(self, tc: np.ndarray, tg: np.ndarray) -> bool:
        """Whether the CPU could save DYNAMIC_MIN_GAIN of the GPUs' time on this batch (or must fold some)."""
        if np.isinf(tg).any():
            return True
        scale = self.scales.current()
        n = len(self.gpu_folders)
        t_gpu = float(tg.sum()) * np.mean([scale.get(f"gpu{i}", 1.0) for i in range(n)]) / n
        sc = scale.get("cpu", 1.0)
        usable = tc[np.isfinite(tc)]
        if not usable.size:
            return False
        t_cpu = float(usable.sum()) * sc
        if t_gpu / (t_gpu + t_cpu) < DYNAMIC_MIN_GAIN:
            return False
        # not even the shortest record fits on one thread before the devices would end together
        return float(usable.min()) * self.cpu.threads * sc <= scheduler.CPU_FIT * t_gpu * t_cpu / (t_gpu + t_cpu)

    def _static(self, parts, text, lens, tc, tg, where) -> tuple[np.ndarray, bytes]:
        devices = [(-1, self.cpu)] + list(enumerate(self.gpu_folders))
        shares = [(d, f, np.flatnonzero(where == d)) for d, f in devices]
        shares = [s for s in shares if len(s[2])]
        if len(shares) == 1:                               # one device: no split, no thread
            d, folder, _ = shares[0]
            start = time.perf_counter()
            result = folder.fold_packed(parts)
            self._count(d, time.perf_counter() - start, float((tc if d < 0 else tg).sum()), len(lens))
            return result
        batch = _Batch(text, lens)
        tasks = [(d, folder, positions, float((tc if d < 0 else tg)[positions].sum()))
                 for d, folder, positions in shares]
        self._run(batch, [(task[0], lambda task=task: [task]) for task in tasks])
        return batch.scores, batch.out.tobytes()

    def _count(self, device: int, seconds: float, predicted: float, records: int) -> None:
        side = 0 if device < 0 else 1
        self.measured[side] += seconds
        self.predicted[side] += predicted
        if device < 0:
            self.cpu_records += records

    def _run(self, batch: _Batch, sources: list) -> None:
        """Fold each source's tasks, ``sources`` being (device, source) pairs: a GPU's on its feeding thread,
        the CPU's on a pooled thread each. A source is called for an iterable of its tasks (device, folder,
        positions, predicted seconds); results go into ``batch``. The first error stops every source and is
        raised here."""
        done: queue.SimpleQueue = queue.SimpleQueue()
        failed: list[BaseException] = []
        lock = threading.Lock()

        def work(source) -> None:
            try:
                for device, folder, positions, predicted in source():
                    if failed:
                        break
                    start = time.perf_counter()
                    scores, structures = folder.fold_packed([batch.records(positions)])
                    seconds = time.perf_counter() - start
                    batch.put(positions, scores, structures)
                    with lock:
                        self._count(device, seconds, predicted, len(positions))
            except BaseException as err:                 # raised on the calling thread
                failed.append(err)
            finally:
                done.put(None)

        switch = sys.getswitchinterval()
        sys.setswitchinterval(min(switch, SWITCH_INTERVAL))
        try:
            for device, source in sources:
                runner = POOL if device < 0 else self.feeders[device]
                runner.submit(lambda source=source: work(source))
            for _ in sources:
                done.get()
        finally:
            sys.setswitchinterval(switch)
        if failed:
            raise failed[0]

    def _dynamic(self, text, lens, tc, tg) -> tuple[np.ndarray, bytes]:
        threads = self.cpu.threads
        q = scheduler.Queue(lens, tc * threads, tg, len(self.gpu_folders), threads, self.scales.current())
        lock = threading.Lock()
        t0 = time.perf_counter()
        gate = MemoryGate(self.cpu.budget)
        engine, variant = self.cpu.engine, self.cpu.variant

        def gpu_source(i: int):
            def tasks():
                while True:
                    with lock:
                        q.scale = self.scales.current()
                        positions = q.gpu_next(i, time.perf_counter() - t0)
                        predicted = q.last_seconds if positions is not None else 0.0
                    if positions is None:
                        return
                    start = time.perf_counter()
                    yield i, self.gpu_folders[i], positions, predicted
                    self.scales.add(f"gpu{i}", time.perf_counter() - start, predicted)
            return tasks

        def cpu_source(j: int):
            def tasks():
                while True:
                    with lock:
                        q.scale = self.scales.current()
                        positions = q.cpu_next(j, time.perf_counter() - t0)
                        predicted = q.last_seconds if positions is not None else 0.0
                    if positions is None:
                        return
                    need = engine.bytes_needed(int(lens[positions].max()), variant)
                    gate.take(need)
                    start = time.perf_counter()
                    try:
                        yield -1, self.cpu_one, positions, predicted / threads
                    finally:
                        gate.give_back(need)
                    self.scales.add("cpu", time.perf_counter() - start, predicted)
            return tasks

        batch = _Batch(text, lens)
        self._run(batch, [(i, gpu_source(i)) for i in range(len(self.gpu_folders))] +
                  [(-1, cpu_source(j)) for j in range(threads)])
        return batch.scores, batch.out.tobytes()

    def summary(self) -> str:
        share = 100.0 * self.cpu_records / self.records if self.records else 0.0
        gpus = len(self.gpu_folders)
        return (f"hybrid ({self.split}{f', {gpus} GPUs' if gpus > 1 else ''}): the CPU folded "
                f"{self.cpu_records:,} of {self.records:,} records ({share:.1f} %); "
                f"predicted {self.predicted[0]:.1f} s CPU / {self.predicted[1]:.1f} s GPU, "
                f"measured {self.measured[0]:.1f} s / {self.measured[1]:.1f} s")


def profile_key(cpu, gpu) -> dict:
    return costmodel.host_key(cpu.algorithm, cpu.variant, cpu.options, gpu_name((gpu.gpus or [0])[0]), cpu.threads)


def measure(cpu, gpu, say: Callable[[str], None] | None = None) -> costmodel.Profile:
    """Time both folders at the profile's lengths and fit their costs."""
    samples, calls = {}, {}
    for name, folder in (("cpu", cpu), ("gpu", gpu)):
        if say:
            say(f"profiling the {name.upper()} engine ({folder.threads} thread(s))" if name == "cpu" else
                "profiling the GPU engine")
        samples[name] = costmodel.measure(folder, longest=folder.length_check().longest)
        calls[name] = costmodel.call_seconds(folder)
    return costmodel.Profile.fitted(profile_key(cpu, gpu), samples, calls)


def load_or_measure(cpu, gpu, reprofile: bool = False,
                    say: Callable[[str], None] | None = None) -> costmodel.Profile:
    """The host's saved profile for these folders, or a new one (measured, then saved)."""
    key = profile_key(cpu, gpu)
    path = costmodel.cache_path(key)
    if not reprofile:
        profile = costmodel.Profile.load(path, key)
        if profile is not None:
            return profile
    start = time.perf_counter()
    profile = measure(cpu, gpu, say)
    try:
        profile.save(path)
        where = f"; saved in {path}"
    except OSError as err:
        where = f"; not saved ({err.strerror or err})"
    if say:
        say(f"profiled in {time.perf_counter() - start:.0f} s{where}")
    return profile


def best_gain(profile: costmodel.Profile, gpus: int = 1) -> tuple[float, int, float]:
    """The largest share of the GPUs' time the CPU could save at one of the profile's lengths, by Lei et al.'s
    rule (1 / (K + 1), K = t_CPU / t_GPU of the GPUs together): (gain, length, K)."""
    best = (0.0, 0, np.inf)
    cpu, gpu = profile.samples.get("cpu", {}), profile.samples.get("gpu", {})
    for length in sorted(set(cpu) & set(gpu)):
        k = cpu[length] / (gpu[length] / max(1, gpus))
        if 1.0 / (k + 1.0) > best[0]:
            best = (1.0 / (k + 1.0), length, k)
    return best


def auto_device(algorithm: str, variant: str | None = None, threads: int | None = None, gpus=None,
                options: dict | None = None, reprofile: bool = False, profile: costmodel.Profile | None = None,
                gpu_present: bool | None = None) -> tuple[str, str, costmodel.Profile | None]:
    """``--device auto``: (device, why, the profile it read). Hybrid where a GPU is here, the algorithm has a
    hybrid mode and this host's saved profile (or a new one with ``reprofile``) predicts that the CPU saves at
    least MIN_GAIN of the GPUs' time at one of its lengths (batches that gain nothing still go to the GPUs
    alone); else the GPU; else the CPU."""
    from ..engines import _MODULES, gpu_available
    from .stream import Folder

    present = gpu_available() if gpu_present is None else gpu_present
    if not present or (algorithm, "gpu") not in _MODULES:
        return "cpu", "no usable GPU: no CuPy or no CUDA device" if (algorithm, "gpu") in _MODULES else \
            f"{algorithm} has no GPU engine", None
    if algorithm not in ALGORITHMS:
        return "gpu", f"{algorithm} has no hybrid mode", None
    n = len(gpus or [0])
    if profile is None:
        cores = threads or config.default_threads()
        cpu = Folder(algorithm, variant, "cpu", max(1, cores - n), None, options)
        gpu = Folder(algorithm, variant, "gpu", 1, [(gpus or [0])[0]], options)
        if reprofile:
            profile = load_or_measure(cpu, gpu, True)
        else:
            profile = costmodel.Profile.load(costmodel.cache_path(profile_key(cpu, gpu)), profile_key(cpu, gpu))
        if profile is None:
            return "gpu", "no saved hybrid profile for this host: 'rnapipe profile' makes one", None
    gain, length, k = best_gain(profile, n)
    if gain >= MIN_GAIN:
        return "hybrid", (f"this host's profile predicts the CPU saves up to {100 * gain:.1f} % of the GPU's time "
                          f"at {length} nt, K = {k:.1f}"), profile
    return "gpu", (f"the CPU would save at most {100 * gain:.1f} % of the GPU's time (K = {k:.1f} at best), "
                   f"below {100 * MIN_GAIN:.0f} %"), profile


def stderr_say(quiet: bool) -> Callable[[str], None] | None:
    if quiet:
        return None
    return lambda text: print(f"rnapipe: {text}", file=sys.stderr, flush=True)
