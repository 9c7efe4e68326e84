"""Secondary structures: pair tables, dot-bracket, CT and BPSEQ, and checks with clear errors.

A *pair table* here is a 0-based list ``pt`` with ``pt[i] = j`` when bases i and j pair and ``pt[i] = -1``
when base i is unpaired (ViennaRNA's ``ptable`` is 1-based with the length in slot 0; we keep Python's
indexing and convert only in messages and files, which are 1-based).

Dot-bracket uses ``(`` ``)`` for nested pairs; ``[]``, ``{}``, ``<>`` carry pseudoknotted pairs when
reading, and when writing with ``pseudoknots=True``. CT is the mfold/RNAstructure connect format (a header
``N title`` then one line per base: index, base, previous, next, partner, natural index), BPSEQ the
three-column ``index base partner`` format with ``#`` comment lines; several records in one file are
simply concatenated in both.

(Free energy of a given structure is :func:`rnapipe.energy.eval_structure`, next to the energy model.)
"""

from __future__ import annotations

import re
from typing import Iterable, Iterator, Sequence

from .alphabet import CAN_PAIR, encode
from .errors import InputError

UNPAIRED = -1
OPENING = "([{<"
CLOSING = ")]}>"
_BRACKET_LEVEL = {c: k for k, c in enumerate(OPENING)} | {c: k for k, c in enumerate(CLOSING)}


class StructureError(InputError):
    """A structure that is malformed or does not fit its sequence (exit code 2, like any bad input)."""


# ---------------------------------------------------------------------------------------------------------
# Pair tables


def pair_table(structure: str, record: str | None = None, file: str | None = None) -> list[int]:
    """Pair table of a dot-bracket string; raises :class:`StructureError` at the first fault (1-based)."""
    pt = [UNPAIRED] * len(structure)
    stacks: list[list[int]] = [[] for _ in OPENING]
    for i, c in enumerate(structure):
        if c == ".":
            continue
        level = _BRACKET_LEVEL.get(c)
        if level is None:
            raise StructureError(f"invalid character {c!r} in dot-bracket (allowed: . ( ) [ ] {{ }} < >)",
                                 file=file, record=record, position=i + 1)
        if c == OPENING[level]:
            stacks[level].append(i)
        elif not stacks[level]:
            raise StructureError(f"unmatched '{c}'", file=file, record=record, position=i + 1)
        else:
            j = stacks[level].pop()
            pt[i], pt[j] = j, i
    unclosed = [i for stack in stacks for i in stack]
    if unclosed:
        i = min(unclosed)
        raise StructureError(f"unmatched '{structure[i]}'", file=file, record=record, position=i + 1)
    return pt


def pairs(pt: Sequence[int]) -> list[tuple[int, int]]:
    """The ``(i, j)`` pairs with ``i < j``, sorted by ``i``."""
    return [(i, j) for i, j in enumerate(pt) if j > i]


def from_pairs(pair_list: Iterable[tuple[int, int]], n: int) -> list[int]:
    """Pair table of length ``n`` from ``(i, j)`` pairs; raises :class:`StructureError` if a base pairs twice."""
    pt = [UNPAIRED] * n
    for i, j in pair_list:
        if not (0 <= i < n and 0 <= j < n) or i == j:
            raise StructureError(f"pair ({i + 1}, {j + 1}) is out of range 1..{n} or pairs a base with itself")
        for k in (i, j):
            if pt[k] != UNPAIRED:
                raise StructureError("base pairs twice", position=k + 1)
        pt[i], pt[j] = j, i
    return pt


def check_pair_table(pt: Sequence[int], record: str | None = None, file: str | None = None) -> None:
    """Raise :class:`StructureError` unless every entry is -1 or a partner that points back."""
    n = len(pt)
    for i, j in enumerate(pt):
        if j == UNPAIRED:
            continue
        if not 0 <= j < n or j == i:
            raise StructureError(f"partner {j + 1} is out of range 1..{n} or the base itself",
                                 file=file, record=record, position=i + 1)
        if pt[j] != i:
            back = "unpaired" if pt[j] == UNPAIRED else f"paired with {pt[j] + 1}"
            raise StructureError(f"pairs with {j + 1}, but {j + 1} is {back}", file=file, record=record,
                                 position=i + 1)


def first_crossing(pt: Sequence[int]) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """Two crossing pairs ``(i, j), (k, l)`` with ``i < k < j < l``, or None for a nested structure."""
    stack: list[int] = []
    for k, l in enumerate(pt):
        if l == UNPAIRED:
            continue
        if l > k:
            stack.append(k)
        else:
            i = stack.pop()
            if i != l:
                # pair (l, k) closes while (i, pt[i]) opened after l is still open: they cross
                return (l, k), (i, pt[i])
    return None


def is_nested(pt: Sequence[int]) -> bool:
    return first_crossing(pt) is None


def dot_bracket(pt: Sequence[int], pseudoknots: bool = False) -> str:
    """Dot-bracket string of a pair table.

    Nested pairs use ``()``. Crossing pairs raise :class:`StructureError` unless ``pseudoknots`` is set;
    then each pair, taken from left to right, gets the first bracket type in ``()[]{}<>`` in which it
    crosses nothing.
    """
    check_pair_table(pt)
    out = ["."] * len(pt)
    crossing = first_crossing(pt)
    if crossing is None:
        for i, j in pairs(pt):
            out[i], out[j] = "(", ")"
        return "".join(out)
    if not pseudoknots:
        (i, j), (k, l) = crossing
        raise StructureError(f"pairs ({i + 1}, {j + 1}) and ({k + 1}, {l + 1}) cross (a pseudoknot): "
                             "dot-bracket with () alone cannot write it")
    # Per bracket type, the pairs still open at the current position; they nest, so the top one closes first.
    open_pairs: list[list[int]] = [[] for _ in OPENING]
    for i, j in pairs(pt):
        for level, stack in enumerate(open_pairs):
            while stack and stack[-1] < i:
                stack.pop()
            if not stack or stack[-1] > j:
                stack.append(j)
                out[i], out[j] = OPENING[level], CLOSING[level]
                break
        else:
            raise StructureError(f"pair ({i + 1}, {j + 1}) needs more than {len(OPENING)} bracket types")
    return "".join(out)


def check_structure(sequence: str, structure: str, *, canonical: bool = False, min_loop: int | None = None,
                    nested: bool = True, record: str | None = None, file: str | None = None) -> list[int]:
    """Check a dot-bracket structure against its (normalised) sequence and return its pair table.

    Always: same length, balanced brackets. ``nested``: no pseudoknot. ``canonical``: every pair is AU, GC
    or GU (N and other IUPAC codes pair with nothing). ``min_loop``: a pair (i, j) has j - i > min_loop.
    """
    if len(structure) != len(sequence):
        raise StructureError(f"structure has {len(structure)} characters but the sequence has {len(sequence)}",
                             file=file, record=record)
    pt = pair_table(structure, record=record, file=file)
    if nested:
        crossing = first_crossing(pt)
        if crossing is not None:
            (i, j), (k, l) = crossing
            raise StructureError(f"pairs ({i + 1}, {j + 1}) and ({k + 1}, {l + 1}) cross (pseudoknot)",
                                 file=file, record=record)
    if canonical or min_loop is not None:
        codes = encode(sequence)
        for i, j in pairs(pt):
            if canonical and not CAN_PAIR[codes[i], codes[j]]:
                raise StructureError(f"{sequence[i]}-{sequence[j]} with position {j + 1} is not a canonical "
                                     "pair (AU, GC, GU)", file=file, record=record, position=i + 1)
            if min_loop is not None and j - i <= min_loop:
                raise StructureError(f"pair with position {j + 1} encloses fewer than {min_loop} bases",
                                     file=file, record=record, position=i + 1)
    return pt


# ---------------------------------------------------------------------------------------------------------
# CT


def to_ct(sequence: str, pt: Sequence[int], title: str = "") -> str:
    """One CT record: ``N title`` then ``index base previous next partner index`` per base (0 = none)."""
    n = len(sequence)
    if len(pt) != n:
        raise StructureError(f"pair table has {len(pt)} entries but the sequence has {n}")
    check_pair_table(pt)
    lines = [f"{n:5d}  {title}".rstrip()]
    for i, base in enumerate(sequence, start=1):
        partner = pt[i - 1] + 1  # -1 (unpaired) becomes 0, as CT writes it
        lines.append(f"{i:5d} {base} {i - 1:5d} {i + 1 if i < n else 0:5d} {partner:5d} {i:5d}")
    return "\n".join(lines) + "\n"


def _numbered_lines(source) -> Iterator[tuple[int, str]]:
    lines = source.splitlines() if isinstance(source, str) else source
    for number, line in enumerate(lines, start=1):
        yield number, line.rstrip("\r\n")


def parse_ct(source, name: str | None = None) -> Iterator[tuple[str, str, list[int]]]:
    """Yield ``(title, sequence, pair table)`` for each record of CT text (a string or lines)."""
    lines = _numbered_lines(source)
    for number, line in lines:
        if not line.strip():
            continue
        header = line.split(None, 1)
        if not header[0].isdigit():
            raise StructureError(f"line {number}: a CT record starts with the number of bases, found "
                                 f"{ascii(header[0][:20])}", file=name)
        n = int(header[0])
        title = header[1].strip() if len(header) > 1 else ""
        bases, pt = [], [UNPAIRED] * n
        record = title.split()[-1] if title else None
        for k in range(1, n + 1):
            try:
                number, line = next(lines)
            except StopIteration:
                raise StructureError(f"file ends after {k - 1} of {n} bases", file=name, record=record) from None
            fields = line.split()
            if len(fields) < 5 or not all(f.lstrip("-").isdigit() for f in fields[:1] + fields[2:5]):
                raise StructureError(f"line {number}: expected 'index base previous next partner index'",
                                     file=name, record=record)
            if int(fields[0]) != k or len(fields[1]) != 1:
                raise StructureError(f"line {number}: expected base {k}, found {ascii(' '.join(fields[:2]))}",
                                     file=name, record=record)
            bases.append(fields[1])
            partner = int(fields[4])
            if not 0 <= partner <= n:
                raise StructureError(f"line {number}: partner {partner} is out of range 0..{n}",
                                     file=name, record=record, position=k)
            pt[k - 1] = partner - 1
        check_pair_table(pt, record=record, file=name)
        yield title, "".join(bases), pt


# ---------------------------------------------------------------------------------------------------------
# BPSEQ


def to_bpseq(sequence: str, pt: Sequence[int], comments: Sequence[str] = ()) -> str:
    """One BPSEQ record: ``# comment`` lines, then ``index base partner`` per base (0 = unpaired)."""
    if len(pt) != len(sequence):
        raise StructureError(f"pair table has {len(pt)} entries but the sequence has {len(sequence)}")
    check_pair_table(pt)
    lines = [f"# {c}" for c in comments]
    lines.extend(f"{i} {base} {pt[i - 1] + 1}" for i, base in enumerate(sequence, start=1))
    return "\n".join(lines) + "\n"


_BPSEQ_LINE = re.compile(r"^\s*(\d+)\s+(\S)\s+(\d+)\s*$")


def parse_bpseq(source, name: str | None = None) -> Iterator[tuple[list[str], str, list[int]]]:
    """Yield ``(comments, sequence, pair table)`` for each record of BPSEQ text (a string or lines).

    Lines that do not start with a number (``# ...``, ``Filename: ...``) are comments; a comment after
    base lines, or base 1 appearing again, starts the next record.
    """
    comments: list[str] = []
    bases: list[str] = []
    partners: list[int] = []
    first_line = 0

    def finish():
        pt = [p - 1 for p in partners]
        for k, p in enumerate(partners, start=1):
            if p > len(partners):
                raise StructureError(f"partner {p} is out of range 0..{len(partners)} (record from line "
                                     f"{first_line})", file=name, position=k)
        check_pair_table(pt, file=name, record=comments[0] if comments else None)
        return comments, "".join(bases), pt

    for number, line in _numbered_lines(source):
        if not line.strip():
            continue
        match = _BPSEQ_LINE.match(line)
        if match is None:
            if line.lstrip()[:1].isdigit():
                raise StructureError(f"line {number}: expected 'index base partner'", file=name)
            if bases:
                yield finish()
                comments, bases, partners = [], [], []
            comments.append(line.lstrip("#").strip())
            continue
        index, base, partner = int(match.group(1)), match.group(2), int(match.group(3))
        if index == 1 and bases:
            yield finish()
            comments, bases, partners = [], [], []
        if not bases:
            first_line = number
        if index != len(bases) + 1:
            raise StructureError(f"line {number}: expected base {len(bases) + 1}, found {index}", file=name)
        bases.append(base)
        partners.append(partner)
    if bases:
        yield finish()
    elif comments:
        raise StructureError("comment lines but no bases", file=name)


def read_ct(path) -> Iterator[tuple[str, str, list[int]]]:
    """Records of a CT file (plain or gzipped)."""
    from .io.fasta import open_text  # io's writers import this module

    with open_text(path) as text:
        yield from parse_ct(text, name=str(path))


def read_bpseq(path) -> Iterator[tuple[list[str], str, list[int]]]:
    """Records of a BPSEQ file (plain or gzipped)."""
    from .io.fasta import open_text

    with open_text(path) as text:
        yield from parse_bpseq(text, name=str(path))
