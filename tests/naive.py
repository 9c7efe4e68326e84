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


def enumerate_structures(seq: str, min_loop: int = 1):
    """Every non-crossing set of canonical pairs, built position by position: base i is unpaired or
    pairs with some k, which splits the rest into two independent parts. As many as the Motzkin
    number of n (15,511 for n = 12), so usable up to n of about 14 where ``all_structures`` is not."""

    def parts(i: int, j: int):
        if i > j:
            yield []
            return
        yield from parts(i + 1, j)
        for k in range(i + min_loop + 1, j + 1):
            if can_pair(seq[i], seq[k]):
                for inside in parts(i + 1, k - 1):
                    for outside in parts(k + 1, j):
                        yield [(i, k)] + inside + outside

    yield from parts(0, len(seq) - 1)


def nussinov_scores_batch(seqs, min_loop: int = 1, chunk: int = 500):
    """``nussinov_score`` for many short sequences at once: the same recursion (i unpaired, or i pairs
    with k) bottom up, with numpy across sequences of similar length. Sequences are padded with N,
    which never pairs, so each score is read at its own length."""
    import numpy as np

    scores = [0] * len(seqs)
    order = sorted(range(len(seqs)), key=lambda k: len(seqs[k]))
    for start in range(0, len(order), chunk):
        group = [seqs[k] for k in order[start:start + chunk]]
        for k, score in zip(order[start:start + chunk], _scores_same_length(group, min_loop, np)):
            scores[k] = score
    return scores


def _scores_same_length(seqs, min_loop, np):
    n = max(len(s) for s in seqs)
    if n == 0:
        return [0] * len(seqs)
    letters = np.array([list(s.ljust(n, "N")) for s in seqs]).reshape(len(seqs), n)
    pairable = np.zeros((len(seqs), n, n), dtype=bool)
    for a, b in PAIRS:
        pairable |= (letters[:, :, None] == a) & (letters[:, None, :] == b)
    # T[:, a, b + 1] is the best score of the interval [a, b]; empty intervals read as 0.
    T = np.zeros((len(seqs), n + 2, n + 1), dtype=np.int32)
    for i in range(n - 1, -1, -1):
        for j in range(i + min_loop + 1, n):
            ks = np.arange(i + min_loop + 1, j + 1)
            paired = 1 + T[:, i + 1, ks] + T[:, ks + 1, j + 1]
            paired = np.where(pairable[:, i, ks], paired, 0)
            T[:, i, j + 1] = np.maximum(T[:, i + 1, j + 1], paired.max(axis=1))
    return [int(T[k, 0, len(s)]) for k, s in enumerate(seqs)]
