"""ViennaRNA's MFE folds for the exactness tests, over two processes: RNA.fold_compound(...).mfe() runs on one core
(about 12 ms a 150-nt sequence), and the tests compare thousands of sequences with it. Each worker imports ViennaRNA
only (spawned, not forked from a process with Numba's threads)."""

from __future__ import annotations

import atexit
import multiprocessing
from concurrent.futures import ProcessPoolExecutor

WORKERS = 2
_pool: ProcessPoolExecutor | None = None


def _one(item):
    seq, temperature, dangles, ours = item
    import RNA

    md = RNA.md()
    md.temperature = temperature
    md.dangles = dangles
    fc = RNA.fold_compound(seq, md)
    structure, mfe = fc.mfe()
    return round(mfe * 100), structure, round(fc.eval_structure(ours) * 100)


def fold_and_eval(seqs: list[str], ours: list[str], temperature: float = 37.0, dangles: int = 2) -> list:
    """(RNAfold's MFE in dcal/mol, its structure, its energy of our structure ``ours[k]`` in dcal/mol) of each
    sequence, in order."""
    global _pool
    if _pool is None:
        _pool = ProcessPoolExecutor(WORKERS, mp_context=multiprocessing.get_context("spawn"))
        atexit.register(_pool.shutdown)
    items = [(s, float(temperature), int(dangles), o) for s, o in zip(seqs, ours)]
    return list(_pool.map(_one, items, chunksize=max(1, min(64, len(items) // (4 * WORKERS)))))
