"""The GPU Zuker engine's batch plan (pure host code, no GPU needed) against a plain greedy loop: consecutive
groups of the longest-first order, one fill kind each, each as many sequences as fit the memory budget (at
least one) and no more than the grid allows."""

from __future__ import annotations

import random

import pytest

from rnapipe.gpu import zuker as gpu
from rnapipe.gpu import zuker_short


def greedy(order, lens, budget, fill_override, max_batch):
    groups, cur, used, kind = [], [], 0, None
    for idx in order:
        n = lens[idx]
        if fill_override:
            k = fill_override
        elif n <= zuker_short.MAX_N:
            k = "short"
        else:
            k = "block" if n <= gpu.BLOCK_MAX_N else gpu.LONG_FILL
        need = zuker_short.bytes_needed(n) if k == "short" else gpu.bytes_needed(n)
        if cur and (k != kind or used + need > budget or len(cur) >= max_batch):
            groups.append((kind, cur))
            cur, used = [], 0
        cur.append(idx)
        used += need
        kind = k
    if cur:
        groups.append((kind, cur))
    return groups


@pytest.mark.parametrize("seed", range(40))
def test_plan_equals_the_greedy_loop(monkeypatch, seed):
    rng = random.Random(seed)
    lens = [rng.randint(1, rng.choice([40, 700, 3000, 20000])) for _ in range(rng.choice([1, 3, 60, 2000]))]
    order = sorted(range(len(lens)), key=lambda k: -lens[k])
    budget = rng.choice([1, gpu.bytes_needed(max(lens)), 5 * gpu.bytes_needed(max(lens)), 10**12])
    max_batch = rng.choice([3, 65_535])
    monkeypatch.setattr(gpu, "MAX_BATCH", max_batch)
    for fill in (None, "short", "block", "tiled", "diag"):
        plan = [(kind, idxs.tolist()) for kind, idxs in gpu._plan(order, lens, budget, fill)]
        assert plan == greedy(order, lens, budget, fill, max_batch)


def test_plan_keeps_every_sequence_once_in_order():
    lens = [5, 900, 1, 650, 650, 20_000, 120]
    order = sorted(range(len(lens)), key=lambda k: -lens[k])
    groups = gpu._plan(order, lens, 10**12, None)
    assert [i for _, idxs in groups for i in idxs.tolist()] == order
    kinds = [kind for kind, _ in groups]
    assert len(kinds) == len(set(kinds))          # one group per kind when everything fits
