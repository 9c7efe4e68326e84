"""Duplicate record ids over a whole stream, exactly, without holding the ids in memory.

Each id's 64-bit hash goes into an open-addressing table (:func:`scan.table_add`): the low 32 bits choose
the slot, the high 24 bits are stored, three bytes per slot at up to 90 % load (10 million ids take about
35 MB). The table is sized from the reader's estimate of the ids in the stream where it has one, so that
it is filled once rather than rebuilt at every doubling. The ids themselves, with the file and line where
each was first seen, and their full hashes go to files on disk (the hashes refill a larger table when it
grows), in the directory the reader names, by default the temporary directory (``TMPDIR``); a full disk there
is reported as such (:class:`~rnapipe.errors.NoSpaceError`). A fingerprint already in the table makes the id
a suspect; a suspect whose full hash is among those logged (or among the block's earlier ids) is compared
with the logged id, so the answer is exact and names where the id was first seen. A suspect is rare (a few
in ten million ids), a full-hash match without the same id rarer still.
"""

from __future__ import annotations

import contextlib
import os
import tempfile

import numpy as np

from ...errors import NoSpaceError, is_no_space, no_space_reason
from ...io.idtext import ID_ERRORS
from . import scan

_READ = 1 << 23             # bytes of a log file read at once


class IdSet:
    """The ids seen so far in one stream. ``expected``: an estimate of the ids the whole stream holds, which
    the reader may set (and update) before each :meth:`add`; None: the table doubles when it is full."""

    INITIAL_SLOTS = 1 << 16
    MAX_LOAD = 0.9

    def __init__(self, directory: str | None = None):
        self._slots = self.INITIAL_SLOTS
        self._table = np.zeros(3 * self._slots, dtype=np.uint8)
        self._count = 0
        self.expected: float | None = None
        self._directory = directory
        self._files: list[tuple] = []
        try:
            self._hashes = self._file(".hash")
            self._log = self._file(".txt")
            self._where = self._file(".where")
        except BaseException as err:
            self.close()
            if isinstance(err, OSError):
                raise self._disk_error(err) from None
            raise
        self._logged = 0

    def _file(self, suffix: str):
        fd, path = tempfile.mkstemp(prefix="rnapipe-ids-", suffix=suffix, dir=self._directory)
        handle = os.fdopen(fd, "w+b")
        self._files.append((handle, path))
        return handle

    def _disk_error(self, err: OSError) -> OSError | NoSpaceError:
        """What to raise for ``err`` met on the files: a full disk (or quota) is :class:`NoSpaceError` naming
        their directory, anything else ``err`` itself."""
        if not is_no_space(err):
            return err
        where = os.path.abspath(self._directory or tempfile.gettempdir())
        if self._directory is None:
            what = (f"the temporary directory '{where}' (TMPDIR)",
                    "or set TMPDIR to a directory on a disk with room (TMPDIR=DIR rnapipe ...)")
        else:
            what = f"the scratch directory '{where}'", "or give another one"
        return NoSpaceError(f"{no_space_reason(err)} in {what[0]}, where the ids read so far are kept to find "
                            f"duplicates: make room there, {what[1]}")

    @property
    def table_bytes(self) -> int:
        return self._table.nbytes if self._table is not None else 0

    def close(self) -> None:
        """Close and remove the files; what they could not take (a full disk) is not needed any more."""
        for handle, path in self._files:
            with contextlib.suppress(OSError):
                handle.close()
            with contextlib.suppress(OSError):
                os.unlink(path)
        self._files = []

    def _grow(self, extra: int) -> None:
        need = self._count + extra
        if need <= self._slots * self.MAX_LOAD:
            return
        want = 2 * need
        if self.expected:           # room for the estimate (within reason), else a quarter more
            want = max(need + need // 4, min(int(self.expected * 1.05), 16 * need))
        slots = min(int(want / self.MAX_LOAD) + 1, (1 << 32) - 1)
        self._table = None                      # the old table goes before the new one is filled
        table = np.zeros(3 * slots, dtype=np.uint8)
        hits = np.empty(1 << 20, dtype=np.uint8)
        for part in self._logged_hashes():
            scan.table_add(table, part, hits[:part.size])
        self._table, self._slots = table, slots

    def _logged_hashes(self):
        """The full hashes of the logged ids, in log order, a part at a time."""
        self._hashes.flush()
        self._hashes.seek(0)
        while True:
            data = self._hashes.read(_READ)
            if not data:
                return
            yield np.frombuffer(data, dtype=np.uint64)

    def add(self, ids, id_bytes: bytes | None, file_index: int, header_lines,
            hashes: np.ndarray | None = None) -> dict[int, tuple[int, int]]:
        """Add the ids of one block of records (all from file ``file_index``; ``id_bytes``: the same ids
        encoded (UTF-8 with :data:`~rnapipe.io.idtext.ID_ERRORS`), each followed by a newline, if the caller
        has them; ``ids`` a list of them, or a callable that makes it, needed only when an id may be a
        duplicate). Returns ``{k: (file index, line)}`` for each id k that was seen before (earlier in the
        stream or earlier in ``ids``): where it was first seen. Duplicates are not added again. ``hashes``:
        :func:`scan.hash_lines` of ``id_bytes``, if the caller has them."""
        try:
            return self._add(ids, id_bytes, file_index, header_lines, hashes)
        except OSError as err:
            raise self._disk_error(err) from None

    def _add(self, ids, id_bytes: bytes | None, file_index: int, header_lines,
             hashes: np.ndarray | None = None) -> dict[int, tuple[int, int]]:
        if id_bytes is None:
            id_bytes = ("\n".join(ids) + "\n").encode("utf-8", ID_ERRORS) if ids else b""
        count = len(header_lines)
        if count == 0:
            return {}
        if hashes is None:
            hashes = np.empty(count, dtype=np.uint64)
            if scan.hash_lines(np.frombuffer(id_bytes, dtype=np.uint8), hashes) != count:
                raise RuntimeError("an id holds a newline")
        self._grow(count)
        hits = np.empty(count, dtype=np.uint8)
        self._count += scan.table_add(self._table, hashes, hits)
        lines = np.asarray(header_lines, dtype=np.int64)
        suspects = np.flatnonzero(hits)
        duplicates = {}
        if suspects.size:
            if callable(ids):
                ids = ids()
            duplicates = self._confirm(ids, suspects, hashes, file_index, lines)
        if duplicates:
            keep = np.ones(count, dtype=bool)
            keep[list(duplicates)] = False
            hashes = hashes[keep]
            new_ids = [ids[k] for k in range(count) if keep[k]]
            id_bytes = ("\n".join(new_ids) + "\n").encode("utf-8", ID_ERRORS) if new_ids else b""
            lines = lines[keep]
            count = len(new_ids)
        if count:
            self._log.seek(0, os.SEEK_END)
            self._log.write(id_bytes)
            where = np.empty((count, 2), dtype=np.int64)
            where[:, 0] = file_index
            where[:, 1] = lines
            self._where.seek(0, os.SEEK_END)
            self._where.write(where.tobytes())
            self._hashes.seek(0, os.SEEK_END)
            self._hashes.write(hashes.tobytes())
            self._logged += count
        return duplicates

    def _confirm(self, ids: list[str], suspects, hashes, file_index: int, lines) -> dict[int, tuple[int, int]]:
        """Which suspects really were seen before, and where first."""
        wanted: dict[str, list[int]] = {}
        for k in suspects.tolist():
            wanted.setdefault(ids[k], []).append(k)
        first: dict[str, tuple[int, int]] = {}
        ordinals = self._logged_with(np.unique(hashes[suspects])) if self._logged else []
        if ordinals:
            keys = {i.encode("utf-8", ID_ERRORS): i for i in wanted}
            for ordinal, word in self._log_lines(ordinals):
                i = keys.get(word)
                if i is not None and i not in first:
                    self._where.flush()
                    self._where.seek(16 * ordinal)
                    f, n = np.frombuffer(self._where.read(16), dtype=np.int64).tolist()
                    first[i] = (f, n)
        duplicates: dict[int, tuple[int, int]] = {}
        need_block = [i for i in wanted if i not in first]
        if need_block:
            positions = {i: None for i in need_block}
            last = max(max(wanted[i]) for i in need_block)
            for k in range(last + 1):
                i = ids[k]
                if i in positions and positions[i] is None:
                    positions[i] = k
            for i in need_block:
                p = positions[i]
                if p is not None:
                    first[i] = (file_index, int(lines[p]))
                    wanted[i] = [k for k in wanted[i] if k != p]
        for i, ks in wanted.items():
            if i in first:
                for k in ks:
                    duplicates[k] = first[i]
        return duplicates

    def _logged_with(self, values: np.ndarray) -> list[int]:
        """Ordinals of the logged ids whose full hash is one of ``values``, ascending."""
        found: list[int] = []
        base = 0
        for part in self._logged_hashes():
            found.extend((base + np.flatnonzero(np.isin(part, values))).tolist())
            base += part.size
        return found

    def _log_lines(self, ordinals: list[int]):
        """``(ordinal, id bytes)`` of the logged ids at ``ordinals`` (ascending), read from the log."""
        self._log.flush()
        self._log.seek(0)
        todo = iter(ordinals)
        want = next(todo, None)
        base = 0                                # ordinal of the first line in buf
        carry = b""
        while want is not None:
            data = self._log.read(_READ)
            if not data:
                return
            buf = carry + data if carry else data
            ends = np.flatnonzero(np.frombuffer(buf, dtype=np.uint8) == 10)
            while want is not None and want < base + ends.size:
                at = want - base
                start = int(ends[at - 1]) + 1 if at else 0
                yield want, buf[start:int(ends[at])]
                want = next(todo, None)
            carry = buf[int(ends[-1]) + 1:] if ends.size else buf
            base += ends.size
