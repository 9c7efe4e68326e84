"""CPU ∥ GPU (Lei et al.'s hybrid Zuker): :mod:`.costmodel` (seconds per record on each device),
:mod:`.profile` (the host's profile, measured or cached), :mod:`.static` (a batch split once on the profile,
B = N / (K + 1) generalised), :mod:`.dynamic` (each batch planned on the costs measured so far),
:mod:`.folder` (the hybrid folder that runs a split batch) and :mod:`.auto` (``--device auto``). The errors
that say the hybrid device cannot fold here are defined in this light module, so that a front door can name
them without loading the engines."""

from __future__ import annotations

from ...errors import UnavailableError
from ...gpu.devices import NoGpu


class NoHybridMode(UnavailableError):
    """``algorithm`` has no hybrid mode: only ``hybrid_algorithms`` have one (the others' CPU and GPU engines
    may pick different structures of the same score)."""

    def __init__(self, algorithm: str, hybrid_algorithms: tuple[str, ...]):
        self.algorithm = algorithm
        self.hybrid_algorithms = hybrid_algorithms
        super().__init__(f"{algorithm} on device 'hybrid' is not available: the hybrid device folds "
                         f"{', '.join(hybrid_algorithms)} only (the {algorithm} engines of the CPU and the GPU "
                         "may pick different structures of the same score)")


class NoGpuForHybrid(NoGpu):
    """The hybrid device needs an NVIDIA GPU and CuPy, and there is none here."""

    def __init__(self):
        super().__init__("device 'hybrid'", "device 'cpu'")
