"""Loop energies of the Turner 2004 nearest-neighbour model, exactly as ViennaRNA 2.7 computes them, and the
free energy of a given structure by loop decomposition (:func:`eval_structure`).

Every function takes :class:`rnapipe.params.EnergyTables` ``T`` and ``S``, the int8 codes of the sequence
(rnapipe.alphabet.encode: A=1, C=2, G=3, U=4, else 0) padded so that ``S[1..n]`` is the sequence and
``S[0] = S[n+1] = 0``; positions are 1-based. Energies are integers in dcal/mol. The functions are Numba
``njit`` so that the DP (rnapipe.cpu.zuker) and its traceback call the very same code.

Sources ported (ViennaRNA 2.7, ``src/ViennaRNA/eval/``): ``vrna_E_hairpin`` (eval_hairpin.c),
``vrna_E_internal`` (eval_internal.c), ``vrna_E_exterior_stem`` (eval_exterior.c), ``E_MLstem``
(multibranch.h). Loop extrapolation beyond 30 nucleotides is ``(int)(lxc * log(u / 30.))``, truncated.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from . import params as _params
from .alphabet import encode
from .errors import InputError

INF = _params.INF
MAXLOOP = 30
MIN_HAIRPIN = 3

PAIR_TYPE = np.asarray(_params.PAIR_TYPE)
RTYPE = np.asarray(_params.RTYPE)
# Evaluation of a given structure gives every pair that cannot form (a non-canonical pair, anything with N)
# ViennaRNA's non-standard type 7 (``vrna_get_ptype_md``), whose rows the tables carry; folding never pairs them.
NONSTANDARD = _params.NBPAIRS
EVAL_PAIR_TYPE = np.where(PAIR_TYPE == 0, NONSTANDARD, PAIR_TYPE).astype(np.int8)
EVAL_PAIR_TYPE.setflags(write=False)
_ML_BASE = _params.SCALAR_ML_BASE
_ML_CLOSING = _params.SCALAR_ML_CLOSING
_ML_INTERN = _params.SCALAR_ML_INTERN
_NINIO = _params.SCALAR_NINIO
_MAX_NINIO = _params.SCALAR_MAX_NINIO
_TERM_AU = _params.SCALAR_TERMINAL_AU
_DANGLES = _params.SCALAR_DANGLES


@njit(cache=True, nogil=True, inline="always")
def special_hairpin(S, i, seqs):
    """Index of the first special hairpin whose sequence is S[i .. i+len-1], or -1 (ViennaRNA's strstr)."""
    size = seqs.shape[1]
    for k in range(seqs.shape[0]):
        hit = True
        for m in range(size):
            if S[i + m] != seqs[k, m]:
                hit = False
                break
        if hit:
            return k
    return -1


@njit(cache=True, nogil=True, inline="always")
def hairpin_energy(T, S, i, j):
    """Hairpin closed by i·j (``vrna_E_hairpin``): size term, special tri/tetra/hexaloops (their table
    value is the whole loop), triloops get terminal AU/GU and no mismatch, others the hairpin mismatch."""
    return hairpin_energy_of_type(T, S, i, j, PAIR_TYPE[S[i], S[j]])


@njit(cache=True, nogil=True, inline="always")
def hairpin_energy_of_type(T, S, i, j, t):
    """:func:`hairpin_energy` with the closing pair's type ``t`` given (evaluation passes the type of a
    non-canonical pair, :data:`NONSTANDARD`). Fewer than 3 unpaired nucleotides: the size term alone, which
    Turner 2004 sets to INF."""
    size = j - i - 1
    if size <= MAXLOOP:
        e = np.int64(T.hairpin[size])
    else:
        e = np.int64(T.hairpin[MAXLOOP]) + np.int64(T.lxc * math.log(size / 30.0))
    if size < MIN_HAIRPIN:
        return e
    if size == 4:
        k = special_hairpin(S, i, T.tetra_seq)
        if k >= 0:
            return np.int64(T.tetra_e[k])
    elif size == 6:
        k = special_hairpin(S, i, T.hexa_seq)
        if k >= 0:
            return np.int64(T.hexa_e[k])
    elif size == 3:
        k = special_hairpin(S, i, T.tri_seq)
        if k >= 0:
            return np.int64(T.tri_e[k])
        if t > 2:
            e += T.scalars[_TERM_AU]
        return e
    return e + T.mismatch_hairpin[t, S[i + 1], S[j - 1]]


@njit(cache=True, nogil=True, inline="always")
def loop_length_energy(table, lxc, u):
    """``table[u]``, extrapolated as ``table[30] + (int)(lxc * log(u / 30))`` beyond 30."""
    if u <= MAXLOOP:
        return np.int64(table[u])
    return np.int64(table[MAXLOOP]) + np.int64(lxc * math.log(u / 30.0))


@njit(cache=True, nogil=True, inline="always")
def interior_energy(T, n1, n2, t, t2, si1, sj1, sp1, sq1):
    """Stack, bulge or interior loop between i·j (type ``t``) and p·q (``t2`` = type of q·p), ``n1`` =
    p-i-1 and ``n2`` = j-q-1 unpaired, neighbours si1 = S[i+1], sj1 = S[j-1], sp1 = S[p-1], sq1 = S[q+1]
    (``vrna_E_internal``)."""
    if n1 > n2:
        nl = n1
        ns = n2
    else:
        nl = n2
        ns = n1
    if nl == 0:
        return np.int64(T.stack[t, t2])
    sc = T.scalars
    if ns == 0:
        e = loop_length_energy(T.bulge, T.lxc, nl)
        if nl == 1:
            e += T.stack[t, t2]
        else:
            if t > 2:
                e += sc[_TERM_AU]
            if t2 > 2:
                e += sc[_TERM_AU]
        return e
    if ns == 1:
        if nl == 1:
            return np.int64(T.int11[t, t2, si1, sj1])
        if nl == 2:
            if n1 == 1:
                return np.int64(T.int21[t, t2, si1, sq1, sj1])
            return np.int64(T.int21[t2, t, sq1, si1, sp1])
        e = loop_length_energy(T.interior, T.lxc, nl + 1)
        e += min(sc[_MAX_NINIO], (nl - ns) * sc[_NINIO])
        return e + T.mismatch_interior_1n[t, si1, sj1] + T.mismatch_interior_1n[t2, sq1, sp1]
    if ns == 2:
        if nl == 2:
            return np.int64(T.int22[t, t2, si1, sp1, sq1, sj1])
        if nl == 3:
            e = np.int64(T.interior[5]) + sc[_NINIO]
            return e + T.mismatch_interior_23[t, si1, sj1] + T.mismatch_interior_23[t2, sq1, sp1]
    e = loop_length_energy(T.interior, T.lxc, nl + ns)
    e += min(sc[_MAX_NINIO], (nl - ns) * sc[_NINIO])
    return e + T.mismatch_interior[t, si1, sj1] + T.mismatch_interior[t2, sq1, sp1]


@njit(cache=True, nogil=True, inline="always")
def _stem(T, mismatch, t, n5d, n3d):
    """A helix end of type ``t`` with neighbours n5d (5') and n3d (3'), -1 for none: ``mismatch`` when both
    exist, else a dangle; terminal AU/GU."""
    e = np.int64(0)
    if n5d >= 0 and n3d >= 0:
        e += mismatch[t, n5d, n3d]
    elif n5d >= 0:
        e += T.dangle5[t, n5d]
    elif n3d >= 0:
        e += T.dangle3[t, n3d]
    if t > 2:
        e += T.scalars[_TERM_AU]
    return e


@njit(cache=True, nogil=True, inline="always")
def exterior_stem(T, t, n5d, n3d):
    """A helix end of type ``t`` in the exterior loop (``vrna_E_exterior_stem``), see :func:`_stem`."""
    return _stem(T, T.mismatch_exterior, t, n5d, n3d)


@njit(cache=True, nogil=True, inline="always")
def multi_stem(T, t, n5d, n3d):
    """A branch of type ``t`` in a multiloop (``E_MLstem``): as :func:`exterior_stem` with the multiloop
    mismatches, plus the per-branch penalty."""
    return np.int64(T.scalars[_ML_INTERN]) + _stem(T, T.mismatch_multi, t, n5d, n3d)


@njit(cache=True, nogil=True, inline="always")
def exterior_stem_at(T, S, n, i, j):
    """Exterior-loop contribution of the helix closed by i·j (no neighbour past either end; none with
    dangles=0)."""
    return exterior_stem_of_type(T, S, n, i, j, PAIR_TYPE[S[i], S[j]])


@njit(cache=True, nogil=True, inline="always")
def exterior_stem_of_type(T, S, n, i, j, t):
    """:func:`exterior_stem_at` with the pair's type ``t`` given (a pair that a hard constraint makes, canonical
    or not: :data:`NONSTANDARD`)."""
    if T.scalars[_DANGLES] == 0:
        return exterior_stem(T, t, -1, -1)
    n5d = S[i - 1] if i > 1 else -1
    n3d = S[j + 1] if j < n else -1
    return exterior_stem(T, t, n5d, n3d)


@njit(cache=True, nogil=True, inline="always")
def multi_stem_at(T, S, i, j):
    """Multiloop contribution of the branch i·j seen from outside (neighbours S[i-1], S[j+1])."""
    return multi_stem_of_type(T, S, i, j, PAIR_TYPE[S[i], S[j]])


@njit(cache=True, nogil=True, inline="always")
def multi_stem_of_type(T, S, i, j, t):
    """:func:`multi_stem_at` with the pair's type ``t`` given."""
    if T.scalars[_DANGLES] == 0:
        return multi_stem(T, t, -1, -1)
    return multi_stem(T, t, S[i - 1], S[j + 1])


@njit(cache=True, nogil=True, inline="always")
def multi_closing(T, S, i, j):
    """Multiloop closed by i·j: ML closing penalty plus the closing pair as a branch seen from inside
    (type of j·i, neighbours S[j-1] and S[i+1])."""
    return multi_closing_of_type(T, S, i, j, PAIR_TYPE[S[i], S[j]])


@njit(cache=True, nogil=True, inline="always")
def multi_closing_of_type(T, S, i, j, tij):
    """:func:`multi_closing` with the closing pair's type ``tij`` (of i·j) given."""
    t = RTYPE[tij]
    e = np.int64(T.scalars[_ML_CLOSING])
    if T.scalars[_DANGLES] == 0:
        return e + multi_stem(T, t, -1, -1)
    return e + multi_stem(T, t, S[j - 1], S[i + 1])


@njit(cache=True, nogil=True, inline="always")
def interior_energy_at(T, S, i, j, p, q):
    """Loop between the pairs i·j and p·q (i < p < q < j)."""
    return interior_energy_of_types(T, S, i, j, p, q, PAIR_TYPE[S[i], S[j]], PAIR_TYPE[S[p], S[q]])


@njit(cache=True, nogil=True, inline="always")
def interior_energy_of_types(T, S, i, j, p, q, tij, tpq):
    """:func:`interior_energy_at` with the pairs' types (of i·j and of p·q) given."""
    t = tij
    t2 = RTYPE[tpq]
    return interior_energy(T, p - i - 1, j - q - 1, t, t2, S[i + 1], S[j - 1], S[p - 1], S[q + 1])


@njit(cache=True, nogil=True, inline="always")
def _add_or_inf(a, b):
    """ViennaRNA's ``ADD_OR_INF``: INF when either term is exactly INF, else the sum."""
    if a == INF or b == INF:
        return np.int64(INF)
    return a + b


@njit(cache=True, nogil=True, inline="always")
def _eval_type(S, i, j):
    return EVAL_PAIR_TYPE[S[i], S[j]]


@njit(cache=True, nogil=True)
def _eval_multiloop(T, S, pt, i, j):
    """Multiloop closed by i·j: ML closing penalty, the closing pair seen from inside (type of j·i), each
    branch as a multiloop stem, ML base per unpaired nucleotide (``energy_of_ml_pt``, dangles 0 and 2)."""
    d0 = T.scalars[_DANGLES] == 0
    t = _eval_type(S, j, i)
    e = np.int64(T.scalars[_ML_CLOSING])
    e += multi_stem(T, t, -1, -1) if d0 else multi_stem(T, t, S[j - 1], S[i + 1])
    unpaired = 0
    k = i + 1
    while k < j:
        if pt[k] > k:
            t = _eval_type(S, k, pt[k])
            e += multi_stem(T, t, -1, -1) if d0 else multi_stem(T, t, S[k - 1], S[pt[k] + 1])
            k = pt[k] + 1
        else:
            unpaired += 1
            k += 1
    return e + unpaired * T.scalars[_ML_BASE]


@njit(cache=True, nogil=True)
def _eval_helix(T, S, pt, i, value):
    """Energy of everything enclosed by the pair i·j, walked as ViennaRNA's ``stack_energy`` walks it: the
    interior loops down the helix and a hairpin at its end added with :func:`_add_or_inf`; at a multiloop the
    branches' energies (``value[p]``, already computed) by plain addition, then the loop's own with
    :func:`_add_or_inf`. The order matters once a hairpin of fewer than 3 nucleotides makes one term INF."""
    j = pt[i]
    e = np.int64(0)
    p = i
    q = j
    while p < q:
        p += 1
        while pt[p] == 0:
            p += 1
        q -= 1
        while pt[q] == 0:
            q -= 1
        if pt[q] != p or p > q:
            break
        t = _eval_type(S, i, j)
        t2 = _eval_type(S, q, p)
        e = _add_or_inf(e, interior_energy(T, p - i - 1, j - q - 1, t, t2, S[i + 1], S[j - 1], S[p - 1],
                                           S[q + 1]))
        i = p
        j = q
    if p > q:
        return _add_or_inf(e, hairpin_energy_of_type(T, S, i, j, _eval_type(S, i, j)))
    while p < j:
        e += value[p]
        p = pt[p] + 1
        while pt[p] == 0:
            p += 1
    return _add_or_inf(e, _eval_multiloop(T, S, pt, i, j))


@njit(cache=True, nogil=True)
def eval_pair_table(T, S, pt):
    """Free energy in dcal/mol of the structure given as a pair table (pt[i] = partner or 0, 1-based, padded
    with 0 at both ends), as ViennaRNA's ``vrna_eval_structure`` computes it for one sequence: any pair is
    scored, a non-canonical one with the non-standard pair type; a hairpin of fewer than 3 unpaired
    nucleotides costs INF (10,000,000), and sums with INF follow ViennaRNA's (see :func:`_eval_helix`)."""
    n = pt.shape[0] - 2
    # The helices whose energy _eval_helix computes: those of the exterior loop and the branches of
    # multiloops. Every branch lies inside its multiloop's helix, so from the 3' end down each is ready first.
    head = np.zeros(n + 2, dtype=np.bool_)
    for i in range(1, n + 1):
        j = pt[i]
        if j <= i:
            continue
        branches = 0
        k = i + 1
        while k < j:
            if pt[k] > k:
                branches += 1
                k = pt[k] + 1
            else:
                k += 1
        if branches >= 2:
            k = i + 1
            while k < j:
                if pt[k] > k:
                    head[k] = True
                    k = pt[k] + 1
                else:
                    k += 1
    i = 1
    while i <= n:
        if pt[i] > i:
            head[i] = True
            i = pt[i] + 1
        else:
            i += 1
    value = np.zeros(n + 2, dtype=np.int64)
    for h in range(n, 0, -1):
        if head[h]:
            value[h] = _eval_helix(T, S, pt, h, value)
    d0 = T.scalars[_DANGLES] == 0
    exterior = np.int64(0)
    helices = np.int64(0)
    i = 1
    while i <= n:
        j = pt[i]
        if j > i:
            t = _eval_type(S, i, j)
            if d0:
                exterior += exterior_stem(T, t, -1, -1)
            else:
                exterior += exterior_stem(T, t, S[i - 1] if i > 1 else -1, S[j + 1] if j < n else -1)
            helices = _add_or_inf(helices, value[i])
            i = j + 1
        else:
            i += 1
    return _add_or_inf(exterior, helices)


# Characters of a structure read as unpaired: RNAeval pairs ( with ) and nothing else.
_UNPAIRED = frozenset(".:,_-[]{}<>")


def pair_table(structure: str) -> np.ndarray:
    """Dot-bracket → 1-based pair table padded with 0 at both ends; ``.:,_-`` and the pseudoknot brackets
    ``[]{}<>`` are unpaired (as RNAeval reads them); raises ValueError on unbalanced ``()`` or another
    character."""
    n = len(structure)
    pt = np.zeros(n + 2, dtype=np.int32)
    stack = []
    for k, c in enumerate(structure, start=1):
        if c == "(":
            stack.append(k)
        elif c == ")":
            if not stack:
                raise ValueError(f"unbalanced ')' at position {k}")
            o = stack.pop()
            pt[o] = k
            pt[k] = o
        elif c not in _UNPAIRED:
            raise ValueError(f"unexpected character {c!r} at position {k} (expected '(', ')' or '.')")
    if stack:
        raise ValueError(f"unbalanced '(' at position {stack[-1]}")
    return pt


def padded_codes(sequence: str) -> np.ndarray:
    S = np.zeros(len(sequence) + 2, dtype=np.int8)
    S[1:-1] = encode(sequence)
    return S


def _checked(sequence: str, structure: str) -> tuple[str, np.ndarray]:
    from .alphabet import normalise

    sequence = normalise(sequence)
    if len(sequence) != len(structure):
        raise InputError(f"sequence has {len(sequence)} nt but the structure has {len(structure)} characters")
    try:
        pt = pair_table(structure)
    except ValueError as err:
        raise InputError(f"structure: {err}") from None
    return sequence, pt


def eval_structure(sequence: str, structure: str, temperature: float = 37.0, dangles: int = 2,
                   params=None) -> int:
    """Free energy (integer dcal/mol) of ``structure`` (dot-bracket) on ``sequence`` under RNAfold's model,
    by loop decomposition: the same number ViennaRNA's ``fc.eval_structure`` gives, times 100.

    ``params``: a parameter file path (``None``: Turner 2004). Every structure RNAeval scores is scored as it
    scores it: a non-canonical pair (or one with N) gets ViennaRNA's non-standard pair type, a hairpin of fewer
    than 3 unpaired nucleotides costs ViennaRNA's INF (10,000,000 dcal/mol, added as ViennaRNA adds it),
    ``[]{}<>`` are unpaired; :func:`eval_warnings` says which of these a structure has. A length mismatch,
    unbalanced ``()`` or another character raise :class:`InputError`.
    """
    from .model import Model

    model = Model(temperature=temperature, dangles=dangles, params=params)
    sequence, pt = _checked(sequence, structure)
    return int(eval_pair_table(model.tables(), padded_codes(sequence), pt))


def eval_warnings(sequence: str, structure: str) -> list[str]:
    """What RNAeval warns about in ``structure`` (checked as :func:`eval_structure` checks it), one phrase
    each: non-canonical pairs, hairpins of fewer than 3 unpaired nucleotides, brackets read as unpaired."""
    sequence, pt = _checked(sequence, structure)
    S = padded_codes(sequence)
    odd, short = [], []
    for i in range(1, len(sequence) + 1):
        j = int(pt[i])
        if j <= i:
            continue
        if PAIR_TYPE[S[i], S[j]] == 0:
            odd.append(f"{i}-{j} ({sequence[i - 1]}-{sequence[j - 1]})")
        if j - i - 1 < MIN_HAIRPIN and not pt[i + 1:j].any():
            short.append(f"{i}-{j}")
    notes = []
    if odd:
        notes.append(f"non-canonical pair{'s' if len(odd) > 1 else ''} {', '.join(odd)} scored with the "
                     "non-standard pair type")
    if short:
        notes.append(f"hairpin{'s' if len(short) > 1 else ''} closed by {', '.join(short)} with fewer than "
                     f"{MIN_HAIRPIN} unpaired nucleotides (ViennaRNA's INF, 100000 kcal/mol)")
    other = sorted(set(structure) & set("[]{}<>"))
    if other:
        notes.append(f"{''.join(other)} read as unpaired (only () pairs)")
    return notes
