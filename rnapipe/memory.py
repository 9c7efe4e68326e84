"""Memory budgets: how many bytes one sequence's matrices may take on the host, and the longest sequence that fits
a budget. Engines and the pipeline both read these; the GPU engines have their own budget (device memory)."""

from __future__ import annotations

from typing import Callable

import psutil

from . import config


def memory_budget() -> int:
    """Bytes one sequence's matrices may take: a fraction of the host memory available now.

    An engine that keeps its matrices elsewhere (a GPU) defines its own ``memory_budget()``."""
    return int(psutil.virtual_memory().available * config.MEMORY_FRACTION)


def longest_fitting(bytes_needed: Callable[[int], int], budget_bytes: int) -> int:
    """Longest n with ``bytes_needed(n) <= budget_bytes`` (``bytes_needed`` grows with n)."""
    lo, hi = 0, 1
    while bytes_needed(hi) <= budget_bytes:
        hi *= 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if bytes_needed(mid) <= budget_bytes else (lo, mid)
    return lo
