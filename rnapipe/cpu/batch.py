"""Run a nogil per-sequence fold over many sequences on a pool of threads, longest first."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Callable, Sequence, TypeVar

T = TypeVar("T")


def map_longest_first(fold_one: Callable[[str], T], sequences: Sequence[str], threads: int,
                      progress: Callable[[int], None] | None = None) -> list[T]:
    """Apply ``fold_one`` to every sequence and return the results in input order.

    ``fold_one`` should spend its time in ``njit(nogil=True)`` code so that threads run in parallel.
    Longest sequences start first so that the pool does not end waiting on one long straggler.
    ``progress(k)`` is called with the number of sequences finished since the last call.
    """
    order = sorted(range(len(sequences)), key=lambda k: -len(sequences[k]))
    results: list = [None] * len(sequences)
    if threads <= 1 or len(sequences) <= 1:
        for k in order:
            results[k] = fold_one(sequences[k])
            if progress is not None:
                progress(1)
        return results
    pool = ThreadPoolExecutor(max_workers=threads)
    try:
        futures = {pool.submit(fold_one, sequences[k]): k for k in order}
        for future in as_completed(futures):
            results[futures[future]] = future.result()
            if progress is not None:
                progress(1)
    except BaseException:
        # Ctrl-C or a failed fold: drop the queued sequences rather than fold them all before stopping.
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    return results
