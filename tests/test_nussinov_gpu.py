"""GPU Nussinov: every variant and the batched mode against independent references.

References: tests/naive.py (memoized recursion straight from the definition) for short sequences and a
NumPy anti-diagonal fill written here for longer ones (itself checked against naive.py below).
"""

import random

import numpy as np
import pytest

from naive import brute_force_nussinov, check_nussinov_structure, nussinov_score

PAIR = np.zeros((256, 256), dtype=bool)
for _a, _b in ("AU", "UA", "GC", "CG", "GU", "UG"):
    PAIR[ord(_a), ord(_b)] = True


def numpy_nussinov(seq: str, min_loop: int = 1) -> int:
    """C(i, i+d) for all i at once, d increasing: D[t, i] holds C(i, i+t)."""
    n = len(seq)
    if n == 0:
        return 0
    s = np.frombuffer(seq.encode(), dtype=np.uint8)
    D = np.zeros((n + 1, n + 1), dtype=np.int32)
    for d in range(min_loop + 1, n):
        i = np.arange(n - d)
        t = np.arange(d)[:, None]
        split = (D[t, i[None, :]] + D[d - 1 - t, i[None, :] + t + 1]).max(axis=0)
        inner = D[d - 2, i + 1] if d >= 2 else np.zeros(n - d, dtype=np.int32)
        paired = np.where(PAIR[s[i], s[i + d]], inner + 1, 0)
        D[d, : n - d] = np.maximum(split, paired)
    return int(D[n - 1, 0])


def random_rna(rng: random.Random, n: int, iupac: float = 0.03) -> str:
    return "".join("N" if rng.random() < iupac else rng.choice("ACGU") for _ in range(n))


def reference(seq: str, min_loop: int) -> int:
    return nussinov_score(seq, min_loop) if len(seq) <= 90 else numpy_nussinov(seq, min_loop)


def test_numpy_reference_matches_naive():
    rng = random.Random(7)
    for n in list(range(0, 12)) + [30, 61, 90]:
        for m in (0, 1, 3):
            seq = random_rna(rng, n)
            expected = brute_force_nussinov(seq, m) if n <= 9 else nussinov_score(seq, m)
            assert numpy_nussinov(seq, m) == expected, (seq, m)


# lengths around the 128-cell tile and the 32-thread buckets, tiny ones, and one with many tiles
LENGTHS = [0, 1, 2, 3, 4, 7, 31, 32, 33, 100, 127, 128, 129, 255, 256, 257, 385, 700]


@pytest.mark.gpu
@pytest.mark.parametrize("variant", ["dpx", "tiled", "packed", "chang", "four-russians"])
def test_variant_exact(variant):
    from rnapipe.gpu import nussinov as gpu

    rng = random.Random(sum(map(ord, variant)))
    for n in LENGTHS:
        for m in (1, 0, 3):
            seq = random_rna(rng, n)
            score, structure = gpu.fold_one(seq, variant, min_loop=m)
            assert score == reference(seq, m), (variant, n, m, seq)
            check_nussinov_structure(seq, structure, score, m)


@pytest.mark.gpu
@pytest.mark.parametrize("variant", ["dpx", "packed", "tiled"])
def test_tiled_long(variant):
    """Enough tiles that the k range of a block-diagonal is split over several blocks."""
    from rnapipe.gpu import nussinov as gpu

    rng = random.Random(11)
    seq = random_rna(rng, 1700)
    score, structure = gpu.fold_one(seq, variant)
    assert score == numpy_nussinov(seq)
    check_nussinov_structure(seq, structure, score)


@pytest.mark.gpu
def test_no_pairs_and_all_pairs():
    from rnapipe.gpu import nussinov as gpu

    for variant in gpu.VARIANTS:
        assert gpu.fold_one("N" * 300, variant) == (0, "." * 300)
        seq = "G" * 150 + "AA" + "C" * 150      # the only optimum nests every G with a C
        score, structure = gpu.fold_one(seq, variant)
        assert score == 150 and structure == "(" * 150 + ".." + ")" * 150


@pytest.mark.gpu
@pytest.mark.parametrize("m", [0, 1, 3])
def test_batched_mixed_lengths(m):
    from rnapipe.gpu import nussinov as gpu

    rng = random.Random(100 + m)
    seqs = [random_rna(rng, rng.randint(0, gpu.BATCH_MAX_N)) for _ in range(120)]
    seqs += [random_rna(rng, n) for n in (0, 1, 2, 3, 32, 33, 64, 65, 255, 256, 447, 448)]
    results = gpu.fold_short(seqs, min_loop=m)
    for seq, (score, structure) in zip(seqs, results):
        assert score == reference(seq, m), seq
        check_nussinov_structure(seq, structure, score, m)


@pytest.mark.gpu
def test_fold_batch_order_and_routing():
    """Short sequences go through the batched kernel, long ones one by one: results stay in input order."""
    from rnapipe.gpu import nussinov as gpu

    rng = random.Random(5)
    seqs = [random_rna(rng, n) for n in (300, 12, 0, 200, 600, 90, 256, 255)]
    for variant in ("dpx", "chang"):
        results = gpu.fold_batch(seqs, variant, 1, {})
        for seq, (score, structure) in zip(seqs, results):
            assert score == reference(seq, 1)
            check_nussinov_structure(seq, structure, score)


@pytest.mark.gpu
def test_engine_registered():
    from rnapipe.engines import get_engine

    module, variant = get_engine("nussinov", "gpu", None)
    assert variant == "dpx" and module.__name__ == "rnapipe.gpu.nussinov"
