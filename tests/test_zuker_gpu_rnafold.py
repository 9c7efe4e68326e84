"""The GPU engine's structures are RNAfold's: on every GPU path (the short-sequence kernels with either
traceback, the block fill with the one-thread traceback, the per-diagonal and tiled fills with the
one-block traceback, the CPU engine's traceback on matrices copied back), the dot-bracket equals
ViennaRNA's ``RNA.fold_compound(seq, md).mfe()`` for the same model details (dangles 2 and 0, another
temperature), not only its energy: among co-optimal structures the one ViennaRNA's backtracking picks.

The reference is ViennaRNA itself, computed here once per set and model (a minute or two in all). RNAPIPE_FULL=1
adds a sequence above ``HOST_TRACEBACK_N`` folded with the thread traceback (so on the host, unforced).
"""

from __future__ import annotations

import functools
import os

import pytest

from seqgen import random_seqs

pytestmark = pytest.mark.gpu

RNA = pytest.importorskip("RNA")

FULL = os.environ.get("RNAPIPE_FULL") == "1"
THREADS = os.cpu_count() or 1

# Random sequences with N, and the degenerate ones: poly-A, GC repeats, all N, a tiny hairpin.
SHORT = tuple(random_seqs(400, 1, 600, seed=301) + ["A" * 300, "GC" * 150, "N" * 80, "GGGGAAAACCCC"])
SMEM = tuple(random_seqs(400, 1, 232, seed=302) + ["A" * 232, "GC" * 116, "GGGAAAUCCC" * 23])
LONG = tuple(random_seqs(8, 600, 1_600, seed=303))
MODELS = [(37.0, 2), (37.0, 0), (20.0, 2)]


@functools.lru_cache(maxsize=None)
def _rnafold(seqs: tuple, temperature: float, dangles: int) -> list:
    """(MFE in dcal/mol, dot-bracket) of each sequence by ViennaRNA, once per set and model."""
    md = RNA.md()
    md.temperature = temperature
    md.dangles = dangles
    out = []
    for s in seqs:
        structure, mfe = RNA.fold_compound(s, md).mfe()
        out.append((round(mfe * 100), structure))
    return out


def _assert_rnafold(seqs: tuple, options: dict, temperature: float = 37.0, dangles: int = 2):
    from rnapipe.gpu import zuker as gpu

    ours = gpu.fold_batch(list(seqs), "default", THREADS, {**options, "temperature": temperature,
                                                           "dangles": dangles})
    ref = _rnafold(seqs, temperature, dangles)
    wrong = [(len(s), s, o, r) for s, o, r in zip(seqs, ours, ref) if o != r]
    assert not wrong, f"{len(wrong)} of {len(seqs)} differ; first (n, seq, ours, RNAfold's): {wrong[0]}"


@pytest.mark.parametrize("temperature, dangles", MODELS)
def test_short_kernels(temperature, dangles):
    """zuker_short's kernels as fold_batch picks them: zs_fold_smem up to SMEM_MAX_N (traceback in
    zs_tb_smem), zs_fold beyond (traceback at the end of the fill kernel)."""
    _assert_rnafold(SHORT, {"gpu_fill": "short"}, temperature, dangles)


@pytest.mark.parametrize("dangles", [2, 0])
def test_short_smem_kernel_with_its_traceback_inside(monkeypatch, dangles):
    from rnapipe.gpu import zuker_short
    monkeypatch.setitem(zuker_short.TUNING, "tb_apart", False)
    _assert_rnafold(SMEM, {"gpu_fill": "short"}, dangles=dangles)


@pytest.mark.parametrize("temperature, dangles", MODELS)
def test_block_fill_thread_traceback(temperature, dangles):
    """zk_fill_block and zk_traceback (one thread per sequence)."""
    _assert_rnafold(SHORT, {"gpu_fill": "block", "gpu_traceback": "thread"}, temperature, dangles)


@pytest.mark.parametrize("fill", ["tiled", "diag"])
@pytest.mark.parametrize("temperature, dangles", MODELS)
def test_long_fills_block_traceback(fill, temperature, dangles):
    """zk_traceback_block (one block per sequence) after the tiled and per-diagonal fills, on long
    sequences and, forced, on short ones."""
    _assert_rnafold(LONG + SHORT[:150], {"gpu_fill": fill, "gpu_traceback": "block"}, temperature, dangles)


@pytest.mark.parametrize("dangles", [2, 0])
def test_tiled_fill_thread_traceback(dangles):
    _assert_rnafold(LONG + SHORT[:150], {"gpu_fill": "tiled", "gpu_traceback": "thread"}, dangles=dangles)


@pytest.mark.parametrize("temperature, dangles", MODELS)
def test_host_traceback_above_its_length(monkeypatch, temperature, dangles):
    """With the thread traceback, sequences above HOST_TRACEBACK_N get the CPU engine's traceback on the
    matrices copied back (the threshold lowered here so that the path is taken on these lengths)."""
    from rnapipe.gpu import zuker as gpu
    monkeypatch.setattr(gpu, "HOST_TRACEBACK_N", 300)
    _assert_rnafold(LONG + SHORT[:150], {"gpu_fill": "diag", "gpu_traceback": "thread"}, temperature, dangles)


@pytest.mark.parametrize("fill", ["block", "tiled"])
def test_host_traceback_forced(fill):
    _assert_rnafold(LONG + SHORT[:150], {"gpu_fill": fill, "host_traceback": True})


@pytest.mark.skipif(not FULL, reason="RNAPIPE_FULL=1: ViennaRNA takes a while on 8,200 nt")
def test_host_traceback_above_its_length_unforced():
    from rnapipe.gpu import zuker as gpu
    _assert_rnafold(tuple(random_seqs(1, gpu.HOST_TRACEBACK_N + 200, gpu.HOST_TRACEBACK_N + 200, seed=304)),
                    {"gpu_fill": "diag", "gpu_traceback": "thread"})
