"""``--device hybrid`` with the partition function: each batch shared once between the CPU's partition engine and
the GPUs' (the static split of the MFE's hybrid device, :func:`..hybrid.static.split`, on the host's profile of
the partition engines, :func:`..hybrid.profile.load_or_measure`; the GPUs' part cut into one run of like
predicted time per GPU, :func:`..balance.among`). Each GPU folds its run on a thread of its own while the CPU
folds its records on the calling thread over its threads; the results are put back in the batch's order.

The two partition engines give the same values to rounding (within 1e-9 relative; the MFE structures, from the
MFE engines, bit for bit), not bit for bit: a record's printed probabilities can differ in the last digit with
the device that folded it, so a rerun may split differently and print such a digit otherwise. The CPU engine
takes the cores less one a GPU (its feeding thread) and ``CPU_SPARE`` (the stream's reading and writing
threads); each GPU's engine does its part on the host (the MEA structure, the derived values: a burst after
each group's fill) on a share of all the cores, beside the CPU engine's threads."""

from __future__ import annotations

import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import numpy as np

from ... import config
from ...gpu.devices import gpu_available
from ...io.ensemble import EnsembleChunk
from ..balance import MIN_GAIN, among
from ..folding.folder import one_at_a_time
from ..hybrid import NoGpuForHybrid
from ..hybrid.profile import load_or_measure
from ..hybrid.static import split
from ..input.reader import LengthCheck
from .folder import EnsembleFolder, packed_results
from .request import Settings

CPU_SPARE = 1                  # cores left out of the CPU engine for the stream's reading and writing threads


def cpu_threads(cores: int, gpus: int) -> int:
    """The CPU engine's threads beside ``gpus`` GPUs on ``cores`` cores (the profile of a hybrid run is made
    with these)."""
    return max(1, config.cpu_threads(cores, gpus) - CPU_SPARE)


def gpu_threads(cores: int, gpus: int) -> int:
    """Each GPU engine's host threads beside ``gpus`` GPUs on ``cores`` cores."""
    return max(1, cores // max(1, gpus))


def _shutdown(pools: list) -> None:
    for pool in pools:
        pool.shutdown(wait=False)


class EnsembleHybridFolder:
    """The :class:`~..folding.folder.Folder` interface over the CPU's partition engine and the GPUs'."""

    device = "hybrid"
    algorithm = "zuker"

    def __init__(self, threads: int | None = None, gpus=None, options: dict | None = None,
                 progress: Callable[[int], None] | None = None, settings: Settings | None = None,
                 reprofile: bool = False, say: Callable[[str], None] | None = None, cpu=None, gpu=None,
                 profile=None):
        if gpu is None and not gpu_available():
            raise NoGpuForHybrid()
        self.ensemble = settings or Settings()
        cores = threads or config.default_threads()
        progress = one_at_a_time(progress)
        if gpu is None:
            gpus = list(gpus or [0])
            gpu = [EnsembleFolder(gpu_threads(cores, len(gpus)), options, progress, self.ensemble, "gpu", [g])
                   for g in gpus]
        self.gpu_folders = list(gpu)
        n = len(self.gpu_folders)
        self.cpu = cpu or EnsembleFolder(cpu_threads(cores, n), options, progress, self.ensemble, "cpu")
        self.variant, self.options, self.threads = self.cpu.variant, self.cpu.options, cores
        self.profile = profile or load_or_measure(self.cpu, self.gpu_folders[0], reprofile=reprofile, say=say)
        self.cpu_cost, self.gpu_cost = self.profile.costs["cpu"], self.profile.costs["gpu"]
        self.pools = [ThreadPoolExecutor(1, thread_name_prefix=f"rnapipe-pf-gpu{i}") for i in range(n)]
        weakref.finalize(self, _shutdown, self.pools)
        limits = [g.length_check().longest for g in self.gpu_folders]
        known = [x for x in limits if x is not None]
        self.longest = (self.cpu.length_check().longest, min(known) if known else None)
        self.records = self.cpu_records = 0
        self.seconds = [0.0, 0.0]           # CPU, GPU predicted seconds of their shares

    def length_check(self) -> LengthCheck:
        checks = [self.cpu.length_check()] + [g.length_check() for g in self.gpu_folders]
        return max(checks, key=lambda c: c.longest or 0)

    def assign(self, lens: np.ndarray) -> np.ndarray:
        """The device of each record of a batch of lengths ``lens``: -1 the CPU, i GPU i."""
        tc = self.cpu_cost.seconds(lens)
        tg = self.gpu_cost.seconds(lens)
        for t, longest in zip((tc, tg), self.longest):
            if longest is not None:
                t[lens > longest] = np.inf
        n = len(self.gpu_folders)
        mask = split(tc, tg / n, self.cpu.threads, self.profile.calls.get("cpu", 0.0), MIN_GAIN)
        where = among(tg, ~mask, n)
        where[mask] = -1
        self.seconds[0] += float(tc[mask].sum())
        self.seconds[1] += float(tg[~mask].sum())
        return where

    def fold_packed(self, parts: list) -> tuple[np.ndarray, bytes, EnsembleChunk]:
        sequences = [s for p in parts for s in p.seqs]
        if not sequences:
            return packed_results([], self.ensemble)
        where = self.assign(np.fromiter((len(s) for s in sequences), dtype=np.int64, count=len(sequences)))
        results: list = [None] * len(sequences)

        def fold(folder: EnsembleFolder, positions: np.ndarray) -> None:
            for k, r in zip(positions, folder.fold_ensembles([sequences[k] for k in positions])):
                results[k] = r

        futures = []
        for i, (pool, folder) in enumerate(zip(self.pools, self.gpu_folders)):
            positions = np.flatnonzero(where == i)
            if positions.size:
                futures.append(pool.submit(fold, folder, positions))
        mine = np.flatnonzero(where < 0)
        try:
            if mine.size:
                fold(self.cpu, mine)
        finally:
            for future in futures:
                future.exception()              # every GPU's call ended before this batch's end
        for future in futures:
            future.result()                     # the first GPU error raised here
        self.records += len(sequences)
        self.cpu_records += int(mine.size)
        return packed_results(results, self.ensemble)

    def summary(self) -> str:
        share = 100.0 * self.cpu_records / self.records if self.records else 0.0
        gpus = len(self.gpu_folders)
        return (f"hybrid (static, partition function{f', {gpus} GPUs' if gpus > 1 else ''}): the CPU folded "
                f"{self.cpu_records:,} of {self.records:,} records ({share:.1f} %); predicted "
                f"{self.seconds[0]:.1f} s CPU / {self.seconds[1]:.1f} s GPU")
