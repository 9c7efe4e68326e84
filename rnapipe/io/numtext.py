"""The partition function's long outputs as bytes, made in compiled code: the bpp format's lines (``id i j p``)
and the unpaired format's (``id p p ...``), each probability as C's and Python's ``%.6g``, byte for byte.

A probability's six significant digits come from a product with a power of ten; where that product lies within
1e-6 of a rounding tie (or the value is not a positive finite number) the digits are Python's own
(``format(x, ".6g")``), so the text is always the correctly rounded one.
"""

from __future__ import annotations

import numpy as np
from numba import njit

WIDTH = 16                           # bytes of one value's text at most ("-1.23457e-100" is 13)
_MARGIN = 1e-6                       # how close to a tie the fast digits are not trusted
# 10^k, k = -350 .. 350, each the double nearest (inf beyond the range)
_POW10 = np.array([float(f"1e{k}") for k in range(-350, 351)])
FAST, ZERO, PYTHON = 0, 1, 2         # how a value's text is made: its digits, "0", Python's format


@njit(cache=True, nogil=True)
def _digits(x, P):
    """(r, e, ok): x's six significant digits r (100000 .. 999999) and decimal exponent e, x = r·10^(e-5)
    rounded to nearest; ok False where x is not positive and finite or lies too near a tie."""
    if not (x > 0.0 and x < np.inf):
        return 0, 0, False
    e = int(np.floor(np.log10(x)))
    m = 0.0
    for _ in range(3):
        if not -345 <= e <= 345:
            return 0, 0, False
        m = x / P[e - 5 + 350] if e >= 5 else x * P[5 - e + 350]
        if m < 1e5:
            e -= 1
        elif m >= 1e6:
            e += 1
        else:
            break
    if not (1e5 <= m < 1e6):
        return 0, 0, False
    f = m - np.floor(m)
    if abs(f - 0.5) < _MARGIN:
        return 0, 0, False
    r = int(np.floor(m + 0.5))
    if r == 1000000:
        r = 100000
        e += 1
    return r, e, True


@njit(cache=True, nogil=True)
def _fixed(v, w, out, o):
    """Write v's last w decimal digits (zero-padded) at out[o:o+w]; returns o + w."""
    u = np.uint64(v)
    ten = np.uint64(10)
    for c in range(o + w - 1, o - 1, -1):
        out[c] = np.uint8(48) + np.uint8(u % ten)
        u //= ten
    return o + w


@njit(cache=True, nogil=True)
def _g6(r, e, out, o):
    """Write %.6g of r·10^(e-5) at out[o:]; returns the end."""
    nd = 6                                          # significant digits once trailing zeros are dropped
    while nd > 1 and r % 10 == 0:
        r //= 10
        nd -= 1
    if -4 <= e < 6:
        if e < 0:
            out[o] = 48
            out[o + 1] = 46
            o += 2
            for _ in range(-e - 1):
                out[o] = 48
                o += 1
            return _fixed(r, nd, out, o)
        if nd <= e + 1:                             # no fraction left
            o = _fixed(r, nd, out, o)
            for _ in range(e + 1 - nd):
                out[o] = 48
                o += 1
            return o
        frac = nd - e - 1
        scale = 1
        for _ in range(frac):
            scale *= 10
        o = _fixed(r // scale, e + 1, out, o)
        out[o] = 46
        return _fixed(r % scale, frac, out, o + 1)
    scale = 1
    for _ in range(nd - 1):
        scale *= 10
    out[o] = 48 + r // scale
    o += 1
    if nd > 1:
        out[o] = 46
        o = _fixed(r % scale, nd - 1, out, o + 1)
    out[o] = 101
    out[o + 1] = 45 if e < 0 else 43
    a = -e if e < 0 else e
    return _fixed(a, 3 if a >= 100 else 2, out, o + 2)


@njit(cache=True, nogil=True)
def _plan(x, zero_below, P, R, E, K):
    """Each x[k]'s digits R[k], exponent E[k] and way K[k] (FAST, ZERO: "0" for values not above 0 with
    ``zero_below``, PYTHON)."""
    for k in range(x.shape[0]):
        v = x[k]
        if zero_below and not v > 0.0:
            K[k] = ZERO
            continue
        r, e, ok = _digits(v, P)
        R[k] = r
        E[k] = e
        K[k] = FAST if ok else PYTHON


def _values(x: np.ndarray, zero_below: bool):
    """(R, E, K, FB, FO): :func:`_plan`'s arrays and the texts of the values K marks PYTHON, in order, as
    FB[FO[m]:FO[m+1]]."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    R = np.empty(x.shape[0], dtype=np.int64)
    E = np.empty(x.shape[0], dtype=np.int64)
    K = np.empty(x.shape[0], dtype=np.int8)
    _plan(x, zero_below, _POW10, R, E, K)
    texts = [format(float(v), ".6g").encode("ascii") for v in x[K == PYTHON].tolist()]
    FB = np.frombuffer(b"".join(texts) or b" ", dtype=np.uint8)
    FO = np.zeros(len(texts) + 1, dtype=np.int64)
    FO[1:] = np.cumsum([len(t) for t in texts])
    return R, E, K, FB, FO


@njit(cache=True, nogil=True)
def _value(R, E, K, FB, FO, k, f, out, o):
    """Write value k's text at out[o:] (f: the PYTHON values before it); returns (end, f)."""
    if K[k] == FAST:
        return _g6(R[k], E[k], out, o), f
    if K[k] == ZERO:
        out[o] = 48
        return o + 1, f
    for c in range(FO[f], FO[f + 1]):
        out[o] = FB[c]
        o += 1
    return o, f + 1


@njit(cache=True, nogil=True)
def _int(v, out, o):
    """Write the integer v at out[o:]; returns the end."""
    if v < 0:
        out[o] = 45
        o += 1
        v = -v
    w = 1
    t = np.uint64(v) // np.uint64(10)
    while t:
        w += 1
        t //= np.uint64(10)
    return _fixed(v, w, out, o)


@njit(cache=True, nogil=True)
def _bpp(rid, I, J, R, E, K, FB, FO, out):
    o = 0
    f = 0
    for k in range(I.shape[0]):
        for c in range(rid.shape[0]):
            out[o + c] = rid[c]
        o += rid.shape[0]
        out[o] = 9
        o = _int(I[k], out, o + 1)
        out[o] = 9
        o = _int(J[k], out, o + 1)
        out[o] = 9
        o, f = _value(R, E, K, FB, FO, k, f, out, o + 1)
        out[o] = 10
        o += 1
    return o


@njit(cache=True, nogil=True)
def _row(rid, R, E, K, FB, FO, out):
    o = rid.shape[0]
    out[:o] = rid
    f = 0
    for k in range(K.shape[0]):
        out[o] = 9
        o, f = _value(R, E, K, FB, FO, k, f, out, o + 1)
    out[o] = 10
    return o + 1


def bpp_bytes(rid: bytes, i: np.ndarray, j: np.ndarray, p: np.ndarray) -> bytes:
    """One record's bpp lines: ``rid`` (the id's bytes), a tab, i, a tab, j, a tab, p (``%.6g``), a newline,
    for each pair."""
    values = _values(p, False)
    I = np.ascontiguousarray(i, dtype=np.int64)
    J = np.ascontiguousarray(j, dtype=np.int64)
    out = np.empty(I.shape[0] * (len(rid) + 3 + 2 * 20 + WIDTH + 1), dtype=np.uint8)
    end = _bpp(np.frombuffer(rid, dtype=np.uint8), I, J, *values, out)
    return out[:end].tobytes()


def unpaired_bytes(rid: bytes, u: np.ndarray) -> bytes:
    """One record's unpaired line: ``rid``, then for each nucleotide a tab and its probability (``%.6g``; "0"
    where it is not above 0), a newline."""
    values = _values(u, True)
    out = np.empty(len(rid) + len(u) * (WIDTH + 1) + 1, dtype=np.uint8)
    end = _row(np.frombuffer(rid, dtype=np.uint8), *values, out)
    return out[:end].tobytes()
