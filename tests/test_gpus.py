"""Spreading a fold over several GPUs (``gpus=`` / ``--gpus``): the split, the checks, and on a GPU the
results of two workers (two host threads, here both on GPU 0 when only one exists) against the CPU engine."""

from __future__ import annotations

import random

import pytest

from test_cli import one_error_line, rnapipe

from rnapipe import fold
from rnapipe.gpu.devices import on_gpus, split_for_gpus
from rnapipe.errors import EXIT_UNAVAILABLE


@pytest.mark.parametrize("parts", [1, 2, 3, 8])
def test_split_deals_every_sequence_once_and_balances(parts):
    rng = random.Random(parts)
    lengths = [rng.randint(0, 3000) for _ in range(501)]
    split = split_for_gpus(lengths, parts)
    assert len(split) == parts
    assert sorted(k for part in split for k in part) == list(range(len(lengths)))
    for part in split:
        assert part == sorted(part)                       # each worker keeps input order
    # dealt longest first in turn: any two parts differ by at most one of each rank
    loads = [sum(lengths[k] ** 2 for k in part) for part in split]
    assert max(loads) - min(loads) <= max(lengths) ** 2


class _FakeCupy:
    """What on_gpus touches of CuPy: ``cuda.Device(g)`` as a context that makes GPU g current (per thread)."""

    def __init__(self):
        import threading
        self.local = threading.local()
        fake = self

        class Device:
            def __init__(self, gpu):
                self.gpu = gpu

            def __enter__(self):
                fake.local.stack = getattr(fake.local, "stack", []) + [self.gpu]

            def __exit__(self, *exc):
                fake.local.stack.pop()

        self.cuda = type("cuda", (), {"Device": Device})

    def current(self):
        stack = getattr(self.local, "stack", [])
        return stack[-1] if stack else None


@pytest.mark.parametrize("gpus", [[0], [1, 0], [0, 1, 2]])
def test_on_gpus_folds_each_share_on_its_gpu_and_keeps_input_order(monkeypatch, gpus):
    """Any engine's batch call spread over GPUs: every sequence folded once, on one of the GPUs, in input order
    again; each GPU a like share of every length and of the threads; progress summed."""
    import sys

    fake = _FakeCupy()
    monkeypatch.setitem(sys.modules, "cupy", fake)
    rng = random.Random(len(gpus))
    seqs = ["A" * rng.randint(0, 50) + str(k) for k in range(41)]
    calls, seen = [], []

    def fold(part, threads, progress):
        calls.append((fake.current(), len(part), threads))
        progress(len(part))
        return [(fake.current(), s) for s in part]

    results = on_gpus(fold, seqs, 12, seen.append, gpus)
    assert [s for _, s in results] == seqs
    assert sorted(g for g, _, _ in calls) == sorted(gpus)
    assert all(t == max(1, 12 // len(gpus)) for _, _, t in calls) and sum(seen) == len(seqs)
    parts = split_for_gpus([len(s) for s in seqs], len(gpus))
    for gpu, part in zip(gpus, parts):
        assert all(results[k][0] == gpu for k in part)


def test_cli_gpus_needs_device_gpu(tmp_path):
    fa = tmp_path / "x.fa"
    fa.write_text(">a\nGGGAAACCC\n")
    proc = rnapipe("fold", fa, "-o", tmp_path / "out.db", "--gpus", "0", cwd=tmp_path)
    assert proc.returncode == 2
    assert "--device gpu" in one_error_line(proc)
    assert not (tmp_path / "out.db").exists()


def test_cli_auto_with_gpus_and_no_gpu_is_one_line(tmp_path):
    """--device auto --gpus 0 asks for GPU 0: where there is none, one line says so (not a fold on the CPU)."""
    from rnapipe.gpu.devices import gpu_available
    if gpu_available():
        pytest.skip("a GPU is present")
    fa = tmp_path / "x.fa"
    fa.write_text(">a\nGGGAAACCC\n")
    proc = rnapipe("fold", fa, "-o", tmp_path / "out.db", "--device", "auto", "--gpus", "0", cwd=tmp_path)
    assert proc.returncode == EXIT_UNAVAILABLE and "needs an NVIDIA GPU" in one_error_line(proc)
    assert not (tmp_path / "out.db").exists()


@pytest.mark.parametrize("text", ["a,b", "0,0", "-1", ","])
def test_cli_gpus_rejects_bad_lists(tmp_path, text):
    fa = tmp_path / "x.fa"
    fa.write_text(">a\nGGGAAACCC\n")
    proc = rnapipe("fold", fa, "-o", tmp_path / "out.db", "--device", "gpu", f"--gpus={text}", cwd=tmp_path)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr


@pytest.mark.gpu
def test_two_gpu_workers_equal_the_cpu_engine():
    import cupy
    count = cupy.cuda.runtime.getDeviceCount()
    gpus = [0, 1] if count > 1 else [0, 0]
    rng = random.Random(11)
    seqs = ["".join(rng.choice("ACGUN") for _ in range(rng.randint(1, 700))) for _ in range(400)]
    seen = []
    ours = fold(seqs, device="gpu", gpus=gpus, progress=seen.append)
    ref = fold(seqs, device="cpu")
    assert [(r.score_int, r.structure) for r in ours] == [(r.score_int, r.structure) for r in ref]
    assert sum(seen) == len(seqs)


@pytest.mark.gpu
def test_gpu_that_does_not_exist_is_one_clear_error(tmp_path):
    fa = tmp_path / "x.fa"
    fa.write_text(">a\nGGGAAACCC\n")
    proc = rnapipe("fold", fa, "-o", tmp_path / "out.db", "--device", "gpu", "--gpus", "99", cwd=tmp_path)
    assert proc.returncode == EXIT_UNAVAILABLE
    assert "GPU 99" in one_error_line(proc)
