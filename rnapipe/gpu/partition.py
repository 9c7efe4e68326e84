"""McCaskill's partition function and the base-pair probabilities on the GPU, as rnapipe.cpu.partition computes
them (its docstring: the recursions, the matrices, the scaling and its restarts), to rounding: the same
Boltzmann weights (``exp_tables``), the same per-nucleotide scales, sums in another order.

Per group of sequences of like length (as many as the GPU's memory takes, four (n+2)² float64 matrices each):

1. the MFE and its structure from the GPU MFE engine (rnapipe.gpu.zuker): the scales' first choice and the
   result's MFE;
2. ``pf_inside`` (QB, QM, QM1 and QI, a warp a cell, the cells of one diagonal at a time) and ``pf_exterior``
   (Q5, Q3, a block a sequence); a sequence whose cells pass 1e280, whose Z falls below 1e-280 or whose two
   exterior sums disagree starts again with the CPU engine's second scales (the MFE structure's) and
   corrections, as ``fold_scaled`` does;
3. ``pf_outside``: QMout, QM1out, QBout and the probabilities, diagonal by diagonal from the longest;
   in both passes the multiloop sums' terms that lie outside the current band of BAND diagonals are summed
   before it, tile by tile, as matrix products (``pf_band``; partition.cu's header);
4. ``pf_summary`` and ``pf_pairs``: per nucleotide its unpaired probability, the centroid's and RNAfold -p's
   characters and the terms of the diversity and the centroid's distance, and the pairs of probability at least
   min(threshold, MEA's 1e-4/(1 + gamma)), copied back (not the n² matrix); then on the host the MEA structure and
   the free energies by the CPU engine's functions (cpu.partition.derived_lists), over ``threads``, while the GPU
   folds the next group (a group of many sequences is cut into up to PIECES pieces, :func:`pieces`, so that the
   host's part of all but the last piece is hidden behind the GPU's work).

Many sequences: a block a sequence walks a band's diagonals in one launch. Few (fewer than two a multiprocessor):
one launch a diagonal, its cells over as many blocks as they fill.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import numpy as np
from numba import njit

from .. import energy as E
from ..cpu import partition as cpu
from ..model import Model
from . import loader

SOURCE = "partition.cu"
WARPS = 8                            # PF_WARPS
SLW = cpu.MAXLOOP + 2                # SL and SR's row width
MATRICES = 4                         # A, M, M1, MO
QW = 64                              # QI's ring of diagonals (partition.cu's QW: >= MAXLOOP + 3, a power of 2)
BAND = 32                            # PF_T: the multiloop sums' bands and tiles


def generic_list() -> np.ndarray:
    """The generic interior loops' (u1, u2) as u1·32 + u2, u1, u2 >= 2, u1 + u2 <= MAXLOOP, in order of u1 + u2
    (then u1): the first (s-3)(s-2)/2 are those of u1 + u2 <= s."""
    return np.array([u1 * 32 + (s - u1) for s in range(4, cpu.MAXLOOP + 1) for u1 in range(2, s - 1)],
                    dtype=np.float64)


def table_layout(X) -> tuple[np.ndarray, dict[str, int]]:
    """The kernels' tables of the Boltzmann weights ``X`` as one float64 array, and each table's offset in it
    (the kernels' PF_* names)."""
    EXT, MLS, CLO = cpu._stem_tables(X)
    parts = {
        "STACK": X.stack, "BULGE": X.bulge, "INTERIOR": X.interior, "NINIO": X.ninio,
        "MMH": X.mismatch_hairpin, "MMI": X.mismatch_interior, "MM1N": X.mismatch_interior_1n,
        "MM23": X.mismatch_interior_23, "INT11": X.int11, "INT21": X.int21, "INT22": X.int22,
        "GS": cpu._generic_weights(X), "EXT": EXT, "MLS": MLS, "CLO": CLO, "AU": cpu._terminal_au(X),
        "MLB": np.array([X.scalars[cpu.ML_BASE]]), "PT": E.PAIR_TYPE, "RT": E.RTYPE, "GL": generic_list(),
    }
    offsets, chunks, pos = {}, [], 0
    for name, a in parts.items():
        a = np.asarray(a, dtype=np.float64).ravel()
        offsets[name] = pos
        chunks.append(a)
        pos += a.size
    return np.concatenate(chunks), offsets


_TABLES: dict = {}


def _device_tables(key, X):
    """The tables of ``X`` on the current GPU (once per model ``key`` and GPU) and the build options that name
    their offsets."""
    import cupy

    at = (cupy.cuda.Device().id, key)
    if at not in _TABLES:
        _TABLES[at] = (cupy.asarray(table_layout(X)[0]), build_options(X))
    return _TABLES[at]


def build_options(X) -> tuple[str, ...]:
    """The kernels' build options: the offsets of :func:`table_layout` as -DPF_<name>."""
    return tuple(f"-DPF_{name}={off}" for name, off in table_layout(X)[1].items())


def _kernel(name: str, options: tuple[str, ...]):
    return loader.function(SOURCE, name, options)


def bytes_needed(n: int) -> int:
    """GPU memory for one sequence of n nt: the four (n+2)² float64 matrices, QI's ring of QW diagonals and the
    per-nucleotide tables."""
    N = n + 2
    return MATRICES * 8 * N * N + (2 * SLW + 16 + QW) * 8 * N


def host_signature() -> tuple:
    """The argument types :func:`cpu.derived_lists` gives the host part's largest piece (cpu._mea_range: the
    MEA structures and the free energies) from a group's arrays."""
    import numba

    one = {t: np.zeros(1, dtype=t) for t in (np.int8, np.int32, np.int64, np.uint8, np.float64)}
    args = (Model().tables(), one[np.int8], one[np.int64], one[np.int32], one[np.int32], one[np.int32],
            one[np.float64], one[np.int64], one[np.uint8], 1.0, 0, 1, one[np.uint8], one[np.float64],
            np.zeros((1, 2), dtype=np.int64))
    return tuple(numba.typeof(a) for a in args)


def host_compiled() -> bool:
    """Whether Numba's cache holds the host part's largest piece compiled on this machine (True where that cannot
    be told): a first run on a fresh machine compiles it (and the rest of the host part) for some 30 s."""
    from ..cpu import ahead

    return ahead.cached(cpu._mea_range, host_signature())


def _sm_count() -> int:
    import cupy
    return cupy.cuda.Device().attributes["MultiProcessorCount"]


def _groups(lens: np.ndarray, order: np.ndarray, budget: int) -> list[np.ndarray]:
    """``order`` (longest first) cut into runs whose memory fits ``budget`` together."""
    groups, start, used = [], 0, 0
    for k, idx in enumerate(order):
        b = bytes_needed(int(lens[idx]))
        if k > start and used + b > budget:
            groups.append(order[start:k])
            start, used = k, 0
        used += b
    if start < len(order):
        groups.append(order[start:])
    return groups


PIECES = 4                           # a group of many sequences is cut into up to this many pieces
PIECE_BLOCKS = 8                     # a piece keeps at least this many sequences a multiprocessor


def pieces(groups: list[np.ndarray], sms: int) -> list[np.ndarray]:
    """``groups`` (:func:`_groups`) with each of at least 2·PIECE_BLOCKS sequences a multiprocessor cut into up to
    PIECES runs of about equal counts, each of at least PIECE_BLOCKS a multiprocessor (a block a sequence keeps
    the GPU full), so that the host's part of one (fold_batch) runs while the GPU folds the next."""
    out = []
    for group in groups:
        parts = max(1, min(PIECES, len(group) // (PIECE_BLOCKS * sms)))
        out += np.array_split(group, parts) if parts > 1 else [group]
    return out


class _Group:
    """One group's sequences on the GPU: codes, scale tables, matrices, and the launches."""

    def __init__(self, seqs: list[str], mfes: list[int], X, tables, options):
        import cupy

        self.tables, self.options = tables, options
        self.count = len(seqs)
        self.lens = np.array([len(s) for s in seqs], dtype=np.int32)
        sizes = self.lens.astype(np.int64) + 2
        self.off1 = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
        self.off2 = np.concatenate(([0], np.cumsum(sizes * sizes)[:-1])).astype(np.int64)
        self.total1 = int(sizes.sum())
        self.total2 = int((sizes * sizes).sum())
        self.n_max = int(self.lens.max())
        S = np.zeros(self.total1, dtype=np.int8)             # the padded codes, one after another
        inner = np.ones(self.total1, dtype=bool)
        inner[self.off1] = False
        inner[self.off1 + sizes - 1] = False
        S[inner] = E.encode("".join(seqs))
        self.S = S
        # the first scales, ViennaRNA's (cpu.uniform_scales) from each MFE
        per = -(cpu.SFACT * np.asarray(mfes, dtype=np.float64) * 10.0) / self.lens / X.scalars[cpu.KT]
        self.L = np.empty(self.total1)
        spec = np.empty((self.total1, 7))
        _layout(X, S, self.off1, self.lens, per, self.L, spec)
        hp, _ = cpu._hairpin_tables(X, np.zeros(self.n_max + 2, dtype=np.int8), self.n_max)     # HP only
        self.d = {
            "S": cupy.asarray(S), "HP": cupy.asarray(hp), "SPEC": cupy.asarray(spec),
            "off1": cupy.asarray(self.off1), "off2": cupy.asarray(self.off2), "lens": cupy.asarray(self.lens),
            "Q5": cupy.zeros(self.total1), "Q3": cupy.zeros(self.total1), "Z": cupy.zeros(2 * self.count),
            "top": cupy.zeros(self.count, dtype=cupy.uint64), "span": cupy.zeros(self.count, dtype=cupy.int32),
            "bad": cupy.zeros(self.count, dtype=cupy.int32),
            "SL": cupy.empty(SLW * self.total1), "SR": cupy.empty(SLW * self.total1),
            "HV": cupy.zeros(2 * self.total1), "O1": cupy.zeros(2 * self.total1),
            "QI": cupy.zeros(QW * self.total1),
        }
        self.m = {name: cupy.zeros(self.total2) for name in ("A", "M", "M1", "MO")}
        self.many = self.count >= 2 * _sm_count()

    def codes(self, k: int) -> np.ndarray:
        """Sequence k's padded codes (S[0] and S[n+1] 0)."""
        return self.S[self.off1[k]:self.off1[k] + self.lens[k] + 2]

    def set_scales(self, k: int, lam: np.ndarray) -> None:
        """Sequence k's log-scales ``lam`` (its L; pf_scales makes SL and SR from it at the next inside pass)."""
        a, b = self.off1[k], self.off1[k] + self.lens[k] + 2
        _prefix(lam, self.L[a:b], int(self.lens[k]))

    def _launch_diagonals(self, kernel, args, d_from: int, d_to: int) -> None:
        """``kernel`` over the diagonals d_from .. d_to (either way): one launch when there are many sequences,
        else one a diagonal over enough blocks for its cells."""
        if self.many:
            kernel((1, self.count), (32 * WARPS,), args + (np.int32(d_from), np.int32(d_to)))
            return
        step = 1 if d_to >= d_from else -1
        for d in range(d_from, d_to + step, step):
            cells = self.n_max - d
            blocks = max(1, min(-(-cells // WARPS), 65535))
            kernel((blocks, self.count), (32 * WARPS,), args + (np.int32(d), np.int32(d)))

    def _sweep(self, kernel, args, inside: bool, act) -> None:
        """``kernel`` over its diagonals band by band (BAND diagonals, from a multiple of BAND), each band's
        bulk sums (pf_band) first: ascending from TURN + 1 inside, descending to 1 outside."""
        d, m = self.d, self.m
        band = _kernel("pf_band", self.options)
        tiles = -(-self.n_max // BAND)
        lo, hi = (cpu.TURN + 1, self.n_max - 1) if inside else (1, self.n_max - 1)
        starts = range(lo - lo % BAND, hi + 1, BAND)
        for D0 in (starts if inside else reversed(starts)):
            if inside and D0 >= 2 * BAND:
                band((tiles, self.count, 1), (128,), (m["M"], m["M1"], m["A"], m["MO"], d["off2"], d["lens"], act,
                                                      np.int32(D0), np.int32(1)))
            elif not inside and D0 + BAND < self.n_max:
                band((tiles, self.count, 2), (128,), (m["M"], m["M1"], m["A"], m["MO"], d["off2"], d["lens"], act,
                                                      np.int32(D0), np.int32(0)))
            first, last = max(D0, lo), min(D0 + BAND - 1, hi)
            self._launch_diagonals(kernel, args, *((first, last) if inside else (last, first)))

    def inside(self, active: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The inside pass and the exterior loop for the sequences ``active`` (bool): each one's largest cell
        above 1e280 (0 where none), the smallest span of such a cell, and (Q5[n], Q3[1])."""
        import cupy

        d, m, opts = self.d, self.m, self.options
        act = cupy.asarray(active.astype(np.int32))
        d["L"] = cupy.asarray(self.L)
        _kernel("pf_scales", opts)((max(1, min(-(-(self.n_max + 2) * SLW // 256), 64)), self.count), (256,),
                                   (d["L"], d["off1"], d["lens"], act, d["SL"], d["SR"]))
        d["top"].fill(0)
        d["HV"].fill(0.0)
        d["span"].fill(np.iinfo(np.int32).max)
        X = self.tables
        base = (X, d["S"], d["SL"], d["SR"], d["off1"], d["off2"], d["lens"], act)
        if self.n_max > cpu.TURN + 1:
            inside = _kernel("pf_inside", opts)
            args = (X, d["HP"], d["S"], d["SL"], d["SR"], d["SPEC"], d["L"], d["off1"], d["off2"], d["lens"], act,
                    m["A"], m["M"], m["M1"], d["QI"], d["HV"], d["top"], d["span"])
            self._sweep(inside, args, True, act)
        _kernel("pf_exterior", opts)((self.count,), (256,),
                                     base + (m["A"], d["Q5"], d["Q3"], d["Z"]))
        top = d["top"].get().view(np.float64)
        return top, d["span"].get(), d["Z"].get().reshape(-1, 2)

    def outside(self) -> None:
        import cupy

        d, m, opts = self.d, self.m, self.options
        act = cupy.ones(self.count, dtype=cupy.int32)
        d["HV"].fill(0.0)
        d["O1"].fill(0.0)
        outside = _kernel("pf_outside", opts)
        args = (self.tables, d["S"], d["SL"], d["SR"], d["off1"], d["off2"], d["lens"], act, m["A"], m["M"],
                m["M1"], m["MO"], d["QI"], d["HV"], d["O1"], d["Q5"], d["Q3"], d["Z"], d["bad"])
        if self.n_max > 1:
            self._sweep(outside, args, False, act)
        if int(d["bad"].max()):
            raise FloatingPointError("a pair probability left the double range (outside pass)")

    def summary(self, lo: float) -> dict:
        """What the host reads of the probabilities (pf_summary, pf_pairs): per nucleotide (off1 layout) the
        unpaired probability, the centroid's and RNAfold -p's characters, the diversity's and the centroid
        distance's terms; the pairs of probability at least ``lo`` (I, J, p) with each sequence's first at
        first[k]."""
        import cupy

        d, m, opts = self.d, self.m, self.options
        out = {"unpaired": cupy.zeros(self.total1), "centroid": cupy.full(self.total1, ord("."), dtype=cupy.uint8),
               "pseudo": cupy.zeros(self.total1, dtype=cupy.uint8), "diversity": cupy.zeros(self.total1),
               "distance": cupy.zeros(self.total1)}
        counts = cupy.zeros(self.total1, dtype=cupy.int64)
        base = (d["off1"], d["off2"], d["lens"], m["A"], d["Z"], np.float64(lo))
        grid = (max(1, min(-(-self.n_max // 256), 1024)), self.count)
        _kernel("pf_summary", opts)(grid, (256,), base + (
            out["unpaired"], out["centroid"], out["pseudo"], out["diversity"], out["distance"], counts))
        rows = cupy.concatenate((cupy.zeros(1, dtype=cupy.int64), cupy.cumsum(counts)))
        total = int(rows[-1].get())
        out["I"] = cupy.empty(total, dtype=cupy.int32)
        out["J"] = cupy.empty(total, dtype=cupy.int32)
        out["p"] = cupy.empty(total)
        _kernel("pf_pairs", opts)(grid, (256,), base + (rows, out["I"], out["J"], out["p"]))
        host = {k: v.get() for k, v in out.items()}
        host["first"] = np.append(rows.get()[self.off1], total)
        return host

    def free(self) -> None:
        self.d.clear()
        self.m.clear()


@njit(cache=True, nogil=True)
def _prefix(lam, L, n):
    """L[k] = lam[1] + ... + lam[k], L[0] = 0, L[n+1] = L[n] (cpu.partition._scales' L; the kernel pf_scales makes
    its SL and SR from it)."""
    L[0] = 0.0
    for k in range(1, n + 1):
        L[k] = L[k - 1] + lam[k]
    L[n + 1] = L[n]


@njit(cache=True, nogil=True)
def _layout(X, S, off1, lens, per, L, SPEC):
    """Every sequence's prefix sums of its first log-scales, ``per[k]`` for each nucleotide (cpu.uniform_scales,
    summed as :func:`_prefix` sums), and its special hairpins (cpu.special_hairpins) into the group's arrays, at
    its offset ``off1``."""
    for k in range(lens.shape[0]):
        n = lens[k]
        a = off1[k]
        b = a + n + 2
        L[a] = 0.0
        for m in range(a + 1, a + n + 1):
            L[m] = L[m - 1] + per[k]
        L[b - 1] = L[b - 2]
        cpu.special_hairpins(X, S[a:b], n, SPEC[a:b])


def _fold_group(seqs: list[str], mfes: list[tuple[int, str]], X, T, tables, options) -> tuple[list, _Group]:
    """The partition functions of one group: each sequence's ensemble free energy (kcal/mol), and the group with
    its probabilities on the GPU. Restarts as rnapipe.cpu.partition.fold_scaled's."""
    g = _Group(seqs, [m[0] for m in mfes], X, tables, options)
    kt = X.scalars[cpu.KT]
    state: dict[int, dict] = {}                  # the sequences that were started again
    pending = np.ones(g.count, dtype=bool)
    Z = np.zeros((g.count, 2))
    for attempt in range(cpu.TRIES):
        if attempt > 0:
            for k in np.flatnonzero(pending):
                st = state[k]
                if st["second"] is None:
                    n = int(g.lens[k])
                    db = np.frombuffer(mfes[k][1].encode("ascii"), dtype=np.uint8)
                    st["second"] = cpu.structure_scales(X, T, g.codes(k), n, db)
                lam = st["second"].copy()
                lam[1:int(g.lens[k]) + 1] += st["delta"]
                g.set_scales(k, lam)
        top, span, z = g.inside(pending)
        at_stake = np.flatnonzero(pending)
        q5, q3 = z[at_stake, 0], z[at_stake, 1]
        with np.errstate(invalid="ignore"):
            fine = (top[at_stake] <= 0.0) & np.isfinite(q5) & (q5 >= cpu.SMALL) & ~(np.abs(q3 - q5) > 1e-9 * q5)
        done = at_stake[fine]
        pending[done] = False
        Z[done] = z[done]
        for k in at_stake[~fine].tolist():
            st = state.setdefault(k, {"delta": 0.0, "lost": 0, "second": None})
            n = int(g.lens[k])
            q5, q3 = z[k]
            # a cell above 1e280 (the smallest span of one), or a Z of inf or NaN (the whole span)
            big, at = (top[k], int(span[k])) if top[k] > 0.0 else (math.inf, n)
            if top[k] > 0.0 or not math.isfinite(q5):
                if attempt > 0:
                    st["delta"] += ((math.log(big) - math.log(1e100)) / at if math.isfinite(big) else 700.0 / at)
                st["lost"] = 0
            elif q5 < cpu.SMALL:
                if attempt > 0:
                    if q5 >= 2.3e-308:
                        st["delta"] -= (math.log(1e-100) - math.log(q5)) / n
                    else:
                        st["delta"] -= 700.0 * 2.0 ** st["lost"] / n
                        st["lost"] += 1
            else:                                   # the two exterior sums disagree
                st["lost"] = 0
        if not pending.any():
            break
    if pending.any():
        g.free()
        raise FloatingPointError("no scale keeps this sequence's partition function in the double range")
    g.outside()
    Ln = g.L[g.off1 + g.lens].tolist()
    energies = [-(math.log(z5) + x) * kt / 1000.0 for z5, x in zip(Z[:, 0].tolist(), Ln)]
    return energies, g


def fold_batch(sequences: list[str], model: Model | None = None, threads: int = 1,
               threshold: float = cpu.THRESHOLD, gamma: float = 1.0,
               progress: Callable[[int], None] | None = None) -> list[cpu.PartitionResult]:
    """rnapipe.cpu.partition.fold_batch on the GPU: the same results, to rounding (the MFE and its structure
    are the GPU MFE engine's, identical to the CPU's)."""
    from . import zuker
    from .devices import memory_budget
    from ..errors import SequenceTooLongError

    model = model or Model()
    X = cpu.exp_tables(model)
    T = model.tables()
    lens = np.array([len(s) for s in sequences], dtype=np.int64)
    results: list = [None] * len(sequences)
    for k in np.flatnonzero(lens == 0):
        results[k] = cpu.empty_result()
    order = np.argsort(-lens, kind="stable")
    order = order[lens[order] > 0]
    if not order.size:
        return results
    key = None if model.params is None else str(model.params)
    tables, options = _device_tables((key, model.temperature, model.dangles), X)
    mfe_options = {"temperature": model.temperature, "dangles": model.dangles, "params": model.params}
    mfes = zuker.fold_batch([sequences[k] for k in order], "default", threads, mfe_options)
    mfe_of = dict(zip(order.tolist(), mfes))
    zuker.release()
    budget = memory_budget()
    longest = int(lens[order[0]])
    if bytes_needed(longest) > budget:
        raise SequenceTooLongError(f"a {longest}-nt sequence needs {bytes_needed(longest) / 2**30:.1f} GiB of GPU "
                                   f"memory for the partition function; {budget / 2**30:.1f} GiB are free")

    def derive(group_mfes: list, energies: list[float], g: _Group, h: dict) -> list:
        rest = cpu.derived_lists(T, g.S, g.off1, g.lens, h["I"], h["J"], h["p"], h["first"], h["unpaired"],
                                 h["centroid"], h["pseudo"], h["diversity"], h["distance"], threshold, gamma,
                                 pool, threads)
        return [cpu.assemble(X, (energies[m], mfe, np.frombuffer(db.encode("ascii"), dtype=np.uint8)) + values)
                for m, ((mfe, db), values) in enumerate(zip(group_mfes, rest))]

    def finish(idx: list[int], done) -> None:
        for k, r in zip(idx, done.result()):
            results[k] = r
        if progress is not None:
            progress(len(idx))

    # each group's host part (derived_lists: the MEA structures, the energies) on a thread of its own while the
    # GPU folds the next group; a group too large to leave the GPU busy meanwhile is cut (pieces)
    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool, ThreadPoolExecutor(1) as host:
        waiting = None
        for group in pieces(_groups(lens, order, budget), _sm_count()):
            idx = group.tolist()
            seqs = [sequences[k] for k in idx]
            group_mfes = [mfe_of[k] for k in idx]
            energies, g = _fold_group(seqs, group_mfes, X, T, tables, options)
            h = g.summary(min(threshold, 1e-4 / (1.0 + gamma)))
            g.free()
            if waiting is not None:
                finish(*waiting)
            waiting = (idx, host.submit(derive, group_mfes, energies, g, h))
        if waiting is not None:
            finish(*waiting)
    return results
