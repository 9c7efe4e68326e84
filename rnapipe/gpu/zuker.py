"""Zuker MFE on the GPU, identical (MFE and structure) to the CPU engine rnapipe.cpu.zuker.

The recursions are the CPU engine's (Lei et al. eqs. (1)-(5): W, V with VBI and VM, WM, plus WM1,
ViennaRNA's fM1), evaluated per cell by one warp: the lanes split the interior loops (VBI) and the
multiloop split points and meet in a shuffle minimum. As on the CPU, auxiliary matrices VI, V1N, VAU
(V plus the inner pair's share of a generic, 1xn or bulge loop) make every interior loop but the 11 with
tables of their own one add-min against a size table. VM(i, j) (eq. 4) is summed by cell (i+1, j-1)
while it sweeps the same two rows for its own WM (eq. 5), so each row is read once per cell (VMX).
The cell code is in ``kernels/zuker_core.cuh``; ``kernels/zuker.cu`` holds three fills:

* ``zk_fill_block`` (where forced: ``gpu_fill="block"``): one block per sequence, the cells of each
  anti-diagonal across its warps, a whole batch of sequences in one launch (Lei et al. §3.2's sequence-
  and cell-level parallelism);
* ``zk_mid`` + ``zk_fin`` (longer, ``LONG_FILL = "tiled"``, the default): the cells in TILE x TILE tiles,
  one tile diagonal at a time over every sequence of the batch: ``zk_mid`` does the multiloop split points
  whose operands lie in finished tiles as a register-blocked min-plus product (WM and VMX, the bulk of the
  O(n³) work), ``zk_fin_lanes`` (one block per tile) walks the tile's cell diagonals with the rest (interior
  loops, the split points near the two ends, WM1), a warp's lanes over a diagonal's cells and their operands
  (the auxiliaries within an interior loop's reach, the multiloop rows near the two ends) in shared memory;
  see kernels/zuker.cu for the sets of split points, which are the very sets of the per-cell sweep, so every
  value is the same minimum (``zk_fin_flat`` and ``zk_fin``, a warp per cell, do the same work);
* ``zk_fill_diag`` (long sequences with ``LONG_FILL = "diag"``: the alternative to the tiled fill, which the tests
  compare it with): one launch per anti-diagonal covering every sequence of the batch, each cell sweeping its full
  rows.

Then W (eq. 1): in chunks (``zk_ext_cross`` + ``zk_ext_seq``) after the tiled fill, else one block per
sequence (``zk_exterior``). Then the traceback, a port of ``rnapipe.cpu.zuker.traceback`` with the same
order of tests (ViennaRNA's backtracking order, so that among co-optimal structures RNAfold's comes out):
after the fills of long sequences one block per sequence (``zk_traceback_block``: each scan for "the first
candidate that re-derives the stored value" done by the whole block with a minimum-index reduction), else
one thread per sequence (``zk_traceback``); above ``HOST_TRACEBACK_N`` the thread traceback gives way to the
CPU engine's own traceback on matrices copied back. Matrices are stored as the CPU engine stores them ((n+2)²
int32, WM1 transposed), which is what lets it read them.

The parameter tables are the CPU engine's (``Model.tables()``) flattened into one int32 array
(:func:`.zuker_tables.flat_tables`), copied to the device once per model.

The model's pairing rules (``no_lp``, ``no_gu``, ``no_closing_gu``, ``max_bp_span``) are the CPU engine's, applied
as it applies them (its module docstring) by kernels built with ``-DZK_RULES`` (kernels/zuker_core.cuh, zk_pair and
the others), which read them from the flat table; a model without them gets the kernels built without it, which
read none. With ``max_bp_span`` = N the fills leave the cells of span j - i + 1 > N alone (INF: nothing within
the span reads them): ``zk_fill_block`` and ``zk_fill_diag`` stop at diagonal N - 1, the tiled fill at the tile
diagonal whose nearest cell is that far, and W looks back N nucleotides: O(n·N²) work instead of O(n³).

SHAPE data (``fold_batch``'s ``shape``: each sequence's stacking pseudo-energies, rnapipe.constraints.deigan) are
the CPU engine's per-record terms, added to every stacked pair of pairs as it adds them, by kernels built with
``-DZK_SHAPE`` (kernels/zuker_core.cuh, ZK_SSTACK): the terms go to the device as one int32 array laid out as the
sequences' codes (N = n + 2 words each, zero where a position has none); a batch without them gets the kernels
built without it.

Hard constraints (``fold_batch``'s ``constraints``: RNAfold's constraint line of each sequence, with
``enforce_constraint`` its --enforceConstraint) are the CPU engine's too, applied as it applies them (its
``_hard_constraints``) by kernels built with ``-DZK_HC`` (kernels/zuker_core.cuh, ZkHc): per-position words from
each line, made by the host with the CPU engine's own pass for the longer fills (:func:`.zuker_tables.hc_words`) and
on the device, int16, for the short kernels (zuker_short.cu's zs_hc_words, tested against it): the constrained
partner or the symbol's flags, the innermost constrained pair around the position, and how many nucleotides may stay
unpaired from it on and up to it; laid out as the codes, so that a kernel decides "may i·j pair, and with which
type" in O(1) (a constrained non-canonical pair has ViennaRNA's non-standard type 7, whose energies are the CPU
engine's) and bounds every hairpin, interior loop, multiloop run and exterior run as the CPU engine does. A
constrained pair longer than ``max_bp_span`` grows the span the fills, W and the traceback cover (position 0's
word). The host traceback is given the CPU engine's pair types and unpaired runs. A record whose constraints leave
no structure gets the CPU engine's energy (INF), which the pipeline reports.
"""

from __future__ import annotations

import functools
import logging
import threading
from typing import Callable

import numpy as np

from .. import energy as E
from ..io import packed
from ..memory import longest_fitting
from ..model import Model
from . import loader, zuker_short
from . import devices
from .zuker_tables import (INF, NO_SPAN, SPECIAL_LOOPS, hc_option, hc_words, rules_option, shape_option, size_terms,
                           span_of, table_for)

log = logging.getLogger(__name__)

VARIANTS = ("default",)

KERNELS = "zuker.cu"
TURN = 3
SHORT_MAX_N = 480             # the short kernels up to here at most (None: as far as zs_fold_smem goes), the tiled
                              # fill (LONG_FILL) beyond; zk_fill_block and zs_fold only where forced (gpu_fill).
                              # Where the two cross on an H100 (4,096 random sequences a length, each fill forced:
                              # zs_fold_smem 12 % ahead at 440 nt, 4-5 % at 470-480, the tiled fill 2-5 % ahead
                              # at 500; benchmarks/RESULTS.md)
FILL_THREADS = 256            # 8 warps: 8 cells of an anti-diagonal at a time per sequence
DIAG_WARPS = 4                # warps (cells) per block of zk_fill_diag
HOST_TRACEBACK_N = 8000       # thread traceback only up to here: one GPU thread walks every scan alone
MAX_BATCH = 65_535            # gridDim.y of zk_fill_diag, zk_mid, zk_fin
# Long sequences: the tiled fill (zk_mid + zk_fin, ZK_TILE x ZK_TILE tiles) and the block traceback.
# LONG_FILL is the fill used beyond short_max_n() ("tiled" or the per-diagonal "diag"); BLOCK_TRACEBACK picks the
# one-block-per-sequence traceback for the fills of that path (else one thread per sequence up to
# HOST_TRACEBACK_N, the CPU engine's traceback on copied matrices beyond).
LONG_FILL = "tiled"
BLOCK_TRACEBACK = True
TILE = 32                     # ZK_TILE
FIN_WARPS = 8                 # warps per tile in zk_fin
# zk_fin_lanes (a warp's lanes over the cells of a cell diagonal, its operands in shared memory; TILE 32 only),
# zk_fin_flat (a warp per cell, its interior loops spread evenly over the lanes) or zk_fin (zk_v_partial's
# loops): the same results
FIN_KERNEL = "zk_fin_lanes"
FIN_LANES_WARPS = 12          # ZF_WARPS: warps per tile in zk_fin_lanes (6 to 16; the split points' own warps from 12)
# zk_fin_lanes' dynamic shared memory (ZF_SHARED_WORDS of kernels/zuker.cu): the size terms (four rows of 136: the
# terms of the 133 base loops grown by d = 0 .. 3), the auxiliaries' 62 x 62 window of each kind (rows of 65 words,
# the whole to 16 bytes), three 32 x 36 multiloop tiles, V's 35 x 36 window, a column, seventeen per-cell rows, two
# diagonals' lists of cells with interior loops, four diagonals' cell words and the lists' lengths, then bytes: pair
# types (36 x 36) and two rows of 40 codes (73,864 bytes: three blocks an SM)


def _fin_lanes_bytes(window_bytes: int) -> int:
    """zk_fin_lanes' dynamic shared memory with an auxiliaries' window of ``window_bytes``."""
    window = -(-window_bytes // 16) * 16
    return 4 * (4 * 136 + 3 * 32 * 36 + 35 * 36 + 32 + 21 * 32 + 66) + window + 36 * 36 + 80


FIN_LANES_SHARED = _fin_lanes_bytes(4 * 3 * 62 * 65)
# ZF_AUX16: the window's elements in 16 bits (the int32 fill again for a sequence whose values leave the range, and
# for models whose interior-loop size terms leave +-8,000), rows of FIN_AUX16_PITCH elements, FIN_AUX16_BLOCKS blocks
# an SM (ZF_MINB: the registers the build may use), for groups up to FIN_AUX16_MAX_N nt: longer real transcripts
# (repeats) leave the range now and then, and folding them again alone costs more than the window gains there
FIN_AUX16 = True
FIN_AUX16_MAX_N = 4096
FIN_AUX16_PITCH = 68
FIN_AUX16_BLOCKS = 4
AUX16_SIZE_TERMS = 8000       # ZF16_SZ of kernels/zuker.cu
FIN_OPTIONS: tuple = ()       # more -D options for zk_fin_lanes' build (tests: a narrow ZF16_LO / ZF16_HI)
MID_TARGET_BLOCKS = 2048      # zk_mid splits the middle K tiles over blocks until about this many
MID_GROUP_PRODUCTS = 4        # where a tile has fewer middle K tiles, a zk_mid block takes several tiles (about this
                              # many K tiles a block, keeping MID_TARGET_BLOCKS blocks; 1: a block a tile)
MID_STAGES = 2                # ZK_MID_STAGES: zk_mid copies the next K tile while it multiplies one (1: in turn);
                              # 2 needs TILE 32 (static shared memory)
FILL_BAND = True              # the tiled fill's INF fill only where it reads cells it does not write (_inf_fill)
EXTERIOR_CHUNKED = True       # W of the tiled path by zk_ext_cross + zk_ext_seq (else zk_exterior)
WCHUNK = 64                   # ZK_WCHUNK
AUX_VGATE_MAX_N = 4096        # up to here zk_fin_lanes loads VAU, V1N, VI only at pairs (ZF_AUX_VGATE) and
                              # zk_fill_band leaves them alone: the writes cost more than the loads' tests at short
                              # lengths, less at long ones (0: never)

# Set to a dict by a benchmark to get seconds per phase (the device is synchronised between phases).
PHASE_SECONDS: dict | None = None


def _phase(name: str, since: float) -> float:
    import time
    if PHASE_SECONDS is None:
        return since
    import cupy
    cupy.cuda.Device().synchronize()
    now = time.perf_counter()
    PHASE_SECONDS[name] = PHASE_SECONDS.get(name, 0.0) + now - since
    return now



def bytes_needed(n: int, variant: str = "default") -> int:
    """Device memory for one sequence of n nt: V, WM, WM1T and the auxiliaries VI, V1N, VAU, VMX ((n+2)²
    int32 each), W and the pair table, the traceback stack (3n + 8 entries of 3 ints), sequence and output
    bytes. 80 GB at MEMORY_FRACTION 0.8 holds n = 47,800."""
    N = n + 2
    return 28 * N * N + 8 * N + 12 * (3 * n + 8) + 2 * N + 64


def max_length(budget_bytes: int) -> int:
    return longest_fitting(bytes_needed, budget_bytes)


def fin_lanes_shared(aux16: bool, pitch: int | None = None) -> int:
    """zk_fin_lanes' dynamic shared memory in bytes: FIN_LANES_SHARED, or with the window's 3 x 62 rows of ``pitch``
    16-bit elements (FIN_AUX16_PITCH as it is at the call) in place of its 3 x 62 x 65 words (50,792 bytes at
    pitch 68)."""
    if not aux16:
        return FIN_LANES_SHARED
    pitch = FIN_AUX16_PITCH if pitch is None else pitch
    return _fin_lanes_bytes(4 * ((3 * 62 * pitch * 2 + 3) // 4))


def fin_lanes_window(aux16: bool) -> tuple[str, ...]:
    """zk_fin_lanes' -D options for its window: in 16 bits (ZF_AUX16, its pitch and blocks an SM) or none (int32)."""
    return ("-DZF_AUX16", f"-DZF_PA={FIN_AUX16_PITCH}", f"-DZF_MINB={FIN_AUX16_BLOCKS}") if aux16 else ()


@functools.lru_cache(maxsize=16)
def aux16_ok(model: Model) -> bool:
    """Whether the model's finite interior-loop size terms lie within what ZF_AUX16's chunk sums assume."""
    sz = size_terms(model.tables())
    finite = sz[sz < INF]
    return bool(finite.size == 0 or (finite.min() >= -AUX16_SIZE_TERMS and finite.max() <= AUX16_SIZE_TERMS))


@functools.lru_cache(maxsize=16)
def fin_lanes_groups(model: Model) -> tuple[str, ...]:
    """zk_fin_lanes' -D options for its terms (kernels/zuker.cu, "The base loops' terms"), checked on the model's
    size terms: ZF_GROUP01 where every bulge's and every 1 x n loop's size term depends on the loop size s alone,
    and ZF_GROUPS, the least asymmetry |n1 - n2| from which each s's generic loops (n1, n2 >= 2, not a special
    loop) have one size term (MAXLOOP + 1: none; 5 at 37 °C, where Ninio reaches its cap)."""
    sz = size_terms(model.tables())
    special = set(SPECIAL_LOOPS)
    top = sz.shape[0] - 1                                  # MAXLOOP
    one_s = all(sz[0, s] == sz[s, 0] for s in range(3, top + 1)) and all(
        sz[1, s - 1] == sz[s - 1, 1] for s in range(4, top + 1))
    cap = top + 1
    for a in range(top, -1, -1):                           # the least a that holds (it holds for every larger one)
        if any(len({int(sz[n1, s - n1]) for n1 in range(2, s - 1)
                    if abs(2 * n1 - s) >= a and (n1, s - n1) not in special}) > 1 for s in range(4, top + 1)):
            break
        cap = a
    return (f"-DZF_GROUPS={cap}",) + (("-DZF_GROUP01=1",) if one_s else ())


def fin_lanes_options(model: Model, aux16: bool, vgate: bool = False) -> tuple[str, ...]:
    """zk_fin_lanes' own -D options for a model: its warps, the shared memory it is launched with (checked against
    the kernel's layout when it compiles), its window (fin_lanes_window), its terms (fin_lanes_groups) and with
    ``vgate`` ZF_AUX_VGATE (AUX_VGATE_MAX_N)."""
    return ((f"-DZF_WARPS={FIN_LANES_WARPS}", f"-DZF_SHARED_BYTES={fin_lanes_shared(aux16)}")
            + fin_lanes_window(aux16) + fin_lanes_groups(model) + (("-DZF_AUX_VGATE",) if vgate else ()))


def _kernels(model: Model, shape=None, constraints=None, aux16: bool = False, vgate: bool = False):
    """The engine's kernels by name, and "zk_fin_lanes_shared": zk_fin_lanes' dynamic shared memory (its window in
    16 bits with ``aux16``; ZF_AUX_VGATE with ``vgate``)."""
    names = ("zk_fill_block", "zk_fill_diag", "zk_exterior", "zk_traceback", "zk_mid", "zk_fin", "zk_fin_flat",
             "zk_traceback_block", "zk_ext_cross", "zk_ext_seq", "zk_fill_inf", "zk_fill_band")
    opts = ((f"-DZK_TILE={TILE}", f"-DZK_MID_STAGES={MID_STAGES if TILE == 32 else 1}") + rules_option(model)
            + shape_option(shape) + hc_option(constraints))
    out = {k: loader.function(KERNELS, k, opts) for k in names}
    if TILE == 32:
        shared = fin_lanes_shared(aux16)
        lanes = fin_lanes_options(model, aux16, vgate) + tuple(FIN_OPTIONS)
        out["zk_fin_lanes"] = loader.function(KERNELS, "zk_fin_lanes", opts + lanes, dynamic_shared=shared)
        out["zk_fin_lanes_shared"] = shared
    return out


def _tiled_ok(model: Model, n: int) -> bool:
    """The tiled fill's identity WM = min(X, min_k k·ML_base + WM1 - a·ML_base) needs k·ML_base far below
    INF (true of every parameter file in use: ML_base is a few dcal/mol)."""
    ml = int(model.tables().scalars[E._ML_BASE])
    return 0 <= ml and ml * (n + 2) < 10_000_000


def _mid_splits(D: int, tiles: int, count: int) -> int:
    """The blocks zk_mid gives each tile of tile diagonal D (its middle K tiles split until about
    MID_TARGET_BLOCKS blocks; one block writes its tile's cells, several take their minimum)."""
    return max(1, min(D - 1, -(-MID_TARGET_BLOCKS // (tiles * count))))


def _mid_group(D: int, tiles: int, count: int, splits: int) -> int:
    """The tiles a zk_mid block takes at tile diagonal D where one block has a tile (``splits``, _mid_splits's, is
    1): small D has few K tiles a tile, and a block of several tiles copies each tile's first K tile while it
    multiplies the one before."""
    if splits > 1:
        return 1
    return max(1, min(-(-MID_GROUP_PRODUCTS // (D - 1)), tiles * count // MID_TARGET_BLOCKS))


def _inf_fill(k, mats, total: int, d_moff, d_lens, n_max: int, count: int, band: bool, vgate: bool) -> None:
    """INF into the seven matrices before a fill: everywhere (zk_fill_inf), or with ``band`` (the tiled fill of a
    model without pairing rules, constraints or span limit, which writes every cell of span > TURN) only where
    that fill reads cells it does not write (zk_fill_band): a band beside the diagonal, WM and VMX right of it too
    where zk_mid's blocks share a tile; VI, V1N and VAU not at all with ``vgate`` (zk_fin_lanes built with
    ZF_AUX_VGATE), else right of the band too."""
    if not band:
        k["zk_fill_inf"]((4096,), (256,), (mats, np.int64(7 * total)))
        return
    nt = (n_max + TILE - 1) // TILE
    shared = any(_mid_splits(D, nt - D, count) > 1 for D in range(2, nt))
    # bit m: matrix m (V, WM, WM1T, VI, V1N, VAU, VMX); which: those filled, upper: those filled right of the band too
    which = 0b1000111 if vgate else 0b1111111
    upper = (0 if vgate else 0b0111000) | (0b1000010 if shared else 0)
    nm = bin(which).count("1")
    rows = max(1, min(-(-(n_max + 2) // 8), -(-4096 // (nm * count))))   # blocks a matrix: 4,096 blocks or more
    k["zk_fill_band"]((count, nm, rows), (256,), (mats, np.int64(total), d_moff, d_lens, np.int32(upper),
                                                  np.int32(which)))


def _fill_tiled(k, args, n_max: int, count: int, span: int = NO_SPAN, over=None) -> None:
    """The tile diagonals D = 0 .. of the tiled fill; with a span limit only those whose nearest cell to the
    diagonal (j - i = D·T - T + 1) lies within it (zk_fin leaves the cells beyond it alone). ``over``: a device
    int32 array of ``count`` zeros where zk_fin_lanes with ZF_AUX16 marks the sequences whose values leave its
    16-bit range (None: one of the fill's own, not read)."""
    T = TILE
    if over is None:
        import cupy
        over = cupy.zeros(count, dtype=cupy.int32)
    nt = (n_max + T - 1) // T
    mid_threads = (T // 4) ** 2
    for D in range(min(nt, (span + T - 2) // T + 1)):
        tiles = nt - D
        if D >= 2:
            splits = _mid_splits(D, tiles, count)
            group = _mid_group(D, tiles, count, splits)
            k["zk_mid"]((-(-tiles // group) * splits, count), (mid_threads,),
                        args + (np.int32(0), np.int32(D), np.int32(splits), np.int32(group)))
        if FIN_KERNEL == "zk_fin_lanes" and T == 32:
            k["zk_fin_lanes"]((tiles, count), (32 * FIN_LANES_WARPS,), args + (np.int32(0), np.int32(D), over),
                              shared_mem=k.get("zk_fin_lanes_shared", FIN_LANES_SHARED))
        else:                                  # zk_fin_lanes needs TILE 32: zk_fin_flat at other sizes
            fin = "zk_fin_flat" if FIN_KERNEL == "zk_fin_lanes" else FIN_KERNEL
            k[fin]((tiles, count), (32 * FIN_WARPS,), args + (np.int32(0), np.int32(D)))



_kept = threading.local()       # this thread's kept matrices of the tiled fill and codes' table (_codes), by GPU


def _matrices(words: int):
    """One int32 device array of at least ``words`` words holding the seven matrices of a group, kept for the next
    group on this thread and GPU: allocating and freeing tens of GB per call cost a sixth of a 2,048-sequence batch
    at 601 nt. Counted as free by memory_budget (cached_bytes); release() gives it back."""
    import cupy

    held = _kept.__dict__.setdefault("matrices", {})
    dev = loader._device_id()
    buf = held.get(dev)
    if buf is None or buf.size < words:
        buf = None
        held.pop(dev, None)                                # the old one and the pool's free blocks back to the
        cupy.get_default_memory_pool().free_all_blocks()   # driver: the new block wants tens of GB in one piece
        buf = cupy.empty(words, dtype=cupy.int32)
        held[dev] = buf
    return buf


def cached_bytes() -> int:
    """Bytes of the tiled fill's kept matrices on the current GPU (this thread)."""
    buf = _kept.__dict__.get("matrices", {}).get(loader._device_id())
    return 0 if buf is None else int(buf.nbytes)


def memory_budget() -> int:
    """Bytes a batch may take on the current GPU (engine interface): rnapipe.gpu.devices.memory_budget, the kept
    matrices counted as free."""
    return devices.memory_budget(cached_bytes())


def release() -> None:
    """Give this thread's kept matrices on the current GPU back to the driver (fold_batch does this before the
    short kernels' groups and when a group runs out of memory): left in CuPy's pool, the short kernels' smaller
    allocations would be cut from its block, and the next group's one block of tens of GB would not fit."""
    import cupy

    if _kept.__dict__.get("matrices", {}).pop(loader._device_id(), None) is not None:
        cupy.get_default_memory_pool().free_all_blocks()


def _codes(seqs: list[str]):
    """The padded codes of every sequence on the device, one after another (each n + 2 codes, 0 at both ends, as
    the offsets of _offsets(n + 2) lay them out): the text goes over as it is and a table lookup on the device
    makes the codes (bytes.translate on the host takes 2-3 ms of a 4,096-sequence batch at 601 nt, before the
    first tile can start)."""
    import cupy

    from ..alphabet import code_table

    dev = loader._device_id()
    lut = _kept.__dict__.setdefault("code_table", {}).get(dev)
    if lut is None:
        lut = _kept.code_table[dev] = cupy.asarray(code_table())
    text = np.frombuffer(("\0" + "\0\0".join(seqs) + "\0").encode("ascii"), dtype=np.uint8)
    return lut[cupy.asarray(text)]


def _offsets(sizes: np.ndarray) -> np.ndarray:
    out = np.zeros(len(sizes), dtype=np.int64)
    if len(sizes) > 1:
        out[1:] = np.cumsum(sizes[:-1], dtype=np.int64)
    return out


def _exterior_chunked(k, args, W, d_woff, total: int, n_max: int, count: int, span: int = NO_SPAN) -> None:
    """W in chunks of WCHUNK positions: zk_ext_cross (parallel, the i whose W[i-1] is known: from c0 - span + 1
    on), then zk_ext_seq."""
    import cupy
    Wpart = cupy.full(total, INF, dtype=cupy.int32)
    for c0 in range(1, n_max + 1, WCHUNK):
        m = c0 - max(1, c0 - span + 1) + 1          # rows i of the chunk's cross terms
        rows = max(8, -(-m // 4096))
        warps = -(-m // rows)
        k["zk_ext_cross"]((-(-warps // 8), count), (256,), args + (np.int32(0), W, d_woff, Wpart, np.int32(c0),
                                                                     np.int32(rows)))
        k["zk_ext_seq"]((count,), (32,), args + (np.int32(0), W, d_woff, Wpart, np.int32(c0)))


def _fold_group(seqs: list[str], model: Model, fill: str, host_traceback: bool,
                block_traceback: bool = False, shape: list | None = None,
                constraints: list[str] | None = None) -> list[tuple[int, str]]:
    """Fold sequences (non-empty, ordered longest first) in one batch on the current device; ``shape``: their
    SHAPE stacking terms (int32 per nucleotide), or None; ``constraints``: their constraint lines, or None. The
    tiled fill holds zk_fin_lanes' window in 16 bits (FIN_AUX16) where the model allows; the sequences whose
    values leave that range are folded again with it in int32."""
    aux16 = (FIN_AUX16 and fill == "tiled" and TILE == 32 and FIN_KERNEL == "zk_fin_lanes" and aux16_ok(model)
             and max(map(len, seqs)) <= FIN_AUX16_MAX_N)
    out, over = _fold_group_with(seqs, model, fill, host_traceback, block_traceback, shape, constraints, aux16)
    if over.size:
        def pick(xs):
            return None if xs is None else [xs[i] for i in over]
        again, _ = _fold_group_with(pick(seqs), model, fill, host_traceback, block_traceback, pick(shape),
                                    pick(constraints), False)
        for i, r in zip(over.tolist(), again):
            out[i] = r
    return out


def _fold_group_with(seqs: list[str], model: Model, fill: str, host_traceback: bool, block_traceback: bool,
                     shape: list | None, constraints: list[str] | None, aux16: bool):
    """_fold_group's one batch, zk_fin_lanes' window in 16 bits with ``aux16``: the results and the indices of the
    sequences whose values left that range (their results are not to be used)."""
    import cupy
    import cupyx

    import time
    t = time.perf_counter()
    lens = np.array([len(s) for s in seqs], dtype=np.int32)
    n_max = int(lens.max())
    span = span_of(model)
    count = len(seqs)
    N = lens.astype(np.int64) + 2
    total = int((N * N).sum())
    moff = _offsets(N * N)
    mats = _matrices(7 * total)
    if fill == "tiled" and not _tiled_ok(model, n_max):
        fill = "diag"
    vgate = fill == "tiled" and TILE == 32 and FIN_KERNEL == "zk_fin_lanes" and n_max <= AUX_VGATE_MAX_N
    k = _kernels(model, shape, constraints, aux16, vgate)
    d_lens = cupy.asarray(lens)
    d_moff = cupy.asarray(moff)
    # the INF fill first (tens of GB): the GPU writes while the host makes the rest below
    band = (FILL_BAND and fill == "tiled" and TILE == 32 and not rules_option(model) and constraints is None
            and span >= n_max)
    _inf_fill(k, mats, total, d_moff, d_lens, n_max, count, band, vgate)
    V, WM, WM1T, VI, V1N, VAU, VMX = (mats[m * total:(m + 1) * total] for m in range(7))
    P = table_for(model, n_max)
    soff = _offsets(N)
    woff = soff
    stoff = _offsets(3 * (3 * lens.astype(np.int64) + 8))
    d_S = _codes(seqs)
    d_soff = cupy.asarray(soff)
    args = (P, d_S, d_soff, d_lens, d_moff, V, WM, WM1T, VI, V1N, VAU, VMX)
    if shape is not None:                                  # ZK_SHAPE: the terms, laid out as the codes
        ss = np.zeros(int(N.sum()), dtype=np.int32)
        for s in range(count):
            ss[soff[s] + 1:soff[s] + 1 + int(lens[s])] = shape[s]
        args = args + (cupy.asarray(ss),)
    if constraints is not None:                            # ZK_HC: the words, laid out as the codes
        hc = hc_words(constraints, lens, soff, int(N.sum()), bool(model.enforce_constraint), span)
        span = int(hc[soff, 2].max())                      # the longest span any sequence's fill covers
        args = args + (cupy.asarray(hc.ravel()),)
    t = _phase("setup", t)
    over = cupy.zeros(count, dtype=cupy.int32)             # the sequences that leave ZF_AUX16's range
    if fill == "block":
        k["zk_fill_block"]((count,), (FILL_THREADS,), args + (np.int32(0),))
    elif fill == "tiled":
        _fill_tiled(k, args, n_max, count, span, over)
    else:
        threads = 32 * DIAG_WARPS
        for d in range(TURN + 1, min(n_max, span)):
            blocks = (n_max - d + DIAG_WARPS - 1) // DIAG_WARPS
            k["zk_fill_diag"]((blocks, count), (threads,), args + (np.int32(0), np.int32(d)))
    t = _phase("fill", t)
    W = cupy.zeros(int(N.sum()), dtype=cupy.int32)
    d_woff = cupy.asarray(woff)
    if fill == "tiled" and EXTERIOR_CHUNKED:
        _exterior_chunked(k, args, W, d_woff, int(N.sum()), n_max, count, span)
    else:
        ext_threads = 1024 if n_max > 2000 else (256 if n_max > 300 else 64)
        k["zk_exterior"]((count,), (ext_threads,), args + (np.int32(0), W, d_woff))
    t = _phase("exterior", t)
    if host_traceback:
        out = _host_traceback(seqs, model, lens, moff, woff, V, WM, W, shape, constraints)
        _phase("traceback", t)
        return out, (np.flatnonzero(over.get()) if aux16 else np.zeros(0, dtype=np.int64))
    stacks = cupy.zeros(int(stoff[-1] + 3 * (3 * int(lens[-1]) + 8)), dtype=cupy.int32)
    pts = cupy.zeros(int(N.sum()), dtype=cupy.int32)
    out = cupy.full(int(N.sum()), 10, dtype=cupy.uint8)    # each structure and two '\n' (the codes' layout)
    mfe = cupy.zeros(count, dtype=cupy.int32)
    status = cupy.zeros(count, dtype=cupy.int32)
    tb_args = args + (np.int32(0), np.int32(count), W, d_woff, stacks, cupy.asarray(stoff), pts, out, mfe, status)
    if block_traceback:
        k["zk_traceback_block"]((count,), (1024 if n_max > 3000 else 256,), tb_args)
    else:
        k["zk_traceback"](((count + 31) // 32,), (32,), tb_args)
    out_h = cupyx.empty_pinned(out.size, dtype=np.uint8)   # page-locked: the copy at the bus's rate
    out.get(out=out_h)
    mfe_h = mfe.get()
    bad = np.flatnonzero(status.get())
    _phase("traceback", t)
    over_h = np.flatnonzero(over.get()) if aux16 else np.zeros(0, dtype=np.int64)
    bad = np.setdiff1d(bad, over_h)                       # a value out of range may fail its traceback too
    if bad.size:
        raise RuntimeError(f"GPU Zuker traceback could not re-derive a stored value for {bad.size} sequence(s)")
    return list(zip(mfe_h.tolist(), str(memoryview(out_h), "ascii").split("\n\n")[:count])), over_h


def _gpu_model(options: dict) -> Model:
    """The model of ``options`` (the pairing rules included; SHAPE data and constraints are per-record data,
    no options: see fold_batch)."""
    return Model.from_options(options)


def _host_traceback(seqs, model, lens, moff, woff, V, WM, W, shape=None, constraints=None):
    """The CPU engine's traceback on matrices copied from the device (long sequences); the pair types it
    also reads (under the model's no_gu and max_bp_span, as the CPU engine's fill makes them) are made on the
    device too, and it is given the SHAPE stacking terms of ``shape`` (None: none) and, with ``constraints``, the
    pair types, unpaired runs and span of the CPU engine's own ``_hard_constraints``."""
    import cupy
    from ..cpu import zuker as cpu

    T = model.tables()
    table = np.array(E.PAIR_TYPE, dtype=np.int8)
    if model.no_gu:
        table[(table == 3) | (table == 4)] = 0
    pair = cupy.asarray(table)
    results = []
    for s, seq in enumerate(seqs):
        n = int(lens[s])
        N = n + 2
        span = min(span_of(model), n)
        a, b = int(moff[s]), int(moff[s]) + N * N
        Vh = V[a:b].get().reshape(N, N)
        WMh = WM[a:b].get().reshape(N, N)
        Wh = W[int(woff[s]):int(woff[s]) + n + 1].get().astype(np.int64)
        S = E.padded_codes(seq)
        Sd = cupy.asarray(S, dtype=cupy.int32)
        ptype = cupy.triu(pair[Sd[:, None], Sd[None, :]], TURN + 1)
        if span < n:
            ptype = cupy.tril(ptype, span - 1)          # j - i + 1 <= span
        UP, DN, SS, _ = cpu.free_runs(n)
        if shape is not None:
            SS = np.zeros(N, dtype=np.int64)
            SS[1:n + 1] = shape[s]
        ptype = np.ascontiguousarray(ptype.get(), dtype=np.int8)
        if constraints is not None:
            H = np.zeros(N, dtype=np.int8)
            H[1:n + 1] = cpu.HC_CODES[np.frombuffer(constraints[s].encode("ascii"), dtype=np.uint8)]
            UP, DN, span = cpu._hard_constraints(ptype, S, np.int64(n), H, bool(model.enforce_constraint),
                                                 bool(model.no_lp), np.int64(span))
        pt = cpu.traceback(T, S, n, Wh, Vh, WMh, ptype, UP, DN, SS, np.int64(span))
        results.append((int(Wh[n]), cpu.dot_bracket(pt, n).tobytes().decode("ascii")))
    return results


def short_max_n() -> int:
    """The longest sequence fold_batch gives the short kernels (without a forced fill): zs_fold_smem's limit on
    this GPU, or SHORT_MAX_N or zuker_short.MAX_N where lower (MAX_N 0: the short path is off). Beyond it the tiled
    fill, which is faster than zs_fold at every length zs_fold takes (benchmarks/RESULTS.md)."""
    top = min(zuker_short.smem_max_n(), zuker_short.MAX_N)
    return top if SHORT_MAX_N is None else min(top, SHORT_MAX_N)


def _plan(order, lens, budget: int, fill_override: str | None):
    """Consecutive groups of the longest-first order, as (fill kind, array of indices): one fill kind each, within
    budget and grid limits; a run of one kind in as many groups as filling each in turn needs, cut to about equal
    bytes (_balanced). Vectorised: a batch of a million short sequences plans in milliseconds, not a Python step
    per sequence."""
    order = np.asarray(order, dtype=np.int64)
    if order.size == 0:
        return []
    longest = int(lens[order[0]])
    top = zuker_short.MAX_N if fill_override == "short" else short_max_n()
    if (fill_override in (None, "short") and longest <= top and order.size <= MAX_BATCH
            and order.size * zuker_short.bytes_needed(longest) <= budget):
        return [("short", order)]                 # one group of short sequences: no step per length
    n = np.asarray(lens, dtype=np.int64)[order]
    names = ("short", "block", LONG_FILL)
    every = np.arange(int(n.max()) + 1, dtype=np.int64)     # kind and bytes by length, then gathered
    if fill_override:
        kind_of = np.zeros(every.size, dtype=np.int64)
        names = (fill_override,)
        need_of = zuker_short.bytes_needed(every) if fill_override == "short" else bytes_needed(every)
    else:
        kind_of = np.where(every <= top, 0, 2)
        need_of = np.where(kind_of == 0, zuker_short.bytes_needed(every), bytes_needed(every))
    kinds = kind_of[n]
    need = np.asarray(need_of, dtype=np.int64)[n]
    cuts = np.flatnonzero(np.diff(kinds)) + 1
    groups = []
    for a, b in zip(np.concatenate([[0], cuts]).tolist(), np.concatenate([cuts, [n.size]]).tolist()):
        total = np.cumsum(need[a:b])             # bytes of the run's first k + 1 sequences
        pos, used, run = a, 0, []
        while pos < b:
            fit = int(np.searchsorted(total, used + budget, side="right")) - (pos - a)
            m = max(1, min(fit, MAX_BATCH, b - pos))
            run.append((pos, m))
            used = int(total[pos - a + m - 1])
            pos += m
        groups += [(names[int(kinds[p])], order[p:p + m]) for p, m in _balanced(run, total, budget, a, b)]
    return groups


def _balanced(run: list, total: np.ndarray, budget: int, a: int, b: int) -> list:
    """The greedy groups (start, count) of one run [a, b) of sequences, re-cut into as many groups of about
    equal bytes (total: the run's cumulative bytes) where each still fits the budget and the grid: greedy leaves
    a small last group, whose launches fill a fraction of the GPU at every tile diagonal (2,500 nt: 14 % of the
    floor for 512 records in groups of 382 and 130, 17 % for one group of 256)."""
    k = len(run)
    if k < 2:
        return run
    ends = np.searchsorted(total, total[-1] * np.arange(1, k + 1) / k, side="left") + 1   # counts from a
    ends[-1] = b - a
    starts = np.concatenate([[0], ends[:-1]])
    sizes = ends - starts
    if (sizes < 1).any() or (sizes > MAX_BATCH).any():
        return run
    sums = total[ends - 1] - np.where(starts > 0, total[np.maximum(starts - 1, 0)], 0)
    if (sums > budget).any():
        return run
    return [(a + int(p), int(m)) for p, m in zip(starts, sizes)]


def fold_batch(sequences: list[str], variant: str, threads: int, options: dict,
               progress: Callable[[int], None] | None = None, constraints: list[str] | None = None,
               shape: list[np.ndarray] | None = None) -> list[tuple[int, str]]:
    """Fold every sequence (engine interface, see rnapipe.engines); options: temperature, dangles, params,
    the pairing rules (no_lp, no_gu, no_closing_gu, max_bp_span), and for tests ``gpu_fill`` ("short", "block",
    "diag" or "tiled": force one fill), ``host_traceback`` (bool) and ``gpu_traceback`` ("block" or "thread": force
    one GPU traceback), enforce_constraint. ``shape``: the SHAPE stacking
    pseudo-energies of each sequence (int32 dcal/mol per nucleotide, rnapipe.constraints.deigan), as the CPU
    engine takes them; None for none. ``constraints``: RNAfold's constraint line of each sequence (checked:
    rnapipe.constraints), as the CPU engine takes them; None for none."""
    import cupy

    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}")
    count = len(sequences)
    lens = np.fromiter(map(len, sequences), dtype=np.int64, count=count)
    # the per-record data's lengths checked in one vectorised pass: at 120 nt a Python test per record costs
    # a quarter of the batch's GPU time, before the first launch
    if constraints is not None:
        if len(constraints) != count:
            raise ValueError(f"{len(constraints)} constraint lines for {count} sequences")
        if not np.array_equal(np.fromiter(map(len, constraints), dtype=np.int64, count=count), lens):
            raise ValueError("a constraint line's length differs from its sequence's")
    if shape is not None:
        if len(shape) != count:
            raise ValueError(f"{len(shape)} SHAPE arrays for {count} sequences")
        if not np.array_equal(np.fromiter(map(len, shape), dtype=np.int64, count=count), lens):
            raise ValueError("a SHAPE array's length differs from its sequence's")
        # each array is copied into the kernels' int32 layout where its group is laid out (zuker_short.shape_layout,
        # _fold_group), no earlier: the terms are int32 per nucleotide (rnapipe.constraints.deigan)
    options = options or {}
    model = _gpu_model(options)
    fill_override = options.get("gpu_fill")
    force_host = bool(options.get("host_traceback", False))
    tb_override = options.get("gpu_traceback")
    if tb_override not in (None, "block", "thread"):
        raise ValueError(f"unknown gpu_traceback {tb_override!r}")
    in_order = count > 0 and lens[-1] > 0 and bool(np.all(lens[:-1] >= lens[1:]))
    if in_order:                                           # already longest first (one length, say): the
        order = np.arange(count)                           # groups are slices, no gathering or placing
    else:
        order = np.argsort(-lens, kind="stable")           # longest first, ties in input order
        order = order[lens[order] > 0]
    done: list[tuple[int, str]] = []                       # results in the order of `order`
    if order.size:
        budget = memory_budget()
        longest = int(lens[order[0]])
        if bytes_needed(longest) > budget:
            from ..errors import SequenceTooLongError
            raise SequenceTooLongError(f"a {longest}-nt sequence needs {bytes_needed(longest) / 2**30:.1f} "
                                       f"GiB of GPU memory; {budget / 2**30:.1f} GiB are free")
        pending = _plan(order, lens, budget, fill_override)
        # CuPy's pool keeps its blocks for the next batch (memory_budget counts them as free; release() gives them
        # back with the matrices)
        while pending:
            kind, idxs = pending.pop(0)
            block_tb = tb_override == "block" or (tb_override is None and BLOCK_TRACEBACK and kind in ("diag", "tiled"))
            host = force_host or (not block_tb and lens[idxs[0]] > HOST_TRACEBACK_N)
            if in_order and len(idxs) == count:               # the whole batch: no copy
                seqs, group_lens = sequences, lens
            elif in_order:
                seqs, group_lens = sequences[idxs[0]:idxs[-1] + 1], lens[idxs[0]:idxs[-1] + 1]
            else:
                seqs, group_lens = list(map(sequences.__getitem__, idxs.tolist())), lens[idxs]
            if in_order and len(idxs) == count:               # the whole batch: the caller's lists
                group_shape, group_hc = shape, constraints
            else:
                group_shape = None if shape is None else list(map(shape.__getitem__, idxs.tolist()))
                group_hc = None if constraints is None else list(map(constraints.__getitem__, idxs.tolist()))
            try:
                if kind == "short":
                    release()                          # the short kernels' pools want the memory
                    out = zuker_short.fold_group(seqs, model, group_lens, shape=group_shape,
                                                 constraints=group_hc)
                else:
                    zuker_short.release()              # the longer fills want the memory
                    out = _fold_group(seqs, model, kind, host, block_tb, group_shape, group_hc)
            except cupy.cuda.memory.OutOfMemoryError:
                if len(idxs) == 1:
                    raise
                log.warning("GPU out of memory on a batch of %d; splitting it", len(idxs))
                zuker_short.release()
                release()
                cupy.get_default_memory_pool().free_all_blocks()
                half = len(idxs) // 2
                pending[0:0] = [(kind, idxs[:half]), (kind, idxs[half:])]
                continue
            if done:
                done += out
            else:
                done = out                             # the first group's list, not a copy
            if progress is not None:
                progress(len(idxs))
    if len(done) != order.size:
        raise RuntimeError(f"GPU Zuker returned {len(done)} results for {order.size} sequences")
    if in_order:
        return done
    at = np.full(count, -1, dtype=np.int64)                # position of each input in `done`; -1: empty
    at[order] = np.arange(order.size)
    done.append((0, ""))
    return list(map(done.__getitem__, at.tolist()))


def fold_packed(text: bytes, lens, variant: str, threads: int, options: dict,
                progress: Callable[[int], None] | None = None) -> tuple[np.ndarray, bytes]:
    """:func:`fold_batch` for packed input: ``text`` holds the sequences in order, each followed by a
    newline, ``lens`` their lengths. Returns int64 MFEs and the structures in the same layout, with the
    same results as fold_batch, and no Python object per sequence on the short-sequence path."""
    import cupy

    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}")
    options = options or {}
    lens = np.asarray(lens, dtype=np.int64)
    count = len(lens)
    starts = packed.offsets(lens)
    if any(options.get(k) is not None for k in ("gpu_fill", "host_traceback", "gpu_traceback")) or count == 0:
        sequences = text[:-1].decode("ascii").split("\n") if count else []
        results = fold_batch(sequences, variant, threads, options, progress)
        return (np.array([r[0] for r in results], dtype=np.int64),
                "".join(r[1] + "\n" for r in results).encode("ascii"))
    model = _gpu_model(options)
    src = np.frombuffer(text, dtype=np.uint8)
    in_order = bool(lens[-1] > 0 and np.all(lens[:-1] >= lens[1:]))
    if in_order:
        order = np.arange(count, dtype=np.int64)
        slens, sstarts, stext = lens, starts, src
    else:
        order = np.argsort(-lens, kind="stable")
        order = order[lens[order] > 0]
        slens = lens[order]
        sstarts = packed.offsets(slens)
        stext = np.empty(int(sstarts[-1]), dtype=np.uint8)
        packed.gather(src, starts, lens, order, stext)
    energies = np.zeros(order.size, dtype=np.int64)
    structures = np.empty(int(sstarts[-1]), dtype=np.uint8)
    if order.size:
        budget = memory_budget()
        longest = int(slens[0])
        if bytes_needed(longest) > budget:
            from ..errors import SequenceTooLongError
            raise SequenceTooLongError(f"a {longest}-nt sequence needs {bytes_needed(longest) / 2**30:.1f} "
                                       f"GiB of GPU memory; {budget / 2**30:.1f} GiB are free")
        pending, at = [], 0                                # (kind, a, b): positions in the sorted order
        for kind, idxs in _plan(order, lens, budget, None):
            pending.append((kind, at, at + len(idxs)))
            at += len(idxs)
        # CuPy's pool keeps its blocks for the next batch, as in fold_batch
        while pending:
            kind, a, b = pending.pop(0)
            lo, hi = int(sstarts[a]), int(sstarts[b])
            block_tb = BLOCK_TRACEBACK and kind in ("diag", "tiled")
            host = not block_tb and slens[a] > HOST_TRACEBACK_N
            try:
                if kind == "short":
                    release()                          # the short kernels' pools want the memory
                    e, st = zuker_short.fold_group_packed(stext[lo:hi], slens[a:b], model)
                    energies[a:b] = e
                    structures[lo:hi] = st
                else:
                    zuker_short.release()              # the longer fills want the memory
                    seqs = bytes(stext[lo:hi - 1]).decode("ascii").split("\n")
                    out = _fold_group(seqs, model, kind, host, block_tb)
                    energies[a:b] = [r[0] for r in out]
                    structures[lo:hi] = np.frombuffer("".join(r[1] + "\n" for r in out).encode("ascii"),
                                                      dtype=np.uint8)
            except cupy.cuda.memory.OutOfMemoryError:
                if b - a == 1:
                    raise
                log.warning("GPU out of memory on a batch of %d; splitting it", b - a)
                zuker_short.release()
                release()
                cupy.get_default_memory_pool().free_all_blocks()
                half = (a + b) // 2
                pending[0:0] = [(kind, a, half), (kind, half, b)]
                continue
            if progress is not None:
                progress(b - a)
    if in_order:
        return energies, structures.tobytes()
    out_energies = np.zeros(count, dtype=np.int64)
    out_energies[order] = energies
    out = np.full(int(starts[-1]), 10, dtype=np.uint8)       # empty sequences: an empty line
    packed.scatter(structures, starts, lens, order, out)
    return out_energies, out.tobytes()
