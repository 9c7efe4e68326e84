"""Pair tables, dot-bracket, CT and BPSEQ: round trips and errors, against ViennaRNA's own parsers."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from naive import is_valid_pairing, pairs_of
from rnapipe import structure as S
from rnapipe.errors import InputError

RNA = pytest.importorskip("RNA")

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@st.composite
def nested_structures(draw, max_size=60):
    """A random balanced dot-bracket string built by its own stack walk (not by rnapipe)."""
    steps = draw(st.lists(st.sampled_from("(.)"), max_size=max_size))
    out, depth = [], 0
    for c in steps:
        if c == ")" and depth == 0:
            c = "."
        depth += {"(": 1, ")": -1, ".": 0}[c]
        out.append(c)
    return "".join(out) + ")" * depth


@st.composite
def sequences_with_structures(draw):
    db = draw(nested_structures())
    seq = "".join(draw(st.lists(st.sampled_from("ACGUN"), min_size=len(db), max_size=len(db))))
    return seq, db


def vienna_table(db: str) -> list[int]:
    """ViennaRNA's 1-based ptable turned into our 0-based form."""
    if not db:
        return []  # ViennaRNA returns None for an empty structure
    pt = list(RNA.ptable(db))
    return [j - 1 for j in pt[1:]]


@settings(max_examples=300, deadline=None)
@given(nested_structures())
def test_dotbracket_pair_table_round_trip_matches_vienna(db):
    pt = S.pair_table(db)
    assert pt == vienna_table(db)
    assert sorted(S.pairs(pt)) == pairs_of(db)
    assert S.dot_bracket(pt) == db
    assert S.is_nested(pt)
    assert S.from_pairs(S.pairs(pt), len(db)) == pt


@settings(max_examples=200, deadline=None)
@given(sequences_with_structures())
def test_ct_round_trip_and_vienna_reads_our_ct(tmp_path_factory, item):
    seq, db = item
    pt = S.pair_table(db)
    text = S.to_ct(seq, pt, f"ENERGY = -1.20  rec{len(seq)}")
    ((title, seq2, pt2),) = list(S.parse_ct(text))
    assert (title, seq2, pt2) == (f"ENERGY = -1.20  rec{len(seq)}", seq, pt)
    if seq:  # ViennaRNA's reader wants at least one base
        path = tmp_path_factory.mktemp("ct") / "one.ct"
        path.write_text(text)
        with open(path) as handle:
            status, _, vseq, vdb, _ = RNA.file_connect_read_record(handle, "")
        assert (vseq, vdb) == (seq, db)


@settings(max_examples=200, deadline=None)
@given(sequences_with_structures())
def test_bpseq_round_trip(item):
    seq, db = item
    pt = S.pair_table(db)
    text = S.to_bpseq(seq, pt, ["rec", "score: 3 pairs"])
    # an obvious independent reading: three columns per base line
    rows = [line.split() for line in text.splitlines() if not line.startswith("#")]
    assert [(int(i), b, int(j)) for i, b, j in rows] == [(k + 1, seq[k], pt[k] + 1) for k in range(len(seq))]
    if seq:
        ((comments, seq2, pt2),) = list(S.parse_bpseq(text))
        assert (comments, seq2, pt2) == (["rec", "score: 3 pairs"], seq, pt)


@settings(max_examples=50, deadline=None)
@given(st.lists(sequences_with_structures().filter(lambda x: x[0]), min_size=1, max_size=5))
def test_many_records_concatenated(items):
    ct = "".join(S.to_ct(seq, S.pair_table(db), f"r{k}") for k, (seq, db) in enumerate(items))
    bpseq = "".join(S.to_bpseq(seq, S.pair_table(db), [f"r{k}"]) for k, (seq, db) in enumerate(items))
    bpseq_bare = "".join(S.to_bpseq(seq, S.pair_table(db)) for seq, db in items)
    expected = [(seq, S.pair_table(db)) for seq, db in items]
    assert [(s, p) for _, s, p in S.parse_ct(ct)] == expected
    assert [t for t, _, _ in S.parse_ct(ct)] == [f"r{k}" for k in range(len(items))]
    assert [(s, p) for _, s, p in S.parse_bpseq(bpseq)] == expected
    assert [(s, p) for _, s, p in S.parse_bpseq(bpseq_bare)] == expected


def random_matchings(n):
    """Every set of pairs on n bases, crossing or not (tiny n only)."""
    candidates = list(itertools.combinations(range(n), 2))
    for size in range(n // 2 + 1):
        for subset in itertools.combinations(candidates, size):
            used = [k for pair in subset for k in pair]
            if len(set(used)) == len(used):
                yield list(subset)


@pytest.mark.parametrize("n", range(0, 9))
def test_crossing_detection_and_pseudoknot_brackets_exhaustive(n):
    for pair_list in random_matchings(n):
        pt = S.from_pairs(pair_list, n)
        nested = is_valid_pairing(sorted(pair_list), n)
        assert S.is_nested(pt) == nested
        crossing = S.first_crossing(pt)
        if crossing is not None:
            (i, j), (k, l) = crossing
            assert i < k < j < l and pt[i] == j and pt[k] == l
        if not nested:
            with pytest.raises(S.StructureError, match="cross"):
                S.dot_bracket(pt)
        db = S.dot_bracket(pt, pseudoknots=True)
        assert S.pair_table(db) == pt
        if nested:
            assert set(db) <= set("().")


def test_pseudoknot_reading_matches_vienna():
    db = "((..[[..))..]]..((.[..[[..)).]..]]"  # ViennaRNA's ptable_pk knows () and [] only
    assert S.pair_table(db) == [j - 1 for j in list(RNA.ptable_pk(db))[1:]]
    assert S.pair_table("<.{.>.}") == [4, -1, 6, -1, 0, -1, 2]


@pytest.mark.parametrize("db, position, words", [
    ("(()", 1, "unmatched '('"),
    ("())", 3, "unmatched ')'"),
    ("..)(", 3, "unmatched ')'"),
    ("((.]", 4, "unmatched ']'"),
    ("(.x)", 3, "invalid character 'x'"),
    ("(.-)", 3, "invalid character '-'"),
])
def test_bad_dotbracket_names_position(db, position, words):
    with pytest.raises(S.StructureError) as err:
        S.pair_table(db, record="r1", file="f.db")
    assert err.value.position == position
    assert words in str(err.value)
    assert str(err.value).startswith("f.db, record 'r1', position")
    assert isinstance(err.value, InputError)


def test_check_structure():
    assert S.check_structure("GGGAAACCC", "(((...)))", canonical=True, min_loop=3) == S.pair_table("(((...)))")
    with pytest.raises(S.StructureError, match="9 characters but the sequence has 8"):
        S.check_structure("GGGAAACC", "(((...)))")
    with pytest.raises(S.StructureError, match="not a canonical") as err:
        S.check_structure("GAGAAACCC", "(((...)))", canonical=True)
    assert err.value.position == 2
    with pytest.raises(S.StructureError, match="canonical"):  # N never pairs
        S.check_structure("NGGAAACCC", "(((...)))", canonical=True)
    with pytest.raises(S.StructureError, match="fewer than 3") as err:
        S.check_structure("GGGAACCC", "(((..)))", min_loop=3)
    assert err.value.position == 3
    with pytest.raises(S.StructureError, match="cross"):
        S.check_structure("GGAACCUU", "([..)]..", nested=True)
    assert S.check_structure("GGAACC", "([..)]", nested=False) == [4, 5, -1, -1, 0, 1]


@pytest.mark.parametrize("text, words", [
    ("3 t\n1 G 0 2 3 1\n2 A 1 3 0 2\n", "file ends after 2 of 3 bases"),
    ("3 t\n1 G 0 2 3 1\n2 A 1 3 0 2\n3 C 2 0 0 3\n", "pairs with 3, but 3 is unpaired"),
    ("2 t\n1 G 0 2 5 1\n2 C 1 0 1 2\n", "out of range"),
    ("2 t\n1 G 0 2 2 1\n3 C 1 0 1 2\n", "expected base 2"),
    ("x t\n", "starts with the number of bases"),
    ("2 t\n1 G 0 2 x 1\n2 C 1 0 1 2\n", "expected 'index base"),
])
def test_bad_ct(text, words):
    with pytest.raises(S.StructureError, match=words):
        list(S.parse_ct(text, name="x.ct"))


@pytest.mark.parametrize("text, words", [
    ("1 G 3\n2 A 0\n3 C 0\n", "pairs with 3, but 3 is unpaired"),
    ("1 G 2\n3 C 1\n", "expected base 2"),
    ("1 G 9\n2 C 1\n", "out of range"),
    ("1 G\n", "expected 'index base partner'"),
])
def test_bad_bpseq(text, words):
    with pytest.raises(S.StructureError, match=words):
        list(S.parse_bpseq(text, name="x.bpseq"))


def test_bpseq_reads_database_style_headers():
    text = "Filename: a.bpseq\nOrganism: yeast\n1 G 3\n2 A 0\n3 C 1\nFilename: b.bpseq\n1 A 0\n"
    records = list(S.parse_bpseq(text))
    assert records == [(["Filename: a.bpseq", "Organism: yeast"], "GAC", [2, -1, 0]),
                       (["Filename: b.bpseq"], "A", [-1])]


def test_to_ct_rejects_a_broken_pair_table():
    with pytest.raises(S.StructureError):
        S.to_ct("GC", [1, -1])
    with pytest.raises(S.StructureError, match="2 entries"):
        S.to_bpseq("GCA", [1, 0])


@pytest.mark.skipif(not (DATA / "known").is_dir(), reason="../shared/data not present")
def test_real_structures_round_trip(tmp_path):
    from rnapipe.io import read_dotbracket

    files = sorted((DATA / "known").glob("*.dbn"))
    assert files
    count = 0
    for path in files:
        ct_path = tmp_path / (path.stem + ".ct")
        records = list(read_dotbracket(path))
        with open(ct_path, "w") as handle:
            for record_id, seq, db in records:
                pt = S.pair_table(db)
                assert pt == vienna_table(db)
                assert S.dot_bracket(pt) == db
                handle.write(S.to_ct(seq, pt, record_id))
                ((comments, seq2, pt2),) = list(S.parse_bpseq(S.to_bpseq(seq, pt, [record_id])))
                assert (seq2, pt2) == (seq, pt)
                count += 1
        assert [(s, S.dot_bracket(p)) for _, s, p in S.read_ct(ct_path)] == [(s, d) for _, s, d in records]
        # ViennaRNA reads the first record of our multi-record CT file
        with open(ct_path) as handle:
            _, _, vseq, vdb, _ = RNA.file_connect_read_record(handle, "")
        assert (vseq, vdb) == records[0][1:]
    assert count > 1000
