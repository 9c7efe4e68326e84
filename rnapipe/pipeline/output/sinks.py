"""Outputs of a streamed fold: each chunk's results formatted once per output and appended to the
output's part file; compressed by suffix (``.gz``: one gzip member per chunk, no time stamp, so that a
resumed run writes the same bytes); renamed onto the output name when the run is complete.

The text is made by :mod:`rnapipe.io.render`, as :mod:`rnapipe.io.writers` makes it for the same results.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import stat
import sys
from typing import BinaryIO

from ...errors import UsageError
from ...io import ensemble, render, writers
from ...io.idtext import ID_ERRORS
from ..resume.journal import part_path

try:
    import fcntl
except ImportError:                      # not POSIX: no lock, the rest works
    fcntl = None

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


def check_paths(outputs: list[str], inputs: list[str]) -> None:
    """Refuse, before anything is written, outputs that would destroy what the user gave: an output (or the
    rejected list beside the first) that is one of the inputs, the same file by any path or link; and an
    existing output that is not a regular file (a FIFO, a device, a socket), which the rename of the finished
    part file would replace. ``-`` (standard output or input) is left out."""
    given = {}
    for path in inputs:
        if path != "-":
            with contextlib.suppress(OSError):
                st = os.stat(path)
                given[(st.st_dev, st.st_ino)] = path
    files = [p for p in outputs if p != "-"]
    beside = [str(writers.rejected_path(files[0]))] if files else []
    for path in files + beside:
        try:
            st = os.stat(path)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) in given:
            raise UsageError(f"output '{path}' is the input '{given[(st.st_dev, st.st_ino)]}': it would be "
                             "replaced by the results; choose another output name")
        if path in files and not stat.S_ISREG(st.st_mode):
            kind = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a device" if stat.S_ISCHR(st.st_mode)
                    or stat.S_ISBLK(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode) else "not a file")
            raise UsageError(f"output '{path}' is {kind}, not a regular file: outputs are written under a "
                             "temporary name and renamed, which would replace it; write to standard output "
                             "('-') and redirect it instead")


def _lock(fd: int, path: str, part: str) -> None:
    """Lock a part file for this run (released when its descriptor is closed): a second run that writes the
    same output at the same time is refused instead of mixing its chunks into this one's."""
    if fcntl is None:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        raise UsageError(f"another rnapipe run is writing the output {path} (its part file {part} is locked); "
                         "wait for it or choose another output") from None


def chunk_bytes(fmt: str, algorithm: str, records, structures_text: bytes, scores, ensembles=None):
    """Uncompressed output bytes (a bytes-like object) of the :class:`~..records.Records` ``records`` folded
    (``structures_text``: their structures, packed in the records' layout; ``scores``: int64 array;
    ``ensembles``: their :class:`~rnapipe.io.ensemble.EnsembleChunk` where folded with the partition function,
    which db, TSV, bpp, unpaired and pfjob print)."""
    if ensembles is not None and fmt not in ("ct", "bpseq"):
        structures = structures_text[:-1].decode("ascii").split("\n") if len(records) else []
        return ensemble.render(fmt, algorithm, records.ids, records.heads or records.ids, records.printed_seqs,
                               structures, scores.tolist(), ensembles)
    return render.render(fmt, algorithm, records.ids_text, records.id_lens, records.printed(), records.lens,
                         structures_text, scores, None, *records.headers())


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
        self.held = False                 # this run opened and locked the part file (its to remove on failure)
        self._handed = 0                  # bytes before this offset were handed to the disk already

    def encode(self, text):
        """The bytes to write for ``text`` (str, or a bytes-like object): gzipped for a .gz output."""
        data = text.encode("utf-8", ID_ERRORS) if isinstance(text, str) else text
        if self.gz and len(data):
            return gzip.compress(data, compresslevel=GZIP_LEVEL, mtime=0)
        return data

    def open(self, size: int | None, head: str) -> None:
        """Open the part file: truncated to ``size`` (a resumed run), or new with ``head`` (size None)."""
        if self.stdout:
            self.write(self.encode(head))
            return
        fd = os.open(self.part, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            _lock(fd, self.path, self.part)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        self.held = True
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
        """Append ``data``; an OSError names the output (``-``: standard output) as its ``filename``."""
        try:
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
        except OSError as err:
            if err.filename is None:
                err.filename = self.path
            raise

    def size(self) -> int:
        return 0 if self.stdout else os.lseek(self._fd, 0, os.SEEK_CUR)

    def sync(self) -> None:
        try:
            if self.stdout:
                self._stream.flush()
            else:
                os.fsync(self._fd)
        except OSError as err:
            if err.filename is None:
                err.filename = self.path
            raise

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
    """Make the renames onto ``path`` and its siblings durable: an fsync of their directory."""
    writers.fsync_directory(os.path.dirname(os.path.abspath(path)))
