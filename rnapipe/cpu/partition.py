"""McCaskill's partition function on CPU and the base-pair probabilities, as ViennaRNA's ``fold_compound.pf()``
and ``bpp()`` compute them with default model details (Turner 2004, ``-d2`` or ``-d0``, any temperature, a
parameter file), in Numba.

Boltzmann weights (:class:`ExpTables`, :func:`exp_tables`) are ViennaRNA's ``get_scaled_exp_params``
(params/params.c) with its default ``pf_smooth``: every loop term is ``exp(-dG(T)·10/kT)`` of the *unrounded*
rescaled energy ``dG(T) = dH - (dH - dG37)·T/T37`` (the MFE engine's tables are truncated to integers, so they
are not reused as weights); dangles and the exterior and multiloop mismatches of ``-d2`` go through ViennaRNA's
``SMOOTH`` (weight 1 for a destabilising term, a smooth step near 0); loops beyond 30 nt are extrapolated with
``lxc·log(u/30)`` unrounded; ``kT = (T + 273.15)·1.98717`` cal/mol. The pair types, sequence codes, special
hairpins and their matching are rnapipe.energy's and the MFE engine's (N never pairs; it is code 0 in the
mismatch and dangle tables, as in ViennaRNA).

Matrices (positions 1-based, float64, each value *scaled*: see Scaling below), named as in McCaskill (1990)
and ViennaRNA's ``q, qb, qm, qm1``:

* ``QB[i, j]``: i·j pair; the hairpin, the stacks, bulges and interior loops (at most 30 unpaired) on an inner
  pair p·q, and the multiloops ``Mc(i, j) · sum_k QM[i+1, k-1] · QM1[k, j-1]`` (Mc: ML closing, the closing
  pair as a branch seen from inside).
* ``QM1[i, j]``: one branch starting with the pair i·l, l <= j, then j - l unpaired:
  ``QM1[i, j] = QM1[i, j-1] · b + QB[i, j] · stem(i, j)`` (b: the ML base weight).
* ``QM[i, j]``: a multiloop segment with at least one branch:
  ``sum_k (QM[i, k-1] + b^(k-i)) · QM1[k, j]``; and QI (below) for the interior loops.
* the exterior loop as prefix and suffix vectors: ``Q5[j]`` (ViennaRNA's ``q[1, j]``) and ``Q3[i]``
  (``q[i, n]``); ``Z = Q5[n]``.

The outside pass (:func:`_outside`) gathers, cell by cell from the outermost inwards (i ascending, j
descending), the outside weights QBout, QMout and QM1out of the same recursions read backwards (one rule per
term above), and ``P[i, j] = QB[i, j] · QBout[i, j] / Z``: every pair's probability summed over the very
terms the inside pass adds, so the probabilities are ViennaRNA's ``bpp()`` to rounding.

Storage: matrices of (n+2)² float64 that hold one quantity in the upper triangle and another, or the same one
transposed, in the lower, so that every sum over k reads two contiguous rows:

* ``A``: QB[i, j] at [i, j], QBout[i, j] at [j, i];
* ``M``, ``M1``, ``MO``, ``X``: QM, QM1, QMout and ``X = QBout · Mc`` at [i, j] and again at [j, i];
* ``O1``: QM1out[i, j] at [i, j], the probability P[i, j] at [j, i];
* ``QI``: QB[i, j] times the pair's mismatch as the inner pair of a generic interior loop (u1, u2 >= 2), then
  (outside) QBout[i, j] times its mismatch as the closing pair: the generic loops, most of an interior-loop
  sweep, are one contiguous sum per row.

Seven matrices, 56·(n+2)² bytes (504 MB at 3,000 nt; :func:`bytes_needed`). Both passes fill rows in blocks
of 16 with j outermost inside a block (the MFE engine's order), so each row the multiloop sweeps read is read
by 16 rows while in cache, and every O(n) sweep runs over row slices from index 0, which LLVM vectorises.

Derived values per sequence (:func:`fold_sparse`): the pairs above a threshold, unpaired probabilities, the
frequency of the MFE structure, the ensemble diversity and the centroid (ViennaRNA's ``mean_bp_distance`` and
``centroid``), and the MEA structure with gamma 1 (:func:`mea`, ViennaRNA's ``MEA``, ties as it breaks them).

Scaling. Every weight is multiplied by ``exp(-lam[k])`` for each nucleotide k it covers (``_scales``: the
factors of the stretches a loop's nucleotides form, SL and SR, and the unpaired runs of multiloops and the
exterior loop by recurrence), so a cell of segment a..b holds ``Z_ab · exp(-(lam[a] + ... + lam[b]))`` and
the ensemble free energy is ``-kT (ln Z_scaled + sum lam)`` whatever lam is. Two choices of lam, in turn:

1. ViennaRNA's (``exp_params_rescale``, :func:`uniform_scales`): lam[k] = -1.07 · MFE / (n · kT) for every k,
   the MFE from rnapipe.cpu.zuker. The scaled Z is ``exp(-(G - 1.07 · MFE)/kT)``: G, the ensemble free energy,
   is below the MFE by a few kcal/mol per 100 nt, so this is near 1 for one sequence of any length. A segment
   of span d holds ``exp(-(G_ab - 1.07 · MFE · d/n)/kT)``: it overflows only where a segment is about 437
   kcal/mol (709 kT at 37 °C) more stable than its length's share of the whole MFE, and its weights underflow
   (losing terms that matter) only where a long stretch is that much less stable: a very stable domain beside a
   long unstructured one.
2. The MFE structure's (:func:`structure_scales`): each loop's energy times 1.07 shared out over its own
   nucleotides, 0 for the exterior loop's unpaired ones. The cell of a segment that the MFE structure closes
   holds ``exp(-(G_ab - 1.07 · E_ab)/kT)`` for its own share E_ab, near 1 as the whole Z is, whatever the rest
   of the sequence is, and an unstructured stretch holds about 1: the case that defeats (1) is none here.

Each fold checks the scaled values rather than trusting these bounds: the fill stops at the first cell above
1e280; a Z below 1e-280, or 5' and 3' sums of the exterior loop (Q5[n] and Q3[1], the same Z summed in two
orders) that differ by more than 1e-9 relatively, mean lost terms. A fold that fails with (1) starts again with
(2), then with (2) plus a uniform correction (the one that brings the cell that overflowed to 1e100, or Z to
1e-100; where Z is lost altogether, steps of 700/n, 1400/n, ... per nucleotide); after 24 tries, or where a
probability of the outside pass is not a number in [0, 1 + 1e-9], :func:`fold_scaled` raises
``FloatingPointError`` rather than return numbers it cannot vouch for. A term lost to underflow in a fold that
passes is below 1e-308 times a cell of at most 1e280, 1e-28 in scaled units, where the scaled Z of either
choice is near 1.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

import numpy as np
from numba import njit

from .. import config
from .. import energy as E
from .. import params as P
from ..model import Model
from . import ahead, zuker
from .batch import host_budget, map_longest_first

K0 = 273.15
GASCONST = 1.98717                  # cal/(mol K), ViennaRNA's
SFACT = 1.07                        # ViennaRNA's md.sfact
MAXLOOP = E.MAXLOOP
TURN = E.MIN_HAIRPIN
BIG = 1e280                         # a scaled cell above this restarts the fold with a larger scale
SMALL = 1e-280                      # a scaled Z below this restarts it with a smaller one
TRIES = 24
THRESHOLD = 1e-5                    # the default lowest probability of the sparse pair lists
ROWS = 16                           # rows filled together (see _inside)

# ExpTables.scalars
ML_BASE, ML_CLOSING, ML_INTERN, TERM_AU, KT, LXC = range(6)


class ExpTables(NamedTuple):
    """Boltzmann weights at one temperature and dangle model, ViennaRNA's ``vrna_exp_param_t`` (float64, the
    shapes and indices of rnapipe.params' tables; ``ninio[k]`` the weight of an asymmetry of k)."""

    stack: np.ndarray
    hairpin: np.ndarray
    bulge: np.ndarray
    interior: np.ndarray
    ninio: np.ndarray
    mismatch_hairpin: np.ndarray
    mismatch_interior: np.ndarray
    mismatch_interior_1n: np.ndarray
    mismatch_interior_23: np.ndarray
    mismatch_multi: np.ndarray
    mismatch_exterior: np.ndarray
    dangle5: np.ndarray
    dangle3: np.ndarray
    int11: np.ndarray
    int21: np.ndarray
    int22: np.ndarray
    tetra_seq: np.ndarray
    tetra: np.ndarray
    tri_seq: np.ndarray
    tri: np.ndarray
    hexa_seq: np.ndarray
    hexa: np.ndarray
    scalars: np.ndarray


def _smooth(x):
    """ViennaRNA's ``SMOOTH`` (params.c) of x = -dG in dcal/mol: 0 below -12.28, x above 8.66, a smooth step
    between."""
    y = x / 10.0
    mid = 10.0 * 0.38490018 * (np.sin(y - 0.34242663) + 1) * (np.sin(y - 0.34242663) + 1)
    return np.where(y < -1.2283697, 0.0, np.where(y > 0.8660254, x, mid))


def _frozen(a) -> np.ndarray:
    out = np.ascontiguousarray(a, dtype=np.float64)
    out.setflags(write=False)
    return out


def make_exp_tables(ps: P.ParameterSet, temperature: float, dangles: int) -> ExpTables:
    """Boltzmann weights of a raw parameter set as ViennaRNA's ``get_scaled_exp_params`` makes them (default
    model details: ``pf_smooth`` on, standard salt, betaScale 1)."""
    tt = (temperature + K0) / P.T_MEASURE
    kt = (temperature + K0) * GASCONST

    def dg(key):
        h = ps.dh[key].astype(np.float64)
        return h - (h - ps.dg[key].astype(np.float64)) * tt

    def bf(x):
        return np.exp(-np.asarray(x, dtype=np.float64) * 10.0 / kt)

    def bf_smooth(key):
        if not dangles:
            return np.ones(ps.dg[key].shape)
        return np.exp(_smooth(-dg(key)) * 10.0 / kt)

    def scalar(name):
        g, h = ps.scalars[name]
        return h - (h - float(g)) * tt

    def loops(name, size):
        seqs = np.zeros((max(1, len(ps.loops[name])), size), dtype=np.int8)
        weights = np.zeros(max(1, len(ps.loops[name])))
        if not ps.loops[name]:
            seqs[:] = -1
        for k, (seq, (g, h)) in enumerate(ps.loops[name].items()):
            seqs[k] = ["NACGU".index(c) for c in seq]
            weights[k] = bf(h - (h - float(g)) * tt)
        seqs.setflags(write=False)
        return seqs, _frozen(weights)

    ninio = np.array([bf(min(float(ps.max_ninio), k * scalar("ninio"))) for k in range(MAXLOOP + 1)])
    tetra_seq, tetra = loops("Tetraloops", 6)
    tri_seq, tri = loops("Triloops", 5)
    hexa_seq, hexa = loops("Hexaloops", 8)
    scalars = np.array([bf(scalar("ml_base")), bf(scalar("ml_closing")), bf(scalar("ml_intern")),
                        bf(scalar("terminal_au")), kt, ps.lxc37 * tt])
    return ExpTables(
        stack=_frozen(bf(dg("stack"))), hairpin=_frozen(bf(dg("hairpin"))), bulge=_frozen(bf(dg("bulge"))),
        interior=_frozen(bf(dg("interior"))), ninio=_frozen(ninio),
        mismatch_hairpin=_frozen(bf(dg("mismatch_hairpin"))),
        mismatch_interior=_frozen(bf(dg("mismatch_interior"))),
        mismatch_interior_1n=_frozen(bf(dg("mismatch_interior_1n"))),
        mismatch_interior_23=_frozen(bf(dg("mismatch_interior_23"))),
        mismatch_multi=_frozen(bf_smooth("mismatch_multi")),
        mismatch_exterior=_frozen(bf_smooth("mismatch_exterior")),
        dangle5=_frozen(bf_smooth("dangle5")), dangle3=_frozen(bf_smooth("dangle3")),
        int11=_frozen(bf(dg("int11"))), int21=_frozen(bf(dg("int21"))), int22=_frozen(bf(dg("int22"))),
        tetra_seq=tetra_seq, tetra=tetra, tri_seq=tri_seq, tri=tri, hexa_seq=hexa_seq, hexa=hexa,
        scalars=_frozen(scalars))


def _check_model(model: Model) -> None:
    if model.pairing() or model.enforce_constraint:
        raise ValueError("the partition function takes RNAfold's default pairing rules only (no no_lp, no_gu, "
                         "no_closing_gu, max_bp_span or enforce_constraint)")


@lru_cache(maxsize=32)
def _cached_exp_tables(path, temperature: float, dangles: int) -> ExpTables:
    return make_exp_tables(P.load(path), temperature, dangles)


def exp_tables(model: Model) -> ExpTables:
    """The Boltzmann weights of ``model`` (cached)."""
    _check_model(model)
    key = None if model.params is None else str(model.params)
    return _cached_exp_tables(key, model.temperature, model.dangles)


# ---------------------------------------------------------------------------------------------------------
# Loop weights: ViennaRNA's exp_E_* (eval/exp_eval_*.c) as per-fold lookup tables; the interior loops
# (vrna_exp_E_internal's cases) are written out in _inside and _outside. No scale factors here.

@njit(cache=True, nogil=True, inline="always")
def _stem(X, mismatch, t, n5d, n3d):
    """A helix end of type t with neighbours n5d (5') and n3d (3'), -1 for none: the mismatch when both are
    there, else a dangle; terminal AU/GU (``vrna_exp_E_exterior_stem``; ``-d0``'s tables are all 1)."""
    if n5d >= 0 and n3d >= 0:
        e = mismatch[t, n5d, n3d]
    elif n5d >= 0:
        e = X.dangle5[t, n5d]
    elif n3d >= 0:
        e = X.dangle3[t, n3d]
    else:
        e = 1.0
    if t > 2:
        e *= X.scalars[TERM_AU]
    return e


# ---------------------------------------------------------------------------------------------------------
# Inside and outside

@njit(cache=True, nogil=True)
def _ptypes(S, n):
    N = n + 2
    ptype = np.zeros((N, N), dtype=np.int8)
    for i in range(1, n + 1):
        for j in range(i + TURN + 1, n + 1):
            ptype[i, j] = E.PAIR_TYPE[S[i], S[j]]
    return ptype


@njit(cache=True, nogil=True)
def _scales(lam, n):
    """The scale tables of per-nucleotide log-scales ``lam`` (lam[k] for nucleotide k; a weight covering the
    nucleotides U is multiplied by exp(-sum of lam over U)): SL[i, u] = the factor of the stretch i .. i+u and
    SR[j, u] = that of j-u .. j (u = 0 .. MAXLOOP + 1, nucleotides past either end count 0); 0 where it
    underflows."""
    L = np.zeros(n + 2)
    for k in range(1, n + 1):
        L[k] = L[k - 1] + lam[k]
    L[n + 1] = L[n]
    SL = np.zeros((n + 2, MAXLOOP + 2))
    SR = np.zeros((n + 2, MAXLOOP + 2))
    for i in range(0, n + 2):
        for u in range(MAXLOOP + 2):
            x = -(L[min(i + u, n + 1)] - L[max(i - 1, 0)])
            SL[i, u] = math.exp(x) if x > -700.0 else 0.0
            y = -(L[i] - L[max(i - u - 1, 0)])
            SR[i, u] = math.exp(y) if y > -700.0 else 0.0
    return L, SL, SR


@njit(cache=True, nogil=True, inline="always")
def _stretch(L, a, b):
    """The scale factor of the stretch a .. b."""
    x = -(L[b] - L[a - 1])
    return math.exp(x) if x > -700.0 else 0.0


NONE = 5                            # the neighbour code of "no neighbour" in the stem tables


@njit(cache=True, nogil=True)
def _stem_tables(X):
    """The helix-end weights as lookups: EXT[t, a, b], a helix end in the exterior loop
    (``vrna_exp_E_exterior_stem``), and MLS[t, a, b], a multiloop branch (``vrna_exp_E_multibranch_stem``: ML
    intern too), for 5' neighbour a and 3' neighbour b (NONE past either end); CLO[t, a, b], the multiloop closed
    by a pair of type t (ML closing, and the closing pair as a branch seen from inside: type of j·i, neighbours
    a = S[j-1] and b = S[i+1])."""
    EXT = np.zeros((8, 6, 6))
    MLS = np.zeros((8, 6, 6))
    CLO = np.zeros((8, 5, 5))
    for t in range(8):
        for a in range(6):
            for b in range(6):
                n5 = a if a < NONE else -1
                n3 = b if b < NONE else -1
                EXT[t, a, b] = _stem(X, X.mismatch_exterior, t, n5, n3)
                MLS[t, a, b] = X.scalars[ML_INTERN] * _stem(X, X.mismatch_multi, t, n5, n3)
                if a < NONE and b < NONE:
                    CLO[t, a, b] = (X.scalars[ML_CLOSING] * X.scalars[ML_INTERN]
                                    * _stem(X, X.mismatch_multi, E.RTYPE[t], a, b))
    return EXT, MLS, CLO


@njit(cache=True, nogil=True)
def _neighbours(S, n):
    """S5[i] = S[i-1] and S3[j] = S[j+1] inside the sequence, NONE past its ends."""
    S5 = np.full(n + 2, NONE, dtype=np.int64)
    S3 = np.full(n + 2, NONE, dtype=np.int64)
    for k in range(2, n + 1):
        S5[k] = S[k - 1]
    for k in range(1, n):
        S3[k] = S[k + 1]
    return S5, S3


@njit(cache=True, nogil=True)
def _hairpin_tables(X, S, n):
    """For the hairpins (``exp_E_Hairpin``): HP[u], the size term of a hairpin of u unpaired (extrapolated with
    lxc·log(u/30) beyond 30), and SPEC[i, u]: the whole weight of a special triloop (u = 3), tetraloop (4) or
    hexaloop (6) closed at i, -1 where none; other triloops get terminal AU/GU, other loops the hairpin
    mismatch (in _inside)."""
    HP = np.zeros(n + 1)
    kt = X.scalars[KT]
    for u in range(n + 1):
        if u <= MAXLOOP:
            HP[u] = X.hairpin[u]
        else:
            HP[u] = X.hairpin[MAXLOOP] * math.exp(-(X.scalars[LXC] * math.log(u / 30.0)) * 10.0 / kt)
    SPEC = np.empty((n + 2, 7))
    special_hairpins(X, S, n, SPEC)
    return HP, SPEC


@njit(cache=True, nogil=True)
def special_hairpins(X, S, n, SPEC):
    """_hairpin_tables' SPEC of the padded codes S (n nt) into ``SPEC`` ((n+2) x 7)."""
    SPEC[:] = -1.0
    for i in range(1, n + 1):
        if i + 4 <= n:
            k = E.special_hairpin(S, i, X.tri_seq)
            if k >= 0:
                SPEC[i, 3] = X.tri[k]
        if i + 5 <= n:
            k = E.special_hairpin(S, i, X.tetra_seq)
            if k >= 0:
                SPEC[i, 4] = X.tetra[k]
        if i + 7 <= n:
            k = E.special_hairpin(S, i, X.hexa_seq)
            if k >= 0:
                SPEC[i, 6] = X.hexa[k]


FAST = {"reassoc", "contract", "nsz", "arcp"}     # sums in any order (vectorised); inf and NaN kept


@njit(cache=True, nogil=True)
def _terminal_au(X):
    """AU[t]: the terminal AU/GU weight of a pair of type t (1 for CG and GC and no pair)."""
    AU = np.ones(8)
    for t in range(3, 8):
        AU[t] = X.scalars[TERM_AU]
    return AU


@njit(cache=True, nogil=True)
def _generic_weights(X):
    """GS[u1, u2]: the size and Ninio terms of a generic interior loop with u1 and u2 unpaired (both
    >= 2, not 2x2, 2x3 or 3x2, which have their own tables, u1 + u2 <= 30), 0 elsewhere; its mismatches are
    the closing pair's and the inner pair's (QBI)."""
    GS = np.zeros((MAXLOOP + 1, MAXLOOP + 1))
    for u1 in range(2, MAXLOOP + 1):
        for u2 in range(2, MAXLOOP + 1 - u1):
            if (u1 == 2 and u2 <= 3) or (u1 == 3 and u2 == 2):
                continue
            GS[u1, u2] = X.interior[u1 + u2] * X.ninio[abs(u1 - u2)]
    return GS


@njit(cache=True, nogil=True, fastmath=FAST)
def _inside(X, S, n, ptype, L, SL, SR, A, M, M1, QI):
    """Fill QB (A's upper triangle), QM (M) and QM1 (M1), QI[p, q] = QB[p, q] times the inner pair's generic
    interior mismatch (upper triangle), and the exterior vectors; returns Q5, Q3 and Z, or stops early (Q5, Q3
    empty) at the first cell above BIG, returning it and its span.

    The interior loops of each pair: the generic ones (GS, the bulk: u1, u2 >= 2) as one sum per u1 over a
    row of QI, the others (stack, bulges, 1xn, the 2x2, 2x3 and 3x2 tables) one by one."""
    RT = E.RTYPE
    mmI = X.mismatch_interior
    stack, bulge, interior, ninio = X.stack, X.bulge, X.interior, X.ninio
    int11, int21, int22, mm1n, mm23 = X.int11, X.int21, X.int22, X.mismatch_interior_1n, X.mismatch_interior_23
    au = _terminal_au(X)
    mlb = X.scalars[ML_BASE]
    GS = _generic_weights(X)
    GR = np.ascontiguousarray(GS[:, ::-1])          # the sweeps run with q ascending, u2 descending
    SRR = np.ascontiguousarray(SR[:, ::-1])
    EXT, MLS, CLO = _stem_tables(X)
    S5, S3 = _neighbours(S, n)
    HP, SPEC = _hairpin_tables(X, S, n)
    mmH = X.mismatch_hairpin
    # Rows in blocks of ROWS, j outermost within a block and i downwards within a j (the MFE engine's order,
    # the same dependencies as row by row): the row of M1 that the multiloop sweeps read at column j is read
    # by ROWS rows while it is in cache. BB[r, k]: ML base weight and scale of the unpaired stretch i .. k-1
    # for the block's row i = i0 - r.
    BB = np.zeros((ROWS, n + 2))
    for i0 in range(n, 0, -ROWS):
        ilo = max(1, i0 - ROWS + 1)
        for i in range(i0, ilo - 1, -1):
            B = BB[i0 - i]
            B[i] = 1.0
            for k in range(i + 1, n + 1):
                B[k] = B[k - 1] * mlb * SL[k - 1, 0]
        for j in range(ilo + 1, n + 1):
            srj = SR[j]
            for i in range(min(i0, j - 1), ilo - 1, -1):
                B = BB[i0 - i]
                sli = SL[i]
                t = ptype[i, j]
                qb = 0.0
                if t:
                    u = j - i - 1                                                   # the hairpin
                    w = SPEC[i, u] if u <= 6 else -1.0
                    if w < 0.0:
                        if u == 3:
                            w = HP[3] * au[t]
                        else:
                            w = HP[u] * mmH[t, S[i + 1], S[j - 1]]
                    qb = w * _stretch(L, i, j)
                    si1 = S[i + 1]
                    sj1 = S[j - 1]
                    # generic loops (u1, u2 >= 2): one sum per u1 over a row of QI
                    acc = 0.0
                    for p in range(i + 3, min(i + MAXLOOP - 1, j - TURN - 4) + 1):
                        u1 = p - i - 1
                        q0 = max(p + TURN + 1, j - 1 - (MAXLOOP - u1))     # u2 = j-1-q0 .. 2, descending
                        rq = QI[p, q0:j - 2]
                        rg = GR[u1, MAXLOOP + 1 - (j - q0):MAXLOOP - 1]
                        rs = SRR[j, MAXLOOP + 2 - (j - q0):MAXLOOP]
                        row = 0.0
                        for m in range(rq.shape[0]):
                            row += rq[m] * rg[m] * rs[m]
                        acc += row * sli[u1]
                    qb += acc * mmI[t, si1, sj1]
                    # the others, each with its own table (vrna_exp_E_internal's cases); ptype is 0 below the
                    # diagonal and within TURN of it, so a loop that does not fit finds no inner pair
                    t2 = ptype[i + 1, j - 1]                                        # stack
                    if t2:
                        qb += stack[t, RT[t2]] * A[i + 1, j - 1] * sli[0] * srj[0]
                    w = bulge[1]                                                    # bulges of 1
                    t2 = ptype[i + 2, j - 1]
                    if t2:
                        qb += w * stack[t, RT[t2]] * A[i + 2, j - 1] * sli[1] * srj[0]
                    t2 = ptype[i + 1, j - 2]
                    if t2:
                        qb += w * stack[t, RT[t2]] * A[i + 1, j - 2] * sli[0] * srj[1]
                    for u in range(2, min(MAXLOOP, j - i - TURN - 3) + 1):          # bulges of 2 or more
                        w = bulge[u] * au[t]
                        t2 = ptype[i + 1 + u, j - 1]
                        if t2:
                            qb += w * au[t2] * A[i + 1 + u, j - 1] * sli[u] * srj[0]
                        t2 = ptype[i + 1, j - 1 - u]
                        if t2:
                            qb += w * au[t2] * A[i + 1, j - 1 - u] * sli[0] * srj[u]
                    t2 = ptype[i + 2, j - 2]                                        # 1x1
                    if t2:
                        qb += int11[t, RT[t2], si1, sj1] * A[i + 2, j - 2] * sli[1] * srj[1]
                    t2 = ptype[i + 2, j - 3]                                        # 1x2
                    if t2:
                        qb += int21[t, RT[t2], si1, S[j - 2], sj1] * A[i + 2, j - 3] * sli[1] * srj[2]
                    t2 = ptype[i + 3, j - 2]                                        # 2x1
                    if t2:
                        qb += int21[RT[t2], t, S[j - 1], si1, S[i + 2]] * A[i + 3, j - 2] * sli[2] * srj[1]
                    t2 = ptype[i + 3, j - 3]                                        # 2x2
                    if t2:
                        qb += int22[t, RT[t2], si1, S[i + 2], S[j - 2], sj1] * A[i + 3, j - 3] * sli[2] * srj[2]
                    w = interior[5] * ninio[1] * mm23[t, si1, sj1]                  # 2x3, 3x2
                    t2 = ptype[i + 3, j - 4]
                    if t2:
                        qb += w * mm23[RT[t2], S[j - 3], S[i + 2]] * A[i + 3, j - 4] * sli[2] * srj[3]
                    t2 = ptype[i + 4, j - 3]
                    if t2:
                        qb += w * mm23[RT[t2], S[j - 2], S[i + 3]] * A[i + 4, j - 3] * sli[3] * srj[2]
                    m1n = mm1n[t, si1, sj1]                                         # 1xn, nx1 (n >= 3)
                    for u in range(3, min(MAXLOOP - 1, j - i - TURN - 4) + 1):
                        w = interior[u + 1] * ninio[u - 1] * m1n
                        q = j - 1 - u
                        t2 = ptype[i + 2, q]
                        if t2:
                            qb += w * mm1n[RT[t2], S[q + 1], S[i + 1]] * A[i + 2, q] * sli[1] * srj[u]
                        p = i + 1 + u
                        t2 = ptype[p, j - 2]
                        if t2:
                            qb += w * mm1n[RT[t2], S[j - 1], S[p - 1]] * A[p, j - 2] * sli[u] * srj[1]
                    # multiloop: QM[i+1, k-1] (row i+1 of M) times QM1[k, j-1] (row j-1 of M1, transposed)
                    kk = max(i + TURN + 2, j - TURN - 2)
                    ra = M[i + 1, i + TURN + 2:kk]
                    rb = M1[j - 1, i + TURN + 3:kk + 1]
                    acc = 0.0
                    for m in range(ra.shape[0]):
                        acc += ra[m] * rb[m]
                    qb += acc * CLO[t, S[j - 1], S[i + 1]] * sli[0] * srj[0]
                    A[i, j] = qb
                    QI[i, j] = qb * mmI[RT[t], S[j + 1], S[i - 1]]
                m1 = M1[i, j - 1] * mlb * srj[0] if j - 1 > i else 0.0
                if t:
                    m1 += qb * MLS[t, S5[i], S3[j]]
                M1[i, j] = m1
                M1[j, i] = m1
                kk = max(i, j - TURN - 1)           # a negative slice bound would count from the end
                ra = M[i, i:kk]
                rb = B[i + 1:kk + 1]
                rc = M1[j, i + 1:kk + 1]
                m = M1[j, i]
                for k in range(ra.shape[0]):
                    m += (ra[k] + rb[k]) * rc[k]
                M[i, j] = m
                M[j, i] = m
                big = max(qb, m)
                if big > BIG:
                    return np.zeros(0), np.zeros(0), big, j - i + 1
    Q5 = np.zeros(n + 2)
    Q5[0] = 1.0
    for j in range(1, n + 1):
        q = Q5[j - 1] * SR[j, 0]
        for i in range(1, j - TURN):
            t = ptype[i, j]
            if t:
                q += Q5[i - 1] * A[i, j] * EXT[t, S5[i], S3[j]]
        Q5[j] = q
    Q3 = np.zeros(n + 2)
    Q3[n + 1] = 1.0
    for i in range(n, 0, -1):
        q = Q3[i + 1] * SL[i, 0]
        for j in range(i + TURN + 1, n + 1):
            t = ptype[i, j]
            if t:
                q += A[i, j] * EXT[t, S5[i], S3[j]] * Q3[j + 1]
        Q3[i] = q
    return Q5, Q3, Q5[n], n


@njit(cache=True, nogil=True, fastmath=FAST)
def _outside(X, S, n, ptype, L, SL, SR, A, M, M1, MO, XM, O1, OI, Q5, Q3):
    """The outside weights, cell by cell with i ascending and j descending (every cell that contains (i, j) is
    done before it): QMout (MO, both triangles), QM1out (O1's upper triangle), QBout (A's lower), OI = QBout
    times the pair's generic interior mismatch as a closing pair (upper triangle; the inside's QI is no longer
    read) and X = QBout · Mc (XM, both), then P[i, j] = QB · QBout / Z into O1's lower triangle."""
    RT = E.RTYPE
    mmI = X.mismatch_interior
    stack, bulge, interior, ninio = X.stack, X.bulge, X.interior, X.ninio
    int11, int21, int22, mm1n, mm23 = X.int11, X.int21, X.int22, X.mismatch_interior_1n, X.mismatch_interior_23
    au = _terminal_au(X)
    mlb = X.scalars[ML_BASE]
    Z = Q5[n]
    GS = _generic_weights(X)
    EXT, MLS, CLO = _stem_tables(X)
    S5, S3 = _neighbours(S, n)
    # Rows in blocks of ROWS as in _inside (j outermost, downwards, and i upwards within a j: a cell needs the
    # rows above it at its own column and beyond). CB[r, h]: ML base weight and scale of the unpaired stretch
    # h .. i-1 for the block's row i = i0 + r.
    CB = np.zeros((ROWS, n + 2))
    for i0 in range(1, n + 1, ROWS):
        ihi = min(n, i0 + ROWS - 1)
        for i in range(i0, ihi + 1):
            C = CB[i - i0]
            C[i] = 1.0
            for h in range(i - 1, 0, -1):
                C[h] = C[h + 1] * mlb * SL[h, 0]
        for j in range(n, i0, -1):
            for i in range(i0, min(ihi, j - 1) + 1):
                C = CB[i - i0]
                # QMout[i, j]: QM[i, l] = ... QM[i, j] QM1[j+1, l] ..., and QB[i-1, l] = Mc ... QM[i, j] QM1[j+1, l-1]
                # (one sweep: XM's row 0 and column n+1 are 0)
                ra = MO[i, j + 1 + TURN:n + 1]
                rb = XM[i - 1, j + 2 + TURN:n + 2]
                rc = M1[j + 1, j + 1 + TURN:n + 1]
                mo = 0.0
                for m in range(ra.shape[0]):
                    mo += (ra[m] + rb[m]) * rc[m]
                MO[i, j] = mo
                MO[j, i] = mo
                # QM1out[i, j]: QM1[i, j+1] = QM1[i, j] b + ...; QB[h, j+1] = Mc ... QM[h+1, i-1] QM1[i, j];
                # QM[h, j] = ... (QM[h, i-1] + b^(i-h)) QM1[i, j]
                # (one sweep: XM's row n+1 and column 0 are 0, so is O1's column n+1)
                o1 = mo + O1[i, j + 1] * mlb * SR[j + 1, 0]
                ra = M[i - 1, 1:i]
                rb = MO[j, 1:i]
                rc = XM[j + 1, 0:i - 1]
                rd = C[1:i]
                for m in range(ra.shape[0]):
                    o1 += ra[m] * (rb[m] + rc[m]) + rb[m] * rd[m]
                O1[i, j] = o1
                t = ptype[i, j]
                if t == 0:
                    continue
                # QBout[i, j]: the exterior loop, a multiloop branch, the inner pair of a stack, bulge or interior loop
                ob = Q5[i - 1] * EXT[t, S5[i], S3[j]] * Q3[j + 1]
                ob += o1 * MLS[t, S5[i], S3[j]]
                t2 = RT[t]
                sp1 = S[i - 1]
                sq1 = S[j + 1]
                gen = 0.0
                slj = SL[j + 1]
                for h in range(max(1, i - MAXLOOP + 1), i - 2):                 # generic loops: a row of OI each
                    u1 = i - h - 1
                    ro = OI[h, j + 3:min(n, j + 1 + MAXLOOP - u1) + 1]     # u2 = 2, 3, ...
                    rg = GS[u1, 2:]
                    rs = slj[2:]
                    row = 0.0
                    for m in range(ro.shape[0]):
                        row += ro[m] * rg[m] * rs[m]
                    gen += row * SL[h, u1]
                # the others, as in _inside with the enclosing pair h·l (type th) and i·j inside; QBout[h, l] is
                # A[l, h], and positions outside 1..n have ptype 0 (the padding rows and columns)
                h = i - 1
                l = j + 1
                th = ptype[h, l]                                                # stack
                if th:
                    ob += stack[th, t2] * A[l, h] * SL[h, 0] * slj[0]
                w = bulge[1]                                                    # bulges of 1
                if i > 2:
                    th = ptype[i - 2, j + 1]
                    if th:
                        ob += w * stack[th, t2] * A[j + 1, i - 2] * SL[i - 2, 1] * slj[0]
                th = ptype[i - 1, j + 2] if j + 2 <= n else 0
                if th:
                    ob += w * stack[th, t2] * A[j + 2, i - 1] * SL[i - 1, 0] * slj[1]
                for u in range(2, MAXLOOP + 1):                                 # bulges of 2 or more
                    w = bulge[u] * au[t]
                    if i - 1 - u >= 1:
                        th = ptype[i - 1 - u, j + 1]
                        if th:
                            ob += w * au[th] * A[j + 1, i - 1 - u] * SL[i - 1 - u, u] * slj[0]
                    if j + 1 + u <= n:
                        th = ptype[i - 1, j + 1 + u]
                        if th:
                            ob += w * au[th] * A[j + 1 + u, i - 1] * SL[i - 1, 0] * slj[u]
                if i > 2 and j + 2 <= n:
                    th = ptype[i - 2, j + 2]                                    # 1x1
                    if th:
                        ob += int11[th, t2, S[i - 1], S[j + 1]] * A[j + 2, i - 2] * SL[i - 2, 1] * slj[1]
                if i > 2 and j + 3 <= n:
                    th = ptype[i - 2, j + 3]                                    # 1x2
                    if th:
                        ob += int21[th, t2, S[i - 1], S[j + 1], S[j + 2]] * A[j + 3, i - 2] * SL[i - 2, 1] * slj[2]
                if i > 3 and j + 2 <= n:
                    th = ptype[i - 3, j + 2]                                    # 2x1
                    if th:
                        ob += int21[t2, th, S[j + 1], S[i - 2], S[i - 1]] * A[j + 2, i - 3] * SL[i - 3, 2] * slj[1]
                if i > 3 and j + 3 <= n:
                    th = ptype[i - 3, j + 3]                                    # 2x2
                    if th:
                        ob += (int22[th, t2, S[i - 2], S[i - 1], S[j + 1], S[j + 2]] * A[j + 3, i - 3] * SL[i - 3, 2]
                               * slj[2])
                w = interior[5] * ninio[1] * mm23[t2, sq1, sp1]                 # 2x3, 3x2
                if i > 3 and j + 4 <= n:
                    th = ptype[i - 3, j + 4]
                    if th:
                        ob += w * mm23[th, S[i - 2], S[j + 3]] * A[j + 4, i - 3] * SL[i - 3, 2] * slj[3]
                if i > 4 and j + 3 <= n:
                    th = ptype[i - 4, j + 3]
                    if th:
                        ob += w * mm23[th, S[i - 3], S[j + 2]] * A[j + 3, i - 4] * SL[i - 4, 3] * slj[2]
                m1n = mm1n[t2, sq1, sp1]                                        # 1xn, nx1 (n >= 3)
                for u in range(3, MAXLOOP):
                    w = interior[u + 1] * ninio[u - 1] * m1n
                    if i > 2 and j + 1 + u <= n:                                # h = i - 2, l = j + 1 + u
                        l = j + 1 + u
                        th = ptype[i - 2, l]
                        if th:
                            ob += w * mm1n[th, S[i - 1], S[l - 1]] * A[l, i - 2] * SL[i - 2, 1] * slj[u]
                    if i - 1 - u >= 1 and j + 2 <= n:                           # h = i - 1 - u, l = j + 2
                        h = i - 1 - u
                        th = ptype[h, j + 2]
                        if th:
                            ob += w * mm1n[th, S[h + 1], S[j + 1]] * A[j + 2, h] * SL[h, u] * slj[1]
                ob += gen * mmI[t2, sq1, sp1]
                A[j, i] = ob
                OI[i, j] = ob * mmI[t, S[i + 1], S[j - 1]]
                x = ob * CLO[t, S[j - 1], S[i + 1]] * SL[i, 0] * SR[j, 0]
                XM[i, j] = x
                XM[j, i] = x
                O1[j, i] = A[i, j] * ob / Z


@njit(cache=True, nogil=True)
def uniform_scales(X, n, mfe):
    """ViennaRNA's per-nucleotide scale from the MFE (dcal/mol), ``exp_params_rescale``: lam[k] = ln s for every
    nucleotide, s = exp(-1.07 · MFE / (n · kT))."""
    lam = np.zeros(n + 2)
    if n > 0:
        lam[1:n + 1] = -(SFACT * mfe * 10.0) / n / X.scalars[KT]
    return lam


@njit(cache=True, nogil=True)
def structure_scales(X, T, S, n, db):
    """Per-nucleotide log-scales from the MFE structure ``db`` (dot-bracket bytes): each loop's free energy
    (rnapipe.energy's, times 1.07, in kT) shared out evenly over its closing pair and its unpaired nucleotides,
    each exterior stem's over its pair; the exterior loop's unpaired nucleotides 0. Their sum is the uniform
    scales' (:func:`uniform_scales`), but a stretch's share follows its own loops, so a stable domain beside an
    unstructured one is scaled by its own energy, not by the average."""
    lam = np.zeros(n + 2)
    pt = np.zeros(n + 2, dtype=np.int64)
    stack = np.zeros(n + 1, dtype=np.int64)
    top = 0
    for k in range(1, n + 1):
        if db[k - 1] == 40:
            stack[top] = k
            top += 1
        elif db[k - 1] == 41:
            top -= 1
            pt[stack[top]] = k
            pt[k] = stack[top]
    f = -SFACT * 10.0 / X.scalars[KT]
    ml_base = T.scalars[E._ML_BASE]
    for i in range(1, n + 1):
        j = pt[i]
        if j <= i:
            continue
        branches = 0
        unpaired = 0
        p = 0
        q = 0
        e = np.int64(0)
        k = i + 1
        while k < j:
            if pt[k] > k:
                branches += 1
                p = k
                q = pt[k]
                e += E.multi_stem_at(T, S, p, q)
                k = q + 1
            else:
                unpaired += 1
                k += 1
        if branches == 0:
            e = E.hairpin_energy(T, S, i, j)
        elif branches == 1:
            e = E.interior_energy_at(T, S, i, j, p, q)
        else:
            e += E.multi_closing(T, S, i, j) + unpaired * ml_base
        share = f * e / (unpaired + 2)
        lam[i] += share
        lam[j] += share
        k = i + 1
        while k < j:
            if pt[k] > k:
                k = pt[k] + 1
            else:
                lam[k] += share
                k += 1
    i = 1
    while i <= n:
        j = pt[i]
        if j > i:
            share = f * E.exterior_stem_at(T, S, n, i, j) / 2
            lam[i] += share
            lam[j] += share
            i = j + 1
        else:
            i += 1
    return lam


@njit(cache=True, nogil=True)
def fold_scaled(X, S, first, second):
    """Partition function and pair probabilities of the padded codes S (S[1..n]) with the per-nucleotide
    log-scales ``first`` (see the module docstring for the restarts: then ``second``, then ``second`` plus a
    uniform correction). Returns (ensemble free energy in kcal/mol, the probabilities: P[i, j] at [j, i]
    (i < j) of an (n+2)² array, the log-scales used)."""
    n = S.shape[0] - 2
    N = n + 2
    kt = X.scalars[KT]
    ptype = _ptypes(S, n)
    A = np.zeros((N, N))
    M = np.zeros((N, N))
    M1 = np.zeros((N, N))
    QI = np.zeros((N, N))
    Q5 = np.zeros(0)
    Q3 = np.zeros(0)
    lam = first.copy()
    L, SL, SR = _scales(lam, n)
    ok = False
    delta = 0.0                     # the uniform correction added to ``second``
    lost = 0                        # tries in a row whose Z underflowed to 0 (or a subnormal)
    for attempt in range(TRIES):
        if attempt > 0:
            lam = second.copy()
            lam[1:n + 1] += delta
        L, SL, SR = _scales(lam, n)
        A[:] = 0.0
        M[:] = 0.0
        M1[:] = 0.0
        QI[:] = 0.0
        Q5, Q3, top, span = _inside(X, S, n, ptype, L, SL, SR, A, M, M1, QI)
        if Q5.shape[0] == 0 or not math.isfinite(top):
            # a cell of span d above BIG: the correction that makes it 1e100 (a Z of inf: one 700 larger)
            if attempt > 0:
                delta += (math.log(top) - math.log(1e100)) / span if math.isfinite(top) else 700.0 / span
            lost = 0
        elif top < SMALL:
            # Z of 1e-280 or less: the correction that makes it 1e-100, or where it is lost, steps that double
            if attempt > 0:
                if top >= 2.3e-308:
                    delta -= (math.log(1e-100) - math.log(top)) / n
                else:
                    delta -= 700.0 * 2.0 ** lost / n
                    lost += 1
        elif n > 0 and abs(Q3[1] - Q5[n]) > 1e-9 * Q5[n]:
            # the 5' and 3' sums of the exterior loop disagree: terms that matter underflowed in one of them
            lost = 0
        else:
            ok = True
            break
    if not ok:
        raise FloatingPointError("no scale keeps this sequence's partition function in the double range")
    Z = Q5[n]
    MO = np.zeros((N, N))
    XM = np.zeros((N, N))
    O1 = np.zeros((N, N))
    if n > 0:
        _outside(X, S, n, ptype, L, SL, SR, A, M, M1, MO, XM, O1, QI, Q5, Q3)
    for i in range(1, n + 1):
        for j in range(i + 1, n + 1):
            if not (O1[j, i] <= 1.0 + 1e-9):        # NaN too
                raise FloatingPointError("a pair probability left the double range (outside pass)")
    G = -(math.log(Z) + L[n]) * kt / 1000.0 if n > 0 else 0.0
    return G, O1, lam


@njit(cache=True, nogil=True)
def fold_codes(X, T, S):
    """The MFE structure (rnapipe.cpu.zuker), then :func:`fold_scaled` with the uniform scales first and the
    structure's second. Returns (ensemble free energy in kcal/mol, the probabilities as fold_scaled's, the MFE
    in dcal/mol, the MFE structure as dot-bracket bytes)."""
    n = S.shape[0] - 2
    mfe, db = zuker.fold_codes(T, S)
    G, Pm, _ = fold_scaled(X, S, uniform_scales(X, n, mfe), structure_scales(X, T, S, n, db))
    return G, Pm, mfe, db


@njit(cache=True, nogil=True)
def _sparse(Pm, n, threshold):
    """The pairs of probability above ``threshold`` (1-based i < j, i ascending then j) and each nucleotide's
    unpaired probability."""
    count = 0
    for i in range(1, n + 1):
        for j in range(i + 1, n + 1):
            if Pm[j, i] > threshold:
                count += 1
    I = np.empty(count, dtype=np.int32)
    J = np.empty(count, dtype=np.int32)
    p = np.empty(count)
    paired = np.zeros(n + 2)
    k = 0
    for i in range(1, n + 1):
        for j in range(i + 1, n + 1):
            x = Pm[j, i]
            paired[i] += x
            paired[j] += x
            if x > threshold:
                I[k] = i
                J[k] = j
                p[k] = x
                k += 1
    unpaired = np.empty(n)
    for i in range(1, n + 1):
        unpaired[i - 1] = 1.0 - paired[i]
    return I, J, p, unpaired


@njit(cache=True, nogil=True)
def _derived(Pm, n):
    """Ensemble diversity (ViennaRNA's mean base-pair distance, 2 · sum p(1 - p)), the centroid (pairs of
    probability above 0.5) as dot-bracket bytes and its distance to the ensemble."""
    d = 0.0
    dist = 0.0
    db = np.full(n, 46, dtype=np.uint8)
    for i in range(1, n + 1):
        for j in range(i + 1, n + 1):
            x = Pm[j, i]
            d += x * (1.0 - x)
            if x > 0.5:
                db[i - 1] = 40
                db[j - 1] = 41
                dist += 1.0 - x
            else:
                dist += x
    return 2.0 * d, db, dist


@njit(cache=True, nogil=True)
def _mea_enter(i, j, pair, Mi, pu, head, nxt, ci, ca, db):
    """The start of ViennaRNA's ``mea_backtrack`` for [i, j]: with ``pair`` the pair i·j and M recomputed inside
    it in place, then unpaired nucleotides off the 3' end while M allows. Returns the interval left and the
    precision of the comparisons."""
    if pair:
        db[i - 1] = 40
        db[j - 1] = 41
        i += 1
        j -= 1
        Mi[i - 1] = 0.0
        Mi[i] = pu[i]
        for k in range(i + 1, j + 1):
            Mi[k] = Mi[k - 1] + pu[k]
            e = head[k]
            while e >= 0 and ci[e] >= i:
                Mi[k] = max(Mi[k], ca[e] + Mi[ci[e] - 1])
                e = nxt[e]
    prec = 2.220446049250313e-16 * Mi[j]
    while j > i and Mi[j] <= Mi[j - 1] + pu[j] + prec:
        db[j - 1] = 46
        j -= 1
    return i, j, prec


@njit(cache=True, nogil=True)
def _mea_backtrack(n, Mi, pu, head, nxt, ci, ca, db):
    """ViennaRNA's recursive ``mea_backtrack`` (structures/mea.c) from [1, n], step for step, with a stack of
    its frames (Numba's cache does not keep recursive functions): after the start (:func:`_mea_enter`), every
    candidate of C[j] (pushed in order) whose value gives M[j] is followed: [i, k-1] first (if k > i + 3), then
    the pair k·j; the candidates after it are still tried, on M as those calls left it, as there."""
    FI = np.zeros(n + 8, dtype=np.int64)
    FJ = np.zeros(n + 8, dtype=np.int64)
    FE = np.zeros(n + 8, dtype=np.int64)
    FS = np.zeros(n + 8, dtype=np.int64)
    FP = np.zeros(n + 8)
    i, j, prec = _mea_enter(1, n, False, Mi, pu, head, nxt, ci, ca, db)
    FI[0], FJ[0], FE[0], FS[0], FP[0] = i, j, head[j], 1, prec
    top = 1
    while top > 0:
        f = top - 1
        i = FI[f]
        j = FJ[f]
        e = FE[f]
        if FS[f] == 1:
            if e < 0 or ci[e] < i:
                top -= 1
                continue
            if Mi[j] <= ca[e] + Mi[ci[e] - 1] + FP[f]:
                FS[f] = 2
                if ci[e] > i + 3:
                    a, b, prec = _mea_enter(i, ci[e] - 1, False, Mi, pu, head, nxt, ci, ca, db)
                    FI[top], FJ[top], FE[top], FS[top], FP[top] = a, b, head[b], 1, prec
                    top += 1
            else:
                FE[f] = nxt[e]
        elif FS[f] == 2:
            FS[f] = 3
            a, b, prec = _mea_enter(ci[e], j, True, Mi, pu, head, nxt, ci, ca, db)
            FI[top], FJ[top], FE[top], FS[top], FP[top] = a, b, head[b], 1, prec
            top += 1
        else:
            FE[f] = nxt[e]
            FS[f] = 1


@njit(cache=True, nogil=True)
def pairs_at_least(Pm, n, cut):
    """The pairs of probability at least ``cut`` (``Pm``: P[i, j] at [j, i]) as arrays I, J, p, i ascending then j."""
    count = 0
    for i in range(1, n + 1):
        for j in range(i + 1, n + 1):
            if Pm[j, i] >= cut:
                count += 1
    I = np.empty(count, dtype=np.int32)
    J = np.empty(count, dtype=np.int32)
    p = np.empty(count)
    k = 0
    for i in range(1, n + 1):
        for j in range(i + 1, n + 1):
            if Pm[j, i] >= cut:
                I[k] = i
                J[k] = j
                p[k] = Pm[j, i]
                k += 1
    return I, J, p


@njit(cache=True, nogil=True)
def mea(Pm, n, gamma):
    """The maximum expected accuracy structure and its expected accuracy, as ViennaRNA's ``MEA(gamma)``
    (structures/mea.c), from the probabilities as :func:`fold_scaled` returns them (P[i, j] at [j, i]): see
    :func:`mea_list`."""
    I, J, p = pairs_at_least(Pm, n, 1e-4 / (1.0 + gamma))
    return mea_list(I, J, p, n, gamma)


@njit(cache=True, nogil=True)
def mea_list(I, J, P, n, gamma):
    """:func:`mea` from a list of pairs (I, J, P: i ascending then j) holding at least every pair of probability
    1e-4/(1 + gamma) or more (others are passed over): those pairs in single precision, as ViennaRNA's pair list
    holds them, unpaired probabilities from them, pairs kept where 2·gamma·p exceeds their nucleotides'
    unpaired probabilities, M[i, j] = max(M[i, j-1] + pu[j], M[i, k-1] + 2·gamma·p[k, j] + M[k+1, j-1]) row by
    row from i = n down, and its backtracking, ties as it resolves them."""
    cut = 1e-4 / (1.0 + gamma)
    pu = np.ones(n + 2)
    start = np.zeros(n + 2, dtype=np.int64)          # the pairs of row i: start[i] .. start[i+1]-1
    for k in range(I.shape[0]):
        start[I[k] + 1] = k + 1
        if P[k] >= cut:
            x = np.float64(np.float32(P[k]))
            pu[I[k]] -= x
            pu[J[k]] -= x
    for i in range(1, n + 2):
        start[i] = max(start[i], start[i - 1])
    # the pruned list in the DP's order: i descending, j ascending
    count = 0
    for k in range(I.shape[0]):
        if P[k] >= cut:
            x = np.float64(np.float32(P[k]))
            if x * 2 * gamma > pu[I[k]] + pu[J[k]]:
                count += 1
    LI = np.zeros(count + 1, dtype=np.int64)
    LJ = np.zeros(count + 1, dtype=np.int64)
    LP = np.zeros(count + 1)
    k = 0
    for i in range(n, 0, -1):
        for e in range(start[i], start[i + 1]):
            if P[e] >= cut:
                x = np.float64(np.float32(P[e]))
                j = J[e]
                if x * 2 * gamma > pu[i] + pu[j]:
                    LI[k] = i
                    LJ[k] = j
                    LP[k] = x
                    k += 1
    # C[j]: (i, value) of the pairs i·j that were optimal when pushed, a linked list per j in push order
    head = np.full(n + 2, -1, dtype=np.int64)
    tail = np.full(n + 2, -1, dtype=np.int64)
    nxt = np.full(count + 1, -1, dtype=np.int64)
    ci = np.zeros(count + 1, dtype=np.int64)
    ca = np.zeros(count + 1)
    pushed = 0
    Mi = np.zeros(n + 2)
    Mi1 = np.zeros(n + 2)
    pp = 0
    for i in range(n, 0, -1):
        v = pu[i]                                    # M[i, j-1], kept in a register along the row
        Mi[i] = v
        for j in range(i + 1, n + 1):
            v += pu[j]
            e = head[j]
            while e >= 0:
                v = max(v, ca[e] + Mi[ci[e] - 1])
                e = nxt[e]
            if LI[pp] == i and LJ[pp] == j:
                ea = Mi1[j - 1] + 2 * gamma * LP[pp]
                if v < ea:
                    v = ea
                    ci[pushed] = i
                    ca[pushed] = ea
                    if head[j] < 0:
                        head[j] = pushed
                    else:
                        nxt[tail[j]] = pushed
                    tail[j] = pushed
                    pushed += 1
                pp += 1
            Mi[j] = v
        Mi, Mi1 = Mi1, Mi
    value = Mi1[n] if n > 0 else 0.0
    db = np.full(n, 46, dtype=np.uint8)
    if n > 0:
        _mea_backtrack(n, Mi1, pu, head, nxt, ci, ca, db)
    return db, value


@njit(cache=True, nogil=True)
def _bpp_symbol(p0, p1, p2):
    """ViennaRNA's ``vrna_bpp_symbol`` (structures/dotbracket.c): the pseudo-bracket character of a nucleotide
    unpaired with probability p0, paired downstream (to a partner 3' of it) with p1 and upstream with p2, all
    single precision as there."""
    if p0 > 0.667:
        return 46                                   # .
    if p1 > 0.667:
        return 40                                   # (
    if p2 > 0.667:
        return 41                                   # )
    if p1 + p2 > p0:
        if p1 / (p1 + p2) > 0.667:
            return 123                              # {
        if p2 / (p1 + p2) > 0.667:
            return 125                              # }
        return 124                                  # |
    if p0 > p1 + p2:
        return 44                                   # ,
    return 58                                       # :


@njit(cache=True, nogil=True)
def pseudo_bracket(Pm, n):
    """RNAfold -p's line of the ensemble (ViennaRNA's ``vrna_db_from_probs``): per nucleotide j the sums of
    its pair probabilities up- and downstream and 1 less both, each summed in single precision in the same order
    as there (every pair, whatever its probability), then :func:`_bpp_symbol`. ``Pm``: P[i, j] at [j, i]."""
    db = np.empty(n, dtype=np.uint8)
    for j in range(1, n + 1):
        p0 = np.float32(1.0)
        p1 = np.float32(0.0)
        p2 = np.float32(0.0)
        for i in range(1, j):
            x = np.float32(Pm[j, i])
            p2 = np.float32(p2 + x)
            p0 = np.float32(p0 - x)
        for i in range(j + 1, n + 1):
            x = np.float32(Pm[i, j])
            p1 = np.float32(p1 + x)
            p0 = np.float32(p0 - x)
        db[j - 1] = _bpp_symbol(p0, p1, p2)
    return db


@njit(cache=True, nogil=True)
def _energy_of(T, S, n, db):
    """Free energy (dcal/mol) of the dot-bracket bytes ``db`` (``(``, ``)`` and ``.`` only), as
    ``vrna_eval_structure`` gives it (rnapipe.energy.eval_pair_table)."""
    pt = np.zeros(n + 2, dtype=np.int32)
    stack = np.empty(n + 1, dtype=np.int32)
    top = 0
    for k in range(1, n + 1):
        c = db[k - 1]
        if c == 40:
            stack[top] = k
            top += 1
        elif c == 41:
            top -= 1
            pt[stack[top]] = k
            pt[k] = stack[top]
    return E.eval_pair_table(T, S, pt)


@njit(cache=True, nogil=True)
def fold_sparse(X, T, S, threshold, gamma):
    """One sequence start to end: the MFE and its structure (MFE engine, for the scale and the MFE frequency),
    the partition function, the sparse pairs and the derived values: RNAfold -p's pseudo-bracket line, the
    centroid and the MEA structure (``gamma``) with their free energies (dcal/mol)."""
    G, Pm, mfe, db = fold_codes(X, T, S)
    return (G, mfe, db) + derived(T, S, Pm, threshold, gamma)


@njit(cache=True, nogil=True)
def derived(T, S, Pm, threshold, gamma):
    """What a sequence's probabilities ``Pm`` (P[i, j] at [j, i], :func:`fold_scaled`'s, or the GPU engine's)
    give: the sparse pairs and unpaired probabilities, the diversity, the centroid and its distance, the MEA
    structure and its accuracy, RNAfold -p's pseudo-bracket line, the centroid's and the MEA structure's free
    energies (dcal/mol)."""
    n = S.shape[0] - 2
    I, J, p, unpaired = _sparse(Pm, n, threshold)
    diversity, centroid, dist = _derived(Pm, n)
    mea_db, mea_value = mea(Pm, n, gamma)
    pseudo = pseudo_bracket(Pm, n)
    centroid_e = _energy_of(T, S, n, centroid)
    mea_e = _energy_of(T, S, n, mea_db)
    return I, J, p, unpaired, diversity, centroid, dist, mea_db, mea_value, pseudo, centroid_e, mea_e


@njit(cache=True, nogil=True)
def _mea_range(T, S, off1, lens, I, J, p, first, centroid, gamma, a, b, mea_text, mea_values, energies):
    """The MEA structures of sequences a .. b-1 (:func:`mea_list` of their pairs, at first[k] .. first[k+1]-1 of I,
    J, p) at off1[k] + 1 of mea_text, their accuracies, and the free energies of the centroid (at off1[k] + 1 of
    ``centroid``) and of the MEA structure."""
    for k in range(a, b):
        n = lens[k]
        o = off1[k]
        Sk = S[o:o + n + 2]
        db, value = mea_list(I[first[k]:first[k + 1]], J[first[k]:first[k + 1]], p[first[k]:first[k + 1]], n, gamma)
        mea_text[o + 1:o + n + 1] = db
        mea_values[k] = value
        energies[k, 0] = _energy_of(T, Sk, n, centroid[o + 1:o + n + 1])
        energies[k, 1] = _energy_of(T, Sk, n, db)


def derived_lists(T, S, off1, lens, I, J, p, first, unpaired, centroid, pseudo, diversity, distance,
                  threshold: float, gamma: float, pool=None, threads: int = 1) -> list:
    """:func:`derived`'s values of a batch laid out flat from what the GPU engine computes of its probabilities
    (rnapipe.gpu.partition: per nucleotide, at off1[k] + 1 .. off1[k] + n: the unpaired probability, the
    centroid's and RNAfold -p's characters, the terms of the diversity and of the centroid's distance; per
    sequence k the pairs at first[k] .. first[k+1]-1 of I, J, p: every pair of probability at least
    min(threshold, 1e-4/(1 + gamma)), i ascending then j): the pairs above ``threshold``, the MEA structure
    (:func:`mea_list`) and the free energies, the MEA parts over ``threads`` threads of ``pool``."""
    count = len(lens)
    if not count:
        return []
    sizes = lens.astype(np.int64) + 2
    div = np.add.reduceat(diversity, off1)
    dist = np.add.reduceat(distance, off1)
    mea_text = np.full(off1[-1] + sizes[-1], 46, dtype=np.uint8)
    mea_values = np.zeros(count)
    energies = np.zeros((count, 2), dtype=np.int64)
    parts = max(1, min(count, 4 * threads if pool is not None else 1))
    work = np.cumsum(np.diff(first).astype(np.float64) + sizes)
    cuts = np.unique(np.concatenate(([0], np.searchsorted(work, work[-1] * np.arange(1, parts) / parts), [count])))

    def part(r):
        _mea_range(T, S, off1, lens, I, J, p, first, centroid, gamma, r[0], r[1], mea_text, mea_values, energies)
    ranges = list(zip(cuts[:-1].tolist(), cuts[1:].tolist()))
    if pool is None:
        for r in ranges:
            part(r)
    else:
        list(pool.map(part, ranges))
    if not p.size or p.min() > threshold:            # the list is the output's (threshold >= the MEA's cut)
        at, Ia, Ja, pa = first, I, J, p
    else:
        above = p > threshold
        at = np.concatenate(([0], np.cumsum(above)))[first]
        Ia, Ja, pa = I[above], J[above], p[above]
    out = []
    for k in range(count):
        n, o, a, b = int(lens[k]), int(off1[k]), int(at[k]), int(at[k + 1])
        out.append((Ia[a:b], Ja[a:b], pa[a:b], unpaired[o + 1:o + n + 1], 2.0 * float(div[k]),
                    centroid[o + 1:o + n + 1], float(dist[k]), mea_text[o + 1:o + n + 1], float(mea_values[k]),
                    pseudo[o + 1:o + n + 1], int(energies[k, 0]), int(energies[k, 1])))
    return out


class PartitionResult(NamedTuple):
    """One sequence's partition function: ensemble free energy (kcal/mol, as RNAfold prints it), the pairs of
    probability above the threshold (``i``, ``j`` 1-based, i < j, and ``p``), each nucleotide's unpaired
    probability, the MFE (kcal/mol) and the frequency of the MFE structure in the ensemble (as RNAfold -p
    computes it, from the MFE in single precision), the ensemble diversity, the centroid structure and its distance to the ensemble (ViennaRNA's ``centroid()``), the MEA
    structure (``gamma``, 1 by default) and its expected accuracy (ViennaRNA's ``MEA()``); then the MFE
    structure, RNAfold -p's pseudo-bracket line of the ensemble (ViennaRNA's ``vrna_db_from_probs``), and the
    free energies of the centroid and of the MEA structure (dcal/mol, ``vrna_eval_structure``)."""

    energy: float
    i: np.ndarray
    j: np.ndarray
    p: np.ndarray
    unpaired: np.ndarray
    mfe: float
    mfe_frequency: float
    diversity: float
    centroid: str
    centroid_distance: float
    mea: str
    mea_accuracy: float
    structure: str = ""
    pseudo: str = ""
    centroid_energy: int = 0
    mea_energy: int = 0


def _result(sequence: str, X, T, threshold: float, gamma: float = 1.0) -> PartitionResult:
    if not sequence:
        return empty_result()
    return assemble(X, fold_sparse(X, T, E.padded_codes(sequence), threshold, gamma))


def empty_result() -> PartitionResult:
    """The result of an empty sequence."""
    return PartitionResult(0.0, np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0), np.zeros(0), 0.0,
                           1.0, 0.0, "", 0.0, "", 0.0)


def assemble(X, values) -> PartitionResult:
    """The result of one sequence from the ensemble free energy G (kcal/mol), the MFE (dcal/mol), its
    structure and :func:`derived`'s values, in :func:`fold_sparse`'s order."""
    (G, mfe, db, I, J, p, unpaired, diversity, centroid, dist, mea_db, mea_value, pseudo, centroid_e,
     mea_e) = values
    mfe_kcal = mfe / 100.0
    # RNAfold -p's frequency: its MFE is vrna_mfe's single-precision return value (relatively up to 1e-6 off
    # the exact frequency), so that the printed %g is RNAfold's
    freq = math.exp(-(float(np.float32(mfe_kcal)) - G) * 1000.0 / X.scalars[KT])
    return PartitionResult(float(G), I, J, p, unpaired, mfe_kcal, freq, float(diversity),
                           centroid.tobytes().decode("ascii"), float(dist), mea_db.tobytes().decode("ascii"),
                           float(mea_value), db.tobytes().decode("ascii"), pseudo.tobytes().decode("ascii"),
                           int(centroid_e), int(mea_e))


def bytes_needed(n: int) -> int:
    """Memory for one sequence of n nt: the seven (n+2)² float64 matrices, the pair types (int8, (n+2)²), the
    sparse lists at most (threshold 0: n²/2 pairs of 16 bytes), the scale tables and the MFE engine's workspace
    (rnapipe.cpu.zuker)."""
    N = n + 2
    return 65 * N * N + (4 * (MAXLOOP + 2) + 2 * ROWS + 16) * 8 * N + zuker.bytes_needed(n)


def fold_one(sequence: str, model: Model | None = None, threshold: float = THRESHOLD,
             gamma: float = 1.0) -> PartitionResult:
    """The partition function of one (normalised: upper case, U) sequence under ``model`` (RNAfold's defaults
    when None); ``gamma``: the MEA structure's (RNAfold's --MEA gamma)."""
    model = model or Model()
    X = exp_tables(model)
    return _result(sequence, X, model.tables(), threshold, gamma)


_SAMPLE = "GGGGAAAACCCCAUAUGCGCAAAAGCGCAUAU"      # a short sequence whose folds compile the engine's pieces


def _sample_fold(X, T, piece: str) -> None:
    """One call of a piece of :func:`fold_sparse` from Python with the argument types fold_sparse gives it, so
    that Numba compiles the piece (or loads it from its cache): ``mfe`` the MFE engine's fold
    (rnapipe.cpu.zuker.fold_codes), ``derived`` :func:`derived`, ``scaled`` the scales and :func:`fold_scaled`."""
    S = E.padded_codes(_SAMPLE)
    n = len(_SAMPLE)
    if piece == "mfe":
        zuker.fold_codes(T, S)
    elif piece == "derived":
        derived(T, S, np.zeros((n + 2, n + 2)), THRESHOLD, 1.0)
    else:
        db = np.full(n, 46, dtype=np.uint8)
        fold_scaled(X, S, uniform_scales(X, n, np.int32(0)), structure_scales(X, T, S, n, db))


def compile_alone() -> None:
    """A child's share of :func:`compile_ahead`: the MFE engine's fold, for the default model (the argument types
    are the same for every model)."""
    model = Model()
    _sample_fold(exp_tables(model), model.tables(), "mfe")


def compiled() -> bool:
    """Whether Numba's cache holds :func:`fold_sparse` compiled on this machine (True where that cannot be
    told)."""
    import numba

    model = Model()
    args = (exp_tables(model), model.tables(), E.padded_codes(_SAMPLE), THRESHOLD, 1.0)
    return ahead.cached(fold_sparse, tuple(numba.typeof(a) for a in args))


_AHEAD = ahead.Once()


def compile_ahead(X, T) -> None:
    """Once per process, before the first fold: where Numba's cache does not hold :func:`fold_sparse` and this
    process may use 2 cores or more (a one-time compile on a fresh machine, some 50 s on 2 cores), compile
    the MFE engine's fold in a child process while this one compiles the scales, :func:`fold_scaled` and
    :func:`derived` (:func:`.ahead.compile_in_two`); the first fold then compiles only what joins them (on 2
    cores 28 s in all, 48 s in one process)."""
    def here() -> None:
        for piece in ("scaled", "derived"):
            _sample_fold(X, T, piece)

    def run() -> None:
        if config.default_threads() < 2 or compiled():
            return
        ahead.compile_in_two(here, "from rnapipe.cpu.partition import compile_alone\ncompile_alone()")

    _AHEAD.run(run)


def fold_batch(sequences: list[str], model: Model | None = None, threads: int = 1,
               threshold: float = THRESHOLD, gamma: float = 1.0,
               progress=None) -> list[PartitionResult]:
    """:func:`fold_one` of every sequence, over ``threads`` threads (longest first, as the MFE engine's batch;
    threads fold long sequences only as many at once as fit in memory together, rnapipe.cpu.batch's gate),
    results in input order; ``progress(k)``: k more sequences folded."""
    model = model or Model()
    X = exp_tables(model)
    T = model.tables()
    compile_ahead(X, T)
    return map_longest_first(lambda s: _result(s, X, T, threshold, gamma), sequences, threads,
                             bytes_of=bytes_needed, budget=host_budget(), progress=progress)
