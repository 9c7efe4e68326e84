"""--device hybrid: the cost model's fit, the split of a batch between CPU and GPU (against brute force), the
hybrid folder's merge (with a CPU engine standing in for the GPU here; the real GPU under the gpu marker), the
saved profile, and the command line's refusals."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest

from rnapipe.pipeline import balance
from rnapipe.pipeline.hybrid import costmodel, static
from rnapipe.pipeline.hybrid.costmodel import Cost, Profile
from rnapipe.pipeline.hybrid.folder import HybridFolder
from rnapipe.pipeline.records import Records
from rnapipe.pipeline.folding.folder import Folder
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


def power_law(samples: dict, length: float, tail: float) -> float:
    """One record's seconds by the cost model's rule, the slow way: the straight line in log-log through the
    two timed lengths around ``length``; the first one's time below; ``tail`` as the slope beyond."""
    lens = sorted(samples)
    if length <= lens[0]:
        return samples[lens[0]]
    if length >= lens[-1]:
        return samples[lens[-1]] * (length / lens[-1]) ** tail
    for lo, hi in zip(lens, lens[1:]):
        if lo <= length <= hi:
            slope = math.log(samples[hi] / samples[lo]) / math.log(hi / lo)
            return samples[lo] * (length / lo) ** slope
    raise AssertionError


@pytest.mark.parametrize("seed", range(4))
def test_cost_joins_the_timed_lengths_in_log_log(seed):
    rng = random.Random(seed)
    samples = {length: rng.uniform(1e-7, 1e-2) for length in rng.sample(range(10, 3000), 8)}
    for device in ("gpu", "gpu1"):
        cost = Profile.fitted({}, {device: samples}).costs[device]
        last, before = sorted(samples)[-1], sorted(samples)[-2]
        slope = math.log(samples[last] / samples[before]) / math.log(last / before)
        assert cost.tail == min(3.0, max(1.0, slope))
        lens = [rng.randrange(1, 20000) for _ in range(200)] + sorted(samples)
        want = [power_law(samples, length, cost.tail) for length in lens]
        assert np.allclose(cost.seconds(np.array(lens)), want, rtol=1e-9)               # the table
        assert np.allclose(cost.seconds(np.array(lens, dtype=np.float64)), want, rtol=1e-9)
        assert np.allclose(cost.seconds(np.array([100_000])), [power_law(samples, 100_000, cost.tail)], rtol=1e-9)
        # a shard (records of about one length): its records times one of its cube-mean length
        group = np.array([rng.randrange(400, 480) for _ in range(30)], dtype=np.float64)
        mean = float(np.mean(group ** 3)) ** (1 / 3)
        assert cost.total([float(np.sum(group ** 3))], [0.0], [30])[0] == pytest.approx(
            30 * power_law(samples, mean, cost.tail), rel=1e-9)


def test_the_cpus_cost_is_its_fit_which_one_disturbed_sample_moves_little():
    lens = np.array(costmodel.LENGTHS, dtype=np.float64)
    true = 1.4e-11 * lens ** 3 + 8e-9 * lens ** 2
    samples = dict(zip(costmodel.LENGTHS, true))
    samples[600] *= 2.4                                     # one sample disturbed
    cost = Profile.fitted({}, {"cpu": samples, "gpu": samples}).costs["cpu"]
    assert not cost.lengths                                 # the fit, no interpolation
    assert cost.seconds(np.array([600]))[0] < 1.3 * true[costmodel.LENGTHS.index(600)]
    assert np.all(np.abs(cost.seconds(lens) / true - 1) < 0.3)


def test_a_cost_without_timed_lengths_is_its_fit():
    cost = Cost(2e-9, 3e-7, 4e-5)
    lens = np.array([1, 50, 700], dtype=np.int64)
    assert np.allclose(cost.seconds(lens), (2e-9 * lens + 3e-7) * lens ** 2 + 4e-5)
    assert cost.total([700.0 ** 3 + 50.0 ** 3], [700.0 ** 2 + 50.0 ** 2], [2]) == pytest.approx(
        float(cost.seconds(np.array([700, 50])).sum()))
    old = Profile.from_json('{"key": {}, "samples": {"cpu": {"68": 1e-3}}, "costs": {"cpu": {"a": 2e-9, '
                            '"b": 3e-7, "c": 4e-5}}, "calls": {}}')        # a profile without timed lengths
    assert old.costs["cpu"] == cost


def test_the_profile_times_both_sides_of_each_gpu_fill_change():
    from rnapipe.gpu import zuker, zuker_short

    for last in (min(zuker_short.SMEM_MAX_N, zuker.SHORT_MAX_N), zuker_short.MAX_N):   # the last length of one fill
        assert last in costmodel.LENGTHS and last + 1 in costmodel.LENGTHS


def test_the_plan_gives_the_cpu_the_gpus_weak_lengths():
    """A GPU 40 x slower per record at 500 nt than its neighbours (K = 3 there, 100 elsewhere): the CPU takes
    500-nt records and nothing else; the fit alone (through the same points) sees less than half of it."""
    from rnapipe.pipeline.hybrid import dynamic

    cpu = {200: 1e-3, 400: 8e-3, 500: 1.6e-2, 600: 2.7e-2}
    gpu = {200: 1e-3 / 100, 400: 8e-3 / 100, 500: 1.6e-2 / 3, 600: 2.7e-2 / 100}
    profile = Profile.fitted({}, {"cpu": {k: v / 8 for k, v in cpu.items()}, "gpu": gpu})
    lens = np.array([200] * 400 + [500] * 40 + [600] * 100, dtype=np.int64)
    tc1 = profile.costs["cpu"].seconds(lens) * 8
    tg = profile.costs["gpu"].seconds(lens)
    chosen, _ = dynamic.plan(tc1, tg, 8, 1, {"cpu": 1.0, "gpu0": 1.0, "gpu0+cpu": 1.0})
    assert len(chosen) and set(lens[chosen].tolist()) == {500}
    fit = {d: Cost(c.a, c.b, c.c) for d, c in profile.costs.items()}
    by_fit, _ = dynamic.plan(fit["cpu"].seconds(lens) * 8, fit["gpu"].seconds(lens), 8, 1,
                               {"cpu": 1.0, "gpu0": 1.0, "gpu0+cpu": 1.0})
    assert len(by_fit) < len(chosen) / 2


def test_measure_times_every_length_that_fits():
    folder = Folder("nussinov", None, "cpu", 1)
    got = costmodel.measure(folder, lengths=(20, 40, 80), seconds=0.01, longest=40)
    assert sorted(got) == [20, 40] and all(v > 0 for v in got.values())


class CountingFolder:
    """Stands for an engine: records each call's (records, lengths) and sleeps 1 µs a nucleotide of the longest
    record for each round of its threads (a long length needs few records)."""

    def __init__(self, threads):
        self.threads = threads
        self.calls = []

    def fold_packed(self, parts):
        import time

        lens = [int(n) for p in parts for n in p.lens]
        self.calls.append((len(lens), sorted(set(lens))))
        rounds = -(-len(lens) // self.threads)
        time.sleep(rounds * max(lens) * 1e-6)
        return np.zeros(len(lens), dtype=np.int64), b"\n" * len(lens)


def test_the_cpu_is_warmed_up_once_and_timed_from_two_rounds_of_its_threads():
    """warm_each=False (the CPU): one warm-up of short records before the first length, none before the others,
    and each length's first timed batch two rounds of the threads; warm_each=True (a GPU): 16 records of the
    length before each."""
    cpu = CountingFolder(threads=3)
    got = costmodel.measure(cpu, lengths=(100, 2000), seconds=0.004, warm_each=False)
    assert sorted(got) == [100, 2000]
    assert cpu.calls[0] == (3, [20])                                    # the one warm-up
    assert all(n % 3 == 0 for n, _ in cpu.calls[1:])                    # whole rounds
    firsts = [next(call for call in cpu.calls[1:] if call[1] == [length]) for length in (100, 2000)]
    assert firsts == [(6, [100]), (6, [2000])]
    assert cpu.calls[-1] == (6, [2000])                   # two rounds of 2,000 nt were enough: 4 ms
    gpu = CountingFolder(threads=1)
    costmodel.measure(gpu, lengths=(100, 2000), seconds=0.004, warm_each=True)
    for length in (100, 2000):
        mine = [call for call in gpu.calls if call[1] == [length]]
        assert mine[:2] == [(16, [length]), (16, [length])]           # the warm-up, then the first timed batch
    assert all(lens != [20] for _, lens in gpu.calls)


class AllocatingFolder(CountingFolder):
    """A CountingFolder that also pays a one-off cost in its first call larger than any before, as a GPU engine
    allocates its matrices for the largest batch so far."""

    def __init__(self, threads, once):
        super().__init__(threads)
        self.once = once
        self.most = 0

    def fold_packed(self, parts):
        import time

        count = sum(len(p.lens) for p in parts)
        if count > self.most:
            self.most = count
            time.sleep(self.once)
        return super().fold_packed(parts)


def test_a_gpu_length_is_timed_without_the_one_off_cost_of_its_largest_batch():
    """The batch that ends a length's doubling is the largest so far: timed as it comes, its one-off cost (here
    50 ms beside 0.1 ms a record, about 60 ms of records) would count as if every batch paid it."""
    gpu = AllocatingFolder(threads=1, once=0.05)
    got = costmodel.measure(gpu, lengths=(100,), seconds=0.05, warm_each=True)
    assert got[100] == pytest.approx(1e-4, rel=0.3)
    assert gpu.calls[-1] == gpu.calls[-2]                               # the last batch, again


def test_the_cpu_is_timed_at_its_own_few_lengths_unless_lengths_are_given():
    from rnapipe.pipeline.hybrid import profile as profiling

    assert profiling.device_lengths("cpu", costmodel.LENGTHS) == costmodel.CPU_LENGTHS
    assert profiling.device_lengths("gpu", costmodel.LENGTHS) == costmodel.LENGTHS
    assert profiling.device_lengths("cpu", (20, 40)) == profiling.device_lengths("gpu", (20, 40)) == (20, 40)
    cpu, gpu = CountingFolder(threads=2), CountingFolder(threads=1)
    for folder in (cpu, gpu):
        folder.length_check = lambda: type("Check", (), {"longest": None})()
    profile = profiling.measure({"cpu": cpu, "gpu": gpu}, {}, costmodel.LENGTHS)
    assert sorted(profile.samples["cpu"]) == sorted(costmodel.CPU_LENGTHS)
    assert sorted(profile.samples["gpu"]) == sorted(costmodel.LENGTHS)
    assert not profile.costs["cpu"].lengths and profile.costs["gpu"].lengths == costmodel.LENGTHS


# ---------------------------------------------------------------------------------------------------------
# split


def finish(tc, tg, mask) -> float:
    return max(float(np.sum(tc[mask])), float(np.sum(tg[~mask])))


@pytest.mark.parametrize("n, k", [(1000, 9.0), (20000, 127.0), (7, 0.5), (50, 1.0), (3, 1000.0)])
def test_equal_lengths_give_the_papers_boundary(n, k):
    tc, tg = np.full(n, k * 1e-4), np.full(n, 1e-4)
    mask = static.split(tc, tg)
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
        mask = static.split(tc, tg)
        best = min(finish(tc, tg, np.array(bits, dtype=bool)) for bits in itertools.product([0, 1], repeat=n))
        largest = float(np.max(np.maximum(tc, tg)))
        got = finish(tc, tg, mask)
        assert best - 1e-12 <= got <= best + largest + 1e-12


def test_a_record_one_device_cannot_fold_goes_to_the_other():
    tc = np.array([1.0, np.inf, 1.0, 1.0])
    tg = np.array([np.inf, 0.1, 0.1, 0.1])
    mask = static.split(tc, tg)
    assert mask[0] and not mask[1]


def plain_best_prefix(cpu_end, gpu_end, must, min_gain, fit=None) -> int:
    """balance.best_prefix the slow obvious way: every prefix's end in a loop."""
    n = len(cpu_end) - 1

    def end(j):
        c = cpu_end[j] if fit is None else cpu_end[j] / fit
        e = max(c, gpu_end[j]) if not (math.isnan(c) or math.isnan(gpu_end[j])) else math.nan
        return math.inf if math.isnan(e) else e

    if fit is None:
        k = min(range(n + 1), key=lambda j: (end(j), j))
    else:
        k = 0
        for j in range(1, n + 1):
            if not cpu_end[j] <= fit * gpu_end[j]:
                break
            k = j
    if k > must and end(k) > (1.0 - min_gain) * end(must):
        k = must
    return k


@pytest.mark.parametrize("fit", [None, 0.8])
def test_best_prefix_against_a_plain_search(fit):
    rng = random.Random(5 if fit is None else 6)
    for _ in range(3000):
        n = rng.randint(0, 12)
        step = [rng.choice([0.0, 0.5, rng.uniform(0, 2), math.inf]) for _ in range(2 * n)]
        cpu_end = np.concatenate([[0.0], np.cumsum(step[:n])])                    # grows with the prefix
        gpu_end = np.concatenate([np.cumsum(step[n:][::-1])[::-1], [0.0]])       # shrinks with it
        if fit is not None and rng.random() < 0.5:
            gpu_end[0] = rng.uniform(0, 10)                                        # the GPUs alone
        must = rng.randint(0, n)
        min_gain = rng.choice([0.0, 0.02, 0.05, 0.5])
        assert balance.best_prefix(cpu_end, gpu_end, must, min_gain, fit) == \
            plain_best_prefix(cpu_end.tolist(), gpu_end.tolist(), must, min_gain, fit)


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
    from rnapipe.gpu.devices import gpu_available

    if gpu_available():
        pytest.skip("a GPU is here")
    (tmp_path / "in.fa").write_text(">x\nGGGAAACCC\n")
    proc = rnapipe("fold", "in.fa", "-o", "o.db", "--device", "hybrid", cwd=tmp_path)
    assert proc.returncode == 3
    assert "needs an NVIDIA GPU" in one_error_line(proc)
    proc = rnapipe("profile", "--device", "hybrid", cwd=tmp_path)
    assert proc.returncode == 3
    assert "needs an NVIDIA GPU" in one_error_line(proc)


def test_profile_without_a_gpu_times_the_cpu_alone_and_says_so(tmp_path):
    """`rnapipe profile` as the README shows it (no --device): without a GPU it profiles the CPU, says so in one
    line, prints the CPU's row per length and writes a profile the partition reads."""
    import json

    from rnapipe.gpu.devices import gpu_available

    if gpu_available():
        pytest.skip("a GPU is here")
    proc = cli(["profile", "--threads", "1", "--lengths", "20,40", "-o", "p.json"], tmp_path,
               RNAPIPE_CACHE=str(tmp_path / "cache"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("no GPU here: profiling the CPU alone") == 1
    rows = [line.split() for line in proc.stdout.splitlines()]
    assert rows[0] == ["length", "CPU", "seq/s"] and [r[0] for r in rows[1:3]] == ["20", "40"]
    data = json.loads((tmp_path / "p.json").read_text())
    assert data["devices"] == ["cpu"] and sorted(data["samples"]["cpu"]) == ["20", "40"]


@pytest.mark.gpu
@pytest.mark.parametrize("split, batch_records", [("static", ""), ("dynamic", ""), ("dynamic", "64")])
def test_hybrid_run_equals_the_cpu_run_in_every_format(tmp_path, split, batch_records):
    import os

    make_input(tmp_path / "in.fa", count=300, bad=None)
    outputs = [f"h.{fmt}" for fmt in FORMATS]
    base = ["fold", "in.fa", "-q"] + [x for o in outputs for x in ("-o", o)]
    cpu = cli(base + ["--device", "cpu"], tmp_path, RNAPIPE_CHUNK_RECORDS="")
    assert cpu.returncode == 0, cpu.stderr
    want = {o: (tmp_path / o).read_bytes() for o in outputs}
    # one saved profile for every run where the caller gives a cache (the device script), else a new one
    hybrid = cli(base[:2] + base[3:] + ["--device", "hybrid", "--split", split], tmp_path, RNAPIPE_CHUNK_RECORDS="",
                 RNAPIPE_BATCH_RECORDS=batch_records, RNAPIPE_CACHE=os.environ.get("RNAPIPE_CACHE") or str(tmp_path / "c"))
    assert hybrid.returncode == 0, hybrid.stderr
    assert f"hybrid ({split}" in hybrid.stderr and "the CPU folded" in hybrid.stderr
    for o, data in want.items():
        assert (tmp_path / o).read_bytes() == data, o


def test_a_forced_share_takes_that_many_records_in_the_splits_order():
    tc = np.array([5.0, 1.0, 3.0, 2.0, 4.0])
    tg = np.ones(5)
    for count in range(6):
        mask = static.split_at(tc, tg, count)
        assert mask.sum() == count
        assert set(np.flatnonzero(mask)) == set(np.argsort(tc, kind="stable")[:count])


def test_the_cpus_one_thread_per_sequence_and_its_call_cost_count():
    tc, tg = np.full(3, 0.1), np.full(3, 0.2)
    assert static.split(tc, tg).sum() == 2                          # as if a record could be shared out
    assert static.split(tc, tg, cpu_parallel=15).sum() == 0         # each needs 1.5 s on its thread
    assert static.split(tc, tg, cpu_call=1.0).sum() == 0            # the call alone outlasts the GPU


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
        mask = static.split(tc, tg, p, call)
        assert predicted_finish(tc, tg, mask, p, call) <= float(tg.sum()) + 1e-12


def test_no_cpu_share_below_the_minimum_gain():
    tc, tg = np.full(100, 0.5), np.full(100, 0.01)          # K = 50: the CPU could save 1 %
    assert static.split(tc, tg).sum() == 1
    assert static.split(tc, tg, min_gain=0.05).sum() == 0
    tc = np.full(100, 0.03)                                  # K = 3: about 25 %
    assert static.split(tc, tg, min_gain=0.05).sum() == 25


def test_the_no_gain_shortcut_changes_no_split():
    rng = random.Random(8)
    for _ in range(300):
        tc, tg = random_times(rng, 60)
        gain = rng.choice([0.01, 0.05, 0.2])
        got = static.split(tc, tg, 4, 1e-4, gain)
        # the same split without the shortcut: min_gain applied after the search
        plain = static.split(tc, tg, 4, 1e-4)
        if predicted_finish(tc, tg, plain, 4, 1e-4) > (1 - gain) * float(tg.sum()):
            plain[:] = False
        assert got.tolist() == plain.tolist()


# ---------------------------------------------------------------------------------------------------------
# dynamic split: batches planned on measured costs, CPU threads and several (stand-in) GPUs


class SlowFolder:
    """A CPU folder standing in for a GPU, slower by ``delay`` seconds per record (a slow GPU), failing on its
    ``fail_at``-th call; it counts the records it folded."""

    def __init__(self, delay: float = 0.0, fail_at: int | None = None):
        self.inner = Folder("zuker", None, "cpu", 1)
        self.delay, self.fail_at = delay, fail_at
        self.calls = self.folded = 0
        self.threads, self.gpus = 1, [0]

    def length_check(self):
        return self.inner.length_check()

    def fold_packed(self, parts):
        import time

        self.calls += 1
        if self.fail_at is not None and self.calls >= self.fail_at:
            raise RuntimeError("stand-in GPU failed")
        n = sum(len(p) for p in parts)
        time.sleep(self.delay * n)
        self.folded += n
        return self.inner.fold_packed(parts)


@pytest.fixture
def small_chunks(monkeypatch):
    """A plan that shares even a small batch: no slowdown of the GPUs beside the CPU assumed, no minimum
    gain, and the stand-in GPUs' measured times (a CPU engine's, far above the profile's) not learnt."""
    from rnapipe.pipeline.hybrid import dynamic

    monkeypatch.setattr(dynamic, "SLOWDOWN_PRIOR", 1.0)
    monkeypatch.setattr(dynamic, "MIN_SAVING", 0.0)
    monkeypatch.setattr(dynamic.Scales, "add", lambda self, *args: None)


def even_profile() -> Profile:
    """CPU throughput (all threads) three times slower than one GPU: K = 3."""
    return Profile({}, {"cpu": {68: 3e-4}, "gpu": {68: 1e-4}},
                   {"cpu": Cost(0.0, 3e-7, 0.0), "gpu": Cost(0.0, 1e-7, 0.0)})


def dynamic_folder(gpus, threads: int = 4) -> HybridFolder:
    cpu = Folder("zuker", None, "cpu", 1)
    folder = HybridFolder("zuker", threads=threads, cpu=cpu, gpu=gpus, profile=even_profile(), split="dynamic")
    folder.cpu.threads = 1 if threads <= len(gpus) else threads - len(gpus)
    return folder


@pytest.mark.parametrize("delays", [[0.0], [0.0, 0.0], [0.0, 0.002, 0.0]])
def test_dynamic_merge_equals_the_cpu_engine(small_chunks, delays):
    gpus = [SlowFolder(d) for d in delays]
    folder = dynamic_folder(gpus)
    parts = [batch(40, 4), batch(0, 5), batch(57, 6)]
    want_scores, want_text = Folder("zuker", None, "cpu", 1).fold_packed(parts)
    scores, text = folder.fold_packed(parts)
    assert scores.tolist() == want_scores.tolist()
    assert text == want_text
    assert folder.records == 97
    assert 0 < folder.cpu_records < 97
    assert folder.cpu_records + sum(g.folded for g in gpus) == 97       # every record folded once
    assert all(g.folded for g in gpus)                                  # and every GPU took a share


def test_dynamic_empty_batches_and_one_record(small_chunks):
    folder = dynamic_folder([SlowFolder(), SlowFolder()])
    scores, text = folder.fold_packed([Records.empty()])
    assert scores.size == 0 and text == b""
    one = batch(1, 7)
    scores, text = folder.fold_packed([Records.empty(), one])
    want = Folder("zuker", None, "cpu", 1).fold_packed([one])
    assert scores.tolist() == want[0].tolist() and text == want[1]


@pytest.mark.parametrize("split", ["static", "dynamic"])
def test_a_failing_gpu_is_raised(small_chunks, split):
    gpus = [SlowFolder(), SlowFolder(fail_at=1)]
    folder = dynamic_folder(gpus)
    folder.split = split
    with pytest.raises(RuntimeError, match="stand-in GPU failed"):
        folder.fold_packed([batch(60, 8)])


def test_a_failing_cpu_is_raised(small_chunks, monkeypatch):
    from rnapipe.cpu import zuker_packed

    folder = dynamic_folder([SlowFolder(0.001)])

    def broken(*args):
        raise MemoryError("cpu side")
    monkeypatch.setattr(zuker_packed, "fold_share", broken)
    with pytest.raises(MemoryError, match="cpu side"):
        folder.fold_packed([batch(60, 9)])


def test_static_split_among_several_gpus_equals_the_cpu_engine():
    gpus = [SlowFolder(), SlowFolder(), SlowFolder()]
    folder = dynamic_folder(gpus, threads=4)
    folder.split = "static"
    parts = [batch(50, 10)]
    want_scores, want_text = Folder("zuker", None, "cpu", 1).fold_packed(parts)
    scores, text = folder.fold_packed(parts)
    assert scores.tolist() == want_scores.tolist() and text == want_text
    assert all(g.folded for g in gpus)
    assert folder.cpu_records + sum(g.folded for g in gpus) == 50


def test_dynamic_run_equals_the_cpu_run_in_every_format(tmp_path, small_chunks, monkeypatch):
    """The streaming core (several batches) with the dynamic hybrid folder writes what the CPU engine writes."""
    from rnapipe.pipeline.resume import run as job
    from rnapipe.pipeline.output.sinks import Sink

    monkeypatch.setenv("RNAPIPE_BATCH_RECORDS", "64")
    make_input(tmp_path / "in.fa", count=200, bad=None)
    got = {}
    for name, folder in (("cpu", Folder("zuker", None, "cpu", 1)),
                         ("hybrid", dynamic_folder([SlowFolder(), SlowFolder(0.001)]))):
        sinks = [Sink(str(tmp_path / f"{name}.{fmt}"), fmt) for fmt in FORMATS]
        job.run([str(tmp_path / "in.fa")], sinks, folder)                # no notes, no progress
        got[name] = [(tmp_path / f"{name}.{fmt}").read_bytes() for fmt in FORMATS]
        if name == "hybrid":
            assert 0 < folder.cpu_records < folder.records == 200
    assert got["hybrid"] == got["cpu"]


# the dynamic plan


def plan_end(tc1, tg, chosen, threads, gpus=1, slow=1.0):
    """The batch's end if every prediction held: the CPU's threads loaded longest first, the GPUs the rest."""
    loads = [float(tc1[chosen][share].sum()) for share in balance.lpt(tc1[chosen], threads)] if len(chosen) else [0]
    rest = np.ones(len(tg), dtype=bool)
    rest[chosen] = False
    return max(max(loads), float(tg[rest].sum()) * slow / gpus)


def test_lpt_spreads_every_record_once_within_its_bound():
    rng = random.Random(8)
    for _ in range(200):
        n, threads = rng.randint(1, 60), rng.randint(1, 16)
        t = np.array([rng.uniform(0.0, 1.0) for _ in range(n)])
        shares = balance.lpt(t, threads)
        assert len(shares) == threads                                 # one per worker, empty where n < threads
        got = np.sort(np.concatenate(shares))
        assert got.tolist() == list(range(n))
        loads = [float(t[s].sum()) for s in shares]
        assert max(loads) <= t.sum() / len(shares) + (1 - 1 / len(shares)) * t.max() + 1e-12
        # against brute force on tiny inputs: LPT is within 4/3 of the best makespan
        if n <= 6 and threads <= 3:
            best = min(max(float(t[[k for k in range(n) if bits[k] == j]].sum()) for j in range(threads))
                       for bits in itertools.product(range(threads), repeat=n))
            assert max(loads) <= 4 / 3 * best + 1e-12


def test_the_plan_never_predicts_a_later_end_than_the_gpus_alone():
    from rnapipe.pipeline.hybrid import dynamic

    rng = random.Random(21)
    for _ in range(150):
        n = rng.randint(1, 300)
        lens = np.array([rng.randint(20, 2500) for _ in range(n)], dtype=np.int64)
        threads = rng.randint(1, 16)
        tc1 = Cost(rng.uniform(1e-11, 1e-9), 0.0, rng.uniform(0, 1e-4)).seconds(lens) * threads
        tg = Cost(rng.uniform(1e-13, 1e-10), 0.0, rng.uniform(0, 1e-5)).seconds(lens)
        slow = rng.choice([1.0, 1.05, 1.3])
        scale = {"cpu": 1.0, "gpu0": 1.0, "gpu0+cpu": slow} if rng.random() < 0.5 else {}
        chosen, predicted = dynamic.plan(tc1, tg, threads, 1, scale)
        alone = float(tg.sum())
        if not len(chosen):
            continue
        fit = dynamic.CPU_FIT if scale else dynamic.CPU_FIT_UNMEASURED
        slow = slow if scale else dynamic.SLOWDOWN_PRIOR
        end = plan_end(tc1, tg, chosen, threads, 1, slow)
        assert end <= (1 - dynamic.MIN_SAVING) * alone + 1e-12
        assert predicted["cpu"] <= fit * predicted["gpus"] + 1e-12       # the CPU ends well before the GPUs
        assert len(set(chosen.tolist())) == len(chosen)


def test_the_plan_on_equal_lengths_gives_the_cpu_about_n_over_k_plus_one():
    from rnapipe.pipeline.hybrid import dynamic

    for k, threads in [(3.0, 4), (7.0, 15), (20.0, 8)]:
        n = 20000
        tg = np.full(n, 1e-5)
        tc1 = tg * k * threads                     # throughput K on all threads
        chosen, _ = dynamic.plan(tc1, tg, threads, 1, {"cpu": 1.0, "gpu0": 1.0, "gpu0+cpu": 1.0})
        # the CPU busy CPU_FIT of the time: K / CPU_FIT in the paper's rule
        want = n / (k / dynamic.CPU_FIT + 1)
        assert abs(len(chosen) - want) <= 0.01 * n + threads


def test_the_plan_gives_nothing_where_the_gain_is_below_the_slowdown():
    from rnapipe.pipeline.hybrid import dynamic

    n, threads = 2000, 15
    tg = np.full(n, 1e-5)
    tc1 = tg * 17.4 * threads                      # K = 17.4: at most 5.4 % to gain
    assert len(dynamic.plan(tc1, tg, threads, 1, {"cpu": 1.0, "gpu0": 1.0, "gpu0+cpu": 1.0})[0])
    # the GPU measured 5 % slower beside the CPU: nothing left to gain
    assert not len(dynamic.plan(tc1, tg, threads, 1, {"cpu": 1.0, "gpu0": 1.0, "gpu0+cpu": 1.05})[0])
    assert dynamic.max_gain(tc1, tg, threads, 1, {"cpu": 1.0, "gpu0": 1.0, "gpu0+cpu": 1.05}) < dynamic.MIN_SAVING
    # the CPU measured at twice its prediction: nothing either
    assert not len(dynamic.plan(tc1, tg, threads, 1, {"cpu": 2.0, "gpu0": 1.0, "gpu0+cpu": 1.0})[0])


def test_the_plan_gives_no_record_that_alone_outlasts_the_fit():
    from rnapipe.pipeline.hybrid import dynamic

    tg = np.array([1e-3] * 100 + [5e-3])
    tc1 = np.array([1e-2] * 100 + [0.09])         # the last: relatively the CPU's best, but too long for a thread
    chosen, _ = dynamic.plan(tc1, tg, 16, 1, {"cpu": 1.0, "gpu0": 1.0, "gpu0+cpu": 1.0})
    assert 100 not in chosen.tolist()
    assert len(chosen)


def test_the_plan_against_brute_force_on_tiny_batches():
    """The plan's predicted end within the longest record of the best assignment (brute force over every
    record's device, the CPU's threads busy CPU_FIT of the time)."""
    from rnapipe.pipeline.hybrid import dynamic

    rng = random.Random(4)
    for _ in range(60):
        n = rng.randint(1, 7)
        lens = np.array([rng.randint(20, 800) for _ in range(n)], dtype=np.int64)
        threads = rng.randint(1, 2)
        tc1 = Cost(rng.uniform(1e-10, 1e-8), 0.0, 0.0).seconds(lens) * threads
        tg = Cost(rng.uniform(1e-11, 1e-9), 0.0, 0.0).seconds(lens)
        fit = dynamic.CPU_FIT
        best = np.inf
        for bits in itertools.product(range(1 + threads), repeat=n):
            b = np.array(bits)
            gpu = float(tg[b == 0].sum())
            cpu = max([float(tc1[b == j + 1].sum()) for j in range(threads)] + [0.0])
            best = min(best, max(gpu, cpu / fit))
        chosen, _ = dynamic.plan(tc1, tg, threads, 1, {"cpu": 1.0, "gpu0": 1.0, "gpu0+cpu": 1.0})
        cpu = plan_end(tc1, np.zeros(n), chosen, threads)            # the CPU threads' longest load
        gpu = plan_end(np.zeros(n), tg, chosen, threads)              # the GPU's rest
        end = max(cpu / fit, gpu)
        assert end <= max(best + float(np.maximum(tc1 / fit, tg).max()), float(tg.sum())) + 1e-9


def test_dynamic_learns_the_gpus_slowdown_beside_the_cpu(monkeypatch):
    """A stand-in GPU that folds slower while the CPU folds: once measured, the CPU gets nothing more."""
    from rnapipe.pipeline.hybrid import dynamic

    folder = dynamic_folder([SlowFolder()], threads=4)
    scale = folder.scales
    scale.add("cpu", 1.0, 1.0)
    scale.add("gpu0", 1.0, 1.0)
    lens = np.full(400, 68)
    tc, tg = folder.predict(lens)
    assert len(dynamic.plan(tc * folder.cpu.threads, tg, folder.cpu_threads(), 1, scale.current())[0])
    scale.add("gpu0+cpu", 1.5, 1.0)                  # measured 50 % slower beside the CPU
    assert not len(dynamic.plan(tc * folder.cpu.threads, tg, folder.cpu_threads(), 1, scale.current())[0])
    assert not folder._may_gain(68, 68)
    before = folder.cpu_records
    folder.fold_packed([batch(50, 31)])
    assert folder.cpu_records == before


def test_the_gpu_alone_answer_is_kept_for_a_few_batches_then_asked_again():
    from rnapipe.pipeline.hybrid import folder as hybrid

    folder = dynamic_folder([SlowFolder()], threads=4)
    scale = folder.scales
    scale.add("cpu", 1.0, 1.0)
    scale.add("gpu0", 1.0, 1.0)
    scale.add("gpu0+cpu", 1.5, 1.0)                  # the GPU 50 % slower beside the CPU: no gain
    records = batch(50, 32)
    folder.fold_packed([records])
    assert folder.cpu_records == 0
    scale.add("gpu0+cpu", 0.0, 1e6)                  # now as fast beside the CPU as alone: the CPU would gain
    scale.add("gpu0", 1e6, 1e6)
    for _ in range(hybrid.MEMO_BATCHES - 1):
        folder.fold_packed([records])
    assert folder.cpu_records == 0
    folder.fold_packed([records])
    assert folder.cpu_records > 0


def test_small_batches_move_the_plan_of_a_large_one_little():
    """A batch of 14 records measured 6 x its prediction on the GPU (its latency, not the engine's rate): the
    next batch, 4,000 x larger, is planned about as the profile says, and one of the same size as measured."""
    from rnapipe.pipeline.hybrid import dynamic

    scales = dynamic.Scales()
    scales.add("gpu0", 6.0 * 0.01, 0.01)             # predicted 10 ms, took 60
    assert scales.current()["gpu0"] == pytest.approx(6.0)
    large = scales.current(dynamic.PRIOR * 40.0)["gpu0"]
    assert large == pytest.approx((0.06 + dynamic.PRIOR * 40.0) / (0.01 + dynamic.PRIOR * 40.0))
    assert large < 1.01
    same = scales.current(dynamic.PRIOR * 0.01)["gpu0"]
    assert same == pytest.approx((0.06 + dynamic.PRIOR * 0.01) / (0.01 + dynamic.PRIOR * 0.01)) and same > 4.5
    scales.add("cpu", 2.0, 1.0)
    assert scales.current(0.0, 1.0)["cpu"] == pytest.approx(1.5)     # the CPU's prior in its own units


def test_among_cuts_contiguous_runs_of_about_equal_time():
    rng = np.random.default_rng(2)
    t = rng.uniform(0.1, 1.0, 500)
    mask = rng.random(500) < 0.8
    for parts in (1, 2, 3, 5):
        where = balance.among(t, mask, parts)
        assert (where[~mask] == -1).all() and (where[mask] >= 0).all()
        assert np.all(np.diff(where[mask]) >= 0)                      # contiguous, in input order
        sums = [t[where == p].sum() for p in range(parts)]
        assert max(sums) - min(sums) <= 2 * t.max()


# --device auto


def test_auto_picks_cpu_without_a_gpu_and_gpu_without_a_hybrid_mode():
    from rnapipe.pipeline.hybrid.auto import auto_device

    assert auto_device("zuker", gpu_present=False)[0] == "cpu"
    assert auto_device("nussinov", gpu_present=True)[0] == "gpu"


@pytest.mark.parametrize("k, gpus, want", [(3.0, None, "hybrid"), (100.0, None, "gpu"), (15.0, None, "hybrid"),
                                           (15.0, [0, 1], "gpu"), (8.0, [0, 1], "hybrid")])
def test_auto_picks_hybrid_where_the_profile_predicts_a_gain(k, gpus, want):
    from rnapipe.pipeline.hybrid import auto

    # K = 100 at every length but one, where it is k: the best length decides
    profile = Profile({}, {"cpu": {68: 100e-6, 400: k * 1e-6}, "gpu": {68: 1e-6, 400: 1e-6}}, {})
    device, why, _ = auto.auto_device("zuker", gpus=gpus, profile=profile, gpu_present=True)
    assert device == want, why
    gain = 1.0 / (k * len(gpus or [0]) + 1.0)           # the GPUs together are that much faster
    assert (gain >= balance.MIN_GAIN) == (want == "hybrid")
    assert "400 nt" in why or want == "gpu"


def test_auto_reads_the_cpus_fit_where_the_cpu_was_not_timed():
    """The CPU timed at fewer lengths than the GPU: K at a length only the GPU was timed at comes from the CPU's
    fitted cost there (here the GPU's weak length, 500 nt, which the CPU was not timed at)."""
    from rnapipe.pipeline.hybrid import auto

    cpu = {100: 1e-3, 1000: 1.0}                          # t = 1e-9 L³
    gpu = {100: 1e-5, 500: 1.25e-1 / 3, 1000: 1e-2}        # K = 100, 3, 100
    profile = Profile.fitted({}, {"cpu": cpu, "gpu": gpu})
    gain, length, k = auto.best_gain(profile)
    assert length == 500 and k == pytest.approx(3.0, rel=1e-6) and gain == pytest.approx(0.25, rel=1e-6)
    assert auto.auto_device("zuker", profile=profile, gpu_present=True)[0] == "hybrid"


def test_auto_says_what_it_chose_unless_quiet(tmp_path):
    (tmp_path / "in.fa").write_text(">x\nGGGAAACCC\n")
    proc = rnapipe("fold", "in.fa", "-o", "o.db", "--device", "auto", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("--device auto:") == 1
    quiet = rnapipe("fold", "in.fa", "-o", "q.db", "--device", "auto", "-q", cwd=tmp_path)
    assert quiet.returncode == 0 and "--device auto" not in quiet.stderr
    assert (tmp_path / "o.db").read_bytes() == (tmp_path / "q.db").read_bytes()


def test_split_only_with_hybrid(tmp_path):
    (tmp_path / "in.fa").write_text(">x\nGGGAAACCC\n")
    proc = rnapipe("fold", "in.fa", "-o", "o.db", "--split", "static", cwd=tmp_path)
    assert proc.returncode == 2
    assert "--split applies to --device hybrid" in one_error_line(proc)


@pytest.mark.gpu
@pytest.mark.parametrize("feeders", [1, 2])
def test_dynamic_queue_on_the_gpu_equals_the_cpu(small_chunks, monkeypatch, feeders):
    """The queue with the real GPU engine (two feeding threads on one GPU stand for two GPUs), a profile that
    gives the CPU a large share: the merge equals the CPU engine."""
    gpus = [Folder("zuker", None, "gpu", 1, [0]) for _ in range(feeders)]
    folder = HybridFolder("zuker", threads=feeders + 2, cpu=Folder("zuker", None, "cpu", 2), gpu=gpus,
                          profile=even_profile(), split="dynamic")
    parts = [batch(150, 11), batch(90, 12)]
    want_scores, want_text = Folder("zuker", None, "cpu", 2).fold_packed(parts)
    scores, text = folder.fold_packed(parts)
    assert scores.tolist() == want_scores.tolist() and text == want_text
    assert 0 < folder.cpu_records < 240
