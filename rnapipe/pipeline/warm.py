"""What a fold needs before its first chunk, set up ahead of need on threads of their own.

A process's first call of a compiled function sets up Numba's CPU target before the function is loaded
from its cache: about a second on some hosts. :func:`start` does that, so that it overlaps the engine's
set-up instead of delaying the first chunk. :func:`start_gpu` imports CuPy and the GPU engines and starts
CUDA on the GPU a run will use (0.5-0.7 s on a GPU host), while the command's own imports go on.
"""

from __future__ import annotations

import threading


def _load() -> None:
    import numpy as np

    from ..io import render
    from .input import scan

    parsed = scan.parse_block(b">a\nACGU\n", 1)
    hashes = np.empty(1, dtype=np.uint64)
    scan.hash_lines(np.frombuffer(parsed[2], dtype=np.uint8), hashes)
    scan.table_add(np.zeros(48, dtype=np.uint8), hashes, np.empty(1, dtype=np.uint8))
    count, seqs_text, ids_text, lens, id_lens = parsed[:5]
    render.render("db", "zuker", ids_text, id_lens, seqs_text, lens, b"....\n", np.zeros(count, dtype=np.int64))


def start() -> threading.Thread:
    """Load them on a daemon thread (errors are left for the real calls to raise)."""
    def run() -> None:
        try:
            _load()
        except Exception:
            pass

    thread = threading.Thread(target=run, name="rnapipe-warm", daemon=True)
    thread.start()
    return thread


def _load_gpu(gpu: int) -> None:
    import cupy

    from ..gpu import loader, zuker, zuker_short  # noqa: F401  (their imports are the point)

    with cupy.cuda.Device(gpu):
        cupy.empty(1, dtype=cupy.uint8)      # the device's context made now, not at the first fold


def start_gpu(gpu: int = 0) -> threading.Thread:
    """Start CUDA on ``gpu`` on a daemon thread (errors, no GPU among them, are left for the real calls)."""
    def run() -> None:
        try:
            _load_gpu(gpu)
        except Exception:
            pass

    thread = threading.Thread(target=run, name="rnapipe-warm-gpu", daemon=True)
    thread.start()
    return thread
