"""Result writers: RNAfold-style dot-bracket, TSV, CT and BPSEQ; atomic files; the rejected-records list.

Formats (one record after another, in input order):

``db``     RNAfold's own layout: ``>id``, the sequence, then the structure and the score in brackets.
           Zuker: kcal/mol with two decimals in a field of six, exactly as RNAfold prints it
           (``((...)) ( -1.20)``, ``....... (  0.00)``, ``(-12.30)``). Nussinov: the number of base pairs
           in a field of three (``( 12)``, ``(  0)``); RNAfold has no such score, so we chose this.
``tsv``    a header, then ``id  length  score  structure  algorithm`` per record; score is pairs for
           Nussinov and kcal/mol with two decimals for Zuker.
``ct``     connect format, records concatenated; the title line is ``N  ENERGY = -1.20  id`` (Zuker) or
           ``N  PAIRS = 12  id`` (Nussinov).
``bpseq``  ``# id`` and ``# score ...`` comment lines, then ``index base partner``; records concatenated.

A file is written under a temporary name in the same directory, flushed to disk and renamed onto the final
name only when complete, so the final name never holds a partial file (``-`` writes to stdout instead).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sys
from pathlib import Path
from typing import Callable, Iterable, Iterator, TextIO

from .. import structure as _structure
from .records import Rejected

FORMATS = ("db", "tsv", "ct", "bpseq")
_SUFFIXES = {".tsv": "tsv", ".ct": "ct", ".bpseq": "bpseq"}
TSV_COLUMNS = ("id", "length", "score", "structure", "algorithm")
REJECTED_COLUMNS = ("index", "id", "file", "reason")
REJECTED_SUFFIX = ".rejected.tsv"


def format_from_suffix(path: str | os.PathLike) -> str:
    """``tsv``, ``ct`` or ``bpseq`` from the output's suffix (any case), else ``db``."""
    return _SUFFIXES.get(Path(path).suffix.lower(), "db")


def kcal(dcal: int) -> str:
    """Exact decimal text of an integer energy in dcal/mol, in kcal/mol with two decimals."""
    sign = "-" if dcal < 0 else ""
    whole, cents = divmod(abs(int(dcal)), 100)
    return f"{sign}{whole}.{cents:02d}"


def score_text(result) -> str:
    return kcal(result.score_int) if result.algorithm == "zuker" else str(int(result.score_int))


def format_db(result) -> str:
    if result.algorithm == "zuker":
        score = f"({kcal(result.score_int):>6})"
    else:
        score = f"({int(result.score_int):3d})"
    return f">{result.id}\n{result.sequence}\n{result.structure} {score}\n"


def format_tsv(result) -> str:
    return "\t".join((result.id, str(len(result.sequence)), score_text(result), result.structure,
                      result.algorithm)) + "\n"


def format_ct(result) -> str:
    label = "ENERGY" if result.algorithm == "zuker" else "PAIRS"
    title = f"{label} = {score_text(result)}  {result.id}"
    return _structure.to_ct(result.sequence, _structure.pair_table(result.structure), title)


def format_bpseq(result) -> str:
    unit = " kcal/mol" if result.algorithm == "zuker" else " pairs"
    comments = (result.id, f"{result.algorithm} score: {score_text(result)}{unit}")
    return _structure.to_bpseq(result.sequence, _structure.pair_table(result.structure), comments)


_FORMATTERS: dict[str, Callable] = {"db": format_db, "tsv": format_tsv, "ct": format_ct, "bpseq": format_bpseq}


def write_results(results: Iterable, handle: TextIO, fmt: str) -> int:
    """Write results (objects with ``id, sequence, structure, score_int, algorithm``) in the order given.

    Returns the number written.
    """
    if fmt not in _FORMATTERS:
        raise ValueError(f"unknown format {fmt!r} (choose from {', '.join(FORMATS)})")
    formatter = _FORMATTERS[fmt]
    if fmt == "tsv":
        handle.write("\t".join(TSV_COLUMNS) + "\n")
    count = 0
    for result in results:
        handle.write(formatter(result))
        count += 1
    return count


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike) -> Iterator[TextIO]:
    """Open a text file to write under a temporary name beside ``path``; rename it onto ``path`` on success.

    On any exception (Ctrl-C included) the temporary file is removed and ``path`` is left as it was.
    The file is created with the usual permissions (0666 less the umask), not a private temp mode.
    """
    path = Path(path)
    temp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with open(fd, "w", encoding="utf-8", newline="\n") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    _fsync_directory(path.parent)


def _fsync_directory(directory: Path) -> None:
    """Make the rename itself durable (POSIX); harmless where directories cannot be opened."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_output(results: Iterable, path: str | os.PathLike, fmt: str | None = None) -> int:
    """Write results to ``path`` atomically (``"-"``: stdout); ``fmt`` defaults from the suffix."""
    if os.fspath(path) == "-":
        count = write_results(results, sys.stdout, fmt or "db")
        sys.stdout.flush()
        return count
    with atomic_output(path) as handle:
        return write_results(results, handle, fmt or format_from_suffix(path))


def rejected_path(output: str | os.PathLike) -> Path:
    """Where the rejected records of ``output`` go: ``<output>.rejected.tsv`` beside it."""
    output = Path(output)
    return output.with_name(output.name + REJECTED_SUFFIX)


def _field(value) -> str:
    """One TSV field: tabs and newlines would break the row, so they become spaces."""
    return "" if value is None else " ".join(str(value).split("\t")).replace("\n", " ").replace("\r", " ")


def write_rejected(rejected: Iterable[Rejected], path: str | os.PathLike) -> int:
    """Write the rejected-records TSV (``index id file reason``) atomically.

    A whole file that was skipped has no record: its index and id are written as ``-``.
    """
    count = 0
    with atomic_output(path) as handle:
        handle.write("\t".join(REJECTED_COLUMNS) + "\n")
        for r in rejected:
            whole_file = r.id is None
            row = ("-" if whole_file else str(r.index), "-" if whole_file else _field(r.id), _field(r.file),
                   _field(r.reason))
            handle.write("\t".join(row) + "\n")
            count += 1
    return count
