"""Hard constraints (RNAfold's -C line and --enforceConstraint) on the GPU Zuker engine: MFE and structure identical
to the CPU engine's (rnapipe.cpu.zuker, itself tested against ViennaRNA with constraint lines in
tests/test_constraints.py), on random constraint lines (test_constraints.random_constraint: constrained pairs
canonical or not, x | < >), with and without --enforceConstraint, with the pairing rules (no_lp with constrained
non-canonical pairs, a constrained pair longer than max_bp_span) and SHAPE data, on every fill and traceback:

* the short kernels (zs_fold_smem two sequences a block up to 120 nt, one a block up to 500 nt, its int16 ring's
  refold included; zs_fold up to 600), which fold_batch takes for every sequence up to short_max_n() (zs_fold only
  where forced);
* zk_fill_block, zk_fill_diag and the tiled fill, forced with ``gpu_fill``, with the block and the thread GPU
  tracebacks (``gpu_traceback``) and the CPU engine's traceback on copied matrices (``host_traceback``);
* records whose constraints leave no structure: the CPU engine's energy (INF, which the pipeline reports), no
  failure;
* the hybrid folder (a batch with constraint lines goes to its GPU) and ``rnapipe fold -C --device gpu`` and
  ``--device hybrid``, byte for byte the output and the rejected list of ``--device cpu``.
"""

from __future__ import annotations

import random

import pytest
from seqgen import random_seqs
from test_constraints import random_constraint

from rnapipe.cpu import zuker as cpu
from rnapipe.params import INF

pytestmark = pytest.mark.gpu

THREADS = 16

RULES = {"none": {}, "noLP": {"no_lp": True},
         "all": {"no_lp": True, "no_gu": True, "no_closing_gu": True, "max_bp_span": 60}}
TEST_ONLY = ("gpu_fill", "gpu_traceback", "host_traceback")


def _gpu():
    from rnapipe.gpu import zuker as gpu
    return gpu


def constraint_lines(seqs: list[str], seed: int) -> list[str]:
    """A random constraint line for each sequence (random_constraint's); one in three keeps only its brackets, one
    in eight is all dots, so that enforced lines leave most records a structure."""
    rng = random.Random(seed)
    out = []
    for s in seqs:
        line = random_constraint(s, rng)
        u = rng.random()
        if u < 0.125:
            line = "." * len(s)
        elif u < 0.45:
            line = "".join(c if c in "()." else "." for c in line)
        out.append(line)
    return out


def _assert_same(seqs, options, constraints, shape=None):
    """The GPU engine's (energy, structure) of every record equal the CPU engine's; where the constraints leave no
    structure (energy INF, never written: the pipeline reports the record), the energy alone."""
    ours = _gpu().fold_batch(seqs, "default", THREADS, options, constraints=constraints, shape=shape)
    ref = cpu.fold_batch(seqs, "default", THREADS, {k: v for k, v in options.items() if k not in TEST_ONLY},
                         constraints=constraints, shape=shape)
    wrong = [(len(s), s, c, o, r) for s, c, o, r in zip(seqs, constraints, ours, ref)
             if (o[0] != r[0] if r[0] >= INF else o != r)]
    assert not wrong, f"{len(wrong)} of {len(seqs)} differ; first: {wrong[0]}"
    return ref


def _every_path(seed: int) -> list[str]:
    """Lengths of each of fold_batch's paths (some with N): <= 120, <= 232 and 233-600 (zs_fold_smem up to
    short_max_n(), the tiled fill beyond), and longer ones."""
    return (random_seqs(40, 1, 120, seed=seed, n_rate=0.02) + random_seqs(12, 121, 232, seed=seed + 1, n_rate=0.02)
            + random_seqs(6, 233, 600, seed=seed + 2, n_rate=0.02) + random_seqs(1, 700, 1200, seed=seed + 3)
            + ["GGGGAAAACCCC", "GGGGAAAACCCC" * 12, "N" * 50, "A"])


@pytest.mark.parametrize("rules, dangles", [("none", 2), ("none", 0), ("noLP", 2), ("all", 0), ("all", 2)])
@pytest.mark.parametrize("enforce", [False, True], ids=["plain", "enforce"])
def test_default_paths_equal_the_cpu_engine(rules, dangles, enforce):
    seqs = _every_path(seed=300 + dangles + len(rules))
    lines = constraint_lines(seqs, seed=dangles + 3 * len(rules) + enforce)
    ref = _assert_same(seqs, {**RULES[rules], "dangles": dangles, "enforce_constraint": enforce}, lines)
    plain = cpu.fold_batch(seqs, "default", THREADS, {**RULES[rules], "dangles": dangles})
    assert sum(a != b for a, b in zip(ref, plain)) > len(seqs) // 4          # the lines change many folds


FILLS = [("short", None, False), ("block", "block", False), ("block", "thread", False), ("block", None, True),
         ("diag", "block", False), ("diag", "thread", False), ("diag", None, True), ("tiled", "block", False),
         ("tiled", "thread", False), ("tiled", None, True)]


@pytest.mark.parametrize("fill, traceback, host", FILLS, ids=lambda x: str(x))
@pytest.mark.parametrize("rules, enforce", [("none", False), ("none", True), ("all", True)],
                         ids=["none", "none-enforce", "all-enforce"])
def test_every_fill_and_traceback(rules, enforce, fill, traceback, host):
    """Each fill forced on sequences of 1-400 nt (and the longer fills on 600-1,000 too), with each traceback, with
    and without --enforceConstraint, with all the pairing rules at -d0."""
    seqs = random_seqs(24, 1, 400, seed=61, n_rate=0.02) + ["GGGGAAAACCCC" * 20]
    if fill != "short":
        seqs += random_seqs(2, 600, 1000, seed=62)
    lines = constraint_lines(seqs, seed=64 + enforce + len(rules))
    options = {**RULES[rules], "dangles": 2 if rules == "none" else 0, "gpu_fill": fill, "host_traceback": host,
               "enforce_constraint": enforce}
    if traceback:
        options["gpu_traceback"] = traceback
    _assert_same(seqs, options, lines)


@pytest.mark.parametrize("traceback, host", [("block", False), (None, True)])
@pytest.mark.parametrize("enforce", [False, True], ids=["plain", "enforce"])
def test_long_sequences_on_the_tiled_fill(traceback, host, enforce):
    """1,500-2,000 nt (the tiled fill's path, whose middle products take the unpaired runs row by row with
    --enforceConstraint), with the block traceback and the CPU engine's on copied matrices."""
    seqs = random_seqs(3, 1500, 2000, seed=71, n_rate=0.01)
    rng = random.Random(72)
    lines = [random_constraint(s, rng) for s in seqs]
    lines[1] = "".join(c if c in "()." else "." for c in lines[1])
    lines[2] = "".join("|" if k % 97 == 5 else "." for k in range(len(seqs[2])))
    options = {"gpu_fill": "tiled", "host_traceback": host, "enforce_constraint": enforce}
    if traceback:
        options["gpu_traceback"] = traceback
    _assert_same(seqs, options, lines)


def test_non_canonical_pairs_span_and_no_lp():
    """Constrained non-canonical pairs (ViennaRNA's non-standard type: its energies are the CPU engine's), a
    constrained pair longer than max_bp_span (the fill, W and the traceback cover it), and under no_lp pairs that
    could stack only on a constrained non-canonical pair, on the short path and each long fill."""
    rng = random.Random(5)
    seqs, lines = [], []
    for n in (40, 90, 150, 300, 700):
        s = "".join(rng.choice("ACGU") for _ in range(n))
        for i, j in ((2, n - 3), (n // 4, n // 4 + 14)):        # A.A, C.C, G.A ... whatever the letters are
            s = s[:i] + "A" + s[i + 1:j] + "A" + s[j + 1:]
        line = ["."] * n
        line[2], line[n - 3] = "(", ")"
        line[n // 4], line[n // 4 + 14] = "(", ")"
        seqs.append(s)
        lines.append("".join(line))
    for fill in (None, "block", "diag", "tiled"):
        for rules in ({}, {"no_lp": True}, {"max_bp_span": 30}, {"no_lp": True, "no_gu": True, "max_bp_span": 30}):
            for enforce in (False, True):
                options = {**rules, "enforce_constraint": enforce}
                if fill:
                    options["gpu_fill"] = fill
                ref = _assert_same(seqs, options, lines)
                if enforce and not rules.get("no_lp"):         # the non-canonical pairs are there
                    assert all(e < INF and db[2] == "(" and db[-3] == ")" for e, db in ref)


def test_with_shape_data():
    """Constraint lines and SHAPE data together (ZK_HC with ZK_SHAPE), with and without the rules."""
    from test_zuker_gpu_shape import METHODS, shape_terms

    seqs = _every_path(seed=400)
    lines = constraint_lines(seqs, seed=401)
    shape = shape_terms(seqs, METHODS["D"], seed=402)
    for options in ({}, {"enforce_constraint": True}, {**RULES["all"], "enforce_constraint": True}):
        _assert_same(seqs, options, lines, shape)
    for fill in ("block", "tiled"):
        _assert_same(seqs[-8:], {"gpu_fill": fill, "no_lp": True, "enforce_constraint": True}, lines[-8:],
                     shape[-8:])
    # large pseudo-energies (slope 40 kcal/mol) push zs_fold_smem's int16 ring past its range: those sequences are
    # folded again with the int32 ring, their constraint lines with them
    short = random_seqs(30, 20, 200, seed=403)
    _assert_same(short, {"enforce_constraint": True}, constraint_lines(short, seed=404),
                 shape_terms(short, (40.0, -0.6), seed=405))


@pytest.mark.parametrize("fill", [None, "block", "diag", "tiled"])
def test_no_structure_records(fill):
    """Records whose enforced constraints leave no structure (a nucleotide that must pair and has no partner) get
    the CPU engine's energy, INF, beside records that fold, on every path; nothing fails."""
    seqs = ["A" * 40, "GGGAAACCC", "A" * 12, "GGGGAAAACCCC" * 3, "A" * 700, "GGGAAAUCCC" * 70]
    lines = ["." * 20 + "|" + "." * 19, ".........", "|" + "." * 11, "x" * 36, "." * 350 + "|" + "." * 349,
             "." * 700]
    options = {"enforce_constraint": True}
    if fill:
        options["gpu_fill"] = fill
    ref = _assert_same(seqs, options, lines)
    assert [e >= INF for e, _ in ref] == [True, False, True, False, True, False]


def test_hybrid_takes_constraints():
    """The hybrid folder with constraint lines: the batch on its GPU, the CPU engine's results."""
    from rnapipe.pipeline.records import Records
    from test_zuker_gpu_options import static_hybrid

    seqs = random_seqs(60, 5, 300, seed=91)
    lines = constraint_lines(seqs, seed=92)
    parts = [Records.from_lists([f"r{k}" for k in range(len(seqs))], seqs, range(len(seqs)), constraints=lines)]
    folder, cpu_folder = static_hybrid({"enforce_constraint": True})
    scores, text = folder.fold_packed(parts)
    want_scores, want_text = cpu_folder.fold_packed(parts)
    assert scores.tolist() == want_scores.tolist()
    assert text == want_text


def test_cli_gpu_and_hybrid_equal_cpu_byte_for_byte(tmp_path):
    """``rnapipe fold -C --device gpu`` and ``--device hybrid`` (with --enforceConstraint and --on-invalid skip, with
    --noLP too) write what ``--device cpu`` writes: the structures, the TSV and the rejected list (records whose
    constraints leave no structure)."""
    from test_cli import rnapipe as run_rnapipe

    seqs = random_seqs(30, 10, 300, seed=101, n_rate=0.02) + random_seqs(1, 650, 800, seed=102)
    lines = constraint_lines(seqs, seed=103)
    seqs += ["AAAAAAAAAAAA"]
    lines += ["|..........."]                                   # no structure under --enforceConstraint
    fa = tmp_path / "in.fa"
    fa.write_text("".join(f">r{k}\n{s}\n{c}\n" for k, (s, c) in enumerate(zip(seqs, lines))))
    for more in ([], ["--enforceConstraint", "--on-invalid", "skip"],
                 ["--enforceConstraint", "--on-invalid", "skip", "--noLP"]):
        out = {}
        for device in ("cpu", "gpu", "hybrid"):
            d = tmp_path / device
            d.mkdir(exist_ok=True)
            proc = run_rnapipe("fold", fa, "-C", *more, "--device", device, "-q", "-o", d / "o.db", "-o",
                               d / "o.tsv", cwd=tmp_path)
            assert proc.returncode == 0, proc.stderr
            rejected = d / "o.db.rejected.tsv"
            out[device] = ((d / "o.db").read_bytes(), (d / "o.tsv").read_bytes(),
                           rejected.read_bytes() if rejected.exists() else None)
        assert out["gpu"] == out["cpu"], more
        assert out["hybrid"] == out["cpu"], more
        left_out = out["cpu"][2].decode().count("no structure") if out["cpu"][2] else 0
        assert out["cpu"][0].count(b">") == len(seqs) - left_out
        assert (left_out > 0 and f">r{len(seqs) - 1}\n".encode() not in out["cpu"][0]) == bool(more)
