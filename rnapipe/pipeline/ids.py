"""Duplicate record ids over a whole stream, exactly, without holding the ids in memory.

Each id's 64-bit hash goes into an open-addressing table: the low bits choose the slot, the high 32 bits
are stored (about 6 bytes an id, so 10 million ids take 64 MB). The ids themselves, with the file and line
where each was first seen, and their full hashes go to files on disk (the hashes refill a larger table when
it grows). A fingerprint already in the table makes the id a suspect; suspects are confirmed (or cleared,
for the rare collision) by reading the log, so the answer is exact and names where the id was first seen.
"""

from __future__ import annotations

import os
import tempfile

import numpy as np

from . import scan


class IdSet:
    """The ids seen so far in one stream."""

    INITIAL_SLOTS = 1 << 20

    def __init__(self, directory: str | None = None):
        self._table = np.zeros(self.INITIAL_SLOTS, dtype=np.uint32)
        self._count = 0
        fd, self._hash_path = tempfile.mkstemp(prefix="rnapipe-ids-", suffix=".hash", dir=directory)
        self._hashes = os.fdopen(fd, "w+b")
        fd, self._log_path = tempfile.mkstemp(prefix="rnapipe-ids-", suffix=".txt", dir=directory)
        self._log = os.fdopen(fd, "w+b")
        fd, self._where_path = tempfile.mkstemp(prefix="rnapipe-ids-", suffix=".where", dir=directory)
        self._where = os.fdopen(fd, "w+b")
        self._logged = 0

    def close(self) -> None:
        for handle, path in ((self._log, self._log_path), (self._where, self._where_path),
                             (self._hashes, self._hash_path)):
            try:
                handle.close()
            finally:
                try:
                    os.unlink(path)
                except OSError:
                    pass

    def _grow(self, extra: int) -> None:
        need = self._count + extra
        size = self._table.shape[0]
        if need * 4 <= size * 3:
            return
        while need * 4 > size * 3:
            size *= 2
        self._table = None                      # the old table goes before the new one is filled
        table = np.zeros(size, dtype=np.uint32)
        self._hashes.flush()
        self._hashes.seek(0)
        hits = np.empty(1 << 20, dtype=np.uint8)
        while True:
            data = self._hashes.read(8 * hits.size)
            if not data:
                break
            part = np.frombuffer(data, dtype=np.uint64)
            scan.table_add(table, part, hits[:part.size])
        self._table = table

    def add(self, ids, id_bytes: bytes | None, file_index: int, header_lines,
            hashes: np.ndarray | None = None) -> dict[int, tuple[int, int]]:
        """Add the ids of one block of records (all from file ``file_index``; ``id_bytes``: the same ids
        UTF-8 encoded, each followed by a newline, if the caller has them; ``ids`` a list of them, or a
        callable that makes it, needed only when an id may be a duplicate). Returns ``{k: (file index,
        line)}`` for each id k that was seen before (earlier in the stream or earlier in ``ids``): where it
        was first seen. Duplicates are not added again. ``hashes``: :func:`scan.hash_lines` of ``id_bytes``,
        if the caller has them."""
        if id_bytes is None:
            id_bytes = ("\n".join(ids) + "\n").encode("utf-8", "surrogatepass") if ids else b""
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
            duplicates = self._confirm(ids, suspects, file_index, lines)
        if duplicates:
            keep = np.ones(count, dtype=bool)
            keep[list(duplicates)] = False
            hashes = hashes[keep]
            new_ids = [ids[k] for k in range(count) if keep[k]]
            id_bytes = ("\n".join(new_ids) + "\n").encode("utf-8", "surrogatepass") if new_ids else b""
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

    def _confirm(self, ids: list[str], suspects, file_index: int, lines) -> dict[int, tuple[int, int]]:
        """Which suspects really were seen before, and where first."""
        wanted: dict[str, list[int]] = {}
        for k in suspects.tolist():
            wanted.setdefault(ids[k], []).append(k)
        first: dict[str, tuple[int, int]] = {}
        if self._logged:
            self._log.flush()
            self._where.flush()
            keys = {i.encode("utf-8", "surrogatepass"): i for i in wanted}
            self._log.seek(0)
            ordinal = 0
            for line in self._log:
                word = line[:-1]
                if word in keys and keys[word] not in first:
                    self._where.seek(16 * ordinal)
                    f, n = np.frombuffer(self._where.read(16), dtype=np.int64).tolist()
                    first[keys[word]] = (f, n)
                    if len(first) == len(wanted):
                        break
                ordinal += 1
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
