"""Four-Russians Nussinov on the CPU (Numba): the two-vector method and its relatives.

Along a row and down a column of the Nussinov table adjacent cells differ by 0 or 1::

    C(i, j) - C(i, j-1) in {0, 1}        C(i, j) - C(i+1, j) in {0, 1}

(one more base can add at most one pair, and never removes one; this holds for every ``min_loop``
because C is 0 on all spans <= min_loop and the argument does not look at the span). Cut the split
points k of ``max_k C(i, k) + C(k+1, j)`` into groups [gq, gq+q). Inside a group::

    C(i, gq+p) + C(gq+p+1, j) = C(i, gq) + C(gq+1, j) + sum_{t=1..p} (h_i(gq+t) - v_j(gq+t))

with the row differences ``h_i(t) = C(i,t) - C(i,t-1)`` and the column differences
``v_j(t) = C(t,j) - C(t+1,j)``, so the best p is a function of the two (q-1)-bit vectors alone:
``R[x][y] = max_{p<q} sum_{t<=p} (x_t - y_t)`` (Frid & Gusfield 2010; Venkatachalam et al. 2014). A
cell costs (j - i)/q lookups plus at most 2q plain split points at the ends (the residual cells).

A cell needs every cell left of it in its row and below it in its column. The row vector of (i, g) is
complete once C(i, gq+q-1) is, the column vector of (j, g) once C(gq+1, j) is; each is stored as soon
as it is complete, with the group's base value beside it. ``fg`` fills column by column, each bottom up
(Frid & Gusfield's order); the others fill square tiles so that the vectors they read stay in cache.

Variants (``--variant``), all exact, all with traceback:

``two-vector``
    Venkatachalam et al.: R over all 2^(q-1) x 2^(q-1) vector pairs built once, before the fill.
``fg``
    Frid & Gusfield: no table up front; when the column vector y of a q-row group of column j is
    complete, the table column R[., y] is computed right then and every row above uses it.
``memo-partial``
    R filled lazily, one entry at a time: an entry is computed at its first lookup and remembered.
``memo-full``
    R filled lazily a whole column R[., y] at a time, the first time vector y appears.

``q`` is ``options['q']`` (2 .. 12) or automatic: about log2(n) - 2, at most 8, where the gains of the
paper saturate.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
from numba import njit

from .. import config
from ..alphabet import CAN_PAIR, encode
from ..errors import UsageError
from .batch import host_budget, map_longest_first

VARIANTS = ("two-vector", "fg", "memo-partial", "memo-full")
_OPTIONS = ("min_loop", "q")
Q_MAX = 12
TILE = 64          # cells per tile side in the tiled fill order (two-vector, memo-*)
_PAIR = CAN_PAIR.astype(np.int8)

_TWO_VECTOR, _FG, _MEMO_PARTIAL, _MEMO_FULL = 0, 1, 2, 3
_MODE = {"two-vector": _TWO_VECTOR, "fg": _FG, "memo-partial": _MEMO_PARTIAL, "memo-full": _MEMO_FULL}


def auto_q(n: int) -> int:
    return max(2, min(8, int(math.log2(max(n, 4))) - 2))


def bytes_needed(n: int, variant: str) -> int:
    """The n x n int32 table (with its mirror), the vectors and their bases, and R."""
    q = auto_q(n)
    groups = n // 2 + 1
    return 4 * n * n + 2 * n * groups * (2 + 4) + (1 << (2 * (q - 1))) + (1 << 20)


@njit(nogil=True, cache=True)
def _r_entry(x, y, bits):
    """R[x][y] = max over p of the prefix sums of x_t - y_t (p = 0 gives 0)."""
    best = 0
    run = 0
    for t in range(bits):
        run += ((x >> t) & 1) - ((y >> t) & 1)
        if run > best:
            best = run
    return best


@njit(nogil=True, cache=True)
def _r_column(R, y, bits):
    for x in range(1 << bits):
        R[(x << bits) | y] = _r_entry(x, y, bits)


@njit(nogil=True, cache=True, inline="always")
def _cell(s, pair, min_loop, q, mode, M, H, HB, V, VB, R, col_done, col_R, i, j):
    """C(i, j) into M[i, j] and its mirror M[j, i], then any difference vector this cell completes.

    H[i,g], HB[i,g] = C(i,gq): row vector and base; V[j,g], VB[j,g] = C(gq+1,j): column vector and base.
    Needs C(i, k) for k < j and C(k, j) for k > i.
    """
    bits = q - 1
    width = 1 << bits
    best = 0
    if j - i > min_loop:
        glo = (i + q - 1) // q
        ghi = (j - q) // q if j >= q else -1
        if glo <= ghi:
            for k in range(i, glo * q):
                best = max(best, M[i, k] + M[j, k + 1])
            hi_ = H[i]
            hb = HB[i]
            vj = V[j]
            vb = VB[j]
            # one loop per mode, so that the hot loop carries no mode test
            if mode == _FG:
                for g in range(glo, ghi + 1):
                    best = max(best, hb[g] + vb[g] + col_R[g * width + hi_[g]])
            elif mode == _MEMO_PARTIAL:
                for g in range(glo, ghi + 1):
                    idx = (hi_[g] << bits) | vj[g]
                    r = R[idx]
                    if r < 0:
                        r = _r_entry(hi_[g], vj[g], bits)
                        R[idx] = r
                    best = max(best, hb[g] + vb[g] + r)
            else:
                for g in range(glo, ghi + 1):
                    best = max(best, hb[g] + vb[g] + R[(hi_[g] << bits) | vj[g]])
            for k in range((ghi + 1) * q, j):
                best = max(best, M[i, k] + M[j, k + 1])
        else:
            for k in range(i, j):
                best = max(best, M[i, k] + M[j, k + 1])
        if pair[s[i], s[j]] == 1:
            inner = M[i + 1, j - 1] if i + 1 <= j - 1 else 0
            best = max(best, inner + 1)
        M[i, j] = best
        M[j, i] = best
    # row vector of (i, g): C(i, gq .. gq+q-1) complete once column gq+q-1 = j is done
    if (j + 1) % q == 0:
        g = j // q
        k0 = g * q
        if k0 >= i:
            x = 0
            for t in range(1, q):
                x |= (M[i, k0 + t] - M[i, k0 + t - 1]) << (t - 1)
            H[i, g] = x
            HB[i, g] = M[i, k0]
    # column vector of (j, g): C(gq+1 .. gq+q, j) complete once row gq+1 = i is done
    if i >= 1 and (i - 1) % q == 0:
        g = (i - 1) // q
        k0 = g * q
        if k0 + q <= j:
            y = 0
            for t in range(1, q):
                y |= (M[j, k0 + t] - M[j, k0 + t + 1]) << (t - 1)
            V[j, g] = y
            VB[j, g] = M[j, k0 + 1]
            if mode == _FG:
                for x in range(width):
                    col_R[g * width + x] = _r_entry(x, y, bits)
            elif mode == _MEMO_FULL and col_done[y] == 0:
                _r_column(R, y, bits)
                col_done[y] = 1


@njit(nogil=True, cache=True)
def _fill_columns(s, pair, min_loop, q, mode, M, H, HB, V, VB, R, col_done, col_R):
    """Frid & Gusfield's order: columns left to right, each bottom up (the table column R[., y] of a
    group is used by the rows above it in the same column before the next column overwrites it)."""
    n = s.shape[0]
    for j in range(n):
        for i in range(j - 1, -1, -1):
            _cell(s, pair, min_loop, q, mode, M, H, HB, V, VB, R, col_done, col_R, i, j)


@njit(nogil=True, cache=True)
def _fill_tiles(s, pair, min_loop, q, mode, M, H, HB, V, VB, R, col_done, col_R, tile):
    """Square tiles, rows of tiles bottom up, each left to right; inside a tile rows bottom up, columns
    left to right. The vectors of a tile's rows and columns (H[i], V[j]) stay in cache across the tile,
    where column order would stream all of H through the cache once per column."""
    n = s.shape[0]
    if n == 0:
        return
    for i0 in range(((n - 1) // tile) * tile, -1, -tile):
        i1 = min(i0 + tile, n)
        for j0 in range(i0, n, tile):
            j1 = min(j0 + tile, n)
            for i in range(i1 - 1, i0 - 1, -1):
                for j in range(max(j0, i + 1), j1):
                    _cell(s, pair, min_loop, q, mode, M, H, HB, V, VB, R, col_done, col_R, i, j)


@njit(nogil=True, cache=True)
def _traceback(s, pair, min_loop, M, out):
    """One optimal structure from the filled M (upper triangle and mirror); -1 if M is inconsistent."""
    n = s.shape[0]
    for p in range(n):
        out[p] = 46
    stack = np.empty((n // 2 + 2, 2), dtype=np.int64)
    top = 0
    if n > 0:
        stack[0, 0] = 0
        stack[0, 1] = n - 1
        top = 1
    while top > 0:
        top -= 1
        i = stack[top, 0]
        j = stack[top, 1]
        while j - i > min_loop:
            v = M[i, j]
            if v == M[i + 1, j]:
                i += 1
                continue
            if v == M[i, j - 1]:
                j -= 1
                continue
            inner = M[i + 1, j - 1] if i + 1 <= j - 1 else 0
            if pair[s[i], s[j]] == 1 and v == inner + 1:
                out[i] = 40
                out[j] = 41
                i += 1
                j -= 1
                continue
            found = -1
            for k in range(i + min_loop + 1, j):
                if pair[s[i], s[k]] == 1:
                    left = M[i + 1, k - 1] if i + 1 <= k - 1 else 0
                    if left + 1 + M[j, k + 1] == v:     # M[j, k+1] = C(k+1, j) through the mirror
                        found = k
                        break
            if found < 0:
                return -1
            out[i] = 40
            out[found] = 41
            stack[top, 0] = found + 1
            stack[top, 1] = j
            top += 1
            i, j = i + 1, found - 1
    return 0


def _parse_options(options: dict | None, n: int) -> tuple[int, int]:
    options = options or {}
    unknown = [k for k, v in options.items() if k not in _OPTIONS and v is not None]
    if unknown:
        raise UsageError(f"option '{unknown[0]}' does not apply to Four-Russians nussinov "
                         f"(options: {', '.join(_OPTIONS)})")
    min_loop = options.get("min_loop")
    min_loop = config.NUSSINOV_MIN_LOOP if min_loop is None else min_loop
    if isinstance(min_loop, bool) or not isinstance(min_loop, (int, np.integer)) or min_loop < 0:
        raise UsageError(f"min_loop must be a whole number >= 0, not {min_loop!r}")
    q = options.get("q")
    q = auto_q(n) if q is None else q
    if isinstance(q, bool) or not isinstance(q, (int, np.integer)) or not 2 <= q <= Q_MAX:
        raise UsageError(f"q must be a whole number from 2 to {Q_MAX}, not {q!r}")
    return int(min_loop), int(q)


def r_table(q: int) -> np.ndarray:
    """The full table R (index (x << (q-1)) | y), as the two-vector method builds it."""
    bits = q - 1
    R = np.empty(1 << (2 * bits), dtype=np.int8)
    for y in range(1 << bits):
        _r_column(R, y, bits)
    return R


def fill(sequence: str, variant: str, min_loop: int, q: int) -> np.ndarray:
    """The filled table M (C(i,j) at M[i,j] for i <= j, mirrored below the diagonal)."""
    mode = _MODE[variant]
    s = encode(sequence)
    n = len(s)
    bits = q - 1
    groups = n // q + 1
    M = np.zeros((n, n), dtype=np.int32)
    H = np.zeros((n, groups), dtype=np.int32)
    V = np.zeros((n, groups), dtype=np.int32)
    HB = np.zeros((n, groups), dtype=np.int32)
    VB = np.zeros((n, groups), dtype=np.int32)
    if mode == _TWO_VECTOR:
        R = r_table(q)
    elif mode == _FG:
        R = np.zeros(1, dtype=np.int8)
    else:
        R = np.full(1 << (2 * bits), -1 if mode == _MEMO_PARTIAL else 0, dtype=np.int8)
    col_done = np.zeros(1 << bits, dtype=np.int8)
    col_R = np.zeros(groups * (1 << bits) if mode == _FG else 1, dtype=np.int8)
    if mode == _FG:
        _fill_columns(s, _PAIR, min_loop, q, mode, M, H, HB, V, VB, R, col_done, col_R)
    else:
        _fill_tiles(s, _PAIR, min_loop, q, mode, M, H, HB, V, VB, R, col_done, col_R, TILE)
    return M


def fold_one(sequence: str, variant: str = VARIANTS[0], options: dict | None = None) -> tuple[int, str]:
    if variant not in VARIANTS:
        raise UsageError(f"unknown variant '{variant}' for Four-Russians nussinov "
                         f"(choose from {', '.join(VARIANTS)})")
    n = len(sequence)
    min_loop, q = _parse_options(options, n)
    if n == 0:
        return 0, ""
    M = fill(sequence, variant, min_loop, q)
    out = np.empty(n, dtype=np.uint8)
    if _traceback(encode(sequence), _PAIR, min_loop, M, out) < 0:
        raise RuntimeError("Four-Russians traceback found an inconsistent matrix (a bug: please report it)")
    return int(M[0, n - 1]), out.tobytes().decode("ascii")


def fold_batch(sequences: list[str], variant: str, threads: int, options: dict | None = None,
               progress: Callable[[int], None] | None = None) -> list[tuple[int, str]]:
    """Engine entry point (see rnapipe.engines): (pairs, dot-bracket) per sequence, in input order."""
    if variant not in VARIANTS:
        raise UsageError(f"unknown variant '{variant}' for Four-Russians nussinov "
                         f"(choose from {', '.join(VARIANTS)})")
    for s in sequences[:1]:
        _parse_options(options, len(s))          # fail before any work on a bad option
    return map_longest_first(lambda seq: fold_one(seq, variant, options), sequences, threads, progress,
                             bytes_of=lambda n: bytes_needed(n, variant), budget=host_budget(options))
