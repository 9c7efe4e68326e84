"""Strict reader of ViennaRNA's energy parameter file format v2.0 (``## RNAfold parameter file v2.0``).

The file holds free energies at 37 °C and enthalpies, both in dcal/mol, section by section (``# stack``,
``# stack_enthalpies``, ``# mismatch_hairpin``, ...). Each array section fills the same slice of the same
ViennaRNA array that ViennaRNA's own reader (``params/io.c``) fills, so indices mean what they mean there:

* pair types: 0 none, 1 CG, 2 GC, 3 GU, 4 UG, 5 AU, 6 UA, 7 non-standard (``NBPAIRS`` = 7);
* nucleotides: 0 N (any non-ACGU), 1 A, 2 C, 3 G, 4 U.

Unlike ViennaRNA's ``sscanf("%d")`` this reader rejects any token that is not a whole integer or one of the
keywords ``DEF`` (-50), ``INF`` (10000000), ``NST`` (0), ``*`` (keep the base set's value) and, in the
one-dimensional loop tables only, ``x`` (extrapolate with ``lxc37 * log(i / last)`` as ViennaRNA does). A
published copy of ``rna_turner2004.par`` carries ``-1i40`` in its stack table, which ``%d`` silently reads as
-1; here it is an error naming the file and line.

Sections missing from a file keep the base set's values (Turner 2004), as RNAfold keeps its compiled-in
defaults for sections a ``--paramFile`` lacks.
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import InputError

log = logging.getLogger(__name__)

NBPAIRS = 7
INF = 10_000_000          # ViennaRNA's INF: "no such loop"
DEF = -50                 # ViennaRNA's DEF keyword
NST = 0
LXC37 = 107.856           # ViennaRNA's lxc37; its reader takes the Misc line's first four values only
HEADER = "## RNAfold parameter file v2.0"

_INT = re.compile(r"[+-]?\d+\Z")

# name in the file -> (array key, full ViennaRNA shape, leading shift per axis, trailing cut per axis)
_P = NBPAIRS + 1
_ARRAYS: dict[str, tuple[str, tuple[int, ...], tuple[int, ...], tuple[int, ...]]] = {
    "stack": ("stack", (_P, _P), (1, 1), (0, 0)),
    "hairpin": ("hairpin", (31,), (0,), (0,)),
    "bulge": ("bulge", (31,), (0,), (0,)),
    "internal": ("interior", (31,), (0,), (0,)),
    "mismatch_exterior": ("mismatch_exterior", (_P, 5, 5), (1, 0, 0), (0, 0, 0)),
    "mismatch_hairpin": ("mismatch_hairpin", (_P, 5, 5), (1, 0, 0), (0, 0, 0)),
    "mismatch_internal": ("mismatch_interior", (_P, 5, 5), (1, 0, 0), (0, 0, 0)),
    "mismatch_internal_1n": ("mismatch_interior_1n", (_P, 5, 5), (1, 0, 0), (0, 0, 0)),
    "mismatch_internal_23": ("mismatch_interior_23", (_P, 5, 5), (1, 0, 0), (0, 0, 0)),
    "mismatch_multi": ("mismatch_multi", (_P, 5, 5), (1, 0, 0), (0, 0, 0)),
    "dangle5": ("dangle5", (_P, 5), (1, 0), (0, 0)),
    "dangle3": ("dangle3", (_P, 5), (1, 0), (0, 0)),
    "int11": ("int11", (_P, _P, 5, 5), (1, 1, 0, 0), (0, 0, 0, 0)),
    "int21": ("int21", (_P, _P, 5, 5, 5), (1, 1, 0, 0, 0), (0, 0, 0, 0, 0)),
    "int22": ("int22", (_P, _P, 5, 5, 5, 5), (1, 1, 1, 1, 1, 1), (1, 1, 0, 0, 0, 0)),
}
# ViennaRNA still accepts these older names (with a warning).
_ALIASES = {"interior": "internal", "mismatch_interior": "mismatch_internal",
            "mismatch_interior_1n": "mismatch_internal_1n", "mismatch_interior_23": "mismatch_internal_23"}
_SCALARS = {"ML_params": ("ml_base", "ml_closing", "ml_intern"),   # pairs (dG37, dH)
            "NINIO": ("ninio",),                                   # dG37, dH, then MAX_NINIO
            "Misc": ("duplex_init", "terminal_au")}                # pairs (dG37, dH); lxc ignored
_LOOPS = {"Tetraloops": 6, "Triloops": 5, "Hexaloops": 8}          # hairpin size + 2 closing bases


@dataclass
class ParameterSet:
    """Raw parameters as read: ``dg[key]`` at 37 °C and ``dh[key]`` enthalpies, dcal/mol, int32 arrays
    in ViennaRNA's shapes; scalars as ``(dG37, dH)`` pairs; special hairpins as ``{sequence: (dG37, dH)}``
    in file order (the first match wins, as with ViennaRNA's ``strstr``)."""

    dg: dict[str, np.ndarray] = field(default_factory=dict)
    dh: dict[str, np.ndarray] = field(default_factory=dict)
    scalars: dict[str, tuple[int, int]] = field(default_factory=dict)
    max_ninio: int = 300
    lxc37: float = LXC37
    loops: dict[str, dict[str, tuple[int, int]]] = field(default_factory=dict)
    source: str = ""

    def copy(self) -> "ParameterSet":
        return ParameterSet({k: v.copy() for k, v in self.dg.items()}, {k: v.copy() for k, v in self.dh.items()},
                            dict(self.scalars), self.max_ninio, self.lxc37,
                            {k: dict(v) for k, v in self.loops.items()}, self.source)


def _empty() -> ParameterSet:
    ps = ParameterSet()
    for _, (key, shape, _s, _p) in _ARRAYS.items():
        ps.dg[key] = np.zeros(shape, dtype=np.int32)
        ps.dh[key] = np.zeros(shape, dtype=np.int32)
    for tables in (ps.dg, ps.dh):
        # pair type 0 (no pair) never stacks: INF, as in ViennaRNA's compiled-in tables
        tables["stack"][0, :] = INF
        tables["stack"][:, 0] = INF
    for names in _SCALARS.values():
        for name in names:
            ps.scalars[name] = (0, 0)
    for name in _LOOPS:
        ps.loops[name] = {}
    return ps


class _Reader:
    """Lines of one file with comments removed the way ViennaRNA removes them (one ``/* */`` per line)."""

    def __init__(self, text: str, file: str):
        self.file = file
        self.lines = text.splitlines()

    def error(self, line_no: int, message: str) -> InputError:
        return InputError(f"line {line_no}: {message}", file=self.file)

    def strip(self, k: int) -> str:
        line = self.lines[k]
        start = line.find("/*")
        if start >= 0:
            end = line.find("*/", start + 2)
            if end < 0:
                raise self.error(k + 1, "unclosed comment")
            line = line[:start] + line[end + 2:]
            if "/*" in line:
                raise self.error(k + 1, "more than one comment on a line")
        return line


def _is_header(line: str) -> bool:
    return line.lstrip().startswith("#")


def _section_tokens(reader: _Reader, first: int) -> tuple[list[tuple[str, int]], int]:
    """Tokens with their 1-based line numbers from line ``first`` up to the next header line."""
    tokens = []
    k = first
    while k < len(reader.lines) and not _is_header(reader.lines[k]):
        tokens.extend((tok, k + 1) for tok in reader.strip(k).split())
        k += 1
    return tokens, k


def _slice_indices(shape, shift, cut):
    return tuple(slice(s, d - c) for d, s, c in zip(shape, shift, cut))


def _read_array(reader: _Reader, name: str, tokens, target: np.ndarray, base: np.ndarray | None,
                shape, shift, cut, header_line: int, lxc37: float) -> None:
    region = _slice_indices(shape, shift, cut)
    view_shape = target[region].shape
    count = int(np.prod(view_shape))
    if len(tokens) != count:
        where = tokens[count][1] if len(tokens) > count else header_line
        raise reader.error(where, f"section '{name}' needs {count} values, found {len(tokens)}")
    flat = np.empty(count, dtype=np.int64)
    base_flat = base[region].reshape(-1) if base is not None else None
    one_dim = len(shape) == 1
    last = -1
    for k, (tok, line_no) in enumerate(tokens):
        if _INT.match(tok):
            flat[k] = int(tok)
            last = k
        elif tok == "DEF":
            flat[k] = DEF
        elif tok == "INF":
            flat[k] = INF
        elif tok == "NST":
            flat[k] = NST
        elif tok == "*":
            if base_flat is None:
                raise reader.error(line_no, f"'*' (keep default) in section '{name}' but no default set to keep")
            flat[k] = base_flat[k]
        elif tok == "x" and one_dim:
            if last <= 0:
                raise reader.error(line_no, f"cannot extrapolate the first value of section '{name}'")
            # ViennaRNA: arr[last] + (int)(0.5 + lxc37 * log(i / last)) with absolute indices
            flat[k] = flat[last] + int(0.5 + lxc37 * math.log(k / last))
        else:
            raise reader.error(line_no, f"cannot read '{tok}' in section '{name}' (expected an integer, "
                                        "DEF, INF or NST)")
        if not -2**31 <= flat[k] < 2**31:
            raise reader.error(line_no, f"value '{tok}' in section '{name}' does not fit in 32 bits")
    target[region] = flat.reshape(view_shape)


def _update_nst(a: np.ndarray) -> None:
    """int22 entries with a non-standard nucleotide (index 0) or pair (type 7) get the maximum over the
    standard ones, exactly as ViennaRNA's ``update_nst`` (params/io.c) fills them after reading."""
    big = -INF
    P = NBPAIRS
    for i in range(1, P):
        for j in range(1, P):
            for k in range(1, 5):
                for l in range(1, 5):
                    for m in range(1, 5):
                        mx = mx2 = mx3 = mx4 = big
                        for n in range(1, 5):
                            mx = max(mx, a[i, j, k, l, m, n])
                            mx2 = max(mx2, a[i, j, k, l, n, m])
                            mx3 = max(mx3, a[i, j, k, n, l, m])
                            mx4 = max(mx4, a[i, j, n, k, l, m])
                        a[i, j, k, l, m, 0] = mx
                        a[i, j, k, l, 0, m] = mx2
                        a[i, j, k, 0, l, m] = mx3
                        a[i, j, 0, k, l, m] = mx4
    for i in range(1, P):
        for j in range(1, P):
            for k in range(1, 5):
                for l in range(1, 5):
                    mx = mx2 = mx3 = mx4 = mx5 = mx6 = big
                    for m in range(1, 5):
                        mx = max(mx, a[i, j, k, l, m, 0])
                        mx2 = max(mx2, a[i, j, k, m, 0, l])
                        mx3 = max(mx3, a[i, j, m, 0, k, l])
                        mx4 = max(mx4, a[i, j, 0, k, l, m])
                        mx5 = max(mx5, a[i, j, 0, k, m, l])
                        mx6 = max(mx6, a[i, j, k, 0, l, m])
                    a[i, j, k, l, 0, 0] = mx
                    a[i, j, k, 0, 0, l] = mx2
                    a[i, j, 0, 0, k, l] = mx3
                    a[i, j, k, 0, l, 0] = mx6
                    a[i, j, 0, k, 0, l] = mx5
                    a[i, j, 0, k, l, 0] = mx4
    for i in range(1, P):
        for j in range(1, P):
            for k in range(1, 5):
                mx = mx2 = mx3 = mx4 = big
                for l in range(1, 5):
                    mx = max(mx, a[i, j, k, l, 0, 0])
                    mx2 = max(mx2, a[i, j, 0, k, l, 0])
                    mx3 = max(mx3, a[i, j, 0, 0, k, l])
                    mx4 = max(mx4, a[i, j, 0, 0, l, k])
                a[i, j, k, 0, 0, 0] = mx
                a[i, j, 0, k, 0, 0] = mx2
                a[i, j, 0, 0, k, 0] = mx3
                a[i, j, 0, 0, 0, k] = mx4
    for i in range(1, P):
        for j in range(1, P):
            a[i, j, 0, 0, 0, 0] = max(a[i, j, k, 0, 0, 0] for k in range(1, 5))
    # one non-standard pair, then two: maxima over the standard partner type
    a[1:P, P] = a[1:P, 1:P].max(axis=1)
    a[P, 1:P] = a[1:P, 1:P].max(axis=0)
    a[P, P] = a[P, 1:P].max(axis=0)


def parse(text: str, file: str = "<string>", base: ParameterSet | None = None) -> ParameterSet:
    """Read parameter-file text over ``base`` (a copy is filled; ``None`` starts from zeros)."""
    reader = _Reader(text, file)
    ps = base.copy() if base is not None else _empty()
    ps.source = file
    if not reader.lines or not reader.lines[0].startswith(HEADER):
        raise reader.error(1, f"not a ViennaRNA parameter file (first line must be '{HEADER}')")
    k = 1
    seen: set[str] = set()
    while k < len(reader.lines):
        line = reader.lines[k]
        if not _is_header(line):
            if reader.strip(k).strip():
                raise reader.error(k + 1, f"values outside any section: '{line.strip()}'")
            k += 1
            continue
        header_line = k + 1
        words = line.strip().lstrip("#").split()
        name = words[0] if words else ""
        if name == "END":
            break
        tokens, k = _section_tokens(reader, k + 1)
        enthalpy = name.endswith("_enthalpies")
        stem = name[: -len("_enthalpies")] if enthalpy else name
        stem = _ALIASES.get(stem, stem)
        if (stem, enthalpy) in seen:
            raise reader.error(header_line, f"section '{name}' appears twice")
        seen.add((stem, enthalpy))
        if stem in _ARRAYS:
            key, shape, shift, cut = _ARRAYS[stem]
            target = (ps.dh if enthalpy else ps.dg)[key]
            base_arr = None if base is None else (base.dh if enthalpy else base.dg)[key]
            _read_array(reader, name, tokens, target, base_arr, shape, shift, cut, header_line, ps.lxc37)
            if stem == "int22":
                _update_nst(target)
        elif stem in _SCALARS and not enthalpy:
            _read_scalars(reader, ps, stem, tokens, header_line)
        elif stem in _LOOPS and not enthalpy:
            ps.loops[stem] = _read_loops(reader, stem, tokens, header_line)
        else:
            log.warning("%s: line %d: unknown section '%s' ignored", file, header_line, name)
    _check_symmetry(ps, file)
    return ps


def _int_token(reader: _Reader, name: str, tok: str, line_no: int) -> int:
    if tok == "DEF":
        return DEF
    if tok == "INF":
        return INF
    if tok == "NST":
        return NST
    if not _INT.match(tok):
        raise reader.error(line_no, f"cannot read '{tok}' in section '{name}' (expected an integer)")
    return int(tok)


def _read_scalars(reader: _Reader, ps: ParameterSet, name: str, tokens, header_line: int) -> None:
    need = {"ML_params": 6, "NINIO": 3, "Misc": 4}[name]
    if len(tokens) < need:
        raise reader.error(header_line, f"section '{name}' needs {need} values, found {len(tokens)}")
    values = [_int_token(reader, name, tok, line_no) for tok, line_no in tokens[:need]]
    extra = tokens[need:]
    if name == "Misc":
        # ViennaRNA reads DuplexInit and TerminalAU pairs and ignores the lxc pair that params_save writes.
        if len(extra) not in (0, 2):
            raise reader.error(extra[0][1], f"section 'Misc' has {len(tokens)} values, expected 4 or 6")
        for tok, line_no in extra:
            try:
                float(tok)
            except ValueError:
                raise reader.error(line_no, f"cannot read '{tok}' in section 'Misc'") from None
    elif extra:
        raise reader.error(extra[0][1], f"section '{name}' needs {need} values, found {len(tokens)}")
    if name == "NINIO":
        ps.scalars["ninio"] = (values[0], values[1])
        ps.max_ninio = values[2]
    else:
        for idx, key in enumerate(_SCALARS[name]):
            ps.scalars[key] = (values[2 * idx], values[2 * idx + 1])


def _read_loops(reader: _Reader, name: str, tokens, header_line: int) -> dict[str, tuple[int, int]]:
    size = _LOOPS[name]
    out: dict[str, tuple[int, int]] = {}
    lines: dict[int, list[str]] = {}
    for tok, line_no in tokens:
        lines.setdefault(line_no, []).append(tok)
    for line_no, toks in lines.items():
        if len(toks) != 3:
            raise reader.error(line_no, f"section '{name}' needs 'SEQUENCE dG37 dH' per line")
        seq, dg, dh = toks
        if len(seq) != size or set(seq) - set("ACGU"):
            raise reader.error(line_no, f"'{seq}' in section '{name}' is not {size} letters of ACGU")
        out.setdefault(seq, (_int_token(reader, name, dg, line_no), _int_token(reader, name, dh, line_no)))
    if len(out) > 40:
        raise reader.error(header_line, f"section '{name}' has more than 40 loops (ViennaRNA's limit)")
    return out


def _check_symmetry(ps: ParameterSet, file: str) -> None:
    """The stacking tables must be symmetric: stack[p][q] is the same stack seen from either side."""
    for which, tables in (("energies", ps.dg), ("enthalpies", ps.dh)):
        s = tables["stack"]
        bad = np.argwhere(s != s.T)
        if len(bad):
            p, q = (int(x) for x in bad[0])
            raise InputError(f"stacking {which} are not symmetric: stack[{p}][{q}] = {s[p, q]} but "
                             f"stack[{q}][{p}] = {s[q, p]}", file=file)


def read(path: str | Path, base: ParameterSet | None = None) -> ParameterSet:
    path = Path(path)
    try:
        text = path.read_text(encoding="ascii")
    except FileNotFoundError:
        raise InputError("parameter file not found", file=str(path)) from None
    except UnicodeDecodeError:
        raise InputError("parameter file is not plain ASCII text", file=str(path)) from None
    except OSError as err:
        raise InputError(f"cannot read parameter file: {err.strerror}", file=str(path)) from None
    return parse(text, str(path), base)
