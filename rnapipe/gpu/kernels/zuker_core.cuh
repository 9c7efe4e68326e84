// Zuker MFE (RNAfold's model, Turner 2004) for the GPU: loop energies, the per-cell recursions and the
// traceback, written once as host+device functions so that the kernels (zuker.cu) and a plain C++ build
// of the same code agree by construction.
//
// The recursions are those of rnapipe/cpu/zuker.py (Lei et al. eqs. (1)-(5): W, V, VBI, VM, WM, plus
// WM1, ViennaRNA's fM1) and the energies those of rnapipe/energy.py (ViennaRNA 2.7's eval_hairpin.c,
// eval_internal.c, eval_exterior.c, E_MLstem). Matrices are (n+2)x(n+2) int32, row-major, 1-based;
// WM1 is stored transposed (WM1T[j][i]) exactly as on the CPU so that the CPU traceback can read
// matrices copied from the GPU and both multiloop sweeps read rows.
#pragma once

#ifdef __CUDACC__
#define ZK_HD __host__ __device__ __forceinline__
#else
#define ZK_HD inline
#endif
#ifdef __CUDA_ARCH__
#define ZK_LDG(p) __ldg(p)
#else
#define ZK_LDG(p) (*(p))
#endif

#define ZK_INF 100000000
#define ZK_HALF_INF 50000000
#define ZK_MAXLOOP 30
#define ZK_TURN 3

// Flat parameter table (int32). Header words hold the variable part's layout; fixed tables follow at
// these offsets (rnapipe/gpu/zuker.py reads the ZK_OFF_ lines to build the array: one source of truth).
#define ZK_H_NTETRA 0
#define ZK_H_NTRI 1
#define ZK_H_NHEXA 2
#define ZK_H_TETRA_SEQ 3
#define ZK_H_TETRA_E 4
#define ZK_H_TRI_SEQ 5
#define ZK_H_TRI_E 6
#define ZK_H_HEXA_SEQ 7
#define ZK_H_HEXA_E 8
#define ZK_H_HPL 9
#define ZK_H_HPL_LEN 10
#define ZK_H_SZ 11              // SZ[n1][n2] (31 x 32): size terms of the interior loops read from aux matrices
// The model's pairing rules (rnapipe.model: RNAfold's --noLP, --noGU, --noClosingGU, --maxBPspan), read only by
// kernels built with ZK_RULES (see zk_pair); without it every rule is off and no code reads them.
#define ZK_H_NO_LP 12
#define ZK_H_NO_GU 13
#define ZK_H_NO_CLOSING_GU 14
#define ZK_H_SPAN 15            // the longest span j - i + 1 of a pair (ZK_NO_SPAN: no limit)
#define ZK_NO_SPAN 1000000000
#define ZK_OFF_SCALARS 16
#define ZK_OFF_STACK 24
#define ZK_OFF_HAIRPIN 88
#define ZK_OFF_BULGE 120
#define ZK_OFF_INTERIOR 152
#define ZK_OFF_MISMATCH_HAIRPIN 184
#define ZK_OFF_MISMATCH_INTERIOR 384
#define ZK_OFF_MISMATCH_INTERIOR_1N 584
#define ZK_OFF_MISMATCH_INTERIOR_23 784
#define ZK_OFF_MISMATCH_MULTI 984
#define ZK_OFF_MISMATCH_EXTERIOR 1184
#define ZK_OFF_DANGLE5 1384
#define ZK_OFF_DANGLE3 1424
#define ZK_OFF_INT11 1464
#define ZK_OFF_INT21 3064
#define ZK_OFF_INT22 11064
#define ZK_OFF_END 51064

// scalars (rnapipe.params SCALAR_*)
#define ZK_ML_BASE 0
#define ZK_ML_CLOSING 1
#define ZK_ML_INTERN 2
#define ZK_NINIO 3
#define ZK_MAX_NINIO 4
#define ZK_TERM_AU 5
#define ZK_DANGLES 7

typedef long long zk_i64;

ZK_HD int zk_tab(const int* P, int off) { return ZK_LDG(P + off); }

ZK_HD int zk_sc(const int* P, int k) { return ZK_LDG(P + ZK_OFF_SCALARS + k); }

// PAIR_TYPE[5][5] and RTYPE of rnapipe.params, as arithmetic so no table is needed on either side and no
// branch on the device: the type of code a*5+b (0..24) is a 4-bit field of one of two 64-bit words.
ZK_HD int zk_ptype(int a, int b) {
    // 0 none, 1 CG, 2 GC, 3 GU, 4 UG, 5 AU, 6 UA (codes A=1, C=2, G=3, U=4)
    const unsigned code = (unsigned)(a * 5 + b);
    const unsigned long long lo = (5ull << (4 * 9)) | (1ull << (4 * 13));                    // AU, CG
    const unsigned long long hi = (2ull << (4 * 1)) | (3ull << (4 * 3)) | (6ull << (4 * 5)) |  // GC, GU, UA
                                  (4ull << (4 * 7));                                           // UG
    return (int)(((code < 16 ? lo : hi) >> (4 * (code & 15))) & 15);
}

ZK_HD int zk_rtype(int t) {
    // 0->0, 1<->2, 3<->4, 5<->6, 7->7
    return (t == 0 || t == 7) ? t : t + 1 - 2 * ((t + 1) & 1);
}

ZK_HD int zk_au(const int* P, int t) { return t > 2 ? zk_sc(P, ZK_TERM_AU) : 0; }

// Hard constraints (RNAfold's -C line, --enforceConstraint), as rnapipe.cpu.zuker applies them (its
// _hard_constraints): kernels built with ZK_HC take one ZkHc per position of every sequence (laid out as the
// padded codes, one more kernel argument, ZK_HC_PARAM), made on the host by rnapipe.gpu.zuker_tables.hc_words
// from the CPU engine's own per-position pass:
//   code  the constrained partner of the position (> 0), else -(bit 0: it may not be the 5' end of a pair,
//         'x' or '>'; bit 1: not the 3' end, 'x' or '<');
//   enc   the 5' end of the innermost constrained pair around it (0: none): a pair of two unconstrained
//         positions crosses no constrained pair exactly when both have the same;
//   up    how many nucleotides from it on may stay unpaired in a row (UP), dn: up to it (DN); at position 0,
//         up holds the span the fill covers (the model's max_bp_span grown to the longest constrained pair,
//         ZK_NO_SPAN without a limit: zk_reach).
// zk_pair then decides "may i.j pair, and with which type" in O(1), and ZK_TYPE gives the energy functions the
// type of a pair that may form: a constrained non-canonical pair has ViennaRNA's non-standard type 7. Built
// without ZK_HC these are the plain model's and no code reads ZkHc.
// With ZK_HC16 (the short kernels, sequences of at most 2,000 nt) the four fields are int16, 8 bytes a position,
// and position 0's span is at most 32767; those words are made on the device (zuker_hc.cuh, zs_hc_words_of).
#ifdef ZK_HC
#ifdef ZK_HC16
struct alignas(8) ZkHc {
    short code;
    short enc;
    short up;
    short dn;
};
#else
struct alignas(16) ZkHc {
    int code;
    int enc;
    int up;
    int dn;
};
#endif
#define ZK_HC_PARAM , const ZkHc* HC
#define ZK_HC_ARG(hc) , (hc)
#define ZK_HC_BATCH_PARAM , const ZkHc* HCall
#define ZK_HC_BATCH_NAME , HCall
#define ZK_HC_UP(hc, k) ((hc)[k].up)
#define ZK_HC_DN(hc, k) ((hc)[k].dn)
ZK_HD int zk_nonstandard(int t) { return t ? t : 7; }
#define ZK_TYPE_OF(a, b) zk_nonstandard(zk_ptype(a, b))
#else
#define ZK_HC_PARAM
#define ZK_HC_ARG(hc)
#define ZK_HC_BATCH_PARAM
#define ZK_HC_BATCH_NAME
#define ZK_TYPE_OF(a, b) zk_ptype(a, b)
#endif
// ZK_TYPE_OF: the energy functions' type of a pair of codes a, b; ZK_TYPE: of the pair i.j of the codes S
#define ZK_TYPE(S, i, j) ZK_TYPE_OF((S)[i], (S)[j])

// The pairing rules, as rnapipe.cpu.zuker applies them (its module docstring). Built without ZK_RULES (the
// default model) these are constants and the code is the plain model's: no rule costs the default anything.
//   zk_pair    the type of pair i.j under no_gu and max_bp_span (0: it cannot form), for i.j with j - i > TURN;
//   zk_closes  whether a pair of type t may close a hairpin, bulge, interior loop or multiloop and be the
//              inner pair of a bulge or interior loop (not GU or UG under no_closing_gu); stacks always may;
//   zk_no_lp   no lonely pairs: V[i][j] is the stack on CC[i+1][j-1] (ViennaRNA's cc, zk_stack_on);
//   zk_span    the longest span j - i + 1 of a pair, ZK_NO_SPAN without a limit.
//   (ZK_HC: the hard constraints first, see ZkHc: a constrained pair has its type whatever the rules say, and with
//   no_lp a pair that no canonical pair could stack on, outside or inside, cannot form.)
ZK_HD int zk_pair(const int* P, const signed char* S, int i, int j ZK_HC_PARAM) {
    const int t = zk_ptype(S[i], S[j]);
#ifdef ZK_HC
    const int a = HC[i].code, b = HC[j].code;
    if (a > 0 || b > 0) return a == j ? (t ? t : 7) : 0;
    if (((-a) & 1) || ((-b) & 2) || HC[i].enc != HC[j].enc) return 0;
#endif
#ifdef ZK_RULES
    if ((zk_tab(P, ZK_H_NO_GU) && (t == 3 || t == 4)) || j - i >= zk_tab(P, ZK_H_SPAN)) return 0;
#ifdef ZK_HC
    if (t && zk_tab(P, ZK_H_NO_LP) && !(j - i + 3 <= zk_tab(P, ZK_H_SPAN) && zk_ptype(S[i - 1], S[j + 1])) &&
        !(j - i - 2 > ZK_TURN && zk_ptype(S[i + 1], S[j - 1])))
        return 0;
#endif
#endif
    return t;
}

ZK_HD bool zk_closes(const int* P, int t) {
#ifdef ZK_RULES
    return !(zk_tab(P, ZK_H_NO_CLOSING_GU) && (t == 3 || t == 4));
#else
    (void)P; (void)t;
    return true;
#endif
}

ZK_HD bool zk_no_lp(const int* P) {
#ifdef ZK_RULES
    return zk_tab(P, ZK_H_NO_LP) != 0;
#else
    (void)P;
    return false;
#endif
}

ZK_HD int zk_span(const int* P) {
#ifdef ZK_RULES
    return zk_tab(P, ZK_H_SPAN);
#else
    (void)P;
    return ZK_NO_SPAN;
#endif
}

// SHAPE pseudo-energies (RNAfold's --shape, Deigan's method), as rnapipe.cpu.zuker applies them (its module
// docstring): each position's stacking term SS[i] (int32, dcal/mol, N = n + 2 entries laid out as the padded
// codes, 0 where there is no data), the four of i, i+1, j-1, j added to the stack of pair i.j on i+1.j-1
// (every fill's stack, no_lp's stack on CC, the tracebacks' re-derivations). Only kernels built with ZK_SHAPE
// take SS (one more kernel argument, ZK_SHAPE_PARAM); without it ZK_SSTACK is 0 and no code reads SS.
#ifdef ZK_SHAPE
#define ZK_SHAPE_PARAM , const int* SSall
#define ZK_SHAPE_NAME , SSall
#define ZK_SSTACK(SS, i, j) ((SS)[i] + (SS)[(i) + 1] + (SS)[(j) - 1] + (SS)[j])
#else
#define ZK_SHAPE_PARAM
#define ZK_SHAPE_NAME
#define ZK_SSTACK(SS, i, j) 0
#endif

ZK_HD int zk_mm(const int* P, int off, int t, int a, int b) { return zk_tab(P, off + (t * 5 + a) * 5 + b); }

// Index of the first special hairpin (ViennaRNA's strstr order) whose codes are S[i .. i+size-1], or -1.
ZK_HD int zk_special(const int* P, const signed char* S, int i, int hcount, int hseq, int size) {
    int count = zk_tab(P, hcount);
    int base = zk_tab(P, hseq);
    for (int k = 0; k < count; ++k) {
        bool hit = true;
        for (int m = 0; m < size; ++m) {
            if ((int)S[i + m] != zk_tab(P, base + k * size + m)) { hit = false; break; }
        }
        if (hit) return k;
    }
    return -1;
}

// energy.hairpin_energy (vrna_E_hairpin); HPL[size] is the size term, extrapolated on the host with the
// CPU engine's own loop_length_energy so the logarithm is the same one.
ZK_HD int zk_hairpin(const int* P, const signed char* S, int i, int j) {
    int t = ZK_TYPE(S, i, j);
    int size = j - i - 1;
    int e = zk_tab(P, zk_tab(P, ZK_H_HPL) + size);
    if (size < ZK_TURN) return e;
    if (size == 4) {
        int k = zk_special(P, S, i, ZK_H_NTETRA, ZK_H_TETRA_SEQ, 6);
        if (k >= 0) return zk_tab(P, zk_tab(P, ZK_H_TETRA_E) + k);
    } else if (size == 6) {
        int k = zk_special(P, S, i, ZK_H_NHEXA, ZK_H_HEXA_SEQ, 8);
        if (k >= 0) return zk_tab(P, zk_tab(P, ZK_H_HEXA_E) + k);
    } else if (size == 3) {
        int k = zk_special(P, S, i, ZK_H_NTRI, ZK_H_TRI_SEQ, 5);
        if (k >= 0) return zk_tab(P, zk_tab(P, ZK_H_TRI_E) + k);
        return e + zk_au(P, t);
    }
    return e + zk_mm(P, ZK_OFF_MISMATCH_HAIRPIN, t, S[i + 1], S[j - 1]);
}

// energy.interior_energy (vrna_E_internal); loops never exceed MAXLOOP, so no extrapolation here.
ZK_HD int zk_interior(const int* P, int n1, int n2, int t, int t2, int si1, int sj1, int sp1, int sq1) {
    int nl = n1 > n2 ? n1 : n2;
    int ns = n1 > n2 ? n2 : n1;
    if (nl == 0) return zk_tab(P, ZK_OFF_STACK + t * 8 + t2);
    if (ns == 0) {
        int e = zk_tab(P, ZK_OFF_BULGE + nl);
        if (nl == 1) return e + zk_tab(P, ZK_OFF_STACK + t * 8 + t2);
        return e + zk_au(P, t) + zk_au(P, t2);
    }
    int ninio = zk_sc(P, ZK_NINIO);
    int max_ninio = zk_sc(P, ZK_MAX_NINIO);
    if (ns == 1) {
        if (nl == 1) return zk_tab(P, ZK_OFF_INT11 + ((t * 8 + t2) * 5 + si1) * 5 + sj1);
        if (nl == 2) {
            if (n1 == 1) return zk_tab(P, ZK_OFF_INT21 + (((t * 8 + t2) * 5 + si1) * 5 + sq1) * 5 + sj1);
            return zk_tab(P, ZK_OFF_INT21 + (((t2 * 8 + t) * 5 + sq1) * 5 + si1) * 5 + sp1);
        }
        int e = zk_tab(P, ZK_OFF_INTERIOR + nl + 1);
        int a = (nl - ns) * ninio;
        e += a < max_ninio ? a : max_ninio;
        return e + zk_mm(P, ZK_OFF_MISMATCH_INTERIOR_1N, t, si1, sj1) + zk_mm(P, ZK_OFF_MISMATCH_INTERIOR_1N, t2, sq1, sp1);
    }
    if (ns == 2) {
        if (nl == 2)
            return zk_tab(P, ZK_OFF_INT22 + ((((t * 8 + t2) * 5 + si1) * 5 + sp1) * 5 + sq1) * 5 + sj1);
        if (nl == 3) {
            int e = zk_tab(P, ZK_OFF_INTERIOR + 5) + ninio;
            return e + zk_mm(P, ZK_OFF_MISMATCH_INTERIOR_23, t, si1, sj1) + zk_mm(P, ZK_OFF_MISMATCH_INTERIOR_23, t2, sq1, sp1);
        }
    }
    int e = zk_tab(P, ZK_OFF_INTERIOR + nl + ns);
    int a = (nl - ns) * ninio;
    e += a < max_ninio ? a : max_ninio;
    return e + zk_mm(P, ZK_OFF_MISMATCH_INTERIOR, t, si1, sj1) + zk_mm(P, ZK_OFF_MISMATCH_INTERIOR, t2, sq1, sp1);
}

ZK_HD int zk_interior_at(const int* P, const signed char* S, int i, int j, int p, int q) {
    int t = ZK_TYPE(S, i, j);
    int t2 = zk_rtype(ZK_TYPE(S, p, q));
    return zk_interior(P, p - i - 1, j - q - 1, t, t2, S[i + 1], S[j - 1], S[p - 1], S[q + 1]);
}

// no_lp: V[i][j] of a pair of type t, the stack on CC[i+1][j-1] (*cc_inner, read only where i+1.j-1 can
// pair, so only once written) with its SHAPE term sstack (0 without); INF where that cannot form
// (rnapipe.cpu.zuker's _fill, ViennaRNA's c).
ZK_HD int zk_stack_on(const int* P, const signed char* S, int i, int j, int t, const int* cc_inner, int sstack
                      ZK_HC_PARAM) {
    if (j - i - 2 <= ZK_TURN) return ZK_INF;
    const int t2 = zk_pair(P, S, i + 1, j - 1 ZK_HC_ARG(HC));
    if (t2 == 0) return ZK_INF;
    const int c = *cc_inner + zk_tab(P, ZK_OFF_STACK + t * 8 + zk_rtype(t2)) + sstack;
    return c >= ZK_HALF_INF ? ZK_INF : c;
}

// energy.exterior_stem / multi_stem with their neighbour rules (-1: no neighbour).
ZK_HD int zk_stem(const int* P, int mm_off, int t, int n5d, int n3d) {
    int e = 0;
    if (n5d >= 0 && n3d >= 0) e += zk_mm(P, mm_off, t, n5d, n3d);
    else if (n5d >= 0) e += zk_tab(P, ZK_OFF_DANGLE5 + t * 5 + n5d);
    else if (n3d >= 0) e += zk_tab(P, ZK_OFF_DANGLE3 + t * 5 + n3d);
    return e + zk_au(P, t);
}

ZK_HD int zk_exterior_stem_at(const int* P, const signed char* S, int n, int i, int j) {
    int t = ZK_TYPE(S, i, j);
    if (zk_sc(P, ZK_DANGLES) == 0) return zk_stem(P, ZK_OFF_MISMATCH_EXTERIOR, t, -1, -1);
    int n5d = i > 1 ? S[i - 1] : -1;
    int n3d = j < n ? S[j + 1] : -1;
    return zk_stem(P, ZK_OFF_MISMATCH_EXTERIOR, t, n5d, n3d);
}

// A multiloop stem's term: of the pair i.j from the codes S (zk_multi_stem_at), or from its type t and the codes
// a = S[i - 1], b = S[j + 1] beside it (zk_multi_stem_of)
ZK_HD int zk_multi_stem_of(const int* P, int t, int a, int b) {
    int e = zk_sc(P, ZK_ML_INTERN);
    if (zk_sc(P, ZK_DANGLES) == 0) return e + zk_stem(P, ZK_OFF_MISMATCH_MULTI, t, -1, -1);
    return e + zk_stem(P, ZK_OFF_MISMATCH_MULTI, t, a, b);
}
ZK_HD int zk_multi_stem_at(const int* P, const signed char* S, int i, int j) {
    return zk_multi_stem_of(P, ZK_TYPE(S, i, j), S[i - 1], S[j + 1]);
}

// from the type tt of (i, j) (ZK_TYPE) and the codes si1 = S[i + 1], sj1 = S[j - 1] (zk_fin_lanes: its shared copies)
ZK_HD int zk_multi_closing_of(const int* P, int tt, int si1, int sj1) {
    int t = zk_rtype(tt);
    int e = zk_sc(P, ZK_ML_CLOSING) + zk_sc(P, ZK_ML_INTERN);
    if (zk_sc(P, ZK_DANGLES) == 0) return e + zk_stem(P, ZK_OFF_MISMATCH_MULTI, t, -1, -1);
    return e + zk_stem(P, ZK_OFF_MISMATCH_MULTI, t, sj1, si1);
}
ZK_HD int zk_multi_closing(const int* P, const signed char* S, int i, int j) {
    return zk_multi_closing_of(P, ZK_TYPE(S, i, j), S[i + 1], S[j - 1]);
}

ZK_HD int zk_min(int a, int b) { return a < b ? a : b; }

// The interior loops read from the auxiliaries (every (n1, n2) with n1 + n2 <= 30 but the 11 of zk_interior), listed
// by size s = n1 + n2, then n1: ZK_NLOOPS of them. zk_loop_entry(e, true) is loop e's s, (e, false) its n1; -1 past
// the end. The kernels whose lanes go over cells unroll this list (zuker_short.cu's chunks, zuker.cu's zk_fin_lanes).
#ifdef __CUDACC__
#define ZK_CHD __host__ __device__ constexpr
#else
#define ZK_CHD constexpr
#endif
#define ZK_NLOOPS 485
ZK_CHD bool zk_loop_special(int n1, int n2) {
    return (n1 == 0 && n2 <= 2) || (n2 == 0 && n1 <= 2) || (n1 == 1 && n2 <= 2) || (n1 == 2 && n2 <= 3) ||
           (n1 == 3 && n2 == 2);
}

ZK_CHD int zk_loop_entry(int e, bool want_s) {
    int k = 0;
    for (int s = 0; s <= ZK_MAXLOOP; ++s)
        for (int n1 = 0; n1 <= s; ++n1) {
            if (zk_loop_special(n1, s - n1)) continue;
            if (k == e) return want_s ? s : n1;
            ++k;
        }
    return -1;
}
static_assert(zk_loop_entry(ZK_NLOOPS - 1, true) == ZK_MAXLOOP && zk_loop_entry(ZK_NLOOPS, true) == -1, "loop count");

// One sequence's matrices. Every cell value stays within [-1e6, INF], so sums of three fit int32.
// VI, V1N, VAU (rnapipe.cpu.zuker's auxiliaries, full matrices here): V plus the inner pair's part of a
// generic interior loop (its mismatch), of a 1xn loop (its 1xn mismatch), of a bulge >= 3 (terminal AU/GU),
// so that those loops are one add-min each: aux[p][q] + SZ[n1][n2] + the closing pair's part.
struct ZkSeq {
    const signed char* S;   // padded codes, S[0] = S[n+1] = 0
    int n;
    long long N;            // n + 2
    int* V;
    int* WM;
    int* WM1T;
    int* VI;
    int* V1N;
    int* VAU;
    int* VMX;               // VMX[i][j] = min_k WM[i+1][k-1] + WM1T[j-1][k] (VM without the closing terms)
#ifdef ZK_SHAPE
    const int* SS;          // SHAPE stacking terms, N entries (ZK_SSTACK)
#endif
#ifdef ZK_HC
    const ZkHc* HC;         // hard constraints, N entries (ZkHc)
#endif
};

// The span j - i + 1 the fill, W and the traceback cover: the model's max_bp_span, and with hard constraints the
// sequence's own (grown to its longest constrained pair, ZkHc's position 0).
#ifdef ZK_HC
#define ZK_REACH(P, q) ((q).HC[0].up)
#else
#define ZK_REACH(P, q) zk_span(P)
#endif

// With hard constraints: whether len nucleotides from i on may stay unpaired (ZK_HC_RUN), and whether an interior
// loop of pair i.j with n1 unpaired after i and n2 before j may (ZK_HC_LOOP), from UP and DN of ZkHc. The tests
// join a condition as "&& test" (ZK_AND_...), "test &&" (..._AND) or "|| !test" (ZK_OR_NOT_...), and built
// without ZK_HC they are no text at all, so that those builds' code is what it is without hard constraints.
#ifdef ZK_HC
#define ZK_HC_RUN(q, i, len) ((q).HC[i].up >= (len))
#define ZK_HC_LOOP(q, i, j, n1, n2) ((q).HC[(i) + 1].up >= (n1) && (q).HC[(j) - 1].dn >= (n2))
#define ZK_AND_HC_RUN(q, i, len) && ZK_HC_RUN(q, i, len)
#define ZK_HC_RUN_AND(q, i, len) ZK_HC_RUN(q, i, len) &&
#define ZK_AND_HC_LOOP(q, i, j, n1, n2) && ZK_HC_LOOP(q, i, j, n1, n2)
#define ZK_HC_LOOP_AND(q, i, j, n1, n2) ZK_HC_LOOP(q, i, j, n1, n2) &&
#define ZK_OR_NOT_HC_LOOP(q, i, j, n1, n2) || !ZK_HC_LOOP(q, i, j, n1, n2)
#else
#define ZK_AND_HC_RUN(q, i, len)
#define ZK_HC_RUN_AND(q, i, len)
#define ZK_AND_HC_LOOP(q, i, j, n1, n2)
#define ZK_HC_LOOP_AND(q, i, j, n1, n2)
#define ZK_OR_NOT_HC_LOOP(q, i, j, n1, n2)
#endif

// The 11 loops with tables or rules of their own (stack, bulges of 1 and 2, 1x1, 1x2, 2x1, 2x2, 2x3,
// 3x2), as (n1, n2) packed two bits each; every other (n1, n2) goes through SZ.
#define ZK_SPECIAL_N1 ((0u) | (0u << 2) | (0u << 4) | (1u << 6) | (2u << 8) | (1u << 10) | (1u << 12) | \
                       (2u << 14) | (2u << 16) | (2u << 18) | (3u << 20))
#define ZK_SPECIAL_N2 ((0u) | (1u << 2) | (2u << 4) | (0u << 6) | (0u << 8) | (1u << 10) | (2u << 12) | \
                       (1u << 14) | (2u << 16) | (3u << 18) | (2u << 20))
#define ZK_NSPECIAL 11

// Part of V[i][j] (eq. 2: hairpin, VBI eq. 3, VM eq. 4) that lane `lane` of `width` evaluates: lane 0
// the hairpin, lanes split the interior loops by n2 and the multiloop split points k. The minimum over
// all lanes is V[i][j]; every candidate holding an INF term is >= HALF_INF and loses to the hairpin.
ZK_HD int zk_v_partial(const int* P, const ZkSeq& q, int i, int j, int lane, int width) {
    const signed char* S = q.S;
    int t = zk_pair(P, S, i, j ZK_HC_ARG(q.HC));
    if (t == 0) return ZK_INF;
    const bool closes = zk_closes(P, t);     // else the stack alone (maxu 0: no other loop, no hairpin, no VM)
    int best = ZK_INF;
    if (lane == 0 && closes ZK_AND_HC_RUN(q, i + 1, j - i - 1)) best = zk_hairpin(P, S, i, j);
    int maxu = j - i - ZK_TURN - 3;
    if (maxu > ZK_MAXLOOP) maxu = ZK_MAXLOOP;
    if (!closes && maxu > 0) maxu = 0;
    int si1 = S[i + 1], sj1 = S[j - 1];
    for (int c = lane; c < ZK_NSPECIAL; c += width) {
        int n1 = (ZK_SPECIAL_N1 >> (2 * c)) & 3, n2 = (ZK_SPECIAL_N2 >> (2 * c)) & 3;
        if (n1 + n2 > maxu ZK_OR_NOT_HC_LOOP(q, i, j, n1, n2)) continue;
        int p = i + 1 + n1, qq = j - 1 - n2;
        int t2 = zk_pair(P, S, p, qq ZK_HC_ARG(q.HC));
        if (t2 && (c == 0 || zk_closes(P, t2)))
            best = zk_min(best, zk_interior(P, n1, n2, t, zk_rtype(t2), si1, sj1, S[p - 1], S[qq + 1]) +
                                q.V[p * q.N + qq] + (c == 0 ? ZK_SSTACK(q.SS, i, j) : 0));
    }
    // The rest: bulges >= 3 (VAU), 1xn with n >= 3 (V1N), generic (VI); aux is INF where p.q cannot pair
    // and SZ is INF at the special (n1, n2), so neither can win.
    const int outer[3] = {zk_au(P, t), zk_mm(P, ZK_OFF_MISMATCH_INTERIOR_1N, t, si1, sj1),
                          zk_mm(P, ZK_OFF_MISMATCH_INTERIOR, t, si1, sj1)};
    const int* SZ = P + zk_tab(P, ZK_H_SZ);
#ifdef ZK_HC
    const int a5 = q.HC[i + 1].up, a3 = q.HC[j - 1].dn;      // at most a5 unpaired after i, a3 before j
    for (int n1 = 0; n1 <= maxu && n1 <= a5; ++n1) {
        const long long row = (long long)(i + 1 + n1) * q.N + j - 1;
        for (int n2 = lane; n2 <= maxu - n1 && n2 <= a3; n2 += width) {
#else
    for (int n1 = 0; n1 <= maxu; ++n1) {
        const long long row = (long long)(i + 1 + n1) * q.N + j - 1;
        for (int n2 = lane; n2 <= maxu - n1; n2 += width) {
#endif
            int kind = n1 < n2 ? n1 : n2;
            kind = kind < 2 ? kind : 2;
            const int* A = kind == 0 ? q.VAU : (kind == 1 ? q.V1N : q.VI);
            int e = A[row - n2] + ZK_LDG(SZ + n1 * 32 + n2) + (kind == 0 ? outer[0] : (kind == 1 ? outer[1] : outer[2]));
            best = zk_min(best, e);
        }
    }
    // VM: WM[i+1][k-1] + WM1[k][j-1] for k = i+TURN+3 .. j-TURN-2, summed up by cell (i+1, j-1) two
    // diagonals ago from the very rows its own WM read (zk_wm_partial), so each row is read once.
    if (lane == 0 && closes) {
        int m = q.VMX[i * q.N + j];
        if (m < ZK_HALF_INF) best = zk_min(best, m + zk_multi_closing(P, S, i, j));
    }
    return best;
}

// no_lp (ViennaRNA's cc and c): given v, the minimum of V's usual terms at cell (i, j), returns V[i][j], the stack
// on CC[i+1][j-1], and with `store` sets CC[i][j] = min(v, V[i][j]); without no_lp returns v. CC is kept in V's
// lower triangle (CC[i][j] at V[j][i]), which nothing else reads: no memory of its own.
ZK_HD int zk_lonely(const int* P, const ZkSeq& q, int i, int j, int v, bool store) {
    if (!zk_no_lp(P)) return v;
    const int t = zk_pair(P, q.S, i, j ZK_HC_ARG(q.HC));
    if (t == 0) return ZK_INF;
    const int c = zk_stack_on(P, q.S, i, j, t, q.V + (long long)(j - 1) * q.N + i + 1, ZK_SSTACK(q.SS, i, j)
                              ZK_HC_ARG(q.HC));
    if (store) q.V[(long long)j * q.N + i] = zk_min(v, c);
    return c;
}

// WM1[i][j] (ViennaRNA's fM1): one branch starting at i, then unpaired to j (if j may be); needs V[i][j] (= v).
ZK_HD int zk_wm1(const int* P, const ZkSeq& q, int i, int j, int v) {
#ifdef ZK_HC
    int w1 = q.HC[j].up > 0 ? q.WM1T[(long long)(j - 1) * q.N + i] + zk_sc(P, ZK_ML_BASE) : ZK_INF;
#else
    int w1 = q.WM1T[(long long)(j - 1) * q.N + i] + zk_sc(P, ZK_ML_BASE);
#endif
    if (v < ZK_HALF_INF) w1 = zk_min(w1, v + zk_multi_stem_at(P, q.S, i, j));
    return zk_min(w1, ZK_INF);
}

// Part of WM[i][j] (eq. 5) for one lane: min over k = i .. j-TURN-1 of U_i(k) + WM1[k][j], U_i(i) = 0
// and U_i(k) = min((k-i)·ML_base, WM[i][k-1]); the k = i term uses w1 = WM1[i][j] of this very cell.
// Also, in vm: this lane's part of VMX[i-1][j+1] = min over k = i+TURN+2 .. j-TURN-1 of WM[i][k-1] +
// WM1T[j][k], the same two rows.
// Split point k of WM(i, j) (ru = WM row i shifted by one, rw = WM1T row j): the k - i unpaired bases or
// WM[i][k-1], plus WM1T[j][k], into best; from vbeg on, WM[i][k-1] + WM1T[j][k] into vmin (VMX). With hard
// constraints (ZK_HC_UFREE: ufree, how many from i may stay unpaired) the k - i unpaired only where they may.
#ifdef ZK_HC
#define ZK_HC_UFREE , int ufree
#define ZK_HC_UFREE_OF(q, i) , (q).HC[i].up
#else
#define ZK_HC_UFREE
#define ZK_HC_UFREE_OF(q, i)
#endif
ZK_HD void zk_wm_split(const int* ru, const int* rw, int i, int k, int ml_base, int vbeg, int& best, int& vmin
                       ZK_HC_UFREE) {
    const int wm = ru[k];
    const int w = rw[k];
#ifdef ZK_HC
    const int u = k - i <= ufree ? zk_min(zk_min((k - i) * ml_base, ZK_INF), wm) : wm;
#else
    const int u = zk_min(zk_min((k - i) * ml_base, ZK_INF), wm);
#endif
    best = zk_min(best, u + w);
    if (k >= vbeg) vmin = zk_min(vmin, wm + w);
}

ZK_HD int zk_wm_partial(const int* P, const ZkSeq& q, int i, int j, int w1, int lane, int width, int& vm) {
    int best = lane == 0 ? w1 : ZK_INF;
    int vmin = ZK_INF;
    int ml_base = zk_sc(P, ZK_ML_BASE);
    const int* rw = q.WM1T + (long long)j * q.N;
    const int* ru = q.WM + (long long)i * q.N - 1;
    const int vbeg = i + ZK_TURN + 2;
    for (int k = i + 1 + lane; k < j - ZK_TURN; k += width)
        zk_wm_split(ru, rw, i, k, ml_base, vbeg, best, vmin ZK_HC_UFREE_OF(q, i));
    vm = vmin;
    return best;
}

ZK_HD void zk_store(const int* P, const ZkSeq& q, int i, int j, int v, int w1, int wm, int vm) {
    q.V[i * q.N + j] = v;
    if (i > 1 && j < q.n) q.VMX[(i - 1) * q.N + j + 1] = vm;
    if (v < ZK_HALF_INF && zk_closes(P, ZK_TYPE(q.S, i, j))) {   // an inner pair of bulges and interior loops
        int t = ZK_TYPE(q.S, i, j);
        int rt = zk_rtype(t);
        int a = q.S[j + 1], b = q.S[i - 1];
        q.VI[i * q.N + j] = v + zk_mm(P, ZK_OFF_MISMATCH_INTERIOR, rt, a, b);
        q.V1N[i * q.N + j] = v + zk_mm(P, ZK_OFF_MISMATCH_INTERIOR_1N, rt, a, b);
        q.VAU[i * q.N + j] = v + zk_au(P, t);
    }
    q.WM1T[(long long)j * q.N + i] = w1;
    q.WM[i * q.N + j] = zk_min(wm, ZK_INF);
}

// Part of W[j] (eq. 1) over the closing positions i of the last exterior helix, for one thread.
ZK_HD int zk_w_partial(const int* P, const ZkSeq& q, const int* W, int j, int tid, int width) {
    int best = ZK_INF;
#if defined(ZK_RULES) || defined(ZK_HC)
    const int ilo = j - ZK_REACH(P, q) + 1 > 1 ? j - ZK_REACH(P, q) + 1 : 1;    // no pair spans more
#else
    const int ilo = 1;
#endif
    for (int i = ilo + tid; i < j - ZK_TURN; i += width) {
        int v = q.V[i * q.N + j];
        if (v < ZK_HALF_INF) best = zk_min(best, W[i - 1] + v + zk_exterior_stem_at(P, q.S, q.n, i, j));
    }
    return best;
}

// rnapipe.cpu.zuker.traceback: the same tests in the same order (ViennaRNA's MFE backtracking: the exterior
// helix nearest the 3' end first; per pair the hairpin, the interior loops by n1 then n2, the multiloop as
// WM[i+1][k-1] + WM[k][j-1] by k; per WM section the 3' then 5' unpaired ends, one branch, the first split)
// and the same stack discipline, so that among co-optimal structures the same one comes out, RNAfold's.
// stack: 3 ints per entry, 3n + 8 entries (n + 8 suffice: the entries are disjoint stretches); pt: n + 2
// ints. Returns 0, or 1 if a stored value could not be re-derived (never expected).
ZK_HD int zk_traceback(const int* P, const ZkSeq& q, const int* W, int* stack, int* pt) {
    const signed char* S = q.S;
    const int n = q.n;
    const long long N = q.N;
    const int ml_base = zk_sc(P, ZK_ML_BASE);
    int status = 0;
    for (int k = 0; k < n + 2; ++k) pt[k] = 0;
    int top = 0;
    int j = n;
    while (j > ZK_TURN + 1) {
        if (ZK_HC_RUN_AND(q, j, 1) W[j] == W[j - 1]) { --j; continue; }
        bool found = false;
#if defined(ZK_RULES) || defined(ZK_HC)
        const int ilo = j - ZK_REACH(P, q) + 1 > 1 ? j - ZK_REACH(P, q) + 1 : 1;
#else
        const int ilo = 1;
#endif
        for (int i = j - ZK_TURN - 1; i >= ilo; --i) {
            int v = q.V[i * N + j];
            if (v < ZK_HALF_INF && W[i - 1] + v + zk_exterior_stem_at(P, S, n, i, j) == W[j]) {
                stack[3 * top] = 0; stack[3 * top + 1] = i; stack[3 * top + 2] = j; ++top;
                j = i - 1;
                found = true;
                break;
            }
        }
        if (!found) {
#ifdef ZK_HC
            if (W[j] < ZK_HALF_INF) status = 1;     // else hard constraints leave no structure: the CPU's walk goes on
#else
            status = 1;
#endif
            --j;
        }
    }
    while (top > 0) {
        --top;
        int kind = stack[3 * top], i = stack[3 * top + 1];
        j = stack[3 * top + 2];
        if (kind == 0) {
            pt[i] = j;
            pt[j] = i;
            int target = q.V[i * N + j];
            if (zk_no_lp(P)) {
                // V[i][j] is the stack on CC[i+1][j-1]: the helix goes on inwards while V equals what is left
                // of the target (rnapipe.cpu.zuker.traceback's entries of kind 2, walked in place)
                do {
                    target -= zk_interior_at(P, S, i, j, i + 1, j - 1) + ZK_SSTACK(q.SS, i, j);
                    ++i;
                    --j;
                    pt[i] = j;
                    pt[j] = i;
                } while (q.V[i * N + j] == target);
            }
            const bool closes = zk_closes(P, ZK_TYPE(S, i, j));
            if (closes ZK_AND_HC_RUN(q, i + 1, j - i - 1) && zk_hairpin(P, S, i, j) == target) continue;
            bool found = false;
            int maxu = j - i - ZK_TURN - 3;
            if (maxu > ZK_MAXLOOP) maxu = ZK_MAXLOOP;
            for (int n1 = 0; n1 <= maxu && !found; ++n1) {
                int p = i + 1 + n1;
                for (int n2 = 0; n2 <= maxu - n1; ++n2) {
#ifdef ZK_HC
                    if (!ZK_HC_LOOP(q, i, j, n1, n2)) continue;
#endif
                    int qq = j - 1 - n2;
                    int t2 = zk_pair(P, S, p, qq ZK_HC_ARG(q.HC));
                    if (t2 && (n1 + n2 == 0 || (closes && zk_closes(P, t2))) &&
                        zk_interior_at(P, S, i, j, p, qq) + q.V[p * N + qq] +
                                (n1 + n2 == 0 ? ZK_SSTACK(q.SS, i, j) : 0) == target) {
                        stack[3 * top] = 0; stack[3 * top + 1] = p; stack[3 * top + 2] = qq; ++top;
                        found = true;
                        break;
                    }
                }
            }
            if (found || !closes) continue;
            int rest = target - zk_multi_closing(P, S, i, j);
            for (int k = i + ZK_TURN + 3; k < j - ZK_TURN - 1; ++k) {
                if (q.WM[(i + 1) * N + k - 1] + q.WM[k * N + j - 1] == rest) {
                    stack[3 * top] = 1; stack[3 * top + 1] = i + 1; stack[3 * top + 2] = k - 1;
                    stack[3 * top + 3] = 1; stack[3 * top + 4] = k; stack[3 * top + 5] = j - 1;
                    top += 2;
                    found = true;
                    break;
                }
            }
            if (!found) status = 1;
        } else {
            int target = q.WM[i * N + j];
            while (j - 1 > i ZK_AND_HC_RUN(q, j, 1) && q.WM[i * N + j - 1] + ml_base == target) --j;
            while (i + 1 < j ZK_AND_HC_RUN(q, i, 1) && q.WM[(i + 1) * N + j] + ml_base == target) ++i;
            int v = q.V[i * N + j];
            if (v < ZK_HALF_INF && v + zk_multi_stem_at(P, S, i, j) == target) {
                stack[3 * top] = 0; stack[3 * top + 1] = i; stack[3 * top + 2] = j; ++top;
                continue;
            }
            bool found = false;
            for (int u = i + ZK_TURN + 1; u < j - ZK_TURN - 1; ++u) {
                if (q.WM[i * N + u] + q.WM[(u + 1) * N + j] == target) {
                    stack[3 * top] = 1; stack[3 * top + 1] = i; stack[3 * top + 2] = u;
                    stack[3 * top + 3] = 1; stack[3 * top + 4] = u + 1; stack[3 * top + 5] = j;
                    top += 2;
                    found = true;
                    break;
                }
            }
            if (!found) status = 1;
        }
    }
    return status;
}
