"""Outputs of a streamed fold: each chunk's results formatted once per output and appended to the
output's part file; compressed by suffix (``.gz``: one gzip member a chunk, no time stamp, so that a
resumed run writes the same bytes); renamed onto the output name when the run is complete.

The text is the same, byte for byte, as :mod:`rnapipe.io.writers` writes for the same results.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import sys
from typing import BinaryIO, NamedTuple

from ...io import writers
from ...io.records import Rejected
from ..resume.journal import part_path

GZIP_LEVEL = 6
# A part file's pages are handed to the disk (written back, not waited for) each time this much is written,
# so that the fsync before the final rename finds little left to write.
WRITEBACK_BYTES = 32 << 20


def format_of(path: str, fmt: str | None = None) -> str:
    """The format of an output: given, or from its suffix with a trailing ``.gz`` ignored."""
    if fmt:
        return fmt
    base = path[:-3] if path.lower().endswith(".gz") else path
    return writers.format_from_suffix(base)


class _Row(NamedTuple):
    id: str
    sequence: str
    structure: str
    score_int: int
    algorithm: str


def _db_scores(algorithm: str):
    cache: dict[int, str] = {}

    def text(e: int) -> str:
        s = cache.get(e)
        if s is None:
            s = cache[e] = f"({writers.kcal(e):>6})" if algorithm == "zuker" else f"({int(e):3d})"
        return s
    return text


def format_chunk(fmt: str, algorithm: str, ids, seqs, structures, scores) -> str:
    """The text of one chunk's results in ``fmt`` (no TSV header)."""
    if fmt == "db":
        score = _db_scores(algorithm)
        return "".join([f">{i}\n{s}\n{t} {score(e)}\n" for i, s, t, e in zip(ids, seqs, structures, scores)])
    if fmt == "tsv":
        if algorithm == "zuker":
            cache: dict[int, str] = {}
            texts = [cache.get(e) or cache.setdefault(e, writers.kcal(e)) for e in scores]
        else:
            texts = map(str, scores)
        return "".join([f"{i}\t{len(s)}\t{x}\t{t}\t{algorithm}\n"
                        for i, s, x, t in zip(ids, seqs, texts, structures)])
    formatter = {"ct": writers.format_ct, "bpseq": writers.format_bpseq}[fmt]
    return "".join([formatter(_Row(i, s, t, e, algorithm)) for i, s, t, e in zip(ids, seqs, structures, scores)])


def chunk_bytes(fmt: str, algorithm: str, chunk, structures_text: bytes, scores):
    """Uncompressed output bytes (a bytes-like object) of one chunk (``structures_text``: the structures one newline apart, with a
    final newline; ``scores``: int64 array). db and TSV by the compiled writer, CT and BPSEQ a record at a
    time."""
    if fmt in ("db", "tsv"):
        from .render import render
        return render(fmt, algorithm, chunk.ids_text, chunk.seqs_text, structures_text, scores)
    structures = structures_text.decode("ascii").split("\n")[:-1]
    return format_chunk(fmt, algorithm, chunk.ids, chunk.seqs, structures, scores.tolist()).encode(
        "utf-8", "surrogatepass")


def header(fmt: str) -> str:
    return "\t".join(writers.TSV_COLUMNS) + "\n" if fmt == "tsv" else ""


def rejected_rows(rejected: list[Rejected]) -> str:
    out = []
    for r in rejected:
        whole_file = r.id is None
        out.append("\t".join(("-" if whole_file else str(r.index), "-" if whole_file else writers._field(r.id),
                              writers._field(r.file), writers._field(r.reason))) + "\n")
    return "".join(out)


REJECTED_HEADER = "\t".join(writers.REJECTED_COLUMNS) + "\n"


class Sink:
    """One output: a file's part, or for the path ``-`` the binary ``stream`` the caller gives (the command
    line's standard output), written a chunk at a time."""

    def __init__(self, path: str, fmt: str, compressed: bool | None = None, stream: BinaryIO | None = None):
        self.path = path
        self.fmt = fmt
        self.stdout = path == "-"
        if self.stdout and stream is None:
            raise ValueError("the output '-' needs a stream to write to")
        self._stream = stream
        self.gz = path.lower().endswith(".gz") if compressed is None else compressed
        self.part = None if self.stdout else part_path(path)
        self._fd = None
        self._handed = 0                  # bytes before this offset were handed to the disk already

    def encode(self, text):
        """The bytes to write for ``text`` (str, or a bytes-like object): gzipped for a .gz output."""
        data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
        if self.gz and len(data):
            return gzip.compress(data, compresslevel=GZIP_LEVEL, mtime=0)
        return data

    def open(self, size: int | None, head: str) -> None:
        """Open the part file: truncated to ``size`` (a resumed run), or new with ``head`` (size None)."""
        if self.stdout:
            self.write(self.encode(head))
            return
        self._fd = os.open(self.part, os.O_RDWR | os.O_CREAT, 0o666)
        if size is None:
            os.ftruncate(self._fd, 0)
            os.lseek(self._fd, 0, os.SEEK_SET)
            self.write(self.encode(head))
        else:
            have = os.fstat(self._fd).st_size
            if have < size:
                raise OSError(f"{self.part} holds {have} bytes, fewer than the journal's {size}")
            os.ftruncate(self._fd, size)
            os.lseek(self._fd, size, os.SEEK_SET)

    def write(self, data) -> None:
        if self.stdout:
            self._stream.write(data)
            return
        view = memoryview(data).cast("B")
        while view:
            n = os.write(self._fd, view)
            view = view[n:]
        if _ADVISE is not None:
            end = self.size()
            if end - self._handed >= WRITEBACK_BYTES:
                os.posix_fadvise(self._fd, self._handed, end - self._handed, _ADVISE)    # starts the writeback
                self._handed = end

    def size(self) -> int:
        return 0 if self.stdout else os.lseek(self._fd, 0, os.SEEK_CUR)

    def sync(self) -> None:
        if self.stdout:
            self._stream.flush()
        else:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def finish(self) -> None:
        """Rename the part onto the output (a part already renamed by an interrupted finish is fine)."""
        if self.stdout:
            return
        self.close()
        if os.path.exists(self.part) or not os.path.exists(self.path):
            os.replace(self.part, self.path)

    def discard(self) -> None:
        self.close()
        if self.part:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.part)


# Linux starts writing dirty pages back (without waiting) when told they are not needed soon.
_ADVISE = getattr(os, "POSIX_FADV_DONTNEED", None) if sys.platform.startswith("linux") else None


def fsync_directory(path: str) -> None:
    writers._fsync_directory(__import__("pathlib").Path(os.path.abspath(path)).parent)
