"""``--device hybrid``: each batch folded by the CPU and the GPU at once (Lei et al.'s CPU-GPU hybrid Zuker).

Every batch the streaming core gathers is split by :func:`.partition.split` on the host's profile
(:mod:`.costmodel`): the CPU engine folds its share on the cores left after the one that feeds the GPU, on a
thread of its own, while the GPU engine folds the rest; the results are put back in the batch's order. The
two Zuker engines agree bit for bit, so the output is the same as either device's alone.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Callable

import numpy as np

from .. import config
from ..errors import UnavailableError
from . import costmodel
from .partition import split, split_at
from .reader import LengthCheck
from .records import Records

ALGORITHMS = ("zuker",)        # engines whose CPU and GPU results are identical, structures included
# The CPU gets a share of a batch only where that is predicted to finish the batch this much sooner than the
# GPU alone: the profile's costs are throughputs of large batches, and a CPU share of a few records has
# taken 3-4 times its prediction (benchmarks/RESULTS.md, hybrid sweep).
MIN_GAIN = 0.05


def gpu_name(device: int = 0) -> str:
    import cupy

    name = cupy.cuda.runtime.getDeviceProperties(device)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


class HybridFolder:
    """The :class:`~.stream.Folder` interface over a CPU folder and a GPU folder."""

    device = "hybrid"

    def __init__(self, algorithm: str, variant: str | None = None, threads: int | None = None, gpus=None,
                 options: dict | None = None, progress: Callable[[int], None] | None = None,
                 reprofile: bool = False, say: Callable[[str], None] | None = None, cpu=None, gpu=None,
                 profile: costmodel.Profile | None = None):
        from .stream import Folder

        from ..engines import gpu_available

        if algorithm not in ALGORITHMS:
            raise UnavailableError(f"{algorithm} on device 'hybrid' is not available: --device hybrid folds "
                                   f"{', '.join(ALGORITHMS)} only (the {algorithm} engines of the CPU and the GPU "
                                   "may pick different structures of the same score)")
        if gpu is None and not gpu_available():
            raise UnavailableError("--device hybrid needs an NVIDIA GPU and CuPy (pip install 'rnapipe[gpu]'); "
                                   "none was found: use --device cpu")
        cores = threads or config.default_threads()
        self.gpu = gpu or Folder(algorithm, variant, "gpu", 1, gpus, options, progress)
        self.cpu = cpu or Folder(algorithm, variant, "cpu", max(1, cores - 1), None, options, progress)
        self.algorithm, self.variant, self.options = algorithm, self.cpu.variant, self.cpu.options
        self.threads = cores
        self.profile = profile or load_or_measure(self.cpu, self.gpu, reprofile, say)
        self.cpu_cost = self.profile.costs["cpu"]
        self.gpu_cost = self.profile.costs["gpu"]
        self.records = 0
        self.cpu_records = 0
        self.predicted = [0.0, 0.0]         # CPU, GPU seconds predicted for their shares
        self.measured = [0.0, 0.0]          # and measured
        self.cpu_share: float | None = None  # a forced share of each batch's records for the CPU (sweeps)
        self.longest = (self.cpu.length_check().longest, self.gpu.length_check().longest)

    def length_check(self) -> LengthCheck:
        cpu, gpu = self.cpu.length_check(), self.gpu.length_check()
        return cpu if (cpu.longest or 0) >= (gpu.longest or 0) else gpu

    def predict(self, lens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Predicted seconds of each record on the CPU and on the GPU (inf where one cannot fold it)."""
        tc = self.cpu_cost.seconds(lens)
        tg = self.gpu_cost.seconds(lens)
        for t, longest in zip((tc, tg), self.longest):
            if longest is not None:
                t[lens > longest] = np.inf
        return tc, tg

    def plan(self, lens: np.ndarray) -> np.ndarray:
        """The records of a batch the CPU folds (mask)."""
        return self._split(*self.predict(lens))

    def _split(self, tc: np.ndarray, tg: np.ndarray) -> np.ndarray:
        if self.cpu_share is not None:
            return split_at(tc, tg, int(round(self.cpu_share * len(tc))))
        return split(tc, tg, self.cpu.threads, self.profile.calls.get("cpu", 0.0), MIN_GAIN)

    def fold_packed(self, parts: list) -> tuple[np.ndarray, bytes]:
        text = parts[0].seqs_text if len(parts) == 1 else b"".join(p.seqs_text for p in parts)
        lens = parts[0].lens if len(parts) == 1 else np.concatenate([p.lens for p in parts])
        count = len(lens)
        if count == 0:
            return np.zeros(0, dtype=np.int64), b""
        tc, tg = self.predict(lens)
        mask = self._split(tc, tg)
        cpu_count = int(mask.sum())
        if cpu_count in (0, count):                   # one device: no split, no thread
            start = time.perf_counter()
            scores, structures = (self.cpu if cpu_count else self.gpu).fold_packed(parts)
            side = 0 if cpu_count else 1
            self.measured[side] += time.perf_counter() - start
            self.predicted[side] += float((tc if cpu_count else tg).sum())
            self.records += count
            self.cpu_records += cpu_count
            return scores, structures
        chars = np.repeat(mask, lens + 1)
        src = np.frombuffer(text, dtype=np.uint8)
        sides = [(mask, chars), (~mask, ~chars)]
        results: list = [None, None]
        seconds = [0.0, 0.0]
        failed: list[BaseException] = []

        def fold(k: int, folder) -> None:
            rows, cols = sides[k]
            n = cpu_count if k == 0 else count - cpu_count
            start = time.perf_counter()
            part = Records(b"", src[cols].tobytes(), np.zeros(n, dtype=np.int64), lens[rows],
                           np.arange(n, dtype=np.int64))
            results[k] = folder.fold_packed([part])
            seconds[k] = time.perf_counter() - start

        def on_cpu() -> None:
            try:
                fold(0, self.cpu)
            except BaseException as err:        # raised on the calling thread below
                failed.append(err)

        thread = threading.Thread(target=on_cpu, name="rnapipe-hybrid-cpu", daemon=True)
        thread.start()
        try:
            fold(1, self.gpu)
        finally:
            thread.join()
        if failed:
            raise failed[0]
        scores = np.empty(count, dtype=np.int64)
        out = np.empty(len(text), dtype=np.uint8)
        for k, (rows, cols) in enumerate(sides):
            scores[rows] = results[k][0]
            out[cols] = np.frombuffer(results[k][1], dtype=np.uint8)
        self.records += count
        self.cpu_records += cpu_count
        self.predicted[0] += float(tc[mask].sum())
        self.predicted[1] += float(tg[~mask].sum())
        self.measured[0] += seconds[0]
        self.measured[1] += seconds[1]
        return scores, out.tobytes()

    def summary(self) -> str:
        share = 100.0 * self.cpu_records / self.records if self.records else 0.0
        return (f"hybrid: the CPU folded {self.cpu_records:,} of {self.records:,} records ({share:.1f} %); "
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


def stderr_say(quiet: bool) -> Callable[[str], None] | None:
    if quiet:
        return None
    return lambda text: print(f"rnapipe: {text}", file=sys.stderr, flush=True)
