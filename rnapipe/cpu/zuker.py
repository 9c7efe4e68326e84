"""Zuker minimum free energy folding on CPU, exactly RNAfold's model (Turner 2004, ``-d2`` or ``-d0``).

Matrices, named after Lei et al.'s equations (1)-(5); positions 1-based, every matrix (n+2)×(n+2) int32,
dcal/mol, ``INF`` where no structure exists:

* ``W[j]`` (eq. 1, a vector): MFE of the prefix 1..j, the exterior loop.
* ``V[i, j]`` (eq. 2): MFE of i..j given that i·j pair: hairpin, VBI or VM.
* ``VBI(i, j)`` (eq. 3): best stack, bulge or interior loop closed by i·j with an inner pair p·q,
  p - i - 1 + j - q - 1 <= 30. Not stored: it is a term of V, computed per cell (the ``_VBI_*`` helpers).
* ``VM(i, j)`` (eq. 4): best multiloop closed by i·j. Not stored either (recomputed in the traceback).
* ``WM[i, j]`` (eq. 5): i..j is part of a multiloop holding at least one branch.

Auxiliary arrays (the d2 model gives every branch a mismatch energy from both its neighbours, which are
always inside a multiloop, so no dangle state has to be carried; the auxiliaries are for speed):

* ``WM1[i, j]`` (stored transposed, ``WM1T[j, i]``): exactly one branch, starting at i (paired i·k for some
  k <= j), then unpaired up to j: ``WM1[i, j] = min(WM1[i, j-1] + c, V[i, j] + stem(i, j))``
  (ViennaRNA's ``fM1``). Then ``WM[i, j] = min_k U_i(k) + WM1[k, j]`` with ``U_i(k)`` = the cheaper of
  k - i unpaired nucleotides and ``WM[i, k-1]``, and ``VM(i, j) = closing(i, j) + min_k WM[i+1, k-1] +
  WM1[k, j-1]``; both sweeps read contiguous memory (row of WM, row of WM1T).
* ``VI[p, q] = V[p, q] + mismatch_interior[type(q, p)][S[q+1]][S[p-1]]``: the part of a generic interior
  loop's energy that belongs to the inner pair, so the O(30²) generic-loop sweep per (i, j) is a plain
  add-and-min over a row of VI and a table of loop-size + Ninio terms (``G[n1, n2]``). ``V1N`` (with the
  1xn mismatch) and ``VAU`` (with the inner pair's terminal AU/GU penalty, for bulges of 3 or more) do the
  same for those loops. Only rows i+1 .. i+31 are read, so these three are ring buffers (of 64 rows: rows
  are filled in blocks of 16).

The model's pairing rules (:class:`rnapipe.model.Model`, read from the tables' scalars by ``_rules``), as
ViennaRNA applies them (its default hard constraints, constraints/hard.c, and mfe/mfe.c):

* ``max_bp_span`` and ``no_gu`` leave the pairs they forbid out of the pair types, so no cell has them. The
  fill then visits only the cells i..j of span j - i + 1 <= max_bp_span (V, WM and WM1 of a longer span are
  never read: every one of them lies inside a pair), and W looks back that far: O(n·span²) work.
* ``no_closing_gu``: a GU pair closes no hairpin, bulge, interior loop or multiloop (the closing pair's
  bit in ``CLOSES``), and is the inner pair of no bulge or interior loop (its entries of VI, V1N and VAU are
  INF, and the tabulated loops test the inner pair's bit); stacks are allowed.
* ``no_lp``: ViennaRNA's ``cc``: ``CC[i, j]`` is V's usual minimum (hairpin, VBI, VM) or the stack on
  ``CC[i+1, j-1]``, and ``V[i, j]`` itself only the stack: ``CC[i+1, j-1] + stack(i, j)``. Every other
  term reads V, so every pair it places has the pair i+1·j-1 inside it, which in turn has i·j around it:
  no pair is alone. CC is read at row i+1 only: a ring buffer like VI.

Per-record data (rnapipe.constraints), as ViennaRNA applies it:

* hard constraints (RNAfold's constraint line, ``_hard_constraints``): the pairs they forbid leave the pair
  types; the nucleotides they keep paired bound the unpaired stretches: UP[i] / DN[j], how many may stay
  unpaired in a row from i / up to j, limit each hairpin, the two sides of each bulge and interior loop (the
  sweeps' a5 and a3), the unpaired runs of WM and WM1 and the exterior loop's;
* SHAPE pseudo-energies (Deigan's): the four nucleotides' terms of each stacked pair of pairs, added to the
  stack (ViennaRNA's soft-constraint stack term; with no_lp, to V's stack on CC too).

Fill order: i from n down to 1, j upwards, as ViennaRNA's ``mfe.c``: every cell needs only rows below i and
earlier cells of row i. Rows go in blocks of 16, j outermost inside a block (see ``_fill``), so the
multiloop sweeps find their rows of WM1T in cache. ``_fill`` is that loop over cells; the terms come from
one helper per loop type, as ViennaRNA keeps them (``_hairpin``, the ``_VBI_*``, ``_VM``, ``_WM1``, ``_WM``
and ``_W``), each inlined into it. The loop energies are rnapipe.energy's (ported from ViennaRNA 2.7); the
fill writes the frequent ones out with local tables (hairpin size + mismatch, small interior loops, branch
and exterior stems) for speed, and the traceback re-derives every step with rnapipe.energy's own functions,
so a fill that disagreed with them could not be traced back (the tests evaluate every structure).
"""

from __future__ import annotations

import threading
from typing import Callable

import numpy as np
from numba import njit

from .. import config
from .. import energy as E
from ..alphabet import encode
from ..memory import longest_fitting
from ..model import RULE_MAX_BP_SPAN, RULE_NO_CLOSING_GU, RULE_NO_GU, RULE_NO_LP, Model
from . import ahead, batch
from .batch import host_budget, map_longest_first

VARIANTS = ("default",)

INF = np.int32(100_000_000)     # above any energy a sequence that fits in memory can reach; 3·INF fits int32
HALF_INF = 50_000_000
MAXLOOP = E.MAXLOOP
ROWS = 16                       # rows filled together (see _fill)
RING = 64                       # power of two >= MAXLOOP + 1 + ROWS: rows an interior loop can reach, for
                                # every row of a block (ring slots are cleared when a block starts)
TURN = E.MIN_HAIRPIN

_ML_BASE = E._ML_BASE
_NINIO = E._NINIO
_MAX_NINIO = E._MAX_NINIO


def bytes_needed(n: int, variant: str = "default") -> int:
    """Memory for one sequence of n nt: V, WM, WM1T (int32) and pair types (int8), each (n+2)², the
    ring buffers VI, V1N, VAU, CC (4 × RING rows of int32), ROWS rows of U, the traceback stack and small
    vectors.
    24 GiB holds n = 44,500 (``max_length(24 * 2**30)``)."""
    cells = (n + 2) ** 2
    return 13 * cells + (4 * RING * 4 + ROWS * 4 + 4 * 8 + 64) * (n + 2) + (1 << 16)


def max_length(budget_bytes: int) -> int:
    """Longest sequence whose fold fits in ``budget_bytes``."""
    return longest_fitting(bytes_needed, budget_bytes)


@njit(cache=True, nogil=True)
def _rules(T, n):
    """The model's pairing rules from the tables' scalars (``Model.tables()``): no_lp, no_gu, no_closing_gu
    and the longest span j - i + 1 a pair may have (n where there is no limit); RNAfold's defaults for tables
    without them."""
    sc = T.scalars
    if sc.shape[0] <= RULE_MAX_BP_SPAN:
        return False, False, False, np.int64(n)
    span = np.int64(sc[RULE_MAX_BP_SPAN])
    if span <= 0 or span > n:
        span = np.int64(n)
    return sc[RULE_NO_LP] != 0, sc[RULE_NO_GU] != 0, sc[RULE_NO_CLOSING_GU] != 0, span


@njit(cache=True, nogil=True)
def _closes(no_closing_gu):
    """CLOSES, a bit mask: bit t is set where a pair of type t may close a hairpin, bulge, interior loop or
    multiloop and be the inner pair of a bulge or interior loop (every pair type but 0, none; not GU and UG,
    3 and 4, under no_closing_gu). A mask, not a table: the inlined helpers take no array more (see the note
    above _start_block)."""
    if no_closing_gu:
        return np.int64(0b11100110)
    return np.int64(0b11111110)


@njit(cache=True, nogil=True)
def _generic_table(T):
    """G[n1, n2]: loop-size and Ninio terms of a generic interior loop (both sides >= 2 unpaired, not 2x2,
    2x3 or 3x2, which have their own tables); INF elsewhere."""
    G = np.full((MAXLOOP + 1, MAXLOOP + 1), INF, dtype=np.int32)
    sc = T.scalars
    for n1 in range(2, MAXLOOP + 1):
        for n2 in range(2, MAXLOOP + 1 - n1):
            if (n1 == 2 and n2 <= 3) or (n1 == 3 and n2 == 2):
                continue
            G[n1, n2] = T.interior[n1 + n2] + min(sc[_MAX_NINIO], abs(n1 - n2) * sc[_NINIO])
    return G


@njit(cache=True, nogil=True)
def _size_terms(T):
    """Per loop size: bulge[n] (n >= 2, the terminal AU/GU terms are added from VAU and the closing pair) and
    L1N[n] = interior[n + 1] + Ninio(n - 1) for 1xn loops with n >= 3."""
    sc = T.scalars
    BUL = np.full(MAXLOOP + 1, INF, dtype=np.int32)
    L1N = np.full(MAXLOOP + 1, INF, dtype=np.int32)
    for m in range(2, MAXLOOP + 1):
        BUL[m] = T.bulge[m]
    for m in range(3, MAXLOOP):
        L1N[m] = T.interior[m + 1] + min(sc[_MAX_NINIO], (m - 1) * sc[_NINIO])
    return BUL, L1N


@njit(cache=True, nogil=True)
def _reversed_rows(A):
    """R[..., r] = A[..., MAXLOOP - r]: the sweeps run with q ascending, n2 = j - 1 - q descending."""
    return np.ascontiguousarray(A[..., ::-1])


@njit(cache=True, nogil=True)
def workspace_sizes(n):
    """int32 and int8 words the fill of an n-nt sequence takes from its workspace (see _fill)."""
    N = n + 2
    return 3 * N * N + 4 * RING * N + ROWS * (N + 1), N * N


@njit(cache=True, nogil=True)
def _take(work, start, rows, cols, value):
    """work[start : start + rows·cols] as a (rows, cols) matrix set to value."""
    a = work[start:start + rows * cols].reshape((rows, cols))
    a[:] = value
    return a


@njit(cache=True, nogil=True)
def _hairpin_sizes(T, n):
    """HPL[m]: the size term of a hairpin of m nt, m <= n, extrapolated beyond 30 nt as ViennaRNA does."""
    HPL = np.empty(n + 1, dtype=np.int32)
    for m in range(n + 1):
        HPL[m] = min(E.loop_length_energy(T.hairpin, T.lxc, m), INF)
    return HPL


@njit(cache=True, nogil=True)
def _terminal_au(T):
    """AU[t]: the terminal AU/GU penalty of a pair of type t (zero for CG and GC)."""
    AU = np.zeros(8, dtype=np.int32)
    for t in range(3, 8):
        AU[t] = T.scalars[E._TERM_AU]
    return AU


# RNAfold's constraint symbols (``-C``), as the codes of H that _hard_constraints reads; '.' is 0 (none).
HC_SYMBOLS = ".x|<>()"
HC_CODES = np.full(256, -1, dtype=np.int8)
for _k, _c in enumerate(HC_SYMBOLS):
    HC_CODES[ord(_c)] = _k
HC_CODES.setflags(write=False)
_HC_X, _HC_PIPE, _HC_DOWN, _HC_UP, _HC_OPEN, _HC_CLOSE = 1, 2, 3, 4, 5, 6
NO_DATA8 = np.zeros(0, dtype=np.int8)          # H of a sequence without hard constraints (from Python)
NO_DATA32 = np.zeros(0, dtype=np.int32)        # SH of a sequence without SHAPE data (from Python)


@njit(cache=True, nogil=True)
def hc_positions(H, n, enforce):
    """What RNAfold's constraint line (codes H, non-empty) says of each position, as :func:`_hard_constraints`
    applies it (the GPU engine's per-position words are made from it too, :func:`hc_words_fill`):
    ``partner[k]``, the constrained partner of k (0: none; a ``( )`` pair closing fewer than 3 unpaired
    nucleotides is dropped), ``enc[k]``, the 5' end of the innermost constrained pair around k (0: none; a pair of
    two positions without a partner crosses no constrained pair exactly when both have the same), and
    ``free[k]``, whether k may stay unpaired (with ``enforce``, not the nucleotides of ``( )`` and ``|``)."""
    partner = np.zeros(n + 2, dtype=np.int64)
    enc = np.zeros(n + 2, dtype=np.int64)
    free = np.ones(n + 2, dtype=np.bool_)
    _hc_positions_into(H, n, enforce, partner, enc, free, np.zeros(n + 2, dtype=np.int64))
    return partner, enc, free


@njit(cache=True, nogil=True)
def _hc_positions_into(H, n, enforce, partner, enc, free, opened):
    """:func:`hc_positions` into given arrays (at least n + 2 long; ``opened`` is scratch)."""
    for k in range(n + 2):
        partner[k] = 0
        enc[k] = 0
        free[k] = True
    top = 0
    for k in range(1, n + 1):
        if H[k] == _HC_OPEN:
            opened[top] = k
            top += 1
        elif H[k] == _HC_CLOSE and top > 0:
            top -= 1
            i = opened[top]
            if k - i - 1 >= TURN:
                partner[i] = k
                partner[k] = i
    top = 0
    for k in range(1, n + 1):
        if partner[k] and partner[k] < k:
            top -= 1
        enc[k] = opened[top - 1] if top > 0 else 0
        if partner[k] > k:
            opened[top] = k
            top += 1
    if enforce:
        for k in range(1, n + 1):
            if H[k] == _HC_PIPE or partner[k]:
                free[k] = False


@njit(cache=True, nogil=True)
def hc_words_fill(out, codes, lens, starts, enforce, span):
    """The GPU kernels' per-position words of hard constraints (ZkHc of gpu/kernels/zuker_core.cuh, made by
    rnapipe.gpu.zuker_tables.hc_words) from this engine's own pass (:func:`hc_positions`): sequence k's constraint
    codes follow a separator in ``codes`` (the lines one apart, one separator first), its n + 2 rows of ``out`` from
    ``starts[k]``: the partner (else minus the flags: bit 0 'x' or '>', bit 1 'x' or '<'), enc, UP, DN, and at row 0
    the span the fill covers (``span`` grown to the longest constrained pair, as :func:`_hard_constraints` grows it).
    No allocation per sequence: a batch of short ones is mostly this loop."""
    most = 0
    for k in range(lens.shape[0]):
        most = max(most, lens[k])
    partner = np.zeros(most + 2, dtype=np.int64)
    enc = np.zeros(most + 2, dtype=np.int64)
    free = np.ones(most + 2, dtype=np.bool_)
    opened = np.zeros(most + 2, dtype=np.int64)
    at = 0
    for k in range(lens.shape[0]):
        n = lens[k]
        H = codes[at:at + n + 2]                   # H[1..n]: the line (H[0] the separator before it)
        at += n + 1
        _hc_positions_into(H, n, enforce, partner, enc, free, opened)
        o = out[starts[k]:starts[k] + n + 2]
        reach = span
        up = 0
        for p in range(n, 0, -1):
            up = up + 1 if free[p] else 0
            o[p, 2] = up
        dn = 0
        for p in range(1, n + 1):
            dn = dn + 1 if free[p] else 0
            o[p, 3] = dn
            if partner[p] > 0:
                o[p, 0] = partner[p]
                if partner[p] > p:
                    reach = max(reach, partner[p] - p + 1)
            else:
                h = H[p]
                o[p, 0] = -((1 if h == 1 or h == 4 else 0) | (2 if h == 1 or h == 3 else 0))
            o[p, 1] = enc[p]
        o[0, 2] = reach


@njit(cache=True, nogil=True)
def _hard_constraints(ptype, S, n, H, enforce, no_lp, span):
    """Apply RNAfold's constraint line (codes H, see HC_SYMBOLS; empty: none) to the pair types, as
    ViennaRNA's ``vrna_hc_add_from_db`` with ``VRNA_CONSTRAINT_DB_DEFAULT`` (and ``..._ENFORCE_BP`` when
    ``enforce``) does for one strand:

    * ``x``: the nucleotide pairs with nothing; ``<`` / ``>``: it pairs, if at all, with a nucleotide
      downstream / upstream;
    * ``( )``: the pair, canonical or not (its type that of the two nucleotides, a GU one under no_gu too; a
      non-canonical one has ViennaRNA's non-standard type 7), of any span (max_bp_span limits the other pairs
      only), and no other pair of either nucleotide nor one that crosses it; a pair closing fewer than 3
      unpaired nucleotides is dropped, as ViennaRNA drops it (a warning there);
    * with ``enforce``, the nucleotides of ``( )`` and ``|`` may not stay unpaired (``|`` says nothing
      without it);
    * with ``no_lp``, ViennaRNA's default hard constraints first drop every pair that no canonical pair (GU
      included, within ``span``) could stack on, outside or inside: a pair stacked only on a constrained
      non-canonical pair cannot form (without constraints this drops only pairs the fill could not use anyway).

    Returns UP[i], how many nucleotides from i on may stay unpaired in a row (n - i + 1 without constraints),
    DN[j], how many up to j (ViennaRNA's ``hc->up_*``: here every loop type alike), and the span the fill has
    to cover: ``span``, or a constrained pair's if longer. H's brackets are balanced (the reader checks)."""
    UP = np.zeros(n + 2, dtype=np.int64)
    DN = np.zeros(n + 2, dtype=np.int64)
    free = np.ones(n + 2, dtype=np.bool_)
    if H.shape[0] > 0:
        if no_lp:
            P = E.PAIR_TYPE
            for i in range(1, n + 1):
                for j in range(i + TURN + 1, n + 1):
                    outer = i > 1 and j < n and j - i + 3 <= span and P[S[i - 1], S[j + 1]] != 0
                    inner = j - i - 2 > TURN and P[S[i + 1], S[j - 1]] != 0
                    if not outer and not inner:
                        ptype[i, j] = 0
        partner, enc, free = hc_positions(H, n, enforce)
        for i in range(1, n + 1):
            hi = H[i]
            for j in range(i + TURN + 1, n + 1):
                if partner[i] or partner[j]:
                    if partner[i] == j:
                        t = E.PAIR_TYPE[S[i], S[j]]
                        ptype[i, j] = t if t else E.NONSTANDARD
                        span = max(span, j - i + 1)
                    else:
                        ptype[i, j] = 0
                elif (hi == _HC_X or hi == _HC_UP or H[j] == _HC_X or H[j] == _HC_DOWN
                      or enc[i] != enc[j]):
                    ptype[i, j] = 0
    for i in range(n, 0, -1):
        UP[i] = UP[i + 1] + 1 if free[i] else 0
    for j in range(1, n + 1):
        DN[j] = DN[j - 1] + 1 if free[j] else 0
    return UP, DN, span


# The loop-type helpers below are inlined into _fill's loop over cells (inline="always", at the level of
# Numba's IR). The inliner copies each argument into a variable of the helper's own, and array variables
# are reference-counted: Numba's refprune pass (in LLVM) removes the count's atomic increments and
# decrements where a variable's last use is outside any ``if`` (inside a loop is fine), not where it is
# inside one. There they stay, two atomic operations per array argument per cell, which for these helpers
# cost about as much as the fill itself. So each helper reads its arrays outside its ``if``s: a candidate's
# energy is read before its pair type is tested, row slices are taken before the sweeps (an empty slice
# where the loop does not fit), and the term added after a sweep is read before its ``best < HALF_INF``
# test. For the same reason no helper called per cell takes T, a tuple of arrays, each of them counted.
#
# The sweeps read a row slice and a reversed size table from index 0, so that Numba emits no
# negative-index checks and LLVM vectorises them: q runs upwards.

@njit(cache=True, nogil=True, inline="always")
def _start_block(UB, VI, V1N, VAU, CC, UP, i0, ilo, N, span, ml_base):
    """Rows i0 down to ilo of a block: U_i(k) = (k - i) unpaired nucleotides up to k = i + TURN + 1
    (WM[i, k-1] is INF there; INF too where a hard constraint keeps one of them paired, ``UP``), and the ring
    rows of VI, V1N, VAU and CC they take over set to INF, in the columns a row of pairs of at most ``span`` nt
    can use."""
    for i in range(i0, ilo - 1, -1):
        U = UB[i0 - i]
        U[i] = 0
        free = UP[i]
        for k in range(i + 1, min(i + TURN + 2, N + 1)):
            U[k] = min((k - i) * ml_base, INF) if k - i <= free else INF
        ri = i & (RING - 1)
        hi = min(N, i + span)
        VI[ri, i:hi] = INF
        V1N[ri, i:hi] = INF
        VAU[ri, i:hi] = INF
        CC[ri, i:hi] = INF


@njit(cache=True, nogil=True, inline="always")
def _hairpin(HPL, mmH, S, i, j, t):
    """H(i, j), the hairpin term of V (eq. 2), for a loop that is no special tri-, tetra- or hexaloop: the
    size term plus the hairpin mismatch (_fill gives loops of 3, 4 and 6 nt to energy.hairpin_energy)."""
    return np.int64(HPL[j - i - 1]) + mmH[t, S[i + 1], S[j - 1]]


@njit(cache=True, nogil=True, inline="always")
def _VBI_tabulated(ptype, V, S, i, j, t, maxu, a5, a3, stack, bulge1, BUL, AU, int11, int21, int22, mm23, il5,
                   sstack, CLOSES):
    """VBI (eq. 3) over the loops with tables of their own: the stack, bulges of 1 and 2, 1x1, 1x2, 2x1,
    2x2, 2x3 and 3x2 (n1 + n2 <= maxu, n1 <= a5 and n2 <= a3, the inner pair p·q of type t2 = type(p, q));
    INF if none pairs. ``sstack`` is the stack's soft-constraint term (SHAPE; 0 without).
    Each candidate's energy is read whether it fits or not (p and q stay inside the matrices, and t2 is 0
    where q - p <= TURN) and kept where t2 is a pair (for loops other than the stack, one whose bit CLOSES
    sets) and n1 + n2 <= maxu: see the note above _start_block."""
    RT = E.RTYPE
    si1 = S[i + 1]
    sj1 = S[j - 1]
    m23 = np.int64(il5) + mm23[t, si1, sj1]
    v = np.int64(INF)
    t2 = ptype[i + 1, j - 1]                                # stack
    e = np.int64(stack[t, RT[t2]]) + V[i + 1, j - 1] + sstack
    if t2:
        v = min(v, e)
    t2 = ptype[i + 1, j - 2]                                # bulge of 1 (3' side): stacking across it
    e = np.int64(bulge1) + stack[t, RT[t2]] + V[i + 1, j - 2]
    if (CLOSES >> t2) & 1 and maxu >= 1 and a3 >= 1:
        v = min(v, e)
    t2 = ptype[i + 1, j - 3]                                # bulge of 2 (3' side): terminal AU/GU both sides
    e = np.int64(BUL[2]) + AU[t] + AU[t2] + V[i + 1, j - 3]
    if (CLOSES >> t2) & 1 and maxu >= 2 and a3 >= 2:
        v = min(v, e)
    t2 = ptype[i + 2, j - 1]                                # bulge of 1 (5' side)
    e = np.int64(bulge1) + stack[t, RT[t2]] + V[i + 2, j - 1]
    if (CLOSES >> t2) & 1 and maxu >= 1 and a5 >= 1:
        v = min(v, e)
    t2 = ptype[i + 3, j - 1]                                # bulge of 2 (5' side)
    e = np.int64(BUL[2]) + AU[t] + AU[t2] + V[i + 3, j - 1]
    if (CLOSES >> t2) & 1 and maxu >= 2 and a5 >= 2:
        v = min(v, e)
    p = i + 2                                               # 1x1
    q = j - 2
    t2 = ptype[p, q]
    e = np.int64(int11[t, RT[t2], si1, sj1]) + V[p, q]
    if (CLOSES >> t2) & 1 and maxu >= 2 and a5 >= 1 and a3 >= 1:
        v = min(v, e)
    p = i + 2                                               # 1x2: n1 = 1, n2 = 2
    q = j - 3
    t2 = ptype[p, q]
    e = np.int64(int21[t, RT[t2], si1, S[q + 1], sj1]) + V[p, q]
    if (CLOSES >> t2) & 1 and maxu >= 3 and a5 >= 1 and a3 >= 2:
        v = min(v, e)
    p = i + 3                                               # 2x1: n1 = 2, n2 = 1
    q = j - 2
    t2 = ptype[p, q]
    e = np.int64(int21[RT[t2], t, S[q + 1], si1, S[p - 1]]) + V[p, q]
    if (CLOSES >> t2) & 1 and maxu >= 3 and a5 >= 2 and a3 >= 1:
        v = min(v, e)
    p = i + 3                                               # 2x2
    q = j - 3
    t2 = ptype[p, q]
    e = np.int64(int22[t, RT[t2], si1, S[p - 1], S[q + 1], sj1]) + V[p, q]
    if (CLOSES >> t2) & 1 and maxu >= 4 and a5 >= 2 and a3 >= 2:
        v = min(v, e)
    p = i + 3                                               # 2x3
    q = j - 4
    t2 = ptype[p, q]
    e = m23 + mm23[RT[t2], S[q + 1], S[p - 1]] + V[p, q]
    if (CLOSES >> t2) & 1 and maxu >= 5 and a5 >= 2 and a3 >= 3:
        v = min(v, e)
    p = i + 4                                               # 3x2
    q = j - 3
    t2 = ptype[p, q]
    e = m23 + mm23[RT[t2], S[q + 1], S[p - 1]] + V[p, q]
    if (CLOSES >> t2) & 1 and maxu >= 5 and a5 >= 3 and a3 >= 2:
        v = min(v, e)
    return v


@njit(cache=True, nogil=True, inline="always")
def _VBI_bulge(VAU, BUL, BULR, AU, i, j, t, maxu, a5, a3):
    """VBI (eq. 3) over bulges of 3 nt or more (at most a5 on the 5' side, a3 on the 3' side): VAU carries
    the inner pair's terminal AU/GU, the closing pair's is added here; INF if none."""
    m3 = min(maxu, a3)
    rv = VAU[(i + 1) & (RING - 1), j - 1 - m3:j - 3]                # bulge on the 3' side, n2 = m3..3
    rs = BULR[MAXLOOP - m3:MAXLOOP - 2]
    au = AU[t]
    best = INF
    for m in range(rv.shape[0]):
        best = min(best, rv[m] + rs[m])
    for m in range(3, min(maxu, a5) + 1):                           # on the 5' side (a column)
        best = min(best, VAU[(i + 1 + m) & (RING - 1), j - 1] + BUL[m])
    if best < HALF_INF:
        return best + au
    return INF


@njit(cache=True, nogil=True, inline="always")
def _VBI_1n(V1N, L1N, L1NR, mm1n, S, i, j, t, maxu, a5, a3):
    """VBI (eq. 3) over 1xn and nx1 loops, n >= 3 (at most a5 unpaired on the 5' side, a3 on the 3' side):
    V1N carries the inner pair's 1xn mismatch, the closing pair's is added here; INF if none."""
    top = min(maxu - 1, a3) if a5 >= 1 else 0
    rv = V1N[(i + 2) & (RING - 1), j - 1 - top:j - 3]               # 1 x n2, n2 = top..3
    rs = L1NR[MAXLOOP - top:MAXLOOP - 2]
    mm = mm1n[t, S[i + 1], S[j - 1]]
    best = INF
    for m in range(rv.shape[0]):
        best = min(best, rv[m] + rs[m])
    for m in range(3, min(maxu - 1, a5) + 1 if a3 >= 1 else 0):     # n1 x 1 (a column)
        best = min(best, V1N[(i + 1 + m) & (RING - 1), j - 2] + L1N[m])
    if best < HALF_INF:
        return best + mm
    return INF


@njit(cache=True, nogil=True, inline="always")
def _VBI_generic(VI, GR, mmI, S, i, j, t, maxu, a5, a3):
    """VBI (eq. 3) over generic interior loops, n1, n2 >= 2 (n1 <= a5, n2 <= a3): VI carries the inner pair's
    mismatch, GR the size and Ninio terms, the closing pair's mismatch is added here; INF if none."""
    mm = mmI[t, S[i + 1], S[j - 1]]
    best = INF
    for n1 in range(2, min(maxu - 2, a5) + 1):
        top = min(maxu - n1, a3)                                    # n2 = top..2, q = j-1-top..j-3
        rv = VI[(i + 1 + n1) & (RING - 1), j - 1 - top:j - 2]
        rs = GR[n1, MAXLOOP - top:MAXLOOP - 1]
        for m in range(rv.shape[0]):
            best = min(best, rv[m] + rs[m])
    if best < HALF_INF:
        return best + mm
    return INF


@njit(cache=True, nogil=True, inline="always")
def _VM(WM, WM1T, S, i, j, t, AU, mmM, ml_closing, ml_intern):
    """VM (eq. 4): the least WM[i+1, k-1] + WM1[k, j-1] over k = i+TURN+3 .. j-TURN-2, plus the closing
    pair's multiloop terms; INF if none."""
    ra = WM[i + 1, i + TURN + 2:j - TURN - 2]
    rb = WM1T[j - 1, i + TURN + 3:j - TURN - 1]
    rt = E.RTYPE[t]
    closing = np.int64(ml_closing) + ml_intern + mmM[rt, S[j - 1], S[i + 1]] + AU[rt]
    best = INF
    for m in range(ra.shape[0]):
        best = min(best, ra[m] + rb[m])
    if best < HALF_INF:
        return best + closing
    return INF


@njit(cache=True, nogil=True, inline="always")
def _VBI_inner(VI, V1N, VAU, S, i, j, t, v, mmI, mm1n, AU):
    """Row i's entries at j of the ring buffers VI, V1N and VAU: V[i, j] = v plus the part of an enclosing
    interior loop's energy (eq. 3) that belongs to i·j as its inner pair."""
    ri = i & (RING - 1)
    rt = E.RTYPE[t]
    VI[ri, j] = v + mmI[rt, S[j + 1], S[i - 1]]
    V1N[ri, j] = v + mm1n[rt, S[j + 1], S[i - 1]]
    VAU[ri, j] = v + AU[t]


@njit(cache=True, nogil=True, inline="always")
def _WM1(WM1T, V, S, i, j, t, AU, mmM, ml_base, ml_intern, j_free):
    """WM1[i, j] = min(WM1[i, j-1] + ML base (if j may be unpaired: ``j_free``), V[i, j] + branch stem(i, j))
    (ViennaRNA's fM1), stored at WM1T[j, i]."""
    vij = V[i, j]
    stem = np.int64(ml_intern) + mmM[t, S[i - 1], S[j + 1]] + AU[t]
    w1 = np.int64(WM1T[j - 1, i]) + ml_base if j_free else np.int64(INF)
    if vij < HALF_INF:
        w1 = min(w1, vij + stem)
    WM1T[j, i] = min(w1, INF)


@njit(cache=True, nogil=True, inline="always")
def _WM(WM, WM1T, U, i, j, ml_base, i_free):
    """WM (eq. 5): WM[i, j] = the least U_i(k) + WM1[k, j]; then U_i(j+1), the cheaper of j+1-i unpaired
    nucleotides (if hard constraints let them be: ``i_free`` is how many from i may) and WM[i, j], for the
    cells of row i to come."""
    ru = U[i:j - TURN]
    rw = WM1T[j, i:j - TURN]
    best = INF
    for m in range(ru.shape[0]):
        best = min(best, ru[m] + rw[m])
    best = min(best, INF)
    WM[i, j] = best
    U[j + 1] = min((j + 1 - i) * ml_base, best) if j + 1 - i <= i_free else best


@njit(cache=True, nogil=True, inline="always")
def _W(T, S, n, V, ptype, AU, span, UP):
    """W (eq. 1), the exterior loop: W[j] = min(W[j-1] (if j may be unpaired, ``UP[j] > 0``), the least
    W[i-1] + V[i, j] + exterior stem(i, j)), i from j - span + 1 (no pair spans more than ``span`` nt); INF
    where hard constraints leave no structure.

    The stem terms are energy.exterior_stem_at's (mismatch inside the sequence, a dangle at either end, none
    with dangles=0), written out with local tables to keep Python objects out of the O(n²) loop."""
    mmExt = T.mismatch_exterior
    d5 = T.dangle5
    d3 = T.dangle3
    dangles = T.scalars[E._DANGLES]
    W = np.zeros(n + 1, dtype=np.int64)
    for j in range(1, n + 1):
        w = W[j - 1] if UP[j] > 0 else np.int64(INF)
        for i in range(max(1, j - span + 1), j - TURN):
            if V[i, j] < HALF_INF:
                t = ptype[i, j]
                e = W[i - 1] + V[i, j] + AU[t]
                if dangles:
                    if i > 1 and j < n:
                        e += mmExt[t, S[i - 1], S[j + 1]]
                    elif i > 1:
                        e += d5[t, S[i - 1]]
                    elif j < n:
                        e += d3[t, S[j + 1]]
                w = min(w, e)
        W[j] = min(w, INF)
    return W


@njit(cache=True, nogil=True)
def _fill(T, S, n, work32, work8, H, enforce, SH):
    """Fill V, WM, WM1T and W for the padded codes S (S[1..n]); returns them, the pair types, the unpaired runs
    UP, DN (see :func:`_hard_constraints`), the SHAPE stacking terms SS and the span the fill covered, all of
    which the traceback reads.

    ``H``: the hard-constraint codes of S's positions (:data:`HC_CODES`, padded as S; empty for none) and
    ``enforce`` (RNAfold's --enforceConstraint); ``SH``: each position's SHAPE stacking pseudo-energy (dcal/mol,
    padded as S; empty for none), added four to a stack (ViennaRNA's soft-constraint stack term).

    The matrices are views into ``work32`` and ``work8`` (at least ``workspace_sizes(n)`` words), which a
    thread keeps from one sequence to the next: a fresh (n+2)² allocation per sequence costs page faults
    and, on many threads, memory-map contention that kept 16 threads far from 16 times one."""
    N = n + 2
    no_lp, no_gu, no_closing_gu, span = _rules(T, n)
    ptype = _take(work8, 0, N, N, 0)
    for i in range(1, n + 1):
        for j in range(i + TURN + 1, min(n, i + span - 1) + 1):
            t = E.PAIR_TYPE[S[i], S[j]]
            if no_gu and (t == 3 or t == 4):
                t = 0
            ptype[i, j] = t
    UP, DN, span = _hard_constraints(ptype, S, n, H, enforce, no_lp, span)
    SS = np.zeros(N, dtype=np.int64)                    # SH as int64, zero where there is none
    if SH.shape[0] > 0:
        for i in range(1, n + 1):
            SS[i] = SH[i]
    CLOSES = _closes(no_closing_gu)
    V = _take(work32, 0, N, N, INF)
    WM = _take(work32, N * N, N, N, INF)
    WM1T = _take(work32, 2 * N * N, N, N, INF)
    # VI, V1N, VAU: rows p = i+1 .. i+MAXLOOP+1 only are ever read, so they live in ring buffers of
    # RING rows (row p at p & (RING - 1)), cleared when row i takes over the slot of row i + RING
    # (at the start of i's block: no row of the block reads beyond i + ROWS + MAXLOOP).
    base = 3 * N * N
    VI = _take(work32, base, RING, N, INF)
    V1N = _take(work32, base + RING * N, RING, N, INF)
    VAU = _take(work32, base + 2 * RING * N, RING, N, INF)
    CC = _take(work32, base + 3 * RING * N, RING, N, INF)         # no_lp's CC, row p at p & (RING - 1)
    UB = _take(work32, base + 4 * RING * N, ROWS, N + 1, INF)   # U of each row of a block
    # The energy tables the loop-type helpers read, taken out of T once per sequence.
    G = _generic_table(T)
    BUL, L1N = _size_terms(T)
    GR = _reversed_rows(G)
    BULR = _reversed_rows(BUL)
    L1NR = _reversed_rows(L1N)
    HPL = _hairpin_sizes(T, n)
    AU = _terminal_au(T)
    ml_base = T.scalars[_ML_BASE]
    ml_intern = T.scalars[E._ML_INTERN]
    ml_closing = T.scalars[E._ML_CLOSING]
    stack = T.stack
    bulge1 = T.bulge[1]
    int11 = T.int11
    int21 = T.int21
    int22 = T.int22
    il5 = T.interior[5] + T.scalars[_NINIO]
    mmH = T.mismatch_hairpin
    mmI = T.mismatch_interior
    mm1n = T.mismatch_interior_1n
    mm23 = T.mismatch_interior_23
    mmM = T.mismatch_multi                  # multiloop branch mismatch (all zero with dangles=0)

    # Rows are filled in blocks of ROWS, j outermost within a block and i downwards within a j: the same
    # dependencies as row by row (a cell needs rows below it, and earlier columns of its own and of the
    # rows below), but each row j of WM1T, which the multiloop sweeps read, is read by ROWS rows in a row
    # while it is in cache, instead of once per row from memory (the triangle of WM1T is megabytes long
    # at 1,000 nt, and 16 threads streaming it each were far from 16 times one).
    # Only the cells of span j - i + 1 <= span are visited (the others stay INF and are never read).
    for i0 in range(n - TURN - 1, 0, -ROWS):
        ilo = max(1, i0 - ROWS + 1)
        _start_block(UB, VI, V1N, VAU, CC, UP, i0, ilo, N, span, ml_base)
        for j in range(ilo + TURN + 1, min(n, i0 + span - 1) + 1):
            j_free = UP[j] > 0
            a3 = DN[j - 1]                                      # unpaired nucleotides that may end at j-1
            s3 = SS[j - 1] + SS[j]
            for i in range(min(i0, j - TURN - 1), max(ilo, j - span + 1) - 1, -1):
                t = ptype[i, j]
                a5 = UP[i + 1]                                  # ... and that may start at i+1
                sstack = SS[i] + SS[i + 1] + s3
                if t:
                    # V (eq. 2): the hairpin, VBI and VM; a pair whose CLOSES bit is off (GU under
                    # no_closing_gu) keeps the stack only (maxu = 0). The hairpin and VM are computed either
                    # way and kept or not after (see the note above _start_block).
                    closes = (CLOSES >> t) & 1
                    size = j - i - 1
                    if size == 3 or size == 4 or size == 6:     # may be a tabulated tri-, tetra- or hexaloop,
                        hp = E.hairpin_energy_of_type(T, S, i, j, t)  # which needs T (see above _start_block)
                    else:
                        hp = _hairpin(HPL, mmH, S, i, j, t)
                    if a5 < size:                               # a hard constraint keeps one of them paired
                        hp = np.int64(INF)
                    maxu = min(MAXLOOP, j - i - TURN - 3) if closes else 0
                    v = _VBI_tabulated(ptype, V, S, i, j, t, maxu, a5, a3, stack, bulge1, BUL, AU,
                                       int11, int21, int22, mm23, il5, sstack, CLOSES)
                    v = min(v, _VBI_bulge(VAU, BUL, BULR, AU, i, j, t, maxu, a5, a3))
                    v = min(v, _VBI_1n(V1N, L1N, L1NR, mm1n, S, i, j, t, maxu, a5, a3))
                    v = min(v, _VBI_generic(VI, GR, mmI, S, i, j, t, maxu, a5, a3))
                    vm = _VM(WM, WM1T, S, i, j, t, AU, mmM, ml_closing, ml_intern)
                    if closes:
                        v = min(v, min(hp, vm))
                    if no_lp:
                        # ViennaRNA's cc and c: CC keeps the best of everything, V only the stack on CC
                        t2 = ptype[i + 1, j - 1]
                        c = np.int64(CC[(i + 1) & (RING - 1), j - 1]) + stack[t, E.RTYPE[t2]] + sstack
                        if t2 == 0 or c >= HALF_INF:
                            c = np.int64(INF)
                        CC[i & (RING - 1), j] = min(v, c)
                        v = c
                    V[i, j] = v
                    _VBI_inner(VI, V1N, VAU, S, i, j, t, v if closes else np.int64(INF), mmI, mm1n, AU)
                _WM1(WM1T, V, S, i, j, t, AU, mmM, ml_base, ml_intern, j_free)
                _WM(WM, WM1T, UB[i0 - i], i, j, ml_base, UP[i])
    return _W(T, S, n, V, ptype, AU, span, UP), V, WM, WM1T, ptype, UP, DN, SS, span


@njit(cache=True, nogil=True)
def traceback(T, S, n, W, V, WM, ptype, UP, DN, SS, span):
    """Pair table of the optimal structure RNAfold prints: re-derive which term of each recursion gave the
    stored value, trying the terms in the order of ViennaRNA's MFE backtracking, so that among co-optimal
    structures the same one comes out (``backtrack`` in mfe/mfe.c and src/ViennaRNA/backtrack/):

    * exterior loop (``bt_ext_loop_f5``): the unpaired 3' end while W[j] = W[j-1], then the helix i·j that
      closes at j with i nearest to j first;
    * pair i·j (``vrna_bt_hairpin``, ``bt_int_loop``, ``bt_mb_loop``): the hairpin, then the interior loops
      with n1 = p-i-1 ascending and, within an n1, n2 = j-q-1 ascending, then the multiloop as two WM
      sections WM[i+1, k-1] + WM[k, j-1], k ascending (ViennaRNA's fML + fML split; the fill's VM takes
      the same minimum as WM + WM1);
    * WM section i..j (``bt_mb_loop_split``, ViennaRNA's fML): unpaired nucleotides off the 3' end while
      WM[i, j] = WM[i, j-1] + ML base, then off the 5' end while WM[i, j] = WM[i+1, j] + ML base, then one
      branch i·j, then the split WM[i, u] + WM[u+1, j] with u ascending.
    * with no_lp (``backtrack`` in mfe.c with ``vrna_bt_stacked_pairs``): a pair placed by any of the above
      is V's, the stack on i+1·j-1, whose target is then CC[i+1, j-1] (V[i, j] less the stack); a pair of a
      CC target stacks on again while V equals the target, else takes the hairpin, interior loop or multiloop
      that gives the target, in the order above.
    * with no_closing_gu, a GU pair is not tried as the closing pair of a hairpin, multiloop, bulge or interior
      loop, nor as the inner pair of a bulge or interior loop (ViennaRNA's energies of those are INF).

    Reads the matrices as ``_fill`` stores them (V and WM (n+2)² int32, W int64 of n + 1, the pair types,
    the unpaired runs UP and DN of hard constraints, the SHAPE stacking terms SS and the span the fill
    covered: :func:`free_runs` for none); the GPU engine's host traceback (``rnapipe.gpu.zuker._host_traceback``) calls it on matrices copied
    back from the device, and the GPU tracebacks (``zk_traceback``, ``zk_traceback_block``,
    ``zs_traceback``) take the same decisions in the same order."""
    pt = np.zeros(n + 2, dtype=np.int32)
    ml_base = T.scalars[_ML_BASE]
    no_lp, _, no_closing_gu, _ = _rules(T, n)
    CLOSES = _closes(no_closing_gu)
    # (kind, i, j, target); kind 0 = the pair i·j (V), 1 = the WM section i..j, 2 = the pair i·j with the
    # target energy CC[i, j] (no_lp). The entries on the stack are disjoint stretches of at least TURN + 2
    # nt, so n + 8 entries always suffice.
    stack = np.zeros((n + 8, 4), dtype=np.int64)
    top = 0
    j = n
    while j > TURN + 1:
        if UP[j] > 0 and W[j] == W[j - 1]:
            j -= 1
            continue
        found = False
        for i in range(j - TURN - 1, max(1, j - span + 1) - 1, -1):
            stem = E.exterior_stem_of_type(T, S, n, i, j, ptype[i, j])
            if V[i, j] < HALF_INF and W[i - 1] + V[i, j] + stem == W[j]:
                stack[top, 0] = 0
                stack[top, 1] = i
                stack[top, 2] = j
                top += 1
                j = i - 1
                found = True
                break
        if not found:                     # never expected: leave j unpaired rather than loop forever
            j -= 1
    while top > 0:
        top -= 1
        kind = stack[top, 0]
        i = stack[top, 1]
        j = stack[top, 2]
        if kind == 0 or kind == 2:
            pt[i] = j
            pt[j] = i
            target = np.int64(V[i, j]) if kind == 0 else stack[top, 3]
            t = ptype[i, j]
            if no_lp and V[i, j] == target:       # always so for kind 0: V is the stack on CC[i+1, j-1]
                stack[top, 0] = 2
                stack[top, 1] = i + 1
                stack[top, 2] = j - 1
                inner = E.interior_energy_of_types(T, S, i, j, i + 1, j - 1, t, ptype[i + 1, j - 1])
                stack[top, 3] = target - inner - (SS[i] + SS[i + 1] + SS[j - 1] + SS[j])
                top += 1
                continue
            closes = (CLOSES >> t) & 1
            if closes and UP[i + 1] >= j - i - 1 and E.hairpin_energy_of_type(T, S, i, j, t) == target:
                continue
            found = False
            maxu = min(MAXLOOP, j - i - TURN - 3)
            for n1 in range(0, min(maxu, UP[i + 1]) + 1):
                p = i + 1 + n1
                for n2 in range(0, min(maxu - n1, DN[j - 1]) + 1):
                    q = j - 1 - n2
                    t2 = ptype[p, q]
                    if n1 + n2 == 0:
                        allowed = t2 != 0
                    else:
                        allowed = closes != 0 and (CLOSES >> t2) & 1 != 0
                    e = E.interior_energy_of_types(T, S, i, j, p, q, t, t2)
                    if n1 + n2 == 0:
                        e += SS[i] + SS[p] + SS[q] + SS[j]
                    if allowed and e + V[p, q] == target:
                        stack[top, 0] = 0
                        stack[top, 1] = p
                        stack[top, 2] = q
                        top += 1
                        found = True
                        break
                if found:
                    break
            if found or not closes:
                continue
            rest = target - E.multi_closing_of_type(T, S, i, j, t)
            for k in range(i + TURN + 3, j - TURN - 1):
                if np.int64(WM[i + 1, k - 1]) + WM[k, j - 1] == rest:
                    stack[top, 0] = 1
                    stack[top, 1] = i + 1
                    stack[top, 2] = k - 1
                    stack[top + 1, 0] = 1
                    stack[top + 1, 1] = k
                    stack[top + 1, 2] = j - 1
                    top += 2
                    break
        else:
            target = WM[i, j]
            while j - 1 > i and UP[j] > 0 and WM[i, j - 1] + ml_base == target:
                j -= 1
            while i + 1 < j and UP[i] > 0 and WM[i + 1, j] + ml_base == target:
                i += 1
            if V[i, j] < HALF_INF and V[i, j] + E.multi_stem_of_type(T, S, i, j, ptype[i, j]) == target:
                stack[top, 0] = 0
                stack[top, 1] = i
                stack[top, 2] = j
                top += 1
                continue
            for u in range(i + TURN + 1, j - TURN - 1):
                if np.int64(WM[i, u]) + WM[u + 1, j] == target:
                    stack[top, 0] = 1
                    stack[top, 1] = i
                    stack[top, 2] = u
                    stack[top + 1, 0] = 1
                    stack[top + 1, 1] = u + 1
                    stack[top + 1, 2] = j
                    top += 2
                    break
    return pt


@njit(cache=True, nogil=True)
def free_runs(n):
    """UP, DN, SS and the span of a sequence of n nt without hard constraints, SHAPE data or a span limit (see
    :func:`traceback`)."""
    UP = np.zeros(n + 2, dtype=np.int64)
    DN = np.zeros(n + 2, dtype=np.int64)
    for i in range(1, n + 1):
        UP[i] = n - i + 1
        DN[i] = i
    return UP, DN, np.zeros(n + 2, dtype=np.int64), np.int64(n)


@njit(cache=True, nogil=True)
def dot_bracket(pt, n):
    """The dot-bracket bytes of pair table ``pt`` (1-based, 0 unpaired) of n nt; the GPU engine's host traceback
    uses it too."""
    out = np.full(n, 46, dtype=np.uint8)      # '.'
    for i in range(1, n + 1):
        if pt[i] > i:
            out[i - 1] = 40                   # '('
            out[pt[i] - 1] = 41               # ')'
    return out


@njit(cache=True, nogil=True)
def fold_codes_in(T, S, work32, work8):
    """MFE (dcal/mol) and dot-bracket bytes for padded codes S, the matrices in the given workspace."""
    n = S.shape[0] - 2
    W, V, WM, WM1T, ptype, UP, DN, SS, span = _fill(T, S, n, work32, work8, np.zeros(0, dtype=np.int8), False,
                                                    np.zeros(0, dtype=np.int32))
    pt = traceback(T, S, n, W, V, WM, ptype, UP, DN, SS, span)
    return W[n], dot_bracket(pt, n)


@njit(cache=True, nogil=True)
def fold_codes(T, S):
    """MFE (dcal/mol) and dot-bracket bytes for padded codes S; the whole fold without the GIL."""
    a, b = workspace_sizes(S.shape[0] - 2)
    return fold_codes_in(T, S, np.empty(a, dtype=np.int32), np.empty(b, dtype=np.int8))


_local = threading.local()

# Sequences are folded in groups, one Numba call per group, so that the Python work around a call
# (dispatch and the thread pool's futures, under the GIL) is shared by many short sequences. The batch is
# encoded once before and decoded once after, so a group's call only names a range of it. A group closes
# when its sequences' n² reach GROUP_CELLS (about 40 sequences of 68 nt, one of 450 nt or more).
GROUP_CELLS = 200_000


def tables_copy(tables):
    """A copy of the energy tables whose arrays are new (read-only) arrays."""
    copies = []
    for value in tables:
        if isinstance(value, np.ndarray):
            value = value.copy()
            value.setflags(write=False)
        copies.append(value)
    return type(tables)(*copies)


def _thread_tables(tables):
    """This thread's own copy of the tables: Numba counts references to arrays with atomic operations on
    the array's header, and with one copy for all threads those cache lines bounce between the cores."""
    mine = getattr(_local, "tables", None)
    if mine is None or mine[0] is not tables:
        mine = (tables, tables_copy(tables))
        _local.tables = mine
    return mine[1]


@njit(cache=True, nogil=True)
def fold_range(T, codes, starts, lo, hi, work32, work8, energies, out, hc, enforce, shape):
    """Fold sequences lo .. hi-1 of an encoded batch: sequence k's padded codes are
    ``codes[starts[k]:starts[k+1]]``; its MFE goes to ``energies[k]`` and its dot-bracket to the same
    positions of ``out`` as its nucleotides in ``codes``. The workspaces hold ``workspace_sizes`` of the
    longest. Groups of one batch write disjoint parts of ``energies`` and ``out``, from any thread.
    ``hc`` and ``shape`` (empty for none) are laid out as ``codes``: each position's hard-constraint code
    and SHAPE stacking term (see :func:`_fill`), ``enforce`` RNAfold's --enforceConstraint.

    Each sequence is :func:`fold_codes_in`'s steps, called here directly and its structure copied with a loop:
    on a cold cache Numba compiles (and optimizes again) every caller of the fill and the traceback, so one
    caller less and no slice assignment's shape check are seconds less of a first run's compile."""
    for k in range(lo, hi):
        S = codes[starts[k]:starts[k + 1]]
        n = S.shape[0] - 2
        if n > 0:
            H = hc[starts[k]:starts[k + 1]] if hc.shape[0] > 0 else hc[0:0]
            SH = shape[starts[k]:starts[k + 1]] if shape.shape[0] > 0 else shape[0:0]
            W, V, WM, WM1T, ptype, UP, DN, SS, span = _fill(T, S, n, work32, work8, H, enforce, SH)
            db = dot_bracket(traceback(T, S, n, W, V, WM, ptype, UP, DN, SS, span), n)
            energies[k] = W[n]
            a = starts[k] + 1
            for p in range(n):
                out[a + p] = db[p]


class _Group:
    """Positions lo .. hi-1 of the longest-first order, folded together (one task of map_longest_first's
    pool, in that order); ``len()`` is their nucleotide count."""

    __slots__ = ("hi", "lo", "longest", "size")

    def __init__(self, lo, hi, longest, size):
        self.lo, self.hi, self.longest, self.size = lo, hi, longest, size

    def __len__(self):
        return self.size


def _groups(lengths: list[int], threads: int) -> list[_Group]:
    """Groups over ``lengths`` (already longest first)."""
    # keep at least four groups per thread where there are enough sequences, for the balance at the end
    most = max(1, -(-len(lengths) // (4 * max(1, threads))))
    groups, lo, cells, size = [], 0, 0, 0
    for k, n in enumerate(lengths):
        cells += n * n
        size += n
        if cells >= GROUP_CELLS or k + 1 - lo >= most:
            groups.append(_Group(lo, k + 1, lengths[lo], size))
            lo, cells, size = k + 1, 0, 0
    if lo < len(lengths):
        groups.append(_Group(lo, len(lengths), lengths[lo], size))
    return groups


class _Workspace:
    """One thread's matrices, kept from one group to the next and grown to the longest sequence seen."""

    __slots__ = ("work8", "work32")

    def __init__(self):
        self.drop()

    def fit(self, n: int) -> None:
        a, b = workspace_sizes(n)
        if self.work32.size < a:
            self.work32 = np.empty(a, dtype=np.int32)
        if self.work8.size < b:
            self.work8 = np.empty(b, dtype=np.int8)

    def drop(self) -> None:
        self.work32 = np.empty(0, dtype=np.int32)
        self.work8 = np.empty(0, dtype=np.int8)


# Workspaces up to this size are kept by their thread from one group to the next and not counted against
# the memory budget (at most threads × this much); larger ones are counted, and freed after their group.
SMALL_WORKSPACE = 64 << 20


def workspace_bytes(n: int) -> int:
    a, b = workspace_sizes(n)
    return 4 * a + b


class _Memory:
    """The workspaces of long sequences through a MemoryGate: a thread takes one only while all the large
    ones in use fit the budget together (see MemoryGate), and gives it back after its group, so that 16
    threads on 16 long transcripts do not take 16 × 13·n² bytes at once. The calls of one relay (calls that
    overlap, :class:`.batch.Relay`) share one gate."""

    def __init__(self, budget: int):
        relay = batch.current_relay()
        self.gate = relay.gate(budget) if relay is not None else batch.MemoryGate(budget)

    def take(self, work: _Workspace, n: int) -> int:
        need = workspace_bytes(n)
        if need <= SMALL_WORKSPACE:
            work.fit(n)
            return 0
        work.drop()                                   # a small workspace kept from before is not needed now
        self.gate.take(need)
        work.fit(n)
        return need

    def give_back(self, work: _Workspace, taken: int) -> None:
        if taken:
            work.drop()
            self.gate.give_back(taken)


def signatures(tables) -> dict:
    """The argument types the fold (:func:`fold_range` on each thread's copy of ``tables``) compiles
    ``fold_range``, ``_fill`` and ``traceback`` for."""
    import numba

    def array(dtype, ndim=1):
        return numba.typeof(np.zeros((1,) * ndim, dtype=dtype))

    T = numba.typeof(tables_copy(tables))
    i8, i32, i64, u8, n = array(np.int8), array(np.int32), array(np.int64), array(np.uint8), numba.int64
    b = numba.boolean
    return {"fold_range": (T, i8, i64, n, n, i32, i8, i64, u8, i8, b, i32),
            "_fill": (T, i8, n, i32, i8, i8, b, i32),
            "traceback": (T, i8, n, i64, array(np.int32, 2), array(np.int32, 2), array(np.int8, 2), i64, i64, i64,
                          n)}


def compile_alone(name: str) -> None:
    """Compile ``name`` (``_fill`` or ``traceback``) for the fold into Numba's cache (a child process's work,
    see :func:`compile_ahead`)."""
    globals()[name].compile(signatures(Model.from_options({}).tables())[name])


def compiled() -> bool:
    """Whether Numba's cache holds the fold's compiled code on this machine (:func:`fold_range` for the
    argument types of the default model's tables; True where that cannot be told)."""
    return ahead.cached(fold_range, signatures(Model.from_options({}).tables())["fold_range"])


_AHEAD = ahead.Once()


def compile_ahead(tables) -> None:
    """Once per process, before the first fold: where Numba's cache holds none of the fold's compiled code and
    this process may use 2 cores or more (whatever its fold's threads: a one-time compile on a fresh machine),
    compile the fill in a child process while this one compiles the traceback
    (:func:`.ahead.compile_in_two`); the first fold then compiles only what joins them
    (``benchmarks/cold_compile.py`` times a cold first fold with and without it). The child takes the fill, the
    larger piece, because ``rnapipe fold`` compiles its reading and writing passes in this process meanwhile
    (:mod:`rnapipe.pipeline.warm`)."""
    def run() -> None:
        if config.default_threads() < 2:
            return
        sigs = signatures(tables)
        if any(ahead.cached(f, sigs[f.__name__]) for f in (fold_range, _fill, traceback)):
            return                                     # loaded from the cache, or one piece left to compile
        ahead.compile_in_two(lambda: traceback.compile(sigs["traceback"]),
                             "from rnapipe.cpu.zuker import compile_alone\ncompile_alone('_fill')")

    _AHEAD.run(run)


def fold_one(sequence: str, tables) -> tuple[int, str]:
    """One sequence: (MFE in dcal/mol, dot-bracket)."""
    if not sequence:
        return 0, ""
    mfe, db = fold_codes(tables, E.padded_codes(sequence))
    return int(mfe), db.tobytes().decode("ascii")


def _padded(texts: list[str], table: np.ndarray, pad: str) -> np.ndarray:
    """``table`` of the bytes of every text, each with one ``pad`` before and after, end to end (laid out as
    fold_batch lays out the codes)."""
    joined = pad + (pad + pad).join(texts) + pad
    return table[np.frombuffer(joined.encode("ascii"), dtype=np.uint8)]


def _budget(options: dict | None, threads: int) -> int:
    """Bytes the large workspaces of one fold_batch may take together: the host budget less what the small
    workspaces may keep."""
    if options and options.get("memory_budget") is not None:
        return int(options["memory_budget"])
    return max(0, host_budget() - threads * SMALL_WORKSPACE)


def fold_batch(sequences: list[str], variant: str, threads: int, options: dict,
               progress: Callable[[int], None] | None = None, constraints: list[str] | None = None,
               shape: list[np.ndarray] | None = None) -> list[tuple[int, str]]:
    """Fold every sequence (engine interface, see rnapipe.engines); options: temperature, dangles, params,
    enforce_constraint (and ``memory_budget``, bytes, for tests). ``constraints``: RNAfold's constraint line
    of each sequence (checked: rnapipe.constraints), ``shape``: the SHAPE stacking pseudo-energies of each
    (int32 dcal/mol per nucleotide, rnapipe.constraints.deigan); None for none. Threads fold long sequences
    only as many at once as fit in memory together."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}")
    model = Model.from_options(options)
    tables = model.tables()
    compile_ahead(tables)
    order = sorted(range(len(sequences)), key=lambda k: -len(sequences[k]))
    ordered = [sequences[k] for k in order]
    # "N" codes 0, the padding value: "N" + "NN".join(...) + "N" is every padded sequence end to end
    codes = encode("N" + "NN".join(ordered) + "N")
    starts = np.zeros(len(ordered) + 1, dtype=np.int64)
    np.cumsum([len(s) + 2 for s in ordered], out=starts[1:])
    hc = NO_DATA8
    if constraints is not None:
        hc = _padded([constraints[k] for k in order], HC_CODES, ".")
    sh = NO_DATA32
    if shape is not None:
        sh = np.zeros(codes.shape[0], dtype=np.int32)
        for pos, k in enumerate(order):
            sh[starts[pos] + 1:starts[pos + 1] - 1] = shape[k]
    enforce = bool(model.enforce_constraint)
    energies = np.zeros(len(ordered), dtype=np.int64)
    out = np.full(codes.shape[0], 46, dtype=np.uint8)
    groups = _groups([len(s) for s in ordered], threads)
    # one workspace per thread of this call (dropped with it, so a long sequence's matrices do not outlive it)
    workspaces: dict[int, _Workspace] = {}
    # with a relay, a thread may keep a small workspace for each of two overlapping calls
    memory = _Memory(_budget(options, threads * (2 if batch.current_relay() is not None else 1)))
    lock = threading.Lock()
    done = [0, 0]                      # sequences folded, sequences reported

    def run(group):
        work = workspaces.get(threading.get_ident())
        if work is None:
            work = workspaces[threading.get_ident()] = _Workspace()
        taken = memory.take(work, group.longest)
        try:
            fold_range(_thread_tables(tables), codes, starts, group.lo, group.hi, work.work32, work.work8,
                       energies, out, hc, enforce, sh)
        finally:
            memory.give_back(work, taken)
        with lock:
            done[0] += group.hi - group.lo

    def report(_):
        # map_longest_first reports finished groups from the calling thread; pass on the sequence count
        with lock:
            delta = done[0] - done[1]
            done[1] = done[0]
        if delta and progress is not None:
            progress(delta)

    map_longest_first(run, groups, threads, report, grouped=True)
    text = out.tobytes().decode("ascii")
    st, en = starts.tolist(), energies.tolist()
    results: list = [None] * len(sequences)
    for pos, k in enumerate(order):
        results[k] = (en[pos], text[st[pos] + 1:st[pos + 1] - 1])
    return results
