"""The workflow's fold jobs as this host runs them: the GPU jobs (``auto``: one per GPU CUDA shows this
process, ``CUDA_VISIBLE_DEVICES`` respected) and each job's threads (a GPU job one, to feed its GPU, and the CPU
jobs the other cores; with the partition function every job a like share of the cores, as a GPU job computes its
records' MEA structures and derived values on the host); and, asked for, whether this host's Numba cache holds the
CPU engine compiled (a first run on a machine compiles it first). CuPy is imported only where the GPUs are counted."""

from __future__ import annotations

from ... import config
from ...engines import get_engine
from ...gpu.devices import gpu_count


def job_resources(cores: int, cpu_jobs: int, gpu_jobs: int | str = "auto", count_gpus: bool = False,
                  algorithm: str | None = None, partition: bool = False) -> dict:
    """``gpus`` (the GPUs here; None where not counted: ``gpu_jobs`` is a number and ``count_gpus`` is
    False), ``gpu_jobs`` and ``cpu_jobs`` (the numbers of jobs), ``cpu_threads`` (per CPU job) and
    ``gpu_threads`` (per GPU job; ``partition``: the fold has the partition function); with ``algorithm``, also
    ``cpu_compiled`` (:func:`cpu_compiled`)."""
    gpus = gpu_count() if gpu_jobs == "auto" or count_gpus else None
    jobs = gpus if gpu_jobs == "auto" else int(gpu_jobs)
    if partition and jobs:
        threads = gpu_threads = max(1, cores // (cpu_jobs + jobs))
    else:
        threads, gpu_threads = config.cpu_threads(cores, jobs, cpu_jobs), 1
    found = {"gpus": gpus, "gpu_jobs": jobs, "cpu_jobs": cpu_jobs, "cpu_threads": threads,
             "gpu_threads": gpu_threads}
    if algorithm is not None:
        found["cpu_compiled"] = cpu_compiled(algorithm)
    return found


def cpu_compiled(algorithm: str) -> bool | None:
    """Whether this host's Numba cache holds ``algorithm``'s CPU engine compiled (its ``compiled()``); None for
    an engine that does not tell."""
    engine, _ = get_engine(algorithm, "cpu", None)
    compiled = getattr(engine, "compiled", None)
    return None if compiled is None else bool(compiled())
