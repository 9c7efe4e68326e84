"""rnapipe.gpu.zuker.fold_packed (packed sequences in, packed results out: the streaming CLI's path) and
zuker_short.fold_group_packed: identical to the CPU engine, in input order, with empty sequences, mixed
kernels (short, block, tiled), the int16 ring's refold, chunks on several streams and out-of-memory splits."""

from __future__ import annotations

import random

import numpy as np
import pytest
from seqgen import random_seqs

from rnapipe.cpu import zuker as cpu

pytestmark = pytest.mark.gpu


def packed(seqs):
    return "".join(s + "\n" for s in seqs).encode(), np.array([len(s) for s in seqs], dtype=np.int64)


def unpacked(energies, structures):
    text = structures.decode("ascii") if isinstance(structures, bytes) else bytes(structures).decode("ascii")
    return list(zip(energies.tolist(), text.split("\n")[:-1]))


def reference(seqs):
    return cpu.fold_batch(seqs, "default", 4, {})


def test_fold_packed_mixed_lengths_empty_and_unsorted():
    from rnapipe.gpu import zuker as gpu
    seqs = random_seqs(700, 1, 300, seed=91) + random_seqs(6, 601, 900, seed=92) + ["", "", "A"]
    random.Random(93).shuffle(seqs)
    want = [(0, "") if not s else r for s, r in zip(seqs, reference(seqs))]
    assert unpacked(*gpu.fold_packed(*packed(seqs), "default", 4, {})) == want
    ordered = sorted(seqs[:300], key=len, reverse=True)
    ordered = [s for s in ordered if s]
    assert unpacked(*gpu.fold_packed(*packed(ordered), "default", 4, {})) == gpu.fold_batch(ordered, "default", 4, {})


def test_fold_group_packed_refolds_and_streams(monkeypatch):
    from rnapipe.gpu import zuker_short as short
    from rnapipe.model import Model
    monkeypatch.setitem(short.TUNING, "options", ("-DZ2_RING_LIM=50",))
    monkeypatch.setattr(short, "CHUNK", 37)
    seqs = sorted(random_seqs(500, 1, short.smem_max_n() or 232, seed=94), key=len, reverse=True)
    text, lens = packed(seqs)
    energies, structures = short.fold_group_packed(np.frombuffer(text, dtype=np.uint8), lens, Model())
    assert unpacked(energies, structures) == reference(seqs)


def test_fold_packed_out_of_memory_splits(monkeypatch):
    import cupy

    from rnapipe.gpu import zuker as gpu
    from rnapipe.gpu import zuker_short as short
    seqs = random_seqs(600, 1, 300, seed=95)
    real, sizes = short.fold_group_packed, []

    def short_of_memory(text, lens, model):
        sizes.append(len(lens))
        if len(lens) > 150:
            raise cupy.cuda.memory.OutOfMemoryError(1 << 40, 1 << 40)
        return real(text, lens, model)

    monkeypatch.setattr(short, "fold_group_packed", short_of_memory)
    assert unpacked(*gpu.fold_packed(*packed(seqs), "default", 1, {})) == reference(seqs)
    assert sizes == [600, 300, 150, 150, 300, 150, 150]
