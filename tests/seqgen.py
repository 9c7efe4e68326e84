"""Random test data shared by test files and benchmarks: sequences, constraint lines."""

from __future__ import annotations

import random
from collections.abc import Iterator


def iter_random_seqs(count: int, lo: int, hi: int, seed: int, n_rate: float = 0.02) -> Iterator[str]:
    """``count`` sequences of uniform length lo..hi, one at a time: ACGU, each position N with probability
    ``n_rate``."""
    rng = random.Random(seed)
    for _ in range(count):
        n = rng.randint(lo, hi)
        yield "".join("N" if rng.random() < n_rate else rng.choice("ACGU") for _ in range(n))


def random_seqs(count: int, lo: int, hi: int, seed: int, n_rate: float = 0.02) -> list[str]:
    """``count`` sequences of uniform length lo..hi: ACGU, each position N with probability ``n_rate``."""
    return list(iter_random_seqs(count, lo, hi, seed, n_rate))


def random_constraint(seq: str, rng: random.Random) -> str:
    """A valid constraint line for ``seq``: nested bracket pairs (a third of them on complementary bases, the
    rest anything), and x, |, <, > on some free positions."""
    n = len(seq)
    line = ["."] * n
    pairs = {"A": "U", "U": "AG", "G": "CU", "C": "G"}
    for _ in range(rng.randint(0, max(1, n // 25))):
        i = rng.randrange(n)
        lo = i + rng.choice([2, 3, 4, 5, 8, 12, 20])
        if lo >= n:
            continue
        js = [j for j in range(lo, min(n, lo + 60))]
        if rng.random() < 0.35:
            js = [j for j in js if seq[j] in pairs.get(seq[i], "")] or js
        j = rng.choice(js)
        # keep it nested with the pairs placed before: no bracket inside (i, j) may pair outside it
        depth, ok = 0, line[i] == "." and line[j] == "."
        for k in range(i + 1, j):
            depth += {"(": 1, ")": -1}.get(line[k], 0)
            if depth < 0:
                ok = False
        if ok and depth == 0:
            line[i], line[j] = "(", ")"
    for k in range(n):
        if line[k] == "." and rng.random() < 0.08:
            line[k] = rng.choice("x|<>" if k else "x|<")   # a line starting with '>' reads as a FASTA header
    return "".join(line)
