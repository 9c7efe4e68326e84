"""The GPU Zuker engine's batch plan (pure host code, no GPU needed) against a plain greedy loop: consecutive
groups of the longest-first order, one fill kind each, each as many sequences as fit the memory budget (at
least one) and no more than the grid allows; then each run of one kind cut again into as many groups of about
equal bytes, where they fit."""

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
        elif n <= gpu.short_max_n():
            k = "short"
        else:
            k = gpu.LONG_FILL
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


def balanced(groups, lens, budget, fill_override, max_batch):
    """The greedy loop's groups, each run of one kind re-cut into as many groups, the cuts after the first
    sequence whose running bytes reach m/k of the run's, where every group keeps at least one sequence, fits the
    budget and the grid (else the run stays as it is)."""
    def need(idx, kind):
        return zuker_short.bytes_needed(lens[idx]) if kind == "short" else gpu.bytes_needed(lens[idx])

    out, k0 = [], 0
    while k0 < len(groups):
        k1 = k0
        while k1 < len(groups) and groups[k1][0] == groups[k0][0]:
            k1 += 1
        kind, run = groups[k0][0], groups[k0:k1]
        seqs = [i for _, g in run for i in g]
        k = len(run)
        if k > 1:
            sizes = [need(i, kind) for i in seqs]
            total, acc, m, cuts = sum(sizes), 0, 1, []
            for pos, x in enumerate(sizes):
                acc += x
                while m < k and acc >= total * m / k:
                    cuts.append(pos + 1)
                    m += 1
            bounds = list(zip([0] + cuts, cuts + [len(seqs)]))
            recut = [(kind, seqs[x:y]) for x, y in bounds]
            if all(0 < y - x <= max_batch and sum(sizes[x:y]) <= budget for x, y in bounds):
                run = recut
        out += run
        k0 = k1
    return out


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
        loop = greedy(order, lens, budget, fill, max_batch)
        assert plan == balanced(loop, lens, budget, fill, max_batch)
        assert len(plan) == len(loop) and [i for _, g in plan for i in g] == order


def test_plan_balances_the_groups_of_a_run():
    """512 records of 2,500 nt where 382 fit: two groups of 256, not 382 and 130."""
    lens = [2_500] * 512
    budget = 382 * gpu.bytes_needed(2_500) + 1
    plan = gpu._plan(list(range(512)), lens, budget, None)
    assert [len(idxs) for _, idxs in plan] == [256, 256]
    assert [len(g) for _, g in greedy(list(range(512)), lens, budget, None, gpu.MAX_BATCH)] == [382, 130]


def test_plan_keeps_every_sequence_once_in_order():
    lens = [5, 900, 1, 650, 650, 20_000, 120]
    order = sorted(range(len(lens)), key=lambda k: -lens[k])
    groups = gpu._plan(order, lens, 10**12, None)
    assert [i for _, idxs in groups for i in idxs.tolist()] == order
    kinds = [kind for kind, _ in groups]
    assert len(kinds) == len(set(kinds))          # one group per kind when everything fits


@pytest.mark.parametrize("chunk", [37, 8192])
def test_chunk_sizes_cover_the_group(monkeypatch, chunk):
    """The short path's chunks: every sequence in exactly one, none larger than CHUNK or the pool allows,
    small ones first and last."""
    monkeypatch.setattr(zuker_short, "CHUNK", chunk)
    rng = random.Random(chunk)
    for count in list(range(0, 300)) + [rng.randint(300, 200_000) for _ in range(300)]:
        most = rng.choice([None, 1, 7, 100, 341, 2237, 10**6])
        sizes = zuker_short.chunk_sizes(count, most)
        assert sum(sizes) == count and all(k > 0 for k in sizes)
        cap = min(chunk, most or chunk)
        if len(sizes) > 1:
            assert max(sizes) <= cap
            assert sizes[0] <= sizes[1] <= sizes[2] and sizes[-1] <= sizes[-2] <= sizes[-3] <= sizes[-4]
        else:                                     # one chunk: a small group, or chunks would be tiny
            assert cap < 16 or count // 3 < max(16, cap // 16)


def test_shape_layout_puts_each_sequence_at_its_text_offset_plus_its_index():
    """zuker_short.shape_layout (the SHAPE terms as the short kernels read them, a chunk at a time) against the
    layout written out one sequence at a time: sequence k's terms at its text offset (one '\\n' after each sequence)
    plus k, plus one, zeros around them; into a given buffer too."""
    import numpy as np

    from rnapipe.gpu.zuker_short import shape_layout

    rng = np.random.default_rng(5)
    lens = [1, 7, 120, 3, 232, 1, 60]
    shape = [rng.integers(-300, 300, n).astype(np.int32) for n in lens]
    want = np.zeros(sum(lens) + 2 * len(lens), dtype=np.int32)
    text = 0
    for k, (n, v) in enumerate(zip(lens, shape)):
        want[text + k + 1:text + k + 1 + n] = v
        text += n + 1
    assert shape_layout(shape).tolist() == want.tolist()
    out = np.full(want.size, 99, dtype=np.int32)
    assert shape_layout(shape, out=out) is out and out.tolist() == want.tolist()


def test_the_handover_follows_the_short_kernels_limits(monkeypatch):
    """Without a forced fill the short kernels take up to SHORT_MAX_N (where they and the tiled fill cross) or
    what zs_fold_smem takes (500 nt where no GPU says less) if lower, the tiled fill the rest; zuker_short.MAX_N = 0
    turns the short path off."""
    lens = [zuker_short.SMEM_MAX_N + 1, zuker_short.SMEM_MAX_N, 300, 20]
    order = list(range(len(lens)))

    def kinds():
        return [(kind, idxs.tolist()) for kind, idxs in gpu._plan(order, lens, 10**12, None)]

    monkeypatch.setattr(zuker_short, "smem_max_n", lambda: zuker_short.SMEM_MAX_N)
    assert gpu.SHORT_MAX_N < zuker_short.SMEM_MAX_N
    assert kinds() == [(gpu.LONG_FILL, [0, 1]), ("short", [2, 3])]
    monkeypatch.setattr(gpu, "SHORT_MAX_N", None)
    assert kinds() == [(gpu.LONG_FILL, [0]), ("short", [1, 2, 3])]
    monkeypatch.setattr(gpu, "SHORT_MAX_N", 300)
    assert kinds() == [(gpu.LONG_FILL, [0, 1]), ("short", [2, 3])]
    monkeypatch.setattr(gpu, "SHORT_MAX_N", None)
    monkeypatch.setattr(zuker_short, "MAX_N", 0)
    assert kinds() == [(gpu.LONG_FILL, [0, 1, 2, 3])]
    # a forced short fill still takes zs_fold's lengths (up to MAX_N)
    monkeypatch.setattr(zuker_short, "MAX_N", 600)
    assert [k for k, _ in gpu._plan(order, lens, 10**12, "short")] == ["short"]
