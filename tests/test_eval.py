"""``rnapipe.eval_structure`` and ``rnapipe eval`` against ViennaRNA's ``fold_compound(seq, md).eval_structure``
on every structure RNAeval scores: the known structures of ../shared/data/known, and random structures made
here with any pair (non-canonical, with N), hairpins of 0 to 2 nucleotides and lonely pairs; the CLI's
warnings, its one-line errors naming file, record and line, and ``--on-invalid skip``."""

from __future__ import annotations

import random
import subprocess
import sys

import numpy as np
import pytest

import rnapipe
from rnapipe.energy import eval_warnings
from rnapipe.errors import InputError
from shared_data import DATA

RNA = pytest.importorskip("RNA")

MODELS = [(37.0, 2), (37.0, 0), (20.0, 2), (60.0, 0)]


def vienna(sequence: str, structure: str, temperature: float, dangles: int) -> np.float32:
    md = RNA.md()
    md.temperature = temperature
    md.dangles = dangles
    return np.float32(RNA.fold_compound(sequence, md).eval_structure(structure))


def as_vienna(dcal: int) -> np.float32:
    """What ViennaRNA returns for an integer energy: ``(float)e / 100.`` stored in a float."""
    return np.float32(np.float64(np.float32(dcal)) / 100.0)


def known() -> list[tuple[str, str, str]]:
    records = []
    for path in sorted((DATA / "known").glob("*.dbn")) if DATA.is_dir() else []:
        lines = path.read_text().splitlines()
        for k in range(0, len(lines) - 2, 3):
            records.append((lines[k][1:].split()[0], lines[k + 1].strip().upper().replace("T", "U"),
                            lines[k + 2].strip()))
    return records


def random_structure(rng: random.Random, n: int) -> str:
    """A nested structure on n positions where any two may pair: lonely pairs, loops of any size from 0."""
    out = ["."] * n

    def fill(lo: int, hi: int) -> None:
        k = lo
        while k < hi:
            if rng.random() < 0.35:
                ends = [m for m in range(k + 1, min(hi, k + 40))]
                if ends:
                    m = rng.choice(ends)
                    out[k], out[m] = "(", ")"
                    fill(k + 1, m)
                    k = m + 1
                    continue
            k += 1

    fill(0, n)
    return "".join(out)


@pytest.mark.skipif(not (DATA / "known").is_dir(), reason="../shared/data not present")
@pytest.mark.parametrize("dangles", [2, 0])
def test_every_known_structure_as_viennarna(dangles):
    records = known()
    assert len(records) > 1000
    differ = [(rid, ours, theirs) for rid, seq, db in records
              if as_vienna(ours := rnapipe.eval_structure(seq, db, dangles=dangles))
              != (theirs := vienna(seq, db, 37.0, dangles))]
    assert differ == []
    # the set holds structures that only an RNAeval-like evaluation scores
    assert sum(1 for _, seq, db in records if eval_warnings(seq, db)) > 50


@pytest.mark.parametrize("temperature,dangles", MODELS)
def test_random_structures_with_any_pairs(temperature, dangles):
    rng = random.Random(int(temperature) * 10 + dangles)
    odd = short = 0
    for _ in range(300):
        n = rng.randint(1, 120)
        seq = "".join(rng.choice("ACGUACGUACGUN" if rng.random() < 0.3 else "ACGU") for _ in range(n))
        db = random_structure(rng, n)
        notes = " ".join(eval_warnings(seq, db))
        odd += "non-canonical" in notes
        short += "hairpin" in notes
        ours = rnapipe.eval_structure(seq, db, temperature=temperature, dangles=dangles)
        assert as_vienna(ours) == vienna(seq, db, temperature, dangles), (seq, db, ours)
    assert odd > 100 and short > 50


@pytest.mark.parametrize("seq,db", [
    ("GGGGACCCC", "((((.))))"),                  # hairpin of 1
    ("GGGGCCCC", "(((())))"),                    # hairpin of 0
    ("GAGGAAAACACC", "((((....))))"),            # non-canonical A-C inside a helix
    ("GGAAAGGAACCAACC", "((...((..)).))."),      # short hairpin as a branch of nothing: an interior loop
    ("GGAGGAACCAGGAACCACC", "((.((..)).((..)).))"),  # two short hairpins in a multiloop: INF + INF
    ("NGGGAAACCCN", "((((...))))"),              # N pairs
    ("GCAAAGC", "(.(.).)"),                       # lonely pairs
    ("GGGAAACCC", "[[[...]]]"),                  # pseudoknot brackets: unpaired, as RNAeval reads them
])
def test_cases_viennarna_scores(seq, db):
    for temperature, dangles in MODELS:
        assert as_vienna(rnapipe.eval_structure(seq, db, temperature=temperature, dangles=dangles)) == \
            vienna(seq, db, temperature, dangles)


def test_warnings():
    assert eval_warnings("GGGGAAAACCCC", "((((....))))") == []
    notes = eval_warnings("GAGGAACCAGC", "((((..)).))")
    assert notes == ["non-canonical pair 2-10 (A-G) scored with the non-standard pair type",
                     "hairpin closed by 4-7 with fewer than 3 unpaired nucleotides (ViennaRNA's INF, "
                     "100000 kcal/mol)"]
    assert eval_warnings("GGGAAACCC", "[[[...]]]") == ["[] read as unpaired (only () pairs)"]


def test_unreadable_structures_raise():
    with pytest.raises(InputError, match="unbalanced"):
        rnapipe.eval_structure("CAAAAAG", "((....)")
    with pytest.raises(InputError, match="has 7 nt"):
        rnapipe.eval_structure("CAAAAAG", "(....)")
    with pytest.raises(InputError, match="unexpected character 'x'"):
        rnapipe.eval_structure("CAAAAAG", "(..x..)")


# ---------------------------------------------------------------------------------------------------------
# the command


def run(*args, cwd, stdin=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rnapipe", "eval", *map(str, args)], cwd=cwd, input=stdin,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(not (DATA / "known").is_dir(), reason="../shared/data not present")
@pytest.mark.parametrize("dangles", [2, 0])
def test_cli_scores_every_known_structure(tmp_path, dangles):
    records = known()
    (tmp_path / "k.dbn").write_text("".join(f">{i}\n{s}\n{d}\n" for i, s, d in records))
    proc = run("-i", "k.dbn", "--dangles", dangles, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    expected = "".join(">%s\n%s\n%s (%6.2f)\n" % (i, s, d, vienna(s, d, 37.0, dangles)) for i, s, d in records)
    assert proc.stdout == expected
    warned = [line for line in proc.stderr.splitlines()]
    assert warned and all(line.startswith("rnapipe: warning: k.dbn, record '") for line in warned)
    assert len(warned) == sum(1 for _, s, d in records if eval_warnings(s, d))
    quiet = run("-i", "k.dbn", "--dangles", dangles, "-q", cwd=tmp_path)
    assert quiet.returncode == 0 and quiet.stderr == "" and quiet.stdout == expected
    for jobs in (("-j",), ("-j4",), ("--jobs", "2")):            # RNAeval's -j: the same output, in order
        threaded = run(*jobs, "-i", "k.dbn", "--dangles", dangles, "-q", cwd=tmp_path)
        assert threaded.returncode == 0 and threaded.stdout == expected, threaded.stderr


ODD = "non-canonical pairs 2-11 (A-C), 3-10 (G-A) scored with the non-standard pair type"


def test_cli_warning_names_record_and_pair(tmp_path):
    (tmp_path / "a.db").write_text(">ok\nGGGGAAAACCCC\n((((....))))\n>odd\nGAGGAAAACACC\n((((....))))\n")
    proc = run("-i", "a.db", cwd=tmp_path)
    assert proc.returncode == 0
    assert proc.stderr.splitlines() == [f"rnapipe: warning: a.db, record 'odd': {ODD}"]
    assert proc.stdout.endswith("((((....)))) (%6.2f)\n" % vienna("GAGGAAAACACC", "((((....))))", 37.0, 2))
    proc = run("GAGGAAAACACC", "((((....))))", cwd=tmp_path)
    assert proc.returncode == 0
    assert proc.stderr.splitlines() == [f"rnapipe: warning: STRUCTURE argument: {ODD}"]


BAD = [
    # (file text, the error line's words)
    (">a\nGGGAAACCC\n(((...)))\n>b\nGGGAAACCC\n(((...))\n",
     "x.db, record 'b': structure has 8 characters but the sequence has 9 (line 6)"),
    (">a\nGGGAAACCC\n(((...)))\n>b\nGGGAAACCCA\n(((...))))\n",
     "x.db, record 'b', position 10: unmatched ')' at line 6"),
    (">a\nGGGAAACCC\n(((...)))\n>b\nGGGAAACCCA\n((((...)))\n",
     "x.db, record 'b', position 1: unmatched '(' at line 6"),
    (">a\nGGGAAACCC\n(((...)))\n>b\nGGGAAACCC\n((.x..)))\n",
     "x.db, record 'b', position 4: invalid character 'x' in the structure at line 6"),
    (">a\nGGGAAACCC\n(((...)))\n>b\nGGGA-ACCC\n(((...)))\n",
     "x.db, record 'b', position 5: invalid character '-' at line 5; alignment gaps are not allowed"),
    (">a\nGGGAAACCC\n(((...)))\n>b\nGGGAAACCC\n",
     "x.db, record 'b': no dot-bracket structure line after the sequence (record at line 4)"),
    ("GGGAAACCC\n(((...)))\n",
     "x.db: not a FASTA file: line 1 ('GGGAAACCC') does not start with '>'"),
]


@pytest.mark.parametrize("text,words", BAD)
def test_cli_bad_record_one_line(tmp_path, text, words):
    (tmp_path / "x.db").write_text(text)
    proc = run("-i", "x.db", cwd=tmp_path)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == [f"rnapipe: error: {words}"]


def test_cli_skip(tmp_path):
    (tmp_path / "x.db").write_text(">a\nGGGGAAAACCCC\n((((....))))\n>b\nGGGAAACCC\n(((...))\n"
                                   ">c\nGGGA-ACCC\n(((...)))\n>d\nGAGGAAAACACC\n((((....))))\n")
    proc = run("-i", "x.db", "--on-invalid", "skip", cwd=tmp_path)
    assert proc.returncode == 0
    assert proc.stdout == "".join(">%s\n%s\n%s (%6.2f)\n" % (i, s, d, vienna(s, d, 37.0, 2)) for i, s, d in
                                  [("a", "GGGGAAAACCCC", "((((....))))"), ("d", "GAGGAAAACACC", "((((....))))")])
    assert proc.stderr.splitlines() == [
        "rnapipe: skipped x.db, record 'b': structure has 8 characters but the sequence has 9 (line 6)",
        "rnapipe: skipped x.db, record 'c': position 5: invalid character '-' at line 8; alignment gaps are not "
        "allowed",
        f"rnapipe: warning: x.db, record 'd': {ODD}",
        "rnapipe: evaluated 2 record(s); skipped 2 record(s)"]
    quiet = run("-i", "x.db", "--on-invalid", "skip", "--quiet", cwd=tmp_path)
    assert quiet.returncode == 0 and quiet.stdout == proc.stdout
    assert quiet.stderr.splitlines() == ["rnapipe: skipped 2 record(s), evaluated 2"]


def test_cli_temperature_stdin_and_unreadable_file(tmp_path):
    records = [("a", "GGGGAAAACCCC", "((((..)))).."), ("b", "GGAGGAACCAGGAACCACC", "((.((..)).((..)).))"),
               ("c", "NGGGAAACCCN", "((((...))))")]
    text = "".join(f">{i}\n{s}\n{d}\n" for i, s, d in records)
    proc = run("-i", "-", "--temperature", 20, "--dangles", 0, cwd=tmp_path, stdin=text)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "".join(">%s\n%s\n%s (%6.2f)\n" % (i, s, d, vienna(s, d, 20.0, 0)) for i, s, d in records)
    assert [line.split(":")[1] for line in proc.stderr.splitlines()] == [" warning"] * 3
    assert all(line.startswith("rnapipe: warning: <stdin>, record '") for line in proc.stderr.splitlines())
    proc = run("-i", "none.db", "--on-invalid", "skip", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == ""
    assert proc.stderr.splitlines() == ["rnapipe: skipped none.db: no such file; the file was skipped",
                                        "rnapipe: evaluated 0 record(s); skipped 1 file(s)"]
