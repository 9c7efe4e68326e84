"""The duplicate-id check of the streaming reader (rnapipe.pipeline.input.ids.IdSet) against a Python dict of
the ids seen so far: for every id, whether it was seen before and where first, whatever the table's size,
the reader's estimate of the ids to come, and however often fingerprints or whole hashes collide.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from rnapipe.pipeline.input import ids as ids_mod
from rnapipe.pipeline.input import scan
from rnapipe.pipeline.input.ids import IdSet


def stream(seed: int, count: int, distinct: int) -> list[str]:
    rng = random.Random(seed)
    return [f"id{rng.randrange(distinct)}" for _ in range(count)]


def blocks_of(names: list[str], seed: int):
    """``names`` cut into blocks of random sizes: (file index, ids, header lines) each."""
    rng = random.Random(seed)
    at, line = 0, 1
    while at < len(names):
        size = rng.choice([1, 2, 7, 50, 333, 2000])
        part = names[at:at + size]
        yield at % 3, part, list(range(line, line + 2 * len(part), 2))
        at += len(part)
        line += 2 * len(part)


def check(names: list[str], seed: int, expected=None) -> int:
    """Feed ``names`` to an IdSet block by block; compare each block's answer with a dict. Returns the
    number of duplicates."""
    seen: dict[str, tuple[int, int]] = {}
    dups = 0
    ids = IdSet()
    try:
        for file_index, part, lines in blocks_of(names, seed):
            if expected is not None:
                ids.expected = expected
            got = ids.add(part, None, file_index, lines)
            want = {}
            for k, (i, line) in enumerate(zip(part, lines)):
                if i in seen:
                    want[k] = seen[i]
                else:
                    seen[i] = (file_index, line)
            assert got == want
            dups += len(want)
    finally:
        ids.close()
    return dups


@pytest.mark.parametrize("initial", [1 << 4, 1 << 10, 1 << 16])
@pytest.mark.parametrize("expected", [None, 10, 5_000, 1e9])
def test_duplicates_as_a_dict_finds_them(monkeypatch, initial, expected):
    # estimates far too small, about right and far too large; tables that grow many times or not at all
    monkeypatch.setattr(IdSet, "INITIAL_SLOTS", initial)
    names = stream(initial, 6_000, 4_000)
    assert check(names, 1, expected) > 1_000


def test_the_table_is_sized_by_the_estimate_and_stays_small(monkeypatch):
    monkeypatch.setattr(IdSet, "INITIAL_SLOTS", 1 << 6)
    count = 40_000
    ids = IdSet()
    try:
        names = [f"r{k}" for k in range(count)]
        for k in range(0, count, 1_000):
            ids.expected = count
            assert ids.add(names[k:k + 1_000], None, 0, list(range(k, k + 1_000))) == {}
        # at most 90 % full, three bytes per slot, room for the estimate and no more than 5 % beyond it
        assert count / 0.9 * 3 <= ids.table_bytes <= count * 1.06 / 0.9 * 3 + 3
        assert ids.add(["r0", "r39999", "new"], None, 1, [7, 8, 9]) == {0: (0, 0), 1: (0, 39_999)}
    finally:
        ids.close()


@pytest.mark.parametrize("values", [1, 5, 300])
def test_colliding_whole_hashes_are_told_apart_by_the_ids(monkeypatch, values):
    """A hash with ``values`` values: every id is a suspect and most suspects' whole hashes match a logged
    one; only the ids themselves can decide."""
    def weak(buf, out):
        words = bytes(buf).split(b"\n")[:-1]
        for k, w in enumerate(words):
            out[k] = np.uint64(1 + (sum(w) % values) * 0x9E3779B97F4A7C15 % (1 << 64))
        return len(words)

    monkeypatch.setattr(ids_mod.scan, "hash_lines", weak)
    monkeypatch.setattr(IdSet, "INITIAL_SLOTS", 1 << 4)
    assert check(stream(values, 1_500, 1_000), 2) > 200


@pytest.mark.parametrize("shared", ["fingerprint", "slot"])
def test_ids_that_share_a_fingerprint_or_a_slot(monkeypatch, shared):
    """Distinct whole hashes that all have the same stored 24 bits (every id a suspect, cleared by its
    whole hash), or all start at the same slot (one long run)."""
    rng = np.random.default_rng(3)
    table: dict[bytes, int] = {}

    def forced(buf, out):
        words = bytes(buf).split(b"\n")[:-1]
        for k, w in enumerate(words):
            if w not in table:
                r = int(rng.integers(1, 1 << 40))
                table[w] = (0xABCDEF << 40) | r if shared == "fingerprint" else ((r & 0xFFFFFFFF) << 32) | 12345
            out[k] = np.uint64(table[w])
        return len(words)

    monkeypatch.setattr(ids_mod.scan, "hash_lines", forced)
    monkeypatch.setattr(IdSet, "INITIAL_SLOTS", 1 << 5)
    assert check(stream(7, 3_000, 2_000), 3, expected=2_000) > 500


def test_table_add_hits_exactly_the_hashes_met_before():
    """Hashes with distinct 24-bit fingerprints: a hit is exactly a hash met before (a set says), every
    distinct one is stored once, in a table filled to 80 %."""
    rng = np.random.default_rng(5)
    slots = 1_000
    fps = rng.choice(np.arange(1, 1 << 24, dtype=np.uint64), size=800, replace=False)
    distinct = (fps << np.uint64(40)) | rng.integers(0, 1 << 40, size=800, dtype=np.uint64)
    hashes = np.concatenate([distinct[:500], distinct[:100], distinct[500:], distinct[rng.integers(0, 800, 50)]])
    table = np.zeros(3 * slots, dtype=np.uint8)
    hits = np.empty(hashes.size, dtype=np.uint8)
    assert scan.table_add(table, hashes, hits) == 800
    seen: set[int] = set()
    for k, h in enumerate(hashes.tolist()):
        assert hits[k] == (h in seen)
        seen.add(h)
    stored = table.reshape(-1, 3).astype(np.uint64)
    stored = stored[:, 0] | (stored[:, 1] << np.uint64(8)) | (stored[:, 2] << np.uint64(16))
    assert sorted(stored[stored != 0].tolist()) == sorted(fps.tolist())


@pytest.mark.parametrize("compressed", [False, True])
def test_a_gzipped_input_sizes_the_table_as_a_plain_one_does(tmp_path, monkeypatch, compressed):
    """The reader's estimate of the ids to come holds for a gzipped file too (its share of the compressed
    bytes read), so that the table is sized from it rather than doubled at every fill."""
    import gzip

    from rnapipe.pipeline.input import reader

    monkeypatch.setattr(IdSet, "INITIAL_SLOTS", 1 << 6)
    monkeypatch.setattr(reader, "BLOCK_BYTES", 1 << 16)
    monkeypatch.setattr(reader, "READ_BYTES", 1 << 14)
    sized = []
    real_close = IdSet.close

    def close(self):
        sized.append((self.table_bytes, self._count))
        real_close(self)

    monkeypatch.setattr(IdSet, "close", close)
    rng = random.Random(4)
    count = 60_000
    text = "".join(f">r{k}\n{''.join(rng.choice('ACGU') for _ in range(30))}\n" for k in range(count)).encode()
    path = tmp_path / ("in.fa.gz" if compressed else "in.fa")
    path.write_bytes(gzip.compress(text) if compressed else text)
    assert sum(len(p.records) for p in reader.FastaReader([path])) == count
    table_bytes, ids = sized[0]
    assert ids == count
    # at most 90 % full, three bytes per slot; room for the estimate, within the steps of a quarter that an
    # estimate a little short takes (a table that doubled would hold 2.2 slots an id here)
    assert count / 0.9 * 3 <= table_bytes <= count * 1.3 / 0.9 * 3
