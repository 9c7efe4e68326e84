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
    have = np.flatnonzero(r >= 0)
    if have.size == 0:
        return out
    v = r[have]
    if top > 0:
        v = np.where(v < top, v / top * top, top)
    else:
        v = np.zeros_like(v)
    e = (m * np.log(v + 1.0) + b) * 100.0
    # NumPy's log may differ from the C library's (ViennaRNA's, and math.log) in the last bit: where that could
    # move the rounding, |e| within 1e-6 of a half, the term is made again with math.log
    frac = np.abs(e) - np.floor(np.abs(e))
    for k in np.flatnonzero(np.abs(frac - 0.5) < 1e-6).tolist():
        e[k] = (m * math.log(float(v[k]) + 1.0) + b) * 100.0
    out[have] = np.copysign(np.floor(np.abs(e) + 0.5), e).astype(np.int32)
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
    single: tuple | None = None                  # (positions int64, reactivities float64), or None
    rows: dict = field(default_factory=dict)     # id -> (positions, reactivities), in the table's order
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
        if values is None or len(values[0]) == 0:
            return None
        positions, reactivities = values
        if int(positions.max()) > length:
            beyond = int(positions[positions > length].min())
            raise InputError(f"SHAPE data in {source} for position {beyond}, past the end of the "
                             f"sequence ({length} nt)", file=file, record=record, position=beyond)
        r = np.full(length + 1, -1.0)
        r[0] = 0.0                                       # RNAfold's values[0]
        r[positions] = reactivities
        return deigan(r, self.slope, self.intercept)[1:]


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
        with open(path, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        raise InputError("no such SHAPE file", file=path) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a SHAPE file", file=path) from None
    except OSError as err:
        raise InputError(f"cannot read the SHAPE file: {err.strerror or err}", file=path) from None
    data = ShapeData(path, table=False, slope=slope, intercept=intercept)
    rows = _table_fast(raw)
    if rows is not None:
        data.table, data.rows = True, rows
        return data
    kind = None
    single: dict = {}
    tables: dict = {}
    for number, line in enumerate(raw.decode("utf-8", errors="surrogateescape").splitlines(), start=1):
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
        target = tables.setdefault(key, {}) if table else single
        if position in target:
            raise InputError(f"line {number}: position {position} given twice" + (f" for '{key}'" if table else ""),
                             file=path)
        target[position] = value
    if kind is None:
        raise InputError("empty SHAPE file: no reactivities", file=path)
    if data.table:
        data.rows = {key: _arrays(values) for key, values in tables.items()}
    else:
        data.single = _arrays(single)
    return data


def _arrays(values: dict) -> tuple[np.ndarray, np.ndarray]:
    return (np.fromiter(values.keys(), dtype=np.int64, count=len(values)),
            np.fromiter(values.values(), dtype=np.float64, count=len(values)))


TABLE_BLOCK = 8 << 20          # bytes of a table read at a time by _table_fast (its temporaries stay small)


def _table_fast(raw: bytes) -> dict | None:
    """A table of ``id position reactivity`` rows read a block at a time, NumPy doing the per-row work (a
    transcriptome's table has millions of rows): id → (positions, reactivities), in the table's order. None
    where this reading cannot vouch for the file exactly as the line-by-line reader of :func:`_read_file` would
    take it (not ASCII, comments, blank lines or line breaks other than LF and CRLF, a line without exactly
    three fields, a position other than plain digits or 0, a reactivity that is not a finite number, a position
    given twice): that reader then reads it and names what is wrong, where anything is."""
    if not raw or not raw.isascii() or any(c in raw for c in (b"#", b"\x00", b"\x0b", b"\x0c", b"\x1c", b"\x1d", b"\x1e")):
        return None
    runs: list[tuple[bytes, int]] = []                   # (id, its first row) of each run of rows of one id
    positions: list[np.ndarray] = []
    values: list[np.ndarray] = []
    start, size = 0, len(raw)
    while start < size:
        cut = raw.find(b"\n", min(start + TABLE_BLOCK, size) - 1)
        end = size if cut < 0 else cut + 1
        block = raw[start:end]
        start = end
        byte = np.frombuffer(block, dtype=np.uint8)
        newline = byte == 10
        gap = newline | (byte == 32) | (byte == 9) | (byte == 13)
        first = ~gap                                     # the first byte of each field
        first[1:] &= gap[:-1]
        lines = int(np.count_nonzero(newline)) + (0 if block.endswith(b"\n") else 1)
        line_of = np.cumsum(newline) - newline           # each byte's line within the block
        if not (np.bincount(line_of[first], minlength=lines) == 3).all():
            return None                                  # a blank line or one without three fields
        fields = block.split()
        pos = np.array(fields[1::3])
        if not np.char.isdigit(pos).all():
            return None
        pos = pos.astype(np.int64)
        try:
            val = np.array(fields[2::3]).astype(np.float64)
        except ValueError:
            return None
        if (pos < 1).any() or not np.isfinite(val).all():
            return None
        key = np.array(fields[0::3])                     # the block's runs of one id: only where each starts
        new_run = np.ones(key.size, dtype=bool)
        new_run[1:] = key[1:] != key[:-1]
        begin = np.flatnonzero(new_run)
        offset = sum(len(a) for a in positions)
        for name, at in zip(key[begin].tolist(), (begin + offset).tolist()):
            if not runs or runs[-1][0] != name:          # (an id's run may go on from the block before)
                runs.append((name, at))
        positions.append(pos)
        values.append(val)
    pos, val = np.concatenate(positions), np.concatenate(values)
    names = [name.decode("ascii") for name, _ in runs]
    starts = np.array([at for _, at in runs], dtype=np.int64)
    bounds = np.append(starts, pos.size)
    if len(set(names)) != len(names):                    # an id's rows in more than one run: gathered per id
        order = {}
        for name, a, b in zip(names, bounds[:-1].tolist(), bounds[1:].tolist()):
            order.setdefault(name, []).append((a, b))
        rows = {}
        for name, parts in order.items():
            p = np.concatenate([pos[a:b] for a, b in parts])
            v = np.concatenate([val[a:b] for a, b in parts])
            if np.unique(p).size != p.size:
                return None
            rows[name] = (p, v)
        return rows
    rising = np.diff(pos) > 0                            # within a run, positions given in order: none twice
    rising[starts[1:] - 1] = True
    rows = {}
    for name, a, b in zip(names, bounds[:-1].tolist(), bounds[1:].tolist()):
        if not rising[a:b - 1].all() and np.unique(pos[a:b]).size != b - a:
            return None
        rows[name] = (pos[a:b], val[a:b])
    return rows


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
