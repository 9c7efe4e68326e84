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
        q.V = &mx[0]; q.WM = &mx[NN]; q.WM1T = &mx[2 * NN]; q.VI = &mx[3 * NN]; q.V1N = &mx[4 * NN];
        q.VAU = &mx[5 * NN]; q.VMX = &mx[6 * NN];
        for (int d = ZK_TURN + 1; d < n; ++d)
            for (int i = 1; i + d <= n; ++i) {
                const int j = i + d;
                int v = zk_v_partial(Pt, q, i, j, 0, 1);
#ifdef ZK_RULES
                v = zk_lonely(Pt, q, i, j, v, true);
#endif
                const int w1 = zk_wm1(Pt, q, i, j, v);
                int vm;
                const int wm = zk_wm_partial(Pt, q, i, j, w1, 0, 1, vm);
                zk_store(Pt, q, i, j, v, w1, wm, vm);
            }
        std::vector<int> W(n + 1, 0);
        for (int j = ZK_TURN + 2; j <= n; ++j) W[j] = zk_min(W[j - 1], zk_w_partial(Pt, q, W.data(), j, 0, 1));
        std::vector<int> stack(3 * (3 * n + 8)), pt(n + 2);
        const int st1 = zk_traceback(Pt, q, W.data(), stack.data(), pt.data());
        std::string db1 = brackets(pt, n);
        // zuker_short.cuh's storage of the same values
        std::vector<int> pool(zs_pool_words(n), ZK_INF);
        ZsSeq z = zs_seq(S.data(), n, pool.data());
#ifdef ZK_SHAPE
        z.SS = SS.data();
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


def _host_folds(exe, tmp_path, seqs, temperature, dangles, shape=None, **rules):
    from rnapipe.gpu.zuker_tables import flat_tables

    table = tmp_path / f"P_{temperature:g}_{dangles}.bin"
    table.write_bytes(flat_tables(Model(temperature=temperature, dangles=dangles, **rules).tables(),
                                  max(len(s) for s in seqs)).tobytes())
    if shape is None:
        text = "".join("".join(str(c) for c in encode(s)) + "\n" for s in seqs)
    else:
        text = "".join("".join(str(c) for c in encode(s)) + "\n" + " ".join(map(str, v.tolist())) + "\n"
                       for s, v in zip(seqs, shape))
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
