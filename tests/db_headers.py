"""db output's header lines as RNAfold prints them, for references built from the Python API (whose results
carry ids only): ``>`` and the whole FASTA header line, trailing white space removed."""

from __future__ import annotations

import gzip
from pathlib import Path


def header_lines(paths) -> dict[bytes, bytes]:
    """Each record's id (the header's first word) -> its whole header line, read from the FASTA files."""
    out = {}
    for path in paths:
        data = Path(path).read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        for line in data.removeprefix(b"\xef\xbb\xbf").splitlines():
            if line.startswith(b">") and line[1:].split():
                out.setdefault(line[1:].split(None, 1)[0], line[1:].rstrip())
    return out


def with_header_lines(db: bytes, paths) -> bytes:
    """``db`` text written with ``>id`` lines, each replaced by ``>`` and the record's whole header line."""
    heads = header_lines(paths)
    return b"".join(b">" + heads[line[1:-1]] + b"\n" if line.startswith(b">") else line
                    for line in db.splitlines(keepends=True))
