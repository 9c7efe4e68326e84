"""Compiled passes over raw FASTA bytes: a block of whole records parsed, normalised and validated in one
pass, record ids hashed, and a hash table of the ids seen so far.

The scan handles what real files hold (headers, sequence lines of nucleotide codes in either case, spaces,
tabs, CRLF line ends). A record with anything else in it (a character that is not a nucleotide code, an
empty id or sequence, a non-ASCII byte or an unusual control character in the id, a lone CR) is flagged,
and the block it is in is read again by the exact per-record reader (rnapipe.io.fasta), so that every
message is the one that reader gives.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ...alphabet import ACCEPTED

# byte class: 1 nucleotide code (either case), 2 space or tab, 3 CR, 0 anything else (flags the record)
_CLASS = np.zeros(256, dtype=np.uint8)
_NORM = np.zeros(256, dtype=np.uint8)
for _c in ACCEPTED | {"T"}:
    for _b in (ord(_c), ord(_c.lower())):
        _CLASS[_b] = 1
        _NORM[_b] = ord("U") if _c == "T" else ord(_c)
# the sequence as RNAfold prints it: the input's letters and case, T turned into U (PRINT_NOCONV: T kept)
PRINT = np.zeros(256, dtype=np.uint8)
PRINT_NOCONV = np.zeros(256, dtype=np.uint8)
for _c in ACCEPTED | {"T"}:
    for _b in (ord(_c), ord(_c.lower())):
        PRINT_NOCONV[_b] = _b
        PRINT[_b] = _b + (ord("U") - ord("T")) if _c == "T" else _b
_CLASS[ord(" ")] = _CLASS[ord("\t")] = 2
_CLASS[ord("\r")] = 3
# bytes that end an id word without doubt (str.split() agrees); any other byte below 33 or above 126 in an
# id sends the block to the exact reader
_ID_END = np.zeros(256, dtype=np.uint8)
for _b in (9, 10, 13, 32):
    _ID_END[_b] = 1


@njit(nogil=True, cache=True)
def scan_block(buf, line0, cls, norm, id_end, seq_out, id_out, lines, seq_len, id_len, flags, head_out, head_len,
               prn, prn_out):
    """Parse ``buf`` (whole records, starting at a ``>``). Per record: header line number (``line0`` is
    that of the block's first line), sequence length, and a flag (1: needs the exact reader). Normalised
    sequences go to ``seq_out``, ids to ``id_out`` and header lines (after '>', trailing white space removed)
    to ``head_out``, each followed by a newline; ``prn_out`` gets the sequences as printed (table ``prn``),
    laid out as ``seq_out``. Returns ``(records, bytes of seq_out, bytes of id_out, lines
    in the block, any flag, bytes of head_out)``."""
    n = buf.shape[0]
    p = 0
    r = 0
    so = 0
    io = 0
    ho = 0
    line = line0
    flagged = False
    while p < n:
        flag = 0
        lines[r] = line
        p += 1                                           # the '>'
        head = p
        while p < n and (buf[p] == 32 or buf[p] == 9):
            p += 1
        start = p
        while p < n:
            c = buf[p]
            if c > 32 and c < 127:
                id_out[io] = c
                io += 1
                p += 1
            else:
                break
        id_len[r] = p - start
        if p == start:
            flag = 1
        if p < n and id_end[buf[p]] == 0:
            flag = 1
        while p < n and buf[p] != 10:
            if buf[p] == 13 and (p + 1 >= n or buf[p + 1] != 10):
                flag = 1                                 # a lone CR is a line end to the exact reader
            p += 1
        end = p
        while end > head and (buf[end - 1] == 32 or (buf[end - 1] >= 9 and buf[end - 1] <= 13)):
            end -= 1
        head_len[r] = end - head
        for q in range(head, end):
            head_out[ho] = buf[q]
            ho += 1
        head_out[ho] = 10
        ho += 1
        p += 1
        line += 1
        first = so
        while p < n and buf[p] != 62:                    # sequence lines until the next '>' at a line start
            while p < n:
                c = buf[p]
                if c == 10:
                    break
                k = cls[c]
                if k == 1:
                    seq_out[so] = norm[c]
                    prn_out[so] = prn[c]
                    so += 1
                elif k == 3:
                    if p + 1 >= n or buf[p + 1] != 10:
                        flag = 1
                elif k == 0:
                    flag = 1
                p += 1
            p += 1
            line += 1
        seq_len[r] = so - first
        if so == first:
            flag = 1
        seq_out[so] = 10
        prn_out[so] = 10
        so += 1
        id_out[io] = 10
        io += 1
        flags[r] = flag
        if flag:
            flagged = True
        r += 1
    return r, so, io, line - line0, flagged, ho


def parse_block(block: bytes, line0: int, printed=PRINT):
    """Run :func:`scan_block` on ``block``; returns ``(count, seqs_text, ids_text, seq_len, id_len, lines,
    line_count, flagged, heads_text, head_len, printed_text)``: the normalised sequences, the ids' bytes and
    the header lines, each followed by a newline, lengths and header line numbers (int64 arrays), and the
    sequences as printed (``printed``: :data:`PRINT` or :data:`PRINT_NOCONV`; None where that is the
    normalised text)."""
    buf = np.frombuffer(block, dtype=np.uint8)
    most = count_byte(buf, 62) + 1
    seq_out = np.empty(len(block) + most, dtype=np.uint8)
    id_out = np.empty(len(block) + most, dtype=np.uint8)
    lines = np.empty(most, dtype=np.int64)
    seq_len = np.empty(most, dtype=np.int64)
    id_len = np.empty(most, dtype=np.int64)
    flags = np.empty(most, dtype=np.uint8)
    head_out = np.empty(len(block) + most, dtype=np.uint8)
    head_len = np.empty(most, dtype=np.int64)
    prn_out = np.empty(len(block) + most, dtype=np.uint8)
    count, so, io, line_count, flagged, ho = scan_block(buf, line0, _CLASS, _NORM, _ID_END, seq_out, id_out, lines,
                                                        seq_len, id_len, flags, head_out, head_len, printed, prn_out)
    seqs_text, printed_text = seq_out[:so].tobytes(), prn_out[:so].tobytes()
    return (count, seqs_text, id_out[:io].tobytes(), seq_len[:count], id_len[:count], lines[:count],
            line_count, flagged, head_out[:ho].tobytes(), head_len[:count],
            None if printed_text == seqs_text else printed_text)


@njit(nogil=True, cache=True)
def count_byte(buf, value):
    """How many bytes of ``buf`` equal ``value`` (bytes.count without holding the GIL)."""
    n = 0
    for p in range(buf.shape[0]):
        if buf[p] == value:
            n += 1
    return n


@njit(nogil=True, cache=True)
def hash_lines(buf, out):
    """64-bit hash (FNV-1a, then a splitmix64 finish) of each newline-terminated piece of ``buf``; never 0."""
    h = np.uint64(0xcbf29ce484222325)
    prime = np.uint64(0x100000001b3)
    k = 0
    for p in range(buf.shape[0]):
        c = buf[p]
        if c == 10:
            z = h
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xbf58476d1ce4e5b9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94d049bb133111eb)
            z = z ^ (z >> np.uint64(31))
            if z == np.uint64(0):
                z = np.uint64(1)
            out[k] = z
            k += 1
            h = np.uint64(0xcbf29ce484222325)
        else:
            h = (h ^ np.uint64(c)) * prime
    return k


@njit(nogil=True, cache=True)
def table_add(table, hashes, hits):
    """Insert ``hashes`` into the open-addressing ``table`` of 24-bit fingerprints (a uint8 array, three bytes
    per slot, any number of slots; all three bytes 0 = empty). Hash h lives in the run of slots from
    ``(low 32 bits of h) * slots >> 32``, as its high 24 bits (0 stored as 1). ``hits[k]`` is 1 where an
    equal fingerprint is in hash k's run already (nothing is inserted for it): the id may have been seen
    before, and the caller checks. Returns the number inserted."""
    slots = np.uint64(table.shape[0] // 3)
    low = np.uint64(0xFFFFFFFF)
    added = 0
    for k in range(hashes.shape[0]):
        h = hashes[k]
        fp = h >> np.uint64(40)
        if fp == np.uint64(0):
            fp = np.uint64(1)
        b0 = np.uint8(fp & np.uint64(0xFF))
        b1 = np.uint8((fp >> np.uint64(8)) & np.uint64(0xFF))
        b2 = np.uint8(fp >> np.uint64(16))
        slot = ((h & low) * slots) >> np.uint64(32)
        hits[k] = 0
        while True:
            p = np.int64(slot) * 3
            v0 = table[p]
            v1 = table[p + 1]
            v2 = table[p + 2]
            if v0 == 0 and v1 == 0 and v2 == 0:
                table[p] = b0
                table[p + 1] = b1
                table[p + 2] = b2
                added += 1
                break
            if v0 == b0 and v1 == b1 and v2 == b2:
                hits[k] = 1
                break
            slot += np.uint64(1)
            if slot == slots:
                slot = np.uint64(0)
    return added


@njit(nogil=True, cache=True)
def lengths_block(buf, start, cls, b, c):
    """Records and Σ (L³ + b·L² + c) of the records in ``buf[start:]`` (L: nucleotide codes of the sequence
    lines)."""
    n = buf.shape[0]
    p = start
    records = 0
    work = 0.0
    while p < n:
        while p < n and buf[p] != 10:            # the header line
            p += 1
        p += 1
        length = 0
        while p < n and buf[p] != 62:
            while p < n and buf[p] != 10:
                if cls[buf[p]] == 1:
                    length += 1
                p += 1
            p += 1
        x = float(length)
        work += (x + b) * x * x + c
        records += 1
    return records, work
