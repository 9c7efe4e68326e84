"""Zuker MFE on the GPU: MFE and structure identical to the CPU engine (rnapipe.cpu.zuker, itself exact
against ViennaRNA), on random sequences, real RNAs, both fills, both tracebacks, batch boundaries, N bases.

Default run (a couple of minutes with the CPU reference on the device's cores): 3,000 random sequences of
1-600 nt, 40 of 600-2,500, every 10th record of ../shared/data up to 1,000 nt; the tiled fill and the block
traceback of long sequences also forced on short ones, and at a second tile size. RNAPIPE_FULL=1 runs the
issue's counts: 100,000 of 1-600, 300 of 600-5,000 and every record of ../shared/data.
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


def _gpu():
    from rnapipe.gpu import zuker as gpu
    return gpu




def _assert_same(seqs, options=None, chunk=20_000):
    options = options or {}
    for k in range(0, len(seqs), chunk):
        part = seqs[k:k + chunk]
        ours = _gpu().fold_batch(part, "default", THREADS, options)
        ref = cpu.fold_batch(part, "default", THREADS, {x: y for x, y in options.items()
                                                         if x in ("temperature", "dangles", "params")})
        wrong = [(len(s), s, o, r) for s, o, r in zip(part, ours, ref) if o != r]
        assert not wrong, f"{len(wrong)} of {len(part)} differ; first: {wrong[0]}"


def test_random_short_identical_to_cpu():
    _assert_same(_random_seqs(100_000 if FULL else 3_000, 1, 600, seed=5))


def test_random_long_identical_to_cpu():
    _assert_same(_random_seqs(300 if FULL else 40, 600, 5_000 if FULL else 2_500, seed=6), chunk=100)


@pytest.mark.parametrize("fill,host", [("diag", False), ("block", True), ("diag", True)])
def test_both_fills_and_both_tracebacks(fill, host):
    _assert_same(_random_seqs(300, 1, 400, seed=7), {"gpu_fill": fill, "host_traceback": host})


@pytest.mark.parametrize("fill,traceback", [("tiled", "block"), ("tiled", "thread"), ("diag", "block"),
                                            ("block", "block")])
def test_tiled_fill_and_block_traceback(fill, traceback):
    """Every fill with every GPU traceback, forced on short sequences too (1-400 nt: partial edge tiles,
    sequences shorter than one tile, all-N) and on long ones (tile diagonals with middle products)."""
    seqs = _random_seqs(200, 1, 400, seed=11) + ["N" * 70, "GGGGAAAACCCC" * 40]
    seqs += _random_seqs(12, 600, 2_000, seed=12)
    _assert_same(seqs, {"gpu_fill": fill, "gpu_traceback": traceback})


@pytest.mark.parametrize("tile,fin,warps", [(64, "zk_fin_flat", 8), (32, "zk_fin", 8), (32, "zk_fin_flat", 4),
                                            (32, "zk_fin_flat", 16), (32, "zk_fin_flat", 8),
                                            (32, "zk_fin_lanes", 6), (32, "zk_fin_lanes", 16)])
def test_tiled_fill_other_tiles_and_cell_kernels(monkeypatch, tile, fin, warps):
    """The tile finishers (zk_fin_lanes, the default; zk_fin_flat; zk_fin) at other tile sizes and warp counts."""
    gpu = _gpu()
    monkeypatch.setattr(gpu, "TILE", tile)
    monkeypatch.setattr(gpu, "FIN_KERNEL", fin)
    monkeypatch.setattr(gpu, "FIN_WARPS", warps)
    if fin == "zk_fin_lanes":                           # 6 to 16 warps (zk_fin_lanes' roles)
        monkeypatch.setattr(gpu, "FIN_LANES_WARPS", warps)
    _assert_same(_random_seqs(8, 600, 2_000, seed=13) + _random_seqs(40, 1, 200, seed=14),
                 {"gpu_fill": "tiled", "gpu_traceback": "block"})


def test_aux16_on_and_off_and_gc_rich_identical_to_cpu(monkeypatch):
    """zk_fin_lanes' window in 16 bits (FIN_AUX16, biased by the least V or WM beside the tile) and in int32: random
    sequences of 481-1,600 nt, GC-rich ones (the most stable folds: the largest spread of values in a window) and
    ones with N and a poly(A) tail, the CPU engine's results either way."""
    gpu = _gpu()
    rng = random.Random(91)
    seqs = _random_seqs(24, 481, 1_600, seed=92)
    seqs += ["".join(rng.choice("GGGCCCAU") for _ in range(rng.randint(481, 1_200))) for _ in range(12)]
    seqs += ["".join(rng.choice("GC") for _ in range(rng.randint(481, 900))) for _ in range(6)]
    seqs += ["".join("N" if rng.random() < 0.03 else rng.choice("ACGU") for _ in range(rng.randint(900, 1_600)))
             + "A" * 200 for _ in range(6)]                # rows and columns with no pair near some tiles
    _assert_same(seqs, {"gpu_fill": "tiled"})
    monkeypatch.setattr(gpu, "FIN_AUX16", False)
    _assert_same(seqs, {"gpu_fill": "tiled"})


def test_aux16_overflow_refolds(monkeypatch):
    """With the 16-bit window's range cut to [-60, 60] dcal/mol about the bias nearly every sequence leaves it: each
    is folded again with the int32 window (only those), and every result is still the CPU engine's, in order."""
    gpu = _gpu()
    monkeypatch.setattr(gpu, "FIN_OPTIONS", ("-DZF16_LO=-60", "-DZF16_HI=60"))
    again = []
    once = gpu._fold_group_with

    def counted(seqs, model, fill, host, block, shape, constraints, aux16):
        if not aux16:
            again.extend(seqs)
        return once(seqs, model, fill, host, block, shape, constraints, aux16)
    monkeypatch.setattr(gpu, "_fold_group_with", counted)
    seqs = _random_seqs(30, 100, 900, seed=93)
    _assert_same(seqs, {"gpu_fill": "tiled"})
    assert 0 < len(again) <= len(seqs)


def test_kept_matrices():
    """The tiled fill's matrices are kept from one call to the next (grown when a group needs more, reused, INF
    again where a smaller group follows a larger one) and given back before a group of the short kernels: every
    result identical to the CPU engine."""
    gpu = _gpu()
    gpu.release()
    assert gpu.cached_bytes() == 0
    for seed, count, lo, hi in ((71, 3, 700, 900), (72, 6, 1_000, 1_400), (73, 4, 520, 700), (74, 1, 1_500, 1_500)):
        seqs = _random_seqs(count, lo, hi, seed=seed)
        _assert_same(seqs)
        assert gpu.cached_bytes() >= 7 * 4 * max(len(x) + 2 for x in seqs) ** 2
    _assert_same(_random_seqs(50, 20, 200, seed=75))           # one group of the short kernels
    assert gpu.cached_bytes() == 0


@pytest.mark.parametrize("temperature,dangles", [(37.0, 0), (20.0, 2), (60.0, 0)])
def test_temperatures_and_dangles(temperature, dangles):
    _assert_same(_random_seqs(400, 1, 300, seed=int(temperature) + dangles),
                 {"temperature": temperature, "dangles": dangles})


def test_mfe_matches_viennarna_and_structure_has_it():
    """An independent reference: RNA.fold's MFE, and our structure evaluated by loop decomposition."""
    RNA = pytest.importorskip("RNA")
    from rnapipe.energy import eval_structure
    seqs = _random_seqs(200, 5, 300, seed=8, n_rate=0.0)
    for s, (e, db) in zip(seqs, _gpu().fold_batch(seqs, "default", THREADS, {})):
        assert e == round(RNA.fold(s)[1] * 100)
        assert eval_structure(s, db) == e


def test_batch_boundaries_order_and_edge_cases(monkeypatch):
    """A tiny memory budget forces many batches; mixed lengths, empty and all-N sequences, input order kept."""
    gpu = _gpu()
    seqs = _random_seqs(120, 1, 700, seed=9) + ["", "N" * 50, "A", "GGGGAAAACCCC", "NNNGGGGAAAACCCCNNN"]
    random.Random(10).shuffle(seqs)
    budget = 3 * gpu.bytes_needed(700)
    monkeypatch.setattr(gpu, "memory_budget", lambda: budget)
    seen = []
    ours = gpu.fold_batch(seqs, "default", THREADS, {}, progress=seen.append)
    assert sum(seen) == len(seqs) - 1            # the empty sequence needs no batch
    assert len(seen) > 5
    assert ours == cpu.fold_batch(seqs, "default", THREADS, {})
    assert ours[seqs.index("GGGGAAAACCCC")] == (-540, "((((....))))")
    assert ours[seqs.index("")] == (0, "")


def test_shared_data_identical_to_cpu():
    seqs = shared_sequences(10_000 if FULL else 1_000)
    if not seqs:
        pytest.skip("../shared/data is not here")
    _assert_same(seqs if FULL else seqs[::10])


def test_flat_tables_hold_the_cpu_tables():
    """Every table lands at its zuker_core.cuh offset unchanged (checked against the EnergyTables fields)."""
    import numpy as np
    from rnapipe.model import Model
    _gpu()
    from rnapipe.gpu import zuker_tables
    T = Model().tables()
    flat = zuker_tables.flat_tables(T, 100)
    off = zuker_tables._kernel_offsets()
    for name in ("stack", "int22", "mismatch_multi", "dangle3", "scalars", "hairpin"):
        a = np.asarray(getattr(T, name)).ravel()
        assert (flat[off[name]:off[name] + a.size] == a).all()
    from rnapipe.energy import loop_length_energy
    for m in (3, 30, 31, 100):
        assert flat[flat[9] + m] == loop_length_energy(T.hairpin, T.lxc, m)


def test_engine_registered():
    from rnapipe import engines
    module, variant = engines.get_engine("zuker", "gpu", None)
    assert module.__name__ == "rnapipe.gpu.zuker" and variant == "default"
