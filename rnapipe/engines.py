"""Which engine folds what: (algorithm, device) → module, and the checks made before any work starts.

Every engine module exposes the same small interface::

    VARIANTS: tuple[str, ...]          # names accepted by --variant; VARIANTS[0] is the default
    def bytes_needed(n: int, variant: str) -> int
    def fold_batch(sequences: list[str], variant: str, threads: int, options: dict,
                   progress: Callable[[int], None] | None = None) -> list[tuple[int, str]]

``fold_batch`` returns ``(score, structure)`` in input order: score is an integer (base pairs for
Nussinov, dcal/mol for Zuker). Sequences arrive validated, upper case, with U (never T).
GPU modules are imported only when asked for, so a CPU-only user never imports CuPy.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from .errors import UnavailableError, UsageError
from .gpu.devices import NoGpu, gpu_available

ALGORITHMS = ("nussinov", "zuker")
DEVICES = ("cpu", "gpu", "hybrid", "auto")

# (algorithm, device) → module; a pair missing here has no engine (hybrid and auto are the pipeline's).
_MODULES: dict[tuple[str, str], str] = {
    ("nussinov", "cpu"): "rnapipe.cpu.nussinov",
    ("nussinov", "gpu"): "rnapipe.gpu.nussinov",
    ("zuker", "cpu"): "rnapipe.cpu.zuker",
    ("zuker", "gpu"): "rnapipe.gpu.zuker",
}

# Variants served by a second module on the same device (the Four-Russians family on CPU, say).
_VARIANT_MODULES: dict[tuple[str, str, str], str] = {
    ("nussinov", "cpu", "two-vector"): "rnapipe.cpu.fourrussians",
    ("nussinov", "cpu", "fg"): "rnapipe.cpu.fourrussians",
    ("nussinov", "cpu", "memo-partial"): "rnapipe.cpu.fourrussians",
    ("nussinov", "cpu", "memo-full"): "rnapipe.cpu.fourrussians",
}


def resolve_device(algorithm: str, device: str) -> str:
    if device not in DEVICES:
        raise UsageError(f"unknown device '{device}' (choose from {', '.join(DEVICES)})")
    if device == "auto":
        if (algorithm, "gpu") in _MODULES and gpu_available():
            return "gpu"
        return "cpu"
    return device


def get_engine(algorithm: str, device: str, variant: str | None) -> tuple[ModuleType, str]:
    """Return ``(module, variant)`` for a request, or raise a one-line error saying what is missing."""
    if algorithm not in ALGORITHMS:
        raise UsageError(f"unknown algorithm '{algorithm}' (choose from {', '.join(ALGORITHMS)})")
    device = resolve_device(algorithm, device)
    name = None
    if variant is not None:
        name = _VARIANT_MODULES.get((algorithm, device, variant))
    name = name or _MODULES.get((algorithm, device))
    if name is None:
        raise UnavailableError(f"{algorithm} on device '{device}' is not available in this version of rnapipe")
    if device == "gpu" and not gpu_available():
        raise NoGpu("device 'gpu'", "device 'cpu'")
    module = importlib.import_module(name)
    if variant is None:
        variant = module.VARIANTS[0]
    if variant not in module.VARIANTS:
        known = sorted(set(module.VARIANTS) | {v for (a, d, v) in _VARIANT_MODULES if (a, d) == (algorithm, device)})
        raise UsageError(f"unknown variant '{variant}' for {algorithm} on {device} (choose from {', '.join(known)})")
    return module, variant


def variants(algorithm: str, device: str) -> list[str]:
    """All variant names for an (algorithm, device) pair, default first."""
    out = []
    name = _MODULES.get((algorithm, device))
    if name is not None:
        out.extend(importlib.import_module(name).VARIANTS)
    out.extend(v for (a, d, v) in _VARIANT_MODULES if (a, d) == (algorithm, device) and v not in out)
    return out
