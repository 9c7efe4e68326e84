"""The `rnapipe` command, run as a user runs it: `python -m rnapipe` in a subprocess."""

from __future__ import annotations

import gzip
import importlib
import os
import re
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from naive import check_nussinov_structure, nussinov_score
from test_io import BAD_FILES

ROOT = Path(__file__).resolve().parents[1]
HAVE_NUSSINOV = (ROOT / "rnapipe" / "cpu" / "nussinov.py").exists()
needs_nussinov = pytest.mark.skipif(not HAVE_NUSSINOV, reason="rnapipe/cpu/nussinov.py not written yet")


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.pop("RNAPIPE_DEBUG", None)
    return env


def rnapipe(*args, cwd, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rnapipe", *map(str, args)], cwd=cwd, env=_env(), input=stdin,
                          capture_output=True, text=True, timeout=300)


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("rnapipe: error: ")
    return lines[0]


def random_fasta(path: Path, count: int, low: int, high: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    records = [(f"r{k}", "".join(rng.choice("ACGU") for _ in range(rng.randint(low, high)))) for k in range(count)]
    path.write_text("".join(f">{i}\n{s}\n" for i, s in records))
    return records


def parse_db(text: str) -> list[tuple[str, str, str, int]]:
    lines = text.splitlines()
    out = []
    for k in range(0, len(lines), 3):
        structure, score = lines[k + 2].rsplit(" (", 1)
        out.append((lines[k][1:], lines[k + 1], structure, int(score.rstrip(")"))))
    return out


def test_version(tmp_path):
    import rnapipe as package

    proc = rnapipe("--version", cwd=tmp_path)
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"rnapipe {package.__version__}"


def test_the_command_keeps_scipy_out_and_folds(tmp_path):
    """The console command (and python -m rnapipe) keeps SciPy out of its process, which Numba would import as it
    starts and rnapipe does not use, and folds as main() does."""
    import subprocess

    fa = tmp_path / "in.fa"
    fa.write_text(">a\nGGGGAAAACCCC\n")
    code = ("import sys, rnapipe.cli as cli\n"
            f"sys.argv = ['rnapipe', 'fold', {str(fa)!r}, '-o', {str(tmp_path / 'out.db')!r}, '-q']\n"
            "rc = cli.command()\n"
            "import numba\n"
            "print(rc, 'scipy' in sys.modules and sys.modules['scipy'] is None)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["0", "True"]
    assert (tmp_path / "out.db").read_text().startswith(">a\nGGGGAAAACCCC\n")


def test_help_documents_exit_codes(tmp_path):
    proc = rnapipe("fold", "--help", cwd=tmp_path)
    assert proc.returncode == 0
    for code in ("0 ", "1 ", "2 ", "3 ", "4 ", "130"):
        assert f"\n  {code}" in proc.stdout
    if HAVE_NUSSINOV:
        assert "\n  nussinov cpu  transposed, naive, parallel" in proc.stdout


# ---------------------------------------------------------------------------------------------------------
# bad input: exit 2, one line naming file, record and position, nothing written


@needs_nussinov
@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_input_exits_2_with_one_line(tmp_path, name):
    content, words, record, position = BAD_FILES[name]
    (tmp_path / name).write_bytes(content.encode() if isinstance(content, str) else content)
    (tmp_path / "good.fa").write_text(">g\nGGGAAACCC\n")
    proc = rnapipe("fold", "--algorithm", "nussinov", "good.fa", name, "-o", "out.fa", cwd=tmp_path)
    assert proc.returncode == 2
    line = one_error_line(proc)
    assert line.startswith(f"rnapipe: error: {name}")
    assert words in line
    if record is not None:
        assert f"record '{record}'" in line
    if position is not None:
        assert f"position {position}:" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["good.fa", name])


@needs_nussinov
@pytest.mark.parametrize("target", ["missing.fa", "subdir"])
def test_missing_file_or_directory(tmp_path, target):
    (tmp_path / "subdir").mkdir()
    proc = rnapipe("fold", "--algorithm", "nussinov", target, "-o", "out.fa", cwd=tmp_path)
    assert proc.returncode == 2
    assert one_error_line(proc).startswith(f"rnapipe: error: {target}: ")
    assert not (tmp_path / "out.fa").exists()


@needs_nussinov
def test_failed_run_leaves_an_existing_output_alone(tmp_path):
    (tmp_path / "bad.fa").write_text(">a\nACGU\n>b\nAC-U\n")
    (tmp_path / "out.fa").write_text("earlier results\n")
    proc = rnapipe("fold", "--algorithm", "nussinov", "bad.fa", "-o", "out.fa", cwd=tmp_path)
    assert proc.returncode == 2
    assert (tmp_path / "out.fa").read_text() == "earlier results\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.fa", "out.fa"]


@needs_nussinov
def test_skip_folds_the_rest_and_reports(tmp_path):
    (tmp_path / "a.fa").write_text(">a1\nGGGAAACCC\n>a2\nAC-U\n>a3\nacgtacgtgggaaauccc\n>a1\nCCC\n>a4\n")
    (tmp_path / "b.fa.gz").write_bytes(gzip.compress(b">b1\nGGGGAAAACCCCUUUU\n>b2\nAC9\n"))
    proc = rnapipe("fold", "--algorithm", "nussinov", "a.fa", "missing.fa", "b.fa.gz", "-o", "out.fa", "--on-invalid", "skip", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    folded = parse_db((tmp_path / "out.fa").read_text())
    # db prints sequences as RNAfold does: the input's case, T as U
    assert [(i, s) for i, s, _, _ in folded] == [("a1", "GGGAAACCC"), ("a3", "acguacgugggaaauccc"),
                                                  ("b1", "GGGGAAAACCCCUUUU")]
    for _, seq, structure, score in folded:
        assert score == nussinov_score(seq.upper())
        check_nussinov_structure(seq.upper(), structure, score)
    rows = [line.split("\t") for line in (tmp_path / "out.fa.rejected.tsv").read_text().splitlines()]
    assert rows[0] == ["index", "id", "file", "reason"]
    assert [r[:3] for r in rows[1:]] == [["1", "a2", "a.fa"], ["3", "a1", "a.fa"], ["4", "a4", "a.fa"],
                                         ["-", "-", "missing.fa"], ["6", "b2", "b.fa.gz"]]
    assert rows[1][3].startswith("position 3: invalid character '-'")
    lines = proc.stderr.splitlines()
    assert lines[:5] == [
        "rnapipe: skipped a.fa, record 'a2': position 3: invalid character '-' at line 4; alignment gaps are not "
        "allowed",
        "rnapipe: skipped a.fa, record 'a1': duplicate id at line 7; first seen in a.fa line 1",
        "rnapipe: skipped a.fa, record 'a4': empty record: no sequence at line 9",
        "rnapipe: skipped missing.fa: no such file; the file was skipped",
        "rnapipe: skipped b.fa.gz, record 'b2': position 3: invalid character '9' at line 4; digits are not allowed"]
    assert re.fullmatch(r"rnapipe: folded 3 record\(s\) in \d+\.\d\d s \([\d,]+ per second\); skipped 4 record\(s\) "
                        r"and 1 file\(s\); listed in out\.fa\.rejected\.tsv", lines[5]), lines[5]
    assert len(lines) == 6

    # a clean run removes the stale rejected list, so it never describes another run
    (tmp_path / "c.fa").write_text(">c\nGGGAAACCC\n")
    proc = rnapipe("fold", "--algorithm", "nussinov", "c.fa", "-o", "out.fa", "--on-invalid", "skip", cwd=tmp_path)
    assert proc.returncode == 0
    assert re.fullmatch(r"rnapipe: folded 1 record\(s\) in \d+\.\d\d s \([\d,]+ per second\)\n", proc.stderr)
    assert not (tmp_path / "out.fa.rejected.tsv").exists()


@needs_nussinov
def test_skip_quiet_keeps_only_the_summary(tmp_path):
    (tmp_path / "a.fa").write_text(">a1\nGGGAAACCC\n>a2\nAC-U\n")
    proc = rnapipe("fold", "--algorithm", "nussinov", "a.fa", "-o", "-", "--on-invalid", "skip", "-q", cwd=tmp_path)
    assert proc.returncode == 0
    assert proc.stderr.splitlines() == ["rnapipe: skipped 1 record(s), folded 1"]
    assert parse_db(proc.stdout) == [("a1", "GGGAAACCC", "(((...)))", 3)]


@needs_nussinov
def test_messy_but_valid_input_is_normalised(tmp_path):
    (tmp_path / "win.fa").write_bytes(b">w1 Windows\r\nggg aaa\tccc\r\n\r\n>w2\r\nttgcaNNgcaa\r\n")
    (tmp_path / "packed.data").write_bytes(gzip.compress(b">z\nGGGGAAAACCCC\n"))  # gzip, no .gz suffix
    proc = rnapipe("fold", "--algorithm", "nussinov", "win.fa", "packed.data", "-o", "out.fa", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    folded = parse_db((tmp_path / "out.fa").read_text())
    # db prints the whole header line (RNAfold's layout), its CRLF line end removed, and the sequence as
    # RNAfold prints it: the input's case, T as U
    assert [(i, s) for i, s, _, _ in folded] == [("w1 Windows", "gggaaaccc"), ("w2", "uugcaNNgcaa"),
                                                 ("z", "GGGGAAAACCCC")]
    for _, seq, structure, score in folded:
        assert score == nussinov_score(seq.upper())  # N pairs with nothing, in the reference as in rnapipe
        check_nussinov_structure(seq.upper(), structure, score)
    # the same file twice: a duplicate id across files
    proc = rnapipe("fold", "--algorithm", "nussinov", "win.fa", "win.fa", "-o", "twice.fa", cwd=tmp_path)
    assert proc.returncode == 2
    assert one_error_line(proc) == ("rnapipe: error: win.fa, record 'w1': duplicate id at line 1; first seen in "
                                    "win.fa line 1 (the same file given twice?)")
    assert not (tmp_path / "twice.fa").exists()


# ---------------------------------------------------------------------------------------------------------
# results


@needs_nussinov
@pytest.mark.parametrize("variant", ["naive", "transposed", "parallel"])
def test_output_in_input_order_and_correct(tmp_path, variant):
    records = random_fasta(tmp_path / "in.fa", 40, 1, 70, seed=len(variant))
    proc = rnapipe("fold", "--algorithm", "nussinov", "in.fa", "-o", "out.tsv", "--variant", variant, "--threads", 2, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = [line.split("\t") for line in (tmp_path / "out.tsv").read_text().splitlines()]
    assert rows[0][:4] == ["id", "length", "score", "structure"]
    assert [r[0] for r in rows[1:]] == [i for i, _ in records]
    for (rid, seq), (oid, length, score, structure, algorithm) in zip(records, rows[1:]):
        assert int(length) == len(seq) and algorithm == "nussinov"
        assert int(score) == nussinov_score(seq)
        check_nussinov_structure(seq, structure, int(score))


@needs_nussinov
def test_min_loop_reaches_the_engine(tmp_path):
    records = random_fasta(tmp_path / "in.fa", 8, 10, 40, seed=3)
    proc = rnapipe("fold", "--algorithm", "nussinov", "in.fa", "-o", "-", "--min-loop", 3, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    for (rid, seq), (oid, oseq, structure, score) in zip(records, parse_db(proc.stdout), strict=True):
        assert (oid, oseq) == (rid, seq)
        assert score == nussinov_score(seq, min_loop=3)
        check_nussinov_structure(seq, structure, score, min_loop=3)


@needs_nussinov
def test_formats_by_suffix_and_flag(tmp_path):
    from rnapipe import structure as S

    (tmp_path / "in.fa").write_text(">x\nGGGAAACCC\n>y\nGGGGAAAACCCC\n")
    expected = [("x", "GGGAAACCC", "(((...)))"), ("y", "GGGGAAAACCCC", "((((....))))")]
    for name in ("o.ct", "o.bpseq", "o.txt", "o.tsv"):
        assert rnapipe("fold", "--algorithm", "nussinov", "in.fa", "-o", name, cwd=tmp_path).returncode == 0
    assert [(t.split()[-1], s, S.dot_bracket(p)) for t, s, p in S.read_ct(tmp_path / "o.ct")] == expected
    assert [(c[0], s, S.dot_bracket(p)) for c, s, p in S.read_bpseq(tmp_path / "o.bpseq")] == expected
    assert [(i, s, d) for i, s, d, _ in parse_db((tmp_path / "o.txt").read_text())] == expected
    assert (tmp_path / "o.tsv").read_text().startswith("id\tlength\tscore\tstructure")
    proc = rnapipe("fold", "--algorithm", "nussinov", "-", "-o", "-", "--format", "ct", cwd=tmp_path, stdin=">x\nGGGAAACCC\n")
    assert proc.returncode == 0
    assert proc.stdout.startswith("    9  PAIRS = 3  x\n")


# ---------------------------------------------------------------------------------------------------------
# requests that cannot be honoured


@needs_nussinov
def test_unavailable_and_bad_usage(tmp_path):
    from rnapipe import engines

    (tmp_path / "in.fa").write_text(">x\nGGGAAACCC\n")
    if ("nussinov", "hybrid") not in engines._MODULES:
        proc = rnapipe("fold", "--algorithm", "nussinov", "in.fa", "-o", "o.fa", "--device", "hybrid", cwd=tmp_path)
        assert proc.returncode == 3
        assert "not available" in one_error_line(proc)
    if ("zuker", "cpu") not in engines._MODULES:
        proc = rnapipe("fold", "in.fa", "-o", "o.fa", "--algorithm", "zuker", cwd=tmp_path)
        assert proc.returncode == 3
        one_error_line(proc)
    cases = [
        (["--variant", "nope"], "unknown variant 'nope'"),
        (["--algorithm", "nope"], "invalid choice"),
        (["--threads", "0"], "must be at least 1"),
        (["--temperature", "25"], "--temperature applies to --algorithm zuker only"),
        (["--format", "xml"], "invalid choice"),
    ]
    for extra, words in cases:
        proc = rnapipe("fold", "--algorithm", "nussinov", "in.fa", "-o", "o.fa", *extra, cwd=tmp_path)
        assert proc.returncode == 2, extra
        assert words in one_error_line(proc)
    proc = rnapipe("fold", "--algorithm", "nussinov", "in.fa", cwd=tmp_path)     # no -o: stdout, as RNAfold
    assert proc.returncode == 0 and proc.stdout == ">x\nGGGAAACCC\n(((...))) (  3)\n", proc.stderr
    proc = rnapipe("fold", "--algorithm", "nussinov", "in.fa", "-o", "no/such/dir/o.fa", cwd=tmp_path)
    assert proc.returncode == 2 and "does not exist" in one_error_line(proc)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.fa"]


def test_eval(tmp_path):
    try:  # a build without rnapipe.energy: the command must say so (exit 3)
        available = hasattr(importlib.import_module("rnapipe.energy"), "eval_structure")
    except ImportError:
        available = False
    proc = rnapipe("eval", "GGGGAAAACCCC", "((((....))))", cwd=tmp_path)
    if not available:
        assert proc.returncode == 3
        assert "not available" in one_error_line(proc)
        return
    RNA = pytest.importorskip("RNA")
    assert proc.returncode == 0, proc.stderr
    energy = RNA.fold_compound("GGGGAAAACCCC").eval_structure("((((....))))")
    assert proc.stdout == "GGGGAAAACCCC\n((((....)))) (%6.2f)\n" % energy
    (tmp_path / "s.db").write_text(">a\nGGGGAAAACCCC\n((((....)))) (  9.99)\n>b\nACGUACGU\n........\n")
    proc = rnapipe("eval", "-i", "s.db", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    expected = "".join(">%s\n%s\n%s (%6.2f)\n" % (i, s, d, RNA.fold_compound(s).eval_structure(d))
                       for i, s, d in [("a", "GGGGAAAACCCC", "((((....))))"), ("b", "ACGUACGU", "........")])
    assert proc.stdout == expected


def test_eval_bad_structure(tmp_path):
    proc = rnapipe("eval", "GGGGAAAACCCC", "((((....)))", cwd=tmp_path)
    assert proc.returncode in (2, 3)
    line = one_error_line(proc)
    if proc.returncode == 2:
        assert "11 characters but the sequence has 12" in line
    proc = rnapipe("eval", "GGGG-AAACCCC", "((((....))))", cwd=tmp_path)
    assert proc.returncode == 2
    assert one_error_line(proc) == ("rnapipe: error: SEQUENCE argument, position 5: invalid character '-'; "
                                    "alignment gaps are not allowed")


# ---------------------------------------------------------------------------------------------------------
# interrupt and progress


@needs_nussinov
def test_interrupt_exits_130_and_leaves_nothing_under_the_output_name(tmp_path):
    """Ctrl-C: exit 130 and one line; nothing under the output's name; what was finished stays for a rerun
    (the journal and the part file) only if a chunk was finished, with the line saying how to go on."""
    random_fasta(tmp_path / "in.fa", 40, 1400, 1600, seed=7)
    # Ctrl-C reaches the command as a terminal's would: a process started in the background of a non-interactive
    # shell (`cmd &`, nohup) inherits SIGINT ignored, and so would the command, which then rightly folds on
    proc = subprocess.Popen([sys.executable, "-m", "rnapipe", "fold", "in.fa", "-o", "out.fa", "--algorithm",
                             "nussinov", "--variant", "naive", "--threads", "2", "-q"], cwd=tmp_path, env=_env(),
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(4)  # past start-up (imports, Numba's cache) and into the folding
    if proc.poll() is not None:
        _, err = proc.communicate()
        assert proc.returncode == 0, err
        pytest.skip("the run finished before it could be interrupted")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130
    assert err.splitlines()[-1] == "rnapipe: error: interrupted" and "Traceback" not in err
    left = sorted(p.name for p in tmp_path.iterdir())
    if left == ["in.fa"]:
        assert len(err.splitlines()) == 1
    else:
        assert left == ["in.fa", "out.fa.journal", "out.fa.part", "out.fa.rejected.tsv.part"], left
        assert "run the same command again to go on" in err


@needs_nussinov
@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
@pytest.mark.parametrize("quiet", [False, True])
def test_progress_bar_only_on_a_terminal(tmp_path, quiet):
    import fcntl
    import pty
    import struct
    import termios

    random_fasta(tmp_path / "in.fa", 60, 20, 30, seed=11)  # config.PROGRESS_MIN_SEQUENCES is 50
    master, slave = pty.openpty()
    # a real terminal has a size; a fresh pty has 0 rows, and tqdm draws nothing in 0 rows
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    args = [sys.executable, "-m", "rnapipe", "fold", "in.fa", "-o", "out.fa"] + (["-q"] if quiet else [])
    proc = subprocess.Popen(args, cwd=tmp_path, env=_env(), stderr=slave, stdout=subprocess.DEVNULL)
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    assert proc.wait(timeout=120) == 0
    if quiet:
        assert seen == b""
    else:
        assert b"/60" in seen
    # and never on a pipe
    piped = rnapipe("fold", "--algorithm", "nussinov", "in.fa", "-o", "out2.fa", cwd=tmp_path)
    assert piped.returncode == 0
    assert [line.split(" in ")[0] for line in piped.stderr.splitlines()] == ["rnapipe: folded 60 record(s)"]


# ---------------------------------------------------------------------------------------------------------
# a bug: one line asking for a report; the traceback only on request


@needs_nussinov
@pytest.mark.parametrize("debug", [False, True])
def test_internal_error_is_one_line(tmp_path, monkeypatch, capsys, debug):
    from rnapipe.pipeline.folding.folder import Folder
    from rnapipe.cli import main

    def broken(*args, **kwargs):
        raise RuntimeError("something\nunexpected")

    monkeypatch.setattr(Folder, "fold", broken)
    if debug:
        monkeypatch.setenv("RNAPIPE_DEBUG", "1")
    else:
        monkeypatch.delenv("RNAPIPE_DEBUG", raising=False)
    (tmp_path / "in.fa").write_text(">x\nGGGAAACCC\n")
    assert main(["fold", str(tmp_path / "in.fa"), "-o", str(tmp_path / "out.fa")]) == 1
    err = capsys.readouterr().err
    last = "rnapipe: error: internal error: RuntimeError: something unexpected (please report this bug; " \
           "RNAPIPE_DEBUG=1 shows the traceback)"
    if debug:
        assert "Traceback" in err and err.splitlines()[-1] == last
    else:
        assert err.splitlines() == [last]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.fa"]


def test_a_missing_parameter_file_is_named_as_what_it_is(tmp_path):
    """--params naming no file: one line about the parameter file, not about writing the output."""
    (tmp_path / "in.fa").write_text(">a\nGGGGAAAACCCC\n")
    proc = rnapipe("fold", "in.fa", "-o", "out.db", "--params", "missing.par", cwd=tmp_path)
    assert proc.returncode == 2
    line = one_error_line(proc)
    assert line.startswith("rnapipe: error: ") and line.endswith("missing.par: parameter file not found"), line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.fa"]


@pytest.mark.parametrize("value", ["2", "-0.1", "x"])
def test_partition_min_gain_is_a_share_from_0_to_1(tmp_path, value):
    proc = rnapipe("partition", "prep", "--profile", "p.json", "-o", "plan", "--min-gain", value, cwd=tmp_path)
    assert proc.returncode == 2
    assert "--min-gain" in one_error_line(proc)


def test_standard_output_closed_by_the_reader_stops_the_run(tmp_path):
    """`rnapipe fold big.fa -o - | head -3`: once the reader has gone, the run stops with the shell's code for a
    closed pipe (141) and no traceback, without folding the rest (the records are many units of work)."""
    random_fasta(tmp_path / "in.fa", 4000, 100, 200, seed=3)
    env = _env()
    env.pop("RNAPIPE_CHUNK_RECORDS", None)
    proc = subprocess.Popen([sys.executable, "-m", "rnapipe", "fold", "in.fa", "-o", "-", "--threads", "1"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    head = [proc.stdout.readline() for _ in range(3)]
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.wait(timeout=120)
    assert head[0].startswith(b">") and head[2].rstrip().endswith(b")")
    assert proc.returncode == 141, err
    assert "Traceback" not in err and "folded 4000" not in err
