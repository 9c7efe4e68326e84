"""``--device hybrid`` with the partition function (rnapipe.pipeline.ensemble.hybrid): a batch shared between the CPU
engine and the GPUs by a profile, the results put back in the batch's order. Here the "GPUs" are CPU partition
folders (the split and the reassembly do not care which engine folds a share), so every result must equal the CPU
engine's alone, bit for bit; on a GPU, test_partition_gpu.py folds the same through the real engines."""

from __future__ import annotations

import numpy as np
import pytest

from seqgen import random_seqs
from test_cli import one_error_line, rnapipe

from rnapipe.io.ensemble import Ensemble
from rnapipe.pipeline.ensemble.folder import EnsembleFolder
from rnapipe.pipeline.ensemble.hybrid import EnsembleHybridFolder
from rnapipe.pipeline.ensemble.request import Settings
from rnapipe.pipeline.hybrid.costmodel import Cost, Profile
from rnapipe.pipeline.records import Records


class _Counting(EnsembleFolder):
    """A CPU partition folder standing in for a GPU's, counting the records it folds (and on which thread)."""

    def __init__(self, longest=None):
        super().__init__(1, None, None, Settings(threshold=1e-3))
        self.folded, self.threads_seen, self._longest = [], set(), longest

    def fold_ensembles(self, sequences):
        import threading
        self.folded += sequences
        self.threads_seen.add(threading.current_thread().name)
        return super().fold_ensembles(sequences)

    def length_check(self):
        check = super().length_check()
        if self._longest is None:
            return check
        return type(check)(self._longest, check.describe)


def _profile(gpu_speedup: float) -> Profile:
    cpu = Cost(2e-9, 1e-7, 1e-5)
    gpu = Cost(cpu.a / gpu_speedup, cpu.b / gpu_speedup, cpu.c / gpu_speedup)
    return Profile({}, {}, {"cpu": cpu, "gpu": gpu}, {"cpu": 0.0})


def _same(a, b) -> bool:
    return all(np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y for x, y in zip(a, b))


@pytest.mark.parametrize("gpus", [1, 2])
def test_the_split_batch_equals_the_cpu_engine_alone(gpus):
    seqs = random_seqs(120, 1, 150, seed=4 + gpus, n_rate=0.01)
    records = Records.from_lists([str(k) for k in range(len(seqs))], seqs, range(len(seqs)))
    fakes = [_Counting() for _ in range(gpus)]
    cpu = EnsembleFolder(2, None, None, Settings(threshold=1e-3))
    hybrid = EnsembleHybridFolder(4, settings=Settings(threshold=1e-3), cpu=cpu, gpu=fakes, profile=_profile(3.0))
    scores, structures, chunk = hybrid.fold_packed([records])
    ref_scores, ref_structures, ref_chunk = cpu.fold_packed([records])
    assert np.array_equal(scores, ref_scores) and structures == ref_structures
    assert all(_same(a, b) for a, b in zip(chunk.values, ref_chunk.values)) and len(chunk.values) == len(seqs)
    shares = [len(f.folded) for f in fakes]
    assert 0 < hybrid.cpu_records < len(seqs) and all(shares) and sum(shares) + hybrid.cpu_records == len(seqs)
    assert all(len(f.threads_seen) == 1 for f in fakes)              # each GPU fed from its own thread
    assert len({t for f in fakes for t in f.threads_seen}) == gpus
    assert "the CPU folded" in hybrid.summary()


def test_records_a_gpu_cannot_fold_go_to_the_cpu_and_a_slow_cpu_gets_nothing_else():
    seqs = random_seqs(60, 20, 60, seed=9) + random_seqs(3, 90, 100, seed=10)
    records = Records.from_lists([str(k) for k in range(len(seqs))], seqs, range(len(seqs)))
    fake = _Counting(longest=80)
    cpu = EnsembleFolder(2, None, None, Settings(threshold=1e-3))
    hybrid = EnsembleHybridFolder(4, settings=Settings(threshold=1e-3), cpu=cpu, gpu=[fake],
                                  profile=_profile(1000.0))
    _, _, chunk = hybrid.fold_packed([records])
    assert hybrid.cpu_records == 3 and len(fake.folded) == 60 and max(len(s) for s in fake.folded) <= 80
    ref = cpu.fold_ensembles(seqs)
    assert all(_same(a, Ensemble.of(b)) for a, b in zip(chunk.values, ref))


def test_hybrid_p_without_a_gpu_is_one_line(tmp_path):
    (tmp_path / "in.fa").write_text(">a\nGGGGAAAACCCC\n")
    from rnapipe.gpu.devices import gpu_available
    if gpu_available():
        pytest.skip("a GPU is present (test_partition_gpu.py folds -p --device hybrid)")
    proc = rnapipe("fold", "in.fa", "-p", "--device", "hybrid", "-o", "out.db", cwd=tmp_path)
    assert proc.returncode != 0 and "GPU" in one_error_line(proc)
    proc = rnapipe("fold", "in.fa", "-p", "--device", "hybrid", "--split", "dynamic", "-o", "out.db", cwd=tmp_path)
    assert proc.returncode == 2 and "--split dynamic" in one_error_line(proc)
    assert not (tmp_path / "out.db").exists()
