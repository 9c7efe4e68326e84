"""RNAfold's pairing rules (--noLP, --noGU, --noClosingGU, --maxBPspan: ``no_lp``, ``no_gu``, ``no_closing_gu``,
``max_bp_span``) on the GPU Zuker engine: MFE and structure identical to the CPU engine's (rnapipe.cpu.zuker,
itself tested against ViennaRNA under the same rules in tests/test_zuker_options.py), each rule alone and all four
together, at -d2, -d0 and other temperatures, on every fill and every traceback:

* the short kernels (rnapipe.gpu.zuker_short: zs_fold_smem up to SMEM_MAX_N nt, two sequences a block up to
  120 nt, which fold_batch takes for every sequence up to rnapipe.gpu.zuker.short_max_n(); zs_fold up to MAX_N,
  forced with ``gpu_fill``);
* zk_fill_block, zk_fill_diag and the tiled fill (zk_mid + zk_fin_lanes: fold_batch's fill beyond short_max_n()), forced with
  ``gpu_fill`` on short and long sequences, with the block and the thread GPU tracebacks (``gpu_traceback``) and
  the CPU engine's traceback on copied matrices (``host_traceback``);
* spans shorter and longer than the sequences, at the tiled fill's tile edges too (the fill then leaves the cells
  beyond the span alone);
* fold_packed and the hybrid folder (CPU and GPU sharing a batch), which take the same rules.
"""

from __future__ import annotations

import random

import pytest
from seqgen import random_seqs

from rnapipe.cpu import zuker as cpu

pytestmark = pytest.mark.gpu

THREADS = 16

RULES = {
    "noLP": {"no_lp": True},
    "noGU": {"no_gu": True},
    "noClosingGU": {"no_closing_gu": True},
    "span40": {"max_bp_span": 40},
    "span150": {"max_bp_span": 150},
    "span700": {"max_bp_span": 700},           # longer than every short sequence, shorter than the long ones
    "all": {"no_lp": True, "no_gu": True, "no_closing_gu": True, "max_bp_span": 150},
}


def _gpu():
    from rnapipe.gpu import zuker as gpu
    return gpu


def gu_rich(count: int, lo: int, hi: int, seed: int) -> list[str]:
    """Sequences with many G and U (GU pairs everywhere: what no_gu and no_closing_gu change most)."""
    rng = random.Random(seed)
    return ["".join(rng.choice("GGGUUUACN" if rng.random() < 0.1 else "GGGUUUAC") for _ in range(rng.randint(lo, hi)))
            for _ in range(count)]


def _assert_same(seqs, options):
    ours = _gpu().fold_batch(seqs, "default", THREADS, options)
    ref = cpu.fold_batch(seqs, "default", THREADS, {k: v for k, v in options.items()
                                                    if k not in ("gpu_fill", "gpu_traceback", "host_traceback")})
    wrong = [(len(s), s, o, r) for s, o, r in zip(seqs, ours, ref) if o != r]
    assert not wrong, f"{len(wrong)} of {len(seqs)} differ; first: {wrong[0]}"


def _every_path(seed: int) -> list[str]:
    """Lengths of each of fold_batch's paths: zs_fold_smem two a block (<= 120), one a block (<= 232, and up to
    short_max_n() among the next), the tiled fill beyond; GU-rich ones among them."""
    return (random_seqs(40, 1, 120, seed=seed) + gu_rich(10, 20, 120, seed=seed + 1)
            + random_seqs(16, 121, 232, seed=seed + 2) + gu_rich(4, 121, 232, seed=seed + 3)
            + random_seqs(8, 233, 600, seed=seed + 4) + gu_rich(2, 233, 600, seed=seed + 5)
            + random_seqs(2, 601, 1600, seed=seed + 6) + gu_rich(1, 601, 1200, seed=seed + 7)
            + ["GGGGAAAACCCC", "GGGUUUUCCC", "N" * 50, "A"])


@pytest.mark.parametrize("dangles", [2, 0])
@pytest.mark.parametrize("rules", list(RULES.values()), ids=list(RULES))
def test_default_paths_equal_the_cpu_engine(rules, dangles):
    _assert_same(_every_path(seed=100 + dangles), {**rules, "dangles": dangles})


@pytest.mark.parametrize("temperature, dangles", [(25.0, 2), (50.0, 0)])
@pytest.mark.parametrize("rules", [RULES["noLP"], RULES["noClosingGU"], RULES["all"]], ids=["noLP", "noClosingGU",
                                                                                         "all"])
def test_other_temperatures(rules, temperature, dangles):
    seqs = random_seqs(30, 1, 600, seed=7) + gu_rich(10, 20, 300, seed=8) + random_seqs(1, 601, 1000, seed=9)
    _assert_same(seqs, {**rules, "temperature": temperature, "dangles": dangles})


FILLS = [("short", None, False), ("block", "block", False), ("block", "thread", False), ("block", None, True),
         ("diag", "block", False), ("diag", "thread", False), ("diag", None, True), ("tiled", "block", False),
         ("tiled", "thread", False), ("tiled", None, True)]


@pytest.mark.parametrize("fill, traceback, host", FILLS, ids=lambda x: str(x))
@pytest.mark.parametrize("rules", [RULES["noLP"], RULES["noGU"], RULES["noClosingGU"], RULES["span40"],
                                   RULES["all"]], ids=["noLP", "noGU", "noClosingGU", "span40", "all"])
def test_every_fill_and_traceback(rules, fill, traceback, host):
    """Each fill forced on sequences of 1-400 nt (the short kernels on 501-600 too: zs_fold; the longer fills on
    600-1,100), with each traceback."""
    seqs = random_seqs(30, 1, 400, seed=21) + gu_rich(8, 20, 400, seed=22) + ["GGGGAAAACCCC" * 20]
    seqs += random_seqs(2, 600, 1100, seed=23) if fill != "short" else random_seqs(3, 501, 600, seed=24)
    options = {**rules, "gpu_fill": fill, "host_traceback": host}
    if traceback:
        options["gpu_traceback"] = traceback
    _assert_same(seqs, options)


@pytest.mark.parametrize("span", [1, 4, 5, 6, 31, 32, 33, 34, 63, 64, 65, 97, 250, 601])
def test_spans_at_the_edges(span):
    """Spans too short for any pair (1-4 nt), the shortest pairs' (5), and either side of the tiled fill's tile
    edges (32 nt tiles: the last tile diagonal it fills changes there); the default paths and the tiled fill
    forced on short sequences, with no_lp on and off."""
    seqs = random_seqs(12, 1, 300, seed=span) + gu_rich(3, 50, 300, seed=span + 1) + random_seqs(1, 601, 900,
                                                                                                 seed=span + 2)
    for more in ({}, {"no_lp": True}):
        _assert_same(seqs, {"max_bp_span": span, **more})
        _assert_same(seqs[:15], {"max_bp_span": span, **more, "gpu_fill": "tiled"})


def test_packed_input_takes_the_rules():
    """fold_packed (the pipeline's call) with the rules gives fold_batch's results."""
    import numpy as np

    seqs = random_seqs(60, 1, 700, seed=31) + gu_rich(10, 20, 300, seed=32)
    options = RULES["all"]
    text = "".join(s + "\n" for s in seqs).encode("ascii")
    energies, structures = _gpu().fold_packed(text, np.array([len(s) for s in seqs]), "default", THREADS, options)
    ref = cpu.fold_batch(seqs, "default", THREADS, options)
    assert energies.tolist() == [e for e, _ in ref]
    assert structures.decode("ascii").split("\n")[:-1] == [s for _, s in ref]


def static_hybrid(options: dict):
    """A hybrid folder over the CPU engine (4 threads) and GPU 0 with a fixed profile and the static split, and
    its CPU folder (the reference): the GPU tests of the hybrid under the model's options, constraints and SHAPE."""
    from rnapipe.pipeline.folding.folder import Folder
    from rnapipe.pipeline.hybrid.costmodel import Cost, Profile
    from rnapipe.pipeline.hybrid.folder import HybridFolder

    cpu_folder = Folder("zuker", None, "cpu", 4, None, options)
    gpu_folder = Folder("zuker", None, "gpu", 1, [0], options)
    profile = Profile({}, {"cpu": {68: 3e-4}, "gpu": {68: 1e-4}},
                      {"cpu": Cost(0.0, 3e-7, 0.0), "gpu": Cost(0.0, 1e-7, 0.0)})
    folder = HybridFolder("zuker", threads=5, options=options, cpu=cpu_folder, gpu=gpu_folder, profile=profile,
                          split="static")
    return folder, cpu_folder


def test_hybrid_takes_the_rules():
    """The hybrid folder with the rules on both of its engines (the CPU given 30 % of the records): the CPU
    engine's results."""
    from rnapipe.pipeline.records import Records

    options = {"no_lp": True, "no_closing_gu": True, "max_bp_span": 120}
    seqs = random_seqs(80, 5, 300, seed=41) + gu_rich(20, 20, 200, seed=42)
    parts = [Records.from_lists([f"r{k}" for k in range(len(seqs))], seqs, range(len(seqs)))]
    folder, cpu_folder = static_hybrid(options)
    folder.cpu_share = 0.3
    scores, text = folder.fold_packed(parts)
    want_scores, want_text = cpu_folder.fold_packed(parts)
    assert scores.tolist() == want_scores.tolist()
    assert text == want_text
    assert 0 < folder.cpu_records < folder.records == len(seqs)
