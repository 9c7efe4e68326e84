"""The short-sequence GPU path (rnapipe.gpu.zuker_short): MFE and structure identical to the CPU engine
(rnapipe.cpu.zuker) on random sequences with N bases, lengths 1..600 (or MAX_N when it is on), both
directly (one launch per group) and through rnapipe.gpu.zuker.fold_batch with the path switched on, batch
boundaries, other temperatures and dangles 0, real RNAs.

RNAPIPE_FULL=1 runs 100,000 random sequences instead of 3,000.
"""

from __future__ import annotations

import os
import random

import pytest
from seqgen import random_seqs as _random_seqs
from shared_data import shared_sequences

from rnapipe.cpu import zuker as cpu

pytestmark = pytest.mark.gpu

FULL = os.environ.get("RNAPIPE_FULL") == "1"
THREADS = os.cpu_count() or 1
LONGEST = 600


def _short():
    from rnapipe.gpu import zuker_short
    return zuker_short


def _top():
    return _short().MAX_N or LONGEST




def _direct(seqs, options=None, chunk=5_000):
    """fold_group on chunks of the longest-first order, results back in input order."""
    from rnapipe.model import Model
    model = Model.from_options(options or {})
    order = sorted(range(len(seqs)), key=lambda k: -len(seqs[k]))
    results = [None] * len(seqs)
    for a in range(0, len(order), chunk):
        part = order[a:a + chunk]
        for k, r in zip(part, _short().fold_group([seqs[k] for k in part], model)):
            results[k] = r
    return results


def _assert_same(seqs, options=None):
    ours = _direct(seqs, options)
    ref = cpu.fold_batch(seqs, "default", THREADS, options or {})
    wrong = [(len(s), s, o, r) for s, o, r in zip(seqs, ours, ref) if o != r]
    assert not wrong, f"{len(wrong)} of {len(seqs)} differ; first: {wrong[0]}"


def test_random_identical_to_cpu():
    _assert_same(_random_seqs(100_000 if FULL else 3_000, 1, _top(), seed=51))


@pytest.mark.parametrize("n", [1, 4, 5, 6, 11, 12, 31, 32, 33, 36, 37, 38, 63, 64, 65, 68, 120, 154, 180, 181,
                               221, 260, 261, 500, 501])
def test_every_block_shape(n):
    """Lengths around the diagonal and ring sizes and the block-size thresholds."""
    _assert_same(_random_seqs(40, n, n, seed=n, n_rate=0.0) + _random_seqs(10, n, n, seed=1000 + n))


def test_every_length_from_230_to_610():
    """One random sequence (some N) of each length from 230 to 610 nt, through fold_batch: both sides of every
    launch row and kernel change there (zs_fold_smem's 512- and 1,024-thread blocks, zs_fold beyond
    smem_max_n(), the general fills beyond MAX_N), identical to the CPU engine."""
    from rnapipe.gpu import zuker as gpu
    rng = random.Random(81)
    seqs = ["".join(rng.choice("ACGUACGUACGUN" if n % 7 == 0 else "ACGU") for _ in range(n)) for n in range(230, 611)]
    assert gpu.fold_batch(seqs, "default", 1, {}) == cpu.fold_batch(seqs, "default", THREADS, {})


def test_longest_and_extreme_sequences():
    top = _top()
    seqs = ["GC" * (top // 2), "G" * (top // 2) + "C" * (top - top // 2), "A" * top, "N" * top,
            "GGGGAAAACCCC", "A", "NNNGGGGAAAACCCCNNN"] + _random_seqs(20, top - 5, top, seed=52)
    _assert_same(seqs)


@pytest.mark.parametrize("temperature,dangles", [(37.0, 0), (20.0, 2), (60.0, 0)])
def test_temperatures_and_dangles(temperature, dangles):
    _assert_same(_random_seqs(300, 1, 300, seed=int(temperature) + dangles),
                 {"temperature": temperature, "dangles": dangles})


def test_through_fold_batch_with_batch_boundaries(monkeypatch):
    """fold_batch with the path on and a small memory budget: many batches, mixed lengths, empty and
    all-N sequences, input order kept, progress reported."""
    from rnapipe.gpu import zuker as gpu
    short = _short()
    monkeypatch.setattr(short, "MAX_N", _top())
    seqs = _random_seqs(300, 1, _top(), seed=53) + ["", "N" * 50, "A", "GGGGAAAACCCC"]
    random.Random(54).shuffle(seqs)
    budget = 7 * short.bytes_needed(_top())
    monkeypatch.setattr(gpu, "memory_budget", lambda: budget)
    seen = []
    ours = gpu.fold_batch(seqs, "default", THREADS, {}, progress=seen.append)
    assert sum(seen) == len(seqs) - 1
    assert len(seen) > 5
    assert ours == cpu.fold_batch(seqs, "default", THREADS, {})
    assert ours[seqs.index("GGGGAAAACCCC")] == (-540, "((((....))))")
    assert ours[seqs.index("")] == (0, "")


def test_shared_data_identical_to_cpu():
    seqs = shared_sequences(_top())
    if not seqs:
        pytest.skip("../shared/data is not here")
    _assert_same(seqs if FULL else seqs[::5])


def test_bytes_needed_matches_the_kernel():
    from rnapipe.gpu import loader
    text = (loader.kernel_dir() / "zuker_short.cuh").read_text()
    assert f"#define ZS_LT_ENTRIES {_short().LT_ENTRIES}\n" in text
    assert f"#define ZS_LT_MAX {_short().LT_MAX}\n" in text
    assert "return 7 * N * N + 3LL * n + 8;" in text
    assert _short().pool_words(100) == 7 * 102 * 102 + 3 * 100 + 8


@pytest.mark.parametrize("kernel", ["zs_fold_smem", "zs_fold_smem int32 ring", "zs_fold"])
def test_each_kernel_identical_to_cpu(monkeypatch, kernel):
    """Both kernels on the lengths the shared-memory one takes (zs_fold: with SMEM_MAX_N = 0), the
    shared-memory one with its int16 ring (the default) and its int32 ring. "G"*116 + "C"*116 has
    values beyond the int16 ring's range: it is folded again with the int32 one."""
    short = _short()
    top = short.smem_max_n() or 232
    if kernel == "zs_fold":
        monkeypatch.setattr(short, "SMEM_MAX_N", 0)
    if kernel == "zs_fold_smem int32 ring":
        monkeypatch.setattr(short, "RING16", False)
    seqs = _random_seqs(1_500, 1, top, seed=55) + ["GC" * (top // 2), "A" * top, "N" * top,
                                                  "G" * (top // 2) + "C" * (top - top // 2)]
    _assert_same(seqs)


@pytest.mark.parametrize("chunks, apart", [(3, True), (5, True), (8, False)])
def test_unit_shapes_identical_to_cpu(monkeypatch, chunks, apart):
    """zs_fold_smem with the interior loops in other numbers of chunks per diagonal (the launch tables use
    3 and 4), and with the traceback inside the fill kernel instead of zs_tb_smem: still the CPU engine's
    results."""
    short = _short()
    top = short.smem_max_n() or 232
    monkeypatch.setitem(short.TUNING, "smem_launch", (128, 4, True, chunks))
    monkeypatch.setitem(short.TUNING, "tb_apart", apart)
    seqs = _random_seqs(600, 1, top, seed=66) + ["GC" * (top // 2), "A" * top, "N" * top]
    _assert_same(seqs)


@pytest.mark.parametrize("per_block, apart, ring16", [(2, True, True), (3, True, True), (2, False, True),
                                                     (4, True, False)])
def test_several_sequences_per_block_identical_to_cpu(monkeypatch, per_block, apart, ring16):
    """zs_fold_smem with 2 to 4 sequences side by side in a block: sequences of unequal lengths sharing a
    block (sorted longest first, as fold_group gets them, and also unsorted), a last block with fewer
    sequences, tiny ones, both tracebacks and both rings: still the CPU engine's results, in order."""
    short = _short()
    from rnapipe.model import Model
    top = short.smem_max_n() or 232
    monkeypatch.setitem(short.TUNING, "smem_launch", (128, 4, ring16, 3, per_block))
    monkeypatch.setitem(short.TUNING, "tb_apart", apart)
    seqs = _random_seqs(500, 1, top, seed=68 + per_block) + ["GC" * (top // 2), "A" * top, "N" * top, "G", "GGGAAAUCC"]
    longest_first = sorted(seqs, key=len, reverse=True)
    assert short.fold_group(longest_first, Model()) == cpu.fold_batch(longest_first, "default", THREADS, {})
    mixed = _random_seqs(301, 1, 90, seed=71)                   # unsorted: any lengths may share a block
    assert short.fold_group(mixed, Model()) == cpu.fold_batch(mixed, "default", THREADS, {})


def test_several_sequences_per_block_overflow_refolds(monkeypatch):
    """A block of two whose int16 ring overflows sends both of its sequences to the int32 ring: still the
    CPU engine's results, in order."""
    short = _short()
    monkeypatch.setitem(short.TUNING, "smem_launch", (128, 4, True, 3, 2))
    monkeypatch.setitem(short.TUNING, "options", ("-DZ2_RING_LIM=50",))
    seqs = _random_seqs(301, 1, 120, seed=72)
    assert _direct(seqs) == cpu.fold_batch(seqs, "default", THREADS, {})


def test_int16_ring_overflow_refolds(monkeypatch):
    """With the int16 ring's range cut to +-50 dcal/mol nearly every sequence overflows it: each is folded
    again with the int32 ring, and every result is still the CPU engine's, in order."""
    short = _short()
    monkeypatch.setitem(short.TUNING, "options", ("-DZ2_RING_LIM=50",))
    seqs = _random_seqs(400, 1, short.smem_max_n() or 232, seed=59)
    ours = _direct(seqs)
    assert ours == cpu.fold_batch(seqs, "default", THREADS, {})


def test_pm16_overflow_refolds(monkeypatch):
    """With the range of the 16-bit copies of WM and WM1 (Z2_PM16, the multiloop units' reads) cut to [-50, 50]
    dcal/mol nearly every sequence leaves it: each is folded again with the int32 build, and every result is still
    the CPU engine's, in order."""
    short = _short()
    monkeypatch.setitem(short.TUNING, "options", ("-DZ2_PM_LO=-50", "-DZ2_PM_HI=50"))
    seqs = _random_seqs(300, 150, short.smem_max_n() or 232, seed=61)
    assert _direct(seqs) == cpu.fold_batch(seqs, "default", THREADS, {})


def test_pm16_on_and_off_and_gc_rich_identical_to_cpu(monkeypatch):
    """Random and GC-rich sequences of 181-400 nt (the most stable folds, whose values come near or past the
    16-bit ranges and go back to the int32 build) with and without the 16-bit copies of WM and WM1: the CPU
    engine's results."""
    short = _short()
    rng = random.Random(62)
    seqs = _random_seqs(120, 181, min(400, short.smem_max_n() or 232), seed=63)
    seqs += ["".join(rng.choice("GGGCCCAU") for _ in range(rng.randint(181, 400))) for _ in range(60)]
    ref = cpu.fold_batch(seqs, "default", THREADS, {})
    assert _direct(seqs) == ref
    monkeypatch.setitem(short.TUNING, "pm16", False)
    assert _direct(seqs) == ref


def test_int16_ring_is_used_only_where_exact(monkeypatch):
    short = _short()
    from rnapipe.model import Model
    assert short._ring16_ok(Model())
    monkeypatch.setattr(short, "RING16", False)
    assert not short._ring16_ok(Model())


@pytest.mark.parametrize("pool_bytes", [None, 2_000_000])
def test_chunks_on_several_streams(monkeypatch, pool_bytes):
    """A group split into many chunks (both kernels, STREAMS streams, the chunks of each sharing one device
    pool, one chunk's host work overlapping the next ones' kernels; chunks cut by CHUNK or by the pool's
    size): results identical to the CPU engine and in order."""
    short = _short()
    monkeypatch.setattr(short, "CHUNK", 37)
    if pool_bytes:
        monkeypatch.setattr(short, "STREAM_POOL_BYTES", pool_bytes)
    seqs = sorted(_random_seqs(500, 1, 400, seed=56), key=len, reverse=True)
    from rnapipe.model import Model
    ours = short.fold_group(seqs, Model())
    assert ours == cpu.fold_batch(seqs, "default", THREADS, {})


def test_launch_through_cupy(monkeypatch):
    """The kernels launched through CuPy's call instead of straight through the driver (the fallback
    where CuPy does not expose a kernel's CUfunction): both kernels, many chunks, the same results."""
    short = _short()
    monkeypatch.setitem(short.TUNING, "cupy_call", True)
    monkeypatch.setattr(short, "CHUNK", 53)
    seqs = sorted(_random_seqs(400, 1, 400, seed=67), key=len, reverse=True)
    from rnapipe.model import Model
    assert short.fold_group(seqs, Model()) == cpu.fold_batch(seqs, "default", THREADS, {})


def test_kept_stream_pools(monkeypatch):
    """The per-stream pools are kept from one group to the next (grown when a group needs more, given
    back by release()): groups of shorter, then longer sequences, one chunk and many, then after a
    release, all identical to the CPU engine."""
    short = _short()
    from rnapipe.model import Model
    monkeypatch.setattr(short, "CHUNK", 64)
    short.release()
    assert short.cached_bytes() == 0
    for seed, count, top in ((61, 40, 80), (62, 700, 120), (63, 300, 400), (64, 900, 60)):
        seqs = sorted(_random_seqs(count, 1, top, seed=seed), key=len, reverse=True)
        assert short.fold_group(seqs, Model()) == cpu.fold_batch(seqs, "default", THREADS, {})
        assert short.cached_bytes() > 0
    short.release()
    assert short.cached_bytes() == 0
    seqs = sorted(_random_seqs(500, 1, 200, seed=65), key=len, reverse=True)
    assert short.fold_group(seqs, Model()) == cpu.fold_batch(seqs, "default", THREADS, {})


def test_fold_batch_order_and_out_of_memory(monkeypatch):
    """rnapipe.gpu.zuker.fold_batch on input already longest first (groups are slices), on shuffled input
    with empty sequences (gathered, then placed back), and when a group runs out of device memory (split
    in halves and retried): every result in input order and identical to the CPU engine."""
    import cupy

    from rnapipe.gpu import zuker as gpu
    short = _short()
    seqs = _random_seqs(600, 1, 300, seed=57)
    ref = dict(zip(seqs, cpu.fold_batch(seqs, "default", THREADS, {})))
    ordered = sorted(seqs, key=len, reverse=True)
    assert gpu.fold_batch(ordered, "default", 1, {}) == [ref[s] for s in ordered]

    real, sizes = short.fold_group, []

    def short_of_memory(group, model, lens=None, shape=None, constraints=None):
        sizes.append(len(group))
        if len(group) > 150:
            raise cupy.cuda.memory.OutOfMemoryError(1 << 40, 1 << 40)
        return real(group, model, lens, shape=shape, constraints=constraints)

    monkeypatch.setattr(short, "fold_group", short_of_memory)
    mixed = seqs[:200] + [""] + seqs[200:] + ["", ""]
    random.Random(58).shuffle(mixed)
    assert gpu.fold_batch(mixed, "default", 1, {}) == [ref[s] if s else (0, "") for s in mixed]
    assert sizes == [600, 300, 150, 150, 300, 150, 150]      # halves of halves, in order
