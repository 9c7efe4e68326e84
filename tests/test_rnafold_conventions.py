"""``rnapipe fold`` against RNAfold's standard output, byte for byte.

The reference printer below builds what RNAfold prints for an MFE fold from ViennaRNA's Python API, after
RNAfold's own source (src/bin/RNAfold.c, ViennaRNA 2.x): for each record ``>`` and the whole FASTA header line
(trailing white space removed; no line for a sequence read without a header), the sequence in the case it
was given with T turned into U (kept with --noconv), then the MFE structure, a space and the energy as ``(%6.2f)``. ViennaRNA folds; rnapipe's code takes no
part in the expected bytes.
"""

from __future__ import annotations

import random
import subprocess

import pytest

from shared_data import DATA
from test_cli import one_error_line, rnapipe

RNA = pytest.importorskip("RNA")


# rnapipe.fold's names of RNAfold's pairing rules -> ViennaRNA's model details (RNAfold --noLP, --noGU,
# --noClosingGU, --maxBPspan set these)
RULES_MD = {"no_lp": "noLP", "no_gu": "noGU", "no_closing_gu": "noGUclosure", "max_bp_span": "max_bp_span"}

# RNAfold's default SHAPE method, Deigan's (--shapeMethod D): slope m and intercept b, kcal/mol
DEIGAN = (1.8, -0.6)

# ViennaRNA's MFE where the hard constraints leave no structure is its INF (10,000,000 dcal/mol); RNAfold -C
# then stops ("Supplied structure constraints create empty solution set"): at or above this, none
EMPTY_SOLUTION_SET_AT = 90_000.0


def rnafold_md(temperature: float | None = None, dangles: int | None = None, **rules):
    """ViennaRNA's model details as RNAfold sets them from -T, -d and the pairing rules (``no_lp=True`` for
    --noLP, ``max_bp_span=N`` for --maxBPspan N, ...)."""
    md = RNA.md()
    if temperature is not None:
        md.temperature = temperature
    if dangles is not None:
        md.dangles = dangles
    for name, value in rules.items():
        setattr(md, RULES_MD[name], int(value))
    return md


def rnafold_record(header: str | None, sequence: str, md, noconv: bool = False, constraint: str | None = None,
                   enforce_constraint: bool = False, shape=None, shape_method=DEIGAN) -> bytes | None:
    """What RNAfold prints (no -p) for one record under the model details ``md``, or None where RNAfold stops
    on it (its hard constraints leave no structure). As RNAfold's ``process_record``: the fold compound of the
    upper-cased sequence (T as U unless --noconv); with -C, ``constraint`` (the record's constraint line) added
    as ``vrna_constraints_add`` adds it, ``VRNA_CONSTRAINT_DB_DEFAULT`` (and ``VRNA_CONSTRAINT_DB_ENFORCE_BP``
    with --enforceConstraint); with --shape, ``shape`` (one reactivity a nucleotide, None where the file gives
    none) as Deigan's soft constraints from RNAfold's values array (``values[0] = 0``, then one a nucleotide,
    -1 where missing); then ``mfe()``. Printed: ``>`` and the header line (none for a headerless sequence),
    the sequence as given with T as U, the structure and the energy as `` (%6.2f)``; the constraint line is not
    printed."""
    printed = sequence if noconv else sequence.replace("T", "U").replace("t", "u")    # vrna_seq_toRNA
    fc = RNA.fold_compound(printed.upper(), md)
    if constraint is not None:
        fc.hc_add_from_db(constraint, RNA.CONSTRAINT_DB_DEFAULT
                          | (RNA.CONSTRAINT_DB_ENFORCE_BP if enforce_constraint else 0))
    if shape is not None:
        fc.sc_add_SHAPE_deigan([0.0] + [-1.0 if v is None else v for v in shape], *shape_method)
    structure, mfe = fc.mfe()
    if constraint is not None and mfe >= EMPTY_SOLUTION_SET_AT:
        return None
    head = f">{header.rstrip()}\n" if header is not None else ""
    return f"{head}{printed}\n{structure} ({mfe:6.2f})\n".encode()


def rnafold_stdout(records, temperature: float | None = None, dangles: int | None = None,
                   noconv: bool = False, constraints=None, enforce_constraint: bool = False, shape=None,
                   shape_method=DEIGAN, **rules) -> bytes:
    """RNAfold's stdout (no -p) for ``records``: (header line without '>', or None for a headerless sequence,
    sequence), folded with ``RNA.fold_compound(seq, md).mfe()`` under RNAfold's -T, -d, --noconv and the
    pairing rules (``no_lp=True`` for --noLP, ``max_bp_span=N`` for --maxBPspan N, ...); with -C, each record's
    constraint line in ``constraints`` (and ``enforce_constraint`` for --enforceConstraint); with --shape, each
    record's reactivities in ``shape`` (a list a record, None for a record without data), Deigan's method with
    ``shape_method``'s (m, b). See :func:`rnafold_record`; a record whose constraints leave no structure raises
    ValueError (RNAfold stops there)."""
    md = rnafold_md(temperature, dangles, **rules)
    out = []
    for k, (header, sequence) in enumerate(records):
        text = rnafold_record(header, sequence, md, noconv,
                              constraints[k] if constraints is not None else None, enforce_constraint,
                              shape[k] if shape is not None else None, shape_method)
        if text is None:
            raise ValueError(f"record {k + 1} ({header!r}): RNAfold stops, the constraints create an empty "
                             "solution set")
        out.append(text)
    return b"".join(out)


def fasta(records) -> str:
    return "".join(f">{h}\n{s}\n" for h, s in records)


def sample_of_shared_data(count: int, seed: int) -> list[tuple[str, str]]:
    """``count`` records (whole header lines kept) drawn from every set of ../shared/data: the FASTA
    transcripts and the sequences of the known structures (.dbn: header, sequence, structure)."""
    pools = []
    for path in sorted((DATA / "transcripts").glob("*.fa")):
        records, header, seq = [], None, []
        for line in path.read_text().splitlines() + [">"]:
            if line.startswith(">"):
                if header is not None and seq:
                    records.append((header, "".join(seq)))
                header, seq = line[1:], []
            else:
                seq.append(line.strip())
        pools.append(records)
    for path in sorted((DATA / "known").glob("*.dbn")):
        lines = path.read_text().splitlines()
        pools.append([(lines[k][1:], lines[k + 1].strip()) for k in range(0, len(lines) - 2, 3)
                      if lines[k].startswith(">")])
    rng = random.Random(seed)
    per_pool = max(1, count // len(pools))
    picked = []
    for pool in pools:
        pool = [r for r in pool if len(r[1]) <= 400]
        picked += rng.sample(pool, min(per_pool, len(pool)))
    seen, out = set(), []
    for header, seq in picked:                      # rnapipe refuses duplicate ids (a header's first word)
        key = header.split(None, 1)[0] if header.split() else ""
        if key and key not in seen:
            seen.add(key)
            out.append((header, seq))
    return out


def random_records(count: int, seed: int) -> list[tuple[str, str]]:
    """Random sequences with N and T (DNA letters become U in the output), some in lower case, headers with
    descriptions."""
    rng = random.Random(seed)
    out = []
    for k in range(count):
        n = rng.randint(1, 160)
        seq = "".join("N" if rng.random() < 0.03 else rng.choice("ACGUT") for _ in range(n))
        if k % 3 == 1:
            seq = seq.lower()
        elif k % 3 == 2:
            seq = "".join(c.lower() if rng.random() < 0.3 else c for c in seq)
        out.append((f"r{k} random sequence {k}  with N", seq))
    return out


OPTIONS = {"default": ([], {}), "d0": (["-d0"], {"dangles": 0}), "T25": (["-T", "25"], {"temperature": 25.0}),
           "d2-T60": (["-d", "2", "--temperature", "60"], {"dangles": 2, "temperature": 60.0}),
           "noLP": (["--noLP"], {"no_lp": True}), "noGU": (["--noGU"], {"no_gu": True}),
           "maxBPspan150": (["--maxBPspan", "150"], {"max_bp_span": 150}),
           "noClosingGU-d0-noLP-maxBPspan40": (["--noClosingGU", "-d0", "--noLP", "--maxBPspan=40"],
                                               {"no_closing_gu": True, "dangles": 0, "no_lp": True,
                                                "max_bp_span": 40})}


@pytest.mark.skipif(not (DATA / "transcripts").is_dir(), reason="../shared/data not present")
@pytest.mark.parametrize("name", sorted(OPTIONS))
def test_shared_data_prints_as_rnafold(tmp_path, name):
    flags, md = OPTIONS[name]
    records = sample_of_shared_data(300 if name == "default" else 120, seed=len(name))
    assert len(records) > 50
    path = tmp_path / "in.fa"
    path.write_text(fasta(records))
    proc = rnapipe("fold", str(path), "-q", *flags, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.encode() == rnafold_stdout(records, **md)


@pytest.mark.parametrize("name", sorted(OPTIONS))
def test_random_sequences_with_n_print_as_rnafold(tmp_path, name):
    flags, md = OPTIONS[name]
    records = random_records(80, seed=7 + len(name))
    path = tmp_path / "in.fa"
    path.write_text(fasta(records))
    out = tmp_path / "out.db"
    proc = rnapipe("fold", str(path), "-o", str(out), "-j2", "-q", *flags, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() == rnafold_stdout(records, **md)


@pytest.mark.skipif(not hasattr(RNA, "probing_data_deigan"), reason="ViennaRNA before 2.7: no probing API")
def test_printer_shape_is_rnafold_s_probing_path_and_an_empty_solution_set_is_none():
    """RNAfold 2.7+ applies --shape's Deigan method through the probing API (src/bin/probing_data_helpers.c:
    ``vrna_probing_data_deigan(values, m, b)`` then ``vrna_sc_probing``); the printer adds the same values with
    ``sc_add_SHAPE_deigan``: the same bytes. A constraint line that leaves no structure under
    --enforceConstraint gives None (RNAfold stops)."""
    from seqgen import random_seqs
    from test_constraints import random_reactivities

    rng = random.Random(4)
    md = rnafold_md()
    for k, seq in enumerate(random_seqs(40, 20, 200, seed=4)):
        values = random_reactivities(len(seq), rng)
        fc = RNA.fold_compound(seq, md)
        fc.sc_probing(RNA.probing_data_deigan([0.0] + [-1.0 if v is None else v for v in values], *DEIGAN))
        structure, mfe = fc.mfe()
        assert rnafold_record(f"s{k}", seq, md, shape=values) == f">s{k}\n{seq}\n{structure} ({mfe:6.2f})\n".encode()
    assert rnafold_record("none", "AAAAAAAAA", md, constraint="|........", enforce_constraint=True) is None
    assert rnafold_record("free", "AAAAAAAAA", md, constraint="|........") == b">free\nAAAAAAAAA\n......... (  0.00)\n"
    with pytest.raises(ValueError, match="empty solution set"):
        rnafold_stdout([("none", "AAAAAAAAA")], constraints=["|........"], enforce_constraint=True)


def test_low_energies_and_long_sequences_print_as_rnafold(tmp_path):
    """Energies of -100 kcal/mol and below take more than %6.2f's six characters; long sequences stay on
    one line."""
    rng = random.Random(3)
    stem = "".join(rng.choice("GC") for _ in range(60))
    pair = {"G": "C", "C": "G"}
    hairpin = stem + "GAAA" + "".join(pair[c] for c in reversed(stem))
    records = [("gc-hairpin", hairpin), ("long", "".join(rng.choice("ACGU") for _ in range(1200)))]
    expected = rnafold_stdout(records)
    assert b"(-1" in expected.split(b"\n")[2] and len(expected.split(b"\n")[2]) == len(hairpin) + 10
    path = tmp_path / "in.fa"
    path.write_text(fasta(records))
    proc = rnapipe("fold", str(path), "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.encode() == expected


HEADERLESS = ["GGGGAAAACCCC", "acgtNNacguGGGAAACCC", "UUUUUUUUUU", "GCGCAAAAGCGCttttGCGCAAAAGCGC"]


def test_headerless_stdin_prints_as_rnafold(tmp_path):
    """``echo SEQ | rnapipe fold -`` and ``... | rnapipe fold`` (no INPUT, stdin not a terminal): one
    sequence a line, no header line printed, as RNAfold; blank and comment lines skipped."""
    text = "\n".join(HEADERLESS[:2]) + "\n\n# a comment\n" + "\n".join(HEADERLESS[2:]) + "\n"
    expected = rnafold_stdout([(None, s) for s in HEADERLESS])
    for args in (("fold", "-", "-q"), ("fold", "-q")):
        proc = rnapipe(*args, cwd=tmp_path, stdin=text)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.encode() == expected


def test_headerless_file_ids_in_the_other_formats(tmp_path):
    """A headerless file's records take RNAfold's --auto-id ids (sequence_0001, counted over all inputs) in
    TSV; db prints no header line."""
    first = tmp_path / "a.fa"
    first.write_text(">x one\nGGGGAAAACCCC\n")
    plain = tmp_path / "seqs.txt"
    plain.write_text("\n".join(HEADERLESS) + "\n")
    proc = rnapipe("fold", str(first), str(plain), "-o", str(tmp_path / "out"), "--format", "db,tsv", "-q",
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    records = [("x one", "GGGGAAAACCCC")] + [(None, s) for s in HEADERLESS]
    assert (tmp_path / "out.db").read_bytes() == rnafold_stdout(records)
    rows = (tmp_path / "out.tsv").read_text().splitlines()[1:]
    assert [r.split("\t")[0] for r in rows] == ["x", "sequence_0002", "sequence_0003", "sequence_0004",
                                                "sequence_0005"]


def test_headerless_errors_name_the_line_of_the_file(tmp_path):
    """A headerless file's records are read as FASTA with made-up headers; errors still name the file's own
    lines (blank and comment lines counted), in both readers: the command's (its fast path over many blocks,
    through a duplicate id, and its exact path, through an invalid character) and rnapipe.io.read_records."""
    from rnapipe.io import read_records

    rng = random.Random(11)
    lines, seq_lines = [], []                  # the file's lines; the line number of each sequence
    for k in range(3000):
        if rng.random() < 0.1:
            lines.append(rng.choice(["", "# a comment", "; another", " indented comment"]))
        lines.append("".join(rng.choice("ACGU") for _ in range(rng.randint(20, 60))))
        seq_lines.append(len(lines))
    bad = 2900                                                   # sequence_2901 gets an X at position 7
    lines[seq_lines[bad] - 1] = lines[seq_lines[bad] - 1][:6] + "X" + lines[seq_lines[bad] - 1][7:]
    plain = tmp_path / "plain.txt"
    plain.write_text("\n".join(lines) + "\n")
    proc = rnapipe("fold", str(plain), "-q", "-o", str(tmp_path / "out.db"), cwd=tmp_path)
    line = one_error_line(proc)
    assert f"record 'sequence_{bad + 1:04d}', position 7" in line and f"at line {seq_lines[bad]};" in line, line
    rejected = []
    assert len(list(read_records(plain, on_invalid="skip", rejected=rejected))) == 2999
    assert f"at line {seq_lines[bad]};" in rejected[0].reason, rejected[0].reason

    lines[seq_lines[bad] - 1] = "ACGU"
    plain.write_text("\n".join(lines) + "\n")
    other = tmp_path / "other.fa"                                # an id that the plain file's record 2,500 has
    other.write_text(">x\nGGGAAACCC\n>sequence_2500\nGGGGAAAACCCC\n")
    proc = rnapipe("fold", str(plain), str(other), "-q", "-o", str(tmp_path / "out.db"), cwd=tmp_path)
    line = one_error_line(proc)
    assert f"first seen in {plain} line {seq_lines[2499]}" in line and "at line 3" in line, line


def test_noconv_prints_t_as_given(tmp_path):
    """--noconv: the input's letters as given (T, t, case) in db, the fold the same as with U."""
    records = random_records(40, seed=5)
    path = tmp_path / "in.fa"
    path.write_text(fasta(records))
    proc = rnapipe("fold", str(path), "--noconv", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.encode() == rnafold_stdout(records, noconv=True)
    assert b"T" in proc.stdout.encode()


def test_rnafold_options(tmp_path):
    """-j (bare: every core; attached or apart: a number), --noPS ignored, stdout without -o; -d1 and -d3
    refused in one line (not supported yet); --threads with -j refused."""
    path = tmp_path / "in.fa"
    records = random_records(10, seed=11)
    path.write_text(fasta(records))
    expected = rnafold_stdout(records)
    for flags in (["-j"], ["-j2"], ["-j", "2"], ["--jobs=1"], ["--jobs"], ["--noPS"], ["-j0"]):
        order = [*flags, str(path)] if flags in (["-j"], ["--jobs"]) else [str(path), *flags]
        proc = rnapipe("fold", *order, "-q", cwd=tmp_path)
        assert proc.returncode == 0, (flags, proc.stderr)
        assert proc.stdout.encode() == expected, flags
    for flags, words in ((["-d1"], "-d1"), (["-d", "3"], "-d3"),
                         (["-j", "2", "--threads", "2"], "not both")):
        proc = rnapipe("fold", str(path), *flags, cwd=tmp_path)
        assert proc.returncode == 2 and words in one_error_line(proc), (flags, proc.stderr)


def test_pairing_rules_bad_values_are_refused_in_one_line_and_every_device_takes_them(tmp_path):
    """--maxBPspan 0, negative or not a whole number; a rule with --algorithm nussinov: refused in one line,
    nothing written. --device gpu and hybrid take the rules (without a GPU the one refusal is the missing GPU's,
    naming no rule); --device auto folds them where it folds without them (here, without a GPU, on the CPU), as
    RNAfold prints them."""
    from rnapipe.gpu.devices import gpu_available

    path = tmp_path / "in.fa"
    records = random_records(12, seed=21)
    path.write_text(fasta(records))
    for flags, words in ((["--maxBPspan", "0"], "--maxBPspan: must be at least 1"),
                         (["--maxBPspan", "-5"], "--maxBPspan: must be at least 1"),
                         (["--maxBPspan", "1.5"], "--maxBPspan: not a whole number"),
                         (["--maxBPspan", "many"], "--maxBPspan: not a whole number"),
                         (["--noLP", "--algorithm", "nussinov"], "--noLP applies to --algorithm zuker only")):
        proc = rnapipe("fold", str(path), *flags, cwd=tmp_path)
        assert proc.returncode == 2, (flags, proc.stderr)
        assert words in one_error_line(proc), (flags, proc.stderr)
        assert proc.stdout == "" and "Traceback" not in proc.stderr
    expected = rnafold_stdout(records, no_lp=True, max_bp_span=30)
    for device in ("gpu", "hybrid", "auto"):
        proc = rnapipe("fold", str(path), "--device", device, "--noLP", "--maxBPspan", "30", "-j1", cwd=tmp_path)
        if gpu_available() or device == "auto":
            assert proc.returncode == 0, (device, proc.stderr)
            assert proc.stdout.encode() == expected, device
        else:
            assert proc.returncode != 0 and proc.stdout == "", device
            line = one_error_line(proc)
            assert "GPU" in line and "--noLP" not in line and "--maxBPspan" not in line, (device, line)
    if not gpu_available():
        assert "--device auto: cpu" in proc.stderr


def test_no_input_on_a_terminal_is_refused(tmp_path):
    """No INPUT and stdin a terminal: one line, not a wait for typing."""
    import os
    import pty

    main, child = pty.openpty()
    try:
        proc = subprocess.run(rnapipe_command("fold"), stdin=child, capture_output=True, text=True, cwd=tmp_path,
                              timeout=120, env=_env())
    finally:
        os.close(child)
        os.close(main)
    assert proc.returncode == 2 and "no input" in proc.stderr


def rnapipe_command(*args) -> list[str]:
    import sys

    return [sys.executable, "-m", "rnapipe", *args]


def _env() -> dict:
    from test_cli import _env as env

    return env()


def test_format_conflicts_are_refused_in_one_line(tmp_path):
    path = tmp_path / "in.fa"
    path.write_text(">a\nGGGGAAAACCCC\n")
    for args, words in (
            (["--format", "db", "--format", "tsv"], "given twice"),
            (["-o", "x.tsv", "--format", "db"], "make them agree"),
            (["-o", "x.tsv", "--format", "db,tsv"], "has no format suffix"),
            (["-o", "x", "--format", "db,db"], "names a format twice"),
            (["--gpus", "0"], "--device gpu or hybrid")):
        proc = rnapipe("fold", str(path), *args, cwd=tmp_path)
        assert proc.returncode == 2, (args, proc.stderr)
        assert words in one_error_line(proc), (args, proc.stderr)
    assert not list(tmp_path.glob("x*"))


def test_gz_prefix_with_several_formats_gzips_each(tmp_path):
    import gzip

    path = tmp_path / "in.fa"
    records = [("a first", "GGGGAAAACCCC"), ("b", "GCGCAAAAGCGC")]
    path.write_text(fasta(records))
    proc = rnapipe("fold", str(path), "-o", str(tmp_path / "out.gz"), "--format", "db,tsv", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.glob("out*")) == ["out.db.gz", "out.tsv.gz"]
    assert gzip.decompress((tmp_path / "out.db.gz").read_bytes()) == rnafold_stdout(records)
    assert gzip.decompress((tmp_path / "out.tsv.gz").read_bytes()).startswith(b"id\tlength")


def test_api_errors_speak_no_command_line():
    import rnapipe as api
    from rnapipe.errors import RnapipeError

    with pytest.raises(RnapipeError) as err:
        api.fold(["GGGGAAAACCCC"], gpus=[0])
    assert "--" not in str(err.value), str(err.value)
