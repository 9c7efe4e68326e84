"""Chunks: the unit of work that is folded, written and recorded in the journal.

A chunk is a run of consecutive input records, closed after ``CHUNK_RECORDS`` records (rejected ones
count) or once its work (:func:`.pace.work` summed over its sequences) reaches a unit of the run's pace
(:meth:`.pace.Pace.unit_work`: a few seconds on the device in use) or ``CHUNK_WORK``, whichever comes first.
A rerun of an interrupted run cuts its first chunks where the journal says the interrupted run cut them
(``ends``), so that each chunk's digest (of its ids, sequences and rejected records) tells whether the input
is still the same up to it; the chunks after those follow the rerun's own pace. Given the same ends and the
same pace, the cut depends on the records alone.
"""

from __future__ import annotations

import zlib
import os
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Sequence

import numpy as np

from ...io.records import Rejected
from ..input.reader import Piece
from ..records import Records
from .pace import Pace, work

CHUNK_RECORDS = 1 << 16
CHUNK_WORK = 1e13             # work (pace.work): a few seconds of an H100 at its best rate


def limits() -> tuple[int, float]:
    """(records, work) of a chunk at most; ``RNAPIPE_CHUNK_RECORDS`` sets a smaller record limit (tests)."""
    records = int(os.environ.get("RNAPIPE_CHUNK_RECORDS") or CHUNK_RECORDS)
    return max(1, records), CHUNK_WORK


@dataclass
class Chunk:
    number: int
    records: Records
    rejected: list[Rejected] = field(default_factory=list)
    end: int = 0              # input index after the chunk's last record
    cost: float = 0.0         # its work (pace.work)
    as_read: str | None = None  # the digest of the chunk as read, where records were left out after folding

    @property
    def ids(self) -> list[str]:
        return self.records.ids

    @property
    def seqs(self) -> list[str]:
        return self.records.seqs

    @property
    def lens(self) -> np.ndarray:
        return self.records.lens

    @property
    def index(self) -> np.ndarray:
        return self.records.index

    @property
    def tags(self) -> list | None:
        return self.records.tags

    @property
    def ids_text(self) -> bytes:
        return self.records.ids_text

    @property
    def seqs_text(self) -> bytes:
        return self.records.seqs_text

    def __len__(self) -> int:
        return len(self.records)

    def digest(self) -> str:
        """A fingerprint of the chunk's records (not a cryptographic one: it tells a changed input from the
        same one): CRC-32 of the ids, of the sequences as printed, of the rejected records, of the header
        lines (db prints them) and of the constraint lines and SHAPE data where there are any, with their sizes."""
        if self.as_read is not None:
            return self.as_read
        rejected = repr([tuple(r) for r in self.rejected]).encode("utf-8", "surrogatepass")
        parts = (self.ids_text, self.records.printed(), rejected, self.records.headers()[0])
        if self.records.cons_text is not None:
            parts += (self.records.cons_text,)
        if self.records.shape is not None:
            parts += (self.records.shape_bytes(),)
        return f"{self.end}:" + ":".join(f"{len(p)}-{zlib.crc32(p):08x}" for p in parts)

    @property
    def nucleotides(self) -> int:
        return int(self.lens.sum())


def end_of(digest: str) -> int:
    """The input index after the last record of the chunk whose digest is ``digest``."""
    return int(digest.split(":", 1)[0])


def chunked(pieces: Iterable[Piece], records: int | None = None, cost: float | None = None,
            pace: Pace | None = None, ends: Sequence[int] = ()) -> Iterator[Chunk]:
    """Cut the records of ``pieces`` into chunks (see the module docstring; default sizes: limits()); the
    first ``len(ends)`` chunks end at ``ends``."""
    default_records, default_cost = limits()
    records = records or default_records
    cost = cost or default_cost
    ends = list(ends)

    def limit() -> float:
        return min(cost, pace.unit_work()) if pace is not None else cost

    unit = limit()
    number = 0
    start = 0                                   # input index where the open chunk starts
    parts: list[Records] = []
    rejected: list[Rejected] = []
    spent = 0.0
    last_end = 0

    def close(end: int) -> Chunk:
        nonlocal number, start, parts, rejected, spent, unit
        chunk = Chunk(number, Records.concat(parts), rejected, end, spent)
        number += 1
        start, parts, rejected, spent = end, [], [], 0.0
        unit = limit()
        return chunk

    for piece in pieces:
        recs = piece.records
        index = recs.index
        count = len(recs)
        pending = sorted(piece.rejected, key=lambda r: r.index)
        at = 0                                  # first record of the piece not yet in a chunk
        cum = np.cumsum(work(recs.lens)) if count else np.zeros(0)
        base = 0.0                              # cum value already given to closed chunks
        while True:
            if number < len(ends):
                end = ends[number]
            else:
                # the work cut: the first record that brings the open chunk to its unit
                k = int(np.searchsorted(cum, base + (unit - spent), side="left"))
                by_cost = int(index[k]) + 1 if k < count else None
                by_count = start + records
                end = min(by_count, by_cost) if by_cost is not None else by_count
            if end > piece.end:
                break
            hi = int(np.searchsorted(index, end, side="left"))
            if hi > at:
                parts.append(recs.take(at, hi))
                spent += float(cum[hi - 1] - base)
                base = float(cum[hi - 1])
            while pending and pending[0].index < end:
                rejected.append(pending.pop(0))
            at = hi
            yield close(end)
        if at < count:
            parts.append(recs.take(at, count))
            spent += float(cum[-1] - base)
        rejected.extend(pending)
        last_end = piece.end
    if parts or rejected:
        yield close(max(last_end, start))
