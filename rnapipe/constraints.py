"""Per-record folding data beside the sequence: RNAfold's hard-constraint line (``-C``) and SHAPE
reactivities (``--shape``, Deigan's method).

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

import math
import os
import re
from dataclasses import dataclass, field

import numpy as np

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
            return 1, f"no constraint line (every record needs one, {length} symbols; '.' leaves a nucleotide free)"
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


# ---------------------------------------------------------------------------------------------------------
# SHAPE (Deigan et al. 2009, RNAfold --shape FILE --shapeMethod D[mX][bY])

DEIGAN_SLOPE = 1.8          # RNAfold's defaults for --shapeMethod D (kcal/mol)
DEIGAN_INTERCEPT = -0.6
_METHOD = re.compile(r"D(?:m(?P<m>[-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?))?"
                     r"(?:b(?P<b>[-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?))?")


def shape_method(text: str) -> tuple[float, float]:
    """(slope m, intercept b) of RNAfold's ``--shapeMethod`` string ``D``, ``Dm1.9``, ``Db-0.7``, ``Dm1.9b-0.7``;
    :class:`~rnapipe.errors.UsageError` for anything else (Zarringhalam's ``Z`` and Washietl's ``W`` are not
    supported)."""
    from .errors import UsageError

    match = _METHOD.fullmatch(text.strip())
    if match is None:
        raise UsageError(f"SHAPE method {text!r}: only Deigan's method is supported, as 'D', 'Dm1.8', 'Db-0.6' "
                         "or 'Dm1.8b-0.6'")
    m = float(match["m"]) if match["m"] is not None else DEIGAN_SLOPE
    b = float(match["b"]) if match["b"] is not None else DEIGAN_INTERCEPT
    return m, b


def deigan(reactivities, m: float = DEIGAN_SLOPE, b: float = DEIGAN_INTERCEPT) -> np.ndarray:
    """The stacking pseudo-energy of each nucleotide (int32, dcal/mol) from its SHAPE reactivity (a negative or
    NaN one is missing), as ViennaRNA's ``vrna_sc_add_SHAPE_deigan`` computes it from RNAfold's values
    (``values[0] = 0``, then one a nucleotide): a reactivity r of 0 up to the largest one, M, is projected onto
    [0, M] (``r / M * M``), then ``m·ln(r + 1) + b`` kcal/mol, missing ones 0; ×100 in double precision and
    rounded half away from zero, as ViennaRNA 2.8 rounds it (2.7's ``vrna_sc_add_stack`` rounded the product as
    a ``float``: the two differ on terms within about 10⁻⁵ dcal/mol of a half). The engine adds the terms of
    the four nucleotides of each stacked pair of pairs (ViennaRNA's soft-constraint stack term)."""
    r = np.asarray(reactivities, dtype=np.float64)
    r = np.where(np.isnan(r), -1.0, r)
    top = max(0.0, float(r.max())) if r.size else 0.0
    out = np.zeros(r.shape[0], dtype=np.int32)
    for k, v in enumerate(r.tolist()):
        if v < 0:
            continue
        if v < top:
            v = v / top * top
        else:
            v = top
        e = (m * math.log(v + 1.0) + b) * 100.0
        out[k] = int(math.copysign(math.floor(abs(e) + 0.5), e))
    return out


@dataclass
class ShapeData:
    """SHAPE reactivities read from ``path``: RNAfold's file of one sequence (``table`` False: ``single`` holds
    position → reactivity), a table of ``id position reactivity`` rows for many (``rows``: id → position →
    reactivity), or a directory of RNAfold's files, one a record, named ``ID.shape`` (``directory``: read as
    the records come). ``slope``, ``intercept``: Deigan's m and b."""

    path: str
    table: bool
    slope: float = DEIGAN_SLOPE
    intercept: float = DEIGAN_INTERCEPT
    single: dict = field(default_factory=dict)
    rows: dict = field(default_factory=dict)
    directory: bool = False
    used: set = field(default_factory=set)       # the table's ids that a record has asked for

    def unused(self) -> list[str]:
        """The ids of a table that no record read so far has asked for, in the table's order."""
        return [key for key in self.rows if key not in self.used] if self.table else []

    def for_record(self, record: str, ordinal: int, length: int, file: str | None = None) -> np.ndarray | None:
        """The pseudo-energies of the record ``record`` (the ``ordinal``-th of the input, from 0) of ``length``
        nt, or None where the data has none for it; :class:`~rnapipe.errors.InputError` (naming the SHAPE file,
        the record and the position) for a position past its end; :class:`~rnapipe.errors.UsageError` for
        RNAfold's file of one sequence given to a second record."""
        from .errors import InputError

        source = self.path
        if self.directory:
            source = os.path.join(self.path, record + ".shape")
            if os.sep in record or not os.path.isfile(source):
                return None
            one = _read_file(source, self.slope, self.intercept)
            if one.table:
                raise InputError(f"{source} is a table: a file of the directory {self.path} holds one record's "
                                 "'position [nucleotide] reactivity' lines", file=file, record=record)
            values = one.single
        elif self.table:
            values = self.rows.get(record)
            if values is not None:
                self.used.add(record)
        else:
            if ordinal > 0:
                from .errors import UsageError

                raise UsageError(f"the SHAPE file {self.path} is RNAfold's file of one sequence's reactivities, "
                                 f"and the input has more than one record ('{record}' is another): give a table "
                                 "of 'id position reactivity' rows")
            values = self.single
        if not values:
            return None
        beyond = [p for p in values if p > length]
        if beyond:
            raise InputError(f"SHAPE data in {source} for position {min(beyond)}, past the end of the "
                             f"sequence ({length} nt)", file=file, record=record, position=min(beyond))
        r = np.full(length, -1.0)
        for p, v in values.items():
            r[p - 1] = v
        return deigan(np.concatenate([[0.0], r]), self.slope, self.intercept)[1:]


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def read_shape(path: str, slope: float = DEIGAN_SLOPE, intercept: float = DEIGAN_INTERCEPT) -> ShapeData:
    """Read a SHAPE file, or take a directory of them (see :class:`ShapeData`): lines ``position [nucleotide]
    reactivity`` (RNAfold's format; a line without a reactivity, or with a negative one, marks the position
    missing, as in RNAfold) or ``id position reactivity`` (a table: three fields, the second a whole number).
    Blank lines and lines starting with ``#`` are skipped. Anything else is :class:`~rnapipe.errors.InputError`
    naming the file and the line."""
    if os.path.isdir(path):
        return ShapeData(path, table=False, slope=slope, intercept=intercept, directory=True)
    return _read_file(path, slope, intercept)


def _read_file(path: str, slope: float, intercept: float) -> ShapeData:
    from .errors import InputError

    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as handle:
            lines = handle.read().splitlines()
    except FileNotFoundError:
        raise InputError("no such SHAPE file", file=path) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a SHAPE file", file=path) from None
    except OSError as err:
        raise InputError(f"cannot read the SHAPE file: {err.strerror or err}", file=path) from None
    data = ShapeData(path, table=False, slope=slope, intercept=intercept)
    kind = None
    for number, line in enumerate(lines, start=1):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        table = len(fields) == 3 and fields[1].lstrip("+").isdigit()
        if kind is None:
            kind = table
            data.table = table
        if table != kind or len(fields) > 3:
            what = "'id position reactivity'" if kind else "'position [nucleotide] reactivity'"
            raise InputError(f"line {number}: expected {what} as the file's first line has", file=path)
        key, pos_text, value_text = (fields[0], fields[1], fields[2]) if table else (None, fields[0], fields[-1])
        if not pos_text.lstrip("+").isdigit() or int(pos_text) < 1:
            raise InputError(f"line {number}: position {pos_text!r} is not a whole number of at least 1", file=path)
        position = int(pos_text)
        if not table and len(fields) == 2 and _number(fields[1]) is None:
            value = -1.0                                # position and nucleotide: no reactivity (missing)
        else:
            value = _number(value_text)
            if value is None:
                raise InputError(f"line {number}: reactivity {value_text!r} is not a number", file=path)
        target = data.rows.setdefault(key, {}) if table else data.single
        if position in target:
            raise InputError(f"line {number}: position {position} given twice" + (f" for '{key}'" if table else ""),
                             file=path)
        target[position] = value
    if kind is None:
        raise InputError("empty SHAPE file: no reactivities", file=path)
    return data


def shape_identity(path: str) -> list:
    """The SHAPE file's (or directory's) absolute path and content digest, for the resume journal: a directory's
    digest covers the names and contents of its ``.shape`` files."""
    import hashlib

    if os.path.isdir(path):
        digest = hashlib.sha256()
        for name in sorted(n for n in os.listdir(path) if n.endswith(".shape")):
            with open(os.path.join(path, name), "rb") as handle:
                digest.update(name.encode("utf-8", "surrogateescape") + b"\0"
                              + hashlib.sha256(handle.read()).digest())
        return [os.path.abspath(path), digest.hexdigest()]
    with open(path, "rb") as handle:
        return [os.path.abspath(path), hashlib.sha256(handle.read()).hexdigest()]
