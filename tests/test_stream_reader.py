"""The streaming reader and the chunks, against the per-record reader rnapipe.io.read_records.

read_records is the reference here: slow, simple, and tested on its own in test_io.py. The streaming
reader must give the same records, the same rejected records and the same messages, whatever the block
boundaries are.
"""

from __future__ import annotations

import gzip
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rnapipe.errors import InputError
from rnapipe.io import read_records
from rnapipe.pipeline.folding import chunks as chunks_mod
from rnapipe.pipeline.input import reader as reader_mod
from rnapipe.pipeline.folding.chunks import chunked
from rnapipe.pipeline.input.reader import FastaReader, LengthCheck
from test_io import BAD_FILES, DATA, reference_text, write


def streamed(paths, on_invalid="error", length=None):
    records, rejected = [], []
    check = LengthCheck(length, (lambda n: f"too long: {n}") if length else None)
    for piece in FastaReader(paths, on_invalid, check):
        r = piece.records
        assert len(r.ids) == len(r.seqs) == len(r.lens) == len(r.index) == len(r.id_lens)
        assert [len(s) for s in r.seqs] == r.lens.tolist()
        assert [len(i.encode()) for i in r.ids] == r.id_lens.tolist()
        records += list(zip(r.ids, r.seqs, r.index.tolist()))
        rejected += piece.rejected
    return records, rejected


def reference(paths, on_invalid="error"):
    rejected = []
    records = [(r.id, r.sequence, r.index) for r in read_records(paths, on_invalid, rejected)]
    return records, rejected


@pytest.fixture(params=[(1 << 16, 4 << 20), (7, 64), (1, 1)], ids=["default", "small", "tiny"])
def blocks(request, monkeypatch):
    """Read and block sizes: the defaults, and small ones that cut blocks everywhere."""
    read, block = request.param
    monkeypatch.setattr(reader_mod, "READ_BYTES", read)
    monkeypatch.setattr(reader_mod, "BLOCK_BYTES", block)
    return request.param


def same_outcome(paths, on_invalid):
    """Both readers give the same records and rejected records, or raise the same error."""
    try:
        expected = reference(paths, on_invalid)
    except InputError as err:
        with pytest.raises(InputError) as got:
            streamed(paths, on_invalid)
        assert str(got.value) == str(err)
        assert (got.value.file, got.value.record, got.value.position) == (err.file, err.record, err.position)
        return
    assert streamed(paths, on_invalid) == expected


@pytest.mark.parametrize("name", sorted(BAD_FILES))
@pytest.mark.parametrize("on_invalid", ["error", "skip"])
def test_bad_files_same_as_the_record_reader(tmp_path, name, on_invalid, blocks):
    content = BAD_FILES[name][0]
    path = write(tmp_path / name, content)
    same_outcome([path], on_invalid)


def test_several_files_missing_ones_and_duplicates_across_files(tmp_path, blocks):
    a = write(tmp_path / "a.fa", ">x desc\nacgt\nACGU\n\n>y\nGG\n")
    b = write(tmp_path / "b.fa.gz", gzip.compress(b">z\nUUU\n>x\nCCC\n>w\nA-C\n"))
    for on_invalid in ("error", "skip"):
        same_outcome([a, tmp_path / "missing.fa", b, a], on_invalid)


def test_truncated_gzip_same_records_before_the_damage(tmp_path):
    body = "".join(f">s{k}\nACGUACGUACGU\n" for k in range(20000)).encode()
    packed = gzip.compress(body)
    path = write(tmp_path / "t.fa.gz", packed[: len(packed) // 2])
    records, rejected = streamed([path], "skip")
    assert 0 < len(records) < 20000
    assert [r[0] for r in records] == [f"s{k}" for k in range(len(records))]
    assert len(rejected) == 1 and rejected[0].id is None
    assert "the rest of the file was skipped" in rejected[0].reason


LINE_PIECES = [">a", ">b c", ">a", "> ", ">", ">x\t1", "ACGU", "acgt", "AC GU", "ACG-U", "NNRY", "", "  ",
               "AC\rGU", "ACGU\r", "\u00e9", ">\u00e9t\u00e9", "A1", ";c", " >q", "ACGUACGUACGUACGUACGU"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(LINE_PIECES), min_size=0, max_size=25),
       st.sampled_from(["\n", "\r\n"]), st.booleans(), st.integers(1, 50))
def test_random_files_same_as_the_record_reader(tmp_path_factory, lines, newline, bom, block):
    text = newline.join(lines) + (newline if lines and random.Random(block).random() < 0.7 else "")
    data = (b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8")
    path = tmp_path_factory.mktemp("r") / "in.fa"
    path.write_bytes(data)
    old = reader_mod.READ_BYTES, reader_mod.BLOCK_BYTES
    reader_mod.READ_BYTES, reader_mod.BLOCK_BYTES = block, block
    try:
        for on_invalid in ("error", "skip"):
            same_outcome([path], on_invalid)
    finally:
        reader_mod.READ_BYTES, reader_mod.BLOCK_BYTES = old


@pytest.mark.skipif(not (DATA / "transcripts").is_dir(), reason="../shared/data not present")
@pytest.mark.parametrize("name", ["miRBase21_hairpin_all_species.fa", "tRNAs_GtRNAdb_6species.fa"])
def test_shared_data_same_as_the_record_reader(name):
    path = DATA / "transcripts" / name
    same_outcome([path], "skip")
    same_outcome([path], "error")


def test_too_long_sequences(tmp_path, blocks):
    path = write(tmp_path / "a.fa", ">a\nACGU\n>b\nACGUACGU\n>c\nAC\n")
    records, rejected = streamed([path], "skip", length=5)
    assert [r[0] for r in records] == ["a", "c"]
    assert [(r.index, r.id, r.reason) for r in rejected] == [(1, "b", "too long: 8")]
    with pytest.raises(InputError, match="too long: 8") as err:
        streamed([path], "error", length=5)
    assert err.value.record == "b" and err.value.exit_code == 4


def test_duplicates_found_exactly_beyond_the_first_hash_table(tmp_path, monkeypatch):
    # enough ids that the table grows; the duplicates are the last records, first seen at the start
    from rnapipe.pipeline.input.ids import IdSet

    monkeypatch.setattr(IdSet, "INITIAL_SLOTS", 1 << 10)
    count = 200_000
    body = "".join(f">id{k}\nACGU\n" for k in range(count)) + ">id7\nGG\n>id150000\nCC\n>new\nA\n"
    path = write(tmp_path / "a.fa", body)
    records, rejected = streamed([path], "skip")
    assert len(records) == count + 1
    assert [(r.id, r.index) for r in rejected] == [("id7", count), ("id150000", count + 1)]
    assert "first seen in" in rejected[0].reason and "line 15" in rejected[0].reason
    assert rejected == reference([path], "skip")[1]


def test_colliding_hashes_are_checked_against_the_ids(tmp_path, monkeypatch):
    """With a hash that gives only 5 values, almost every id is a suspect: the answer must still be exact."""
    from rnapipe.pipeline.input import ids as ids_mod

    def weak(buf, out):
        words = bytes(buf).split(b"\n")[:-1]
        for k, w in enumerate(words):
            out[k] = np.uint64(1 + (sum(w) % 5) * (1 << 40))
        return len(words)

    monkeypatch.setattr(ids_mod.scan, "hash_lines", weak)
    monkeypatch.setattr(ids_mod.IdSet, "INITIAL_SLOTS", 1 << 4)
    rng = random.Random(2)
    names = [f"s{rng.randint(0, 400)}" for _ in range(600)]
    body = "".join(f">{n}\nACGU\n" for n in names)
    path = write(tmp_path / "a.fa", body)
    for read, block in ((1 << 16, 4 << 20), (5, 40)):
        monkeypatch.setattr(reader_mod, "READ_BYTES", read)
        monkeypatch.setattr(reader_mod, "BLOCK_BYTES", block)
        assert streamed([path], "skip") == reference([path], "skip")


# ---------------------------------------------------------------------------------------------------------
# chunks


def slow_work(n: int) -> float:
    from rnapipe.pipeline.folding.pace import SHAPE_B, SHAPE_C
    return float(n) ** 3 + SHAPE_B * float(n) ** 2 + SHAPE_C


def slow_chunks(lens_by_index: dict[int, int], total: int, records: int, cost: float, first: int = 0) -> list[int]:
    """Chunk ends by the rule, one record at a time from input index ``first`` (a rejected record has no length
    and costs nothing)."""
    ends, start, spent = [], first, 0.0
    for index in range(first, total):
        n = lens_by_index.get(index)
        if n is not None:
            spent += slow_work(n)
        if index + 1 - start >= records or spent >= cost:
            ends.append(index + 1)
            start, spent = index + 1, 0.0
    if start < total:
        ends.append(total)
    return ends


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(1, 60)), min_size=1, max_size=120), st.integers(1, 9),
       st.sampled_from([1e4, 3e5, 1e6, 1e12]), st.integers(1, 30), st.data())
def test_chunks_follow_the_rule_whatever_the_pieces(lens, records, cost, piece, data):
    from rnapipe.io.records import Rejected
    from rnapipe.pipeline.input.reader import Piece
    from rnapipe.pipeline.records import Records

    pieces = []
    for lo in range(0, len(lens), piece):
        hi = min(len(lens), lo + piece)
        keep = [k for k in range(lo, hi) if lens[k] is not None]
        pieces.append(Piece(Records.from_lists([f"r{k}" for k in keep], ["A" * lens[k] for k in keep], keep),
                            [Rejected(k, f"r{k}", None, "bad") for k in range(lo, hi) if lens[k] is None], hi))
    # a rerun's first chunks end where the journal says (any increasing ends), the rest by the rule
    ends = sorted(data.draw(st.sets(st.integers(1, len(lens)), max_size=4)))
    got = list(chunked(pieces, records, cost, ends=ends))
    assert [c.end for c in got] == ends + slow_chunks({k: n for k, n in enumerate(lens) if n is not None},
                                                      len(lens), records, cost, ends[-1] if ends else 0)
    assert [c.number for c in got] == list(range(len(got)))
    start = 0
    for c in got:
        inside = [k for k in range(start, c.end)]
        assert c.index.tolist() == [k for k in inside if lens[k] is not None]
        assert c.ids == [f"r{k}" for k in c.index.tolist()]
        assert c.seqs == ["A" * lens[k] for k in c.index.tolist()]
        assert [r.index for r in c.rejected] == [k for k in inside if lens[k] is None]
        assert c.cost == pytest.approx(sum(slow_work(lens[k]) for k in c.index.tolist()))
        start = c.end


def test_chunk_digest_changes_with_any_record(tmp_path):
    from rnapipe.pipeline.input.reader import Piece
    from rnapipe.pipeline.records import Records

    def one(ids, seqs):
        p = Piece(Records.from_lists(ids, seqs, range(len(ids))), [], len(ids))
        return next(chunked([p], 10, 1e12)).digest()

    base = one(["a", "b"], ["ACGU", "GG"])
    assert base == one(["a", "b"], ["ACGU", "GG"])
    assert base != one(["a", "c"], ["ACGU", "GG"])
    assert base != one(["a", "b"], ["ACGU", "GA"])
    assert base != one(["a", "b"], ["ACG", "UGG"])


def test_chunk_limit_from_the_environment(monkeypatch):
    monkeypatch.setenv("RNAPIPE_CHUNK_RECORDS", "3")
    assert chunks_mod.limits() == (3, chunks_mod.CHUNK_WORK)


def test_chunks_are_units_of_the_pace_and_follow_its_changes():
    """Each chunk closes at the record that brings it to the pace's unit of work, read when the chunk opens
    (as the previous one closes): a pace that measures a faster engine cuts the later chunks longer."""
    from rnapipe.pipeline.folding import pace as pace_mod
    from rnapipe.pipeline.input.reader import Piece
    from rnapipe.pipeline.records import Records

    lens = [50 + (k * 37) % 200 for k in range(3000)]
    piece = Piece(Records.from_lists([f"r{k}" for k in range(3000)], ["A" * n for n in lens], range(3000)), [],
                  3000)
    pace = pace_mod.Pace("cpu", 1, rate=1e9)
    unit = pace_mod.UNIT_SECONDS * 1e9
    got = []
    for chunk in chunked([piece], 1 << 16, 1e30, pace=pace):
        got.append(chunk)
        if len(got) == 3:
            pace._rate = 4e9                       # what observe() would set
    expect, start, spent, rate = [], 0, 0.0, 1e9
    for k, n in enumerate(lens):
        spent += slow_work(n)
        if spent >= pace_mod.UNIT_SECONDS * rate:
            expect.append(k + 1)
            start, spent = k + 1, 0.0
            if len(expect) == 4:               # the fourth opened before the change was seen
                rate = 4e9
    if start < len(lens):
        expect.append(len(lens))
    assert [c.end for c in got] == expect
    assert all(c.cost >= unit for c in got[:3]) and all(c.cost < unit + slow_work(250) for c in got[:3])
    assert len(got) > 4 and got[4].cost >= 4 * unit


def test_pace_follows_the_measured_calls_but_not_the_first():
    from rnapipe.pipeline.folding import pace as pace_mod

    pace = pace_mod.Pace("cpu", 2)
    assert pace.rate == 2 * pace_mod.GUESS["cpu"]
    pace.observe(1e12, 1.0)                        # the first call loads the engine: not counted
    assert pace.rate == 2 * pace_mod.GUESS["cpu"]
    pace.observe(3e10, 1.0)
    assert pace.rate == pytest.approx(3e10)
    pace.observe(6e10, 1.0)                        # the older call weighs less
    assert 3e10 < pace.rate < 6e10
    assert pace.seconds(pace.rate * 3) == pytest.approx(3.0)
    assert pace.unit_work() == pytest.approx(pace_mod.UNIT_SECONDS * pace.rate)


def test_a_partition_runs_first_chunks_are_cut_for_its_slower_engine():
    """The partition function's folder paces its run from a guess SLOWER times the MFE's (its engines fold a
    record several times slower), so that a -p run's first chunk holds that many times fewer records."""
    from rnapipe.pipeline.choose import folder_for
    from rnapipe.pipeline.ensemble.request import Settings
    from rnapipe.pipeline.folding import pace as pace_mod
    from rnapipe.pipeline.input.reader import Piece
    from rnapipe.pipeline.records import Records

    mfe, pf = folder_for("zuker", threads=2), folder_for("zuker", threads=2, ensemble=Settings())
    slower = pace_mod.SLOWER["partition"]["cpu"]
    assert pace_mod.Pace.of(mfe).rate == pytest.approx(slower * pace_mod.Pace.of(pf).rate)
    piece = Piece(Records.from_lists([f"r{k}" for k in range(20000)], ["A" * 200] * 20000, range(20000)), [], 20000)
    first = [next(iter(chunked([piece], 1 << 16, 1e30, pace=pace_mod.Pace.of(f)))).end for f in (mfe, pf)]
    assert first[1] < first[0] and first[0] / first[1] == pytest.approx(slower, rel=0.01)


# ---------------------------------------------------------------------------------------------------------
# the compiled db / TSV text against the formats' description


@pytest.mark.parametrize("algorithm", ["zuker", "nussinov"])
@pytest.mark.parametrize("fmt", ["db", "tsv"])
def test_compiled_text_equals_the_reference(fmt, algorithm):
    from rnapipe.api import Result
    from rnapipe.io import packed
    from rnapipe.io.render import render

    rng = random.Random(4)
    scores = [0, 5, -5, 99, -99, 100, -100, -120, -1234, -99999, 123456, -1, 1, 10, 999, -1000000]
    scores += [rng.randint(-200000, 3000) for _ in range(200)]
    records = []
    for k, score in enumerate(scores):
        n = rng.randint(0, 30)
        seq = "".join(rng.choice("ACGUN") for _ in range(n))
        structure = "".join(rng.choice(".()") for _ in range(n))
        score = abs(score) % 5000 if algorithm == "nussinov" else score
        records.append(Result(f"id{k}\u00e9" if k % 7 == 0 else f"r{k}", seq, structure, score, algorithm, k))
    want = "".join(reference_text(fmt, r) for r in records).encode("utf-8")
    ids, id_lens = packed.pack([r.id for r in records])
    seqs, lens = packed.pack([r.sequence for r in records])
    structures, _ = packed.pack([r.structure for r in records])
    got = render(fmt, algorithm, ids, id_lens, seqs, lens, structures,
                 np.array([r.score_int for r in records], dtype=np.int64))
    assert bytes(got) == want


# ---------------------------------------------------------------------------------------------------------
# the engines' packed entry (fold_packed), against the naive reference and their own fold_batch


@pytest.mark.parametrize("variant", ["transposed", "naive", "parallel"])
def test_nussinov_fold_packed_is_exact(variant):
    from naive import check_nussinov_structure, nussinov_score

    from rnapipe.cpu import nussinov

    rng = random.Random(17)
    seqs = ["".join(rng.choice("ACGUN") for _ in range(rng.randint(0, 90))) for _ in range(150)] + ["", "GC"]
    rng.shuffle(seqs)
    text = "".join(s + "\n" for s in seqs).encode()
    scores, structures = nussinov.fold_packed(text, np.array([len(s) for s in seqs]), variant, 2, {})
    got = list(zip(scores.tolist(), structures.decode().split("\n")[:-1]))
    assert got == nussinov.fold_batch(seqs, variant, 2, {})
    for s, (score, structure) in zip(seqs, got):
        assert score == nussinov_score(s)
        check_nussinov_structure(s, structure, score)


def test_folder_packed_list_fallback_equals_the_engine():
    """An engine without fold_packed (Zuker on the CPU) goes through fold_batch: same results."""
    from rnapipe.cpu import zuker
    from rnapipe.pipeline.records import Records
    from rnapipe.pipeline.folding.folder import Folder

    rng = random.Random(18)
    seqs = ["".join(rng.choice("ACGU") for _ in range(rng.randint(0, 40))) for _ in range(40)]
    parts = [Records.from_lists([f"a{k}" for k in range(20)], seqs[:20], range(20)),
             Records.from_lists([f"b{k}" for k in range(20)], seqs[20:], range(20, 40))]
    scores, structures = Folder("zuker", threads=2).fold_packed(parts)
    assert list(zip(scores.tolist(), structures.decode().split("\n")[:-1])) == zuker.fold_batch(seqs, "default", 2, {})
