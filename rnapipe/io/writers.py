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

Results folded with the partition function (RNAfold -p) add RNAfold -p's lines to db and columns to TSV, and
have two formats more, ``bpp`` and ``unpaired``: see :mod:`.ensemble`.

The text of each format is made by :mod:`.render`, for these writers and the streamed outputs of
``rnapipe fold`` alike.

A file is written under a temporary name in the same directory, flushed to disk and renamed onto the final
name only when complete, so the final name never holds a partial file (``-`` writes to stdout instead).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import secrets
import sys
from pathlib import Path
from typing import IO, Iterable, Iterator, TextIO

from .ensemble import header as ensemble_header
from .formats import PARTITION_FORMATS, REJECTED_HEADER, check_format, header, rejected_rows
from .idtext import ID_ERRORS
from .records import Rejected
from .render import results_text

_SUFFIXES = {".tsv": "tsv", ".ct": "ct", ".bpseq": "bpseq", ".bpp": "bpp", ".unpaired": "unpaired"}
REJECTED_SUFFIX = ".rejected.tsv"
# Results rendered together by write_results (one compiled pass for db and TSV).
BATCH = 4096


def format_from_suffix(path: str | os.PathLike) -> str:
    """``tsv``, ``ct``, ``bpseq``, ``bpp`` or ``unpaired`` from the output's suffix (any case), else ``db``."""
    return _SUFFIXES.get(Path(path).suffix.lower(), "db")


def _batches(results: Iterable) -> Iterator[list]:
    """Consecutive results of one algorithm, at most BATCH at a time, in the order given."""
    for _, run in itertools.groupby(results, key=lambda r: r.algorithm):
        while batch := list(itertools.islice(run, BATCH)):
            yield batch


def write_results(results: Iterable, handle: TextIO, fmt: str, mea: bool = False) -> int:
    """Write results (objects with ``id, sequence, structure, score_int, algorithm``, and ``ensemble`` where
    folded with the partition function: see :mod:`.ensemble`; ``mea``: db prints the MEA line) in the order
    given.

    Returns the number written.
    """
    check_format(fmt)
    results = iter(results)
    first = next(results, None)
    partition = first is not None and getattr(first, "ensemble", None) is not None
    if fmt in PARTITION_FORMATS and first is not None and not partition:
        raise ValueError(f"format {fmt} holds the partition function's results: fold with partition=True")
    handle.write(ensemble_header(fmt) if partition else header(fmt))
    count = 0
    for batch in _batches(itertools.chain([first], results) if first is not None else ()):
        handle.write(results_text(fmt, batch, mea))
        count += len(batch)
    return count


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike, binary: bool = False) -> Iterator[IO]:
    """Open a file to write (UTF-8 text, the ids' bytes as :mod:`.idtext` keeps them; or bytes if ``binary``)
    under a temporary name beside ``path``; rename it onto ``path`` on success.

    On any exception (Ctrl-C included) the temporary file is removed and ``path`` is left as it was.
    The file is created with the usual permissions (0666 less the umask), not a private temp mode.
    """
    path = Path(path)
    temp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        text = {"encoding": "utf-8", "errors": ID_ERRORS, "newline": "\n"}
        with (open(fd, "wb") if binary else open(fd, "w", **text)) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    fsync_directory(path.parent)


def fsync_directory(directory: str | os.PathLike) -> None:
    """Make a rename in ``directory`` durable (POSIX); harmless where directories cannot be opened."""
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


def write_output(results: Iterable, path: str | os.PathLike, fmt: str | None = None, mea: bool = False) -> int:
    """Write results to ``path`` atomically (``"-"``: stdout); ``fmt`` defaults from the suffix; ``mea``: db
    prints the MEA line of results folded with the partition function."""
    if os.fspath(path) == "-":
        count = write_results(results, sys.stdout, fmt or "db", mea)
        sys.stdout.flush()
        return count
    with atomic_output(path) as handle:
        return write_results(results, handle, fmt or format_from_suffix(path), mea)


def rejected_path(output: str | os.PathLike) -> Path:
    """Where the rejected records of ``output`` go: ``<output>.rejected.tsv`` beside it."""
    output = Path(output)
    return output.with_name(output.name + REJECTED_SUFFIX)


def write_rejected(rejected: Iterable[Rejected], path: str | os.PathLike) -> int:
    """Write the rejected-records TSV (:func:`.formats.rejected_rows`) atomically."""
    rejected = list(rejected)
    with atomic_output(path) as handle:
        handle.write(REJECTED_HEADER)
        handle.write(rejected_rows(rejected))
    return len(rejected)
