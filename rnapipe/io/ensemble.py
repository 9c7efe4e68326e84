"""The partition function's results (RNAfold ``-p``) as the outputs print them: one record's values
(:class:`Ensemble`), a chunk's (:class:`EnsembleChunk`), and their text in each format.

``db``        RNAfold -p's lines after the MFE line, as src/bin/RNAfold.c prints them: the ensemble's
              pseudo-bracket line ``[%6.2f]`` (ensemble free energy), the centroid ``{%6.2f d=%.2f}`` (its free
              energy and distance), with ``--MEA`` the MEA structure ``{%6.2f MEA=%.2f}`` (its free energy and
              expected accuracy, single precision as there), then `` frequency of mfe structure in ensemble %g;
              ensemble diversity %-6.2f``.
``tsv``       the MFE columns, then :data:`TSV_COLUMNS` (numbers as the db lines print them).
``bpp``       a header ``id i j p``, then one line per pair of probability above the threshold: the id, i < j
              (1-based) and the probability (``%.6g``), tab-separated, records in input order, pairs by i then j.
``unpaired``  one line per record: the id, then each nucleotide's probability of being unpaired (``%.6g``, the
              rounding below 0 of a nucleotide paired for certain printed as 0), tab-separated.
``pfjob``     the workflow's fold jobs' own: the db record's three lines, then every value in full precision
              (the numbers as Python's ``repr``, the arrays as their bytes in base64: read back exactly,
              :func:`read_job_values`), so that the merge prints every format byte for byte as one
              ``rnapipe fold --partition`` does.
"""

from __future__ import annotations

import base64
from typing import NamedTuple, Sequence

import numpy as np

from .formats import TSV_COLUMNS as MFE_COLUMNS, kcal
from .idtext import ID_ERRORS

JOB_FORMAT = "pfjob"
JOB_LINES = 6                                  # lines of one record in the pfjob format
TSV_COLUMNS = ("ensemble_structure", "ensemble_energy", "mfe_frequency", "ensemble_diversity", "centroid",
               "centroid_energy", "centroid_distance", "mea", "mea_energy", "mea_accuracy")
BPP_HEADER = "id\ti\tj\tp\n"


class Ensemble(NamedTuple):
    """One sequence's ensemble, as RNAfold -p reports it: the ensemble free energy (kcal/mol), the frequency of
    the MFE structure in the ensemble, the ensemble diversity (mean base-pair distance), the pseudo-bracket
    line of the ensemble, the centroid structure, its free energy (dcal/mol) and distance to the ensemble, the
    MEA structure, its free energy (dcal/mol) and expected accuracy; the pairs of probability above the
    threshold (``i``, ``j``: 1-based, i < j; ``p``) and each nucleotide's probability of being unpaired."""

    energy: float
    mfe_frequency: float
    diversity: float
    pseudo: str
    centroid: str
    centroid_energy: int
    centroid_distance: float
    mea: str
    mea_energy: int
    mea_accuracy: float
    i: np.ndarray
    j: np.ndarray
    p: np.ndarray
    unpaired: np.ndarray

    @property
    def bpp(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The sparse pair probabilities ``(i, j, p)``."""
        return self.i, self.j, self.p

    @classmethod
    def of(cls, r) -> "Ensemble":
        """From a :class:`rnapipe.cpu.partition.PartitionResult`."""
        return cls(float(r.energy), float(r.mfe_frequency), float(r.diversity), r.pseudo, r.centroid,
                   int(r.centroid_energy), float(r.centroid_distance), r.mea, int(r.mea_energy),
                   float(r.mea_accuracy), r.i, r.j, r.p, r.unpaired)


class EnsembleChunk:
    """The ensembles of a chunk's records, in its order; ``mea``: the db output prints the MEA line (RNAfold's
    ``--MEA``)."""

    __slots__ = ("values", "mea")

    def __init__(self, values: list[Ensemble], mea: bool = False):
        self.values = values
        self.mea = mea

    def __len__(self) -> int:
        return len(self.values)

    def take(self, a: int, b: int) -> "EnsembleChunk":
        return EnsembleChunk(self.values[a:b], self.mea)

    def keep(self, mask: np.ndarray) -> "EnsembleChunk":
        return EnsembleChunk([v for v, k in zip(self.values, mask.tolist()) if k], self.mea)


def header(fmt: str) -> str:
    """The text before the first record of a fold with the partition function."""
    if fmt == "tsv":
        return "\t".join(MFE_COLUMNS + TSV_COLUMNS) + "\n"
    if fmt == "bpp":
        return BPP_HEADER
    return ""


def _mea_accuracy(value: float) -> str:
    """RNAfold's ``%.2f`` of the expected accuracy, which it holds in single precision."""
    return f"{float(np.float32(value)):.2f}"


def db_lines(e: Ensemble, mea: bool) -> str:
    """RNAfold -p's lines after the MFE line (see the module docstring)."""
    out = [f"{e.pseudo} [{e.energy:6.2f}]\n",
           f"{e.centroid} {{{kcal(e.centroid_energy):>6} d={e.centroid_distance:.2f}}}\n"]
    if mea:
        out.append(f"{e.mea} {{{kcal(e.mea_energy):>6} MEA={_mea_accuracy(e.mea_accuracy)}}}\n")
    out.append(f" frequency of mfe structure in ensemble {e.mfe_frequency:g}; "
               f"ensemble diversity {e.diversity:<6.2f}\n")
    return "".join(out)


def tsv_fields(e: Ensemble) -> str:
    """The TSV columns of :data:`TSV_COLUMNS`, tab-separated (no newline)."""
    return "\t".join((e.pseudo, f"{e.energy:.2f}", f"{e.mfe_frequency:g}", f"{e.diversity:.2f}", e.centroid,
                      kcal(e.centroid_energy), f"{e.centroid_distance:.2f}", e.mea, kcal(e.mea_energy),
                      _mea_accuracy(e.mea_accuracy)))


def job_lines(e: Ensemble) -> str:
    """The three lines the pfjob format adds to a db record: the structures and the numbers (each double as
    its ``repr``), the unpaired probabilities (little-endian float64, base64), the pairs (i and j as
    little-endian int32, then p as float64, base64)."""
    numbers = " ".join([e.pseudo, e.centroid, e.mea, repr(e.energy), repr(e.mfe_frequency), repr(e.diversity),
                        str(e.centroid_energy), repr(e.centroid_distance), str(e.mea_energy),
                        repr(e.mea_accuracy)])
    unpaired = base64.b64encode(np.asarray(e.unpaired, dtype="<f8").tobytes()).decode("ascii")
    pairs = base64.b64encode(np.asarray(e.i, dtype="<i4").tobytes() + np.asarray(e.j, dtype="<i4").tobytes()
                             + np.asarray(e.p, dtype="<f8").tobytes()).decode("ascii")
    return f"{numbers}\n{unpaired}\n{pairs}\n"


def read_job_values(numbers: bytes, unpaired: bytes, pairs: bytes) -> Ensemble:
    """One record's :class:`Ensemble` from the three lines :func:`job_lines` wrote (each with its newline)."""
    f = numbers.decode("ascii").split()
    u = np.frombuffer(base64.b64decode(unpaired.strip()), dtype="<f8").astype(np.float64)
    t = base64.b64decode(pairs.strip())
    k = len(t) // 16
    i = np.frombuffer(t, dtype="<i4", count=k).astype(np.int32)
    j = np.frombuffer(t, dtype="<i4", count=k, offset=4 * k).astype(np.int32)
    p = np.frombuffer(t, dtype="<f8", count=k, offset=8 * k).astype(np.float64)
    return Ensemble(float(f[3]), float(f[4]), float(f[5]), f[0], f[1], int(f[6]), float(f[7]), f[2], int(f[8]),
                    float(f[9]), i, j, p, u)


def render(fmt: str, algorithm: str, ids: Sequence[str], heads: Sequence[str], seqs: Sequence[str],
           structures: Sequence[str], scores: Sequence[int], ensembles: EnsembleChunk) -> bytes:
    """The ``fmt`` text (no header) of records folded with the partition function: ``ids`` (TSV, bpp,
    unpaired), ``heads`` (the db header lines; empty: none printed, as RNAfold), the sequences as printed,
    the MFE structures and scores (dcal/mol) and their ensembles."""
    out: list[str] = []
    values = ensembles.values
    if fmt in ("db", JOB_FORMAT):
        job = fmt == JOB_FORMAT
        for head, seq, st, score, e in zip(heads, seqs, structures, scores, values):
            if head:
                out.append(f">{head}\n")
            out.append(f"{seq}\n{st} ({kcal(score):>6})\n")
            out.append(job_lines(e) if job else db_lines(e, ensembles.mea))
    elif fmt == "tsv":
        for rid, seq, st, score, e in zip(ids, seqs, structures, scores, values):
            out.append(f"{rid}\t{len(seq)}\t{kcal(score)}\t{st}\t{algorithm}\t{tsv_fields(e)}\n")
    elif fmt == "bpp":
        from .numtext import bpp_bytes
        return b"".join([bpp_bytes(rid.encode("utf-8", ID_ERRORS), e.i, e.j, e.p) for rid, e in zip(ids, values)])
    elif fmt == "unpaired":
        from .numtext import unpaired_bytes
        return b"".join([unpaired_bytes(rid.encode("utf-8", ID_ERRORS), e.unpaired) for rid, e in zip(ids, values)])
    else:
        raise ValueError(f"format {fmt!r} has no partition-function text")
    return "".join(out).encode("utf-8", ID_ERRORS)
