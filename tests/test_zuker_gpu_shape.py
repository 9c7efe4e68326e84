"""SHAPE reactivities (RNAfold's --shape, Deigan's method) on the GPU Zuker engine: MFE and structure identical to
the CPU engine's (rnapipe.cpu.zuker, itself tested against ViennaRNA with SHAPE data in tests/test_constraints.py),
with the default slope and intercept and another pair, with and without the pairing rules, at -d2 and -d0, on every
fill and every traceback:

* the short kernels (zs_fold_smem two sequences a block up to 120 nt, one a block up to 500 nt; zs_fold up to 600),
  which fold_batch takes for every sequence up to short_max_n() (zs_fold only where forced);
* zk_fill_block, zk_fill_diag and the tiled fill (fold_batch's fill beyond short_max_n()), forced with ``gpu_fill``, with
  the block and the thread GPU tracebacks (``gpu_traceback``) and the CPU engine's traceback on copied matrices
  (``host_traceback``); sequences up to 2,000 nt on the tiled fill;
* the hybrid folder (a batch with SHAPE data goes to its GPU) and ``rnapipe fold --device gpu --shape``, byte for
  byte the output of ``--device cpu``.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from seqgen import random_seqs

from rnapipe.constraints import deigan
from rnapipe.cpu import zuker as cpu

pytestmark = pytest.mark.gpu

THREADS = 16

METHODS = {"D": (1.8, -0.6), "Dm2.6b-0.3": (2.6, -0.3)}
RULES = {"none": {}, "noLP": {"no_lp": True},
         "all": {"no_lp": True, "no_gu": True, "no_closing_gu": True, "max_bp_span": 150}}


def _gpu():
    from rnapipe.gpu import zuker as gpu
    return gpu


def reactivities(n: int, rng: random.Random) -> list:
    """Random reactivities, about one in ten missing (None or negative), some large."""
    out = []
    for _ in range(n):
        u = rng.random()
        out.append(None if u < 0.07 else -1.0 if u < 0.1 else round(rng.expovariate(1.5), 3) if u < 0.9
                   else round(rng.uniform(0, 4), 4))
    return out


def shape_terms(seqs: list[str], method: tuple[float, float], seed: int) -> list[np.ndarray]:
    """The stacking pseudo-energies of each sequence (rnapipe.constraints.deigan), as the pipeline gives them to the
    engines; one sequence in eight without data (zeros)."""
    rng = random.Random(seed)
    out = []
    for s in seqs:
        if rng.random() < 0.125:
            out.append(np.zeros(len(s), dtype=np.int32))
        else:
            values = reactivities(len(s), rng)
            out.append(deigan([-1.0 if v is None else v for v in values], *method))
    return out


def _assert_same(seqs, options, shape):
    ours = _gpu().fold_batch(seqs, "default", THREADS, options, shape=shape)
    ref = cpu.fold_batch(seqs, "default", THREADS, {k: v for k, v in options.items()
                                                    if k not in ("gpu_fill", "gpu_traceback", "host_traceback")},
                         shape=shape)
    wrong = [(len(s), s, o, r) for s, o, r in zip(seqs, ours, ref) if o != r]
    assert not wrong, f"{len(wrong)} of {len(seqs)} differ; first: {wrong[0]}"


def _every_path(seed: int) -> list[str]:
    """Lengths of each of fold_batch's paths (some with N): <= 120, <= 232 and 233-600 (zs_fold_smem up to
    short_max_n(), the tiled fill beyond), and longer ones."""
    return (random_seqs(40, 1, 120, seed=seed, n_rate=0.02) + random_seqs(12, 121, 232, seed=seed + 1, n_rate=0.02)
            + random_seqs(6, 233, 600, seed=seed + 2, n_rate=0.02) + random_seqs(1, 700, 1200, seed=seed + 3)
            + ["GGGGAAAACCCC", "GGGGAAAACCCC" * 12, "N" * 50, "A"])


@pytest.mark.parametrize("rules, dangles, method", [("none", 2, "D"), ("none", 0, "Dm2.6b-0.3"),
                                                    ("noLP", 2, "Dm2.6b-0.3"), ("all", 0, "D"),
                                                    ("all", 2, "Dm2.6b-0.3")])
def test_default_paths_equal_the_cpu_engine(rules, dangles, method):
    seqs = _every_path(seed=200 + dangles + len(rules))
    _assert_same(seqs, {**RULES[rules], "dangles": dangles}, shape_terms(seqs, METHODS[method], seed=dangles))


FILLS = [("short", None, False), ("block", "block", False), ("block", "thread", False), ("block", None, True),
         ("diag", "block", False), ("diag", "thread", False), ("diag", None, True), ("tiled", "block", False),
         ("tiled", "thread", False), ("tiled", None, True)]


@pytest.mark.parametrize("fill, traceback, host", FILLS, ids=lambda x: str(x))
@pytest.mark.parametrize("rules", ["none", "all"])
def test_every_fill_and_traceback(rules, fill, traceback, host):
    """Each fill forced on sequences of 1-400 nt (and the longer fills on 600-1,000 too), with each traceback, at
    -d2 and -d0 (by the rules: the default model at -d2, the rules at -d0)."""
    seqs = random_seqs(20, 1, 400, seed=61, n_rate=0.02) + ["GGGGAAAACCCC" * 20]
    if fill != "short":
        seqs += random_seqs(1, 600, 1000, seed=62)
    options = {**RULES[rules], "dangles": 2 if rules == "none" else 0, "gpu_fill": fill, "host_traceback": host}
    if traceback:
        options["gpu_traceback"] = traceback
    _assert_same(seqs, options, shape_terms(seqs, METHODS["Dm2.6b-0.3" if host else "D"], seed=63))


@pytest.mark.parametrize("traceback, host", [("block", False), (None, True)])
def test_long_sequences_on_the_tiled_fill(traceback, host):
    """1,500-2,000 nt (the tiled fill's path), with the block traceback and the CPU engine's on copied matrices."""
    seqs = random_seqs(2, 1500, 2000, seed=71, n_rate=0.01)
    options = {"gpu_fill": "tiled", "host_traceback": host}
    if traceback:
        options["gpu_traceback"] = traceback
    _assert_same(seqs, options, shape_terms(seqs, METHODS["D"], seed=72))


def test_int32_ring_refold_keeps_the_shape_data():
    """Large pseudo-energies (slope 40 kcal/mol) push zs_fold_smem's int16 ring past its range: the sequences are
    folded again with the int32 ring, their SHAPE data with them."""
    seqs = random_seqs(30, 20, 200, seed=81)
    _assert_same(seqs, {}, shape_terms(seqs, (40.0, -0.6), seed=82))


def test_hybrid_takes_shape():
    """The hybrid folder with SHAPE data: the batch on its GPU, the CPU engine's results."""
    from rnapipe.pipeline.records import Records
    from test_zuker_gpu_options import static_hybrid

    seqs = random_seqs(60, 5, 300, seed=91)
    shape = shape_terms(seqs, METHODS["D"], seed=92)
    parts = [Records.from_lists([f"r{k}" for k in range(len(seqs))], seqs, range(len(seqs)), shape=shape)]
    folder, cpu_folder = static_hybrid({})
    scores, text = folder.fold_packed(parts)
    want_scores, want_text = cpu_folder.fold_packed(parts)
    assert scores.tolist() == want_scores.tolist()
    assert text == want_text


def test_cli_gpu_equals_cpu_byte_for_byte(tmp_path):
    """``rnapipe fold --device gpu --shape TABLE`` (with --shapeMethod and --noLP too) writes what ``--device cpu``
    writes."""
    from test_cli import rnapipe as run_rnapipe

    rng = random.Random(101)
    seqs = random_seqs(25, 10, 300, seed=101, n_rate=0.02) + random_seqs(1, 650, 800, seed=102)
    fa = tmp_path / "in.fa"
    fa.write_text("".join(f">r{k}\n{s}\n" for k, s in enumerate(seqs)))
    table = tmp_path / "shape.tsv"
    table.write_text("".join(f"r{k}\t{p}\t{x}\n" for k, s in enumerate(seqs) if k % 5 != 3
                             for p, x in enumerate(reactivities(len(s), rng), start=1) if x is not None))
    for more in ([], ["--shapeMethod", "Dm2.6b-0.3", "--noLP"]):
        out = {}
        for device in ("cpu", "gpu"):
            proc = run_rnapipe("fold", fa, "--shape", table, *more, "--device", device, "-q", cwd=tmp_path)
            assert proc.returncode == 0, proc.stderr
            out[device] = proc.stdout
        assert out["gpu"] == out["cpu"]
        assert out["cpu"].count(">") == len(seqs)
