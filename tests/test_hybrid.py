"""--device hybrid: the cost model's fit, the split of a batch between CPU and GPU (against brute force), the
hybrid folder's merge (with a CPU engine standing in for the GPU here; the real GPU under the gpu marker), the
saved profile, and the command line's refusals."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from rnapipe.pipeline import costmodel, partition
from rnapipe.pipeline.costmodel import Cost, Profile
from rnapipe.pipeline.hybrid import HybridFolder
from rnapipe.pipeline.records import Records
from rnapipe.pipeline.stream import Folder
from test_cli import one_error_line, rnapipe
from test_resume import FORMATS, cli, make_input


# ---------------------------------------------------------------------------------------------------------
# cost model


@pytest.mark.parametrize("a, b, c", [(2e-9, 3e-7, 4e-5), (1e-9, 0.0, 0.0), (0.0, 0.0, 7e-6), (0.0, 5e-8, 1e-6)])
def test_cost_fit_recovers_the_coefficients(a, b, c):
    lens = np.array(costmodel.LENGTHS, dtype=np.float64)
    seconds = (a * lens + b) * lens * lens + c
    fit = Cost.fit(lens, seconds)
    assert np.allclose(fit.seconds(lens), seconds, rtol=1e-6)
    assert min(fit.a, fit.b, fit.c) >= 0


def test_cost_fit_stays_non_negative_on_noisy_times():
    rng = np.random.default_rng(3)
    lens = np.array(costmodel.LENGTHS, dtype=np.float64)
    seconds = (1e-9 * lens ** 3 + 2e-6) * rng.uniform(0.7, 1.3, lens.size)
    fit = Cost.fit(lens, seconds)
    assert min(fit.a, fit.b, fit.c) >= 0
    assert np.all(np.abs(fit.seconds(lens) / seconds - 1) < 0.6)


def test_profile_saved_and_loaded_for_its_key_only(tmp_path):
    key = {"rnapipe": "x", "cpu_threads": 3, "gpu": "G", "options": {}}
    profile = Profile.fitted(key, {"cpu": {68: 1e-3, 120: 4e-3}, "gpu": {68: 1e-6, 120: 3e-6}})
    path = tmp_path / "p.json"
    profile.save(path)
    again = Profile.load(path, key)
    assert again is not None and again.costs == profile.costs and again.samples == profile.samples
    assert Profile.load(path, dict(key, cpu_threads=4)) is None
    path.write_text("{not json")
    assert Profile.load(path, key) is None


def test_measure_times_every_length_that_fits():
    folder = Folder("nussinov", None, "cpu", 1)
    got = costmodel.measure(folder, lengths=(20, 40, 80), seconds=0.01, longest=40)
    assert sorted(got) == [20, 40] and all(v > 0 for v in got.values())


# ---------------------------------------------------------------------------------------------------------
# split


def finish(tc, tg, mask) -> float:
    return max(float(np.sum(tc[mask])), float(np.sum(tg[~mask])))


@pytest.mark.parametrize("n, k", [(1000, 9.0), (20000, 127.0), (7, 0.5), (50, 1.0), (3, 1000.0)])
def test_equal_lengths_give_the_papers_boundary(n, k):
    tc, tg = np.full(n, k * 1e-4), np.full(n, 1e-4)
    mask = partition.split(tc, tg)
    b = int(mask.sum())
    assert b in (int(np.floor(n / (k + 1))), int(np.ceil(n / (k + 1))))
    assert mask[:b].all() and not mask[b:].any()          # the first B records go to the CPU
    # and no other count does better
    best = min(max(m * k, n - m) * 1e-4 for m in range(n + 1))
    assert finish(tc, tg, mask) == pytest.approx(best)


def test_mixed_lengths_within_one_record_of_the_best_split():
    rng = random.Random(11)
    for _ in range(300):
        n = rng.randint(1, 10)
        lens = np.array([rng.randint(20, 3000) for _ in range(n)], dtype=np.int64)
        cpu = Cost(rng.uniform(1e-10, 1e-8), rng.uniform(0, 1e-7), rng.uniform(0, 1e-4))
        gpu = Cost(rng.uniform(1e-11, 1e-9), rng.uniform(0, 1e-8), rng.uniform(0, 1e-5))
        tc, tg = cpu.seconds(lens), gpu.seconds(lens)
        mask = partition.split(tc, tg)
        best = min(finish(tc, tg, np.array(bits, dtype=bool)) for bits in itertools.product([0, 1], repeat=n))
        largest = float(np.max(np.maximum(tc, tg)))
        got = finish(tc, tg, mask)
        assert best - 1e-12 <= got <= best + largest + 1e-12


def test_a_record_one_device_cannot_fold_goes_to_the_other():
    tc = np.array([1.0, np.inf, 1.0, 1.0])
    tg = np.array([np.inf, 0.1, 0.1, 0.1])
    mask = partition.split(tc, tg)
    assert mask[0] and not mask[1]


# ---------------------------------------------------------------------------------------------------------
# the hybrid folder's merge (a CPU engine in the GPU's place)


def batch(count: int, seed: int) -> Records:
    rng = random.Random(seed)
    seqs = ["".join(rng.choice("ACGU") for _ in range(rng.randint(5, 90))) for _ in range(count)]
    return Records.from_lists([f"r{k}" for k in range(count)], seqs, range(count))


def test_static_merge_equals_one_device():
    cpu = Folder("zuker", None, "cpu", 1)
    stand_in = Folder("zuker", None, "cpu", 1)
    # costs that split these lengths about evenly, so that both sides fold some
    profile = Profile({}, {}, {"cpu": Cost(0.0, 1e-6, 0.0), "gpu": Cost(0.0, 1e-6, 0.0)})
    folder = HybridFolder("zuker", cpu=cpu, gpu=stand_in, profile=profile, split="static")
    parts = [batch(37, 1), batch(0, 2), batch(64, 3)]
    want_scores, want_text = cpu.fold_packed(parts)
    scores, text = folder.fold_packed(parts)
    assert scores.tolist() == want_scores.tolist()
    assert text == want_text
    assert 0 < folder.cpu_records < folder.records == 101


# ---------------------------------------------------------------------------------------------------------
# command line


def test_hybrid_without_a_gpu_is_one_clear_line(tmp_path):
    from rnapipe.engines import gpu_available

    if gpu_available():
        pytest.skip("a GPU is here")
    (tmp_path / "in.fa").write_text(">x\nGGGAAACCC\n")
    proc = rnapipe("fold", "in.fa", "-o", "o.db", "--device", "hybrid", cwd=tmp_path)
    assert proc.returncode == 3
    assert "needs an NVIDIA GPU" in one_error_line(proc)
    proc = rnapipe("profile", cwd=tmp_path)
    assert proc.returncode == 3
    assert "needs an NVIDIA GPU" in one_error_line(proc)


@pytest.mark.gpu
def test_hybrid_run_equals_the_cpu_run_in_every_format(tmp_path):
    make_input(tmp_path / "in.fa", count=300, bad=None)
    outputs = [f"h.{fmt}" for fmt in FORMATS]
    base = ["fold", "in.fa", "-q"] + [x for o in outputs for x in ("-o", o)]
    cpu = cli(base + ["--device", "cpu"], tmp_path, RNAPIPE_CHUNK_RECORDS="")
    assert cpu.returncode == 0, cpu.stderr
    want = {o: (tmp_path / o).read_bytes() for o in outputs}
    hybrid = cli(base[:2] + base[3:] + ["--device", "hybrid"], tmp_path, RNAPIPE_CHUNK_RECORDS="",
                 RNAPIPE_CACHE=str(tmp_path / "cache"))
    assert hybrid.returncode == 0, hybrid.stderr
    assert "hybrid: the CPU folded" in hybrid.stderr
    for o, data in want.items():
        assert (tmp_path / o).read_bytes() == data, o


def test_a_forced_share_takes_that_many_records_in_the_splits_order():
    tc = np.array([5.0, 1.0, 3.0, 2.0, 4.0])
    tg = np.ones(5)
    for count in range(6):
        mask = partition.split_at(tc, tg, count)
        assert mask.sum() == count
        assert set(np.flatnonzero(mask)) == set(np.argsort(tc, kind="stable")[:count])


def test_the_cpus_one_thread_per_sequence_and_its_call_cost_count():
    tc, tg = np.full(3, 0.1), np.full(3, 0.2)
    assert partition.split(tc, tg).sum() == 2                          # as if a record could be shared out
    assert partition.split(tc, tg, cpu_parallel=15).sum() == 0         # each needs 1.5 s on its thread
    assert partition.split(tc, tg, cpu_call=1.0).sum() == 0            # the call alone outlasts the GPU


def random_times(rng: random.Random, most: int) -> tuple[np.ndarray, np.ndarray]:
    """Predicted CPU and GPU seconds of 1 to ``most`` records of random lengths, from random costs."""
    lens = np.array([rng.randint(20, 3000) for _ in range(rng.randint(1, most))], dtype=np.int64)
    return (Cost(rng.uniform(1e-11, 1e-8), 0.0, rng.uniform(0, 1e-4)).seconds(lens),
            Cost(rng.uniform(1e-12, 1e-9), 0.0, rng.uniform(0, 1e-5)).seconds(lens))


def predicted_finish(tc, tg, mask, parallel: int, call: float) -> float:
    """When a split is predicted to end: the CPU waits for its sum, its longest record on one of ``parallel``
    threads and the call; the GPU for its sum."""
    cpu = max(float(tc[mask].sum()), parallel * float(tc[mask].max())) + call if mask.any() else 0.0
    return max(cpu, float(tg[~mask].sum()))


def test_the_split_is_never_predicted_slower_than_the_gpu_alone():
    rng = random.Random(5)
    for _ in range(300):
        tc, tg = random_times(rng, 40)
        p, call = rng.randint(1, 32), rng.uniform(0, 0.01)
        mask = partition.split(tc, tg, p, call)
        assert predicted_finish(tc, tg, mask, p, call) <= float(tg.sum()) + 1e-12


def test_no_cpu_share_below_the_minimum_gain():
    tc, tg = np.full(100, 0.5), np.full(100, 0.01)          # K = 50: the CPU could save 1 %
    assert partition.split(tc, tg).sum() == 1
    assert partition.split(tc, tg, min_gain=0.05).sum() == 0
    tc = np.full(100, 0.03)                                  # K = 3: about 25 %
    assert partition.split(tc, tg, min_gain=0.05).sum() == 25


def test_the_no_gain_shortcut_changes_no_split():
    rng = random.Random(8)
    for _ in range(300):
        tc, tg = random_times(rng, 60)
        gain = rng.choice([0.01, 0.05, 0.2])
        got = partition.split(tc, tg, 4, 1e-4, gain)
        # the same split without the shortcut: min_gain applied after the search
        plain = partition.split(tc, tg, 4, 1e-4)
        if predicted_finish(tc, tg, plain, 4, 1e-4) > (1 - gain) * float(tg.sum()):
            plain[:] = False
        assert got.tolist() == plain.tolist()
