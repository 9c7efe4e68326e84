"""zuker_core.cuh and zuker_short.cuh built as plain C++ (no GPU): the pair-type arithmetic (branch-free on
the device) against the CPU engine's tables rnapipe.params.PAIR_TYPE and RTYPE, and the GPU tracebacks
(``zk_traceback``, one thread per sequence; ``zs_traceback``, the short-sequence kernels') on matrices filled
by the GPU fill's own cell code (``zk_v_partial``, ``zk_wm1``, ``zk_wm_partial``, ``zk_store``,
``zk_w_partial``, one cell at a time) against ViennaRNA's RNA.fold_compound(seq, md).mfe(): the MFE and the
very dot-bracket. Runs wherever a C++ compiler is on PATH."""

from __future__ import annotations

import random
import shutil
import subprocess

import pytest

from rnapipe import params
from rnapipe.alphabet import encode
from rnapipe.gpu import loader
from rnapipe.model import Model

CXX = shutil.which("g++") or shutil.which("c++")
pytestmark = pytest.mark.skipif(CXX is None, reason="no C++ compiler on PATH")

PROGRAM = r"""
#include <cstdio>
#include "zuker_core.cuh"
int main() {
    for (int a = 0; a < 5; ++a)
        for (int b = 0; b < 5; ++b) std::printf("%d ", zk_ptype(a, b));
    for (int t = 0; t < 8; ++t) std::printf("%d ", zk_rtype(t));
    return 0;
}
"""


def test_pair_types_equal_the_cpu_tables(tmp_path):
    src = tmp_path / "pt.cpp"
    src.write_text(PROGRAM)
    exe = tmp_path / "pt"
    subprocess.run([CXX, "-std=c++17", f"-I{loader.kernel_dir()}", "-o", str(exe), str(src)], check=True)
    got = [int(x) for x in subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split()]
    want = [int(params.PAIR_TYPE[a, b]) for a in range(5) for b in range(5)] + [int(t) for t in params.RTYPE]
    assert got == want


# Fills one sequence's matrices with the cell code of zuker_core.cuh, one cell at a time in anti-diagonal
# order (zk_fill_block's order, one lane), then W (zk_exterior's terms), then walks zk_traceback on that
# row-major storage and zs_traceback on the same values laid out as zuker_short.cuh keeps them
# (diagonal-major V and WM, XT). Input: the flat parameter table (binary int32), then one sequence of
# codes 0-4 per line (built with ZK_SHAPE: each followed by a line of its n SHAPE stacking terms). Output per
# sequence: MFE, zk_traceback's status and dot-bracket, zs_traceback's.
TRACEBACKS = r"""
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>
#include "zuker_short.cuh"

static std::string brackets(const std::vector<int>& pt, int n) {
    std::string s(n, '.');
    for (int k = 1; k <= n; ++k)
        if (pt[k]) s[k - 1] = pt[k] > k ? '(' : ')';
    return s;
}

int main(int argc, char** argv) {
    std::ifstream pf(argv[1], std::ios::binary | std::ios::ate);
    std::vector<int> table((size_t)pf.tellg() / 4);
    pf.seekg(0);
    pf.read((char*)table.data(), (std::streamsize)(table.size() * 4));
    const int* Pt = table.data();
    std::string line;
    while (std::getline(std::cin, line)) {
        const int n = (int)line.size();
        const long long N = n + 2, NN = N * N;
        std::vector<signed char> S(N, 0);
        for (int k = 0; k < n; ++k) S[k + 1] = (signed char)(line[k] - '0');
        std::vector<int> mx(7 * NN, ZK_INF);
        ZkSeq q;
        q.S = S.data(); q.n = n; q.N = N;
#ifdef ZK_SHAPE
        std::string terms;
        std::getline(std::cin, terms);
        std::vector<int> SS(N, 0);
        std::istringstream in(terms);
        for (int k = 1; k <= n; ++k) in >> SS[k];
        q.SS = SS.data();
#endif
#ifdef ZK_HC
        std::string words;
        std::getline(std::cin, words);
        std::vector<ZkHc> HC(N);
        std::istringstream hin(words);
        for (long long k = 0; k < N; ++k) hin >> HC[k].code >> HC[k].enc >> HC[k].up >> HC[k].dn;
        q.HC = HC.data();
#endif
        q.V = &mx[0]; q.WM = &mx[NN]; q.WM1T = &mx[2 * NN]; q.VI = &mx[3 * NN]; q.V1N = &mx[4 * NN];
        q.VAU = &mx[5 * NN]; q.VMX = &mx[6 * NN];
        for (int d = ZK_TURN + 1; d < n; ++d)
            for (int i = 1; i + d <= n; ++i) {
                const int j = i + d;
                int v = zk_v_partial(Pt, q, i, j, 0, 1);
#if defined(ZK_RULES)
                v = zk_lonely(Pt, q, i, j, v, true);
#endif
                const int w1 = zk_wm1(Pt, q, i, j, v);
                int vm;
                const int wm = zk_wm_partial(Pt, q, i, j, w1, 0, 1, vm);
                zk_store(Pt, q, i, j, v, w1, wm, vm);
            }
        std::vector<int> W(n + 1, 0);
#ifdef ZK_HC
        for (int j = 1; j <= n && j <= ZK_TURN + 1; ++j) W[j] = HC[j].dn >= j ? 0 : ZK_INF;
        for (int j = ZK_TURN + 2; j <= n; ++j)
            W[j] = zk_min(zk_min(HC[j].up > 0 ? W[j - 1] : ZK_INF, zk_w_partial(Pt, q, W.data(), j, 0, 1)), ZK_INF);
#else
        for (int j = ZK_TURN + 2; j <= n; ++j) W[j] = zk_min(W[j - 1], zk_w_partial(Pt, q, W.data(), j, 0, 1));
#endif
        std::vector<int> stack(3 * (3 * n + 8)), pt(n + 2);
        const int st1 = zk_traceback(Pt, q, W.data(), stack.data(), pt.data());
        std::string db1 = brackets(pt, n);
        // zuker_short.cuh's storage of the same values
        std::vector<int> pool(zs_pool_words(n), ZK_INF);
        ZsSeq z = zs_seq(S.data(), n, pool.data());
#ifdef ZK_SHAPE
        z.SS = SS.data();
#endif
#ifdef ZK_HC
        z.HC = HC.data();
#endif
        for (int i = 1; i <= n; ++i)
            for (int j = i; j <= n; ++j) {
                const int v = q.V[i * N + j];
                z.V[(j - i) * N + i] = v;
                z.WM[(j - i) * N + i] = q.WM[i * N + j];
                z.XT[j * N + i] = v < ZK_HALF_INF ? v + zk_exterior_stem_at(Pt, S.data(), n, i, j) : ZK_INF;
            }
        std::string db2(n, '.');
        const int st2 = zs_traceback(Pt, z, W.data(), zs_stack(z), (unsigned char*)&db2[0], 0);
        std::printf("%d %d %s %d %s\n", W[n], st1, db1.c_str(), st2, db2.c_str());
    }
    return 0;
}
"""


def _build(tmp_path_factory, *options):
    d = tmp_path_factory.mktemp("tb")
    src = d / "tb.cpp"
    src.write_text(TRACEBACKS)
    exe = d / "tb"
    subprocess.run([CXX, "-std=c++17", "-O2", *options, f"-I{loader.kernel_dir()}", "-o", str(exe), str(src)],
                   check=True)
    return exe


@pytest.fixture(scope="module")
def tracebacks(tmp_path_factory):
    """The compiled TRACEBACKS program."""
    return _build(tmp_path_factory)


@pytest.fixture(scope="module")
def tracebacks_rules(tmp_path_factory):
    """The TRACEBACKS program built as the kernels are for a model with pairing rules (ZK_RULES)."""
    return _build(tmp_path_factory, "-DZK_RULES")


def _host_folds(exe, tmp_path, seqs, temperature, dangles, shape=None, constraints=None, enforce=False, **rules):
    from rnapipe.gpu.zuker_tables import flat_tables, hc_words, span_of

    model = Model(temperature=temperature, dangles=dangles, **rules)
    table = tmp_path / f"P_{temperature:g}_{dangles}.bin"
    table.write_bytes(flat_tables(model.tables(), max(len(s) for s in seqs)).tobytes())
    lines = []
    for k, s in enumerate(seqs):
        lines.append("".join(str(c) for c in encode(s)))
        if shape is not None:
            lines.append(" ".join(map(str, shape[k].tolist())))
        if constraints is not None:
            words = hc_words([constraints[k]], [len(s)], [0], len(s) + 2, enforce, span_of(model))
            lines.append(" ".join(map(str, words.ravel().tolist())))
    text = "".join(line + "\n" for line in lines)
    out = subprocess.run([str(exe), str(table)], input=text, capture_output=True, text=True, check=True).stdout
    return [line.split() for line in out.splitlines()]


def _random(count, lo, hi, seed, alphabet="ACGU", n_rate=0.0):
    rng = random.Random(seed)
    return ["".join("N" if rng.random() < n_rate else rng.choice(alphabet) for _ in range(rng.randint(lo, hi)))
            for _ in range(count)]


@pytest.mark.parametrize("temperature, dangles", [(37.0, 2), (37.0, 0), (20.0, 2)])
def test_gpu_tracebacks_give_rnafold_structures(tracebacks, tmp_path, temperature, dangles):
    """Both GPU tracebacks, built for the host, print RNAfold's structure (not only one of the same energy)
    on random sequences with N, GC-rich and AU-rich ones, poly-A and short ones."""
    RNA = pytest.importorskip("RNA")
    seqs = (_random(120, 20, 300, seed=int(temperature) + dangles, n_rate=0.02)
            + _random(30, 30, 200, seed=5 + dangles, alphabet="GGGCCCAU")
            + _random(30, 30, 200, seed=6 + dangles, alphabet="AAUUUGC")
            + ["A" * 40, "GGGGAAAACCCC", "GCGCGCGCGCGCGCGCGCGCGC", "NNNNNNNNNN", "GGGAAAUCCC"])
    md = RNA.md()
    md.temperature = temperature
    md.dangles = dangles
    wrong = []
    for s, (mfe, st1, db1, st2, db2) in zip(seqs, _host_folds(tracebacks, tmp_path, seqs, temperature, dangles),
                                            strict=True):
        ref, ref_mfe = RNA.fold_compound(s, md).mfe()
        if (int(mfe), st1, db1, st2, db2) != (round(ref_mfe * 100), "0", ref, "0", ref):
            wrong.append((s, mfe, db1, db2, ref))
    assert not wrong, f"{len(wrong)} of {len(seqs)} differ; first: {wrong[0]}"


RULES = [{"no_lp": True}, {"no_gu": True}, {"no_closing_gu": True}, {"max_bp_span": 40},
         {"no_lp": True, "no_gu": True, "no_closing_gu": True, "max_bp_span": 60}]


@pytest.mark.parametrize("rules", RULES, ids=lambda r: ",".join(f"{k}={v}" for k, v in r.items()))
@pytest.mark.parametrize("temperature, dangles", [(37.0, 2), (37.0, 0), (25.0, 2)])
def test_gpu_cell_code_and_tracebacks_apply_the_pairing_rules(tracebacks_rules, tmp_path, rules, temperature,
                                                               dangles):
    """Built with ZK_RULES (as the kernels are for a model with a pairing rule), the GPU fill's cell code and
    both GPU tracebacks give the CPU engine's MFE and structure under each rule alone and all four together."""
    from rnapipe.cpu import zuker as cpu

    seqs = (_random(40, 8, 160, seed=int(temperature) + dangles + len(rules), n_rate=0.02)
            + _random(10, 30, 120, seed=9, alphabet="GGGUUUCA")
            + ["GGGGAAAACCCC", "GGGUUUUCCC", "GUGUGAAAACACAC", "A" * 30])
    options = {"temperature": temperature, "dangles": dangles, **rules}
    ref = cpu.fold_batch(seqs, "default", 1, options)
    wrong = []
    for s, (mfe, st1, db1, st2, db2), (ref_mfe, ref_db) in zip(
            seqs, _host_folds(tracebacks_rules, tmp_path, seqs, temperature, dangles, **rules), ref, strict=True):
        if (int(mfe), st1, db1, st2, db2) != (ref_mfe, "0", ref_db, "0", ref_db):
            wrong.append((s, mfe, db1, db2, ref_mfe, ref_db))
    assert not wrong, f"{len(wrong)} of {len(seqs)} differ; first: {wrong[0]}"


@pytest.fixture(scope="module")
def tracebacks_shape(tmp_path_factory):
    """The TRACEBACKS program built as the kernels are for a batch with SHAPE data (ZK_SHAPE), with the pairing
    rules too."""
    return _build(tmp_path_factory, "-DZK_SHAPE", "-DZK_RULES")


@pytest.mark.parametrize("rules", [{}, {"no_lp": True}, {"no_lp": True, "no_gu": True, "no_closing_gu": True,
                                                          "max_bp_span": 60}], ids=["none", "noLP", "all"])
@pytest.mark.parametrize("dangles, method", [(2, (1.8, -0.6)), (0, (2.6, -0.3))])
def test_gpu_cell_code_and_tracebacks_apply_shape(tracebacks_shape, tmp_path, rules, dangles, method):
    """Built with ZK_SHAPE (as the kernels are for a batch with SHAPE data), the GPU fill's cell code and both GPU
    tracebacks give the CPU engine's MFE and structure with each sequence's SHAPE stacking terms (Deigan's, from
    random reactivities, some missing), with and without the pairing rules."""
    import numpy as np

    from rnapipe.constraints import deigan
    from rnapipe.cpu import zuker as cpu

    seqs = _random(40, 8, 160, seed=dangles + len(rules), n_rate=0.02) + ["GGGGAAAACCCC", "GGGGAAAACCCC" * 5]
    rng = random.Random(len(rules) + 10 * dangles)
    shape = [deigan([-1.0 if rng.random() < 0.1 else rng.expovariate(1.5) for _ in s], *method)
             if k % 7 else np.zeros(len(s), dtype=np.int32) for k, s in enumerate(seqs)]
    options = {"dangles": dangles, **rules}
    ref = cpu.fold_batch(seqs, "default", 1, options, shape=shape)
    wrong = []
    for s, (mfe, st1, db1, st2, db2), (ref_mfe, ref_db) in zip(
            seqs, _host_folds(tracebacks_shape, tmp_path, seqs, 37.0, dangles, shape=shape, **rules), ref,
            strict=True):
        if (int(mfe), st1, db1, st2, db2) != (ref_mfe, "0", ref_db, "0", ref_db):
            wrong.append((s, mfe, db1, db2, ref_mfe, ref_db))
    assert not wrong, f"{len(wrong)} of {len(seqs)} differ; first: {wrong[0]}"
    plain = cpu.fold_batch(seqs, "default", 1, options)
    assert sum(a != b for a, b in zip(ref, plain)) > len(seqs) // 4      # the data change many folds


@pytest.fixture(scope="module")
def tracebacks_hc(tmp_path_factory):
    """The TRACEBACKS program built as the kernels are for a batch with hard constraints (ZK_HC), with the pairing
    rules and SHAPE data too."""
    return _build(tmp_path_factory, "-DZK_HC", "-DZK_RULES", "-DZK_SHAPE")


@pytest.mark.parametrize("rules", [{}, {"no_lp": True}, {"no_gu": True, "no_closing_gu": True},
                                   {"max_bp_span": 40}, {"no_lp": True, "no_gu": True, "max_bp_span": 50}],
                         ids=["none", "noLP", "noGU+noClosingGU", "span40", "noLP+noGU+span50"])
@pytest.mark.parametrize("enforce", [False, True], ids=["plain", "enforce"])
@pytest.mark.parametrize("dangles", [2, 0])
def test_gpu_cell_code_and_tracebacks_apply_hard_constraints(tracebacks_hc, tmp_path, rules, enforce, dangles):
    """Built with ZK_HC (as the kernels are for a batch with constraint lines), the GPU fill's cell code and both GPU
    tracebacks, on the host-built per-position words (zuker_tables.hc_words), give the CPU engine's MFE and
    structure on random constraint lines (tests/test_constraints.py's: constrained pairs canonical or not, x | < >),
    with and without --enforceConstraint, under the pairing rules and with SHAPE terms on some sequences. Where the
    constraints leave no structure both give the CPU engine's energy (INF) and report no failure."""
    import numpy as np

    from rnapipe.cpu import zuker as cpu
    from rnapipe.params import INF
    from test_constraints import random_constraint

    rng = random.Random(dangles + 7 * len(rules) + (100 if enforce else 0))
    seqs = _random(36, 8, 150, seed=dangles + len(rules) + enforce, n_rate=0.02) + ["GGGGAAAACCCC" * 4]
    lines = [random_constraint(s, rng) for s in seqs]
    lines[0] = "." * len(seqs[0])
    lines[-1] = "(" + "." * 10 + ")" + "." * (len(seqs[-1]) - 12)          # a non-canonical constrained pair
    shape = [np.array([rng.randint(-60, 60) for _ in s], dtype=np.int32) if k % 3 == 0
             else np.zeros(len(s), dtype=np.int32) for k, s in enumerate(seqs)]
    options = {"dangles": dangles, "enforce_constraint": enforce, **rules}
    ref = cpu.fold_batch(seqs, "default", 1, options, constraints=lines, shape=shape)
    got = _host_folds(tracebacks_hc, tmp_path, seqs, 37.0, dangles, shape=shape, constraints=lines, enforce=enforce,
                      **rules)
    wrong = []
    for s, line, (mfe, st1, db1, st2, db2), (ref_mfe, ref_db) in zip(seqs, lines, got, ref, strict=True):
        if ref_mfe >= INF:
            ok = (int(mfe), st1, st2) == (ref_mfe, "0", "0")
        else:
            ok = (int(mfe), st1, db1, st2, db2) == (ref_mfe, "0", ref_db, "0", ref_db)
        if not ok:
            wrong.append((s, line, mfe, db1, db2, ref_mfe, ref_db))
    assert not wrong, f"{len(wrong)} of {len(seqs)} differ; first: {wrong[0]}"
    plain = cpu.fold_batch(seqs, "default", 1, options, shape=shape)
    assert sum(a != b for a, b in zip(ref, plain)) > len(seqs) // 4      # the constraints change many folds


PAIRS_HC = r"""
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>
#include "zuker_core.cuh"
int main(int argc, char** argv) {
    std::ifstream pf(argv[1], std::ios::binary | std::ios::ate);
    std::vector<int> table((size_t)pf.tellg() / 4);
    pf.seekg(0);
    pf.read((char*)table.data(), (std::streamsize)(table.size() * 4));
    std::string line, words;
    while (std::getline(std::cin, line) && std::getline(std::cin, words)) {
        const int n = (int)line.size();
        std::vector<signed char> S(n + 2, 0);
        for (int k = 0; k < n; ++k) S[k + 1] = (signed char)(line[k] - '0');
        std::vector<ZkHc> HC(n + 2);
        std::istringstream in(words);
        for (int k = 0; k < n + 2; ++k) in >> HC[k].code >> HC[k].enc >> HC[k].up >> HC[k].dn;
        for (int i = 1; i <= n; ++i)
            for (int j = i + ZK_TURN + 1; j <= n; ++j)
                std::printf("%d ", zk_pair(table.data(), S.data(), i, j, HC.data()));
        std::printf("\n");
    }
    return 0;
}
"""


@pytest.mark.parametrize("rules", [{}, {"no_lp": True}, {"no_gu": True, "max_bp_span": 30},
                                   {"no_lp": True, "no_gu": True, "no_closing_gu": True, "max_bp_span": 40}],
                         ids=["none", "noLP", "noGU+span30", "all"])
@pytest.mark.parametrize("enforce", [False, True], ids=["plain", "enforce"])
def test_hard_constraint_words_give_the_cpu_engines_pair_types_and_runs(tmp_path, rules, enforce):
    """The per-position words the GPU engine makes from each constraint line (zuker_tables.hc_words) give, through
    the kernels' zk_pair (built with ZK_HC and ZK_RULES, run on the host), the very pair types of the CPU engine's
    _hard_constraints for every i < j (type 7 for a constrained non-canonical pair), its unpaired runs UP and DN,
    and the span it grows to."""
    import numpy as np

    from rnapipe.cpu import zuker as cpu
    from rnapipe.gpu.zuker_tables import flat_tables, hc_words, span_of
    from test_constraints import random_constraint

    src = tmp_path / "pairs.cpp"
    src.write_text(PAIRS_HC)
    exe = tmp_path / "pairs"
    subprocess.run([CXX, "-std=c++17", "-O1", "-DZK_HC", "-DZK_RULES", f"-I{loader.kernel_dir()}", "-o", str(exe),
                    str(src)], check=True)
    model = Model(**rules, enforce_constraint=enforce)
    seqs = _random(30, 5, 90, seed=3 + len(rules) + enforce, n_rate=0.03) + ["GGGGAAAACCCC" * 3]
    rng = random.Random(11 + enforce)
    lines = [random_constraint(s, rng) for s in seqs]
    lines[-1] = "(" + "." * 10 + ")" + "((" + "." * 4 + "))" + "." * (len(seqs[-1]) - 20)
    table = tmp_path / "P.bin"
    table.write_bytes(flat_tables(model.tables(), 100).tobytes())
    words = [hc_words([c], [len(s)], [0], len(s) + 2, enforce, span_of(model)) for s, c in zip(seqs, lines)]
    text = "".join("".join(str(c) for c in encode(s)) + "\n" + " ".join(map(str, w.ravel().tolist())) + "\n"
                   for s, w in zip(seqs, words))
    out = subprocess.run([str(exe), str(table)], input=text, capture_output=True, text=True, check=True).stdout
    T = model.tables()
    no_lp, no_gu, _, _ = cpu._rules(T, 1000)
    differ = 0
    for s, c, w, got in zip(seqs, lines, words, out.splitlines(), strict=True):
        n = len(s)
        S = np.zeros(n + 2, dtype=np.int8)
        S[1:n + 1] = encode(s)
        _, _, _, span = cpu._rules(T, n)
        ptype = np.zeros((n + 2, n + 2), dtype=np.int8)
        for i in range(1, n + 1):
            for j in range(i + 4, min(n, i + int(span) - 1) + 1):
                t = params.PAIR_TYPE[S[i], S[j]]
                ptype[i, j] = 0 if no_gu and t in (3, 4) else t
        H = np.zeros(n + 2, dtype=np.int8)
        H[1:n + 1] = cpu.HC_CODES[np.frombuffer(c.encode("ascii"), dtype=np.uint8)]
        before = ptype.copy()
        UP, DN, grown = cpu._hard_constraints(ptype, S, np.int64(n), H, enforce, no_lp, span)
        want = [int(ptype[i, j]) for i in range(1, n + 1) for j in range(i + 4, n + 1)]
        assert [int(x) for x in got.split()] == want, (s, c)
        assert w[1:n + 1, 2].tolist() == UP[1:n + 1].tolist() and w[1:n + 1, 3].tolist() == DN[1:n + 1].tolist()
        assert min(int(w[0, 2]), n) == grown             # the span the fill covers (at most n: all of it)
        differ += not np.array_equal(before, ptype)
    assert differ > len(seqs) // 2                   # the lines change the pair types


# zs_hc_words_of (zuker_hc.cuh) built as the short kernels build it (ZK_HC, ZK_HC16: int16 fields): reads lines
# "n enforce span" then the constraint line, prints the n + 2 words (code enc up dn each).
HC_WORDS16 = r"""
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>
#include "zuker_hc.cuh"
int main() {
    int n, enforce, span;
    std::string line;
    while (std::cin >> n >> enforce >> span) {
        std::cin >> line;
        std::vector<unsigned char> L(n + 1, 0);
        for (int k = 0; k < n; ++k) L[k + 1] = (unsigned char)line[k];
        std::vector<ZkHc> H(n + 2);
        zs_hc_words_of(L.data(), n, H.data(), enforce != 0, span);
        for (int k = 0; k <= n + 1; ++k) std::printf("%d %d %d %d ", H[k].code, H[k].enc, H[k].up, H[k].dn);
        std::printf("\n");
    }
    return 0;
}
"""


@pytest.mark.parametrize("enforce", [False, True], ids=["plain", "enforce"])
def test_short_kernels_hard_constraint_words_equal_the_cpu_engines(tmp_path, enforce):
    """The words the short kernels make on the device from each constraint line (zs_hc_words_of of zuker_hc.cuh,
    int16 fields) equal those the CPU engine's own pass makes (zuker_tables.hc_words, which the test above checks
    against _hard_constraints), field by field, on random lines up to 2,000 nt (partners and runs past 255), pairs
    that close fewer than 3 unpaired nucleotides (dropped) and lines with no pair; the span at position 0 is
    capped at 32767 (the sequences are shorter)."""
    import numpy as np

    from rnapipe.gpu.zuker_tables import NO_SPAN, hc_words
    from test_constraints import random_constraint

    src = tmp_path / "hc16.cpp"
    src.write_text(HC_WORDS16)
    exe = tmp_path / "hc16"
    subprocess.run([CXX, "-std=c++17", "-O1", "-DZK_HC", "-DZK_HC16", f"-I{loader.kernel_dir()}", "-o", str(exe),
                    str(src)], check=True)
    seqs = _random(40, 5, 300, seed=21 + enforce) + _random(3, 1200, 2000, seed=31 + enforce)
    rng = random.Random(41 + enforce)
    lines = [random_constraint(s, rng) for s in seqs]
    seqs += ["GGGAAACCC" * 4, "A" * 30]
    lines += ["((.))((..))(((...)))" + "|x<>." * 3 + "." , "." * 30]
    spans = [NO_SPAN if k % 3 else 30 + k for k in range(len(seqs))]
    text = "".join(f"{len(s)} {int(enforce)} {min(sp, 32767)}\n{c}\n" for s, c, sp in zip(seqs, lines, spans))
    out = subprocess.run([str(exe)], input=text, capture_output=True, text=True, check=True).stdout.splitlines()
    assert len(out) == len(seqs)
    constrained = 0
    for s, c, sp, got in zip(seqs, lines, spans, out, strict=True):
        n = len(s)
        want = hc_words([c], [n], [0], n + 2, enforce, sp)
        want[0, 2] = min(int(want[0, 2]), 32767)
        assert np.array(got.split(), dtype=np.int64).reshape(n + 2, 4).tolist() == want.tolist(), (c, sp)
        constrained += bool((want[1:n + 1, 0] > 0).any())
    assert constrained > len(seqs) // 3                # lines with kept pairs
