"""Consecutive valid records, packed: ids and sequences each as one bytes object (a newline after every
record), with lengths and input indices in arrays. Lists of ``str`` are made only when asked for (the
engines take lists of sequences; the writers and the journal read the packed text)."""

from __future__ import annotations

import functools

import numpy as np

from ..io.idtext import ID_ERRORS
from ..io.packed import offsets, pack


class Records:
    def __init__(self, ids_text: bytes, seqs_text: bytes, id_lens: np.ndarray, lens: np.ndarray,
                 index: np.ndarray, tags: list | None = None):
        self.ids_text = ids_text
        self.seqs_text = seqs_text
        self.id_lens = id_lens            # bytes of each id (UTF-8, the input's bytes: rnapipe.io.idtext)
        self.lens = lens                  # nucleotides of each sequence
        self.index = index                # input index of each record
        self.tags = tags                  # what the caller wants back per record (the API: its indices)

    @classmethod
    def from_lists(cls, ids: list[str], seqs: list[str], index, tags: list | None = None) -> "Records":
        ids_text, id_lens = pack(ids, "utf-8", ID_ERRORS)
        seqs_text, lens = pack(seqs, "ascii")
        records = cls(ids_text, seqs_text, id_lens, lens, np.asarray(index, dtype=np.int64), tags)
        records.__dict__["ids"] = ids
        records.__dict__["seqs"] = seqs
        return records

    @classmethod
    def empty(cls) -> "Records":
        return cls(b"", b"", np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))

    def __len__(self) -> int:
        return len(self.lens)

    @functools.cached_property
    def ids(self) -> list[str]:
        return self.ids_text[:-1].decode("utf-8", ID_ERRORS).split("\n") if len(self) else []

    @functools.cached_property
    def seqs(self) -> list[str]:
        return self.seqs_text[:-1].decode("ascii").split("\n") if len(self) else []

    def take(self, a: int, b: int) -> "Records":
        """Records a .. b-1."""
        if a == 0 and b == len(self):
            return self
        io, so = offsets(self.id_lens), offsets(self.lens)
        return Records(self.ids_text[io[a]:io[b]], self.seqs_text[so[a]:so[b]], self.id_lens[a:b], self.lens[a:b],
                       self.index[a:b], None if self.tags is None else self.tags[a:b])

    def keep(self, mask: np.ndarray) -> "Records":
        """The records where ``mask`` is true."""
        where = np.flatnonzero(mask).tolist()
        ids, seqs = self.ids, self.seqs
        return Records.from_lists([ids[k] for k in where], [seqs[k] for k in where], self.index[mask],
                                  None if self.tags is None else [self.tags[k] for k in where])

    @staticmethod
    def concat(parts: list["Records"]) -> "Records":
        parts = [p for p in parts if len(p)]
        if not parts:
            return Records.empty()
        if len(parts) == 1:
            return parts[0]
        tags = None if parts[0].tags is None else [t for p in parts for t in p.tags]
        return Records(b"".join(p.ids_text for p in parts), b"".join(p.seqs_text for p in parts),
                       np.concatenate([p.id_lens for p in parts]), np.concatenate([p.lens for p in parts]),
                       np.concatenate([p.index for p in parts]), tags)
