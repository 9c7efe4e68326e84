"""Nussinov on the GPU: the variants of Chang et al., Li, Ranka & Sahni, Four-Russians, and our own.

Variants (``--variant``), all exact and all with traceback:

``dpx`` (default)
    Li et al.'s tiled order with 16-bit scores, two cells per 32-bit word and Hopper's DPX
    ``__viaddmax_u16x2`` (max(a + b, c) on both halves in one instruction), the k range of a
    block-diagonal split over several blocks when it has few tiles; traceback on the device.
``tiled``
    Li et al.: triangular diagonal blocks, square blocks by block-diagonal, register-blocked maxKernel,
    32-bit scores.
``packed``
    As ``dpx`` but only the upper triangle of tiles is stored (about half the memory, for the largest n).
``chang``
    Chang et al.: one launch per anti-diagonal, initial / middle / final kernels (thread, warp, block per
    cell), mirrored lower triangle so both operands are read along rows.
``four-russians``
    Groups of 8 split points replaced by one lookup in a table over all pairs of difference vectors
    (horizontal vectors row-major, vertical vectors per column); one launch per anti-diagonal, one warp
    per cell, like ``chang``.

Many short sequences (up to ``BATCH_MAX_N``) go through a batched kernel, one block per sequence with
its whole matrix in shared memory, when the default variant is used (``options['batched']`` overrides).
"""

from __future__ import annotations

import logging
import math
import time
from typing import Callable

import numpy as np

from .. import config
from ..alphabet import encode
from . import loader
from .devices import memory_budget  # noqa: F401  (memory_budget: engine interface)

log = logging.getLogger(__name__)

VARIANTS = ("dpx", "tiled", "packed", "chang", "four-russians")

TILE = 128                    # must equal NUSS_TILE in kernels/nussinov_common.cuh
BATCH_MAX_N = 448             # whole byte matrix in shared memory (448^2 B); scores <= 224 fit a byte
U16_MAX_N = 131_071           # 16-bit cells: at most 65,535 pairs
FIN_THREADS = 1024            # FIN_THREADS in the .cu: diag_tiles and finish_tiles blocks
FR_Q = 8                      # group size of the GPU Four-Russians kernel (FR_Q in nussinov_fr.cu)

_TILED = "nussinov_tiled.cu"
_CELL = {np.uint16: "u16", np.int32: "int"}


def _tiled_names() -> tuple[str, ...]:
    names = []
    for cell in ("u16", "int"):
        for packed in ("false", "true"):
            for kern in ("outer_tiles", "diag_tiles", "finish_tiles", "traceback"):
                names.append(f"{kern}<{cell},{packed}>")
    return tuple(names)


def _outer_shape(dtype) -> tuple[int, int]:
    """(threads, 32-bit words per tile row) of outer_tiles for a cell type (OuterShape in the .cu)."""
    cpw = 2 if dtype == np.uint16 else 1
    words_row = TILE // cpw
    return (words_row // 8) * (TILE // 8), words_row


def _tiled_plan(n: int, variant: str):
    """(cell dtype, packed layout, split-k) for a tiled variant at length n."""
    small = n <= U16_MAX_N
    if variant == "tiled":
        return np.int32, False, False
    if variant == "packed":
        return (np.uint16 if small else np.int32), True, True
    return (np.uint16 if small else np.int32), not small, True      # dpx: beyond 16 bits, pack to fit


def _matrix_bytes(n: int, dtype, packed: bool) -> int:
    nt = max(1, math.ceil(n / TILE))
    cells = nt * (nt + 1) // 2 * TILE * TILE if packed else (nt * TILE) ** 2
    return cells * np.dtype(dtype).itemsize


def bytes_needed(n: int, variant: str) -> int:
    """GPU memory for one sequence of length n (matrix, scratch, vectors)."""
    if variant in ("chang", "four-russians"):
        extra = 2 * n * (n // FR_Q + 1) if variant == "four-russians" else 0
        return 4 * n * n + extra + 16 * n + (1 << 20)
    dtype, packed, _ = _tiled_plan(n, variant)
    slots = max(1, math.ceil(n / TILE)) + 1024
    return _matrix_bytes(n, dtype, packed) + slots * TILE * TILE * 4 + 16 * n + (1 << 20)


def _sm_count() -> int:
    import cupy
    return cupy.cuda.Device().attributes["MultiProcessorCount"]


def _device_seq(codes: np.ndarray, length: int):
    import cupy
    seq = cupy.zeros(length, dtype=cupy.int8)
    if len(codes):
        seq[: len(codes)] = cupy.asarray(codes, dtype=cupy.int8)
    return seq


def _traceback(kernel, C, seq, n: int, N: int, m: int, args_prefix=()) -> str:
    import cupy
    stack = cupy.empty(2 * (n + 4), dtype=cupy.int32)
    out = cupy.full(max(n, 1), ord("."), dtype=cupy.uint8)
    status = cupy.zeros(1, dtype=cupy.int32)
    kernel((1,), (1024,), (C, seq, np.int32(n), np.int32(N), np.int32(m), stack, out, status))
    if int(status.get()[0]) != 0:
        raise RuntimeError("GPU Nussinov traceback found an inconsistent matrix (a bug: please report it)")
    return out.get()[:n].tobytes().decode("ascii")


def _fold_tiled(codes: np.ndarray, variant: str, m: int, stats: dict | None):
    import cupy
    n = len(codes)
    dtype, packed, split = _tiled_plan(n, variant)
    cell, pk = _CELL[dtype], "true" if packed else "false"
    names = _tiled_names()
    threads, words_row = _outer_shape(dtype)
    log.debug("nussinov %s: n=%d, %s cells, %s layout", variant, n, cell, "packed" if packed else "full")
    outer_smem = TILE * TILE * 4 + TILE * TILE * np.dtype(dtype).itemsize
    diag_smem = TILE * (TILE + 1) * 4                   # TP in the .cu
    fin_smem = (3 * TILE * (TILE + 7) + 2 * TILE + 1) * 4   # TF in the .cu
    outer = loader.function(_TILED, f"outer_tiles<{cell},{pk}>", (), names, outer_smem)
    diag = loader.function(_TILED, f"diag_tiles<{cell},{pk}>", (), names, diag_smem)
    finish = loader.function(_TILED, f"finish_tiles<{cell},{pk}>", (), names, fin_smem)
    trace = loader.function(_TILED, f"traceback<{cell},{pk}>", (), names)

    nt = max(1, math.ceil(n / TILE))
    N = nt * TILE
    seq = _device_seq(codes, N)
    C = cupy.empty(_matrix_bytes(n, dtype, packed) // np.dtype(dtype).itemsize, dtype=dtype)
    # outer_tiles keeps two blocks per SM resident for 16-bit cells, one for 32-bit
    target = (2 if dtype == np.uint16 else 1) * 2 * _sm_count() if split else 0
    slots_max = nt + target
    partial = cupy.empty(slots_max * TILE * words_row, dtype=cupy.uint32)
    N32, m32 = np.int32(N), np.int32(m)

    profile = stats is not None and stats.get("profile")
    events: list = []

    def mark(kind):
        if profile:
            ev = cupy.cuda.Event()
            ev.record()
            events.append((kind, ev))

    t0 = time.perf_counter()
    mark("diag")
    diag((nt,), (FIN_THREADS,), (C, seq, N32, m32), shared_mem=diag_smem)
    mark("outer")
    for d in range(1, nt):
        tiles = nt - d
        splits = 1
        if d >= 2:
            ktiles = d - 1
            splits = min(ktiles, max(1, -(-target // tiles))) if split else 1
            kper = -(-ktiles // splits)
            splits = -(-ktiles // kper)
            outer((tiles * splits,), (threads,), (C, N32, np.int32(d), np.int32(splits), np.int32(kper), partial),
                  shared_mem=outer_smem)
        mark("finish")
        finish((tiles,), (FIN_THREADS,), (C, seq, N32, m32, np.int32(d), np.int32(splits), partial),
               shared_mem=fin_smem)
        mark("outer")
    cupy.cuda.Device().synchronize()
    t1 = time.perf_counter()
    if profile:
        spent: dict = {}
        for (kind, a), (_, b) in zip(events, events[1:]):
            spent[kind] = spent.get(kind, 0.0) + cupy.cuda.get_elapsed_time(a, b) / 1e3
        stats["kernels"] = spent
    if packed:
        J = (n - 1) // TILE
        score_at = (J * TILE) * TILE + (n - 1) % TILE        # tile (0,J) has rank J
    else:
        score_at = n - 1
    score = int(C[score_at].get())
    structure = _traceback(trace, C, seq, n, N, m)
    t2 = time.perf_counter()
    if stats is not None:
        stats.update(fill=t1 - t0, traceback=t2 - t1, cell_bytes=int(C.nbytes), cell="u16" if dtype == np.uint16 else "i32",
                     packed=packed)
    del C, partial
    return score, structure


def _fold_chang(codes: np.ndarray, m: int, stats: dict | None):
    import cupy
    n = len(codes)
    initial = loader.function("nussinov_chang.cu", "chang_initial")
    middle = loader.function("nussinov_chang.cu", "chang_middle")
    final = loader.function("nussinov_chang.cu", "chang_final")
    trace = loader.function("nussinov_chang.cu", "chang_traceback")
    C = cupy.zeros((n, n), dtype=cupy.int32)
    seq = _device_seq(codes, n)
    N = np.int32(n)
    many = 8 * _sm_count()
    t0 = time.perf_counter()
    for d in range(m + 1, n):
        cells = n - d
        if d < 32:
            initial((-(-cells // 256),), (256,), (C, seq, N, np.int32(d)))
        elif cells >= many:
            middle((-(-cells // 8),), (256,), (C, seq, N, np.int32(d)))
        else:
            final((cells,), (256,), (C, seq, N, np.int32(d)))
    cupy.cuda.Device().synchronize()
    t1 = time.perf_counter()
    score = int(C[0, n - 1].get()) if n else 0
    structure = _traceback(trace, C, seq, n, n, m)
    t2 = time.perf_counter()
    if stats is not None:
        stats.update(fill=t1 - t0, traceback=t2 - t1, cell_bytes=int(C.nbytes))
    return score, structure


def fr_table(q: int = FR_Q) -> np.ndarray:
    """R[x, y] = max_{p < q} sum_{t=1..p} (x_t - y_t) over (q-1)-bit difference vectors x, y (bit t-1 = x_t)."""
    bits = q - 1
    vec = (np.arange(1 << bits)[:, None] >> np.arange(bits)[None, :]) & 1          # [vector, t-1]
    prefix = np.concatenate([np.zeros((1 << bits, 1), np.int64), np.cumsum(vec, axis=1)], axis=1)
    best = np.max(prefix[:, None, :] - prefix[None, :, :], axis=2)
    return best.astype(np.uint8)


def _fold_four_russians(codes: np.ndarray, m: int, stats: dict | None):
    import cupy
    n = len(codes)
    kern = loader.function("nussinov_fr.cu", "fr_diagonal")
    trace = loader.function("nussinov_fr.cu", "fr_traceback")
    ng = n // FR_Q + 1
    C = cupy.zeros((n, n), dtype=cupy.int32)
    H = cupy.zeros((n, ng), dtype=cupy.uint8)
    V = cupy.zeros((n, ng), dtype=cupy.uint8)
    R = cupy.asarray(fr_table(FR_Q).ravel())
    seq = _device_seq(codes, n)
    N, m32, NG = np.int32(n), np.int32(m), np.int32(ng)
    t0 = time.perf_counter()
    for d in range(m + 1, n):
        cells = n - d
        kern((-(-cells // 8),), (256,), (C, seq, N, m32, np.int32(d), H, V, NG, R))
    cupy.cuda.Device().synchronize()
    t1 = time.perf_counter()
    score = int(C[0, n - 1].get()) if n else 0
    structure = _traceback(trace, C, seq, n, n, m)
    t2 = time.perf_counter()
    if stats is not None:
        stats.update(fill=t1 - t0, traceback=t2 - t1, cell_bytes=int(C.nbytes))
    return score, structure


def fold_one(sequence: str, variant: str = VARIANTS[0], min_loop: int = config.NUSSINOV_MIN_LOOP,
             stats: dict | None = None) -> tuple[int, str]:
    """Fold one sequence with one variant (no batching); ``stats`` receives fill/traceback seconds."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown GPU Nussinov variant {variant!r}")
    codes = encode(sequence)
    n = len(codes)
    if n == 0:
        return 0, ""
    if variant == "chang":
        result = _fold_chang(codes, min_loop, stats)
    elif variant == "four-russians":
        result = _fold_four_russians(codes, min_loop, stats)
    else:
        result = _fold_tiled(codes, variant, min_loop, stats)
    return result


BATCH_CHUNK = 8192            # sequences per chunk: the host prepares and collects one chunk while
                              # the GPU folds the next


def _batch_prepare(sequences: list[str]):
    import cupy
    count = len(sequences)
    lengths = np.fromiter(map(len, sequences), dtype=np.int32, count=count)
    if lengths.max() > BATCH_MAX_N:
        raise ValueError(f"batched mode takes sequences of at most {BATCH_MAX_N} nt")
    offsets = np.zeros(count, dtype=np.int64)
    np.cumsum(lengths[:-1], out=offsets[1:])
    text = "".join(sequences).encode("ascii")    # the kernel encodes A/C/G/U itself
    total = max(1, len(text))
    npads = np.maximum(32, (lengths + 31) // 32 * 32)
    order = np.argsort(-npads, kind="stable").astype(np.int32)      # longest bucket launched first
    sorted_pads = npads[order]
    bounds = np.flatnonzero(np.diff(sorted_pads)) + 1
    buckets = [(int(a), int(b), int(sorted_pads[a])) for a, b in
               zip(np.concatenate([[0], bounds]), np.concatenate([bounds, [count]]))]
    stream = cupy.cuda.Stream(non_blocking=True)
    import cupyx
    # page-locked, so that the copies run asynchronously; a power-of-two size, so that CuPy's pinned
    # pool hands the same blocks back on the next call instead of page-locking new memory (slow)
    capacity = 1 << (total - 1).bit_length()
    pinned = cupyx.empty_pinned(capacity, dtype=np.uint8)
    pinned[: len(text)] = np.frombuffer(text, dtype=np.uint8)
    with stream:
        d_text = cupy.empty(capacity, dtype=cupy.uint8)
        d_text.set(pinned, stream=stream)
        dev = (d_text, cupy.asarray(offsets), cupy.asarray(lengths), cupy.asarray(order),
               cupy.empty(capacity, dtype=cupy.uint8), cupy.empty(count, dtype=cupy.int32))
    return stream, pinned, dev, buckets, offsets, lengths


def _batch_launch(kern, stream, dev, buckets, min_loop):
    import cupy
    d_text, d_off, d_len, d_order, d_out, d_scores = dev
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    with stream:
        start.record(stream)
        for a, b, npad in buckets:
            smem = npad * (npad + 8) + npad + 4 * 2 * (npad // 2 + 2)
            kern((b - a,), (npad,), (d_text, d_off, d_len, d_order[a:b], np.int32(npad), np.int32(min_loop),
                                      d_out, d_scores), shared_mem=smem)
        stop.record(stream)
    return start, stop


def _batch_collect(stream, pinned, dev, offsets, lengths):
    d_out, d_scores = dev[4], dev[5]
    d_out.get(stream=stream, out=pinned)
    scores = d_scores.get(stream=stream)
    stream.synchronize()
    if scores.size and scores.min() < 0:
        raise RuntimeError("GPU batched Nussinov traceback found an inconsistent matrix (a bug: please report it)")
    text = str(memoryview(pinned)[: int(lengths.sum())], "ascii")
    ends = (offsets + lengths).tolist()
    return list(zip(scores.tolist(), map(text.__getitem__, map(slice, offsets.tolist(), ends))))


def fold_short(sequences: list[str], min_loop: int = config.NUSSINOV_MIN_LOOP,
               stats: dict | None = None) -> list[tuple[int, str]]:
    """Batched mode: every sequence (at most BATCH_MAX_N nt) folded by one block of its own.

    Chunks of BATCH_CHUNK sequences are pipelined: while the GPU folds chunk c, the host prepares
    chunk c+1 and collects chunk c-1. ``stats['kernel']`` receives the GPU time of the kernels.
    """
    if not sequences:
        return []
    kern = loader.function("nussinov_batch.cu", "nussinov_batch", (), (), 220 * 1024)
    results: list = []
    pending = None
    events = []
    for c0 in range(0, len(sequences), BATCH_CHUNK):
        stream, pinned, dev, buckets, offsets, lengths = _batch_prepare(sequences[c0:c0 + BATCH_CHUNK])
        events.append(_batch_launch(kern, stream, dev, buckets, min_loop))
        if pending is not None:
            results.extend(_batch_collect(*pending))
        pending = (stream, pinned, dev, offsets, lengths)
    results.extend(_batch_collect(*pending))
    if stats is not None:
        import cupy
        stats["kernel"] = sum(cupy.cuda.get_elapsed_time(a, b) for a, b in events) / 1e3
    return results


def fold_batch(sequences: list[str], variant: str, threads: int, options: dict,
               progress: Callable[[int], None] | None = None) -> list[tuple[int, str]]:
    """Engine entry point (see rnapipe.engines): (pairs, dot-bracket) per sequence, in input order."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown GPU Nussinov variant {variant!r}")
    m = int(options.get("min_loop", config.NUSSINOV_MIN_LOOP))
    batched = bool(options.get("batched", variant == VARIANTS[0]))
    results: list = [None] * len(sequences)
    short = [k for k, s in enumerate(sequences) if len(s) <= BATCH_MAX_N] if batched else []
    if short:
        for k, res in zip(short, fold_short([sequences[k] for k in short], m)):
            results[k] = res
        if progress is not None:
            progress(len(short))
    for k in sorted((k for k in range(len(sequences)) if results[k] is None), key=lambda k: -len(sequences[k])):
        results[k] = fold_one(sequences[k], variant, m)
        if progress is not None:
            progress(1)
    return results
