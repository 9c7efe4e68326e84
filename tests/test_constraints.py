"""Hard constraints (RNAfold's ``-C`` and ``--enforceConstraint``) on the CPU Zuker engine, against ViennaRNA.

The reference is ViennaRNA's Python API with the flags RNAfold passes (src/bin/RNAfold.c, ``apply_constraints``):
``fc.hc_add_from_db(line, VRNA_CONSTRAINT_DB_DEFAULT [| VRNA_CONSTRAINT_DB_ENFORCE_BP])`` then ``fc.mfe()``;
energy and structure must be equal. The constraint lines are random valid ones (every symbol, nested pairs,
canonical or not, some closing fewer than 3 nucleotides, which ViennaRNA drops) on random sequences with N,
and a few on real sequences of ../shared/data.
"""

from __future__ import annotations

import os
import random

import pytest

import rnapipe
from rnapipe.cpu import zuker
from rnapipe.errors import InputError, UsageError
from rnapipe.params import INF
from seqgen import random_constraint, random_seqs
from shared_data import DATA
from test_cli import one_error_line, rnapipe as run_rnapipe
from test_rnafold_conventions import rnafold_stdout, sample_of_shared_data

RNA = pytest.importorskip("RNA")


# ViennaRNA's energy where no structure satisfies the constraints is its INF (10,000,000 dcal/mol), less a little
# with --noLP: at or above this, none
NONE_AT = 90_000 * 100


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
        if ref_energy >= NONE_AT:                  # ViennaRNA: no structure satisfies the constraints
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
            if ref[0] < NONE_AT:
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
            if ref[0] < NONE_AT:
                assert got == ref, (seq, line, enforce)


def test_api_constraints():
    seqs, lines = _cases(30, 20, 100, seed=21)
    cases = [(s, c) for s, c in zip(seqs, lines) if vienna(s, c, True)[0] < NONE_AT]
    assert len(cases) > 10
    results = rnapipe.fold([s for s, _ in cases], constraints=[c for _, c in cases], enforce_constraint=True,
                           threads=2)
    for r, (seq, line) in zip(results, cases):
        assert (r.score_int, r.structure) == vienna(seq, line, True)
    with pytest.raises(InputError, match="record 'seq2': the constraint line leaves no structure"):
        rnapipe.fold(["GGGAAACCC", "AAAAAAAAA"], constraints=[".........", "|........"], enforce_constraint=True)


def test_api_refuses_bad_constraints():
    with pytest.raises(InputError, match=r"record 'seq2', position 3: invalid constraint character 'a'"):
        rnapipe.fold(["GGGAAACCC", "GGGAAACCC"], constraints=[".........", "..a......"])
    skipped = rnapipe.fold(["GGGAAACCC", "GGGAAACCC"], constraints=["(((...)))", "((((...)))"], on_invalid="skip")
    assert [r.id for r in skipped] == ["seq1"] and skipped.rejected[0].id == "seq2"
    with pytest.raises(UsageError, match="1 constraint lines for 2 sequences"):
        rnapipe.fold(["GGGAAACCC", "GGGAAACCC"], constraints=["........."])
    with pytest.raises(UsageError, match="zuker"):
        rnapipe.fold("GGGAAACCC", constraints=".........", algorithm="nussinov")


def _fasta_with_constraints(records) -> str:
    return "".join(f">{h}\n{s}\n{c}\n" for h, s, c in records)


def rnafold_constrained_stdout(records, enforce: bool) -> bytes:
    """What ``RNAfold -C [--enforceConstraint]`` prints for (header, sequence, constraint) records:
    test_rnafold_conventions.rnafold_stdout with the constraint lines (RNAfold does not print them)."""
    return rnafold_stdout([(h, s) for h, s, _ in records], constraints=[c for _, _, c in records],
                          enforce_constraint=enforce)


@pytest.mark.parametrize("enforce", [False, True])
def test_cli_prints_as_rnafold(tmp_path, enforce):
    rng = random.Random(31 + enforce)
    seqs = random_seqs(40, 15, 120, seed=31, n_rate=0.0)
    records = []
    for k, seq in enumerate(seqs):
        line = random_constraint(seq, rng)
        if vienna(seq, line, enforce)[0] < NONE_AT:
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


def test_cli_no_structure_is_one_line_or_skipped(tmp_path):
    """A record whose constraints leave no structure (ViennaRNA's INF) stops the run, as RNAfold stops; under
    --on-invalid skip it is left out and listed, and a rerun of the finished output does not refold."""
    path = tmp_path / "in.fa"
    path.write_text(">ok\nGGGGAAACCCC\n|..........\n>none\nAAAAAAAAAA\n|.........\n>ok2\nGGGAAACCC\n.........\n")
    assert vienna("AAAAAAAAAA", "|.........", True)[0] >= NONE_AT
    proc = run_rnapipe("fold", path, "-C", "--enforceConstraint", "-q", cwd=tmp_path)
    assert proc.returncode == 2
    assert f"{path}, record 'none': the constraint line leaves no structure" in one_error_line(proc)
    out = tmp_path / "out.db"
    proc = run_rnapipe("fold", path, "-C", "--enforceConstraint", "--on-invalid", "skip", "-o", out, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "none" in proc.stderr and "leaves no structure" in proc.stderr
    expected = [("ok", "GGGGAAACCCC", "|.........."), ("ok2", "GGGAAACCC", ".........")]
    assert out.read_bytes() == rnafold_constrained_stdout(expected, True)
    rejected = (tmp_path / "out.db.rejected.tsv").read_text().splitlines()
    assert [row.split("\t")[:2] for row in rejected[1:]] == [["1", "none"]]
    skipped = rnapipe.fold(["GGGAAACCC", "AAAAAAAAA"], constraints=[".........", "|........"],
                           enforce_constraint=True, on_invalid="skip")
    assert [r.id for r in skipped] == ["seq1"] and [r.id for r in skipped.rejected] == ["seq2"]


@pytest.mark.parametrize("device", ["gpu", "hybrid"], ids=["device-gpu", "device-hybrid"])
def test_constraints_fold_on_gpu_engines(tmp_path, device):
    """-C folds on --device gpu and hybrid (the GPU engine applies the lines as the CPU engine does,
    tests/test_zuker_gpu_constraints.py): with a GPU here the output of --device cpu, without one the only refusal
    is the missing GPU's, in one line that names no constraint; the API likewise."""
    from rnapipe.errors import UnavailableError
    from rnapipe.gpu.devices import gpu_available

    path = tmp_path / "in.fa"
    path.write_text(">a\nGGGAAACCC\n(((...)))\n>b\nGGGGAAAACCCC\n.x..........\n")
    proc = run_rnapipe("fold", path, "-C", "--device", device, "-q", cwd=tmp_path)
    if gpu_available():
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == run_rnapipe("fold", path, "-C", "--device", "cpu", "-q", cwd=tmp_path).stdout
        [r] = rnapipe.fold("GGGAAACCC", constraints="(((...)))", device=device)
        assert (r.score_int, r.structure) == vienna("GGGAAACCC", "(((...)))")
    else:
        line = one_error_line(proc)
        assert proc.returncode != 0 and "GPU" in line and "constraint" not in line, line
        with pytest.raises(UnavailableError, match="needs an NVIDIA GPU") as err:
            rnapipe.fold("GGGAAACCC", constraints=".........", device=device)
        assert "constraint" not in str(err.value)


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


def test_killed_run_with_constraints_resumes_and_a_changed_line_is_refused(tmp_path):
    """A run killed after its first chunk resumes from its journal to RNAfold's bytes; a rerun after a
    constraint line changed inside the finished chunks is refused (the chunk digest covers the lines)."""
    from test_resume import cli, killed_at

    rng = random.Random(2)
    seqs = random_seqs(40, 20, 60, seed=2, n_rate=0.0)
    records = [(f"r{k}", s, random_constraint(s, rng)) for k, s in enumerate(seqs)]
    records = [r for r in records if vienna(r[1], r[2], True)[0] < NONE_AT]
    path = tmp_path / "in.fa"
    path.write_text(_fasta_with_constraints(records))
    args = ["fold", "in.fa", "-C", "--enforceConstraint", "-o", "out.db", "-q"]
    killed_at("written:0", tmp_path, args)
    assert (tmp_path / "out.db.journal").exists()
    again = cli(args, tmp_path)
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "out.db").read_bytes() == rnafold_constrained_stdout(records, True)
    killed_at("written:1", tmp_path, args + ["--restart"])
    h, s, c = records[0]
    k = c.rfind(".")
    records[0] = (h, s, c[:k] + "x" + c[k + 1:])                        # another line, still valid
    path.write_text(_fasta_with_constraints(records))
    changed = cli(args, tmp_path)
    assert changed.returncode == 2 and "changed" in one_error_line(changed)
    assert cli(args[:-1] + ["--enforceConstraint"], tmp_path).returncode == 2     # same header: refused again


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


# ---------------------------------------------------------------------------------------------------------
# SHAPE (Deigan's method): ViennaRNA's ``fc.sc_add_SHAPE_deigan(values, m, b)`` with RNAfold's values array
# (``values[0] = 0``, then one a nucleotide, -1 where the file gives none)


def random_reactivities(n: int, rng: random.Random) -> list:
    out = []
    for _ in range(n):
        u = rng.random()
        out.append(None if u < 0.1 else round(rng.expovariate(1.5), 3) if u < 0.9 else round(rng.uniform(0, 4), 4))
    return out


def vienna_shape(seq: str, values, m=1.8, b=-0.6, constraint=None, enforce=False):
    fc = RNA.fold_compound(seq, RNA.md())
    if constraint is not None:
        fc.hc_add_from_db(constraint, RNA.CONSTRAINT_DB_DEFAULT | (RNA.CONSTRAINT_DB_ENFORCE_BP if enforce else 0))
    fc.sc_add_SHAPE_deigan([0.0] + [-1.0 if v is None else v for v in values], m, b)
    structure, mfe = fc.mfe()
    return int(round(mfe * 100)), structure


@pytest.mark.parametrize("method,m,b", [("D", 1.8, -0.6), ("Dm2.6b-0.8", 2.6, -0.8), ("Db0.3", 1.8, 0.3)])
def test_shape_folds_as_viennarna(method, m, b):
    rng = random.Random(len(method))
    seqs = random_seqs(60, 10, 160, seed=40 + len(method))
    values = [random_reactivities(len(s), rng) for s in seqs]
    results = rnapipe.fold(seqs, shape=values, shape_method=method, threads=2)
    for r, seq, v in zip(results, seqs, values):
        assert (r.score_int, r.structure) == vienna_shape(seq, v, m, b), (seq, v)


def _deigan_one_at_a_time(values, m, b):
    """ViennaRNA's Deigan terms the obvious way: one value at a time, the C library's log (math.log)."""
    import math

    have = [v for v in values if v == v and v >= 0]
    top = max([0.0] + have)
    out = []
    for v in values:
        if v != v or v < 0:
            out.append(0)
            continue
        v = v / top * top if v < top else top
        e = (m * math.log(v + 1.0) + b) * 100.0
        out.append(int(math.copysign(math.floor(abs(e) + 0.5), e)))
    return out


def test_deigan_terms_equal_the_one_at_a_time_computation():
    """rnapipe.constraints.deigan (NumPy's log, math.log again near a half) against the scalar computation, on
    random reactivities and on ones whose term lies within 1e-7 dcal/mol of a half, several slopes and
    intercepts."""
    import math

    from rnapipe.constraints import deigan

    rng = random.Random(17)
    for _ in range(200):
        m, b = rng.choice([(1.8, -0.6), (1.9, -0.7), (2.6, 0.1), (0.5, -1.3)])
        values = [float("nan") if rng.random() < 0.05 else -1.0 if rng.random() < 0.1
                  else rng.choice([round(rng.expovariate(1.5), 3), rng.uniform(0, 5), 0.0])
                  for _ in range(rng.randint(0, 400))]
        if values and rng.random() < 0.5:               # terms near a half: k + 0.5 dcal/mol, a little off
            top = 6.0
            values.append(top)
            for k in range(-60, 300, 7):
                v = math.exp(((k + 0.5 + rng.uniform(-1e-7, 1e-7)) / 100 - b) / m) - 1
                if 0 <= v < top:
                    values.append(v)
        assert deigan(values, m, b).tolist() == _deigan_one_at_a_time(values, m, b)


def _table_as_dicts(data) -> dict:
    return {key: dict(zip(p.tolist(), v.tolist())) for key, (p, v) in data.rows.items()}


def test_shape_table_read_in_blocks_equals_the_obvious_reading(tmp_path, monkeypatch):
    """A table of ``id position reactivity`` rows (tabs and spaces, LF or CRLF, positions in order or not, an id
    whose rows come in two runs) read by rnapipe.constraints' block reader (small blocks here, so that rows of an
    id straddle them) gives each id the positions and reactivities of the obvious line-by-line reading."""
    from rnapipe import constraints

    monkeypatch.setattr(constraints, "TABLE_BLOCK", 4096)
    rng = random.Random(11)
    rows = []
    for k in range(300):
        positions = list(range(1, rng.randint(1, 80) + 1))
        if k % 3 == 0:
            rng.shuffle(positions)
        for p in positions:
            if rng.random() < 0.9:
                value = rng.choice([round(rng.expovariate(1.5), 3), rng.uniform(0, 4), 0, 1e-3, -1])
                rows.append((f"rec{k}", p, value))
    rows.append(("rec5", 999, 0.5))                     # rec5 again, after the others
    for end in ("\n", "\r\n"):
        text = "".join(f"{i}{rng.choice([' ', chr(9), '  '])}{p}\t{v}{end}" for i, p, v in rows)
        path = tmp_path / "table.tsv"
        path.write_bytes(text.encode())
        assert constraints._table_fast(text.encode()) is not None        # read by the block reader
        want: dict = {}
        for line in text.splitlines():
            i, p, v = line.split()
            want.setdefault(i, {})[int(p)] = float(v)
        data = constraints.read_shape(str(path))
        assert data.table and _table_as_dicts(data) == want and list(data.rows) == list(want)


@pytest.mark.parametrize("text", [
    "a 1 0.5\na 1 0.6\n", "a 2 0.5\na 1 0.6\na 2 0.1\n", "a +3 0.5\n", "a 1 0.5\n\na 2 0.5\n",
    "# comment\na 1 0.5\n", "a 1 0.5 7\n", "a 1 nan\n", "a 0 0.5\n", "a 1 0.5\rb 2 0.3\n", "a 1 1_0\n",
    "a 1 0.5\nb 1 x\n", "a 1 0.5\n  \n", "a 1 0.5", "1 A 0.5\n2 C 0.7\n", "a 1 0.5\nb 1 0.5\na 1 0.2\n"])
def test_shape_files_the_block_reader_leaves_read_as_line_by_line(text, tmp_path, monkeypatch):
    """Whatever the block reader does not take (a position twice, '+', blank lines, comments, a fourth field, a
    reactivity that is no finite number, position 0, a lone CR, RNAfold's file of one sequence) reads exactly as
    the line-by-line reader alone reads it: the same rows, or the same error line."""
    from rnapipe import constraints

    path = tmp_path / "s.txt"
    path.write_bytes(text.encode())

    def outcome():
        try:
            data = constraints.read_shape(str(path))
        except InputError as err:
            return str(err)
        return data.table, _table_as_dicts(data), None if data.single is None else data.single[0].tolist()

    got = outcome()
    monkeypatch.setattr(constraints, "_table_fast", lambda raw: None)
    assert got == outcome()


def test_shape_terms_near_a_half_round_as_viennarna():
    """Deigan terms whose exact value lies within 10⁻⁵ of a half (of a dcal/mol): rounded as ViennaRNA rounds
    them. One reactivity on the second nucleotide of GGGGGGAAAACCCCCC (in two stacked pairs of pairs), the rest
    missing; both signs of the term."""
    import math

    seq = "GGGGGGAAAACCCCCC"
    values = []
    for half in range(-55, 300, 7):
        for nudge in (-4e-6, 4e-6):                        # dcal/mol off the half
            term = (half + 0.5 + nudge) / 100.0                     # kcal/mol
            values.append(math.expm1((term + 0.6) / 1.8))          # the reactivity of that term (m 1.8, b -0.6)
    rows = [[None, r] + [None] * (len(seq) - 2) for r in values]
    results = rnapipe.fold([seq] * len(rows), shape=rows, threads=2)
    for r, v in zip(results, rows):
        assert (r.score_int, r.structure) == vienna_shape(seq, v), v[1]


def test_shape_with_constraints_folds_as_viennarna():
    rng = random.Random(8)
    seqs = random_seqs(40, 20, 120, seed=8)
    values = [random_reactivities(len(s), rng) for s in seqs]
    lines = [random_constraint(s, rng) for s in seqs]
    results = rnapipe.fold(seqs, constraints=lines, shape=values, threads=2)
    for r, seq, v, line in zip(results, seqs, values, lines):
        assert (r.score_int, r.structure) == vienna_shape(seq, v, constraint=line), (seq, v, line)


def test_cli_shape_table_and_rnafold_file(tmp_path):
    rng = random.Random(12)
    seqs = random_seqs(12, 20, 100, seed=12, n_rate=0.0)
    values = [random_reactivities(len(s), rng) for s in seqs]
    values[3] = [None] * len(seqs[3])                       # a record without rows
    fa = tmp_path / "in.fa"
    fa.write_text("".join(f">r{k} some text\n{s}\n" for k, s in enumerate(seqs)))
    table = tmp_path / "shape.tsv"
    table.write_text("# id position reactivity\n" + "".join(
        f"r{k}\t{p}\t{x}\n" for k, v in enumerate(values) for p, x in enumerate(v, start=1) if x is not None))
    proc = run_rnapipe("fold", fa, "--shape", table, "--shapeMethod", "Dm1.9b-0.7", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    expected = rnafold_stdout([(f"r{k} some text", s) for k, s in enumerate(seqs)],
                              shape=values, shape_method=(1.9, -0.7))
    assert proc.stdout.encode() == expected
    one = tmp_path / "one.fa"
    one.write_text(f">only\n{seqs[0]}\n")
    single = tmp_path / "one.shape"
    single.write_text("".join(f"{p} {seqs[0][p - 1]} {x}\n" if x is not None else f"{p} {seqs[0][p - 1]}\n"
                              for p, x in enumerate(values[0], start=1)))
    proc = run_rnapipe("fold", one, "--shape", single, "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.encode() == rnafold_stdout([("only", seqs[0])], shape=[values[0]])


def test_cli_says_which_ids_of_a_shape_table_match_no_record(tmp_path):
    fa = tmp_path / "in.fa"
    fa.write_text(">a\nGGGGAAACCCC\n>b\nGGGAAACCC\n")
    table = tmp_path / "t.tsv"
    table.write_text("a 1 0.5\nzz 2 0.3\nb 3 0.1\nA 1 0.2\n")
    proc = run_rnapipe("fold", fa, "--shape", table, "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    notes = [line for line in proc.stderr.splitlines() if "SHAPE table" in line]
    assert len(notes) == 1 and "2 id(s)" in notes[0] and "'zz', 'A'" in notes[0], proc.stderr
    table.write_text("a 1 0.5\nb 3 0.1\n")
    proc = run_rnapipe("fold", fa, "--shape", table, "-q", cwd=tmp_path)
    assert proc.returncode == 0 and "SHAPE table" not in proc.stderr, proc.stderr


def test_cli_bad_shape_input(tmp_path):
    fa = tmp_path / "in.fa"
    fa.write_text(">a\nGGGGAAACCCC\n>b\nGGGAAACCC\n")
    table = tmp_path / "t.tsv"
    table.write_text("a 1 0.5\nb 10 0.3\n")
    proc = run_rnapipe("fold", fa, "--shape", table, "-q", cwd=tmp_path)
    assert proc.returncode == 2
    assert (f"{fa}, record 'b': SHAPE data in {table} for position 10, past the end of the sequence (9 nt)"
            in one_error_line(proc))
    skip = run_rnapipe("fold", fa, "--shape", table, "--on-invalid", "skip", "-o", tmp_path / "o.db", cwd=tmp_path)
    assert skip.returncode == 0 and (tmp_path / "o.db").read_text().startswith(">a\n")
    table.write_text("a 1 0.5\na 2 high\n")
    proc = run_rnapipe("fold", fa, "--shape", table, "-q", cwd=tmp_path)
    assert proc.returncode == 2 and f"{table}: line 2: reactivity 'high' is not a number" in one_error_line(proc)
    single = tmp_path / "s.shape"
    single.write_text("1 G 0.5\n2 G 0.1\n")
    proc = run_rnapipe("fold", fa, "--shape", single, "-q", cwd=tmp_path)
    assert proc.returncode == 2 and "more than one record" in one_error_line(proc)
    proc = run_rnapipe("fold", fa, "--shape", tmp_path / "missing.tsv", "-q", cwd=tmp_path)
    assert proc.returncode == 2 and "no such SHAPE file" in one_error_line(proc)
    proc = run_rnapipe("fold", fa, "--shape", single, "--shapeMethod", "Z", "-q", cwd=tmp_path)
    assert proc.returncode == 2 and "only Deigan's method" in one_error_line(proc)
    from rnapipe.gpu.devices import gpu_available

    one = tmp_path / "one.fa"
    one.write_text(">only\nGGGAAAUCCC\n")
    for device in ("gpu", "hybrid"):              # --shape folds on every device: no refusal of its own
        proc = run_rnapipe("fold", one, "--shape", single, "--device", device, "-q", cwd=tmp_path)
        if gpu_available():
            assert proc.returncode == 0, proc.stderr
        else:
            line = one_error_line(proc)
            assert "needs an NVIDIA GPU" in line and "shape" not in line, line


def test_api_takes_shape_on_gpu_engines_and_refuses_bad_lengths():
    from rnapipe.errors import UnavailableError
    from rnapipe.gpu.devices import gpu_available

    for device in ("gpu", "hybrid"):              # SHAPE data fold on every device
        if gpu_available():
            [r] = rnapipe.fold("GGGAAACCC", shape=[0.1] * 9, device=device)
            [want] = rnapipe.fold("GGGAAACCC", shape=[0.1] * 9, device="cpu")
            assert (r.score_int, r.structure) == (want.score_int, want.structure)
        else:
            with pytest.raises(UnavailableError, match="needs an NVIDIA GPU") as err:
                rnapipe.fold("GGGAAACCC", shape=[0.1] * 9, device=device)
            assert "shape" not in str(err.value)
    with pytest.raises(InputError, match="3 SHAPE reactivities for 9 nt"):
        rnapipe.fold(["GGGAAACCC"], shape=[[0.1, 0.2, 0.3]])


def test_shape_travels_through_chunks_and_the_journal(tmp_path):
    import numpy as np

    from rnapipe.constraints import read_shape
    from rnapipe.pipeline.folding.chunks import Chunk
    from rnapipe.pipeline.records import Records
    from rnapipe.pipeline.resume.run import journal_header

    one = Records.from_lists(["a", "b"], ["GGGAAACCC"] * 2, [0, 1], shape=[np.arange(9, dtype=np.int32), None])
    two = Records.from_lists(["a", "b"], ["GGGAAACCC"] * 2, [0, 1], shape=[np.arange(9, dtype=np.int32) * 2, None])
    assert Chunk(0, one, end=2).digest() != Chunk(0, two, end=2).digest()
    assert Records.concat([one.take(1, 2), Records.from_lists(["c"], ["GGG"], [2])]).shape == [None, None]
    path = tmp_path / "t.tsv"
    path.write_text("a 1 0.5\n")
    head = journal_header(["in.fa"], [], "zuker", "default", "error", {}, shape=read_shape(str(path), 1.9, -0.7))
    assert head["options"]["shape"][0] == str(path) and head["options"]["shape"][2:] == ["deigan", 1.9, -0.7]
    path.write_text("a 1 0.6\n")
    again = journal_header(["in.fa"], [], "zuker", "default", "error", {}, shape=read_shape(str(path), 1.9, -0.7))
    assert again["options"]["shape"][1] != head["options"]["shape"][1]


def test_workflow_with_constraints_and_shape(tmp_path):
    """The workflow with ``fold.constraint``, ``fold.enforce_constraint`` and ``fold.shape``: prepare carries the
    constraint lines into the shards, every fold job applies them and the table's SHAPE data, and the merged db
    is ViennaRNA's fold of each record with both."""
    import subprocess

    from test_workflow import environment, needs_snakemake, snakemake_cmd

    if needs_snakemake.args[0]:
        pytest.skip("snakemake is not installed")
    rng = random.Random(17)
    seqs = random_seqs(30, 10, 90, seed=17, n_rate=0.0)
    records = []
    for k, seq in enumerate(seqs):
        line, values = random_constraint(seq, rng), random_reactivities(len(seq), rng)
        expected = vienna_shape(seq, values, constraint=line, enforce=True)
        if expected[0] < NONE_AT:
            records.append((f"r{k}", seq, line, values, expected))
    (tmp_path / "in.fa").write_text("".join(f">{h}\n{s}\n{c}\n" for h, s, c, _, _ in records))
    (tmp_path / "shape.tsv").write_text("".join(f"{h} {p} {x}\n" for h, _, _, v, _ in records
                                                for p, x in enumerate(v, start=1) if x is not None))
    config = {"inputs": "[in.fa]", "outdir": "out", "formats": "[db]",
              "fold": "{constraint: true, enforce_constraint: true, shape: shape.tsv}",
              "prepare": "{shard_records: 5}"}
    run = subprocess.run(snakemake_cmd(tmp_path, config), env=environment(tmp_path), capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert any(line and line[0] in ".x|<(" for shard in (tmp_path / "out" / "work" / "in" / "prepared" /
                                                          "shards").iterdir() for line in shard.read_text().split("\n"))
    assert (tmp_path / "out" / "in.zuker.db").read_text() == "".join(
        f">{h}\n{s}\n{st} ({e / 100:6.2f})\n" for h, s, _, _, (e, st) in records)


def test_cli_shape_directory_of_rnafold_files(tmp_path):
    """``--shape DIR``: RNAfold's file of each record, ``DIR/ID.shape``; a record without one folds without data."""
    rng = random.Random(13)
    seqs = random_seqs(6, 20, 80, seed=13, n_rate=0.0)
    values = [random_reactivities(len(s), rng) for s in seqs]
    (tmp_path / "in.fa").write_text("".join(f">r{k}\n{s}\n" for k, s in enumerate(seqs)))
    (tmp_path / "shape").mkdir()
    for k, (s, v) in enumerate(zip(seqs, values)):
        if k == 2:
            values[k] = [None] * len(s)
            continue
        (tmp_path / "shape" / f"r{k}.shape").write_text(
            "".join(f"{p} {s[p - 1]} {x}\n" for p, x in enumerate(v, start=1) if x is not None))
    proc = run_rnapipe("fold", "in.fa", "--shape", "shape", "-q", "-o", "out.db", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out.db").read_text() == "".join(
        f">r{k}\n{s}\n{st} ({e / 100:6.2f})\n" for k, (s, v) in enumerate(zip(seqs, values))
        for e, st in [vienna_shape(s, v)])
    (tmp_path / "shape" / "r1.shape").write_text(f"{len(seqs[1]) + 1} A 0.5\n")
    proc = run_rnapipe("fold", "in.fa", "--shape", "shape", "-q", "-o", "out.db", "--restart", cwd=tmp_path)
    assert proc.returncode == 2
    assert f"record 'r1': SHAPE data in {os.path.join('shape', 'r1.shape')} for position" in one_error_line(proc)


def test_api_constraints_for_every_kind_of_input():
    """A mapping, pairs, Records and one string take their constraint lines in their order."""
    from rnapipe.io import Record

    seqs = {"a": "GGGGAAAACCCC", "b": "GGGAAAUCCCAA"}
    lines = ["((((....))))", "xxx........."]
    want = [vienna(s, c) for s, c in zip(seqs.values(), lines)]
    for given in (seqs, list(seqs.items()), [Record(k, v, 7 + i) for i, (k, v) in enumerate(seqs.items())]):
        got = rnapipe.fold(given, constraints=lines)
        assert [(r.id, r.score_int, r.structure) for r in got] == [(k, *w) for k, w in zip(seqs, want)]
        records = isinstance(given, list) and isinstance(given[0], Record)
        assert [r.index for r in got] == ([7, 8] if records else [0, 1])          # a Record keeps its index
    one = rnapipe.fold("GGGGAAAACCCC", constraints="((((....))))")
    assert (one[0].score_int, one[0].structure) == want[0]


def test_resume_after_a_record_without_structure_was_skipped(tmp_path):
    """The chunk that lost a record after folding keeps the digest of what was read: the rerun resumes."""
    from test_resume import cli, killed_at

    rng = random.Random(23)
    seqs = random_seqs(16, 20, 50, seed=23, n_rate=0.0)
    records = [(f"r{k}", s, random_constraint(s, rng)) for k, s in enumerate(seqs)]
    records = [r for r in records if vienna(r[1], r[2], True)[0] < NONE_AT]
    records.insert(1, ("none", "AAAAAAAAAA", "|........."))
    (tmp_path / "in.fa").write_text(_fasta_with_constraints(records))
    args = ["fold", "in.fa", "-C", "--enforceConstraint", "--on-invalid", "skip", "-o", "out.db", "-q"]
    killed_at("written:1", tmp_path, args)
    again = cli(args[:-1], tmp_path)
    assert again.returncode == 0, again.stderr
    assert "resumed an interrupted run: 2 chunk(s) were done already" in again.stderr
    assert (tmp_path / "out.db").read_bytes() == rnafold_constrained_stdout(records[:1] + records[2:], True)


def test_cli_constraint_lines_over_several_lines_and_headerless_input(tmp_path):
    """A record's sequence and its constraint line may each go over several lines (RNAfold reads them so);
    without headers, each sequence line is followed by its constraint line, and db prints no header line."""
    seq, line = "GGGGAAAACCCCAUAUGGGAAAUCCC", "((((....))))..xx(((...)))."
    (tmp_path / "in.fa").write_text(f">a\n{seq[:10]}\n{seq[10:]}\n{line[:13]}\n{line[13:]}\n")
    proc = run_rnapipe("fold", "in.fa", "-C", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.encode() == rnafold_constrained_stdout([("a", seq, line)], False)
    other, other_line = "GCGCAAAAGCGCAAAAAAA", "x(((....)))........"
    proc = run_rnapipe("fold", "-", "-C", "-q", cwd=tmp_path, stdin=f"{seq}\n{line}\n\n{other}\n{other_line}\n")
    assert proc.returncode == 0, proc.stderr
    expected = rnafold_constrained_stdout([("a", seq, line), ("b", other, other_line)], False)
    assert proc.stdout.encode() == b"".join(x + b"\n" for x in expected.split(b"\n") if not x.startswith(b">")
                                            and x)
    proc = run_rnapipe("fold", "-", "-C", "-o", "out.tsv", cwd=tmp_path, stdin=f"{seq}\n{line}\n{other}\n")
    assert proc.returncode == 2
    assert "record 'sequence_0002', position 1: no constraint line" in one_error_line(proc)


def test_model_refuses_a_non_boolean_enforce_constraint():
    with pytest.raises(UsageError, match="enforce_constraint must be True or False"):
        rnapipe.fold("GGGAAACCC", constraints=".........", enforce_constraint="yes")


@pytest.mark.parametrize("dangles, temperature", [(0, 37.0), (2, 25.0)])
def test_shape_and_constraints_under_other_model_options(dangles, temperature):
    rng = random.Random(dangles + int(temperature))
    seqs = random_seqs(40, 20, 150, seed=dangles + int(temperature))
    values = [random_reactivities(len(s), rng) for s in seqs]
    lines = [random_constraint(s, rng) for s in seqs]
    results = rnapipe.fold(seqs, constraints=lines, shape=values, dangles=dangles, temperature=temperature, threads=2)
    for r, seq, v, line in zip(results, seqs, values, lines):
        md = RNA.md()
        md.dangles, md.temperature = dangles, temperature
        fc = RNA.fold_compound(seq, md)
        fc.hc_add_from_db(line, RNA.CONSTRAINT_DB_DEFAULT)
        fc.sc_add_SHAPE_deigan([0.0] + [-1.0 if x is None else x for x in v], 1.8, -0.6)
        structure, mfe = fc.mfe()
        assert (r.score_int, r.structure) == (int(round(mfe * 100)), structure), (seq, line, v)


def test_resume_refuses_other_constraint_options(tmp_path):
    """The journal header holds -C, --enforceConstraint and the SHAPE file's identity: a rerun that changes one
    is another run, refused in one line."""
    from test_resume import cli, killed_at

    rng = random.Random(29)
    seqs = random_seqs(16, 20, 50, seed=29, n_rate=0.0)
    records = [(f"r{k}", s, random_constraint(s, rng)) for k, s in enumerate(seqs)]
    records = [r for r in records if vienna(r[1], r[2], True)[0] < NONE_AT]
    (tmp_path / "in.fa").write_text(_fasta_with_constraints(records))
    (tmp_path / "t.tsv").write_text("r0 1 0.5\n")
    args = ["fold", "in.fa", "-C", "--enforceConstraint", "--shape", "t.tsv", "-o", "out.db", "-q"]
    killed_at("written:0", tmp_path, args)
    for other in ([a for a in args if a != "--enforceConstraint"], args[:4] + args[6:]):
        proc = cli(other, tmp_path)
        assert proc.returncode == 2, proc.stderr
        assert "--restart" in one_error_line(proc)
    (tmp_path / "t.tsv").write_text("r0 1 0.6\n")
    proc = cli(args, tmp_path)
    assert proc.returncode == 2 and "--restart" in one_error_line(proc)


@pytest.mark.parametrize("rules", [{"no_lp": True}, {"no_gu": True}, {"no_closing_gu": True}, {"max_bp_span": 40},
                                   {"no_lp": True, "no_closing_gu": True, "max_bp_span": 60}],
                         ids=["noLP", "noGU", "noClosingGU", "maxBPspan", "all"])
def test_constraints_and_shape_with_the_pairing_rules(rules):
    """With RNAfold's pairing rules as well: a constrained pair keeps its own type (GU under --noGU too), may span
    more than --maxBPspan, and under --noLP a pair that could stack only on a constrained non-canonical pair is
    dropped, as ViennaRNA's default hard constraints drop it."""
    rng = random.Random(len(rules) * 7 + sum(map(len, rules)))
    seqs = random_seqs(40, 20, 160, seed=len(str(rules)))
    for enforce in (False, True):
        lines = [random_constraint(s, rng) for s in seqs]
        values = [random_reactivities(len(s), rng) for s in seqs]
        expected = {}
        for k, (seq, line, v) in enumerate(zip(seqs, lines, values)):
            md = RNA.md()
            md.noLP, md.noGU = int(rules.get("no_lp", False)), int(rules.get("no_gu", False))
            md.noGUclosure = int(rules.get("no_closing_gu", False))
            if "max_bp_span" in rules:
                md.max_bp_span = rules["max_bp_span"]
            fc = RNA.fold_compound(seq, md)
            fc.hc_add_from_db(line, RNA.CONSTRAINT_DB_DEFAULT | (RNA.CONSTRAINT_DB_ENFORCE_BP if enforce else 0))
            fc.sc_add_SHAPE_deigan([0.0] + [-1.0 if x is None else x for x in v], 1.8, -0.6)
            structure, mfe = fc.mfe()
            if mfe < 90_000:                                  # else no structure: ViennaRNA's INF (less a little)
                expected[k] = (int(round(mfe * 100)), structure)
        results = rnapipe.fold(seqs, constraints=lines, shape=values, enforce_constraint=enforce,
                               on_invalid="skip", threads=2, **rules)
        assert {r.index: (r.score_int, r.structure) for r in results} == expected


def test_fold_job_does_not_reuse_a_fold_of_other_shape_data(tmp_path):
    """fold-job records -C and the SHAPE file's identity with its fold: a finished fold is linked again only for
    the same data; another SHAPE file folds again."""
    from test_workflow import environment, rnapipe as workflow_rnapipe

    env = environment(tmp_path)
    seqs = random_seqs(6, 20, 60, seed=31, n_rate=0.0)
    (tmp_path / "in.fa").write_text("".join(f">r{k}\n{s}\n{'.' * len(s)}\n" for k, s in enumerate(seqs)))
    (tmp_path / "t.tsv").write_text("r0 1 0.5\nr0 2 2.5\n")
    assert workflow_rnapipe(["prepare", "in.fa", "-o", "prep", "-C"], tmp_path, env).returncode == 0
    (tmp_path / "job.list").write_text("".join(f"{p}\n" for p in sorted((tmp_path / "prep" / "shards").iterdir())))
    job = ["fold-job", "job.list", "-o", "job.db", "-C", "--shape", "t.tsv", "--device", "cpu"]
    assert workflow_rnapipe(job, tmp_path, env).returncode == 0
    (tmp_path / "job.db").unlink()
    again = workflow_rnapipe(job, tmp_path, env)
    assert again.returncode == 0 and "the fold was complete" in again.stderr
    (tmp_path / "job.db").unlink()
    (tmp_path / "t.tsv").write_text("r0 1 2.5\nr0 2 0.5\n")
    other = workflow_rnapipe(job, tmp_path, env)
    assert other.returncode == 0 and "the fold was complete" not in other.stderr, other.stderr
