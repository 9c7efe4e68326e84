"""The GPU partition function's kernels (rnapipe/gpu/kernels/partition.cu) run on the CPU: built with g++ against
tests/cuda_emu/shim.h (a block's threads as fibers, barriers, emulated warp shuffles) and driven by the GPU
engine's own host code (rnapipe.gpu.partition.fold_batch with numpy for CuPy), their results against the CPU engine
(rnapipe.cpu.partition), an independent implementation of the same recursions. Catches a wrong index or rule in
the kernels where there is no GPU; says nothing of their speed."""

from __future__ import annotations

import pytest
from emulated import needs_gxx, run

pytestmark = needs_gxx


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory):
    """One build of the emulated kernels for the module's tests."""
    return tmp_path_factory.mktemp("cuda_emu")


@pytest.mark.parametrize("count, seed, lo, hi, calls", [
    (2, 4, 70, 100, 1),     # many sequences: a block a sequence, the bands' bulk sums (pf_band) inside and outside
    (1, 5, 40, 75, 1),      # one: a launch a diagonal
    (16, 6, 8, 20, 2),      # cut into pieces (8 sequences a multiprocessor; one here), each one's host part
])                          # beside the next one's fill
def test_emulated_kernels_match_the_cpu_engine(build_dir, count, seed, lo, hi, calls):
    got = run("emu.py", build_dir, count, seed, lo, hi, timeout=600)
    assert got["G"] < 1e-12 and got["p"] < 1e-12 and got["differ"] == 0, got
    assert got["calls"] == calls and got["folded"] == count, got
    assert got["host_signature"], got       # host_compiled() looks for what the engine's own call compiles


def test_pieces_cut_only_groups_that_keep_the_gpu_full():
    """rnapipe.gpu.partition.pieces: each group in order, cut into at most PIECES runs of like counts, each of at
    least PIECE_BLOCKS sequences a multiprocessor; every sequence once."""
    import numpy as np

    from rnapipe.gpu.partition import PIECE_BLOCKS, PIECES, pieces

    for sms in (1, 4, 132):
        for sizes in ([1], [PIECE_BLOCKS * sms * 2 - 1], [PIECE_BLOCKS * sms * 2], [20000, 5, 3000], [7, 999]):
            start, groups = 0, []
            for size in sizes:
                groups.append(np.arange(start, start + size))
                start += size
            out = pieces(groups, sms)
            assert np.array_equal(np.concatenate(out), np.arange(start))
            k = 0
            for group in groups:
                n = min(PIECES, len(group) // (PIECE_BLOCKS * sms))
                cut = out[k:k + max(1, n)]
                k += len(cut)
                assert np.array_equal(np.concatenate(cut), group)
                assert len(cut) == max(1, n) and (len(cut) == 1 or min(map(len, cut)) >= PIECE_BLOCKS * sms)
                assert max(map(len, cut)) - min(map(len, cut)) <= 1
