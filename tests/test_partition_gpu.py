"""The partition function on the GPU (rnapipe.gpu.partition) against the CPU engine (rnapipe.cpu.partition, itself
tested against ViennaRNA in test_partition_cpu.py): ensemble free energies within 1e-9 relative, every pair
probability within 1e-9 (the whole matrix, threshold 0), unpaired probabilities, MFE and its structure, centroid,
MEA and RNAfold -p's line identical; both launch shapes (a block a sequence, a launch a diagonal); the scale's
restarts; ViennaRNA directly on a sample."""

from __future__ import annotations

import numpy as np
import pytest

from seqgen import random_seqs
from shared_data import shared_sequences

from rnapipe.cpu import partition as CPU
from rnapipe.model import Model

pytestmark = pytest.mark.gpu


def _gpu():
    from rnapipe.gpu import partition

    return partition


def _dense(r, n):
    P = np.zeros((n + 1, n + 1))
    P[r.i, r.j] = r.p
    return P


def _same(seqs, model=None, gpu_results=None):
    """GPU and CPU results of seqs agree; returns the largest probability difference."""
    model = model or Model()
    ours = gpu_results if gpu_results is not None else _gpu().fold_batch(seqs, model, threads=4, threshold=0.0)
    ref = CPU.fold_batch(seqs, model, threads=2, threshold=0.0)
    worst = 0.0
    for s, a, b in zip(seqs, ours, ref):
        n = len(s)
        assert abs(a.energy - b.energy) <= 1e-9 * max(1.0, abs(b.energy)), s
        assert a.mfe == b.mfe and a.structure == b.structure, s
        d = float(np.abs(_dense(a, n) - _dense(b, n)).max()) if n else 0.0
        assert d < 1e-9, s
        worst = max(worst, d)
        assert np.abs(a.unpaired - b.unpaired).max(initial=0.0) < 1e-9, s
        assert a.centroid == b.centroid and a.mea == b.mea and a.pseudo == b.pseudo, s
        assert abs(a.diversity - b.diversity) <= 1e-9 * max(1.0, b.diversity), s
        assert a.centroid_energy == b.centroid_energy and a.mea_energy == b.mea_energy, s
        assert abs(a.mfe_frequency - b.mfe_frequency) <= 1e-8 * max(1e-300, b.mfe_frequency), s
    return worst


def test_many_short_sequences_one_launch():
    """More sequences than two a multiprocessor: a block a sequence; lengths 1 .. 160 with N, empty ones."""
    seqs = random_seqs(400, 1, 160, seed=11, n_rate=0.02) + ["", "A", "GGGGAAAACCCC"]
    _same(seqs)


def test_few_sequences_a_launch_a_diagonal():
    """Few sequences (one launch a diagonal), of unlike lengths, with special hairpins."""
    seqs = random_seqs(6, 200, 700, seed=12, n_rate=0.01) + ["GGGGAAACCCCAUCGGGGAGAAUCCCC" * 3]
    _same(seqs)


def test_shared_data_sample():
    seqs = shared_sequences(400)[::25]
    if not seqs:
        pytest.skip("../shared/data not present")
    _same(seqs)


@pytest.mark.parametrize("temperature,dangles", [(37.0, 0), (90.0, 2), (0.0, 0)])
def test_other_models(temperature, dangles):
    _same(random_seqs(20, 20, 250, seed=int(temperature) + dangles, n_rate=0.02),
          Model(temperature=temperature, dangles=dangles))


@pytest.mark.parametrize("lam", [-5.0, 5.0])
def test_scale_restarts(monkeypatch, lam):
    """A first scale far off (cells past 1e280, or Z below 1e-280) is restarted with the MFE structure's scales
    and corrections, to the CPU engine's results."""
    seqs = random_seqs(3, 250, 400, seed=13, n_rate=0.0)
    gpu = _gpu()
    monkeypatch.setattr(gpu.cpu, "uniform_scales", lambda X, n, mfe: np.concatenate(([0.0], np.full(n, lam), [0.0])))
    ours = gpu.fold_batch(seqs, Model(), threads=2, threshold=0.0)
    monkeypatch.undo()
    _same(seqs, gpu_results=ours)


def test_against_viennarna():
    RNA = pytest.importorskip("RNA")
    seqs = random_seqs(10, 20, 500, seed=14, n_rate=0.0)
    for s, r in zip(seqs, _gpu().fold_batch(seqs, threshold=0.0)):
        fc = RNA.fold_compound(s)
        _, mfe = fc.mfe()
        fc.exp_params_rescale(mfe)
        _, G = fc.pf()
        assert abs(r.energy - G) < 0.01
        assert np.abs(_dense(r, len(s)) - np.array(fc.bpp())).max() < 1e-6


def test_several_gpus_share_the_records(tmp_path):
    """gpus= with the partition function: the records shared among the GPUs (two workers on GPU 0 where there
    is one GPU), each folded as on one GPU (600 records: each worker's 300 still fold a block a sequence, as the
    600 do on one GPU, so the sums are the same); the command line's --gpus writes what one GPU writes."""
    import cupy

    import rnapipe
    from test_cli import rnapipe as run

    gpus = [0, 1] if cupy.cuda.runtime.getDeviceCount() > 1 else [0, 0]
    seqs = random_seqs(600, 1, 300, seed=23, n_rate=0.01)
    seen = []
    shared = list(rnapipe.fold(seqs, partition=True, device="gpu", gpus=gpus, progress=seen.append))
    one = list(rnapipe.fold(seqs, partition=True, device="gpu"))
    assert sum(seen) == len(seqs)
    for a, b in zip(shared, one):
        assert (a.score_int, a.structure) == (b.score_int, b.structure)
        for x, y in zip(a.ensemble, b.ensemble):
            assert np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y, a.id
    fa = tmp_path / "in.fa"
    fa.write_text("".join(f">s{k}\n{s or 'A'}\n" for k, s in enumerate(seqs)))
    for name, extra in (("one", []), ("two", ["--gpus", ",".join(str(g) for g in sorted(set(gpus)))])):
        proc = run("fold", fa, "-p", "--device", "gpu", *extra, "-o", tmp_path / f"{name}.tsv", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "one.tsv").read_bytes() == (tmp_path / "two.tsv").read_bytes()


def test_hybrid_device_folds_as_the_engines_do(tmp_path):
    """--device hybrid with -p: a batch shared between the CPU engine and the GPU (a profile whose CPU is as fast as
    the GPU: each side gets records); every record as its engine folds it alone (the two agree within 1e-9)."""
    from rnapipe.pipeline.ensemble.hybrid import EnsembleHybridFolder
    from rnapipe.pipeline.ensemble.request import Settings
    from rnapipe.pipeline.hybrid.costmodel import Cost, Profile
    from rnapipe.pipeline.records import Records

    seqs = random_seqs(300, 1, 300, seed=31, n_rate=0.01)
    cost = Cost(1e-9, 1e-7, 1e-5)
    settings = Settings(threshold=0.0)
    hybrid = EnsembleHybridFolder(4, settings=settings, profile=Profile({}, {}, {"cpu": cost, "gpu": cost},
                                                                        {"cpu": 0.0}))
    records = Records.from_lists([str(k) for k in range(len(seqs))], seqs, range(len(seqs)))
    scores, structures, chunk = hybrid.fold_packed([records])
    assert 0 < hybrid.cpu_records < len(seqs)
    ref = CPU.fold_batch(seqs, Model(), threads=2, threshold=0.0)
    assert structures.decode().split("\n")[:-1] == [r.structure for r in ref]
    assert list(scores) == [round(r.mfe * 100) for r in ref]
    for s, e, r in zip(seqs, chunk.values, ref):
        assert abs(e.energy - r.energy) <= 1e-9 * max(1.0, abs(r.energy)), s
        assert e.centroid == r.centroid and e.mea == r.mea, s
        assert np.abs(e.unpaired - r.unpaired).max(initial=0.0) < 1e-9, s
    (tmp_path / "in.fa").write_text("".join(f">s{k}\n{s or 'A'}\n" for k, s in enumerate(seqs)))
    from test_cli import rnapipe as run
    proc = run("fold", "in.fa", "-p", "--device", "hybrid", "-o", "h.tsv", cwd=tmp_path)
    assert proc.returncode == 0 and "hybrid (static, partition function)" in proc.stderr, proc.stderr
    assert len((tmp_path / "h.tsv").read_text().splitlines()) == len(seqs) + 1
