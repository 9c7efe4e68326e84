"""Four-Russians Nussinov on the CPU: the property it rests on, the table R, and every variant's result.

References: tests/naive.py (memoized recursion, brute force) and a plain full-table DP written here.
"""

import itertools
import random
from pathlib import Path

import numpy as np
import pytest

from naive import brute_force_nussinov, check_nussinov_structure, nussinov_score

VARIANTS = ["two-vector", "fg", "memo-partial", "memo-full"]
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
PAIRS = {("A", "U"), ("U", "A"), ("G", "C"), ("C", "G"), ("G", "U"), ("U", "G")}


def full_table(seq: str, min_loop: int) -> list[list[int]]:
    """C[i][j] for all i <= j by the textbook recurrence (i unpaired, or i paired with some k)."""
    n = len(seq)
    C = [[0] * n for _ in range(n)]
    for d in range(min_loop + 1, n):
        for i in range(n - d):
            j = i + d
            best = C[i + 1][j]
            for k in range(i + min_loop + 1, j + 1):
                if (seq[i], seq[k]) in PAIRS:
                    inner = C[i + 1][k - 1] if i + 1 <= k - 1 else 0
                    outer = C[k + 1][j] if k + 1 <= j else 0
                    best = max(best, inner + 1 + outer)
            C[i][j] = best
    return C


def random_rna(rng, n, iupac=0.05):
    return "".join("N" if rng.random() < iupac else rng.choice("ACGU") for _ in range(n))


@pytest.mark.parametrize("min_loop", [0, 1, 2, 3, 5])
def test_adjacent_cells_differ_by_0_or_1(min_loop):
    """The Four-Russians premise, for our recurrence with min_loop: along rows and down columns."""
    rng = random.Random(min_loop)
    for n in (2, 9, 40, 80):
        for _ in range(3):
            seq = random_rna(rng, n)
            C = full_table(seq, min_loop)
            for i in range(n):
                for j in range(i + 1, n):
                    assert C[i][j] - C[i][j - 1] in (0, 1), (seq, i, j)
                    assert C[i][j] - C[i + 1][j] in (0, 1), (seq, i, j)


@pytest.mark.parametrize("q", [2, 3, 4, 5])
def test_r_table_is_the_max_prefix_difference(q):
    from rnapipe.cpu.fourrussians import r_table

    bits = q - 1
    R = r_table(q)
    for x, y in itertools.product(range(1 << bits), repeat=2):
        xs = [(x >> t) & 1 for t in range(bits)]
        ys = [(y >> t) & 1 for t in range(bits)]
        expected = max(sum(xs[:p]) - sum(ys[:p]) for p in range(q))
        assert R[(x << bits) | y] == expected


@pytest.mark.parametrize("variant", VARIANTS)
def test_variant_matches_naive(variant):
    from rnapipe.cpu.fourrussians import fold_one

    rng = random.Random(sum(map(ord, variant)))
    for n in list(range(0, 13)) + [17, 24, 31, 47, 64, 70]:
        for q in (2, 3, 5, 8):
            m = rng.choice([0, 1, 3])
            seq = random_rna(rng, n)
            expected = brute_force_nussinov(seq, m) if n <= 9 else nussinov_score(seq, m)
            score, structure = fold_one(seq, variant, {"min_loop": m, "q": q})
            assert score == expected, (variant, seq, m, q)
            check_nussinov_structure(seq, structure, score, m)


@pytest.mark.parametrize("variant", VARIANTS)
def test_whole_table_matches(variant):
    """Every cell, not only C(0, n-1): lengths that are not multiples of q, automatic and set q."""
    from rnapipe.cpu.fourrussians import fill

    rng = random.Random(3)
    for n, q, m in ((150, 8, 1), (133, 7, 0), (121, 4, 3), (97, 12, 1)):
        seq = random_rna(rng, n)
        C = np.array(full_table(seq, m))
        M = fill(seq, variant, m, q)
        upper = np.triu(np.ones((n, n), dtype=bool))
        assert np.array_equal(M[upper], C[upper])
        assert np.array_equal(M.T[upper], C[upper])          # the mirror


@pytest.mark.parametrize("variant", VARIANTS)
def test_longer_sequence_against_table(variant):
    from rnapipe.cpu.fourrussians import fold_one

    seq = random_rna(random.Random(9), 400, iupac=0.0)
    expected = full_table(seq, 1)[0][-1]
    score, structure = fold_one(seq, variant)
    assert score == expected
    check_nussinov_structure(seq, structure, score)


def test_engine_registration_and_options():
    from rnapipe.engines import get_engine, variants
    from rnapipe.errors import UsageError

    for v in VARIANTS:
        module, variant = get_engine("nussinov", "cpu", v)
        assert module.__name__ == "rnapipe.cpu.fourrussians" and variant == v
        assert v in variants("nussinov", "cpu")
    results = module.fold_batch(["GGGAAACCC", "", "ACGU" * 10], "two-vector", 2, {"q": 3})
    assert [r[0] for r in results] == [nussinov_score(s) for s in ["GGGAAACCC", "", "ACGU" * 10]]
    with pytest.raises(UsageError):
        module.fold_batch(["ACGU"], "two-vector", 1, {"q": 1})
    with pytest.raises(UsageError):
        module.fold_batch(["ACGU"], "two-vector", 1, {"temperature": 37})


@pytest.mark.skipif(not (DATA / "known").is_dir(), reason="shared RNA data not present")
def test_real_trnas():
    from rnapipe.cpu.fourrussians import fold_one

    lines = (DATA / "known" / "tRNAscanSE_EcoliK12_tRNAs.dbn").read_text().split("\n")
    seqs = [lines[k + 1].strip().upper().replace("T", "U") for k in range(0, 30, 3)]
    for seq in seqs:
        expected = nussinov_score(seq)
        for v in VARIANTS:
            score, structure = fold_one(seq, v)
            assert score == expected, (v, seq)
            check_nussinov_structure(seq, structure, score)
