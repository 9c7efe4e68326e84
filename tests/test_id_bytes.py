"""Record ids keep the bytes of the input, UTF-8 or not: two ids that differ only in bytes that are not UTF-8
text are two ids, every output writes each id's own bytes, and a real duplicate is still refused."""

from __future__ import annotations

import gzip

import pytest

import rnapipe
from rnapipe.io import read_records, writers
from rnapipe.pipeline.input.reader import FastaReader

from test_cli import one_error_line, rnapipe as run_cli

# ids that a decoder replacing bad bytes (U+FFFD) would make equal: a\xff, a\xfe; and bytes that only look like
# UTF-8 (an encoded surrogate, a cut sequence)
IDS = [b"a\xff", b"a\xfe", b"a\xed\xb3\xbf", b"a\xc3", "caf\u00e9".encode()]
SEQS = [b"GGGAAACCC", b"GGGGAAAACCCC", b"GCGCAAAAGCGC", b"GGGCAAAGCCC", b"GGAAACC"]


def _write(path, ids=IDS, seqs=SEQS) -> None:
    path.write_bytes(b"".join(b">" + i + b" a description\n" + s + b"\n" for i, s in zip(ids, seqs)))


def _headers(data: bytes) -> list[bytes]:
    return [line[1:] for line in data.split(b"\n") if line.startswith(b">")]


def test_ids_that_differ_in_bytes_that_are_not_utf8_are_folded_and_written_as_given(tmp_path):
    _write(tmp_path / "in.fa")
    proc = run_cli("fold", "in.fa", "-o", "out.db", "-o", "out.tsv", "-o", "out.ct", "-o", "out.db.gz", "-q",
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    # db prints the whole header line, as RNAfold does; the other formats the id
    assert _headers((tmp_path / "out.db").read_bytes()) == [i + b" a description" for i in IDS]
    assert _headers(gzip.decompress((tmp_path / "out.db.gz").read_bytes())) == [i + b" a description" for i in IDS]
    rows = (tmp_path / "out.tsv").read_bytes().split(b"\n")[1:-1]
    assert [row.split(b"\t")[0] for row in rows] == IDS
    # a CT record's first line: the length, ENERGY = ..., the id
    firsts = [line for line in (tmp_path / "out.ct").read_bytes().split(b"\n") if b"ENERGY" in line]
    assert [line.rsplit(b"  ", 1)[-1].split()[-1] for line in firsts] == IDS


def test_a_real_duplicate_with_bytes_that_are_not_utf8_is_still_refused(tmp_path):
    _write(tmp_path / "in.fa", [b"a\xff", b"a\xfe", b"a\xff"], SEQS[:3])
    proc = run_cli("fold", "in.fa", "-o", "out.db", cwd=tmp_path)
    assert proc.returncode == 2
    assert one_error_line(proc) == ("rnapipe: error: in.fa, record 'a\\xff': duplicate id at line 5; first seen in "
                                    "in.fa line 1")
    proc = run_cli("fold", "in.fa", "-o", "out.db", "--on-invalid", "skip", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert _headers((tmp_path / "out.db").read_bytes()) == [b"a\xff a description", b"a\xfe a description"]
    rejected = (tmp_path / "out.db.rejected.tsv").read_bytes().split(b"\n")[1]
    assert rejected.split(b"\t")[:2] == [b"2", b"a\xff"]


@pytest.mark.parametrize("block", [None, 64])
def test_both_readers_keep_the_ids_apart(tmp_path, monkeypatch, block):
    """The stream reader (its exact per-record path, blocks of any size) and read_records agree."""
    from rnapipe.pipeline.input import reader

    if block is not None:
        monkeypatch.setattr(reader, "BLOCK_BYTES", block)
        monkeypatch.setattr(reader, "READ_BYTES", block)
    _write(tmp_path / "in.fa")
    streamed = [i for piece in FastaReader([tmp_path / "in.fa"]) for i in piece.records.ids]
    listed = [r.id for r in read_records([tmp_path / "in.fa"])]
    assert streamed == listed
    assert [i.encode("utf-8", "surrogateescape") for i in listed] == IDS


def test_the_api_and_its_writer_keep_the_bytes(tmp_path):
    _write(tmp_path / "in.fa")
    results = rnapipe.fold(list(read_records([tmp_path / "in.fa"])), threads=1)
    assert len({r.id for r in results}) == len(IDS)
    for fmt in ("db", "tsv"):
        writers.write_output(results, tmp_path / f"api.{fmt}", fmt)
    assert _headers((tmp_path / "api.db").read_bytes()) == IDS
    rows = (tmp_path / "api.tsv").read_bytes().split(b"\n")[1:-1]
    assert [row.split(b"\t")[0] for row in rows] == IDS


def test_a_bad_byte_in_a_sequence_is_still_reported_where_it_is(tmp_path):
    (tmp_path / "in.fa").write_bytes(b">a\nGGG\xffAAACCC\n")
    proc = run_cli("fold", "in.fa", "-o", "out.db", cwd=tmp_path)
    assert proc.returncode == 2
    assert one_error_line(proc) == ("rnapipe: error: in.fa, record 'a', position 4: a byte that is not UTF-8 text "
                                    "at line 2")
