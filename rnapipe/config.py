"""Every tunable in one place."""

from __future__ import annotations

import os

import psutil

DEFAULT_ALGORITHM = "zuker"  # what RNAfold users expect: minimum free energy

# Share of the memory available at start that one sequence's matrices may take.
MEMORY_FRACTION = 0.8

# Nussinov: a pair (i, j) needs j - i >= NUSSINOV_MIN_LOOP + 1 (the papers: C(i,i) = C(i,i+1) = 0).
NUSSINOV_MIN_LOOP = 1

# --device hybrid: how each batch is shared between the CPU and the GPUs (rnapipe.pipeline.hybrid), when
# --split is not given; the environment variable RNAPIPE_HYBRID_SPLIT overrides it.
HYBRID_SPLITS = ("static", "dynamic")
HYBRID_SPLIT = "dynamic"
# The CPU gets a share of the work (static split, --device auto, the workflow's partition) only where that is
# predicted to end it this much sooner (a fraction) than the GPUs alone: the profile's costs are throughputs of
# large batches, and a CPU share of a few records takes 3-4 times its prediction (benchmarks/RESULTS.md, hybrid
# sweep); a CPU job beside a GPU job also takes cores the GPU's host threads use.
HYBRID_MIN_GAIN = 0.05

# The workflow's prepare: a shard (one job's unit of input) closes at this many records or this much predicted
# work (Σ L³ over its records); one sequence of 10,000 nt or more is a shard alone.
SHARD_RECORDS = 1 << 16
SHARD_COST = 1e12

# Show a progress bar only for runs with at least this many sequences or nucleotides.
PROGRESS_MIN_SEQUENCES = 50
PROGRESS_MIN_NUCLEOTIDES = 200_000


def default_threads() -> int:
    """Physical cores we may use (respects CPU affinity, e.g. a SLURM allocation)."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 1
    physical = psutil.cpu_count(logical=False) or usable
    return max(1, min(usable, physical))


def cpu_threads(cores: int, gpus: int, jobs: int = 1) -> int:
    """Threads of each of ``jobs`` CPU folders beside ``gpus`` GPUs on ``cores`` cores: one core per GPU is
    left to the thread (or process) that feeds it, the rest shared out among the CPU folders; at least one."""
    return max(1, (cores - gpus) // max(1, jobs))
