"""Zuker MFE on the GPU for batches of short sequences (see rnapipe.gpu.zuker for the engine).

Interface used by rnapipe.gpu.zuker.fold_batch:

* ``MAX_N``: the longest sequence this path folds (0: the path is off and every batch goes to the
  general fills of rnapipe.gpu.zuker);
* ``bytes_needed(n)``: device memory one sequence of n nt takes in a batch;
* ``fold_group(seqs, model)``: fold non-empty sequences (longest first, each <= MAX_N) on the current
  device and return [(mfe, dot-bracket)] in the same order, identical to rnapipe.cpu.zuker.

Two kernels of ``kernels/zuker_short.cu``, one block per sequence, each doing the fill one anti-diagonal at
a time, the exterior loop W and the traceback (the CPU engine's order of tests, one warp searching 32
candidates at a time), and writing the MFE and the dot-bracket bytes:

* ``zs_fold_smem`` (sequences up to SMEM_MAX_N nt): the interior-loop auxiliaries VAU, V1N, VI live only in
  shared memory, as a ring of the last 32 diagonals; the interior loops are 8 fixed chunks of the (n1, n2)
  list, unrolled, lanes over the diagonal's pairable cells; the multiloop is one min-plus product per
  cell (VM read from it two diagonals later); the work of a diagonal goes round the warps as units.
* ``zs_fold`` (longer sequences): the same recursions with every matrix in global memory, several
  threads per cell when a diagonal is short, the interior loops from a table of offsets
  (:func:`loop_table`).

Matrices in global memory are diagonal-major (cell (i, j) at (j - i)·(n + 2) + i), so that neighbouring
threads read neighbouring words. The host side is vectorised: the sequences go over as one ASCII buffer
(the kernel encodes them), the structures come back as one buffer, no per-base Python loop; a large
group goes in chunks on two streams so that one chunk's host work overlaps the next one's kernel.
"""

from __future__ import annotations

import functools

import numpy as np

from ..model import Model

MAX_N = 600                    # verified identical to the CPU engine on an H100 (tests/test_zuker_gpu_short.py)
SMEM_MAX_N = 232               # zs_fold_smem up to here (0: zs_fold for every length); its shared memory
                               # (z2_shared_bytes) lets two blocks share one H100/H200 multiprocessor
KERNELS = "zuker_short.cu"
LT_ENTRIES = 96               # ZS_LT_ENTRIES of zuker_short.cuh: the loop table's header
LT_MAX = 496                  # ZS_LT_MAX: entries at most
MAXLOOP = 30

# Set by a benchmark or for debugging: "threads" forces the block size, "options" adds nvcc options,
# "events" (a list) receives the kernel's milliseconds per launch (CUDA events), "fill" fills the pool
# with a value before the launch, "keep" (any value) is replaced by the pool, status and results of the
# last launch, and a traceback failure is then not raised.
TUNING: dict = {}


def pool_words(n):
    """int32 words of device pool one sequence of n nt takes (zs_pool_words of zuker_short.cuh): V, WM,
    WM1, XT and the auxiliaries VAU, V1N, VI ((n+2)² each), the traceback stack (3n + 8)."""
    N = n + 2
    return 7 * N * N + 3 * n + 8


def smem_pool_words(n):
    """The same for zs_fold_smem (z2_pool_words): V, WM, WM1, XT and the stack; its auxiliaries stay in
    shared memory."""
    N = n + 2
    return 4 * N * N + 3 * n + 8


def _words(n):
    """Pool words of one sequence of n nt (an int or an array of them) in the kernel that folds it."""
    w = np.where(np.asarray(n) <= SMEM_MAX_N, smem_pool_words(n), pool_words(n))
    return int(w) if w.ndim == 0 else w


def bytes_needed(n: int) -> int:
    return 4 * _words(n) + 2 * n + 64


def threads_for(n_max: int) -> int:
    if "threads" in TUNING:
        return int(TUNING["threads"])
    if n_max <= 96:
        return 64
    if n_max <= 320:
        return 128
    return 256


def _shared_bytes(max_n: int) -> int:
    mn = max_n + 2
    return (4 * (LT_ENTRIES + 2 * LT_MAX + mn + 4) + 2 * 2 * mn + mn + 7) // 8 * 8


# zs_fold_smem's block size by the batch's longest sequence (measured on an H100, benchmarks/RESULTS.md):
# short sequences have few cells per diagonal, so more, smaller blocks share a multiprocessor.
SMEM_SMALL_N = 80


def _smem_launch(max_n: int) -> tuple[int, tuple[str, ...]]:
    if max_n <= SMEM_SMALL_N:
        return 128, ("-DZ2_MAX_THREADS=128", "-DZ2_MIN_BLOCKS=4")
    return 256, ()


def _smem_shared_bytes(max_n: int) -> int:
    """z2_shared_bytes of zuker_short.cu."""
    mn = max_n + 2
    return (4 * (485 + 3 + 8 + (3 * 32 + 11 + 4 + 2 + 2 + 1) * mn) + 2 * 2 * mn + mn + 7) // 8 * 8


def loop_table(T) -> np.ndarray:
    """The interior loops that read the auxiliaries (every (n1, n2), n1 + n2 <= 30, but the 11 with tables
    of their own), in zuker_short.cuh's layout: grouped by kind (0: bulge, VAU; 1: 1xn, V1N; 2: generic, VI),
    within a kind by s = n1 + n2; header: first entry of each kind, entries of kind k with s <= m; then
    (s, n1, size term) per entry, the size term being rnapipe.gpu.zuker.size_terms's."""
    from .zuker import SPECIAL_LOOPS, size_terms

    sz = size_terms(T)
    kinds: list[list[tuple[int, int, int]]] = [[], [], []]
    for s in range(MAXLOOP + 1):
        for n1 in range(s + 1):
            n2 = s - n1
            if (n1, n2) in SPECIAL_LOOPS:
                continue
            kinds[min(n1, n2, 2)].append((s, n1, int(sz[n1, n2])))
    header = np.zeros(LT_ENTRIES, dtype=np.int64)
    start = 0
    for k, entries in enumerate(kinds):
        header[k] = start
        sizes = np.array([e[0] for e in entries])
        for m in range(MAXLOOP + 1):
            header[3 + 31 * k + m] = int((sizes <= m).sum())
        start += len(entries)
    assert start <= LT_MAX
    flat = np.array([x for entries in kinds for e in entries for x in e], dtype=np.int64)
    return np.concatenate([header, flat]).astype(np.int32)


def _device_loop_table(model: Model):
    from . import loader
    return _loop_table_on(model, loader._device_id())      # one copy per GPU (--gpus)


@functools.lru_cache(maxsize=8)
def _loop_table_on(model: Model, device: int):
    import cupy
    with cupy.cuda.Device(device):
        return cupy.asarray(loop_table(model.tables()))


def _kernel(options: tuple[str, ...]):
    from . import loader
    return loader.function(KERNELS, "zs_fold", options)     # cached by the loader, per GPU


def fold_group(seqs: list[str], model: Model) -> list[tuple[int, str]]:
    """Fold non-empty sequences given longest first: those longer than SMEM_MAX_N with zs_fold, the rest
    with zs_fold_smem. Large groups go in chunks of CHUNK or more on two streams, so that the host's
    work on one chunk (sequences in, structures out) overlaps the next chunk's kernel."""
    count = len(seqs)
    lens = np.fromiter(map(len, seqs), dtype=np.int64, count=count)
    big = int(np.count_nonzero(lens > SMEM_MAX_N))
    parts = []
    for lo, hi, smem in ((0, big, False), (big, count, True)):
        step = max(CHUNK, -(-(hi - lo) // 4))
        parts += [(a, min(a + step, hi), smem) for a in range(lo, hi, step)]
    streams = _streams() if len(parts) > 1 else [None]
    out: list[tuple[int, str]] = []
    inflight = []
    for k, (a, b, smem) in enumerate(parts):
        inflight.append(_start(seqs[a:b], lens[a:b], model, smem, streams[k % len(streams)]))
        if len(inflight) == 2:
            out += _finish(inflight.pop(0))
    while inflight:
        out += _finish(inflight.pop(0))
    return out


CHUNK = 8192                  # sequences per launch at least, when a group is split for overlap


def _streams():
    from . import loader
    return _streams_on(loader._device_id())


@functools.lru_cache(maxsize=8)
def _streams_on(device: int):
    import cupy
    with cupy.cuda.Device(device):
        return [cupy.cuda.Stream(non_blocking=True) for _ in range(2)]


def size_entries(T) -> np.ndarray:
    """zs_fold_smem's size terms: SZ[n1][n2] of every (n1, n2) with n1 + n2 <= 30 but the 11 special ones
    (rnapipe.gpu.zuker.size_terms), in the kernel's loop order (z2_entry: by n1 + n2, then n1)."""
    from .zuker import INF, SPECIAL_LOOPS, size_terms

    sz = size_terms(T)
    out = [min(int(sz[n1, s - n1]), INF) for s in range(MAXLOOP + 1) for n1 in range(s + 1)
           if (n1, s - n1) not in SPECIAL_LOOPS]
    return np.array(out, dtype=np.int32)


@functools.lru_cache(maxsize=8)
def _size_entries_on(model: Model, device: int):
    import cupy
    with cupy.cuda.Device(device):
        return cupy.asarray(size_entries(model.tables()))


def _pinned(array: np.ndarray) -> np.ndarray:
    """A copy of array in page-locked host memory (so that copies to the device are asynchronous)."""
    import cupy
    mem = cupy.cuda.alloc_pinned_memory(max(array.nbytes, 1))
    out = np.frombuffer(mem, dtype=array.dtype, count=array.size)
    out[...] = array
    return out


def _start(seqs: list[str], lens: np.ndarray, model: Model, smem: bool, stream) -> dict:
    """Copy one chunk to the device and launch its kernel on stream (None: the current one); the result
    is collected by _finish."""
    import contextlib

    import cupy

    from . import loader
    from .zuker import _table_for

    count = len(seqs)
    n_max = int(lens.max())
    if n_max > 2000:
        raise ValueError("zuker_short folds sequences of up to 2,000 nt")
    ends = np.cumsum(lens)
    soff = ends - lens
    words = smem_pool_words(lens) if smem else pool_words(lens)
    poff = np.cumsum(words) - words
    P = _table_for(model, n_max)
    extra_table = _size_entries_on(model, loader._device_id()) if smem else _device_loop_table(model)
    if stream is not None:                # tables just made on the default stream must be there first
        cupy.cuda.Stream.null.synchronize()
    job = {"count": count, "soff": soff, "ends": ends, "poff": poff, "stream": stream}
    with stream if stream is not None else contextlib.nullcontext():
        host_in = [_pinned(np.frombuffer("".join(seqs).encode("ascii"), dtype=np.uint8)), _pinned(soff),
                   _pinned(lens.astype(np.int32)), _pinned(poff)]
        dev_in = [cupy.empty(x.shape, dtype=x.dtype) for x in host_in]
        for d, h in zip(dev_in, host_in):
            d.set(h, stream=stream)
        pool = cupy.empty(int(words.sum()), dtype=cupy.int32)
        if "fill" in TUNING:                  # debugging: a known value where the kernel writes nothing
            pool.fill(TUNING["fill"])
        out = cupy.empty(int(ends[-1]), dtype=cupy.uint8)
        mfe = cupy.empty(count, dtype=cupy.int32)
        status = cupy.empty(count, dtype=cupy.int32)
        options = tuple(TUNING.get("options", ()))
        if smem:
            shared = _smem_shared_bytes(n_max)
            if "smem_threads" in TUNING:
                threads = int(TUNING["smem_threads"])
            else:
                threads, more = _smem_launch(n_max)
                options = options + more
            kernel = loader.function(KERNELS, "zs_fold_smem", options, dynamic_shared=shared)
        else:
            shared = _shared_bytes(n_max)
            kernel = _kernel(options)
            threads = threads_for(n_max)
        args = (P, extra_table, *dev_in, pool, out, mfe, status, np.int32(n_max))
        events = TUNING.get("events")
        if events is not None:
            job["events"] = (cupy.cuda.Event(), cupy.cuda.Event())
            job["events"][0].record()
        kernel((count,), (threads,), args, shared_mem=shared)
        if events is not None:
            job["events"][1].record()
        job["host_out"] = [np.empty(int(ends[-1]), dtype=np.uint8), np.empty(count, dtype=np.int32),
                           np.empty(count, dtype=np.int32)]
        job["host_out"] = [_pinned(x) for x in job["host_out"]]
        for d, h in zip((out, mfe, status), job["host_out"]):
            try:
                d.get(stream=stream, out=h, blocking=False)     # _finish waits for the stream
            except TypeError:                                   # a CuPy without `blocking`
                d.get(stream=stream, out=h)
        job["keep"] = (host_in, dev_in, pool, out, mfe, status)       # alive until the copies are done
    return job


def _finish(job: dict) -> list[tuple[int, str]]:
    """Wait for a chunk started by _start and return its (MFE, dot-bracket) in order."""
    import cupy

    stream = job["stream"]
    if stream is not None:
        stream.synchronize()
    else:
        cupy.cuda.get_current_stream().synchronize()
    if "events" in job:
        TUNING.setdefault("events", []).append(cupy.cuda.get_elapsed_time(*job["events"]))
    text_b, mfe, status = job["host_out"]
    text = text_b.tobytes().decode("ascii")
    energies = mfe.tolist()
    bad = int(np.count_nonzero(status))
    if "keep" in TUNING:                  # debugging: the matrices and status, no error raised
        TUNING["keep"] = {"pool": job["keep"][2].get(), "poff": job["poff"], "status": status.copy(),
                          "mfe": energies, "text": text}
        bad = 0
    del job["keep"]
    if bad:
        raise RuntimeError(f"GPU Zuker traceback could not re-derive a stored value for {bad} sequence(s)")
    return [(e, text[a:b]) for e, a, b in zip(energies, job["soff"].tolist(), job["ends"].tolist())]
