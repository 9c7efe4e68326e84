"""Sequence input (FASTA / gzip, validation, skip mode) and the writers, in-process."""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import os
import stat
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rnapipe.api import Result
from rnapipe.errors import InputError
from rnapipe.io import Record, Rejected, as_records, read_dotbracket, read_records, validate_sequence
from rnapipe.io import formats, packed, writers

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def write(path: Path, content: str | bytes) -> Path:
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


# ---------------------------------------------------------------------------------------------------------
# validation and normalisation


def test_normalise_and_accept_iupac():
    assert validate_sequence("acgt TTu\tn\r\nRYKMSWBDHV") == "ACGUUUUNRYKMSWBDHV"


@pytest.mark.parametrize("raw, position, shown", [
    ("ACG-U", 4, "'-'"), ("ACGU.", 5, "'.'"), ("A1CG", 2, "'1'"), ("AC*", 3, "'*'"),
    ("ACX", 3, "'X'"), ("AC\x00G", 3, "'\\x00'"), ("ACGé", 4, "'\\xe9'"),
])
def test_invalid_characters_name_position(raw, position, shown):
    with pytest.raises(InputError) as err:
        validate_sequence(raw, record="r", file="f.fa")
    assert err.value.position == position
    assert shown in str(err.value)
    assert str(err.value).startswith(f"f.fa, record 'r', position {position}: invalid character")


def test_empty_sequence():
    with pytest.raises(InputError, match="empty record"):
        validate_sequence(" \n", record="r")


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ACGTUacgtuNnRY-.*0 \t", max_size=40))
def test_validation_agrees_with_an_obvious_scan(raw):
    stripped = "".join(raw.split())
    bad = [k for k, c in enumerate(stripped) if c.upper() not in set("ACGTUNRYKMSWBDHV")]
    if not stripped or bad:
        with pytest.raises(InputError) as err:
            validate_sequence(raw)
        if bad:
            assert err.value.position == bad[0] + 1
    else:
        assert validate_sequence(raw) == stripped.upper().replace("T", "U")


# ---------------------------------------------------------------------------------------------------------
# files


def test_read_records_normalises_and_keeps_order(tmp_path):
    a = write(tmp_path / "a.fa", ">x first\r\nac gt\tNN\r\nUU\r\n\r\n>y\r\nGGG\r\n")
    b = write(tmp_path / "b.dat", gzip.compress(b">z\nccc\n>w\rAAA\r"))  # gzip without the suffix, old Mac CR
    records = list(read_records([a, b]))
    assert records == [Record("x", "ACGUNNUU", 0, str(a)), Record("y", "GGG", 1, str(a)),
                       Record("z", "CCC", 2, str(b)), Record("w", "AAA", 3, str(b))]


@pytest.mark.skipif(not (DATA / "transcripts").is_dir(), reason="../shared/data not present")
def test_real_fasta_matches_biopython_seqio(tmp_path):
    from Bio import SeqIO

    source = DATA / "transcripts" / "tRNAs_GtRNAdb_6species.fa"
    packed = tmp_path / "trna.fa.gz"
    packed.write_bytes(gzip.compress(source.read_bytes()))
    with open(source) as handle:
        expected = [(r.id, str(r.seq).upper().replace("T", "U")) for r in SeqIO.parse(handle, "fasta")]
    assert len(expected) > 2000
    for path in (source, packed):
        got = list(read_records(path))
        assert [(r.id, r.sequence) for r in got] == expected
        assert [r.index for r in got] == list(range(len(expected)))


BAD_FILES = {
    # name: (content, expected words in the message, record id or None, position or None)
    "gap.fa": (">ok\nACGU\n>bad\nACGU\nAC-GU\n", "invalid character '-' at line 5", "bad", 7),
    "digit.fa": (">bad\nAC1\n", "invalid character '1' at line 2", "bad", 3),
    "star.fa": (">bad\nACGU*\n", "invalid character '*'", "bad", 5),
    "dot.fa": (">bad\nA.C\n", "invalid character '.'", "bad", 2),
    "empty_record.fa": (">ok\nACGU\n>empty\n>next\nGG\n", "empty record: no sequence at line 3", "empty", None),
    "dup.fa": (">a\nACGU\n>b\nGG\n>a x\nCC\n", "duplicate id at line 5; first seen in", "a", None),
    "empty_id.fa": (">a\nACGU\n>\nGG\n", "empty id after '>' in record 2 of the file at line 3", None, None),
    "empty.fa": ("", "empty file", None, None),
    "blank.fa": ("\n  \n\n", "empty file", None, None),
    "reads.fastq": ("@r1\nACGU\n+\nIIII\n", "looks like FASTQ", None, None),
    "text.fa": ("hello\n>a\nACGU\n", "not a FASTA file: line 1", None, None),
    "nul.fa": (b">a\nAC\x00GU\n", "binary file", None, None),
    "junk.bin": (bytes(range(256)) * 4, "binary file", None, None),
    "notutf8.fa": (b">a\nAC\xffGU\n", "not UTF-8 text", "a", 3),
    "packed.fa.bz2": (bz2.compress(b">a\nACGU\n"), "bzip2-compressed", None, None),
    "truncated.fa.gz": (gzip.compress(b"".join(b">s%d\nACGU\n" % k for k in range(200)))[:60],
                        "corrupt or truncated", None, None),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_files_raise_one_line_input_error(tmp_path, name):
    content, words, record, position = BAD_FILES[name]
    path = write(tmp_path / name, content)
    with pytest.raises(InputError) as err:
        list(read_records([path]))
    message = str(err.value)
    assert "\n" not in message
    assert words in message
    assert message.startswith(str(path))
    assert err.value.record == record
    assert err.value.position == position


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(InputError, match="no such file") as err:
        list(read_records([tmp_path / "missing.fa"]))
    assert err.value.file == str(tmp_path / "missing.fa")
    with pytest.raises(InputError, match="is a directory"):
        list(read_records([tmp_path]))


def test_duplicate_across_files(tmp_path):
    a = write(tmp_path / "a.fa", ">x\nACGU\n")
    b = write(tmp_path / "b.fa", ">y\nGG\n>x\nCC\n")
    with pytest.raises(InputError) as err:
        list(read_records([a, b]))
    assert str(err.value) == f"{b}, record 'x': duplicate id at line 3; first seen in {a} line 1"


def test_skip_mode_reports_and_continues(tmp_path):
    a = write(tmp_path / "a.fa", ">a1\nACGU\n>a2\nAC-U\n>a3\nGGG\n>a1\nCCC\n>\nAA\n>a4\n")
    missing = tmp_path / "missing.fa"
    fastq = write(tmp_path / "r.fq", "@r\nACGU\n+\nIIII\n")
    b = write(tmp_path / "b.fa.gz", gzip.compress(b">b1\nuuu\n"))
    rejected: list[Rejected] = []
    records = list(read_records([a, missing, fastq, b], on_invalid="skip", rejected=rejected))
    assert [(r.id, r.sequence, r.index) for r in records] == [("a1", "ACGU", 0), ("a3", "GGG", 2), ("b1", "UUU", 6)]
    assert [(r.index, r.id, r.file) for r in rejected] == [
        (1, "a2", str(a)), (3, "a1", str(a)), (4, "", str(a)), (5, "a4", str(a)),
        (6, None, str(missing)), (6, None, str(fastq))]
    assert rejected[0].reason == "position 3: invalid character '-' at line 4; alignment gaps are not allowed"
    assert "duplicate id" in rejected[1].reason
    assert "empty id" in rejected[2].reason
    assert rejected[3].reason.startswith("empty record")
    assert rejected[4].reason == "no such file; the file was skipped"
    assert "FASTQ" in rejected[5].reason


def test_truncated_gzip_keeps_the_records_before_the_damage(tmp_path):
    body = "".join(f">s{k}\nACGUACGUACGU\n" for k in range(2000)).encode()
    packed = gzip.compress(body)
    path = write(tmp_path / "t.fa.gz", packed[: len(packed) // 2])
    rejected = []
    records = list(read_records([path], on_invalid="skip", rejected=rejected))
    assert 0 < len(records) < 2000
    assert [r.id for r in records] == [f"s{k}" for k in range(len(records))]
    assert len(rejected) == 1 and rejected[0].id is None
    assert "the rest of the file was skipped" in rejected[0].reason


def test_stdin(tmp_path, monkeypatch):
    import sys

    fake = io.TextIOWrapper(io.BufferedReader(io.BytesIO(gzip.compress(b">a\nacgt\n"))))
    monkeypatch.setattr(sys, "stdin", fake)
    assert list(read_records(["-"])) == [Record("a", "ACGU", 0, "<stdin>")]


def test_on_invalid_value_checked(tmp_path):
    with pytest.raises(ValueError):
        list(read_records([], on_invalid="ignore"))


# ---------------------------------------------------------------------------------------------------------
# Python objects


def test_as_records_accepts_the_documented_shapes():
    from Bio.Seq import Seq
    from Bio.SeqRecord import SeqRecord

    assert list(as_records("acgt")) == [Record("seq1", "ACGU", 0)]
    assert list(as_records(["AC", "gu"])) == [Record("seq1", "AC", 0), Record("seq2", "GU", 1)]
    assert list(as_records([("x", "AC"), ["y", "GT"]])) == [Record("x", "AC", 0), Record("y", "GU", 1)]
    assert list(as_records({"x": "AC"})) == [Record("x", "AC", 0)]
    assert list(as_records(SeqRecord(Seq("acgt"), id="r"))) == [Record("r", "ACGU", 0)]
    assert list(as_records([Record("k", "ACGU", 7, "f.fa")])) == [Record("k", "ACGU", 7, "f.fa")]


def test_as_records_errors_and_skip():
    with pytest.raises(InputError, match="duplicate id"):
        list(as_records([("x", "AC"), ("x", "GU")]))
    with pytest.raises(InputError) as err:
        list(as_records(["ACGU", "AC-U"]))
    assert str(err.value) == "record 'seq2', position 3: invalid character '-'; alignment gaps are not allowed"
    with pytest.raises(TypeError):
        list(as_records([3]))
    rejected = []
    kept = list(as_records(["ACGU", "", "A*", "GG"], on_invalid="skip", rejected=rejected))
    assert [(r.id, r.index) for r in kept] == [("seq1", 0), ("seq4", 3)]
    assert [(r.index, r.id) for r in rejected] == [(1, "seq2"), (2, "seq3")]


def test_read_dotbracket_rnafold_output(tmp_path):
    path = write(tmp_path / "x.db", ">a\nGGGAAACCC\n(((...))) ( -1.20)\n>b desc\nacgu\nacgu\n((....))\n")
    assert list(read_dotbracket(path)) == [("a", "GGGAAACCC", "(((...)))"), ("b", "ACGUACGU", "((....))")]
    bad = write(tmp_path / "y.db", ">a\nGGGAAACCC\n")
    with pytest.raises(InputError, match="no dot-bracket structure"):
        list(read_dotbracket(bad))


# ---------------------------------------------------------------------------------------------------------
# writers


def result(id_, seq, db, score, algorithm="nussinov", index=0):
    return Result(id_, seq, db, score, algorithm, index)


@settings(max_examples=500, deadline=None)
@given(st.integers(min_value=-100_000, max_value=100_000))
def test_energy_text_is_rnafolds_printf(dcal):
    # RNAfold prints "%s (%6.2f)" of the energy in kcal/mol
    assert f"({formats.kcal(dcal):>6})" == "(%6.2f)" % (dcal / 100)


def reference_text(fmt: str, r) -> str:
    """db or TSV text of one result, straight from the formats' description (rnapipe.io.writers)."""
    zuker = r.algorithm == "zuker"
    score = formats.kcal(r.score_int) if zuker else str(int(r.score_int))
    if fmt == "db":
        return f">{r.id}\n{r.sequence}\n{r.structure} ({score:>{6 if zuker else 3}})\n"
    return f"{r.id}\t{len(r.sequence)}\t{score}\t{r.structure}\t{r.algorithm}\n"


def db_text(rows) -> str:
    handle = io.StringIO()
    writers.write_results(rows, handle, "db")
    return handle.getvalue()


def test_db_format():
    rows = [result("z", "GGGAAACCC", "(((...)))", -120, "zuker"), result("y", "ACGU", "....", 0, "zuker"),
            result("w", "G" * 5, ".....", -1234, "zuker"), result("n", "GGGAAACCC", "(((...)))", 3)]
    text = db_text(rows)
    assert text == (">z\nGGGAAACCC\n(((...))) ( -1.20)\n>y\nACGU\n.... (  0.00)\n"
                    ">w\nGGGGG\n..... (-12.34)\n>n\nGGGAAACCC\n(((...))) (  3)\n")


def test_db_matches_vienna_rnafold_line():
    RNA = pytest.importorskip("RNA")
    seq = "GGGGAAAACCCCAUCGAUCGGCUAGCUAGC"
    structure, mfe = RNA.fold(seq)
    line = db_text([result("s", seq, structure, round(mfe * 100), "zuker")]).splitlines()[2]
    assert line == "%s (%6.2f)" % (structure, mfe)


def test_tsv_ct_bpseq(tmp_path):
    from rnapipe import structure as S

    rows = [result("a", "GGGAAACCC", "(((...)))", -120, "zuker", 0), result("b", "ACGUN", ".....", 30, "zuker", 1)]
    out = tmp_path / "r.tsv"
    assert writers.write_output(rows, out) == 2
    table = list(csv.reader(out.read_text().splitlines(), delimiter="\t"))
    assert table[0][:4] == ["id", "length", "score", "structure"]
    assert table[1:] == [["a", "9", "-1.20", "(((...)))", "zuker"], ["b", "5", "0.30", ".....", "zuker"]]

    ct = tmp_path / "r.ct"
    writers.write_output(rows, ct)
    assert [(t, s, S.dot_bracket(p)) for t, s, p in S.read_ct(ct)] == [
        ("ENERGY = -1.20  a", "GGGAAACCC", "(((...)))"), ("ENERGY = 0.30  b", "ACGUN", ".....")]
    bp = tmp_path / "r.bpseq"
    writers.write_output(rows, bp)
    assert [(c[0], s, S.dot_bracket(p)) for c, s, p in S.read_bpseq(bp)] == [
        ("a", "GGGAAACCC", "(((...)))"), ("b", "ACGUN", ".....")]
    assert writers.format_from_suffix("x.TSV") == "tsv" and writers.format_from_suffix("x.fa.gz") == "db"


@pytest.mark.parametrize("fmt", ["db", "tsv"])
def test_writers_equal_the_reference_across_batches_and_algorithms(fmt, monkeypatch):
    # ids with a newline, a tab and non-ASCII characters are written as they are; results of two algorithms
    # in one call, over several batches
    monkeypatch.setattr(writers, "BATCH", 3)
    rows = [result("a", "GGGAAACCC", "(((...)))", -120, "zuker", 0),
            result("b\nc", "ACGU", "....", 0, "zuker", 1),
            result("t\tab", "GGGGAAAACCCC", "((((....))))", -123456, "zuker", 2),
            result("\u00e9t\u00e9", "GC", "..", 5, "zuker", 3),
            result("e", "", "", 0, "zuker", 4),
            result("z" * 40, "GGGAAACCC", "(((...)))", 3, "nussinov", 5),
            result("n", "ACGUN", ".....", 0, "nussinov", 6),
            result("m", "G" * 50, "." * 50, 1234, "nussinov", 7)]
    handle = io.StringIO()
    assert writers.write_results(iter(rows), handle, fmt) == len(rows)
    assert handle.getvalue() == formats.header(fmt) + "".join(reference_text(fmt, r) for r in rows)


def test_write_results_checks_the_format():
    with pytest.raises(ValueError, match="unknown format"):
        writers.write_results([], io.StringIO(), "fasta")


def test_render_checks_the_lengths():
    from rnapipe.io.render import render

    with pytest.raises(ValueError, match="lengths"):
        render("db", "zuker", b"a\n", np.array([2]), b"GG\n", np.array([2]), b"..\n", np.zeros(1, np.int64))


# ---------------------------------------------------------------------------------------------------------
# packed texts


def test_pack_offsets_split():
    text, lens = packed.pack(["ab", "", "\u00e9", "xyz"])
    assert text == "ab\n\n\u00e9\nxyz\n".encode() and lens.tolist() == [2, 0, 2, 3]
    assert packed.offsets(lens).tolist() == [0, 3, 4, 7, 11]
    assert packed.split(text, lens) == [b"ab", b"", "\u00e9".encode(), b"xyz"]
    text, lens = packed.pack([])
    assert text == b"" and lens.dtype == np.int64 and lens.shape == (0,)
    with pytest.raises(UnicodeEncodeError):
        packed.pack(["\ud800"])
    assert packed.pack(["\ud800"], "utf-8", "surrogatepass")[1].tolist() == [3]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=12).map(lambda b: b.replace(b"\n", b"")), max_size=30), st.randoms())
def test_gather_scatter_equal_obvious_python(records, rng):
    lens = np.array([len(r) for r in records], dtype=np.int64)
    text = b"".join(r + b"\n" for r in records)
    starts = packed.offsets(lens)
    positions = list(range(len(records)))
    rng.shuffle(positions)
    positions = np.array(positions[:rng.randint(0, len(positions))], dtype=np.int64)
    want = b"".join(records[k] + b"\n" for k in positions.tolist())
    out = np.full(len(want), 0xFF, dtype=np.uint8)
    packed.gather(np.frombuffer(text, dtype=np.uint8), starts, lens, positions, out)
    assert out.tobytes() == want

    # back into a text of the same layout whose other records are left as they were
    dst = bytearray(b"".join(bytes([0x2E]) * n + b"\n" for n in lens.tolist()))
    expect = bytearray(dst)
    at = 0
    for k in positions.tolist():
        n = int(lens[k]) + 1
        expect[starts[k]:starts[k] + n] = want[at:at + n]
        at += n
    buffer = np.frombuffer(dst, dtype=np.uint8)
    packed.scatter(np.frombuffer(want, dtype=np.uint8), starts, lens, positions, buffer)
    assert bytes(buffer) == bytes(expect)


def test_atomic_output_leaves_nothing_on_failure(tmp_path):
    final = tmp_path / "out.fa"

    def boom():
        yield result("a", "GGGAAACCC", "(((...)))", 3)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        writers.write_output(boom(), final)
    assert list(tmp_path.iterdir()) == []

    final.write_text("old\n")
    with pytest.raises(RuntimeError):
        with writers.atomic_output(final) as handle:
            handle.write("new, partial")
            raise RuntimeError("disk on fire")
    assert final.read_text() == "old\n"
    assert list(tmp_path.iterdir()) == [final]

    with writers.atomic_output(final) as handle:
        handle.write("new\n")
    assert final.read_text() == "new\n"
    assert list(tmp_path.iterdir()) == [final]
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(final.stat().st_mode) == 0o666 & ~umask


def test_rejected_file(tmp_path):
    path = writers.rejected_path(tmp_path / "out.tsv")
    assert path.name == "out.tsv.rejected.tsv"
    writers.write_rejected([Rejected(3, "x", "a.fa", "position 2: bad\tthing"), Rejected(4, None, "b.fa", "gone")],
                           path)
    assert list(csv.reader(path.read_text().splitlines(), delimiter="\t")) == [
        ["index", "id", "file", "reason"], ["3", "x", "a.fa", "position 2: bad thing"], ["-", "-", "b.fa", "gone"]]
