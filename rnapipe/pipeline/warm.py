"""The compiled passes of reading and writing, loaded ahead of need.

A process's first call of a compiled function sets up Numba's CPU target before the function is loaded
from its cache: about a second on some hosts. :func:`start` does that on a thread of its own, so that it
overlaps the engine's set-up (importing CuPy, starting CUDA) instead of delaying the first chunk.
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
