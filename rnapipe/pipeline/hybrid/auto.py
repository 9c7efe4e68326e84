"""``--device auto``: hybrid, the GPU or the CPU, from whether a GPU is here and what this host's profile
predicts the CPU can save beside it."""

from __future__ import annotations

import numpy as np

from ... import config
from ...engines import _MODULES
from ...gpu.devices import gpu_available
from ..folding.folder import Folder
from . import costmodel
from ..balance import MIN_GAIN
from .folder import ALGORITHMS
from .profile import load_or_measure, profile_key


def best_gain(profile: costmodel.Profile, gpus: int = 1) -> tuple[float, int, float]:
    """The largest share of the GPUs' time the CPU could save at one of the GPU's timed lengths, by Lei et al.'s
    rule (1 / (K + 1), K = t_CPU / t_GPU of the GPUs together): (gain, length, K). t_CPU is the CPU's timed
    seconds where it was timed at that length, else its fitted cost there (the CPU is timed at fewer lengths)."""
    best = (0.0, 0, np.inf)
    cpu, gpu = profile.samples.get("cpu", {}), profile.samples.get("gpu", {})
    fit = profile.costs.get("cpu")
    for length in sorted(gpu if fit is not None else set(cpu) & set(gpu)):
        t_cpu = cpu[length] if length in cpu else float(fit.seconds(np.array([length]))[0])
        k = t_cpu / (gpu[length] / max(1, gpus))
        if 1.0 / (k + 1.0) > best[0]:
            best = (1.0 / (k + 1.0), length, k)
    return best


def auto_device(algorithm: str, variant: str | None = None, threads: int | None = None, gpus=None,
                options: dict | None = None, reprofile: bool = False, profile: costmodel.Profile | None = None,
                gpu_present: bool | None = None) -> tuple[str, str, costmodel.Profile | None]:
    """``--device auto``: (device, why, the profile it read). Hybrid where a GPU is here, the algorithm has a
    hybrid mode and this host's saved profile (or a new one with ``reprofile``) predicts that the CPU saves at
    least :data:`..balance.MIN_GAIN` of the GPUs' time at one of its lengths (batches that gain nothing still
    go to the GPUs alone); else the GPU; else the CPU."""
    present = gpu_available() if gpu_present is None else gpu_present
    if not present or (algorithm, "gpu") not in _MODULES:
        return "cpu", "no usable GPU: no CuPy or no CUDA device" if (algorithm, "gpu") in _MODULES else \
            f"{algorithm} has no GPU engine", None
    if algorithm not in ALGORITHMS:
        return "gpu", f"{algorithm} has no hybrid mode", None
    n = len(gpus or [0])
    if profile is None:
        cores = threads or config.default_threads()
        cpu = Folder(algorithm, variant, "cpu", config.cpu_threads(cores, n), None, options)
        gpu = Folder(algorithm, variant, "gpu", 1, [(gpus or [0])[0]], options)
        if reprofile:
            profile = load_or_measure(cpu, gpu, reprofile=True)
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
