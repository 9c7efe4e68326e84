"""Zuker MFE on CPU against ViennaRNA's RNA.fold_compound(seq, md).mfe(): the MFE to the integer dcal/mol, and
the very structure RNAfold prints (among co-optimal ones, the one its backtracking picks), which has that MFE.

Default run: 3,000 random sequences of 1-300 nt and a deterministic slice of ../shared/data (a few minutes
on 2 cores with RNA.fold included). RNAPIPE_FULL=1 runs the acceptance counts: 20,000 random sequences of
1-300 nt and every record of ../shared/data up to 1,000 nt.
"""

from __future__ import annotations

import os
import random

import pytest

import vienna_mfe
from shared_data import shared_sequences

from rnapipe.cpu import zuker

RNA = pytest.importorskip("RNA")

FULL = os.environ.get("RNAPIPE_FULL") == "1"
THREADS = 2


def _assert_exact(seqs, temperature=37.0, dangles=2):
    """Our MFE and dot-bracket are RNAfold's, and the structure evaluates to the MFE (ViennaRNA's folds over two
    processes: vienna_mfe)."""
    ours = zuker.fold_batch(seqs, "default", THREADS, {"temperature": temperature, "dangles": dangles})
    for s, (e, db) in zip(seqs, ours):
        assert len(db) == len(s)
    theirs = vienna_mfe.fold_and_eval(seqs, [db for _, db in ours], temperature, dangles)
    wrong = []
    for s, (e, db), (ref, ref_db, ours_eval) in zip(seqs, ours, theirs):
        if e != ref or db != ref_db or ours_eval != ref:
            wrong.append((s, e, ref, db, ref_db))
    assert not wrong, f"{len(wrong)} of {len(seqs)} differ; first (seq, ours, RNAfold's): {wrong[0]}"


def _random_seqs(count, lo, hi, seed, alphabet="ACGU"):
    rng = random.Random(seed)
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(lo, hi))) for _ in range(count)]


@pytest.mark.parametrize("chunk", range(20 if FULL else 3))
def test_random_sequences_1_to_300(chunk):
    """1,000 random sequences of 1-300 nt per chunk (3 chunks by default, 20 with RNAPIPE_FULL=1)."""
    _assert_exact(_random_seqs(1000, 1, 300, seed=1000 + chunk))


@pytest.mark.parametrize("dangles", [2, 0])
def test_short_and_degenerate_sequences(dangles):
    seqs = ["A", "G", "GC", "GGGAAACCC", "GGGGAAAACCCC", "NNNNNNNNNN", "GGGGNNNNCCCC", "AAAAAAAAAAAAAAAAAA",
            "GCGCGCGCGCGCGCGCGCGC", "GGGGGGGGGGCCCCCCCCCC", "GUGUGUGUGUGUGUGUGU", "A" * 200, "U" * 120,
            "GC" * 60, "G" * 40 + "C" * 40, "AU" * 50, "GGGAAAUCCC" * 12, "CCCCGGGG" * 15, "GCNGCNGCNGCN" * 10]
    _assert_exact(seqs, dangles=dangles)
    assert zuker.fold_batch(["NNNN"], "default", 1, {}) == [(0, "....")]


# Short sequences on which a traceback that tries the co-optimal terms in another order than ViennaRNA's
# (the exterior helix nearest the 5' end first, the multiloop and its sections by ViennaRNA's fM1 instead of
# the fML split) printed another structure of the same energy; each with the dangles model it was found with.
CO_OPTIMAL = [
    (2, "GUCCGCCGUAACGAACGUGAUCGGG"), (2, "UGAGGACUGGGCAUGUAAUCACUAACUCGACUGGCCGUUUC"),
    (2, "ACCAGGUCUGGAGGGAUUGCCACAAGACACCAUUACUCAUCCACACUGUCUAGGGG"),
    (2, "CGGAUUGAAUCUGGCAAUUCGGACUAGAUAGUGACUCGUCGGUCC"),
    (2, "AAUUGAAGAGAUUGCCCAUAAAAGAGAGUCAUCAGCAUGUCAGUACCAACCGAGAAGAGCUUAUAAAAC"),
    (2, "UCAGGGGAGAAAGCGCUAGCCUUCAGGACCUUCAAAUUAUGAGUCGAUGAGCCAUGAGCUUACCU"),
    (2, "GGGUCUGCCUGUUGCACAUCCAGCCGGUGGAUACCGCUACUUCUGAGGAGAGAG"),
    (2, "CUAAUGUCCGGAGCCUCCUGAUGUGGCUUUCCCAGGGGCGGGAAGCUGGCAGGGAAGGAAUGCCAAAUAU"),
    (2, "ACGCGACAGGUAGAAGAAUAAUUCCCUGAGCCCACCGGGCGUAUUAAACAGGCUGGCAGGCAUCGAGCCU"),
    (2, "GUCUUAGAAGGCGAUGAGGGCCGCCUGUACUAAUAGAAGUAAUGACGGUUAUGGGGGAGAUUGAGCCC"),
    (2, "CACUAACGUUAGCCUCCUCAGUGUAAUUCAUUAAUAGAGGUGCAA"), (2, "AGGGUAUCUCACCGCGGUUAGACCAUCACGUAAUAGGCAA"),
    (0, "ACCACCGGGAAUAUAUCGAAAGUUCUUCUCUAACCAUUAUAUUACCUGAGGAC"), (0, "AGCUCAAUGCGAUGGGCGUCUGUUGUCACGGGA"),
    (0, "GCGCUGAGGAUGCCAUUGUGGGGCG"), (0, "ACAACGGCUAUAGGGGGGUAGUGCUUCUCCAGCUAGAGUUUGCUCCAGC"),
    (0, "AGGAGCGGGCCAAUCGGAUAGACACUGAUACAGCAGACUCAUUCCCCUAUAAGCGAAUCGUAAAUUA"),
    (0, "GACGCCAGCACCAGUGACAGUAAGACAAGGGGUA"),
]


@pytest.mark.parametrize("dangles", [2, 0])
def test_co_optimal_structures_are_rnafolds(dangles):
    """Among structures of the MFE, the one RNAfold prints (ViennaRNA's backtracking order)."""
    _assert_exact([s for d, s in CO_OPTIMAL if d == dangles], dangles=dangles)


def test_special_hairpins_inside_stems():
    """Random flanks around the tri-, tetra- and hexaloops of the table, so the MFE uses them."""
    rng = random.Random(7)
    loops = ["CAACG", "GUUAC", "CAACGG", "CCAAGG", "CUUCGG", "CUACGG", "ACAGUACU", "ACAGUGAU", "ACAGUGUU"]
    seqs = []
    for loop in loops:
        for _ in range(20):
            stem = "".join(rng.choice("ACGU") for _ in range(rng.randint(2, 8)))
            comp = stem[::-1].translate(str.maketrans("ACGU", "UGCA"))
            left = "".join(rng.choice("ACGU") for _ in range(rng.randint(0, 5)))
            right = "".join(rng.choice("ACGU") for _ in range(rng.randint(0, 5)))
            seqs.append(left + stem + loop + comp + right)
    _assert_exact(seqs)


def test_iupac_codes_never_pair():
    rng = random.Random(3)
    seqs = []
    for s in _random_seqs(150, 20, 150, seed=4):
        chars = list(s)
        for _ in range(rng.randint(1, 6)):
            chars[rng.randrange(len(chars))] = "N"
        seqs.append("".join(chars))
    _assert_exact(seqs)


def test_longer_sequences():
    _assert_exact(_random_seqs(2, 700, 1000, seed=9) + _random_seqs(6, 301, 500, seed=10))


def test_gc_rich_and_skewed_sequences():
    """Skewed composition reaches large multiloops and long helices that uniform sequences rarely give."""
    _assert_exact(_random_seqs(150, 30, 250, seed=12, alphabet="GGGCCCAU") +
                  _random_seqs(150, 30, 250, seed=13, alphabet="GGCCAAUUUU"))


@pytest.mark.parametrize("temperature,dangles", [(20.0, 2), (60.0, 2), (37.0, 0), (20.0, 0), (60.0, 0)])
def test_temperatures_and_dangles(temperature, dangles):
    _assert_exact(_random_seqs(1000 if FULL else 150, 1, 300, seed=int(temperature) * 10 + dangles),
                  temperature, dangles)


@pytest.mark.parametrize("temperature,dangles", [(37.0, 2), (37.0, 0), (25.0, 2)])
def test_shared_data_up_to_1000_nt(temperature, dangles):
    """Real RNAs from ../shared/data (miRBase hairpins, tRNAs, RNAStralign): every record with RNAPIPE_FULL=1,
    every 25th one by default (every 50th with dangles 0 or at 25 °C, starting elsewhere); IUPAC codes are
    kept (they never pair, in RNAfold as here)."""
    seqs = shared_sequences()
    if not seqs:
        pytest.skip("../shared/data is not here")
    if not FULL:
        seqs = seqs[::25] if (temperature, dangles) == (37.0, 2) else seqs[7 + 3 * dangles::50]
    for k in range(0, len(seqs), 2000):
        _assert_exact(seqs[k:k + 2000], temperature, dangles)


def test_traceback_on_matrices_copied_out():
    """The public traceback as the GPU engine's host traceback calls it (matrices copied out of the fill's
    workspace, W as int64, pair types as int8) gives fold_one's structure for the fill's MFE."""
    import numpy as np

    from rnapipe.energy import padded_codes
    from rnapipe.model import Model

    tables = Model.from_options({}).tables()
    for seq in _random_seqs(20, 20, 200, seed=41):
        n = len(seq)
        S = padded_codes(seq)
        a, b = zuker.workspace_sizes(n)
        W, V, WM, WM1T, ptype, *_ = zuker._fill(tables, S, n, np.empty(a, dtype=np.int32),
                                                np.empty(b, dtype=np.int8), zuker.NO_DATA8, False, zuker.NO_DATA32)
        pt = zuker.traceback(tables, S, n, W.copy(), V.copy(), WM.copy(), ptype.copy(), *zuker.free_runs(n))
        assert (int(W[n]), zuker.dot_bracket(pt, n).tobytes().decode("ascii")) == zuker.fold_one(seq, tables)


def test_threads_give_the_same_results_in_order():
    seqs = _random_seqs(60, 1, 200, seed=21)
    assert zuker.fold_batch(seqs, "default", 1, {}) == zuker.fold_batch(seqs, "default", 3, {})


def test_bytes_needed_covers_the_matrices():
    n = 1000
    # V, WM, WM1T as int32 and the pair types as int8, each (n+2)²: the least an honest estimate can say
    assert zuker.bytes_needed(n) >= (3 * 4 + 1) * (n + 2) ** 2
    assert zuker.bytes_needed(n) < 1.1 * (3 * 4 + 1) * (n + 2) ** 2 + 2**20
    assert zuker.max_length(24 * 2**30) > 40_000


def test_engine_registered_and_api():
    import rnapipe
    res = rnapipe.fold(["GGGGAAAACCCC", "ACGU"], algorithm="zuker", threads=1)
    assert [(r.score_int, r.structure) for r in res] == [(-540, "((((....))))"), (0, "....")]
    assert res[0].score == pytest.approx(-5.4)
    assert rnapipe.eval_structure("GGGGAAAACCCC", "((((....))))") == -540


def test_bad_options_are_usage_errors():
    from rnapipe.errors import UsageError
    with pytest.raises(UsageError):
        zuker.fold_batch(["GGGAAACCC"], "default", 1, {"dangles": 1})
    with pytest.raises(UsageError):
        zuker.fold_batch(["GGGAAACCC"], "default", 1, {"temperature": "hot"})


def test_params_option_loads_another_file(tmp_path):
    """--params: a set with a far higher multiloop closing penalty changes energies as ViennaRNA's reader does."""
    from rnapipe import params
    default = params.default_path().read_text()
    text = default.replace("\t     0\t     0\t   930\t  3000", "\t     0\t     0\t  1930\t  3000")
    assert text != default
    path = tmp_path / "ml.par"
    path.write_text(text)
    seqs = _random_seqs(40, 80, 200, seed=31)
    ours = zuker.fold_batch(seqs, "default", 1, {"params": str(path)})
    try:
        RNA.params_load(str(path))
        for s, (e, _) in zip(seqs, ours):
            assert e == round(RNA.fold(s)[1] * 100)
    finally:
        RNA.params_load_RNA_Turner2004()


def test_threads_take_long_workspaces_only_as_memory_allows(monkeypatch, memory_gates):
    """With every workspace counted and a budget of one (or two) of them, four threads never hold more at
    once, nothing waits forever (a thread alone always goes on), and the results are those of one thread."""
    monkeypatch.setattr(zuker, "SMALL_WORKSPACE", 0)
    rng = random.Random(77)
    seqs = ["".join(rng.choice("ACGU") for _ in range(rng.randint(450, 600))) for _ in range(24)]
    ref = zuker.fold_batch(seqs, "default", 1, {})
    one = zuker.workspace_bytes(600)
    for budget, most in ((1, one), (one, one), (2 * one, 2 * one), (10**15, 4 * one)):
        assert zuker.fold_batch(seqs, "default", 4, {"memory_budget": budget}) == ref
        assert memory_gates[-1].held == 0
        assert 0 < memory_gates[-1].peak <= most
