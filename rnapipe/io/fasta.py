"""Sequence input: FASTA and gzipped FASTA through Biopython, streamed, normalised and validated.

Every problem becomes one :class:`rnapipe.errors.InputError` naming the file, the record and the 1-based
position in the sequence (whitespace removed), with the line number where it helps. Under
``on_invalid="skip"`` the same reason goes into a :class:`Rejected` entry instead and reading goes on;
a file that cannot be read at all (missing, empty, not FASTA, corrupt gzip) is one entry with ``id=None``.
"""

from __future__ import annotations

import collections
import gzip
import io
import itertools
import os
import re
import sys
import zlib
from collections.abc import Mapping
from typing import Iterable, Iterator, NamedTuple, TextIO

from ..alphabet import normalise
from ..constraints import is_constraint_line
from ..errors import InputError
from .idtext import ID_ERRORS
from .records import Record, Rejected

STDIN = "-"

# Everything alphabet.ACCEPTED allows, in both cases, plus T (turned into U). Searching the raw text
# keeps positions those of the user's file even where upper() would change the length of junk.
_BAD = re.compile(r"[^ACGTUNRYKMSWBDHVacgtunrykmswbdhv]")
_WHITESPACE = re.compile(r"\s+")

# Magic numbers of compressions we do not read, so that the message says what the file is.
_OTHER_COMPRESSIONS = {
    b"BZh": "bzip2",
    b"\xfd7zXZ\x00": "xz",
    b"\x28\xb5\x2f\xfd": "zstd",
    b"PK\x03\x04": "zip",
    b"7z\xbc\xaf\x27\x1c": "7z",
}
_GZIP_MAGIC = b"\x1f\x8b"
_SNIFF_BYTES = 4096


def check_on_invalid(on_invalid: str) -> None:
    if on_invalid not in ("error", "skip"):
        raise ValueError(f"on_invalid must be 'error' or 'skip', not {on_invalid!r}")


def _show(char: str) -> str:
    if char == "\ufffd" or "\ud800" <= char <= "\udfff":     # a surrogate: what a byte that is not UTF-8 reads as
        return "a byte that is not UTF-8 text"
    if " " < char < "\x7f":
        return f"invalid character '{char}'"
    return f"invalid character {ascii(char)}"


def _hint(char: str) -> str:
    if char in "-.~":
        return "alignment gaps are not allowed"
    if char.isdigit():
        return "digits are not allowed"
    if char.isalpha() and char.isascii():
        return "not a nucleotide code (a protein sequence?)"
    return ""


def _problem(sequence: str) -> tuple[int | None, str, str] | None:
    """``(1-based position, fault, hint)`` for the first fault of a whitespace-free sequence, or None."""
    if not sequence:
        return None, "empty record: no sequence", ""
    bad = _BAD.search(sequence)
    if bad is not None:
        return bad.start() + 1, _show(bad.group()), _hint(bad.group())
    return None


def _reason(fault: str, hint: str, line: int | None = None) -> str:
    """``fault at line N; hint``: what is wrong first, where in the file next, advice last."""
    text = fault if line is None else f"{fault} at line {line}"
    return f"{text}; {hint}" if hint else text


def validate_sequence(sequence: str, record: str | None = None, file: str | None = None) -> str:
    """Return ``sequence`` without whitespace, upper case, T→U; raise :class:`InputError` if it cannot fold.

    A, C, G, U (and T) fold; N and the other IUPAC codes are accepted and never pair.
    """
    if isinstance(sequence, (bytes, bytearray)):
        sequence = bytes(sequence).decode("utf-8", errors="replace")
    sequence = _WHITESPACE.sub("", sequence)
    problem = _problem(sequence)
    if problem is not None:
        position, fault, hint = problem
        raise InputError(_reason(fault, hint), file=file, record=record, position=position)
    return normalise(sequence)


# ---------------------------------------------------------------------------------------------------------
# Files


def _display(path) -> str:
    return "<stdin>" if path == STDIN else os.fspath(path)


def open_text(path, name: str | None = None) -> TextIO:
    """Open a plain or gzipped text file (gzip recognised by its magic bytes, whatever the suffix).

    Raises :class:`InputError` for a missing or unreadable file, another compression, or binary content.
    Bytes that are not UTF-8 text are read as :mod:`.idtext` reads them (surrogate escapes): an id keeps them,
    and in a sequence they are reported where they are, not as a crash.
    """
    return io.TextIOWrapper(open_binary(path, name), encoding="utf-8-sig", errors=ID_ERRORS, newline=None)


def open_binary(path, name: str | None = None):
    """The checks of :func:`open_text`; returns the (decompressed) byte stream."""
    name = name or _display(path)
    try:
        raw = sys.stdin.buffer if path == STDIN else open(path, "rb")
    except FileNotFoundError:
        raise InputError("no such file", file=name) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a FASTA file", file=name) from None
    except PermissionError:
        raise InputError("permission denied", file=name) from None
    except OSError as err:
        raise InputError(f"cannot open: {err.strerror or err}", file=name) from None
    try:
        head = _peek(raw, 8)
        if head.startswith(_GZIP_MAGIC):
            if path == STDIN:
                raw = gzip.GzipFile(fileobj=raw, mode="rb")
            else:
                # gzip.open owns the file and closes it; a GzipFile around our handle would leak it
                raw.close()
                raw = gzip.open(path, "rb")
            sniff = _peek(raw, _SNIFF_BYTES)
        else:
            for magic, kind in _OTHER_COMPRESSIONS.items():
                if head.startswith(magic):
                    raise InputError(f"{kind}-compressed file: rnapipe reads plain or gzipped FASTA; "
                                     f"decompress it first", file=name)
            sniff = _peek(raw, _SNIFF_BYTES)
        if b"\x00" in sniff:
            raise InputError("binary file, not FASTA", file=name)
    except InputError:
        raw.close()
        raise
    except (OSError, EOFError, zlib.error) as err:
        raw.close()
        raise InputError(f"not a valid gzip file ({err})", file=name) from None
    return raw


AUTO_ID_PREFIX = "sequence_"     # RNAfold's --auto-id ids: prefix, delimiter and 4 digits (``sequence_0001``)
AUTO_ID_DIGITS = 4
_BOM = b"\xef\xbb\xbf"
_COMMENT_STARTS = b"#%;/* "      # lines RNAfold's reader skips as comments


def auto_id(number: int) -> str:
    """RNAfold's generated id for record ``number`` (counted from 1 over all inputs): ``sequence_0001``."""
    return f"{AUTO_ID_PREFIX}{number:0{AUTO_ID_DIGITS}d}"


def is_headerless(raw) -> bool:
    """Whether a byte stream (with ``peek``) holds sequences one a line without FASTA headers: its first line
    that is neither blank nor a comment starts with neither '>' nor '@' (FASTQ, refused later), and no line
    of its first bytes starts with '>' (text before FASTA records is refused as not FASTA)."""
    head = _peek(raw, _SNIFF_BYTES).removeprefix(_BOM)
    if head.startswith(b">") or b"\n>" in head or b"\r>" in head:
        return False
    for line in head.splitlines():
        text = line.strip()
        if not text or line[:1] in _COMMENT_STARTS:
            continue
        return not text.startswith((b">", b"@"))
    return False


class Headerless(io.RawIOBase):
    """Sequences one a line, as RNAfold reads input without FASTA headers, given as FASTA: each sequence gets
    the header ``>sequence_NNNN`` (:func:`auto_id`, numbered from ``first_number``). Blank lines and comment
    lines (starting with one of ``#%;/*`` or a space) are skipped (given as blank lines, so that every line
    of the file keeps one line of the FASTA: see :func:`headerless_line`), and a line holding only '@' ends
    the input, as in RNAfold. With ``constraints`` (RNAfold's -C), a constraint line (rnapipe.constraints)
    stays with the sequence before it, as the rest of its record."""

    def __init__(self, raw, first_number: int, constraints: bool = False):
        super().__init__()
        self._raw = raw
        self._constraints = constraints
        self._number = first_number
        self._first_number = first_number
        self._pending = b""
        self._done = False
        self._first = True

    def readable(self) -> bool:
        return True

    def _fill(self, size: int) -> None:
        out = [self._pending]
        have = len(self._pending)
        while have < size and not self._done:
            line = self._raw.readline()
            if not line:
                self._done = True
                break
            if self._first:
                line, self._first = line.removeprefix(_BOM), False
            text = line.strip()
            if not text or line[:1] in _COMMENT_STARTS:
                out.append(b"\n")
                have += 1
                continue
            if text == b"@":
                self._done = True
                break
            if self._constraints and self._number > self._first_number and is_constraint_line(
                    text.decode("ascii", "replace")):
                out.append(text + b"\n")
                have += len(text) + 1
                continue
            record = b">" + auto_id(self._number).encode("ascii") + b"\n" + text + b"\n"
            self._number += 1
            out.append(record)
            have += len(record)
        self._pending = b"".join(out)

    def read(self, size: int = -1) -> bytes:
        self._fill(size if size is not None and size >= 0 else 1 << 62)
        if size is None or size < 0:
            size = len(self._pending)
        data, self._pending = self._pending[:size], self._pending[size:]
        return data

    read1 = read

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def close(self) -> None:
        if self._raw is not sys.stdin.buffer:
            self._raw.close()
        super().close()


def headerless_line(line: int, ordinal: int) -> int:
    """The header line of record ``ordinal`` (its place in the file, from 0) of a :class:`Headerless` file's
    FASTA, counted in the file's own lines: the line before its sequence line (``ordinal + 1`` made-up header
    lines come up to it), so that ``header line + k`` is the record's k-th line in the file as in FASTA."""
    return line - ordinal - 1


def _peek(raw, size: int) -> bytes:
    """Up to ``size`` bytes from the start without consuming them (peek may return fewer or more)."""
    data = raw.peek(size)
    return data[:size]


class _FileError(Exception):
    """Raised inside the scan when the rest of a file cannot be read; carries the InputError."""

    def __init__(self, error: InputError, partial: bool):
        super().__init__(error.format())
        self.error = error
        self.partial = partial


def _first_content_line(text: TextIO, name: str) -> tuple[int, str]:
    """Check that the file starts like FASTA; return the number and text of its first non-blank line."""
    for number, line in enumerate(text, start=1):
        if not line.strip():
            continue
        if line.startswith(">"):
            return number, line
        if line.startswith("@"):
            raise InputError(f"looks like FASTQ (line {number} starts with '@'), not FASTA: "
                             "convert it to FASTA first", file=name)
        snippet = ascii(line.strip()[:24])[1:-1]
        raise InputError(f"not a FASTA file: line {number} ('{snippet}') does not start with '>'", file=name)
    raise InputError("empty file: no FASTA records", file=name)


class _LineTracker:
    """Passes lines through to Biopython's parser and remembers, per record, its header's line number and
    its sequence lines, so that errors can name lines without reading the file twice (stdin cannot be).

    The parser reads the next header before it yields a record, so the record it yields is always the
    oldest one held here.
    """

    def __init__(self, lines: Iterable[str], first_number: int):
        self._lines = lines
        self._first_number = first_number
        self._records: collections.deque[tuple[int, list[str]]] = collections.deque()

    def lines(self) -> Iterator[str]:
        """One generator for the whole file: the parser loops over it twice and must not restart the count."""
        records = self._records
        for number, line in enumerate(self._lines, start=self._first_number):
            if line[:1] == ">":
                records.append((number, []))
            else:
                records[-1][1].append(line)
            yield line

    def pop(self) -> tuple[int, list[str]]:
        return self._records.popleft()


def _line_of(header_line: int, lines: list[str], position: int | None) -> int:
    """Line number of the ``position``-th residue (whitespace not counted) of a record, or of its header."""
    if position is None:
        return header_line
    for offset, line in enumerate(lines, start=1):
        position -= len(_WHITESPACE.sub("", line))
        if position <= 0:
            return header_line + offset
    return header_line


def _scan(path, name: str, first_number: int = 1) -> Iterator[tuple[int, str, str, int, list[str], int]]:
    """Yield ``(ordinal in file, title, raw sequence, header line, sequence lines, the record's line)``;
    sequences one a line without headers come as FASTA records with the ids of :class:`Headerless` from
    ``first_number``, their lines counted in the file (:func:`headerless_line`; the record's line is then its
    sequence's, else its header's).

    File-level faults raise :class:`_FileError`.
    """
    from Bio.SeqIO.FastaIO import SimpleFastaParser        # here: Bio.SeqIO's import is slow

    ordinal = -1
    try:
        raw = open_binary(path, name)
        headerless = is_headerless(raw)
        if headerless:
            raw = io.BufferedReader(Headerless(raw, first_number))
        text = io.TextIOWrapper(raw, encoding="utf-8-sig", errors=ID_ERRORS, newline=None)
    except InputError as err:
        raise _FileError(err, partial=False) from None
    try:
        number, first = _first_content_line(text, name)
        tracker = _LineTracker(itertools.chain([first], text), number)
        for ordinal, (title, sequence) in enumerate(SimpleFastaParser(tracker.lines())):
            header_line, lines = tracker.pop()
            if headerless:
                header_line = headerless_line(header_line, ordinal)
            yield ordinal, title, sequence, header_line, lines, header_line + headerless
    except InputError as err:
        raise _FileError(err, partial=False) from None
    except (OSError, EOFError, zlib.error) as err:
        where = f" after record {ordinal + 1}" if ordinal >= 0 else ""
        raise _FileError(InputError(f"corrupt or truncated data{where} ({err})", file=name),
                         partial=ordinal >= 0) from None
    finally:
        _close(text, path)


def _close(text: TextIO, path) -> None:
    if path == STDIN:
        text.detach()  # leave sys.stdin usable
    else:
        text.close()


def read_records(paths, on_invalid: str = "error", rejected: list[Rejected] | None = None) -> Iterator[Record]:
    """Stream validated :class:`Record` objects from FASTA / gzipped FASTA files (``"-"`` is stdin).

    ``index`` counts every record of every file in order, rejected ones included, so that it is the
    record's place in the input. Ids are the first word of the header and must be unique across all
    files. With ``on_invalid="skip"`` faults are appended to ``rejected`` and reading continues.
    """
    check_on_invalid(on_invalid)
    if rejected is None:
        rejected = []
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    first_seen: dict[str, tuple[str, int]] = {}  # id -> (file, header line)
    index = 0
    for path in paths:
        name = _display(path)
        try:
            for ordinal, title, raw, header_line, lines, record_line in _scan(path, name, index + 1):
                position = index
                index += 1
                words = title.split(None, 1)
                if not words:
                    reason = _reason(f"empty id after '>' in record {ordinal + 1} of the file", "", header_line)
                    if on_invalid == "error":
                        raise InputError(reason, file=name)
                    rejected.append(Rejected(position, "", name, reason))
                    continue
                record_id = words[0]
                if record_id in first_seen:
                    other_name, other_line = first_seen[record_id]
                    again = " (the same file given twice?)" if (other_name, other_line) == (name, record_line) else ""
                    reason = _reason("duplicate id", f"first seen in {other_name} line {other_line}{again}",
                                     record_line)
                    if on_invalid == "error":
                        raise InputError(reason, file=name, record=record_id)
                    rejected.append(Rejected(position, record_id, name, reason))
                    continue
                first_seen[record_id] = (name, record_line)
                sequence = _WHITESPACE.sub("", raw)
                problem = _problem(sequence)
                if problem is not None:
                    at, fault, hint = problem
                    reason = _reason(fault, hint, _line_of(header_line, lines, at))
                    if on_invalid == "error":
                        raise InputError(reason, file=name, record=record_id, position=at)
                    rejected.append(Rejected(position, record_id, name,
                                             InputError(reason, position=at).format()))
                    continue
                yield Record(record_id, normalise(sequence), position, name)
        except _FileError as err:
            if on_invalid == "error":
                raise err.error from None
            tail = "the rest of the file was skipped" if err.partial else "the file was skipped"
            rejected.append(Rejected(index, None, name, f"{err.error.reason}; {tail}"))


# ---------------------------------------------------------------------------------------------------------
# Python objects


def _is_seqrecord(obj) -> bool:
    return hasattr(obj, "seq") and hasattr(obj, "id") and not isinstance(obj, (str, bytes, tuple))


def as_records(obj, on_invalid: str = "error", rejected: list[Rejected] | None = None) -> Iterator[Record]:
    """Turn what a user hands to :func:`rnapipe.fold` into validated :class:`Record` objects, in order.

    Accepts one sequence string; an iterable of strings (ids ``seq1``, ``seq2``, ...), of ``(id, sequence)``
    pairs, of :class:`Record` (index and file kept, as :func:`read_records` yields them) or of Biopython
    ``SeqRecord``; or a mapping ``{id: sequence}``. Whitespace is dropped, case folded, T→U.
    """
    check_on_invalid(on_invalid)
    if rejected is None:
        rejected = []
    if isinstance(obj, (str, bytes, bytearray, Record)) or _is_seqrecord(obj):
        obj = [obj]
    elif isinstance(obj, Mapping):
        obj = obj.items()
    seen: set[str] = set()
    for position, item in enumerate(obj):
        index, file = position, None
        if isinstance(item, Record):
            record_id, raw, index, file = item.id, item.sequence, item.index, item.file
        elif isinstance(item, (str, bytes, bytearray)):
            record_id, raw = f"seq{position + 1}", item
        elif _is_seqrecord(item):
            record_id, raw = str(item.id), str(item.seq)
        elif isinstance(item, (tuple, list)) and len(item) == 2:
            record_id, raw = str(item[0]), item[1]
        else:
            raise TypeError(f"item {position} is a {type(item).__name__}: expected a sequence string, "
                            "an (id, sequence) pair, a Record or a SeqRecord")
        try:
            if not record_id.strip():
                raise InputError(f"empty id (item {position + 1})", file=file)
            if record_id in seen:
                raise InputError("duplicate id", file=file, record=record_id)
            seen.add(record_id)
            sequence = validate_sequence(raw, record=record_id, file=file)
        except InputError as err:
            if on_invalid == "error":
                raise
            rejected.append(Rejected(index, record_id, file,
                                     InputError(err.reason, position=err.position).format()))
            continue
        yield Record(record_id, sequence, index, file)


def read_dotbracket(path, on_invalid: str = "error",
                    rejected: list[Rejected] | None = None) -> Iterator[tuple[str, str, str]]:
    """Yield ``(id, sequence, structure)`` from a dot-bracket FASTA file (RNAfold output, ``.dbn``).

    A record is a ``>`` header, sequence lines, then structure lines (starting with one of ``.()[]{}<>``); a
    trailing energy such as ``( -1.20)`` on the structure line is ignored. Each record is checked as RNAeval
    needs it: the sequence validated and normalised, the structure made of ``.()[]{}<>``, as long as the
    sequence, its ``()`` balanced (the other brackets pair nothing for RNAeval, so they are not matched).
    A fault names the file, the record, the position and the line; with ``on_invalid="skip"`` it goes to
    ``rejected`` (``index``: the record's place in the file from 0) and reading goes on.
    """
    check_on_invalid(on_invalid)
    if rejected is None:
        rejected = []
    name = _display(path)
    try:
        text = open_text(path, name)
    except InputError as err:
        if on_invalid == "error":
            raise
        rejected.append(Rejected(0, None, name, f"{err.reason}; the file was skipped"))
        return
    try:
        try:
            start, first = _first_content_line(text, name)
        except InputError as err:
            if on_invalid == "error":
                raise
            rejected.append(Rejected(0, None, name, f"{err.reason}; the file was skipped"))
            return
        seen: dict[str, int] = {}
        for index, block in enumerate(_dotbracket_blocks(itertools.chain([first], text), start)):
            try:
                record = _dotbracket_record(block, name, seen)
            except InputError as err:
                if on_invalid == "error":
                    raise
                reason = InputError(err.reason, position=err.position).format()
                rejected.append(Rejected(index, err.record or "", name, reason))
                continue
            yield record
    finally:
        _close(text, path)


_STRUCTURE_CHARS = frozenset(".()[]{}<>")
_TRAILING_ENERGY = re.compile(r"\s*\(\s*[-+]?\d+(?:\.\d*)?\s*\)\s*$")


class _DotBracketBlock(NamedTuple):
    id: str
    line: int                             # the header's
    sequence: list[tuple[int, str]]       # (line number, text)
    structure: list[tuple[int, str]]
    after: list[int]                      # lines of sequence text after the structure


def _dotbracket_blocks(lines: Iterable[str], first_number: int) -> Iterator[_DotBracketBlock]:
    block = None
    for number, line in enumerate(lines, start=first_number):
        line = line.strip()
        if line.startswith(">"):
            if block is not None:
                yield block
            words = line[1:].split(None, 1)
            block = _DotBracketBlock(words[0] if words else "", number, [], [], [])
        elif not line:
            continue
        elif line[0] in _STRUCTURE_CHARS:
            block.structure.append((number, line))
        elif block.structure:
            block.after.append(number)
        else:
            block.sequence.append((number, line))
    if block is not None:
        yield block


def _dotbracket_record(block: _DotBracketBlock, name: str, seen: dict[str, int]) -> tuple[str, str, str]:
    """The checked ``(id, sequence, structure)`` of one block; raises :class:`InputError` at its first fault."""
    record_id = block.id
    if not record_id:
        raise InputError(f"empty id after '>' (line {block.line})", file=name)
    if record_id in seen:
        raise InputError(f"duplicate id (line {block.line}; first seen at line {seen[record_id]})", file=name,
                         record=record_id)
    seen[record_id] = block.line
    sequence = _WHITESPACE.sub("", "".join(text for _, text in block.sequence))
    problem = _problem(sequence)
    if problem is not None:
        at, fault, hint = problem
        line = _line_of(block.line, [text for _, text in block.sequence], at)
        raise InputError(_reason(fault, hint, line), file=name, record=record_id, position=at)
    if not block.structure:
        raise InputError(f"no dot-bracket structure line after the sequence (record at line {block.line})",
                         file=name, record=record_id)
    if block.after:
        raise InputError(f"unexpected line after the structure (line {block.after[0]})", file=name,
                         record=record_id)
    parts, line_of = [], []
    for k, (number, text) in enumerate(block.structure):
        if k == len(block.structure) - 1:
            text = _TRAILING_ENERGY.sub("", text)
        for c in text:
            if c not in _STRUCTURE_CHARS:
                raise InputError(f"{_show(c)} in the structure at line {number}", file=name, record=record_id,
                                 position=len(line_of) + text.index(c) + 1)
        parts.append(text)
        line_of += [number] * len(text)
    structure = "".join(parts)
    if len(structure) != len(sequence):
        raise InputError(f"structure has {len(structure)} characters but the sequence has {len(sequence)} "
                         f"(line {block.structure[0][0]})", file=name, record=record_id)
    opened: list[int] = []
    for k, c in enumerate(structure):
        if c == "(":
            opened.append(k)
        elif c == ")":
            if not opened:
                raise InputError(f"unmatched ')' at line {line_of[k]}", file=name, record=record_id, position=k + 1)
            opened.pop()
    if opened:
        k = opened[0]
        raise InputError(f"unmatched '(' at line {line_of[k]}", file=name, record=record_id, position=k + 1)
    return record_id, normalise(sequence), structure
