"""Consecutive valid records, packed: ids and sequences each as one bytes object (a newline after every
record), with lengths and input indices in arrays. Lists of ``str`` are made only when asked for (the
engines take lists of sequences; the writers and the journal read the packed text).

A record read from a file also has its header line (``heads``): the whole line after '>' with trailing
white space removed, as RNAfold prints it in db output, or empty for a sequence read without a header (db
output then prints no header line, as RNAfold does). Records without heads (the API's) print their ids.
The sequences the outputs print (``printed_text``, laid out as ``seqs_text``) keep the input's case, with T
turned into U unless asked not to, as RNAfold prints them; None where they are the normalised sequences.
Records read with hard constraints (RNAfold's -C) carry each one's constraint line (``cons_text``, laid out as
``seqs_text``; None without); records read with SHAPE data each one's stacking pseudo-energies (``shape``: an
int32 array of one value a nucleotide, or None for a record without data; None without SHAPE)."""

from __future__ import annotations

import functools

import numpy as np

from ..io.idtext import ID_ERRORS
from ..io.packed import offsets, pack


class Records:
    def __init__(self, ids_text: bytes, seqs_text: bytes, id_lens: np.ndarray, lens: np.ndarray,
                 index: np.ndarray, tags: list | None = None, heads_text: bytes | None = None,
                 head_lens: np.ndarray | None = None, printed_text: bytes | None = None,
                 cons_text: bytes | None = None, shape: list | None = None):
        self.ids_text = ids_text
        self.heads_text = heads_text      # header lines packed as the ids are (None: the ids stand for them)
        self.head_lens = head_lens
        self.printed_text = printed_text  # the sequences as printed (None: seqs_text)
        self.seqs_text = seqs_text
        self.id_lens = id_lens            # bytes of each id (UTF-8, the input's bytes: rnapipe.io.idtext)
        self.lens = lens                  # nucleotides of each sequence
        self.index = index                # input index of each record
        self.tags = tags                  # what the caller wants back per record (the API: its indices)
        self.cons_text = cons_text        # the constraint lines, one per record as the sequences (None: none)
        self.shape = shape                # SHAPE pseudo-energies per record (None: none)

    @classmethod
    def from_lists(cls, ids: list[str], seqs: list[str], index, tags: list | None = None,
                   heads: list[str] | None = None, printed: list[str] | None = None,
                   constraints: list[str] | None = None, shape: list | None = None) -> "Records":
        ids_text, id_lens = pack(ids, "utf-8", ID_ERRORS)
        seqs_text, lens = pack(seqs, "ascii")
        heads_text, head_lens = pack(heads, "utf-8", ID_ERRORS) if heads is not None else (None, None)
        printed_text = None
        if printed is not None and printed != seqs:
            printed_text = pack(printed, "ascii")[0]
        cons_text = pack(constraints, "ascii")[0] if constraints is not None else None
        records = cls(ids_text, seqs_text, id_lens, lens, np.asarray(index, dtype=np.int64), tags, heads_text,
                      head_lens, printed_text, cons_text, shape)
        records.__dict__["ids"] = ids
        records.__dict__["seqs"] = seqs
        if heads is not None:
            records.__dict__["heads"] = heads
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
    def heads(self) -> list[str] | None:
        if self.heads_text is None:
            return None
        return self.heads_text[:-1].decode("utf-8", ID_ERRORS).split("\n") if len(self) else []

    def printed(self) -> bytes:
        """The sequences as the outputs print them, packed as ``seqs_text``."""
        return self.seqs_text if self.printed_text is None else self.printed_text

    @functools.cached_property
    def printed_seqs(self) -> list[str]:
        return self.seqs if self.printed_text is None else self.printed_text[:-1].decode("ascii").split("\n")

    def headers(self) -> tuple[bytes, np.ndarray]:
        """The db header lines, packed (``heads_text, head_lens``): the heads, or the ids where there are none."""
        if self.heads_text is None:
            return self.ids_text, self.id_lens
        return self.heads_text, self.head_lens

    @functools.cached_property
    def constraints(self) -> list[str] | None:
        if self.cons_text is None:
            return None
        return self.cons_text[:-1].decode("ascii").split("\n") if len(self) else []

    @functools.cached_property
    def seqs(self) -> list[str]:
        return self.seqs_text[:-1].decode("ascii").split("\n") if len(self) else []

    def shape_bytes(self) -> bytes | None:
        """The SHAPE pseudo-energies as bytes for the chunk digest (a record without data: an empty entry)."""
        if self.shape is None:
            return None
        return b"".join(b"-" if v is None else np.asarray(v, dtype="<i4").tobytes() + b"+" for v in self.shape)

    def take(self, a: int, b: int) -> "Records":
        """Records a .. b-1."""
        if a == 0 and b == len(self):
            return self
        io, so = offsets(self.id_lens), offsets(self.lens)
        heads_text = head_lens = None
        if self.heads_text is not None:
            ho = offsets(self.head_lens)
            heads_text, head_lens = self.heads_text[ho[a]:ho[b]], self.head_lens[a:b]
        printed_text = None if self.printed_text is None else self.printed_text[so[a]:so[b]]
        cons_text = None if self.cons_text is None else self.cons_text[so[a]:so[b]]
        return Records(self.ids_text[io[a]:io[b]], self.seqs_text[so[a]:so[b]], self.id_lens[a:b], self.lens[a:b],
                       self.index[a:b], None if self.tags is None else self.tags[a:b], heads_text, head_lens,
                       printed_text, cons_text, None if self.shape is None else self.shape[a:b])

    def keep(self, mask: np.ndarray) -> "Records":
        """The records where ``mask`` is true."""
        where = np.flatnonzero(mask).tolist()
        ids, seqs, heads, cons = self.ids, self.seqs, self.heads, self.constraints
        return Records.from_lists([ids[k] for k in where], [seqs[k] for k in where], self.index[mask],
                                  None if self.tags is None else [self.tags[k] for k in where],
                                  None if heads is None else [heads[k] for k in where],
                                  None if self.printed_text is None else [self.printed_seqs[k] for k in where],
                                  None if cons is None else [cons[k] for k in where],
                                  None if self.shape is None else [self.shape[k] for k in where])

    @staticmethod
    def concat(parts: list["Records"]) -> "Records":
        parts = [p for p in parts if len(p)]
        if not parts:
            return Records.empty()
        if len(parts) == 1:
            return parts[0]
        tags = None if parts[0].tags is None else [t for p in parts for t in p.tags]
        heads_text = head_lens = None
        if any(p.heads_text is not None for p in parts):
            heads = [p.headers() for p in parts]
            heads_text, head_lens = b"".join(h[0] for h in heads), np.concatenate([h[1] for h in heads])
        printed_text = None
        if any(p.printed_text is not None for p in parts):
            printed_text = b"".join(p.printed() for p in parts)
        cons_text = None
        if any(p.cons_text is not None for p in parts):
            cons_text = b"".join(p.cons_text if p.cons_text is not None else
                                 b"".join(b"." * int(n) + b"\n" for n in p.lens) for p in parts)
        shape = None
        if any(p.shape is not None for p in parts):
            shape = [v for p in parts for v in (p.shape if p.shape is not None else [None] * len(p))]
        return Records(b"".join(p.ids_text for p in parts), b"".join(p.seqs_text for p in parts),
                       np.concatenate([p.id_lens for p in parts]), np.concatenate([p.lens for p in parts]),
                       np.concatenate([p.index for p in parts]), tags, heads_text, head_lens, printed_text,
                       cons_text, shape)
