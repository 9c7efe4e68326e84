"""The CPU's part of a hybrid batch: each CPU thread folds all its records in one compiled call without the GIL.

The records a thread folds are fixed before it starts (:func:`rnapipe.pipeline.balance.lpt`), and its one call
reads them straight from the batch's packed text (encoding each on the way), folds them with the Zuker CPU engine's own
compiled fill and traceback (:func:`rnapipe.cpu.zuker.fold_codes_in`, so the results are the engine's, bit
for bit) and writes each score and structure to the record's place in the batch's results. A thread takes the
GIL when it starts and when it ends, never between records, so that the GPUs' feeding threads, which need the
GIL to drive their engines, are not slowed by the CPU threads, nor these by them.
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit

from ..alphabet import _CODE
from .zuker import fold_codes_in, workspace_bytes, workspace_sizes


@njit(nogil=True, cache=True)
def fold_positions(T, code, src, starts, lens, positions, work32, work8, scores, out):
    """Fold records ``positions`` of a packed text ``src`` (record k at ``starts[k]``, ``lens[k]`` nt, then a
    newline): its MFE to ``scores[k]``, its dot-bracket and a newline to ``out[starts[k]:]``. ``code`` maps
    each byte to its nucleotide code; the workspaces hold ``workspace_sizes`` of the longest record."""
    longest = 0
    for k in positions:
        longest = max(longest, lens[k])
    S = np.zeros(longest + 2, dtype=np.int8)
    for k in positions:
        n = lens[k]
        a = starts[k]
        if n == 0:
            scores[k] = 0
            out[a] = 10
            continue
        codes = S[:n + 2]
        codes[0] = 0
        codes[n + 1] = 0
        for i in range(n):
            codes[i + 1] = code[src[a + i]]
        mfe, db = fold_codes_in(T, codes, work32, work8)
        scores[k] = mfe
        out[a:a + n] = db
        out[a + n] = 10


def bytes_needed(lens: np.ndarray, positions: np.ndarray) -> int:
    """The workspace bytes of one thread's call over ``positions``."""
    return workspace_bytes(int(lens[positions].max())) if len(positions) else 0


def fold_share(tables, src: np.ndarray, starts: np.ndarray, lens: np.ndarray, positions: np.ndarray,
               scores: np.ndarray, out: np.ndarray) -> float:
    """One thread's records in one call (see :func:`fold_positions`); the seconds it took."""
    start = time.perf_counter()
    if len(positions):
        a, b = workspace_sizes(int(lens[positions].max()))
        fold_positions(tables, _CODE, src, starts, lens, np.ascontiguousarray(positions, dtype=np.int64),
                       np.empty(a, dtype=np.int32), np.empty(b, dtype=np.int8), scores, out)
    return time.perf_counter() - start


def warm(tables) -> None:
    """Load (or compile) the compiled call once, on a record of 8 nt."""
    text = np.frombuffer(b"GGGAAACC\n", dtype=np.uint8)
    fold_share(tables, text, np.zeros(2, dtype=np.int64), np.array([8], dtype=np.int64), np.zeros(1, dtype=np.int64),
               np.zeros(1, dtype=np.int64), np.empty(9, dtype=np.uint8))
