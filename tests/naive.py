"""Slow, obviously correct references. Nothing here imports rnapipe's engines."""

from __future__ import annotations

import itertools
from functools import lru_cache

PAIRS = {("A", "U"), ("U", "A"), ("G", "C"), ("C", "G"), ("G", "U"), ("U", "G")}


def can_pair(a: str, b: str) -> bool:
    return (a, b) in PAIRS


def nussinov_score(seq: str, min_loop: int = 1) -> int:
    """Maximum number of non-crossing canonical pairs, a pair (i, j) needing j - i > min_loop.

    Memoized recursion straight from the definition: i is unpaired, or i pairs with some k.
    """
    n = len(seq)

    @lru_cache(maxsize=None)
    def best(i: int, j: int) -> int:
        if j - i <= min_loop:
            return 0
        value = best(i + 1, j)
        for k in range(i + min_loop + 1, j + 1):
            if can_pair(seq[i], seq[k]):
                value = max(value, 1 + best(i + 1, k - 1) + best(k + 1, j))
        return value

    return best(0, n - 1) if n else 0


def all_structures(seq: str, min_loop: int = 1):
    """Every non-crossing set of canonical pairs, as sorted lists of (i, j). Exponential: n <= 12."""
    n = len(seq)
    candidates = [(i, j) for i in range(n) for j in range(i + min_loop + 1, n) if can_pair(seq[i], seq[j])]
    for size in range(len(candidates) + 1):
        for subset in itertools.combinations(candidates, size):
            if is_valid_pairing(subset, n):
                yield list(subset)


def is_valid_pairing(pairs, n: int) -> bool:
    """Each base in at most one pair, and no two pairs cross (i < k < j < l)."""
    used = set()
    for i, j in pairs:
        if i in used or j in used or not (0 <= i < j < n):
            return False
        used.update((i, j))
    for (i, j), (k, l) in itertools.combinations(pairs, 2):
        if i < k < j < l or k < i < l < j:
            return False
    return True


def brute_force_nussinov(seq: str, min_loop: int = 1) -> int:
    return max(len(s) for s in all_structures(seq, min_loop))


def pairs_of(structure: str):
    """(i, j) pairs of a dot-bracket string with round brackets only; raises on imbalance."""
    stack, pairs = [], []
    for k, c in enumerate(structure):
        if c == "(":
            stack.append(k)
        elif c == ")":
            pairs.append((stack.pop(), k))
        elif c != ".":
            raise ValueError(f"unexpected character {c!r}")
    if stack:
        raise ValueError("unbalanced")
    return sorted(pairs)


def check_nussinov_structure(seq: str, structure: str, score: int, min_loop: int = 1) -> None:
    """Assert that a structure is a valid Nussinov structure with ``score`` pairs."""
    assert len(structure) == len(seq)
    pairs = pairs_of(structure)
    assert len(pairs) == score
    for i, j in pairs:
        assert can_pair(seq[i], seq[j]), (i, j, seq[i], seq[j])
        assert j - i > min_loop
