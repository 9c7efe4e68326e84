"""Packed texts: records one after another in one buffer, each followed by a newline, with their lengths
(without the newline) in an int64 array. Ids, sequences and structures travel between the reader, the
engines and the writers in this layout; this module holds where each record starts and the compiled moves of
some records into a new packed text and back.
"""

from __future__ import annotations

import numpy as np
from numba import njit


def offsets(lens: np.ndarray) -> np.ndarray:
    """Where each record of a packed text with these lengths starts, then the text's total size
    (``len(lens) + 1`` int64 values)."""
    out = np.zeros(len(lens) + 1, dtype=np.int64)
    np.cumsum(np.asarray(lens, dtype=np.int64) + 1, out=out[1:])
    return out


def pack(items: list[str], encoding: str = "utf-8", errors: str = "strict") -> tuple[bytes, np.ndarray]:
    """A packed text of ``items`` (encoded) and their lengths in bytes."""
    if not items:
        return b"", np.zeros(0, dtype=np.int64)
    text = ("\n".join(items) + "\n").encode(encoding, errors)
    if len(text) == sum(map(len, items)) + len(items):            # one byte per character
        lens = np.fromiter(map(len, items), dtype=np.int64, count=len(items))
    else:
        lens = np.array([len(item.encode(encoding, errors)) for item in items], dtype=np.int64)
    return text, lens


def split(text: bytes, lens: np.ndarray) -> list[bytes]:
    """The records of a packed text, each without its newline."""
    starts = offsets(lens).tolist()
    return [text[a:b - 1] for a, b in zip(starts, starts[1:])]


@njit(nogil=True, cache=True)
def gather(src, starts, lens, positions, out):
    """Records ``positions`` of the packed text ``src`` (record k at ``starts[k]``, ``lens[k]`` bytes, then
    a newline) into ``out`` one after another in that order, newlines included."""
    o = 0
    for q in range(positions.shape[0]):
        k = positions[q]
        n = lens[k] + 1
        out[o:o + n] = src[starts[k]:starts[k] + n]
        o += n


@njit(nogil=True, cache=True)
def scatter(src, starts, lens, positions, dst):
    """The inverse of :func:`gather`: the records of ``src`` (records ``positions`` one after another) back to
    their places ``starts[positions[q]]`` in ``dst``."""
    o = 0
    for q in range(positions.shape[0]):
        k = positions[q]
        n = lens[k] + 1
        dst[starts[k]:starts[k] + n] = src[o:o + n]
        o += n
