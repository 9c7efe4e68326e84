"""Records from FASTA files in blocks: read, parsed, normalised and validated in bulk.

Yields :class:`Piece` objects (the valid records of one block, as lists and arrays, and the records it
rejected) with the same outcome, record for record and message for message, as
:func:`rnapipe.io.read_records`: blocks are parsed by the compiled scan (:mod:`.scan`), and a block with
anything unusual in it is read again by that reader's own per-record rules.
"""

from __future__ import annotations

import bisect
import collections
import io
import itertools
import os
import re
import zlib
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

import numpy as np

from ... import config
from ...alphabet import normalise
from ...constraints import deigan, is_constraint_line, problem as constraint_problem
from ...errors import InputError, SequenceTooLongError
from ...io.fasta import Headerless, headerless_line, is_headerless
from ...io.fasta import _WHITESPACE, _display, _first_content_line, _LineTracker, _line_of, _problem, _reason, check_on_invalid, open_binary
from ...io.idtext import ID_ERRORS
from ...io.records import Rejected
from . import scan
from .ids import IdSet
from ..records import Records

READ_BYTES = 1 << 22          # at most one read from a file (read1: a gzip gives what one step decompressed,
                              # so the records before a damaged part are still read)
BLOCK_BYTES = 4 << 20         # records are parsed in blocks of about this size
# Blocks are parsed on this many threads at once (the compiled scan runs without the GIL); the reading
# thread takes their results in order and does what depends on the records before (line numbers, ids).
PARSE_THREADS = max(1, min(4, config.default_threads() - 1))
_LONE_CR = re.compile(rb"\r(?!\n)")


@dataclass
class Piece:
    """Valid records of one block in input order, and the records it rejected. ``end`` is the input index
    after the block's last record (every record counts, rejected ones too)."""

    records: Records
    rejected: list[Rejected] = field(default_factory=list)
    end: int = 0


class LengthCheck:
    """Refuses sequences that need more memory than the engine has (``bytes_of(n) > budget``)."""

    def __init__(self, longest: int | None, describe: Callable[[int], str] | None = None):
        self.longest = longest
        self.describe = describe

    def reason(self, n: int) -> str:
        return self.describe(n)


class _Stop(Exception):
    """A bad record under on_invalid='error': the piece of valid records before it, and its error."""

    def __init__(self, piece: Piece, error: InputError):
        super().__init__(str(error))
        self.piece = piece
        self.error = error


class _FileError(Exception):
    def __init__(self, error: InputError, partial: bool):
        super().__init__(error.format())
        self.error = error
        self.partial = partial


class _Damaged(Exception):
    """A file that cannot be read on (``error``: what the decompressor or the OS said)."""

    def __init__(self, error: BaseException):
        super().__init__(str(error))
        self.error = error


class _File:
    """Per-file state of the stream: ordinal of the next record, line of the next block."""

    def __init__(self, path, file_index: int):
        self.path = path
        self.name = _display(path)
        self.file_index = file_index
        self.ordinal = 0
        self.line = 1
        self.disk = 0.0                 # bytes of the file on disk (compressed, for a gzip) that the block
                                        # being taken stands for
        self.headerless = False         # sequences one a line, without FASTA headers


class FastaReader:
    """The records of ``paths`` as :class:`Piece` objects (see the module docstring)."""

    def __init__(self, paths, on_invalid: str = "error", length_check: LengthCheck | None = None,
                 scratch: str | None = None, noconv: bool = False, constraints: bool = False, shape=None):
        check_on_invalid(on_invalid)
        if isinstance(paths, (str, bytes)) or not isinstance(paths, Iterable):
            paths = [paths]
        self.paths = list(paths)
        self.on_invalid = on_invalid
        self.noconv = noconv                        # print T as given (the engines fold it as U all the same)
        self.printed = scan.PRINT_NOCONV if noconv else scan.PRINT
        # RNAfold's -C: each record's sequence lines are followed by its constraint line (rnapipe.constraints),
        # read by the per-record rules (the compiled scan reads sequences only)
        self.constraints = constraints
        self.shape = shape                          # rnapipe.constraints.ShapeData, or None
        self.length_check = length_check or LengthCheck(None)
        self.names = [_display(p) for p in self.paths]
        self.scratch = scratch
        self.index = 0
        self._starts: list[int] = []                # input index of each file's first record, files begun so far
        self._total = _disk_bytes(self.paths)      # the inputs' bytes on disk, where known before reading
        self._consumed = 0                          # bytes on disk of the blocks taken so far

    def _expect(self, ids: IdSet, size: int, records: int) -> None:
        """Tell ``ids`` how many ids the stream may hold: the records so far (``records``, with the block that
        stands for ``size`` bytes on disk being taken) in proportion to the bytes on disk read (its table is
        then sized once, gzipped inputs too)."""
        self._consumed += size
        if self._total and records:
            ids.expected = records * self._total / max(self._consumed, 1)

    def file_of(self, index: int) -> str | None:
        """The name of the file that holds the record of input index ``index`` (of the files read so far)."""
        at = bisect.bisect_right(self._starts, index) - 1
        return self.names[at] if at >= 0 else None

    def __iter__(self) -> Iterator[Piece]:
        ids = IdSet(self.scratch)
        pool = ThreadPoolExecutor(PARSE_THREADS, thread_name_prefix="rnapipe-parse")
        try:
            for file_index, path in enumerate(self.paths):
                state = _File(path, file_index)
                self._starts.append(self.index)
                try:
                    for block, first, disk, parsed in self._parsed(state, pool):
                        state.disk = disk
                        try:
                            piece = self._piece(block, first, state, ids, parsed)
                        except _Stop as stop:     # error mode: the valid records before the bad one first
                            if len(stop.piece.records):
                                yield stop.piece
                            raise stop.error from None
                        if len(piece.records) or piece.rejected:
                            yield piece
                except _FileError as err:
                    if self.on_invalid == "error":
                        raise err.error from None
                    tail = "the rest of the file was skipped" if err.partial else "the file was skipped"
                    yield Piece(Records.empty(),
                                [Rejected(self.index, None, state.name, f"{err.error.reason}; {tail}")], self.index)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            ids.close()

    def _parsed(self, state: _File,
                pool: ThreadPoolExecutor) -> Iterator[tuple[bytes, bool, float, Future | None]]:
        """The blocks of one file in order (as :meth:`_blocks` gives them), each with its parse (:func:`_parse`)
        under way on ``pool`` (None for the file's first block, which is parsed where it is used), up to a few
        blocks ahead; a read error is raised after the blocks read before it."""
        blocks = self._blocks(state)
        ahead: collections.deque = collections.deque()
        error = None
        more = True
        try:
            while True:
                while more and error is None and len(ahead) <= PARSE_THREADS:
                    try:
                        block, first, disk = next(blocks)
                    except StopIteration:
                        more = False
                        break
                    except (_FileError, _Damaged) as err:
                        error = err
                        break
                    ahead.append((block, first, disk, None if first else pool.submit(_parse, block, self.printed)))
                if not ahead:
                    break
                yield ahead.popleft()
            if isinstance(error, _Damaged):        # the records read before it are counted now
                done = state.ordinal
                where = f" after record {done}" if done else ""
                raise _FileError(InputError(f"corrupt or truncated data{where} ({error.error})", file=state.name),
                                 partial=done > 0) from None
            if error is not None:
                raise error
        finally:
            for *_, future in ahead:
                if future is not None:
                    future.cancel()
            blocks.close()

    # -----------------------------------------------------------------------------------------------------
    # blocks

    def _blocks(self, state: _File) -> Iterator[tuple[bytes, bool, float]]:
        """Blocks of whole records (cut before a '>' that starts a line); the first one of the file flagged;
        each with the bytes of the file on disk it stands for (for a gzip, its share of the compressed bytes
        read so far)."""
        try:
            raw = open_binary(state.path, state.name)
        except InputError as err:
            raise _FileError(err, partial=False) from None
        if is_headerless(raw):                       # one sequence a line, as RNAfold reads: given as FASTA
            raw = Headerless(raw, self.index + 1, self.constraints)
            state.headerless = True
        packed = getattr(raw, "fileobj", None)       # a gzip's compressed stream
        taken = read_so_far = 0                      # bytes of the blocks given, bytes read (decompressed)
        disk_before = 0.0

        def disk(block: bytes) -> float:
            """The bytes on disk of ``block``, the next one given."""
            nonlocal taken, disk_before
            taken += len(block)
            end = float(taken)
            if packed is not None:
                try:
                    end = packed.tell() * taken / max(read_so_far, 1)
                except (OSError, ValueError):
                    pass
            share, disk_before = max(0.0, end - disk_before), max(disk_before, end)
            return share

        try:
            pending: list[bytes] = []
            size = 0
            first = True
            read = getattr(raw, "read1", raw.read)     # read1: what is there now, before any damage
            while True:
                try:
                    data = read(READ_BYTES)
                except (OSError, EOFError, zlib.error) as err:
                    # what was read before the damage: its whole records, then the file's error
                    tail = b"".join(pending)
                    cut = _cut(tail)
                    if cut > 0:
                        yield tail[:cut], first, disk(tail[:cut])
                        first = False
                    raise _Damaged(err) from None
                if data:
                    read_so_far += len(data)
                    pending.append(data)
                    size += len(data)
                    if size < BLOCK_BYTES:
                        continue
                    buf = b"".join(pending)
                    cut = _cut(buf)
                    if cut <= 0 or (first and buf.find(b">", 0, cut) < 0):    # the first block has a record
                        pending, size = [buf], len(buf)
                        continue
                    pending, size = [buf[cut:]], len(buf) - cut
                    block = buf[:cut]
                    yield block, first, disk(block)
                    first = False
                    continue
                buf = b"".join(pending)
                if first or buf:
                    yield buf, first, disk(buf)
                return
        finally:
            if state.path != "-":
                raw.close()

    # -----------------------------------------------------------------------------------------------------
    # one block

    def _piece(self, block: bytes, first: bool, state: _File, ids: IdSet, parsed: Future | None = None) -> Piece:
        if self.constraints:
            return self._slow(block, first, state, ids)
        start_line = state.line
        body = block
        hashes = None
        if parsed is not None:
            (count, seqs_text, ids_text, lens, id_lens, lines, line_count, flagged, heads_text, head_lens,
             printed_text, hashes) = parsed.result()
            lines += start_line
        elif first:
            text = io.TextIOWrapper(io.BytesIO(block), encoding="utf-8-sig", errors="replace", newline=None)
            _file_start(text, state.name)               # raises for an empty or non-FASTA file
            at = block.find(b">")
            prefix = block[:at]
            if b"\r" in prefix:
                return self._slow(block, True, state, ids)
            start_line = 1 + prefix.count(b"\n")
            body = block[at:]
        if parsed is None:
            (count, seqs_text, ids_text, lens, id_lens, lines, line_count, flagged, heads_text,
             head_lens, printed_text) = scan.parse_block(body, start_line, self.printed)
        if flagged:
            return self._slow(block, first, state, ids)
        state.line = start_line + line_count
        if state.headerless:                      # counted in the file: each record's sequence line
            lines = headerless_line(lines, state.ordinal + np.arange(count, dtype=lines.dtype)) + 1
        first_index = self.index
        self.index += count
        state.ordinal += count
        index = np.arange(first_index, first_index + count, dtype=np.int64)
        if state.headerless:
            heads_text, head_lens = b"\n" * count, np.zeros(count, dtype=np.int64)
        records = Records(ids_text, seqs_text, id_lens, lens, index, None, heads_text, head_lens, printed_text)
        self._expect(ids, state.disk, self.index)
        problems: dict[int, tuple[str, type | None]] = {}
        for k, (f, line) in ids.add(lambda: records.ids, ids_text, state.file_index, lines, hashes).items():
            problems[k] = self._duplicate(f, line, state.name, int(lines[k])), None
        if self.shape is not None:
            records.shape = []
            for k, (record_id, n) in enumerate(zip(records.ids, lens.tolist())):
                energies, fault = self._shape_of(record_id, first_index + k, n)
                records.shape.append(energies)
                if fault is not None and k not in problems:
                    problems[k] = fault, None
        longest = self.length_check.longest
        if longest is not None and count and int(lens.max()) > longest:
            for k in np.flatnonzero(lens > longest).tolist():
                if k not in problems:
                    problems[k] = self.length_check.reason(int(lens[k])), SequenceTooLongError
        if not problems:
            return Piece(records, [], self.index)
        rejected = []
        for k in sorted(problems):
            reason, kind = problems[k]
            if self.on_invalid == "error":
                before = Piece(records.take(0, k), [], first_index + k)
                raise _Stop(before, (kind or InputError)(reason, file=state.name, record=records.ids[k]))
            rejected.append(Rejected(first_index + k, records.ids[k], state.name, reason))
        keep = np.ones(count, dtype=bool)
        keep[list(problems)] = False
        return Piece(records.keep(keep), rejected, self.index)

    def _shape_of(self, record_id: str, index: int, length: int):
        """(the record's SHAPE pseudo-energies or None, the reason it is refused or None)."""
        try:
            return self.shape.for_record(record_id, index, length), None
        except InputError as err:
            return None, err.reason

    def _duplicate(self, f: int, line: int, name: str, header_line: int) -> str:
        other = self.names[f]
        again = " (the same file given twice?)" if (other, line) == (name, header_line) else ""
        return _reason("duplicate id", f"first seen in {other} line {line}{again}", header_line)

    def _slow(self, block: bytes, first: bool, state: _File, ids: IdSet) -> Piece:
        """The block through the per-record rules of rnapipe.io.read_records (exact messages)."""
        name = state.name
        self._expect(ids, state.disk, self.index + block.count(b"\n>") + 1)
        text = io.TextIOWrapper(io.BytesIO(block), encoding="utf-8-sig" if first else "utf-8", errors=ID_ERRORS,
                                newline=None)
        if first:
            number, head = _file_start(text, name)
            tracker = _LineTracker(itertools.chain([head], text), number)
        else:
            tracker = _LineTracker(text, state.line)
        out_ids, out_seqs, out_index, out_heads, out_printed, rejected = [], [], [], [], [], []
        out_cons = [] if self.constraints else None
        out_shape = [] if self.shape is not None else None
        try:
            self._slow_records(tracker, state, ids, out_ids, out_seqs, out_index, out_heads, out_printed, rejected,
                               out_cons, out_shape)
        except InputError as err:
            raise _Stop(Piece(Records.from_lists(out_ids, out_seqs, out_index, heads=out_heads, printed=out_printed,
                                                 constraints=out_cons, shape=out_shape),
                              [], self.index), err) from None
        state.line += block.count(b"\n") + len(_LONE_CR.findall(block))
        return Piece(Records.from_lists(out_ids, out_seqs, out_index, heads=out_heads, printed=out_printed,
                                        constraints=out_cons, shape=out_shape),
                     rejected, self.index)

    def _slow_records(self, tracker, state: _File, ids: IdSet, out_ids, out_seqs, out_index, out_heads,
                      out_printed, rejected, out_cons=None, out_shape=None) -> None:
        name = state.name
        longest = self.length_check.longest
        error = self.on_invalid == "error"
        from Bio.SeqIO.FastaIO import SimpleFastaParser

        for title, raw in SimpleFastaParser(tracker.lines()):
            header_line, lines = tracker.pop()
            position = self.index
            self.index += 1
            ordinal = state.ordinal
            state.ordinal += 1
            record_line = header_line             # the line that names the record
            if state.headerless:                  # counted in the file (its sequence line names the record)
                header_line = headerless_line(header_line, ordinal)
                record_line = header_line + 1
            words = title.split(None, 1)
            if not words:
                reason = _reason(f"empty id after '>' in record {ordinal + 1} of the file", "", header_line)
                if error:
                    raise InputError(reason, file=name)
                rejected.append(Rejected(position, "", name, reason))
                continue
            record_id = words[0]
            seen = ids.add([record_id], None, state.file_index, [record_line])
            if seen:
                f, line = seen[0]
                reason = self._duplicate(f, line, name, record_line)
                if error:
                    raise InputError(reason, file=name, record=record_id)
                rejected.append(Rejected(position, record_id, name, reason))
                continue
            constraint = None
            if out_cons is not None:
                cut = next((k for k, line in enumerate(lines) if is_constraint_line(line)), len(lines))
                sequence = _WHITESPACE.sub("", "".join(lines[:cut]))
                constraint = _WHITESPACE.sub("", "".join(lines[cut:]))
                constraint_line = header_line + cut
                lines = lines[:cut]
            else:
                sequence = _WHITESPACE.sub("", raw)
            problem = _problem(sequence)
            if problem is not None:
                at, fault, hint = problem
                reason = _reason(fault, hint, _line_of(header_line, lines, at))
                if error:
                    raise InputError(reason, file=name, record=record_id, position=at)
                rejected.append(Rejected(position, record_id, name, InputError(reason, position=at).format()))
                continue
            if longest is not None and len(sequence) > longest:
                reason = self.length_check.reason(len(sequence))
                if error:
                    raise SequenceTooLongError(reason, file=name, record=record_id)
                rejected.append(Rejected(position, record_id, name, reason))
                continue
            if constraint is not None:
                fault = constraint_problem(constraint, len(sequence))
                if fault is not None:
                    at, what = fault
                    line = record_line if not constraint else constraint_line + 1
                    reason = _reason(what, "", line)
                    if error:
                        raise InputError(reason, file=name, record=record_id, position=at)
                    rejected.append(Rejected(position, record_id, name, InputError(reason, position=at).format()))
                    continue
            if out_shape is not None:
                energies, fault = self._shape_of(record_id, position, len(sequence))
                if fault is not None:
                    if error:
                        raise InputError(fault, file=name, record=record_id)
                    rejected.append(Rejected(position, record_id, name, fault))
                    continue
                out_shape.append(energies)
            if constraint is not None:
                out_cons.append(constraint)
            out_ids.append(record_id)
            out_seqs.append(normalise(sequence))
            out_index.append(position)
            out_heads.append("" if state.headerless else title)
            out_printed.append(sequence if self.noconv else sequence.replace("T", "U").replace("t", "u"))


def _parse(block: bytes, printed):
    """:func:`scan.parse_block` of a block that is not a file's first, its header lines counted from 0, and
    the hashes of its ids (:func:`scan.hash_lines`) when it needs no exact reader: work for the pool."""
    parsed = scan.parse_block(block, 0, printed)
    count, ids_text, flagged = parsed[0], parsed[2], parsed[7]
    hashes = None
    if not flagged and count:
        hashes = np.empty(count, dtype=np.uint64)
        if scan.hash_lines(np.frombuffer(ids_text, dtype=np.uint8), hashes) != count:
            hashes = None
    return parsed + (hashes,)


def _disk_bytes(paths) -> int | None:
    """Bytes of the inputs on disk if every one is a regular file, plain or gzipped (else None: not known
    ahead, standard input among them)."""
    total = 0
    for path in paths:
        try:
            if path == "-" or not os.path.isfile(path):
                return None
            total += os.path.getsize(path)
        except (OSError, TypeError, ValueError):
            return None
    return total


def _file_start(text, name: str):
    try:
        return _first_content_line(text, name)
    except InputError as err:
        raise _FileError(err, partial=False) from None


def _cut(buf: bytes) -> int:
    """Where the last record of ``buf`` whose header line is complete starts (a '>' after a line end), or 0:
    the records before it are whole (a record ends where the next header line is read)."""
    newline = buf.rfind(b"\n")
    end = max(newline, buf.rfind(b"\r", newline + 1))          # each search from the end, no further back
    at = buf.rfind(b"\n>", 0, end)                             # than the answer needs
    return max(at, buf.rfind(b"\r>", at + 1, end)) + 1


def record_pieces(obj, on_invalid: str, length_check: LengthCheck, rejected: list[Rejected],
                  size: int = 1 << 14, constraints: list[str] | None = None, shape: list | None = None,
                  shape_method: tuple[float, float] | None = None) -> Iterator[Piece]:
    """Pieces from what :func:`rnapipe.fold` accepts (strings, pairs, Records, SeqRecords; see
    :func:`rnapipe.io.as_records`). Chunks count records by their place in this stream; each record's own
    index (a Record's, or its place) comes back as its tag. Rejected records go to ``rejected``.
    ``constraints``: the constraint line of each record by that index (a mapping; checked here:
    rnapipe.constraints);
    ``shape``: the SHAPE reactivities of each (None: none), turned into pseudo-energies by Deigan's method with
    ``shape_method`` (m, b)."""
    from ...io.fasta import as_records

    check_on_invalid(on_invalid)
    records = as_records(obj, on_invalid=on_invalid, rejected=rejected)
    longest = length_check.longest
    position = 0
    while True:
        batch = list(itertools.islice(records, size))
        if not batch:
            return
        ids, seqs, index, tags = [], [], [], []
        cons = None if constraints is None else []
        energies = None if shape is None else []
        for record in batch:
            if longest is not None and len(record.sequence) > longest:
                reason = length_check.reason(len(record.sequence))
                if on_invalid == "error":
                    raise SequenceTooLongError(reason, file=record.file, record=record.id)
                rejected.append(Rejected(record.index, record.id, record.file, reason))
                continue
            if cons is not None:
                line = constraints[record.index]
                fault = constraint_problem("".join(line.split()), len(record.sequence))
                if fault is not None:
                    error = InputError(f"{fault[1]} (constraints[{record.index}])", file=record.file,
                                       record=record.id, position=fault[0])
                    if on_invalid == "error":
                        raise error
                    rejected.append(Rejected(record.index, record.id, record.file, error.format()))
                    continue
                cons.append("".join(line.split()))
            if energies is not None:
                values = shape[record.index]
                if values is not None and len(values) != len(record.sequence):
                    error = InputError(f"{len(values)} SHAPE reactivities for {len(record.sequence)} nt "
                                       f"(shape[{record.index}])", file=record.file, record=record.id)
                    if cons is not None:
                        cons.pop()
                    if on_invalid == "error":
                        raise error
                    rejected.append(Rejected(record.index, record.id, record.file, error.format()))
                    continue
                energies.append(None if values is None else
                                deigan([0.0] + [-1.0 if v is None else float(v) for v in values], *shape_method)[1:])
            ids.append(record.id)
            seqs.append(record.sequence)
            index.append(position)
            tags.append(record.index)
            position += 1
        yield Piece(Records.from_lists(ids, seqs, index, tags, constraints=cons, shape=energies), [], position)
