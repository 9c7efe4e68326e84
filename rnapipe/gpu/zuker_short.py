"""Zuker MFE on the GPU for batches of short sequences (see rnapipe.gpu.zuker for the engine).

Interface used by rnapipe.gpu.zuker.fold_batch:

* ``MAX_N``: the longest sequence this path folds (0: the path is off and every batch goes to the
  general fills of rnapipe.gpu.zuker);
* ``bytes_needed(n)``: device memory one sequence of n nt takes in a batch;
* ``fold_group(seqs, model, lens=None, shape=None)``: fold non-empty sequences (longest first, each <= MAX_N),
  with their SHAPE stacking terms if ``shape`` is given, on the current device and return [(mfe, dot-bracket)]
  in the same order, identical to rnapipe.cpu.zuker.

Two kernels of ``kernels/zuker_short.cu``, one block per sequence (or two short ones), each doing the fill
one anti-diagonal at a time, the exterior loop W and the traceback (the CPU engine's order of tests, one
warp searching 32 candidates at a time), and writing the MFE and the dot-bracket bytes:

* ``zs_fold_smem`` (sequences up to :func:`smem_max_n` nt): the interior-loop auxiliaries VAU, V1N, VI live only in
  shared memory, as a ring of the last 32 diagonals (int16 where the model allows: a value out of its
  range sends the sequence back to the int32 ring, so results stay exact); the interior loops are 8 fixed
  chunks of the (n1, n2) list, unrolled, lanes over the diagonal's pairable cells; the multiloop is one
  min-plus product per cell (VM read from it two diagonals later), its lanes over (cell, split points)
  pairs; the work of a diagonal goes round the warps as units. Short sequences share a block two at a
  time (SMEM_LAUNCH16), so that the units with lanes over pairable cells serve both. Its traceback is a
  kernel of its own, ``zs_tb_smem``, one warp per sequence: the fill's blocks (large in shared memory)
  leave sooner, and the traceback's dependent loads overlap across many more warps.
* ``zs_fold`` (longer sequences): the same recursions with every matrix in global memory, several
  threads per cell when a diagonal is short, the interior loops from a table of offsets
  (:func:`loop_table`).

The model's pairing rules are applied as rnapipe.gpu.zuker says, by the same kernels built with ``-DZK_RULES``
(where the model has one on): the cells that may pair under them make the diagonals' lists, and with no_lp XT's
unused triangle holds CC (zuker_short.cuh). Both kernels still fill every cell of a sequence under max_bp_span
(at most 600 nt here); those beyond the span cannot pair. SHAPE data, likewise, by the kernels built with
``-DZK_SHAPE``, which take one more argument: the chunk's stacking terms (:func:`shape_layout`, copied with the
chunk), N = n + 2 int32 words per sequence at the sequence's text offset plus its index (each sequence's text takes
n + 1 bytes). Hard constraints by the
kernels built with ``-DZK_HC -DZK_HC16``, likewise: one more argument (after the SHAPE terms, where both), the
chunk's per-position words (zuker_core.cuh, ZkHc; four int16 a position, laid out as the SHAPE terms), which
``zs_hc_words`` makes on the device from the chunk's constraint lines (copied with its text, laid out as it) before
the fill (zs_fold_smem copies its block's words to shared memory first, HC_SMEM); zs_fold's interior loops test the (n1, n2) of the loop table's entries against the unpaired runs,
zs_fold_smem's chunks theirs (known at compile time) against each cell's under --enforceConstraint (the only case
where a run can be shorter than a loop: its build has the bounded chunks only, the others the unbounded ones), and
its unpaired WMB step takes i only where it may stay unpaired.

Matrices in global memory are diagonal-major (cell (i, j) at (j - i)·(n + 2) + i), so that neighbouring
threads read neighbouring words. The host side is vectorised: the sequences go over as one ASCII buffer
(the kernel encodes them), the structures come back as one buffer, one newline apart, and are split by
str.split, no per-base or per-sequence slicing in Python; a large group goes in chunks (small ones first
and last) on STREAMS streams, all launched at once and collected as they finish, so that the host's work on
one chunk overlaps the kernels of the next. Each stream's chunks share one device array (matrices, then
the chunk's input and output), kept by the calling thread for its next group (:func:`release` gives it
back; fold_batch does before the longer sequences' fills). Per chunk the host does little: the offsets of
every sequence's text and matrices are computed once per group (:class:`_Group`), the text is encoded and
the structures decoded 1,024 sequences at a time (a large temporary is a fresh mapping from the C
allocator: page faults), copies and launches go straight to the runtime and the driver with raw
addresses (CuPy's array views and kernel call cost the host more than the call itself).
"""

from __future__ import annotations

import functools
import threading

import numpy as np

from ..model import Model
from . import loader
from .zuker_tables import INF, SPECIAL_LOOPS, hc_option, rules_option, shape_option, size_terms, span_of, table_for

MAX_N = 600                    # verified identical to the CPU engine on an H100 (tests/test_zuker_gpu_short.py)
SMEM_MAX_N = 500               # zs_fold_smem up to here at most (0: zs_fold for every length); less on a GPU
                               # whose shared memory per block cannot hold one sequence's int32 ring
                               # (smem_max_n: the ring a sequence goes back to when the int16 one overflows)
KERNELS = "zuker_short.cu"
LT_ENTRIES = 96               # ZS_LT_ENTRIES of zuker_short.cuh: the loop table's header
LT_MAX = 496                  # ZS_LT_MAX: entries at most
MAXLOOP = 30

# Set by a benchmark or for debugging: "threads" forces the block size, "options" adds nvcc options,
# "smem_launch" = (threads, min blocks per SM, ring16[, chunks[, sequences per block[, split points per
# multiloop unit]]]) forces zs_fold_smem's launch and ring, "pm16" (bool) its 16-bit copies of WM and WM1 with
# the int16 ring, "tb_apart" (bool) puts its traceback in zs_tb_smem or in the fill kernel,
# "events" (a list) receives the kernel's milliseconds per launch (CUDA events), "fill" fills the pool
# with a value before the launch, "keep" (any value) is replaced by the pool, status and results of the
# last launch, and a traceback failure is then not raised, "cupy_call" (any value) launches the kernels
# through CuPy's call rather than the driver's launchKernel.
TUNING: dict = {}


def pool_words(n):
    """int32 words of device pool one sequence of n nt takes (zs_pool_words of zuker_short.cuh): V, WM,
    WM1, XT and the auxiliaries VAU, V1N, VI ((n+2)² each), the traceback stack (3n + 8)."""
    N = n + 2
    return 7 * N * N + 3 * n + 8


def smem_pool_words(n):
    """The same for zs_fold_smem (z2_pool_words): V, WM, WM1, XT, W (n + 2), the stack, and WM and WM1 in 16
    bits ((n + 2)² int16 each, the builds with Z2_PM16); its auxiliaries stay in shared memory."""
    N = n + 2
    return 5 * N * N + N + 3 * n + 8


def _words(n):
    """Pool words of one sequence of n nt (an int or an array of them) in the kernel that folds it."""
    n = np.asarray(n, dtype=np.int64)
    every = np.arange(int(n.max()) + 1 if n.size else 1, dtype=np.int64)     # by length, then gathered
    w = np.where(every <= smem_max_n(), smem_pool_words(every), pool_words(every))[n]
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


# zs_fold_smem's launch by the batch's longest sequence, chosen by timing on an H100 (benchmarks/RESULTS.md;
# at <= 80 nt 5 blocks of two sequences and 192 threads: 64 registers per thread, and the shared memory of 5
# fits at 80 nt):
# (longest n, threads, minimum blocks per SM, interior-loop chunks, sequences per block, split points per
# multiloop unit), with the int16 ring and with the int32 one. Short sequences have few cells per diagonal, so
# more, smaller blocks share a multiprocessor; the int16 ring halves the largest part of the shared memory, so
# more blocks fit. Fewer, longer chunks of interior loops (Z2_CHUNKS) mean fewer work units per diagonal.
# Sequences side by side in one block (Z2_SEQS) share the units whose lanes go over pairable cells, which a
# short diagonal leaves mostly idle. A multiloop unit's split points (Z2_XCHUNK) are loads from global memory
# in flight together: beyond 180 nt 16 of them, where those loads reach past the L2.
# Beyond 180 nt a block of 512 threads (two fit a multiprocessor up to about 440 nt), beyond 350 one of 1,024:
# a diagonal's units then have the warps to go round (on an H100 with the 16-bit copies of WM and WM1, 512 x 2
# is 15 % ahead at 340 nt, even at 355, 6 % behind at 370; benchmarks/RESULTS.md).
SMEM_LAUNCH16 = ((80, 192, 5, 3, 2, 8), (120, 256, 3, 4, 2, 8), (180, 256, 4, 4, 1, 8), (350, 512, 2, 4, 1, 16),
                 (10**9, 1024, 1, 4, 1, 16))
# with hard constraints (their words and bounds make each chunk's loops dearer) three chunks up to 120 nt
SMEM_LAUNCH16_HC = ((80, 192, 5, 3, 2, 8), (120, 256, 3, 3, 2, 8), (180, 256, 4, 4, 1, 8),
                    (350, 512, 2, 4, 1, 16), (10**9, 1024, 1, 4, 1, 16))
SMEM_LAUNCH32 = ((80, 128, 4, 3, 1, 8), (232, 256, 2, 4, 1, 8), (10**9, 1024, 1, 4, 1, 8))
RING16 = True                  # the int16 ring where the model allows it (_ring16_ok)
PM16 = True                    # with the int16 ring, the multiloop units read WM and WM1 in 16 bits (Z2_PM16)
TB_APART = True                # zs_fold_smem's traceback in a kernel of its own (zs_tb_smem), a warp per sequence
TB_THREADS = 128
HC_SMEM = True                 # zs_fold_smem with hard constraints: the block's words copied to shared memory
HC_WARPS = 2                   # zs_hc_words: sequences (warps) per block; 2 x 18 KB of shared memory at 2,000 nt


def _smem_launch(max_n: int, ring16: bool, hc: bool = False,
                 enforce: bool = False) -> tuple[int, int, tuple[str, ...]]:
    """Threads per block, sequences per block and nvcc options of zs_fold_smem for a batch whose longest
    sequence is max_n (hc: a build with hard constraints, their words in shared memory where HC_SMEM; enforce:
    under --enforceConstraint, the only case where a bound refuses an interior loop: Z2_HC_BOUNDED)."""
    table = (SMEM_LAUNCH16_HC if hc else SMEM_LAUNCH16) if ring16 else SMEM_LAUNCH32
    threads, blocks, chunks, seqs, xchunk = next(x[1:] for x in table if max_n <= x[0])
    if "smem_launch" in TUNING:        # (threads, blocks, ring16[, chunks[, seqs[, xchunk]]])
        forced = TUNING["smem_launch"]
        threads, blocks = forced[:2]
        chunks = forced[3] if len(forced) > 3 else chunks
        seqs = forced[4] if len(forced) > 4 else seqs
        xchunk = forced[5] if len(forced) > 5 else xchunk
    hc_smem = hc and _hc_smem()
    while seqs > 1 and _smem_shared_bytes(max_n, ring16, seqs, hc_smem) > _shared_limit():
        seqs -= 1                      # a block's shared memory must fit the GPU (the int32 ring, long sequences)
    apart = TUNING.get("tb_apart", TB_APART)
    pm16 = ring16 and TUNING.get("pm16", PM16)
    return threads, seqs, ((f"-DZ2_MAX_THREADS={threads}", f"-DZ2_MIN_BLOCKS={blocks}", f"-DZ2_CHUNKS={chunks}",
                            f"-DZ2_SEQS={seqs}", f"-DZ2_XCHUNK={xchunk}")
                           + (("-DZ2_RING16",) if ring16 else ()) + (("-DZ2_PM16",) if pm16 else ())
                           + (("-DZ2_TB_APART",) if apart else ())
                           + (("-DZ2_HC_SMEM",) if hc_smem else ())
                           + (("-DZ2_HC_BOUNDED",) if hc and enforce else ()))


def smem_max_n() -> int:
    """The longest sequence zs_fold_smem takes on the current GPU: SMEM_MAX_N, or less where one sequence's
    int32 ring (with hard-constraint words, the largest build) would not fit a block's shared memory. Without
    CuPy or a GPU (the host-side batch plan, tested anywhere) the cap itself, as for an H100 or H200."""
    try:
        device = loader._device_id()
    except (ImportError, RuntimeError):
        return SMEM_MAX_N
    return _smem_max_n_on(device, SMEM_MAX_N)


@functools.lru_cache(maxsize=16)
def _smem_max_n_on(device: int, cap: int) -> int:
    limit = _shared_limit_on(device)
    n = cap
    while n > 0 and _smem_shared_bytes(n, False, 1, True) > limit:
        n -= 1
    return n


def _hc_smem() -> bool:
    return bool(TUNING.get("hc_smem", HC_SMEM))


def _shared_limit() -> int:
    """The most dynamic shared memory one block may have on the current GPU (227 KiB on an H100)."""
    return _shared_limit_on(loader._device_id())


@functools.lru_cache(maxsize=8)
def _shared_limit_on(device: int) -> int:
    import cupy
    return int(cupy.cuda.Device(device).attributes["MaxSharedMemoryPerBlockOptin"])


def _smem_shared_bytes(max_n: int, ring16: bool, seqs: int = 1, hc: bool = False) -> int:
    """z2_shared_bytes of zuker_short.cu: the size terms, counters, pools and lengths, then per sequence of
    the block the ring (3 planes of 32 rows of int16 or int32), 15 int32 rows, two int16 lists and the
    codes, rows of max_n + 2; with hc (a build with Z2_HC_SMEM) the hard-constraint words, 8 bytes a
    position."""
    mn = max_n + 2
    per_seq = 3 * 32 * mn * (2 if ring16 else 4) + 4 * 15 * mn + 2 * 2 * mn + mn
    return (4 * (485 + 3 + 8 + 16) + seqs * per_seq + 7) // 8 * 8 + (seqs * mn * 8 if hc else 0)


def _ring16_ok(model: Model) -> bool:
    """Whether zs_fold_smem's int16 ring is exact for this model: every finite size term within
    (-4000, 4000) (zuker_short.cu, z2_store); a value too large for the ring is caught in the kernel."""
    if "smem_launch" in TUNING:
        return bool(TUNING["smem_launch"][2])
    return RING16 and _sizes_within(model, 4000)


@functools.lru_cache(maxsize=16)
def _sizes_within(model: Model, bound: int) -> bool:
    sz = size_entries(model.tables())
    finite = sz[sz < INF // 2]
    return bool(finite.size == 0 or (np.abs(finite) < bound).all())


def loop_table(T) -> np.ndarray:
    """The interior loops that read the auxiliaries (every (n1, n2), n1 + n2 <= 30, but the 11 with tables
    of their own), in zuker_short.cuh's layout: grouped by kind (0: bulge, VAU; 1: 1xn, V1N; 2: generic, VI),
    within a kind by s = n1 + n2; header: first entry of each kind, entries of kind k with s <= m; then
    (s, n1, size term) per entry, the size term being rnapipe.gpu.zuker_tables.size_terms's."""

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
    return _loop_table_on(model, loader._device_id())      # one copy per GPU (--gpus)


@functools.lru_cache(maxsize=8)
def _loop_table_on(model: Model, device: int):
    import cupy
    with cupy.cuda.Device(device):
        return cupy.asarray(loop_table(model.tables()))


def _kernel(options: tuple[str, ...]):
    return loader.function(KERNELS, "zs_fold", options)     # cached by the loader, per GPU


def fold_group(seqs: list[str], model: Model, lens: np.ndarray | None = None,
               shape: list[np.ndarray] | None = None, constraints: list[str] | None = None) -> list[tuple[int, str]]:
    """Fold non-empty sequences given longest first (lens: their lengths, if the caller has them; shape: their
    SHAPE stacking terms, int32 per nucleotide, or None; constraints: their constraint lines, or None): those
    longer than smem_max_n() with zs_fold, the rest with zs_fold_smem. A large group goes in chunks
    (:func:`chunk_sizes`), all launched at once on STREAMS streams and collected in order, so that the host's
    work on one chunk (sequences in, structures out) overlaps the kernels of the next ones; the chunks of
    one stream share one device pool (the stream orders them)."""
    count = len(seqs)
    if count == 0:
        return []
    if lens is None:
        lens = np.fromiter(map(len, seqs), dtype=np.int64, count=count)
    out: list[tuple[int, str]] = []
    _run_group(_Group(seqs, lens, model, shape=shape, constraints=constraints), lambda job: _finish(job, out))
    return out


def fold_group_packed(text: np.ndarray, lens: np.ndarray, model: Model) -> tuple[np.ndarray, np.ndarray]:
    """:func:`fold_group` for sequences given packed: ``text`` (uint8) holds them longest first, each
    followed by a newline. Returns the MFEs (int64) and the structures in the layout of ``text``: no Python
    object per sequence on the way in or out."""
    lens = np.asarray(lens, dtype=np.int64)
    energies = np.zeros(len(lens), dtype=np.int64)
    structures = np.empty(len(text), dtype=np.uint8)
    if len(lens):
        group = _Group(None, lens, model, text=text)
        _run_group(group, lambda job: _finish_packed(job, group, energies, structures))
    return energies, structures


def _run_group(group: "_Group", collect) -> None:
    """fold_group's chunks of ``group``, each handed to ``collect`` as it finishes, in order."""
    import cupy

    lens = group.lens
    count = len(lens)
    top = smem_max_n()
    big = int(np.count_nonzero(lens > top))
    parts = []
    for lo, hi, smem in ((0, big, False), (big, count, True)):
        per_seq = 4 * (smem_pool_words if smem else pool_words)(int(lens[lo])) if hi > lo else 1
        for size in chunk_sizes(hi - lo, max(1, STREAM_POOL_BYTES // per_seq, SMEM_MIN_CHUNK if smem else 1)):
            parts.append((lo, lo + size, smem))
            lo += size
    streams = _streams() if len(parts) > 1 else [None]
    if streams[0] is not None:            # tables made on the default stream must be there first
        if big:
            group.extra(False)
        if big < count:
            group.extra(True)
        cupy.cuda.Stream.null.synchronize()
    need = [0] * len(streams)             # words of each stream's pool: its largest chunk's matrices and I/O
    for k, (a, b, _) in enumerate(parts):
        need[k % len(streams)] = max(need[k % len(streams)], group.words(a, b))
    pools = None if "keep" in TUNING else _stream_pools(need)    # "keep": a pool per chunk
    jobs: list[dict] = []
    for k, (a, b, smem) in enumerate(parts):
        slot = k % len(streams)
        jobs.append(group.start(a, b, smem, streams[slot], pools and pools[slot]))
        while len(jobs) > 2 and jobs[0]["done"].done:     # collect what is ready, two chunks still queued
            collect(jobs.pop(0))
    for job in jobs:
        collect(job)


CHUNK = 8192                  # sequences per chunk in the middle of a large group, at most
SMEM_MIN_CHUNK = 512           # zs_fold_smem's chunks may take more than STREAM_POOL_BYTES to hold this many
                               # sequences (at 480 nt 4.6 MB each): a few waves of one-block multiprocessors
STREAM_POOL_BYTES = 1 << 30   # device pool of one stream's chunks, at most (fewer sequences per chunk
                               # when they are long); kept between groups (_stream_pools)
STREAMS = 3                    # streams the chunks go round: while one chunk's kernels end (a partial last wave
                               # of blocks) the next ones' fill the GPU. On an H100, 3 streams of 1 GB against 2 of
                               # 512 MB: +2 to +5.5 % from 68 to 300 nt, +0.3 to +1.2 % at 400-480
                               # (benchmarks/RESULTS.md)


def chunk_sizes(count: int, most: int | None = None) -> list[int]:
    """Chunk sizes of a group of count sequences, with c = min(CHUNK, most, count / 3) (most: sequences
    whose matrices fill STREAM_POOL_BYTES): c/8, c/4, c/2 first (the GPU starts after a small chunk's host
    work), about c each in the middle, then c/2, c/4, c/8, c/16 (each chunk's host work after its kernel
    overlaps the smaller ones' kernels, so little is left after the last); one chunk when the group is
    small."""
    most = min(CHUNK, most or CHUNK)
    c = min(most, count // 3)
    if c < max(16, most // 16):
        return [count] if count else []
    head = [c // 8, c // 4, c // 2]
    tail = [c // 2, c // 4, c // 8, c // 16]
    rest = count - sum(head) - sum(tail)
    pieces = -(-rest // c)
    middle = [rest // pieces + (1 if k < rest % pieces else 0) for k in range(pieces)]
    return head + middle + tail


_kept = threading.local()     # .pools: device -> one int32 array per stream, kept from one group (and
                              # batch) to the next by this thread (--gpus may run two workers on one GPU)


def _held() -> dict:
    if not hasattr(_kept, "pools"):
        _kept.pools = {}
    return _kept.pools


def _stream_pools(need: list[int]) -> list:
    """One device array per stream of at least need[k] int32 words, kept for the next group: allocating
    and freeing a few hundred MB per call costs about a millisecond, a tenth of a 20,000-sequence batch."""
    import cupy

    held = _held().setdefault(loader._device_id(), [])
    held += [None] * (len(need) - len(held))
    for k, words in enumerate(need):
        if held[k] is None or held[k].size < words:
            held[k] = None                # the old one goes back to CuPy's pool first
            held[k] = cupy.empty(words, dtype=cupy.int32)
    return held


def cached_bytes() -> int:
    """Bytes of device memory this thread's kept stream pools on the current GPU hold (rnapipe.gpu.
    devices.memory_budget counts them as free)."""
    return sum(int(p.nbytes) for p in _held().get(loader._device_id(), []) if p is not None)


def release() -> None:
    """Give this thread's kept stream pools on the current GPU back to CuPy's pool (fold_batch does this
    before the longer sequences' fills, which want the memory, and when a group runs out of memory)."""
    _held().pop(loader._device_id(), None)


def _table_for_group(model: Model, n_max: int):
    return table_for(model, n_max)


def _streams():
    return _streams_on(loader._device_id())


@functools.lru_cache(maxsize=8)
def _streams_on(device: int):
    import cupy
    with cupy.cuda.Device(device):
        return [cupy.cuda.Stream(non_blocking=True) for _ in range(STREAMS)]


def size_entries(T) -> np.ndarray:
    """zs_fold_smem's size terms: SZ[n1][n2] of every (n1, n2) with n1 + n2 <= 30 but the 11 special ones
    (rnapipe.gpu.zuker_tables.size_terms), in the kernel's loop order (z2_entry: by n1 + n2, then n1)."""

    sz = size_terms(T)
    out = [min(int(sz[n1, s - n1]), INF) for s in range(MAXLOOP + 1) for n1 in range(s + 1)
           if (n1, s - n1) not in SPECIAL_LOOPS]
    return np.array(out, dtype=np.int32)


@functools.lru_cache(maxsize=8)
def _size_entries_on(model: Model, device: int):
    import cupy
    with cupy.cuda.Device(device):
        return cupy.asarray(size_entries(model.tables()))


def _pinned(nbytes: int) -> tuple[np.ndarray, int]:
    """An uninitialised byte array in page-locked host memory (copies to and from the device are then
    asynchronous) and its address."""
    import cupy
    mem = cupy.cuda.alloc_pinned_memory(max(nbytes, 1))
    return np.frombuffer(mem, dtype=np.uint8, count=nbytes), mem.ptr


def _layout(count: int, text_bytes: int) -> tuple[int, int, int, int]:
    """Byte offsets of a chunk's input buffer: soff (int64), poff (int64), lens (int32), the sequences'
    ASCII; and its total size (8-byte aligned parts)."""
    a = 16 * count
    b = a + (4 * count + 7) // 8 * 8
    return 8 * count, a, b, b + text_bytes


def _io_bytes(count: int, text_bytes: int) -> tuple[int, int]:
    """A chunk's input (_layout) and output (MFE, status, the structures) in one buffer: where the output
    starts (16-byte aligned) and the total bytes."""
    at = (_layout(count, text_bytes)[3] + 15) // 16 * 16
    return at, at + 8 * count + text_bytes


def _io_words(count: int, text_bytes: int) -> int:
    """int32 words a chunk's device input and output take after its matrices in its stream's pool (the
    start rounded up to 16 bytes)."""
    return (_io_bytes(count, text_bytes)[1] + 3) // 4 + 4


def shape_layout(shape: list[np.ndarray], out: np.ndarray | None = None) -> np.ndarray:
    """The SHAPE stacking terms of consecutive sequences as the kernels read them (ZK_SHAPE): sequence k's n + 2
    int32 words (0, its n terms, 0) at its text offset plus k, one after the other (into ``out`` if given)."""
    pad = np.zeros(1, dtype=np.int32)
    parts = [pad] * (3 * len(shape))
    parts[1::3] = shape
    return np.concatenate(parts, out=out) if out is not None else np.concatenate(parts)


def _hc_words(count: int, text_bytes: int) -> int:
    """int32 words a chunk's hard-constraint words (ZkHc with ZK_HC16: 8 bytes for each of the text's bytes and
    two more per sequence) and its constraint lines (as many bytes as the text) take after its I/O (the start
    rounded up to 16 bytes)."""
    return (8 * (text_bytes + 1 + count) + text_bytes + 3) // 4 + 4


PIECE = 1024                  # sequences per str.encode / bytes decode: temporaries stay small (a large one
                              # is a fresh mapping from the C allocator, page faults on every byte)


class _Group:
    """The host side of one fold_group: offsets of every sequence's text and matrices computed once, each
    chunk's kernels, tables and launch settings looked up once, raw device addresses (no CuPy views)."""

    def __init__(self, seqs: list[str] | None, lens: np.ndarray, model: Model, ring16: bool | None = None,
                 text: np.ndarray | None = None, shape: list[np.ndarray] | None = None,
                 constraints: list[str] | None = None):
        self.seqs, self.lens, self.model = seqs, np.asarray(lens, dtype=np.int64), model
        self.text = text                                         # or the sequences packed, '\n' after each
        count = len(self.lens)
        self.ce = np.zeros(count + 1, dtype=np.int64)            # text offsets: one '\n' after each sequence
        np.cumsum(self.lens + 1, out=self.ce[1:])
        self.cw = np.zeros(count + 1, dtype=np.int64)            # pool words (zs_fold or zs_fold_smem)
        np.cumsum(_words(self.lens), out=self.cw[1:])
        self.P = _table_for_group(model, int(self.lens.max()))
        self.ring16 = _ring16_ok(model) if ring16 is None else ring16
        self._extra: dict = {}
        self._launch: dict = {}
        self._hc_kernel: dict = {}
        self.shape = shape                                       # ZK_SHAPE: each chunk's terms (shape_layout)
        self.constraints = constraints                           # ZK_HC: each chunk's words made by zs_hc_words
        # the kernel parameter block: 2 × 16 pointers (at self._params) to 2 × 16 uint64 slots (self._pv),
        # the fill's arguments, then the traceback's at slot 16 (an int argument reads the low half of its slot)
        self._pv = np.zeros(32, dtype=np.uint64)
        self._pp = self._pv.ctypes.data + 8 * np.arange(32, dtype=np.uint64)
        self._params = self._pp.ctypes.data

    def sequence(self, k: int) -> str:
        if self.seqs is not None:
            return self.seqs[k]
        return bytes(self.text[int(self.ce[k]):int(self.ce[k + 1]) - 1]).decode("ascii")

    def words(self, a: int, b: int) -> int:
        """Pool words of chunk [a, b): matrices, then input and output, then (with constraints) the
        hard-constraint words and the constraint lines."""
        total = int(self.ce[b] - self.ce[a]) - 1
        hc = _hc_words(b - a, total) if self.constraints is not None else 0
        sh = total + 1 + (b - a) + 4 if self.shape is not None else 0
        return int(self.cw[b] - self.cw[a]) + _io_words(b - a, total) + hc + sh

    def extra(self, smem: bool):
        """The second table: zs_fold_smem's size terms, zs_fold's loop table."""
        if smem not in self._extra:
            self._extra[smem] = (_size_entries_on(self.model, loader._device_id()) if smem
                                 else _device_loop_table(self.model))
        return self._extra[smem]

    def launch(self, n_max: int, smem: bool):
        """(fill kernel, traceback kernel or None, threads, shared bytes, ring16, the kernels' CUfunctions,
        sequences per fill block) for a chunk whose longest sequence is n_max."""
        key = (n_max, smem)
        if key not in self._launch:
            ring16 = smem and self.ring16
            options = (tuple(TUNING.get("options", ())) + rules_option(self.model) + shape_option(self.shape)
                       + hc_option(self.constraints) + (("-DZK_HC16",) if self.constraints is not None else ()))
            tb = None
            per_block = 1
            if smem:
                hc = self.constraints is not None
                threads, per_block, more = _smem_launch(n_max, ring16, hc, bool(self.model.enforce_constraint))
                shared = _smem_shared_bytes(n_max, ring16, per_block, "-DZ2_HC_SMEM" in more)
                options = options + more
                kernel = loader.function(KERNELS, "zs_fold_smem", options, dynamic_shared=shared)
                if "-DZ2_TB_APART" in options:
                    tb = loader.function(KERNELS, "zs_tb_smem", options)
            else:
                shared = _shared_bytes(n_max)
                kernel = _kernel(options)
                threads = threads_for(n_max)
            if self.constraints is not None:      # the words, from the fill's module
                self._hc_kernel[key] = loader.function(KERNELS, "zs_hc_words", options)
            self._launch[key] = (kernel, tb, threads, shared, ring16, _entry(kernel), tb and _entry(tb), per_block)
        return self._launch[key]

    def start(self, a: int, b: int, smem: bool, stream, pool=None) -> dict:
        """Copy chunk [a, b) to the device and launch its kernels on stream (None: the current one), its
        matrices, input and output in pool (an int32 device array, shared by the chunks of one stream;
        None: one of its own); the result is collected by _finish."""
        import contextlib

        import cupy

        count = b - a
        lens = self.lens[a:b]
        n_max = int(lens.max())
        if n_max > 2000:
            raise ValueError("zuker_short folds sequences of up to 2,000 nt")
        top = smem_max_n()
        if (n_max <= top) != smem or (not smem and int(lens.min()) <= top):
            raise ValueError("a chunk's kernel must be the one its lengths' pool words were counted for")
        kernel, tb, threads, shared, ring16, f_fill, f_tb, per_block = self.launch(n_max, smem)
        blocks = (count + per_block - 1) // per_block
        ce, cw = self.ce, self.cw
        total = int(ce[b] - ce[a]) - 1           # the sequences (and the structures) one '\n' apart
        mwords = int(cw[b] - cw[a])
        o_poff, o_lens, o_text, _ = _layout(count, total)
        o_out, nbytes = _io_bytes(count, total)
        host, hptr = _pinned(nbytes)             # one pinned buffer: input, then output
        np.subtract(ce[a:b], ce[a], out=host[:o_poff].view(np.int64))
        np.subtract(cw[a:b], cw[a], out=host[o_poff:o_lens].view(np.int64))
        host[o_lens:o_lens + 4 * count].view(np.int32)[:] = lens
        seqs = self.seqs
        if self.text is not None:                # packed: the chunk's text is one slice
            host[o_text:o_text + total] = self.text[int(ce[a]):int(ce[b]) - 1]
        else:
            for p in range(a, b, PIECE):         # the text, a piece at a time
                q = min(b, p + PIECE)
                at = o_text + int(ce[p] - ce[a])
                end = o_text + int(ce[q] - ce[a]) - 1
                host[at:end] = np.frombuffer("\n".join(seqs[p:q]).encode("ascii"), dtype=np.uint8)
                if q < b:
                    host[end] = 10
        words = self.words(a, b)
        if pool is None:
            pool = cupy.empty(words, dtype=cupy.int32)
        elif pool.size < words:
            raise RuntimeError(f"stream pool of {pool.size} words for a chunk of {words}")
        io = pool.data.ptr + 4 * ((mwords + 3) // 4 * 4)    # after the matrices, 16-byte aligned
        out = io + o_out                                      # mfe, status (int32), the structures
        job = {"count": count, "group": self, "first": a, "lens": lens, "model": self.model, "ring16": ring16,
               "host_out": host[o_out:]}
        lines = None
        if self.constraints is not None:          # the constraint lines, laid out as the text, pinned
            lines, lptr = _pinned(total)
            cons = self.constraints
            for p in range(a, b, PIECE):
                q = min(b, p + PIECE)
                at = int(ce[p] - ce[a])
                end = int(ce[q] - ce[a]) - 1
                lines[at:end] = np.frombuffer("\n".join(cons[p:q]).encode("ascii"), dtype=np.uint8)
                if q < b:
                    lines[end] = 10
            hc_at = io + (4 * _io_words(count, total) + 15) // 16 * 16    # the words after the I/O (16-byte
            lines_at = hc_at + 8 * (total + 1 + count)                    # aligned), then the lines
        shape = None
        if self.shape is not None:                # the chunk's SHAPE terms, pinned, after the I/O and the words
            buf, sptr_host = _pinned(4 * (total + 1 + count))
            shape = shape_layout(self.shape[a:b], out=buf.view(np.int32))
            shape_at = io + (4 * _io_words(count, total) + 15) // 16 * 16
            if self.constraints is not None:
                shape_at += 4 * _hc_words(count, total)
        rt, drv = cupy.cuda.runtime, cupy.cuda.driver
        with stream if stream is not None else contextlib.nullcontext():
            sptr = (stream or cupy.cuda.get_current_stream()).ptr
            rt.memcpyAsync(io, hptr, o_out, rt.memcpyHostToDevice, sptr)
            if lines is not None:                 # the words, made on the device before the fill reads them
                rt.memcpyAsync(lines_at, lptr, total, rt.memcpyHostToDevice, sptr)
                u64, row = np.uint64, (n_max + 2) * 8 + (n_max + 2 + 7) // 8 * 8    # ZS_HC_ROW
                self._hc_kernel[(n_max, smem)](
                    ((count + HC_WARPS - 1) // HC_WARPS,), (32 * HC_WARPS,),
                    (u64(lines_at), u64(io), u64(io + o_lens), u64(hc_at), np.int32(count),
                     np.int32(bool(self.model.enforce_constraint)), np.int32(min(span_of(self.model), 32767)),
                     np.int32(n_max)), shared_mem=HC_WARPS * row)
            if "fill" in TUNING:                  # debugging: a known value where the kernel writes nothing
                pool[:mwords].fill(TUNING["fill"])
            rt.memsetAsync(out + 8 * count, ord("\n"), total, sptr)    # the separators
            # the kernels' arguments: P, the second table, text, soff, lens, poff, pool, structures, mfe,
            # status, max_n, and zs_fold_smem's count (zs_fold has no twelfth); the traceback's leave out the
            # second table and put the count before max_n
            fill_args = (self.P.data.ptr, self.extra(smem).data.ptr, io + o_text, io, io + o_lens, io + o_poff,
                         pool.data.ptr, out + 8 * count, out, out + 4 * count, n_max, count)
            tb_args = fill_args[:1] + fill_args[2:-2] + (count, n_max)
            ss = ()                               # ZK_SHAPE: the chunk's SHAPE terms; ZK_HC: its words, the last
            if shape is not None:
                rt.memcpyAsync(shape_at, sptr_host, shape.nbytes, rt.memcpyHostToDevice, sptr)
                ss = (shape_at,)
            if lines is not None:
                ss = ss + (hc_at,)
            per_tb = TB_THREADS // 32
            tb_blocks, tb_shared = (count + per_tb - 1) // per_tb, per_tb * ((n_max + 2 + 15) // 16 * 16)
            events = TUNING.get("events")
            if events is not None:
                job["events"] = (cupy.cuda.Event(), cupy.cuda.Event())
                job["events"][0].record()
            if f_fill:                            # straight to the driver: a tenth of CuPy's call on the host
                at = self._params
                nf = (len(fill_args) if smem else len(fill_args) - 1) + len(ss)   # zs_fold: no count
                self._pv[:nf] = (fill_args if smem else fill_args[:-1]) + ss
                drv.launchKernel(f_fill, blocks, 1, 1, threads, 1, 1, shared, sptr, at, 0)
                if tb is not None:
                    self._pv[16:16 + len(tb_args) + len(ss)] = tb_args + ss
                    drv.launchKernel(f_tb, tb_blocks, 1, 1, TB_THREADS, 1, 1, tb_shared, sptr, at + 128, 0)
            else:
                u64 = np.uint64
                ints = (np.int32(n_max), np.int32(count)) if smem else (np.int32(n_max),)
                ptrs = tuple(map(u64, ss))
                kernel((blocks,), (threads,), tuple(map(u64, fill_args[:-2])) + ints + ptrs, shared_mem=shared)
                if tb is not None:
                    tb((tb_blocks,), (TB_THREADS,),
                       tuple(map(u64, tb_args[:-2])) + (np.int32(count), np.int32(n_max)) + ptrs, shared_mem=tb_shared)
            if events is not None:
                job["events"][1].record()
            rt.memcpyAsync(hptr + o_out, out, nbytes - o_out, rt.memcpyDeviceToHost, sptr)
            job["done"] = cupy.cuda.Event(block=False, disable_timing=True)
            job["done"].record()              # this chunk's copies; later chunks may share the stream
        job["keep"] = (host, pool, lines, shape)    # alive until the copies are done
        if "keep" in TUNING:
            job["poff"] = cw[a:b] - cw[a]
        return job


def _entry(kernel) -> int:
    """The CUfunction of a CuPy RawKernel, for cupy.cuda.driver.launchKernel; 0 where this CuPy does not
    expose it (the kernel is then called through CuPy)."""
    if "cupy_call" in TUNING:
        return 0
    try:
        return int(kernel.kernel.ptr)
    except AttributeError:
        return 0


def _start(seqs: list[str], lens: np.ndarray, model: Model, smem: bool, stream, pool=None,
           ring16: bool | None = None, shape: list[np.ndarray] | None = None,
           constraints: list[str] | None = None) -> dict:
    """Launch one chunk of its own (a group of one chunk; see _Group.start); zs_fold_smem with the int16
    ring if ring16 (None: where the model allows); shape, constraints: the sequences' SHAPE terms and constraint
    lines, or None."""
    return _Group(seqs, lens, model, ring16, shape=shape, constraints=constraints).start(0, len(seqs), smem, stream,
                                                                                       pool)


def _done(job: dict):
    """Wait for a chunk started by _Group.start and check it: its MFEs (an int32 view), its structures'
    text (one '\n' apart, a view) and the positions to fold again with the int32 ring. The views are of
    the chunk's pinned buffer: read them before _release(job)."""
    import cupy

    job["done"].synchronize()
    if "events" in job:
        TUNING.setdefault("events", []).append(cupy.cuda.get_elapsed_time(*job["events"]))
    count = job["count"]
    host_out = job["host_out"]
    status = host_out[4 * count:8 * count].view(np.int32)
    failed = int(np.count_nonzero(status))
    refold = np.flatnonzero(status == 2) if failed and job["ring16"] else np.zeros(0, dtype=np.int64)
    bad = failed - refold.size
    energies = host_out[:4 * count].view(np.int32)
    text = host_out[8 * count:]
    if "keep" in TUNING:                  # debugging: the matrices and status, no error raised
        TUNING["keep"] = {"pool": job["keep"][1].get(), "poff": job["poff"], "status": status.copy(),
                          "mfe": energies.tolist(), "text": str(text, "ascii")}
        bad = 0
    if bad:
        raise RuntimeError(f"GPU Zuker traceback could not re-derive a stored value for {bad} sequence(s)")
    return energies, text, refold


def _refold(job: dict, refold: np.ndarray) -> list[tuple[int, str]]:
    """The sequences of a chunk whose values passed the int16 ring, again with the int32 one."""
    group, a = job["group"], job["first"]
    shape = None if group.shape is None else [group.shape[a + k] for k in refold.tolist()]
    hc = None if group.constraints is None else [group.constraints[a + k] for k in refold.tolist()]
    return _finish(_start([group.sequence(a + k) for k in refold.tolist()], job["lens"][refold], job["model"],
                          True, None, ring16=False, shape=shape, constraints=hc))


def _finish(job: dict, out: list | None = None) -> list[tuple[int, str]]:
    """Wait for a chunk started by _Group.start and return its (MFE, dot-bracket) in order, appended to
    out if given (no list of its own)."""
    energies, text, refold = _done(job)
    count = job["count"]
    energies = energies.tolist()
    structures: list[str] = []
    at = 0
    for p in range(0, count, PIECE):          # decoded a piece at a time (small temporaries)
        q = min(count, p + PIECE)
        end = at + int(job["lens"][p:q].sum()) + (q - p) - 1
        structures += str(text[at:end], "ascii").split("\n")
        at = end + 1
    del job["keep"]
    if len(structures) != count:
        raise RuntimeError(f"GPU Zuker returned {len(structures)} structures for {count} sequences")
    if out is None:
        out = []
    first = len(out)
    out += zip(energies, structures)
    if refold.size:                       # a value too large for the int16 ring: again with the int32 one
        for k, r in zip(refold.tolist(), _refold(job, refold)):
            out[first + k] = r
    return out


def _finish_packed(job: dict, group: _Group, energies: np.ndarray, structures: np.ndarray) -> None:
    """_finish for fold_group_packed: the chunk's MFEs and structures copied into place in ``energies``
    and ``structures`` (the layout of the group's packed text)."""
    mfe, text, refold = _done(job)
    a, count = job["first"], job["count"]
    energies[a:a + count] = mfe
    o0, o1 = int(group.ce[a]), int(group.ce[a + count])
    structures[o0:o1 - 1] = text[:o1 - 1 - o0]
    structures[o1 - 1] = 10
    del job["keep"]
    if refold.size:
        for k, (e, st) in zip(refold.tolist(), _refold(job, refold)):
            energies[a + k] = e
            at = int(group.ce[a + k])
            structures[at:at + len(st)] = np.frombuffer(st.encode("ascii"), dtype=np.uint8)
