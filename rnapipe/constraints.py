"""Per-record folding data beside the sequence: RNAfold's hard-constraint line (``-C``).

A constraint line has one symbol per nucleotide, as RNAfold reads it after the sequence of a record
(``RNAfold -C``; ViennaRNA's ``vrna_hc_add_from_db`` with ``VRNA_CONSTRAINT_DB_DEFAULT``):

* ``.`` no constraint;
* ``x`` the nucleotide stays unpaired;
* ``<`` / ``>`` it pairs, if at all, with a nucleotide downstream / upstream;
* ``(`` ``)`` the two pair, if at all (``--enforceConstraint``: they must), a non-canonical pair too; neither
  pairs with anything else and no pair crosses theirs. A pair closing fewer than 3 nucleotides cannot form
  and is dropped, as RNAfold drops it (with a warning there);
* ``|`` with ``--enforceConstraint`` the nucleotide pairs (with anything); without, no constraint (RNAfold's
  rule too).

What is checked here, before anything folds (RNAfold warns and folds on, or stops; rnapipe refuses the record
with the position): only these symbols, as many as the sequence has nucleotides (whitespace is not counted),
brackets that balance. How the engine applies a line: rnapipe.cpu.zuker._hard_constraints.
"""

from __future__ import annotations

SYMBOLS = ".x|<>()"
_SYMBOLS = frozenset(SYMBOLS)
# RNAfold's reader takes a line that starts with one of these (or with x's followed by no letter) for the
# constraint line after a sequence; '>' cannot start one: it starts a FASTA header.
_STARTS = frozenset(".|()<")


def is_constraint_line(line: str) -> bool:
    """Whether ``line`` (a line of a FASTA record after its header) starts the record's constraint line rather
    than continuing its sequence (RNAfold's reading: a line starting with ``. | ( ) <``, or with x's followed by
    anything but a letter)."""
    text = line.strip()
    if not text:
        return False
    if text[0] in _STARTS:
        return True
    if text[0] == "x":
        rest = text.lstrip("x")
        return not rest or not rest[0].isalpha()
    return False


def problem(constraint: str, length: int) -> tuple[int, str] | None:
    """``(1-based position, what is wrong)`` for the first fault of a whitespace-free constraint line for a
    sequence of ``length`` nucleotides, or None."""
    for at, char in enumerate(constraint, start=1):
        if char not in _SYMBOLS:
            shown = f"'{char}'" if " " < char < "\x7f" else ascii(char)
            return at, f"invalid constraint character {shown} (the symbols are {' '.join(SYMBOLS)})"
    if len(constraint) != length:
        if not constraint:
            return 1, f"no constraint line (-C: every record needs one, {length} symbols; '.' leaves a nucleotide free)"
        side = "shorter" if len(constraint) < length else "longer"
        return (min(len(constraint), length) + 1,
                f"constraint line {side} than the sequence ({len(constraint)} symbols for {length} nt)")
    opened = []
    for at, char in enumerate(constraint, start=1):
        if char == "(":
            opened.append(at)
        elif char == ")":
            if not opened:
                return at, "unbalanced brackets in the constraint line: ')' closes no '('"
            opened.pop()
    if opened:
        return opened[-1], "unbalanced brackets in the constraint line: '(' is never closed"
    return None


def check(constraint: str, length: int, record: str | None = None, file: str | None = None) -> str:
    """``constraint`` without whitespace, or :class:`~rnapipe.errors.InputError` naming file, record and
    position (see :func:`problem`)."""
    from .errors import InputError

    constraint = "".join(constraint.split())
    fault = problem(constraint, length)
    if fault is not None:
        raise InputError(fault[1], file=file, record=record, position=fault[0])
    return constraint
