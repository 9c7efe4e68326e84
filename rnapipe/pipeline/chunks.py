"""Chunks: the unit of work that is folded, written and recorded in the journal.

A chunk is a run of consecutive input records, closed after ``CHUNK_RECORDS`` records (rejected ones
count) or once its predicted work, the sum of L³ over its sequences, reaches ``CHUNK_COST``. Where a
chunk ends depends on the records alone (not on the device, the threads or the timing), so an interrupted
run and its rerun cut the same chunks, and a chunk's digest (of its ids, sequences and rejected records)
tells whether the input is still the same up to it.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from typing import Iterable, Iterator

import numpy as np

from ..io.records import Rejected
from .reader import Piece

CHUNK_RECORDS = 1 << 16
CHUNK_COST = 1e11             # Σ L³: 65,536 × 68 nt is 2·10¹⁰; one sequence of 4,642 nt or more is alone


def limits() -> tuple[int, float]:
    """(records, cost) of a chunk; ``RNAPIPE_CHUNK_RECORDS`` sets a smaller record limit (tests)."""
    records = int(os.environ.get("RNAPIPE_CHUNK_RECORDS") or CHUNK_RECORDS)
    return max(1, records), CHUNK_COST


@dataclass
class Chunk:
    number: int
    ids: list[str]
    seqs: list[str]
    lens: np.ndarray
    index: np.ndarray
    rejected: list[Rejected] = field(default_factory=list)
    end: int = 0              # input index after the chunk's last record
    cost: float = 0.0
    tags: list | None = None

    def digest(self) -> str:
        h = hashlib.blake2b(digest_size=16)
        h.update(str(self.end).encode())
        h.update("\n".join(self.ids).encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
        h.update("\n".join(self.seqs).encode("ascii"))
        h.update(b"\x00")
        h.update(repr([tuple(r) for r in self.rejected]).encode("utf-8", "surrogatepass"))
        return h.hexdigest()

    @property
    def nucleotides(self) -> int:
        return int(self.lens.sum())


def cubes(lens: np.ndarray) -> np.ndarray:
    x = lens.astype(np.float64)
    return x * x * x


def chunked(pieces: Iterable[Piece], records: int | None = None, cost: float | None = None) -> Iterator[Chunk]:
    """Cut the records of ``pieces`` into chunks (see the module docstring; default sizes: limits())."""
    default_records, default_cost = limits()
    records = records or default_records
    cost = cost or default_cost
    number = 0
    start = 0                                   # input index where the open chunk starts
    parts: list[tuple] = []
    rejected: list[Rejected] = []
    spent = 0.0
    last_end = 0

    def close(end: int) -> Chunk:
        nonlocal number, start, parts, rejected, spent
        if len(parts) == 1:
            ids, seqs, lens, index, tags = parts[0]
        else:
            ids = [i for p in parts for i in p[0]]
            seqs = [s for p in parts for s in p[1]]
            lens = np.concatenate([p[2] for p in parts]) if parts else np.zeros(0, np.int64)
            index = np.concatenate([p[3] for p in parts]) if parts else np.zeros(0, np.int64)
            tags = None if not parts or parts[0][4] is None else [t for p in parts for t in p[4]]
        chunk = Chunk(number, ids, seqs, lens, index, rejected, end, spent, tags)
        number += 1
        start, parts, rejected, spent = end, [], [], 0.0
        return chunk

    for piece in pieces:
        ids, seqs, lens, index, tags = piece.ids, piece.seqs, piece.lens, piece.index, piece.tags
        pending = sorted(piece.rejected, key=lambda r: r.index)
        at = 0                                  # first record of the piece not yet in a chunk
        cum = np.cumsum(cubes(lens)) if len(lens) else np.zeros(0)
        base = 0.0                              # cum value already given to closed chunks
        while True:
            # the cost cut: the first record that brings the open chunk to `cost`
            k = int(np.searchsorted(cum, base + (cost - spent), side="left"))
            by_cost = int(index[k]) + 1 if k < len(ids) else None
            by_count = start + records
            end = min(by_count, by_cost) if by_cost is not None else by_count
            if end > piece.end:
                break
            hi = int(np.searchsorted(index, end, side="left"))
            if hi > at:
                parts.append((ids[at:hi], seqs[at:hi], lens[at:hi], index[at:hi], tags and tags[at:hi]))
                spent += float(cum[hi - 1] - base)
                base = float(cum[hi - 1])
            while pending and pending[0].index < end:
                rejected.append(pending.pop(0))
            at = hi
            yield close(end)
        if at < len(ids):
            parts.append((ids[at:], seqs[at:], lens[at:], index[at:], tags and tags[at:]))
            spent += float(cum[-1] - base)
        rejected.extend(pending)
        last_end = piece.end
    if parts or rejected:
        yield close(max(last_end, start))
