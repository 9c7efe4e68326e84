"""Hard constraints (RNAfold's ``-C`` and ``--enforceConstraint``) on the CPU Zuker engine, against ViennaRNA.

The reference is ViennaRNA's Python API with the flags RNAfold passes (src/bin/RNAfold.c, ``apply_constraints``):
``fc.hc_add_from_db(line, VRNA_CONSTRAINT_DB_DEFAULT [| VRNA_CONSTRAINT_DB_ENFORCE_BP])`` then ``fc.mfe()``;
energy and structure must be equal. The constraint lines are random valid ones (every symbol, nested pairs,
canonical or not, some closing fewer than 3 nucleotides, which ViennaRNA drops) on random sequences with N,
and a few on real sequences of ../shared/data.
"""

from __future__ import annotations

import random

import pytest

import rnapipe
from rnapipe.cpu import zuker
from rnapipe.errors import InputError, UsageError
from rnapipe.params import INF
from seqgen import random_seqs
from shared_data import DATA
from test_cli import one_error_line, rnapipe as run_rnapipe
from test_rnafold_conventions import sample_of_shared_data

RNA = pytest.importorskip("RNA")


def random_constraint(seq: str, rng: random.Random) -> str:
    """A valid constraint line for ``seq``: nested bracket pairs (a third of them on complementary bases, the
    rest anything), and x, |, <, > on some free positions."""
    n = len(seq)
    line = ["."] * n
    pairs = {"A": "U", "U": "AG", "G": "CU", "C": "G"}
    for _ in range(rng.randint(0, max(1, n // 25))):
        i = rng.randrange(n)
        lo = i + rng.choice([2, 3, 4, 5, 8, 12, 20])
        if lo >= n:
            continue
        js = [j for j in range(lo, min(n, lo + 60))]
        if rng.random() < 0.35:
            js = [j for j in js if seq[j] in pairs.get(seq[i], "")] or js
        j = rng.choice(js)
        # keep it nested with the pairs placed before: no bracket inside (i, j) may pair outside it
        depth, ok = 0, line[i] == "." and line[j] == "."
        for k in range(i + 1, j):
            depth += {"(": 1, ")": -1}.get(line[k], 0)
            if depth < 0:
                ok = False
        if ok and depth == 0:
            line[i], line[j] = "(", ")"
    for k in range(n):
        if line[k] == "." and rng.random() < 0.08:
            line[k] = rng.choice("x|<>")
    return "".join(line)


def vienna(seq: str, constraint: str | None, enforce: bool = False, dangles: int = 2):
    md = RNA.md()
    md.dangles = dangles
    fc = RNA.fold_compound(seq, md)
    if constraint is not None:
        flags = RNA.CONSTRAINT_DB_DEFAULT | (RNA.CONSTRAINT_DB_ENFORCE_BP if enforce else 0)
        fc.hc_add_from_db(constraint, flags)
    structure, mfe = fc.mfe()
    return int(round(mfe * 100)), structure


def ours(seqs, constraints, enforce=False, dangles=2, threads=2):
    return zuker.fold_batch(seqs, "default", threads, {"enforce_constraint": enforce, "dangles": dangles},
                            constraints=constraints)


def _cases(count, lo, hi, seed):
    rng = random.Random(seed)
    seqs = random_seqs(count, lo, hi, seed)
    return seqs, [random_constraint(s, rng) for s in seqs]


@pytest.mark.parametrize("enforce", [False, True])
@pytest.mark.parametrize("dangles", [2, 0])
def test_random_constraints_fold_as_viennarna(enforce, dangles):
    seqs, lines = _cases(150 if dangles == 2 else 60, 10, 140, seed=11 + enforce + 2 * dangles)
    got = ours(seqs, lines, enforce, dangles)
    feasible = 0
    for seq, line, (energy, structure) in zip(seqs, lines, got):
        ref_energy, ref_structure = vienna(seq, line, enforce, dangles)
        if ref_energy >= 100_000 * 100:                  # ViennaRNA: no structure satisfies the constraints
            assert energy >= INF, (seq, line)
            continue
        feasible += 1
        assert (energy, structure) == (ref_energy, ref_structure), (seq, line)
    assert feasible > len(seqs) // 2


def test_each_symbol_alone_folds_as_viennarna():
    """Lines of one kind of symbol each, dense, on longer sequences (where one symbol's rule is what matters)."""
    rng = random.Random(5)
    seqs = random_seqs(24, 60, 200, seed=5, n_rate=0.0)
    lines = []
    for k, seq in enumerate(seqs):
        symbol = "x|<>"[k % 4]
        lines.append("".join(symbol if rng.random() < 0.2 else "." for _ in seq))
    for enforce in (False, True):
        for seq, line, got in zip(seqs, lines, ours(seqs, lines, enforce)):
            ref = vienna(seq, line, enforce)
            if ref[0] < 100_000 * 100:
                assert got == ref, (seq, line, enforce)


def test_unconstrained_lines_change_nothing():
    seqs = random_seqs(30, 20, 150, seed=9)
    assert ours(seqs, ["." * len(s) for s in seqs]) == zuker.fold_batch(seqs, "default", 2, {})


@pytest.mark.skipif(not (DATA / "transcripts").is_dir(), reason="../shared/data not present")
def test_real_sequences_fold_as_viennarna():
    rng = random.Random(3)
    records = sample_of_shared_data(40, seed=4)
    seqs = [s.upper().replace("T", "U") for _, s in records]
    lines = [random_constraint(s, rng) for s in seqs]
    for enforce in (False, True):
        for seq, line, got in zip(seqs, lines, ours(seqs, lines, enforce)):
            ref = vienna(seq, line, enforce)
            if ref[0] < 100_000 * 100:
                assert got == ref, (seq, line, enforce)


def test_api_constraints():
    seqs, lines = _cases(20, 20, 100, seed=21)
    results = rnapipe.fold(seqs, constraints=lines, enforce_constraint=True, threads=2)
    for r, seq, line in zip(results, seqs, lines):
        ref = vienna(seq, line, True)
        if ref[0] < 100_000 * 100:
            assert (r.score_int, r.structure) == ref


def test_api_refuses_bad_constraints_and_devices():
    with pytest.raises(InputError, match=r"record 'seq2', position 3: invalid constraint character 'a'"):
        rnapipe.fold(["GGGAAACCC", "GGGAAACCC"], constraints=[".........", "..a......"])
    skipped = rnapipe.fold(["GGGAAACCC", "GGGAAACCC"], constraints=["(((...)))", "((((...)))"], on_invalid="skip")
    assert [r.id for r in skipped] == ["seq1"] and skipped.rejected[0].id == "seq2"
    with pytest.raises(UsageError, match="1 constraint lines for 2 sequences"):
        rnapipe.fold(["GGGAAACCC", "GGGAAACCC"], constraints=["........."])
    for device in ("gpu", "hybrid"):
        with pytest.raises(UsageError, match="supported on the CPU engine for now"):
            rnapipe.fold("GGGAAACCC", constraints=".........", device=device)
    with pytest.raises(UsageError, match="zuker"):
        rnapipe.fold("GGGAAACCC", constraints=".........", algorithm="nussinov")


def _fasta_with_constraints(records) -> str:
    return "".join(f">{h}\n{s}\n{c}\n" for h, s, c in records)


def rnafold_constrained_stdout(records, enforce: bool) -> bytes:
    """What ``RNAfold -C [--enforceConstraint]`` prints for (header, sequence, constraint) records (the layout of
    test_rnafold_conventions.rnafold_stdout)."""
    out = []
    for header, seq, line in records:
        md = RNA.md()
        fc = RNA.fold_compound(seq.upper(), md)
        fc.hc_add_from_db(line, RNA.CONSTRAINT_DB_DEFAULT | (RNA.CONSTRAINT_DB_ENFORCE_BP if enforce else 0))
        structure, mfe = fc.mfe()
        out.append(f">{header}\n{seq}\n{structure} ({mfe:6.2f})\n")
    return "".join(out).encode()


@pytest.mark.parametrize("enforce", [False, True])
def test_cli_prints_as_rnafold(tmp_path, enforce):
    rng = random.Random(31 + enforce)
    seqs = random_seqs(40, 15, 120, seed=31, n_rate=0.0)
    records = []
    for k, seq in enumerate(seqs):
        line = random_constraint(seq, rng)
        if vienna(seq, line, enforce)[0] < 100_000 * 100:
            records.append((f"r{k} with a description", seq, line))
    path = tmp_path / "in.fa"
    path.write_text(_fasta_with_constraints(records))
    proc = run_rnapipe("fold", path, "-C", *(["--enforceConstraint"] if enforce else []), "-q", "-j2",
                       cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.encode() == rnafold_constrained_stdout(records, enforce)


BAD = {
    "symbol": ("GGGAAACCC\n((.a..)))\n", "position 4: invalid constraint character 'a'"),
    "short": ("GGGAAACCC\n(((...))\n", "position 9: constraint line shorter than the sequence (8 symbols for 9 nt)"),
    "long": ("GGGAAACCC\n(((...))).\n", "position 10: constraint line longer than the sequence"),
    "missing": ("GGGAAACCC\n", "position 1: no constraint line"),
    "unclosed": ("GGGAAACCC\n((....)..\n", "position 1: unbalanced brackets in the constraint line: '(' is never"),
    "unopened": ("GGGAAACCC\n.....)...\n", "position 6: unbalanced brackets in the constraint line: ')' closes"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_cli_bad_constraint_lines(tmp_path, name):
    body, message = BAD[name]
    path = tmp_path / "in.fa"
    path.write_text(">ok\nGGGGAAACCCC\n((((...))))\n>bad\n" + body)
    proc = run_rnapipe("fold", path, "-C", "-q", cwd=tmp_path)
    assert proc.returncode == 2
    line = one_error_line(proc)
    assert f"{path}, record 'bad', {message}" in line
    skip = run_rnapipe("fold", path, "-C", "--on-invalid", "skip", "-o", tmp_path / "out.db", cwd=tmp_path)
    assert skip.returncode == 0, skip.stderr
    assert (tmp_path / "out.db").read_text().startswith(">ok\nGGGGAAACCCC\n((((...))))")
    assert "bad" in skip.stderr and message.split(": ", 1)[1][:20] in skip.stderr


def test_cli_no_structure_is_one_line(tmp_path):
    path = tmp_path / "in.fa"
    path.write_text(">none\nAAAAAAAAAA\n|.........\n")
    proc = run_rnapipe("fold", path, "-C", "--enforceConstraint", "-q", cwd=tmp_path)
    assert proc.returncode == 2
    assert f"{path}, record 'none': the constraint line leaves no structure" in one_error_line(proc)


@pytest.mark.parametrize("device", ["gpu", "hybrid"])
def test_cli_refuses_constraints_on_gpu_engines(tmp_path, device):
    path = tmp_path / "in.fa"
    path.write_text(">a\nGGGAAACCC\n(((...)))\n")
    proc = run_rnapipe("fold", path, "-C", "--device", device, cwd=tmp_path)
    assert proc.returncode == 2
    assert "-C/--constraint is supported on the CPU engine for now" in one_error_line(proc)


def test_constraints_travel_through_chunks_and_the_journal(tmp_path):
    """The chunk digest covers the constraint lines (a rerun after a change is refused) and the journal header
    says -C and --enforceConstraint."""
    from rnapipe.pipeline.folding.chunks import Chunk
    from rnapipe.pipeline.records import Records
    from rnapipe.pipeline.resume.run import journal_header

    a = Records.from_lists(["a", "b"], ["GGGAAACCC", "GGGAAACCC"], [0, 1], constraints=["(((...)))", "........."])
    b = Records.from_lists(["a", "b"], ["GGGAAACCC", "GGGAAACCC"], [0, 1], constraints=["(((...)))", "x........"])
    assert Chunk(0, a, end=2).digest() != Chunk(0, b, end=2).digest()
    part = Records.concat([a.take(1, 2), b.take(0, 1)])
    assert part.constraints == [".........", "(((...)))"]
    assert a.keep([False, True]).constraints == ["........."]
    head = journal_header(["in.fa"], [], "zuker", "default", "error", {"enforce_constraint": True},
                          constraints=True)
    assert head["options"]["constraint"] is True and head["options"]["enforce_constraint"] is True
    assert "constraint" not in journal_header(["in.fa"], [], "zuker", "default", "error", {})["options"]


def test_resumed_run_with_constraints(tmp_path):
    """A run cut into chunks of 3 records resumes from its journal and gives what one run gives."""
    import os

    rng = random.Random(2)
    seqs = random_seqs(10, 20, 60, seed=2, n_rate=0.0)
    records = [(f"r{k}", s, random_constraint(s, rng)) for k, s in enumerate(seqs)]
    records = [r for r in records if vienna(r[1], r[2])[0] < 100_000 * 100]
    path = tmp_path / "in.fa"
    path.write_text(_fasta_with_constraints(records))
    out = tmp_path / "out.db"
    env = dict(os.environ, RNAPIPE_CHUNK_RECORDS="3")
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-m", "rnapipe", "fold", str(path), "-C", "-o", str(out), "-q"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() == rnafold_constrained_stdout(records, False)


def test_prepare_carries_constraint_lines_into_the_shards(tmp_path):
    from rnapipe.pipeline.input.reader import FastaReader
    from rnapipe.pipeline.workflow.prepare import prepare

    records = [("a", "GGGGAAACCCC", "((((...))))"), ("b", "GGGAAAUCCCAAAAAAAAAAAAAA", "xxx.....................")]
    path = tmp_path / "in.fa"
    path.write_text(_fasta_with_constraints(records))
    prepare(str(path), str(tmp_path / "prep"), constraints=True)
    got = {}
    for shard in sorted((tmp_path / "prep" / "shards").iterdir()):
        for piece in FastaReader([str(shard)], constraints=True):
            got.update(zip(piece.records.ids, zip(piece.records.seqs, piece.records.constraints)))
    assert got == {h: (s, c) for h, s, c in records}
