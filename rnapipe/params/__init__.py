"""Energy parameters: ViennaRNA v2.0 parameter files → frozen int32 tables in dcal/mol at a temperature.

``rna_turner2004.par`` (package data) is RNAfold's default set, exported from ViennaRNA 2.7.2's compiled-in
defaults (see README.md in this folder). :func:`tables` gives the :class:`EnergyTables` the DP and the
structure evaluator read; tables are cached per (file, temperature, dangles) and are read-only.

Table layout (every array int32, dcal/mol, indices as in ViennaRNA's ``vrna_param_t``):

=======================  ===================  ==========================================================
field                    shape                index meaning
=======================  ===================  ==========================================================
stack                    (8, 8)               [type(i,j)][type(q,p)] for stacked pairs i·j and p·q
hairpin, bulge,          (31,)                [loop size]; INF where no loop of that size exists
interior
mismatch_hairpin,        (8, 5, 5)            [pair type][5' neighbour inside][3' neighbour inside]
mismatch_interior,
mismatch_interior_1n,
mismatch_interior_23
mismatch_multi,          (8, 5, 5)            [pair type][5' neighbour outside][3' neighbour outside]
mismatch_exterior                             (zero, and unused, with dangles=0; clipped to <= 0)
dangle5, dangle3         (8, 5)               [pair type][the one neighbour] (clipped to <= 0)
int11                    (8, 8, 5, 5)         [type][type2][S(i+1)][S(j-1)]
int21                    (8, 8, 5, 5, 5)      [type][type2][S(i+1)][S(q+1)][S(j-1)]
int22                    (8, 8, 5, 5, 5, 5)   [type][type2][S(i+1)][S(p-1)][S(q+1)][S(j-1)]
tetra_seq, tri_seq,      (k, 6|5|8) int8      encoded special hairpins (closing pair included) ...
hexa_seq
tetra_e, tri_e, hexa_e   (k,)                 ... and their total loop energies
scalars                  (8,)                 see SCALAR_* indices below
lxc                      float                loop extrapolation factor lxc37 · T/T37
=======================  ===================  ==========================================================

Pair types: 0 none, 1 CG, 2 GC, 3 GU, 4 UG, 5 AU, 6 UA, 7 non-standard; nucleotides 0 N, 1 A, 2 C, 3 G, 4 U.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .parser import INF, NBPAIRS, ParameterSet, parse, read  # noqa: F401

K0 = 273.15
T_MEASURE = 37 + K0

SCALAR_ML_BASE = 0        # per unpaired nucleotide in a multiloop
SCALAR_ML_CLOSING = 1     # per multiloop
SCALAR_ML_INTERN = 2      # per branch of a multiloop (closing pair included)
SCALAR_NINIO = 3          # per nucleotide of interior-loop asymmetry ...
SCALAR_MAX_NINIO = 4      # ... up to this
SCALAR_TERMINAL_AU = 5    # per AU/GU pair ending a helix
SCALAR_DUPLEX_INIT = 6
SCALAR_DANGLES = 7        # the dangle model the tables were made for (0 or 2)

PAIR_TYPE = np.zeros((5, 5), dtype=np.int8)
for _t, (_a, _b) in enumerate(("CG", "GC", "GU", "UG", "AU", "UA"), start=1):
    PAIR_TYPE["NACGU".index(_a), "NACGU".index(_b)] = _t
PAIR_TYPE.setflags(write=False)
# rtype[t]: the type of the same pair read from the other side (CG <-> GC, ...).
RTYPE = np.array([0, 2, 1, 4, 3, 6, 5, 7], dtype=np.int8)
RTYPE.setflags(write=False)


class EnergyTables(NamedTuple):
    """Frozen tables at one temperature and dangle model (layout in the module docstring)."""

    stack: np.ndarray
    hairpin: np.ndarray
    bulge: np.ndarray
    interior: np.ndarray
    mismatch_hairpin: np.ndarray
    mismatch_interior: np.ndarray
    mismatch_interior_1n: np.ndarray
    mismatch_interior_23: np.ndarray
    mismatch_multi: np.ndarray
    mismatch_exterior: np.ndarray
    dangle5: np.ndarray
    dangle3: np.ndarray
    int11: np.ndarray
    int21: np.ndarray
    int22: np.ndarray
    tetra_seq: np.ndarray
    tetra_e: np.ndarray
    tri_seq: np.ndarray
    tri_e: np.ndarray
    hexa_seq: np.ndarray
    hexa_e: np.ndarray
    scalars: np.ndarray
    lxc: float


def default_path() -> Path:
    return Path(str(resources.files(__package__).joinpath("rna_turner2004.par")))


_lock = threading.Lock()
_sets: dict[str, ParameterSet] = {}


def load(path: str | Path | None = None) -> ParameterSet:
    """The raw parameter set of ``path`` (``None``: Turner 2004), read once and kept."""
    with _lock:
        if "" not in _sets:
            _sets[""] = read(default_path())
        key = "" if path is None else str(Path(path).resolve())
        if key not in _sets:
            _sets[key] = read(path, base=_sets[""])
        return _sets[key]


def rescale(dg, dh, temperature: float):
    """ViennaRNA's ``RESCALE_dG``: dG(T) = dH - (dH - dG37) · (T + 273.15) / 310.15, truncated toward zero
    as C's assignment of that double to an int truncates."""
    tempf = (temperature + K0) / T_MEASURE
    dg = np.asarray(dg, dtype=np.float64)
    dh = np.asarray(dh, dtype=np.float64)
    return np.trunc(dh - (dh - dg) * tempf).astype(np.int64)


def _scalar(ps: ParameterSet, name: str, temperature: float) -> int:
    dg, dh = ps.scalars[name]
    return int(rescale(dg, dh, temperature))


def _frozen(a, dtype=np.int32) -> np.ndarray:
    out = np.ascontiguousarray(np.asarray(a), dtype=dtype)
    out.setflags(write=False)
    return out


def _encode_loops(loops: dict[str, tuple[int, int]], size: int, temperature: float):
    codes = np.zeros((max(1, len(loops)), size), dtype=np.int8)
    energies = np.zeros(max(1, len(loops)), dtype=np.int32)
    if not loops:
        codes[:] = -1            # matches no sequence
        energies[:] = INF
    for k, (seq, (dg, dh)) in enumerate(loops.items()):
        codes[k] = ["NACGU".index(c) for c in seq]
        energies[k] = rescale(dg, dh, temperature)
    return _frozen(codes, np.int8), _frozen(energies)


def make_tables(ps: ParameterSet, temperature: float = 37.0, dangles: int = 2) -> EnergyTables:
    """Scale a raw set to ``temperature`` (°C) for ``dangles`` (0 or 2), as ViennaRNA's
    ``get_scaled_params`` does (params/params.c), salt at its standard value (no correction)."""
    if dangles not in (0, 2):
        raise ValueError("dangles must be 0 or 2")
    t = temperature

    def r(key):
        return rescale(ps.dg[key], ps.dh[key], t)

    def clip(a):
        return np.minimum(a, 0)

    if dangles:
        mm_multi = clip(r("mismatch_multi"))
        mm_ext = clip(r("mismatch_exterior"))
    else:
        mm_multi = np.zeros_like(ps.dg["mismatch_multi"])
        mm_ext = np.zeros_like(ps.dg["mismatch_exterior"])
    scalars = np.array([
        _scalar(ps, "ml_base", t), _scalar(ps, "ml_closing", t), _scalar(ps, "ml_intern", t),
        _scalar(ps, "ninio", t), ps.max_ninio, _scalar(ps, "terminal_au", t),
        _scalar(ps, "duplex_init", t), dangles], dtype=np.int64)
    tetra_seq, tetra_e = _encode_loops(ps.loops["Tetraloops"], 6, t)
    tri_seq, tri_e = _encode_loops(ps.loops["Triloops"], 5, t)
    hexa_seq, hexa_e = _encode_loops(ps.loops["Hexaloops"], 8, t)
    return EnergyTables(
        stack=_frozen(r("stack")), hairpin=_frozen(r("hairpin")), bulge=_frozen(r("bulge")),
        interior=_frozen(r("interior")),
        mismatch_hairpin=_frozen(r("mismatch_hairpin")), mismatch_interior=_frozen(r("mismatch_interior")),
        mismatch_interior_1n=_frozen(r("mismatch_interior_1n")),
        mismatch_interior_23=_frozen(r("mismatch_interior_23")),
        mismatch_multi=_frozen(mm_multi), mismatch_exterior=_frozen(mm_ext),
        dangle5=_frozen(clip(r("dangle5"))), dangle3=_frozen(clip(r("dangle3"))),
        int11=_frozen(r("int11")), int21=_frozen(r("int21")), int22=_frozen(r("int22")),
        tetra_seq=tetra_seq, tetra_e=tetra_e, tri_seq=tri_seq, tri_e=tri_e, hexa_seq=hexa_seq, hexa_e=hexa_e,
        scalars=_frozen(scalars), lxc=float(ps.lxc37 * ((t + K0) / T_MEASURE)))


@lru_cache(maxsize=32)
def _cached_tables(key: str | None, temperature: float, dangles: int) -> EnergyTables:
    return make_tables(load(key), temperature, dangles)


def tables(path: str | Path | None = None, temperature: float = 37.0, dangles: int = 2) -> EnergyTables:
    """Tables for a parameter file (``None``: Turner 2004) at ``temperature`` °C and ``dangles``."""
    key = None if path is None else str(Path(path).resolve())
    return _cached_tables(key, float(temperature), int(dangles))
