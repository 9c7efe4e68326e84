"""GPU engines (CUDA C through CuPy). Nothing here imports CuPy until a kernel is asked for."""

from __future__ import annotations

from .. import config


def memory_budget() -> int:
    """Bytes one sequence (or batch) may take on the current GPU: a fraction of its free memory now,
    counting what CuPy's pool holds but does not use and the short-sequence pools kept for reuse."""
    import cupy

    from .zuker_short import cached_bytes

    free, _total = cupy.cuda.runtime.memGetInfo()
    return int((free + cupy.get_default_memory_pool().free_bytes() + cached_bytes()) * config.MEMORY_FRACTION)
