"""Random test sequences shared by the GPU test files."""

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
