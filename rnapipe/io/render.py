"""The text of results in each output format (see :mod:`rnapipe.io.writers` for the formats), for the writers
of the Python API and the streamed outputs of ``rnapipe fold`` alike.

db and TSV: one compiled pass over packed texts (:mod:`.packed`: ids, sequences and structures each as one
buffer with a newline after every record, and their lengths) and int64 scores, writing straight into one
byte buffer, with no Python object per record. CT and BPSEQ: per record, from the structure's pair table
(:func:`rnapipe.structure.to_ct`, :func:`rnapipe.structure.to_bpseq`).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from numba import njit

from .. import structure as _structure
from . import ensemble, packed
from .formats import PARTITION_FORMATS, check_format, score_text
from .idtext import ID_ERRORS


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
    """The score as the formats print it: Zuker kcal/mol ``-1.20``, Nussinov pairs ``12``; right-aligned in
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
def _render(ids, id_starts, seqs, seq_starts, sts, st_starts, scores, zuker, tsv, algorithm, out):
    """db or TSV text of packed records (record k of ``ids`` at ``id_starts[k]`` up to the newline before
    ``id_starts[k + 1]``, and so on) into ``out``; returns the end. For db, ``ids`` are the header lines: an
    empty one (a sequence read without a header) prints no header line, as RNAfold does."""
    tmp = np.empty(24, dtype=np.uint8)
    at = 0
    for k in range(scores.shape[0]):
        i0, i1 = id_starts[k], id_starts[k + 1] - 1
        s0, s1 = seq_starts[k], seq_starts[k + 1] - 1
        t0, t1 = st_starts[k], st_starts[k + 1] - 1
        ni, ns, nt = i1 - i0, s1 - s0, t1 - t0
        if tsv:
            out[at:at + ni] = ids[i0:i1]
            at += ni
            out[at] = 9
            at = _digits(ns, out, at + 1)
            out[at] = 9
            at = _score(scores[k], zuker, 0, out, at + 1, tmp)
            out[at] = 9
            at += 1
            out[at:at + nt] = sts[t0:t1]
            at += nt
            out[at] = 9
            at += 1
            out[at:at + algorithm.shape[0]] = algorithm
            at += algorithm.shape[0]
            out[at] = 10
            at += 1
        else:
            if ni > 0:
                out[at] = 62
                at += 1
                out[at:at + ni] = ids[i0:i1]
                at += ni
                out[at] = 10
                at += 1
            out[at:at + ns] = seqs[s0:s1]
            at += ns
            out[at] = 10
            at += 1
            out[at:at + nt] = sts[t0:t1]
            at += nt
            out[at] = 32
            out[at + 1] = 40
            at = _score(scores[k], zuker, 6 if zuker else 3, out, at + 2, tmp)
            out[at] = 41
            out[at + 1] = 10
            at += 2
    return at


def _starts(text: bytes, lens: np.ndarray, what: str) -> np.ndarray:
    starts = packed.offsets(lens)
    if starts[-1] != len(text):
        raise ValueError(f"the packed {what} hold {len(text)} bytes, their lengths say {int(starts[-1])}")
    return starts


def ct_record(record_id: str, sequence: str, structure: str, score: int, algorithm: str) -> str:
    """One CT record; its title line is ``N  ENERGY = -1.20  id`` (Zuker) or ``N  PAIRS = 12  id``."""
    label = "ENERGY" if algorithm == "zuker" else "PAIRS"
    title = f"{label} = {score_text(score, algorithm)}  {record_id}"
    return _structure.to_ct(sequence, _structure.pair_table(structure), title)


def bpseq_record(record_id: str, sequence: str, structure: str, score: int, algorithm: str) -> str:
    """One BPSEQ record: ``# id`` and ``# <algorithm> score: ...`` comment lines, then its bases."""
    unit = " kcal/mol" if algorithm == "zuker" else " pairs"
    comments = (record_id, f"{algorithm} score: {score_text(score, algorithm)}{unit}")
    return _structure.to_bpseq(sequence, _structure.pair_table(structure), comments)


_RECORD = {"ct": ct_record, "bpseq": bpseq_record}


def render(fmt: str, algorithm: str, ids_text: bytes, id_lens: np.ndarray, seqs_text: bytes, lens: np.ndarray,
           structures_text: bytes, scores: np.ndarray, structure_lens: np.ndarray | None = None,
           heads_text: bytes | None = None, head_lens: np.ndarray | None = None):
    """The ``fmt`` text (no TSV header) of results given as packed texts: ids (UTF-8, ``id_lens`` bytes
    each), sequences (``lens`` nt) and structures (``structure_lens``, by default ``lens``), and int64
    scores; db prints the header lines ``heads_text`` (``head_lens`` bytes each; by default the ids). A
    bytes-like object: db and TSV come as a uint8 array (no copy into a bytes object)."""
    check_format(fmt)
    if fmt in PARTITION_FORMATS:
        raise ValueError(f"format {fmt} holds the partition function's results: these results have none")
    if fmt == "db" and heads_text is not None:
        ids_text, id_lens = heads_text, head_lens
    structure_lens = lens if structure_lens is None else structure_lens
    if fmt in _RECORD:
        record = _RECORD[fmt]
        ids = [i.decode("utf-8", ID_ERRORS) for i in packed.split(ids_text, id_lens)]
        seqs = [s.decode("ascii") for s in packed.split(seqs_text, lens)]
        structures = [t.decode("ascii") for t in packed.split(structures_text, structure_lens)]
        text = "".join([record(i, s, t, e, algorithm) for i, s, t, e in zip(ids, seqs, structures, scores.tolist())])
        return text.encode("utf-8", ID_ERRORS)
    count = scores.shape[0]
    if count == 0:
        return np.zeros(0, dtype=np.uint8)
    name = np.frombuffer(algorithm.encode("ascii"), dtype=np.uint8)
    size = len(ids_text) + len(seqs_text) + len(structures_text) + count * (48 + len(name))
    out = np.empty(size, dtype=np.uint8)
    end = _render(np.frombuffer(ids_text, dtype=np.uint8), _starts(ids_text, id_lens, "ids"),
                  np.frombuffer(seqs_text, dtype=np.uint8), _starts(seqs_text, lens, "sequences"),
                  np.frombuffer(structures_text, dtype=np.uint8),
                  _starts(structures_text, structure_lens, "structures"),
                  scores, algorithm == "zuker", fmt == "tsv", name, out)
    return out[:end]


def results_text(fmt: str, results: Sequence, mea: bool = False) -> str:
    """The ``fmt`` text (no TSV header) of results (objects with ``id, sequence, structure, score_int,
    algorithm``, and ``ensemble`` where folded with the partition function: db then prints RNAfold -p's lines,
    the MEA line with ``mea``; see :mod:`.ensemble`) of one algorithm."""
    if not results:
        return ""
    algorithm = results[0].algorithm
    if getattr(results[0], "ensemble", None) is not None and fmt not in _RECORD:
        ids = [r.id for r in results]
        text = ensemble.render(fmt, algorithm, ids, ids, [r.sequence for r in results],
                               [r.structure for r in results], [int(r.score_int) for r in results],
                               ensemble.EnsembleChunk([r.ensemble for r in results], mea))
        return text.decode("utf-8", ID_ERRORS)
    if fmt in _RECORD:
        record = _RECORD[fmt]
        return "".join([record(r.id, r.sequence, r.structure, r.score_int, algorithm) for r in results])
    ids_text, id_lens = packed.pack([r.id for r in results], "utf-8", ID_ERRORS)
    seqs_text, lens = packed.pack([r.sequence for r in results])
    structures_text, structure_lens = packed.pack([r.structure for r in results])
    scores = np.array([int(r.score_int) for r in results], dtype=np.int64)
    return render(fmt, algorithm, ids_text, id_lens, seqs_text, lens, structures_text, scores,
                  structure_lens).tobytes().decode("utf-8", ID_ERRORS)
