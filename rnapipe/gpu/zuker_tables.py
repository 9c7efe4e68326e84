"""The Zuker kernels' energy tables: the CPU engine's tables flattened into the layout of zuker_core.cuh, the
interior loops' size terms, and one device copy per model, length class and GPU. Shared by the tiled and
per-sequence fills (``zuker``) and the short-sequence fills (``zuker_short``)."""

from __future__ import annotations

import functools
import re

import numpy as np
from numba import njit

from .. import energy as E
from ..model import RULE_MAX_BP_SPAN, RULE_NO_CLOSING_GU, RULE_NO_GU, RULE_NO_LP, RULES, Model
from . import loader


INF = 100_000_000             # ZK_INF in zuker_core.cuh, = rnapipe.cpu.zuker.INF
NO_SPAN = 1_000_000_000       # ZK_NO_SPAN: no max_bp_span
H_RULES = 12                  # ZK_H_NO_LP, ZK_H_NO_GU, ZK_H_NO_CLOSING_GU, ZK_H_SPAN: header words 12-15


def _kernel_offsets() -> dict[str, int]:
    """ZK_OFF_* of zuker_core.cuh: the layout of the flat parameter table."""
    text = (loader.kernel_dir() / "zuker_core.cuh").read_text()
    return {m.group(1).lower(): int(m.group(2)) for m in re.finditer(r"#define ZK_OFF_(\w+) (\d+)", text)}


def flat_tables(T, max_n: int) -> np.ndarray:
    """The EnergyTables ``T`` as one int32 array in the layout of zuker_core.cuh, with hairpin size terms
    up to ``max_n`` computed by the CPU engine's own ``loop_length_energy`` (same logarithm), and the model's
    pairing rules (the scalars past RULES, ``Model.tables()``) in header words 12-15, which kernels built with
    ZK_RULES read."""
    off = _kernel_offsets()
    end = off.pop("end")
    names = sorted(off, key=off.get)
    bounds = [off[k] for k in names] + [end]
    out = []
    flat = np.zeros(end, dtype=np.int64)
    sc = np.asarray(T.scalars, dtype=np.int64)
    flat[H_RULES:H_RULES + 4] = rules_words(sc)
    for k, name in enumerate(names):
        a = np.asarray(getattr(T, name), dtype=np.int64).ravel()
        if name == "scalars":
            a = a[:RULES]
        if a.size > bounds[k + 1] - bounds[k]:
            raise RuntimeError(f"table {name} ({a.size}) does not fit its slot in zuker_core.cuh")
        flat[off[name]:off[name] + a.size] = a
    out.append(flat)
    pos = end
    header = {}
    for key, seqs, energies in (("tetra", T.tetra_seq, T.tetra_e), ("tri", T.tri_seq, T.tri_e),
                                ("hexa", T.hexa_seq, T.hexa_e)):
        s = np.asarray(seqs, dtype=np.int64).ravel()
        e = np.asarray(energies, dtype=np.int64).ravel()
        header[key] = (len(e), pos, pos + s.size)
        out.extend([s, e])
        pos += s.size + e.size
    hpl = _hairpin_lengths(T.hairpin, T.lxc, max(max_n, 32))
    out.append(hpl)
    sz = size_terms(T)
    out.append(sz.ravel())
    flat[0:3] = [header["tetra"][0], header["tri"][0], header["hexa"][0]]
    flat[3:9] = [header["tetra"][1], header["tetra"][2], header["tri"][1], header["tri"][2],
                 header["hexa"][1], header["hexa"][2]]
    flat[9] = pos
    flat[10] = hpl.size
    flat[11] = pos + hpl.size
    table = np.concatenate(out)
    if np.abs(table).max() > 2**31 - 1:
        raise RuntimeError("parameter table does not fit int32")
    return table.astype(np.int32)


def rules_words(scalars) -> list[int]:
    """no_lp, no_gu, no_closing_gu and the span (NO_SPAN: none) from the tables' scalars, as the CPU engine's
    ``_rules`` reads them (every rule off where the tables have none)."""
    if len(scalars) <= RULE_MAX_BP_SPAN:
        return [0, 0, 0, NO_SPAN]
    span = int(scalars[RULE_MAX_BP_SPAN])
    return [int(scalars[RULE_NO_LP] != 0), int(scalars[RULE_NO_GU] != 0), int(scalars[RULE_NO_CLOSING_GU] != 0),
            span if 0 < span < NO_SPAN else NO_SPAN]


def rules_option(model: Model) -> tuple[str, ...]:
    """The nvcc option that builds the kernels with the pairing rules (``-DZK_RULES``) where ``model`` has one
    on; none for RNAfold's defaults, whose kernels read no rule."""
    return ("-DZK_RULES",) if model.pairing() else ()


def shape_option(shape) -> tuple[str, ...]:
    """The nvcc option that builds the kernels with SHAPE stacking terms (``-DZK_SHAPE``: one more kernel
    argument, the terms of every sequence) where the batch has SHAPE data (``shape`` not None); none without,
    whose kernels read none."""
    return ("-DZK_SHAPE",) if shape is not None else ()


def hc_option(constraints) -> tuple[str, ...]:
    """The nvcc option that builds the kernels with hard constraints (``-DZK_HC``: one more kernel argument, the
    per-position words of every sequence, :func:`hc_words`) where the batch has constraint lines (``constraints``
    not None); none without, whose kernels read none."""
    return ("-DZK_HC",) if constraints is not None else ()


HC_WORDS = 4                  # int32 words per position: ZkHc of zuker_core.cuh (code, enc, up, dn)


def hc_words(constraints: list[str], lens, starts, size: int, enforce: bool, span: int) -> np.ndarray:
    """The kernels' hard-constraint words (ZkHc, zuker_core.cuh) of every sequence: an int32 array of ``size``
    positions × HC_WORDS, sequence k's n + 2 positions from ``starts[k]`` (laid out as its padded codes), made
    from its constraint line ``constraints[k]`` (checked, as long as the sequence) by the CPU engine's own pass
    (rnapipe.cpu.zuker.hc_positions): code (the partner, else minus the flags: bit 0 'x' or '>', bit 1 'x' or
    '<'), enc, UP and DN (with ``enforce``, --enforceConstraint); position 0's UP holds the span the fill covers:
    ``span`` (the model's max_bp_span, NO_SPAN for none) grown to the sequence's longest constrained pair, as the
    CPU engine's _hard_constraints grows it. One compiled call for the whole batch (the lines joined)."""
    from ..cpu.zuker import HC_CODES, hc_words_fill

    out = np.zeros((size, HC_WORDS), dtype=np.int32)
    if constraints:
        codes = HC_CODES[np.frombuffer(("\n" + "\n".join(constraints) + "\n").encode("ascii"), dtype=np.uint8)]
        hc_words_fill(out, codes, np.asarray(lens, dtype=np.int64), np.asarray(starts, dtype=np.int64), bool(enforce),
                 np.int64(span))
    return out


def span_of(model: Model) -> int:
    """The longest span j - i + 1 a pair may have (NO_SPAN: no limit)."""
    return model.max_bp_span or NO_SPAN


# (n1, n2) of the loops with their own tables or rules (zk_interior handles them one by one).
SPECIAL_LOOPS = ((0, 0), (0, 1), (0, 2), (1, 0), (2, 0), (1, 1), (1, 2), (2, 1), (2, 2), (2, 3), (3, 2))


def size_terms(T) -> np.ndarray:
    """SZ[n1, n2] (31 x 32, INF where unused): the loop-size part of every other interior loop with n1 + n2
    <= 30, the rest coming from the auxiliary matrices and the closing pair (energy.interior_energy):
    bulge[n] for bulges of n >= 3 (terminal AU/GU from VAU and the closing pair), interior[n + 1] +
    Ninio(n - 1) for 1xn loops with n >= 3, interior[n1 + n2] + Ninio(|n1 - n2|) for generic ones."""
    sc = T.scalars
    ninio, max_ninio = int(sc[E._NINIO]), int(sc[E._MAX_NINIO])
    sz = np.full((E.MAXLOOP + 1, 32), INF, dtype=np.int64)
    for n1 in range(E.MAXLOOP + 1):
        for n2 in range(E.MAXLOOP + 1 - n1):
            if (n1, n2) in SPECIAL_LOOPS:
                continue
            nl, ns = max(n1, n2), min(n1, n2)
            if ns == 0:
                sz[n1, n2] = T.bulge[nl]
            elif ns == 1:
                sz[n1, n2] = T.interior[nl + 1] + min(max_ninio, (nl - 1) * ninio)
            else:
                sz[n1, n2] = T.interior[nl + ns] + min(max_ninio, (nl - ns) * ninio)
    return sz


@njit(cache=True)
def _hairpin_lengths(hairpin, lxc, max_n):
    out = np.empty(max_n + 1, dtype=np.int64)
    for m in range(max_n + 1):
        out[m] = min(E.loop_length_energy(hairpin, lxc, m), INF)
    return out


@functools.lru_cache(maxsize=8)
def _device_tables(model: Model, max_n: int, device: int):
    import cupy
    with cupy.cuda.Device(device):
        return cupy.asarray(flat_tables(model.tables(), max_n))


def table_for(model: Model, n: int):
    # Hairpin size terms are needed up to the longest sequence; keep one table per power of two.
    cap = 1024
    while cap < n + 2:
        cap *= 2
    return _device_tables(model, cap, loader._device_id())   # one copy per GPU (--gpus)
