"""McCaskill's partition function on CPU (rnapipe.cpu.partition) against ViennaRNA's fold_compound.pf() and
bpp() with the same model details: the ensemble free energy within 0.01 kcal/mol, every pair probability within
1e-6 (the largest difference over the whole matrix is asserted), the unpaired probabilities, the centroid, its
distance, the ensemble diversity, the MFE frequency and the MEA structure (gamma 1); by brute force on tiny
sequences; on a long sequence without overflow; through the scale's restarts and fallback.

ViennaRNA's own scale is ``exp_params_rescale(mfe)`` (RNAfold -p's), whose probabilities do not depend on it
beyond rounding. Default run: about a minute on 2 cores.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from seqgen import random_seqs
from shared_data import shared_sequences

from rnapipe import energy as E
from rnapipe.cpu import partition as PF
from rnapipe.model import Model

RNA = pytest.importorskip("RNA")


def _vienna(seq, temperature=37.0, dangles=2):
    md = RNA.md()
    md.temperature = temperature
    md.dangles = dangles
    fc = RNA.fold_compound(seq, md)
    structure, mfe = fc.mfe()
    fc.exp_params_rescale(mfe)
    _, G = fc.pf()
    return fc, G, np.array(fc.bpp()), structure


def _matrix(r, n):
    P = np.zeros((n + 1, n + 1))
    P[r.i, r.j] = r.p
    return P


def _compare(seqs, temperature, dangles, derived=False):
    """Our results for seqs against ViennaRNA's; returns the largest differences (energy, probability)."""
    model = Model(temperature=temperature, dangles=dangles)
    ours = PF.fold_batch(seqs, model, threads=2, threshold=0.0)
    worst_g = worst_p = 0.0
    for s, r in zip(seqs, ours):
        fc, G, bpp, structure = _vienna(s, temperature, dangles)
        n = len(s)
        P = _matrix(r, n)
        assert np.all((r.i >= 1) & (r.i < r.j) & (r.j <= n))
        worst_g = max(worst_g, abs(r.energy - G))
        worst_p = max(worst_p, float(np.abs(P - bpp).max()))
        pu = 1.0 - bpp.sum(axis=0)[1:] - bpp.sum(axis=1)[1:]
        assert np.abs(r.unpaired - pu).max() < 1e-6, s
        if derived:
            centroid, dist = fc.centroid()
            assert r.centroid == centroid, s
            assert abs(r.centroid_distance - dist) < 1e-5, s
            assert abs(r.diversity - fc.mean_bp_distance()) < 1e-5, s
            assert round(r.mfe * 100) == round(fc.eval_structure(structure) * 100), s
            assert r.mfe_frequency == pytest.approx(fc.pr_structure(structure), rel=1e-4, abs=1e-12), s
            mea, accuracy = fc.MEA()
            assert r.mea == mea, s
            # ViennaRNA's pair list holds single precision: its accuracy to about 1e-4
            assert abs(r.mea_accuracy - accuracy) < 1e-3, s
    assert worst_g < 0.01, f"ensemble free energy differs by {worst_g} kcal/mol"
    assert worst_p < 1e-6, f"a pair probability differs by {worst_p}"
    return worst_g, worst_p


@pytest.mark.parametrize("temperature,dangles", [(37.0, 2), (37.0, 0), (25.0, 2), (25.0, 0)])
def test_random_sequences_20_to_400(temperature, dangles):
    """75 random sequences of 20-400 nt per model, a third of them with N (2 % of positions)."""
    seed = int(temperature) * 10 + dangles
    seqs = random_seqs(50, 20, 400, seed=seed, n_rate=0.0) + random_seqs(25, 20, 400, seed=seed + 1)
    _compare(seqs, temperature, dangles, derived=True)


def test_short_and_degenerate_sequences():
    seqs = ["", "A", "GC", "GGGAAACCC", "GGGGAAACCCC", "N" * 30, "GCGCGCGCGCGCGCGCGCGC", "AUAUAUAUAUAUAUAUAUAU",
            "GGGGGGGGGGAAAACCCCCCCCCC", "GGGAAAUCCCAGCGAUAGCUAGCGCGAUAGCGAUUUAGCGCGAUCCCAAAAGGG",
            "GGCGCAAGCCUUCGGGCGCC", "CAGACGAAAGUCUG", "GGGGACUUCGGUCCCC", "NNGGGAAACCCNN"]
    for s in seqs:
        r = PF.fold_one(s, threshold=0.0)
        assert len(r.unpaired) == len(s)
        if not s:
            continue
        fc, G, bpp, _ = _vienna(s)
        assert abs(r.energy - G) < 0.01, s
        assert np.abs(_matrix(r, len(s)) - bpp).max() < 1e-6, s


def test_special_hairpins_and_long_loops():
    """Tetra-, tri- and hexaloops inside helices, and hairpins and multiloops with long unpaired stretches
    (the hairpin size term extrapolated beyond 30 nt)."""
    rng = random.Random(7)
    seqs = []
    for loop in ("GAAA", "UUCG", "CAC", "ACAGUACU", "A" * 35, "U" * 60):
        for _ in range(3):
            stem = "".join(rng.choice("GC") for _ in range(6))
            flank = "".join(rng.choice("ACGU") for _ in range(rng.randint(0, 10)))
            rev = stem[::-1].translate(str.maketrans("GC", "CG"))
            seqs.append(flank + stem + loop + rev + flank[::-1])
    for T in (37.0, 25.0):
        _compare(seqs, T, 2)


def test_shared_data_sample():
    """A deterministic sample of ../shared/data up to 400 nt (skipped where the folder is absent)."""
    seqs = shared_sequences(400)
    if not seqs:
        pytest.skip("../shared/data is absent")
    sample = random.Random(24).sample(seqs, 40)
    _compare(sample, 37.0, 2)
    _compare(sample[:15], 25.0, 0)


def _structures(ptype, i, j):
    """Every secondary structure of positions i..j (pair lists), pairs of ptype only."""
    if j - i < 4:
        return [[]]
    out = [s for s in _structures(ptype, i + 1, j)]
    for k in range(i + 4, j + 1):
        if ptype[i, k]:
            for inner in _structures(ptype, i + 1, k - 1):
                for rest in _structures(ptype, k + 1, j):
                    out.append([(i, k)] + inner + rest)
    return out


@pytest.mark.parametrize("seed", range(4))
def test_brute_force_tiny_sequences(seed):
    """All structures of a 14-16 nt sequence, each weighted by exp(-E/kT) of its energy from rnapipe's evaluator
    (dangles 0 at 37 °C, where the integer energies are the Boltzmann weights' own; with dangles 2 ViennaRNA
    smooths the dangles of the partition function, and at other temperatures its weights are not truncated)."""
    rng = random.Random(seed)
    n = rng.randint(14, 16)
    s = "".join(rng.choice("ACGU") for _ in range(n))
    model = Model(dangles=0)
    T = model.tables()
    S = E.padded_codes(s)
    ptype = np.zeros((n + 2, n + 2), dtype=int)
    for a in range(1, n + 1):
        for b in range(a + 4, n + 1):
            ptype[a, b] = E.PAIR_TYPE[S[a], S[b]]
    kt = (37.0 + 273.15) * 1.98717
    Z = 0.0
    P = np.zeros((n + 1, n + 1))
    structures = _structures(ptype, 1, n)
    assert len(structures) > 1
    for pairs in structures:
        pt = np.zeros(n + 2, dtype=np.int32)
        for a, b in pairs:
            pt[a], pt[b] = b, a
        w = math.exp(-E.eval_pair_table(T, S, pt) * 10.0 / kt)
        Z += w
        for a, b in pairs:
            P[a, b] += w
    P /= Z
    r = PF.fold_one(s, model, threshold=0.0)
    assert r.energy == pytest.approx(-kt * math.log(Z) / 1000.0, abs=1e-9)
    assert np.abs(_matrix(r, n) - P).max() < 1e-12


def test_long_sequence_without_overflow():
    """3,000 random nt: a finite ensemble free energy below the MFE, probabilities in (0, 1], each nucleotide
    paired with probability at most 1 (+ 1e-9)."""
    s = random_seqs(1, 3000, 3000, seed=3000, n_rate=0.0)[0]
    r = PF.fold_one(s, threshold=0.0)
    assert math.isfinite(r.energy) and r.energy <= r.mfe
    assert r.mfe - r.energy < 0.1 * abs(r.mfe)
    assert np.all((r.p > 0) & (r.p <= 1.0 + 1e-12))
    assert np.all(r.unpaired >= -1e-9) and np.all(r.unpaired <= 1.0 + 1e-12)
    assert np.isfinite(r.centroid_distance) and np.isfinite(r.diversity)
    assert len(r.p) > len(s)


def _scales_of(s):
    X = PF.exp_tables(Model())
    T = Model().tables()
    S = E.padded_codes(s)
    mfe, db = PF.zuker.fold_codes(T, S)
    return X, S, PF.uniform_scales(X, len(s), mfe), PF.structure_scales(X, T, S, len(s), db)


@pytest.mark.parametrize("mfe", [40_000, -400_000])
def test_scale_restarts_give_the_same_answer(mfe):
    """Scales far off (from a wrong MFE: cells overflow, or Z underflows) are corrected by the restarts, to the
    same ensemble free energy and probabilities as the scale from the true MFE."""
    s = random_seqs(1, 600, 600, seed=600, n_rate=0.0)[0]
    X, S, uniform, _ = _scales_of(s)
    bad = PF.uniform_scales(X, len(s), mfe)
    G, P, lam = PF.fold_scaled(X, S, uniform, uniform)
    G2, P2, lam2 = PF.fold_scaled(X, S, bad, bad)
    assert abs(lam2[1] - lam[1]) > 0.01 and abs(lam2[1] - bad[1]) > 0.01     # corrected, to another scale ...
    assert G2 == pytest.approx(G, abs=1e-9)                                  # ... with the same result
    assert np.abs(np.tril(P2) - np.tril(P)).max() < 1e-12


def test_structure_scales_against_viennarna():
    """The per-nucleotide scales from the MFE structure's loops (the fallback) give ViennaRNA's results too."""
    for s in random_seqs(20, 30, 400, seed=55, n_rate=0.01):
        X, S, uniform, structure = _scales_of(s)
        assert structure.sum() == pytest.approx(uniform.sum(), rel=1e-9, abs=1e-9)
        G, P, lam = PF.fold_scaled(X, S, structure, structure)
        assert np.array_equal(lam, structure)
        fc, G_ref, bpp, _ = _vienna(s)
        assert abs(G - G_ref) < 0.01
        n = len(s)
        assert np.abs(np.tril(P).T[:n + 1, :n + 1] - bpp).max() < 1e-6


def test_results_do_not_depend_on_the_scales():
    """Random per-nucleotide log-scales (a scale factor e^±3 per nucleotide) give the unscaled results: every
    term of both passes carries the factors of exactly its own nucleotides."""
    rng = np.random.default_rng(5)
    X = PF.exp_tables(Model(temperature=60.0))
    for s in random_seqs(30, 5, 60, seed=66, n_rate=0.02):
        S = E.padded_codes(s)
        n = len(s)
        zero = np.zeros(n + 2)
        lam = zero.copy()
        lam[1:n + 1] = rng.uniform(-3, 3, n)
        G0, P0, _ = PF.fold_scaled(X, S, zero, zero)
        G1, P1, used = PF.fold_scaled(X, S, lam, lam)
        assert np.array_equal(used, lam)
        assert G1 == pytest.approx(G0, abs=1e-9)
        assert np.abs(np.tril(P1) - np.tril(P0)).max() < 1e-12, s


@pytest.mark.parametrize("temperature,dangles", [(90.0, 2), (0.0, 0)])
def test_far_temperatures(temperature, dangles):
    """Far from 37 °C (multiloop branches favourable at 90 °C, ML intern's weight above 1)."""
    _compare(random_seqs(12, 20, 250, seed=int(temperature) + 5, n_rate=0.02), temperature, dangles)


def test_threshold_and_batch_order():
    seqs = random_seqs(12, 30, 250, seed=12)
    rs = PF.fold_batch(seqs, threads=2)
    for s, r in zip(seqs, rs):
        one = PF.fold_one(s)
        assert r.energy == one.energy
        assert np.array_equal(r.i, one.i) and np.array_equal(r.p, one.p)
        assert np.all(r.p > PF.THRESHOLD)
        full = PF.fold_one(s, threshold=0.0)
        keep = full.p > PF.THRESHOLD
        assert np.array_equal(full.i[keep], r.i) and np.array_equal(full.j[keep], r.j)


def test_params_file(tmp_path):
    """A parameter file reaches the weights: a far higher multiloop closing penalty, read by both."""
    from rnapipe import params
    default = params.default_path().read_text()
    text = default.replace("\t     0\t     0\t   930\t  3000", "\t     0\t     0\t  1930\t  3000")
    assert text != default
    path = tmp_path / "ml.par"
    path.write_text(text)
    seqs = random_seqs(8, 80, 200, seed=31, n_rate=0.0)
    ours = PF.fold_batch(seqs, Model(params=str(path), temperature=30.0), threads=1, threshold=0.0)
    try:
        RNA.params_load(str(path))
        for s, r in zip(seqs, ours):
            fc, G, bpp, _ = _vienna(s, 30.0)
            assert abs(r.energy - G) < 0.01
            assert np.abs(_matrix(r, len(s)) - bpp).max() < 1e-6
    finally:
        RNA.params_load_RNA_Turner2004()
    default_G = PF.fold_one(seqs[0], Model(temperature=30.0)).energy
    assert abs(default_G - ours[0].energy) > 1e-6


def test_pairing_rules_are_refused():
    with pytest.raises(ValueError):
        PF.fold_one("GGGAAACCC", Model(no_lp=True))


def test_stable_domain_beside_a_long_unpaired_tail():
    """A 404-nt G·C hairpin before 896 A (which pair with nothing): no uniform scale holds both (the hairpin's
    cells or the tail's weights leave the double range), so the fold takes the scales of the MFE structure's
    loops, and the result is that of the hairpin and the first A alone (the A's are unpaired with weight 1; the
    first is the hairpin's dangle), against ViennaRNA."""
    head = "G" * 200 + "AAAA" + "C" * 200 + "A"
    s = head + "A" * 895
    X, S, uniform, structure = _scales_of(s)
    G, P, lam = PF.fold_scaled(X, S, uniform, structure)
    assert not np.array_equal(lam, uniform)          # the uniform scale failed
    fc, G_head, bpp, _ = _vienna(head)
    assert abs(G - G_head) < 0.01
    n = len(head)
    ours = np.tril(P).T[:n + 1, :n + 1]
    assert np.abs(ours - bpp).max() < 1e-6
    assert np.tril(P)[n + 1:, :].max() == 0.0
    r = PF.fold_one(s, threshold=0.0)
    assert r.energy == pytest.approx(G, abs=1e-9)


def test_derived_lists_equal_derived():
    """derived_lists (the GPU engine's host step: from per-nucleotide sums and a pair list, not the n² matrix)
    gives derived's values, with the per-nucleotide parts made here from the full matrices by the CPU engine's own
    functions; threshold 0 and 1e-5, MEA gammas 1 and 0.2 (a cut above the threshold), one thread and three."""
    from concurrent.futures import ThreadPoolExecutor

    seqs = random_seqs(40, 1, 120, seed=71, n_rate=0.05) + ["A", "GGGGAAAACCCC"]
    X, T = PF.exp_tables(Model()), Model().tables()
    lens = np.array([len(s) for s in seqs], dtype=np.int32)
    off1 = np.concatenate(([0], np.cumsum(lens.astype(np.int64) + 2)[:-1]))
    total = int(off1[-1] + lens[-1] + 2)
    S = np.concatenate([E.padded_codes(s) for s in seqs])
    Ps = [PF.fold_codes(X, T, E.padded_codes(s))[1] for s in seqs]
    with ThreadPoolExecutor(3) as pool:
        for threshold, gamma, threads in ((0.0, 1.0, 1), (1e-5, 0.2, 3)):
            lo = min(threshold, 1e-4 / (1 + gamma))
            unpaired, div, dist = np.zeros(total), np.zeros(total), np.zeros(total)
            centroid, pseudo = np.zeros(total, np.uint8), np.zeros(total, np.uint8)
            lists, first = [], [0]
            for k, (s, Pm) in enumerate(zip(seqs, Ps)):
                n, o = len(s), off1[k]
                _, up = PF._sparse(Pm, n, 0.0)[2:]
                unpaired[o + 1:o + n + 1] = up
                _, cen, _ = PF._derived(Pm, n)
                centroid[o + 1:o + n + 1] = cen
                pseudo[o + 1:o + n + 1] = PF.pseudo_bracket(Pm, n)
                for j in range(2, n + 1):
                    x = Pm[j, 1:j]
                    div[o + j] = (x * (1 - x)).sum()
                    dist[o + j] = np.where(x > 0.5, 1 - x, x).sum()
                lists.append(PF.pairs_at_least(Pm, n, lo))
                first.append(first[-1] + len(lists[-1][0]))
            I, J, p = (np.concatenate([lst[m] for lst in lists]) for m in range(3))
            out = PF.derived_lists(T, S, off1, lens, I, J, p, np.array(first), unpaired, centroid, pseudo, div, dist,
                                   threshold, gamma, pool if threads > 1 else None, threads)
            for k, s in enumerate(seqs):
                ref = PF.derived(T, E.padded_codes(s), Ps[k], threshold, gamma)
                assert len(out[k]) == len(ref)
                for m, (a, b) in enumerate(zip(out[k], ref)):
                    if m in (3, 4, 6):                      # unpaired, diversity, distance: sums in another order
                        assert np.allclose(a, b, rtol=1e-12, atol=1e-14), (s, m)
                    else:
                        assert np.array_equal(np.asarray(a), np.asarray(b)), (s, m)
