"""Nussinov on the CPU: every variant against the references of tests/naive.py."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from naive import (PAIRS, check_nussinov_structure, enumerate_structures, is_valid_pairing, nussinov_score,
                   nussinov_scores_batch, pairs_of)
from rnapipe import config
from rnapipe.cpu import nussinov
from rnapipe.errors import UsageError

VARIANTS = nussinov.VARIANTS
IUPAC = "NRYKMSWBDHV"


def random_sequences(count: int, max_length: int, seed: int, iupac: float = 0.05) -> list[str]:
    """Seeded random sequences, lengths 0..max_length, a share of them with IUPAC codes sprinkled in."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        n = rng.randint(0, max_length)
        letters = [rng.choice("ACGU") for _ in range(n)]
        if rng.random() < 0.3:
            for p in range(n):
                if rng.random() < iupac:
                    letters[p] = rng.choice(IUPAC)
        out.append("".join(letters))
    return out


def check_all(seqs, results, expected, min_loop):
    assert len(results) == len(seqs)
    for seq, (score, structure), want in zip(seqs, results, expected):
        assert score == want, (seq, score, want)
        assert isinstance(score, int)
        check_nussinov_structure(seq, structure, score, min_loop)


# ------------------------------------------------------------------------------------------- references

def test_batch_reference_agrees_with_memoized_recursion():
    seqs = random_sequences(400, 60, seed=11)
    for min_loop in (0, 1, 3):
        assert nussinov_scores_batch(seqs, min_loop) == [nussinov_score(s, min_loop) for s in seqs]


# ------------------------------------------------------------------------------------ random sequences

@pytest.fixture(scope="module")
def ten_thousand():
    seqs = random_sequences(10_000, 80, seed=2026)
    return seqs, nussinov_scores_batch(seqs, config.NUSSINOV_MIN_LOOP)


# Small tiles put many tile rows and tile diagonals into an 80-nt matrix; the default tile covers it in 1-2.
@pytest.mark.parametrize("variant, tile", [("naive", None), ("transposed", None), ("transposed", 7),
                                           ("parallel", None), ("parallel", 7)])
def test_every_variant_equals_reference_on_10000_random_sequences(ten_thousand, variant, tile):
    seqs, expected = ten_thousand
    results = nussinov.fold_batch(seqs, variant, threads=2, options={"tile": tile})
    check_all(seqs, results, expected, config.NUSSINOV_MIN_LOOP)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("min_loop", [0, 1, 2, 3])
def test_min_loop(variant, min_loop):
    seqs = random_sequences(1_500, 70, seed=100 + min_loop)
    expected = nussinov_scores_batch(seqs, min_loop)
    results = nussinov.fold_batch(seqs, variant, threads=2, options={"min_loop": min_loop, "tile": 5})
    check_all(seqs, results, expected, min_loop)


def test_default_min_loop_is_the_papers():
    # C(i, i+1) = 0 but C(i, i+2) may be 1: "AU" cannot pair, "AAU" can.
    assert config.NUSSINOV_MIN_LOOP == 1
    for variant in VARIANTS:
        assert nussinov.fold_batch(["AU", "AAU", "GC", "GAC"], variant, 1, {}) == [
            (0, ".."), (1, "(.)"), (0, ".."), (1, "(.)")]


@settings(max_examples=150, deadline=None)
@given(seq=st.text(alphabet="ACGUN", max_size=60), min_loop=st.integers(0, 3),
       tile=st.integers(1, 20), threads=st.integers(1, 3))
def test_hypothesis_matches_memoized_recursion(seq, min_loop, tile, threads):
    want = nussinov_score(seq, min_loop)
    for variant in VARIANTS:
        [(score, structure)] = nussinov.fold_batch([seq], variant, threads, {"min_loop": min_loop, "tile": tile})
        assert score == want
        check_nussinov_structure(seq, structure, score, min_loop)


# ---------------------------------------------------------------------------------------- brute force

def brute_force(seq: str, min_loop: int) -> int:
    best = 0
    for pairs in enumerate_structures(seq, min_loop):
        assert is_valid_pairing(pairs, len(seq))
        best = max(best, len(pairs))
    return best


def test_brute_force_every_sequence_up_to_6():
    seqs = ["".join(p) for n in range(7) for p in itertools.product("ACGU", repeat=n)]
    expected = [brute_force(s, 1) for s in seqs]
    for variant in VARIANTS:
        check_all(seqs, nussinov.fold_batch(seqs, variant, 2, {"tile": 2}), expected, 1)


@pytest.mark.parametrize("min_loop", [1, 2, 3])
def test_brute_force_random_up_to_12(min_loop):
    rng = random.Random(min_loop)
    # Mostly G/C/U so that many pairs are possible and the enumeration has real choices to make.
    seqs = ["".join(rng.choice("ACGU" if k % 2 else "GCUG") for _ in range(rng.randint(7, 12)))
            for k in range(120)]
    expected = [brute_force(s, min_loop) for s in seqs]
    for variant in VARIANTS:
        check_all(seqs, nussinov.fold_batch(seqs, variant, 2, {"min_loop": min_loop, "tile": 3}),
                  expected, min_loop)


# ------------------------------------------------------------------------------------------ edge cases

@pytest.mark.parametrize("variant", VARIANTS)
def test_empty_and_tiny_sequences(variant):
    seqs = ["", "A", "G", "N", "GC", "GGC", "GNC", "GAAAC"]
    results = nussinov.fold_batch(seqs, variant, 2, {})
    assert results == [(0, ""), (0, "."), (0, "."), (0, "."), (0, ".."), (1, "(.)"), (1, "(.)"), (1, "(...)")]
    assert nussinov.fold_batch([], variant, 2, {}) == []


@pytest.mark.parametrize("variant", VARIANTS)
def test_iupac_codes_never_pair(variant):
    rng = random.Random(5)
    seqs = ["N" * 30, "".join(rng.choice(IUPAC) for _ in range(50))]
    seqs += ["".join(rng.choice("GCNRY") for _ in range(rng.randint(3, 60))) for _ in range(200)]
    results = nussinov.fold_batch(seqs, variant, 2, {"tile": 4})
    assert results[0] == (0, "." * 30) and results[1] == (0, "." * 50)
    for seq, (score, structure) in zip(seqs, results):
        assert score == nussinov_score(seq)
        for i, j in pairs_of(structure):
            assert (seq[i], seq[j]) in PAIRS


def test_threads_do_not_change_results():
    seqs = random_sequences(300, 200, seed=9)
    for variant in ("naive", "transposed"):
        assert (nussinov.fold_batch(seqs, variant, 1, {}) == nussinov.fold_batch(seqs, variant, 2, {}))
    # One long sequence over many tile diagonals: the parallel fill must not depend on the thread count.
    rng = random.Random(4)
    long_seqs = ["".join(rng.choice("ACGU") for _ in range(n)) for n in (333, 700)]
    one = nussinov.fold_batch(long_seqs, "parallel", 1, {"tile": 16})
    for threads in (2, 3):
        assert nussinov.fold_batch(long_seqs, "parallel", threads, {"tile": 16}) == one


def test_long_sequences_agree_across_variants_and_tiles():
    rng = random.Random(12)
    seqs = ["".join(rng.choice("ACGU") for _ in range(n)) for n in (1000, 1537)]
    want = nussinov.fold_batch(seqs, "naive", 2, {})
    for variant, tile in (("transposed", None), ("transposed", 1), ("transposed", 100), ("parallel", 32)):
        got = nussinov.fold_batch(seqs, variant, 2, {"tile": tile})
        assert [s for s, _ in got] == [s for s, _ in want]
        for seq, (score, structure) in zip(seqs, got):
            check_nussinov_structure(seq, structure, score)


def test_int32_cells_give_the_same_scores(monkeypatch):
    # Sequences longer than 65,535 nt switch to int32 cells; force that path on short ones.
    monkeypatch.setattr(nussinov, "_INT16_MAX_LENGTH", 10)
    seqs = random_sequences(500, 80, seed=21)
    expected = nussinov_scores_batch(seqs)
    for variant in VARIANTS:
        check_all(seqs, nussinov.fold_batch(seqs, variant, 2, {"tile": 6}), expected, 1)


def test_results_in_input_order_and_progress():
    seqs = random_sequences(120, 90, seed=3)
    for variant in VARIANTS:
        seen = []
        results = nussinov.fold_batch(seqs, variant, 2, {}, progress=seen.append)
        assert sum(seen) == len(seqs)
        assert [len(structure) for _, structure in results] == [len(s) for s in seqs]


# --------------------------------------------------------------------------------------------- interface

def test_interface():
    assert VARIANTS[0] == "transposed" and set(VARIANTS) == {"naive", "transposed", "parallel"}
    for variant in VARIANTS:
        assert nussinov.bytes_needed(1000, variant) >= 1000 * 1000 * 2
        assert nussinov.bytes_needed(70_000, variant) >= 70_000 ** 2 * 4
        assert nussinov.bytes_needed(0, variant) < 1000


@pytest.mark.parametrize("options", [{"min_loop": -1}, {"min_loop": 1.5}, {"min_loop": True}, {"tile": 0},
                                     {"temperature": 37}])
def test_bad_options_are_usage_errors(options):
    with pytest.raises(UsageError):
        nussinov.fold_batch(["GGGAAACCC"], "transposed", 1, options)


def test_unknown_variant_is_a_usage_error():
    with pytest.raises(UsageError):
        nussinov.fold_batch(["GGGAAACCC"], "cubic", 1, {})


def test_engine_registry_finds_it():
    from rnapipe.engines import get_engine
    module, variant = get_engine("nussinov", "cpu", None)
    assert module is nussinov and variant == VARIANTS[0]
    assert np.dtype(nussinov._cell_dtype(100)) == np.int16


# ------------------------------------------------------------------------------------------- real data

DATA = __import__("pathlib").Path(__file__).resolve().parents[2] / "shared" / "data"


def read_fasta(path, max_length):
    seqs, current = [], None
    for line in open(path):
        line = line.strip()
        if line.startswith(">"):
            if current is not None:
                seqs.append("".join(current))
            current = []
        elif line:
            current.append(line.upper().replace("T", "U"))
    if current is not None:
        seqs.append("".join(current))
    return [s for s in seqs if len(s) <= max_length]


@pytest.mark.skipif(not DATA.is_dir(), reason="shared RNA data not present")
def test_real_transcripts_match_reference():
    seqs = read_fasta(DATA / "transcripts" / "tRNAs_GtRNAdb_6species.fa", 100)[:1000]
    hairpins = read_fasta(DATA / "transcripts" / "miRBase21_hairpin_all_species.fa", 100)
    seqs += [s for s in hairpins if set(s) - set("ACGU")] + hairpins[:1000]  # every hairpin with IUPAC codes
    expected = nussinov_scores_batch(seqs)
    for variant in VARIANTS:
        check_all(seqs, nussinov.fold_batch(seqs, variant, 2, {}), expected, 1)


@pytest.mark.parametrize("module_name,variant", [("nussinov", "transposed"), ("fourrussians", "two-vector")])
def test_threads_fold_only_as_many_as_memory_holds(monkeypatch, memory_gates, module_name, variant):
    """With a budget below one sequence, three threads fold one sequence at a time (a thread alone always
    goes on: nothing waits forever), and the results are those of one thread."""
    import importlib

    module = importlib.import_module(f"rnapipe.cpu.{module_name}")
    monkeypatch.setattr(module, "host_budget", lambda options=None: 1)
    # short sequences are folded many to a task in workspaces of at most GROUP_MAX_N² cells per thread,
    # outside the gate; here every sequence takes the gated path
    monkeypatch.setattr(module, "GROUP_MAX_N", 0, raising=False)
    rng = random.Random(5)
    seqs = ["".join(rng.choice("ACGU") for _ in range(rng.randint(100, 300))) for _ in range(30)]
    ref = module.fold_batch(seqs, variant, 1, {})
    assert module.fold_batch(seqs, variant, 3, {}) == ref
    gate = memory_gates[-1]
    assert gate.held == 0
    assert 0 < gate.peak <= max(module.bytes_needed(len(s), variant) for s in seqs)
