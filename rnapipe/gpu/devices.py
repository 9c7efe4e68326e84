"""The GPUs of this host as the layers above the engines see them: whether there is one, how many, their names,
the numbers a user asked for checked, and sequences dealt to several GPUs. CuPy is imported only inside the
functions, so a CPU-only user (or ``--help``) never loads it."""

from __future__ import annotations

from typing import Callable, Sequence

from .. import config
from ..errors import UnavailableError, UsageError



class NoGpu(UnavailableError):
    """``what`` needs an NVIDIA GPU and CuPy, and this process sees none; the message says to use ``instead``."""

    def __init__(self, what: str, instead: str):
        self.what, self.instead = what, instead
        super().__init__(f"{what} needs an NVIDIA GPU and CuPy (pip install 'rnapipe[gpu]'); none was found: "
                         f"use {instead}")

def gpu_name(device: int = 0) -> str:
    import cupy

    name = cupy.cuda.runtime.getDeviceProperties(device)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def check_gpus(gpus: Sequence[int], device: str) -> list[int]:
    """The GPU numbers of a ``gpus=`` request, checked against the devices CUDA sees."""
    gpus = [int(g) for g in gpus]
    if device != "gpu":
        raise UsageError("gpus= needs device='gpu' or device='hybrid'")
    if not gpus:
        raise UsageError("gpus= needs at least one GPU number")
    import cupy
    count = cupy.cuda.runtime.getDeviceCount()
    wrong = [g for g in gpus if not 0 <= g < count]
    if wrong:
        raise UnavailableError(f"GPU {wrong[0]} does not exist: CUDA sees {count} GPU(s), numbered 0 to {count - 1}")
    return gpus


def split_for_gpus(lengths: Sequence[int], parts: int) -> list[list[int]]:
    """Indices of ``lengths`` dealt to ``parts`` workers, longest first in turn, so that each gets a like
    share of every length (each part keeps input order). Dealt by rank, not cut into contiguous runs of equal
    predicted time as a hybrid batch is (:func:`rnapipe.pipeline.balance.among`): this layer has no cost
    model, and with the same mix of lengths on each GPU the parts end together whatever a length costs."""
    order = sorted(range(len(lengths)), key=lambda k: -lengths[k])
    return [sorted(order[p::parts]) for p in range(parts)]


def on_gpus(fold: Callable[[list[str], int, Callable[[int], None] | None], list], sequences: list[str],
            threads: int, progress: Callable[[int], None] | None, gpus: Sequence[int]) -> list:
    """``fold(sequences, threads, progress)`` (an engine's batch call, returning a result per sequence) on the
    GPUs ``gpus``: one GPU current while it folds them all; several, one host thread each with a like share of
    every length (:func:`split_for_gpus`) and of ``threads``. Results in input order."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    import cupy

    if len(gpus) == 1:
        with cupy.cuda.Device(gpus[0]):
            return fold(sequences, threads, progress)
    lock = threading.Lock()

    def report(k: int) -> None:
        if progress is not None:
            with lock:
                progress(k)

    parts = split_for_gpus([len(s) for s in sequences], len(gpus))
    per_gpu_threads = max(1, threads // len(gpus))

    def run(gpu: int, part: list[int]) -> list:
        with cupy.cuda.Device(gpu):
            return fold([sequences[k] for k in part], per_gpu_threads, report)

    results: list = [None] * len(sequences)
    with ThreadPoolExecutor(max_workers=len(gpus)) as pool:
        futures = [pool.submit(run, g, part) for g, part in zip(gpus, parts) if part]
        for part, future in zip([p for p in parts if p], futures):
            for k, r in zip(part, future.result()):
                results[k] = r
    return results


def fold_on_gpus(engine, sequences: list[str], variant: str, threads: int, options: dict,
                 progress: Callable[[int], None] | None, gpus: Sequence[int]) -> list:
    """``engine.fold_batch`` over several GPUs (:func:`on_gpus`); results in input order."""
    return on_gpus(lambda seqs, t, report: engine.fold_batch(seqs, variant, t, options, report), sequences,
                   threads, progress, gpus)


def gpu_available() -> bool:
    """True when CuPy imports and sees at least one CUDA device."""
    try:
        import cupy  # noqa: F401  (imported lazily on purpose)
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no CuPy, no driver, no device: all mean "no GPU"
        return False


def gpu_count() -> int:
    """CUDA devices this process sees (0 without CuPy or a driver)."""
    if not gpu_available():
        return 0
    import cupy
    return int(cupy.cuda.runtime.getDeviceCount())


def memory_budget(kept: int = 0) -> int:
    """Bytes one sequence (or batch) may take on the current GPU: a fraction of its free memory now,
    counting what CuPy's pool holds but does not use, the short-sequence pools kept for reuse and ``kept`` more
    bytes the caller keeps for reuse (rnapipe.gpu.zuker's matrices)."""
    import cupy

    from .zuker_short import cached_bytes

    free, _total = cupy.cuda.runtime.memGetInfo()
    kept += cached_bytes()
    return int((free + cupy.get_default_memory_pool().free_bytes() + kept) * config.MEMORY_FRACTION)
