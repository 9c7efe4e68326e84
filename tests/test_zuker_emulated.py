"""The GPU Zuker engine's kernels (rnapipe/gpu/kernels/zuker.cu) run on the CPU: built with g++ against
tests/cuda_emu/zuker_shim.h (a block's threads as fibers, barriers, named barriers, emulated warp votes and
shuffles) and driven by the GPU engine's own host code (rnapipe.gpu.zuker.fold_batch with numpy for CuPy), forced
onto the tiled fill (zk_mid, zk_fin_lanes, the chunked W, the block traceback) at lengths of several tiles, with the
default model, the pairing rules, hard constraints and SHAPE data (each a build of its own); MFE and structure
against the CPU engine (rnapipe.cpu.zuker), an independent implementation of the same recursions. Catches
a wrong index or rule in the kernels where there is no GPU; says nothing of their speed."""

from __future__ import annotations

import json

import pytest
from emulated import needs_gxx, run

pytestmark = needs_gxx


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory):
    """One build of the emulated kernels (per option set) for the module's tests."""
    return tmp_path_factory.mktemp("zuker_emu")


@pytest.mark.parametrize("count, seed, lo, hi, options, refolded", [
    (4, 3, 100, 170, {}, 0),                  # 4-6 tiles: tile diagonals 0 .. 5, the middle from D = 2; 16-bit window
    (2, 21, 500, 560, {}, 0),                 # 16-18 tiles, a transcript's length: zk_fin_lanes' cell lists and
                                              # barriers over many tile diagonals (a lost barrier fails here)
    (3, 4, 100, 170, {"mid_target_blocks": 1}, 0),   # no splits: zk_mid's blocks take 1-4 tiles (the small D's
                                                     # grouping); WM and VMX INF only in the band
    (3, 8, 100, 170, {"vgate_max_n": 0}, 0),   # zk_fin_lanes loading VAU, V1N, VI at every cell (long sequences'
                                              # build): zk_fill_band fills them right of the band
    (2, 7, 90, 140, {"no_lp": True, "no_gu": True, "temperature": 70}, 0),  # the pairing rules (-DZK_RULES), and
                                                                              # the interior loops' terms at 70 °C
    (3, 12, 90, 150, {"with_constraints": True, "enforce_constraint": True}, 0),   # hard constraints (-DZK_HC)
    (2, 14, 90, 140, {"with_shape": True}, 0),                                     # SHAPE terms (-DZK_SHAPE)
    (2, 5, 90, 140, {"aux16": False}, 2),                # zk_fin_lanes' window in int32 (the refold's build)
    (3, 9, 90, 140, {"fin_options": ["-DZF16_LO=-60", "-DZF16_HI=60"]}, 3),   # every one leaves the range: refolds
])
def test_emulated_tiled_fill_matches_the_cpu_engine(build_dir, count, seed, lo, hi, options, refolded):
    got = run("zuker_emu.py", build_dir, count, seed, lo, hi, json.dumps(options))
    assert got["count"] == count and got["differ"] == 0 and got["refolded"] == refolded, got
