"""Nussinov maximum base pairing on the CPU (Numba): the three variants of Li, Ranka & Sahni.

The score C(i, j) is the largest number of non-crossing canonical pairs (AU, GC, GU) in ``seq[i..j]``,
a pair (i, j) needing ``j - i > min_loop`` (``min_loop = 1`` is the papers' C(i, i) = C(i, i+1) = 0).
Every variant computes Chang et al.'s simplified recurrence, equation (3)::

    C(i, j) = max( C(i+1, j),  C(i, j-1),  C(i+1, j-1) + pair(i, j),  max_{i<k<j} C(i, k) + C(k+1, j) )

with C(i, j) = 0 for ``j - i <= min_loop``. It is exact for any ``min_loop >= 0``: an optimal structure of
``[i, j]`` leaves i unpaired (first term), leaves j unpaired (second), pairs i with j (third, allowed only
for ``j - i > min_loop``), or pairs both ends elsewhere, so that it splits at the partner k of i (fourth).

Variants (``VARIANTS[0]`` is the default, the fastest single-threaded one):

``transposed``
    CPU2. Each finished C(i, j) is mirrored into the lower triangle, M[j, i], so that both operands of the
    max-plus loop are row reads: ``max_k M[i, k] + M[j, k+1]``, contiguous and vectorised by LLVM. Cells
    are filled in square tiles (a row of tiles at a time, bottom up) so the rows a tile reads stay in cache,
    four rows of a tile at a time so that one load of row j serves four cells.
``naive``
    CPU1. Textbook diagonal order on the upper triangle only; ``C(k+1, j)`` is a column read.
``parallel``
    OMP2. The CPU2 storage, with one anti-diagonal at a time spread over threads. Cells are grouped into
    tiles and the tiles of one anti-diagonal of tiles run on the threads (a tile of side 1 is the paper's
    cell-per-thread OMP2); one barrier per tile diagonal instead of one per cell diagonal.

Many sequences: ``naive`` and ``transposed`` fold whole sequences on ``threads`` threads at once (nogil
kernels, longest first); ``parallel`` folds one sequence at a time with all threads on its diagonals.
"""

from __future__ import annotations

import threading
from typing import Callable

import numpy as np
from numba import njit, types
from numba.extending import overload

from .. import config
from ..alphabet import CAN_PAIR, encode
from ..errors import UsageError
from .batch import host_budget, map_longest_first

VARIANTS = ("transposed", "naive", "parallel")

# Tile side for ``transposed`` and ``parallel``: a tile reads B rows of each triangle (about 2 * B * n
# cells), which should stay in L2 while it reads them B times. On a 2-core Zen 5 at n = 2,000 .. 4,000,
# 64, 128 and 256 are within 10% of each other and 32 is slower; the smaller of the good ones leaves
# the most tiles per diagonal to the threads of ``parallel``.
DEFAULT_TILE = 64

# int16 cells hold any score of a sequence up to this length (score <= n / 2); longer ones use int32.
_INT16_MAX_LENGTH = 65_535

_PAIR = CAN_PAIR.astype(np.int16)
_OPTIONS = ("min_loop", "tile")


def _cell_dtype(n: int) -> type:
    return np.int16 if n <= _INT16_MAX_LENGTH else np.int32


def bytes_needed(n: int, variant: str) -> int:
    """Bytes one sequence of length n takes: the n x n score matrix (every variant allocates it
    whole; CPU2 uses both triangles) and the codes, structure and traceback stack."""
    return n * n * np.dtype(_cell_dtype(n)).itemsize + 24 * (n + 2)


def _narrow(value, like):
    """``value`` cast to the cell type of ``like`` (the sum of two cells always fits)."""
    raise NotImplementedError  # only called from jitted code


@overload(_narrow, inline="always")
def _narrow_impl(value, like):
    # Numba widens int16 + int16 to int64; casting back lets LLVM keep 32 lanes per AVX-512 register.
    cell = like.dtype if isinstance(like, types.Array) else like

    def impl(value, like):
        return cell(value)

    return impl


# ---------------------------------------------------------------------------------------------- kernels

@njit(nogil=True, cache=True)
def _fill_cpu1(s, pair, min_loop, C):
    """CPU1: equation (3) by diagonals d = j - i on the upper triangle; C(k+1, j) is read down a column."""
    n = s.shape[0]
    for d in range(min_loop + 1, n):
        for i in range(n - d):
            j = i + d
            best = max(C[i + 1, j], C[i, j - 1])
            inner = pair[s[i], s[j]]
            if j - 1 > i + 1:
                inner += C[i + 1, j - 1]
            best = max(best, inner)
            for k in range(i + 1, j):
                best = max(best, C[i, k] + C[k + 1, j])
            C[i, j] = best


@njit(nogil=True, cache=True, inline="always")
def _cpu2_finish(s, pair, M, r, j, k0, split):
    """Complete C(r, j) from ``split``, the max-plus term over k >= k0, and mirror it into M[j, r]."""
    for k in range(r + 1, k0):
        split = max(split, M[r, k] + M[j, k + 1])
    best = max(split, M[r + 1, j], M[r, j - 1])
    inner = pair[s[r], s[j]]
    if j - 1 > r + 1:  # M[r+1, r] would be a mirrored cell, not the empty interval
        inner += M[r + 1, j - 1]
    best = max(best, inner)
    M[r, j] = best
    M[j, r] = best


@njit(nogil=True, cache=True)
def _cpu2_cell(s, pair, M, r, j):
    """C(r, j) by equation (3), the split term as one row-by-row max-plus product."""
    # Slices indexed from 0: a loop counter LLVM can prove non-negative is what lets it vectorise.
    a = M[r, r + 1:j]
    b = M[j, r + 2:j + 1]
    split = _narrow(0, M)
    for k in range(j - r - 1):
        v = _narrow(a[k] + b[k], M)
        if v > split:
            split = v
    _cpu2_finish(s, pair, M, r, j, j, split)


@njit(nogil=True, cache=True)
def _cpu2_four_rows(s, pair, min_loop, M, ib, j0, j1):
    """Rows ib, ib-1, ib-2, ib-3 of columns [j0, j1), a column at a time, bottom row first.

    The four split terms share the k >= ib + 1 part of row j, so each load of M[j, k+1] feeds four
    max-plus updates; the few k <= ib left over read cells this column has just finished.
    """
    for j in range(j0, j1):
        if j - ib <= min_loop:  # near the diagonal: only some of the four cells exist
            for r in range(ib, ib - 4, -1):
                if j - r > min_loop:
                    _cpu2_cell(s, pair, M, r, j)
            continue
        b = M[j, ib + 2:j + 1]
        a0 = M[ib, ib + 1:j]
        a1 = M[ib - 1, ib + 1:j]
        a2 = M[ib - 2, ib + 1:j]
        a3 = M[ib - 3, ib + 1:j]
        m0 = _narrow(0, M)
        m1 = m0
        m2 = m0
        m3 = m0
        for k in range(j - ib - 1):
            x = b[k]
            m0 = max(m0, _narrow(a0[k] + x, M))
            m1 = max(m1, _narrow(a1[k] + x, M))
            m2 = max(m2, _narrow(a2[k] + x, M))
            m3 = max(m3, _narrow(a3[k] + x, M))
        _cpu2_finish(s, pair, M, ib, j, ib + 1, m0)
        _cpu2_finish(s, pair, M, ib - 1, j, ib + 1, m1)
        _cpu2_finish(s, pair, M, ib - 2, j, ib + 1, m2)
        _cpu2_finish(s, pair, M, ib - 3, j, ib + 1, m3)


@njit(nogil=True, cache=True)
def _cpu2_tile(s, pair, min_loop, M, i0, i1, j0, j1):
    """CPU2 cells (i, j) of the tile rows [i0, i1) x columns [j0, j1), rows bottom up.

    Needs every cell below the tile in its columns and left of it in its rows; writes C(i, j) to
    M[i, j] and its mirror M[j, i].
    """
    i = i1 - 1
    while i - 3 >= i0:
        _cpu2_four_rows(s, pair, min_loop, M, i, j0, j1)
        i -= 4
    while i >= i0:
        for j in range(max(j0, i + min_loop + 1), j1):
            _cpu2_cell(s, pair, M, i, j)
        i -= 1


@njit(nogil=True, cache=True)
def _fill_cpu2(s, pair, min_loop, M, tile):
    """CPU2 on one thread: rows of tiles from the bottom, each row of tiles left to right."""
    n = s.shape[0]
    if n == 0:
        return
    for i0 in range(((n - 1) // tile) * tile, -1, -tile):
        i1 = min(i0 + tile, n)
        for j0 in range(i0, n, tile):
            _cpu2_tile(s, pair, min_loop, M, i0, i1, j0, min(j0 + tile, n))


@njit(nogil=True, cache=True)
def _omp2_tile_diagonal(s, pair, min_loop, M, tile, t, first, step):
    """OMP2 share of one thread: tiles (I, I + t) of tile diagonal t for I = first, first + step, ...

    Tiles of one diagonal read only tiles of earlier diagonals and write disjoint cells, so they run
    concurrently without locks.
    """
    n = s.shape[0]
    count = (n + tile - 1) // tile
    for bi in range(first, count - t, step):
        bj = bi + t
        _cpu2_tile(s, pair, min_loop, M, bi * tile, min(bi * tile + tile, n), bj * tile, min(bj * tile + tile, n))


@njit(nogil=True, cache=True)
def _traceback(s, pair, min_loop, M, out):
    """Write one optimal structure of the filled upper triangle of M into ``out`` (ASCII codes).

    Follows equation (3) back from C(0, n-1) with an explicit stack (no recursion: n may be 10^5).
    Returns the number of pairs written, or -1 if the matrix is inconsistent.
    """
    n = s.shape[0]
    for p in range(n):
        out[p] = 46  # '.'
    if n < 2 or M[0, n - 1] == 0:
        return 0
    # Intervals on the stack are disjoint and hold at least one pair each: at most n // 2 of them.
    stack = np.empty((n // 2 + 1, 2), dtype=np.int64)
    top = 0
    stack[0, 0] = 0
    stack[0, 1] = n - 1
    top = 1
    pairs = 0
    while top > 0:
        top -= 1
        i = stack[top, 0]
        j = stack[top, 1]
        value = M[i, j]
        if i + 1 < j and M[i + 1, j] == value:
            stack[top, 0] = i + 1
            top += 1
            continue
        if i < j - 1 and M[i, j - 1] == value:
            stack[top, 1] = j - 1
            top += 1
            continue
        inner = M[i + 1, j - 1] if i + 1 < j - 1 else 0
        if j - i > min_loop and pair[s[i], s[j]] == 1 and inner + 1 == value:
            out[i] = 40  # '('
            out[j] = 41  # ')'
            pairs += 1
            if inner > 0:
                stack[top, 0] = i + 1
                stack[top, 1] = j - 1
                top += 1
            continue
        found = False
        for k in range(i + 1, j - 1):
            left = M[i, k]
            right = M[k + 1, j]
            if left + right == value:
                if left > 0:
                    stack[top, 0] = i
                    stack[top, 1] = k
                    top += 1
                if right > 0:
                    stack[top, 0] = k + 1
                    stack[top, 1] = j
                    top += 1
                found = True
                break
        if not found:
            return -1
    return pairs


# --------------------------------------------------------------------------------------------- drivers

def _parse_options(options: dict | None) -> tuple[int, int]:
    options = options or {}
    unknown = [k for k, v in options.items() if k not in _OPTIONS and v is not None]
    if unknown:
        raise UsageError(f"option '{unknown[0]}' does not apply to nussinov (options: {', '.join(_OPTIONS)})")
    min_loop = options.get("min_loop")
    min_loop = config.NUSSINOV_MIN_LOOP if min_loop is None else min_loop
    if isinstance(min_loop, bool) or not isinstance(min_loop, (int, np.integer)) or min_loop < 0:
        raise UsageError(f"min_loop must be a whole number >= 0, not {min_loop!r}")
    tile = options.get("tile")
    tile = DEFAULT_TILE if tile is None else tile
    if isinstance(tile, bool) or not isinstance(tile, (int, np.integer)) or tile < 1:
        raise UsageError(f"tile must be a whole number >= 1, not {tile!r}")
    return int(min_loop), int(tile)


def _fill(codes: np.ndarray, variant: str, min_loop: int, tile: int, threads: int) -> np.ndarray:
    n = codes.shape[0]
    M = np.zeros((n, n), dtype=_cell_dtype(n))
    if variant == "naive":
        _fill_cpu1(codes, _PAIR, min_loop, M)
    elif variant == "transposed":
        _fill_cpu2(codes, _PAIR, min_loop, M, tile)
    elif variant == "parallel":
        _fill_omp2(codes, min_loop, M, tile, threads)
    else:
        raise UsageError(f"unknown variant '{variant}' for nussinov on cpu (choose from {', '.join(VARIANTS)})")
    return M


def _fill_omp2(codes: np.ndarray, min_loop: int, M: np.ndarray, tile: int, threads: int) -> None:
    count = (codes.shape[0] + tile - 1) // tile
    # Fewer than about four tiles per thread on the longest diagonal and starting threads costs more than
    # it saves (16 cores, n = 1,000, tile 64).
    threads = max(1, min(threads, count // 4))
    if threads == 1:
        for t in range(count):
            _omp2_tile_diagonal(codes, _PAIR, min_loop, M, tile, t, 0, 1)
        return
    barrier = threading.Barrier(threads)
    errors: list[BaseException] = []

    def work(first: int) -> None:
        try:
            for t in range(count):
                _omp2_tile_diagonal(codes, _PAIR, min_loop, M, tile, t, first, threads)
                barrier.wait()
        except threading.BrokenBarrierError:
            pass
        except BaseException as err:  # re-raised below; the barrier must not leave the others waiting
            errors.append(err)
            barrier.abort()

    workers = [threading.Thread(target=work, args=(k,), daemon=True) for k in range(1, threads)]
    for w in workers:
        w.start()
    work(0)
    for w in workers:
        w.join()
    if errors:
        raise errors[0]


def _fold_one(sequence: str, variant: str, min_loop: int, tile: int, threads: int) -> tuple[int, str]:
    codes = encode(sequence)
    n = codes.shape[0]
    M = _fill(codes, variant, min_loop, tile, threads)
    out = np.empty(n, dtype=np.uint8)
    pairs = _traceback(codes, _PAIR, min_loop, M, out)
    score = int(M[0, n - 1]) if n else 0
    if pairs != score:
        raise RuntimeError(f"nussinov traceback found {pairs} pairs for a score of {score} (n = {n})")
    return score, out.tobytes().decode("ascii")


@njit(nogil=True, cache=True)
def _fold_range(codes, starts, lens, order, lo, hi, naive, min_loop, tile, work, scores, out):
    """Fold sequences ``order[lo:hi]`` of an encoded batch (sequence k is ``codes[starts[k]:starts[k] +
    lens[k]]``) one after another in ``work`` (int16, at least n² cells of the longest); pairs go to
    ``scores[k]`` and the dot-bracket to the same positions of ``out``. Returns -1, or the first k whose
    traceback does not re-derive its score."""
    for q in range(lo, hi):
        k = order[q]
        s = codes[starts[k]:starts[k] + lens[k]]
        n = s.shape[0]
        M = work[:n * n].reshape((n, n))
        M[:, :] = 0
        if naive:
            _fill_cpu1(s, _PAIR, min_loop, M)
        else:
            _fill_cpu2(s, _PAIR, min_loop, M, tile)
        score = M[0, n - 1] if n else 0
        if _traceback(s, _PAIR, min_loop, M, out[starts[k]:starts[k] + n]) != score:
            return k
        scores[k] = score
    return -1


# Sequences up to this length are folded many to a task (one compiled call per group, a workspace per
# thread); longer ones one to a task through map_longest_first and its memory gate.
GROUP_MAX_N = 2048
GROUP_CELLS = 1 << 21


def _fold_short(text: bytes, lens: np.ndarray, variant: str, min_loop: int, tile: int, threads: int,
                progress: Callable[[int], None] | None) -> tuple[np.ndarray, bytes]:
    """Sequences packed in ``text`` (a newline after each; ``lens`` their lengths): pairs (int64) and the
    structures in the same layout."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    count = len(lens)
    starts = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(lens + 1, out=starts[1:])
    codes = encode(text.decode("ascii"))
    order = np.argsort(-lens, kind="stable")
    scores = np.zeros(count, dtype=np.int64)
    out = np.frombuffer(text, dtype=np.uint8).copy()   # newlines where they are; each fold writes its own
    most = max(1, -(-count // (4 * threads)))
    bounds, lo, cells = [], 0, 0
    for q, k in enumerate(order.tolist()):
        cells += int(lens[k]) ** 2
        if cells >= GROUP_CELLS or q + 1 - lo >= most:
            bounds.append((lo, q + 1))
            lo, cells = q + 1, 0
    if lo < count:
        bounds.append((lo, count))
    local = threading.local()
    naive = variant == "naive"

    def run(lo: int, hi: int) -> int:
        need = int(lens[order[lo]]) ** 2
        work = getattr(local, "work", None)
        if work is None or work.size < need:
            work = local.work = np.empty(max(need, 1), dtype=np.int16)
        bad = _fold_range(codes, starts, lens, order, lo, hi, naive, min_loop, tile, work, scores, out)
        if bad >= 0:
            raise RuntimeError(f"nussinov traceback does not re-derive the score of sequence {bad}")
        return hi - lo

    if threads <= 1:
        for lo, hi in bounds:
            done = run(lo, hi)
            if progress is not None:
                progress(done)
    else:
        with ThreadPoolExecutor(max_workers=threads) as pool:
            futures = [pool.submit(run, lo, hi) for lo, hi in bounds]
            try:
                for future in as_completed(futures):
                    done = future.result()
                    if progress is not None:
                        progress(done)
            except BaseException:
                pool.shutdown(wait=False, cancel_futures=True)
                raise
    return scores, out.tobytes()


def fold_packed(text: bytes, lens, variant: str, threads: int, options: dict | None = None,
                progress: Callable[[int], None] | None = None) -> tuple[np.ndarray, bytes]:
    """:func:`fold_batch` for packed input (``text``: the sequences, a newline after each; ``lens``: their
    lengths): pairs (int64) and the structures in the same layout."""
    lens = np.asarray(lens, dtype=np.int64)
    if variant in ("naive", "transposed") and (len(lens) == 0 or int(lens.max()) <= GROUP_MAX_N):
        min_loop, tile = _parse_options(options)
        return _fold_short(text, lens, variant, min_loop, tile, max(1, int(threads or 1)), progress)
    results = fold_batch(text[:-1].decode("ascii").split("\n") if len(lens) else [], variant, threads, options,
                         progress)
    return (np.array([r[0] for r in results], dtype=np.int64),
            "".join(r[1] + "\n" for r in results).encode("ascii"))


def fold_batch(sequences: list[str], variant: str, threads: int, options: dict | None = None,
               progress: Callable[[int], None] | None = None) -> list[tuple[int, str]]:
    """Fold every sequence; ``(pairs, dot-bracket)`` in input order.

    ``options``: ``min_loop`` (a pair (i, j) needs ``j - i > min_loop``; default
    ``config.NUSSINOV_MIN_LOOP``), ``tile`` (tile side of ``transposed`` and ``parallel``).
    """
    if variant not in VARIANTS:
        raise UsageError(f"unknown variant '{variant}' for nussinov on cpu (choose from {', '.join(VARIANTS)})")
    min_loop, tile = _parse_options(options)
    threads = max(1, int(threads or 1))
    if variant == "parallel":
        results = []
        for sequence in sequences:
            results.append(_fold_one(sequence, variant, min_loop, tile, threads))
            if progress is not None:
                progress(1)
        return results
    short = [k for k, seq in enumerate(sequences) if len(seq) <= GROUP_MAX_N]
    results: list = [None] * len(sequences)
    if short:
        seqs = sequences if len(short) == len(sequences) else [sequences[k] for k in short]
        lens = np.fromiter(map(len, seqs), dtype=np.int64, count=len(seqs))
        scores, text = _fold_short(("\n".join(seqs) + "\n").encode("ascii"), lens, variant, min_loop, tile,
                                   threads, progress)
        for k, score, structure in zip(short, scores.tolist(), text.decode("ascii").split("\n")):
            results[k] = (score, structure)
        if len(short) == len(sequences):
            return results
    rest = [k for k, seq in enumerate(sequences) if len(seq) > GROUP_MAX_N]
    for k, r in zip(rest, map_longest_first(lambda seq: _fold_one(seq, variant, min_loop, tile, 1),
                                            [sequences[k] for k in rest], threads, progress,
                                            bytes_of=lambda n: bytes_needed(n, variant),
                                            budget=host_budget(options))):
        results[k] = r
    return results
