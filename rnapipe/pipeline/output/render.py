"""The db and TSV text of a chunk's results, written by one compiled pass over packed buffers (ids,
sequences and structures each one newline apart, scores as integers) instead of a string a record.
Byte for byte what :mod:`rnapipe.io.writers` writes (tests/test_resume.py compares them).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(nogil=True, cache=True, inline="always")
def _digits(value, out, at):
    """Decimal digits of a non-negative integer at ``out[at:]``; returns the end."""
    if value == 0:
        out[at] = 48
        return at + 1
    n = 0
    v = value
    while v > 0:
        n += 1
        v //= 10
    end = at + n
    v = value
    for p in range(end - 1, at - 1, -1):
        out[p] = 48 + v % 10
        v //= 10
    return end


@njit(nogil=True, cache=True)
def _score(value, zuker, width, out, at, tmp):
    """The score as the writers print it: Zuker kcal/mol ``-1.20``, Nussinov pairs ``12``; right-aligned in
    ``width`` (0: no padding). ``tmp``: 24 bytes of scratch."""
    k = 0
    if zuker:
        v = value
        if v < 0:
            tmp[k] = 45
            k += 1
            v = -v
        k = _digits(v // 100, tmp, k)
        tmp[k] = 46
        tmp[k + 1] = 48 + (v % 100) // 10
        tmp[k + 2] = 48 + v % 10
        k += 3
    else:
        v = value
        if v < 0:
            tmp[k] = 45
            k += 1
            v = -v
        k = _digits(v, tmp, k)
    for p in range(width - k):
        out[at] = 32
        at += 1
    for p in range(k):
        out[at + p] = tmp[p]
    return at + k


@njit(nogil=True, cache=True)
def _line_ends(buf, count):
    ends = np.empty(count, dtype=np.int64)
    k = 0
    for p in range(buf.shape[0]):
        if buf[p] == 10:
            ends[k] = p
            k += 1
    return ends


@njit(nogil=True, cache=True)
def _render(ids, seqs, sts, scores, zuker, tsv, algorithm, out):
    count = scores.shape[0]
    ie = _line_ends(ids, count)
    se = _line_ends(seqs, count)
    te = _line_ends(sts, count)
    tmp = np.empty(24, dtype=np.uint8)
    at = 0
    i0 = 0
    s0 = 0
    t0 = 0
    for k in range(count):
        ni = ie[k] - i0
        ns = se[k] - s0
        nt = te[k] - t0
        if tsv:
            out[at:at + ni] = ids[i0:ie[k]]
            at += ni
            out[at] = 9
            at = _digits(ns, out, at + 1)
            out[at] = 9
            at = _score(scores[k], zuker, 0, out, at + 1, tmp)
            out[at] = 9
            at += 1
            out[at:at + nt] = sts[t0:te[k]]
            at += nt
            out[at] = 9
            at += 1
            out[at:at + algorithm.shape[0]] = algorithm
            at += algorithm.shape[0]
            out[at] = 10
            at += 1
        else:
            out[at] = 62
            at += 1
            out[at:at + ni] = ids[i0:ie[k]]
            at += ni
            out[at] = 10
            at += 1
            out[at:at + ns] = seqs[s0:se[k]]
            at += ns
            out[at] = 10
            at += 1
            out[at:at + nt] = sts[t0:te[k]]
            at += nt
            out[at] = 32
            out[at + 1] = 40
            at = _score(scores[k], zuker, 6 if zuker else 3, out, at + 2, tmp)
            out[at] = 41
            out[at + 1] = 10
            at += 2
        i0 = ie[k] + 1
        s0 = se[k] + 1
        t0 = te[k] + 1
    return at


def render(fmt: str, algorithm: str, ids_text: bytes, seqs_text: bytes, structures_text: bytes,
           scores: np.ndarray) -> np.ndarray:
    """``fmt`` (db or tsv) text of records given as newline-joined ids, sequences and structures (UTF-8
    bytes, each with a final newline) and int64 scores, as a uint8 array (no copy into a bytes object)."""
    count = scores.shape[0]
    if count == 0:
        return np.zeros(0, dtype=np.uint8)
    tsv = fmt == "tsv"
    name = np.frombuffer(algorithm.encode("ascii"), dtype=np.uint8)
    size = len(ids_text) + len(seqs_text) + len(structures_text) + count * (48 + len(name))
    out = np.empty(size, dtype=np.uint8)
    end = _render(np.frombuffer(ids_text, dtype=np.uint8), np.frombuffer(seqs_text, dtype=np.uint8),
                  np.frombuffer(structures_text, dtype=np.uint8), scores, algorithm == "zuker", tsv, name, out)
    return out[:end]
