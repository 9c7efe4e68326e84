"""The output formats' names and the pieces of text they share: scores, the TSV header, the rejected-records
list. Light (no Numba): the command line's help reads it.

The formats themselves are described in :mod:`rnapipe.io.writers`; their text is made by
:mod:`rnapipe.io.render`.
"""

from __future__ import annotations

from typing import Iterable

from .records import Rejected

FORMATS = ("db", "tsv", "ct", "bpseq", "bpp", "unpaired")
# Formats that only a fold with the partition function (--partition) writes (see rnapipe.io.ensemble).
PARTITION_FORMATS = ("bpp", "unpaired")
TSV_COLUMNS = ("id", "length", "score", "structure", "algorithm")
REJECTED_COLUMNS = ("index", "id", "file", "reason")
REJECTED_HEADER = "\t".join(REJECTED_COLUMNS) + "\n"


def check_format(fmt: str) -> None:
    """Raise ValueError for a format that is not one of :data:`FORMATS`."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r} (choose from {', '.join(FORMATS)})")


def kcal(dcal: int) -> str:
    """Exact decimal text of an integer energy in dcal/mol, in kcal/mol with two decimals."""
    sign = "-" if dcal < 0 else ""
    whole, cents = divmod(abs(int(dcal)), 100)
    return f"{sign}{whole}.{cents:02d}"


def score_text(score: int, algorithm: str) -> str:
    """A score as every format but db prints it: kcal/mol (``-1.20``) for Zuker, base pairs (``12``) else."""
    return kcal(score) if algorithm == "zuker" else str(int(score))


def header(fmt: str) -> str:
    """The text before the first record: the column names for TSV, nothing for the other formats (a fold with
    the partition function: :func:`rnapipe.io.ensemble.header`)."""
    return "\t".join(TSV_COLUMNS) + "\n" if fmt == "tsv" else ""


def _field(value) -> str:
    """One TSV field: tabs and newlines would break the row, so they become spaces."""
    return "" if value is None else " ".join(str(value).split("\t")).replace("\n", " ").replace("\r", " ")


def rejected_rows(rejected: Iterable[Rejected]) -> str:
    """The rows (``index id file reason``) of rejected records, after :data:`REJECTED_HEADER`.

    A whole file that was skipped has no record: its index and id are written as ``-``.
    """
    out = []
    for r in rejected:
        whole_file = r.id is None
        out.append("\t".join(("-" if whole_file else str(r.index), "-" if whole_file else _field(r.id),
                              _field(r.file), _field(r.reason))) + "\n")
    return "".join(out)
