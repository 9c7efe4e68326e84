// Zuker MFE for batches of short sequences (rnapipe/gpu/zuker_short.py): the per-cell recursions and the
// traceback on diagonal-major storage, as host+device functions so that a plain C++ build of the same
// code can be checked against the CPU engine without a GPU.
//
// Storage of one sequence (n nt, N = n + 2), all int32:
//   V, WM, WM1      diagonal-major: cell (i, j) at (j - i) * N + i, so that the cells of one anti-diagonal
//                   are contiguous and so are the words that neighbouring cells read (WM[i+1][k-1] and
//                   WM1[k][j-1] for a fixed offset k - i, WM[i][k-1] and WM1[k][j]);
//   XT              row-major by j: XT[j * N + i] = V[i][j] + exterior stem (i, j), INF where i.j cannot
//                   pair, so that the exterior loop W reads contiguous words; its other triangle holds, with
//                   no_lp, CC[i][j] at XT[i * N + j] (zs_store_v);
//   VAU, V1N, VI    the CPU engine's auxiliaries (V plus the inner pair's share of a bulge, 1xn or generic
//                   loop), diagonal-major like V, three consecutive planes of N * N words, so that every
//                   interior loop is one offset from one base (the loop table below).
// The recursions and every energy are zuker_core.cuh's (the same functions rnapipe/gpu/zuker.py uses).
#pragma once

#include "zuker_core.cuh"

#define ZS_MAX_N 2000         // stack entries pack i and j in 11 bits each

// min(a + b, c). Not Hopper's __viaddmin_s32: with it (CUDA 13 through CuPy, H100) cells whose
// interior-loop sweep is empty (maxu < 0) get values that depend on what the pool holds before the
// launch, while this plain form is exact whatever it holds (cause not found).
#define ZS_ADDMIN(a, b, c) zk_min((a) + (b), (c))

struct ZsSeq {
    const signed char* S;   // codes, S[0] = S[n+1] = 0
    int n;
    int N;                  // n + 2
    int* V;
    int* WM;
    int* WM1;
    int* XT;
    int* VAU;
    int* V1N;
    int* VI;
#ifdef ZK_SHAPE
    const int* SS;          // SHAPE stacking terms, N entries (zuker_core.cuh, ZK_SSTACK); set by the kernels
#endif
#ifdef ZK_HC
    const ZkHc* HC;         // hard constraints, N entries (zuker_core.cuh, ZkHc); set by the kernels
    const int* LTE;         // the loop table's entries, (s, n1, size term) each: the (n1, n2) of a loop
#endif
};

// Words of pool one sequence of n nt takes (V, WM, WM1, XT, VAU, V1N, VI: N*N each; the traceback stack).
ZK_HD long long zs_pool_words(int n) {
    long long N = n + 2;
    return 7 * N * N + 3LL * n + 8;
}

ZK_HD ZsSeq zs_seq(const signed char* S, int n, int* base) {
    ZsSeq q;
    q.S = S;
    q.n = n;
    q.N = n + 2;
    long long NN = (long long)q.N * q.N;
    q.V = base;
    q.WM = base + NN;
    q.WM1 = base + 2 * NN;
    q.XT = base + 3 * NN;
    q.VAU = base + 4 * NN;
    q.V1N = base + 5 * NN;
    q.VI = base + 6 * NN;
    return q;
}

ZK_HD int* zs_stack(const ZsSeq& q) { return q.VI + (long long)q.N * q.N; }

ZK_HD int zs_at(const int* A, int N, int i, int j) { return A[(j - i) * N + i]; }

// The interior loops read from the auxiliaries, as a table built on the host (rnapipe/gpu/zuker_short.py,
// loop_table): every (n1, n2) with n1 + n2 <= 30 but the 11 of zk_interior, grouped by auxiliary (kind 0:
// bulges, VAU; 1: 1xn loops, V1N; 2: generic, VI) and within a kind by total size s = n1 + n2, so that the
// loops of a cell with maxu are a prefix of each kind. Header: ZS_LT_START + k = first entry of kind k,
// ZS_LT_COUNT + 31 k + m = entries of kind k with s <= m; then the entries as (s, n1, size term) triples.
#define ZS_LT_START 0
#define ZS_LT_COUNT 3
#define ZS_LT_ENTRIES 96
#define ZS_LT_MAX 496

// Offset of entry (s, n1, kind) from aux plane 0's word of cell (i + 1, j - 1) ((d - 2) * N + i + 1).
ZK_HD int zs_loop_offset(int s, int n1, int kind, int N) { return kind * N * N + n1 - s * N; }

// Part of V[i][i+d] (i.d can pair) that lane r of a group of g evaluates: hairpin (lane 0), the 11 loops
// with tables of their own (by index), the rest of the interior loops from the table (LOFF: offsets,
// LSZ: size terms, LT: the table's header), the multiloop VM by split point.
ZK_HD int zs_v_partial(const int* P, const int* LOFF, const int* LSZ, const int* LT, const ZsSeq& q, int i, int d,
                       int r, int g) {
    const signed char* S = q.S;
    const int N = q.N;
    const int j = i + d;
    const int t = zk_pair(P, S, i, j ZK_HC_ARG(q.HC));
    const bool closes = zk_closes(P, t);     // else the stack alone (zk_v_partial)
    int best = r == 0 && closes ZK_AND_HC_RUN(q, i + 1, d - 1) ? zk_hairpin(P, S, i, j) : ZK_INF;
    int maxu = d - ZK_TURN - 3;
    if (maxu > ZK_MAXLOOP) maxu = ZK_MAXLOOP;
    if (!closes && maxu > 0) maxu = 0;
    const int si1 = S[i + 1], sj1 = S[j - 1];
    for (int c = r; c < ZK_NSPECIAL; c += g) {
        int n1 = (ZK_SPECIAL_N1 >> (2 * c)) & 3, n2 = (ZK_SPECIAL_N2 >> (2 * c)) & 3;
        if (n1 + n2 > maxu ZK_OR_NOT_HC_LOOP(q, i, j, n1, n2)) continue;
        int p = i + 1 + n1, qq = j - 1 - n2;
        int t2 = zk_pair(P, S, p, qq ZK_HC_ARG(q.HC));
        if (t2 && (c == 0 || zk_closes(P, t2)))
            best = zk_min(best, zk_interior(P, n1, n2, t, zk_rtype(t2), si1, sj1, S[p - 1], S[qq + 1]) +
                                q.V[(qq - p) * N + p] + (c == 0 ? ZK_SSTACK(q.SS, i, j) : 0));
    }
    const int* A = q.VAU + (d - 2) * N + i + 1;
    const int outer[3] = {zk_au(P, t), zk_mm(P, ZK_OFF_MISMATCH_INTERIOR_1N, t, si1, sj1),
                          zk_mm(P, ZK_OFF_MISMATCH_INTERIOR, t, si1, sj1)};
#pragma unroll
    for (int k = 0; k < 3; ++k) {
        const int c0 = LT[ZS_LT_START + k];
        const int c1 = maxu < 0 ? c0 : c0 + LT[ZS_LT_COUNT + 31 * k + maxu];
        int m = ZK_INF;
#ifdef ZK_HC
        const int a5 = q.HC[i + 1].up, a3 = q.HC[j - 1].dn;     // at most a5 unpaired after i, a3 before j
        for (int c = c0 + r; c < c1; c += g) {
            const int n1 = q.LTE[3 * c + 1], n2 = q.LTE[3 * c] - n1;
            if (n1 <= a5 && n2 <= a3) m = ZS_ADDMIN(A[LOFF[c]], LSZ[c], m);
        }
#else
        for (int c = c0 + r; c < c1; c += g) m = ZS_ADDMIN(A[LOFF[c]], LSZ[c], m);
#endif
        best = zk_min(best, m + outer[k]);
    }
    // VM: WM[i+1][k-1] + WM1[k][j-1], k = i + x, x = TURN+3 .. d-TURN-2; the closing terms once.
    int m = ZK_INF;
    const int* wa = q.WM + i + 1 - 2 * N;        // WM[i+1][i+x-1] at (x - 2) * N + i + 1
    const int* wb = q.WM1 + i + (d - 1) * N;     // WM1[i+x][j-1] at (d - 1 - x) * N + i + x
    for (int x = ZK_TURN + 3 + r; x <= d - ZK_TURN - 2; x += g)
        m = zk_min(m, wa[x * N] + wb[x * (1 - N)]);
    if (m < ZK_HALF_INF && closes) best = zk_min(best, m + zk_multi_closing(P, S, i, j));
    return best;
}

// no_lp, for the short kernels' storage: V[i][j] from v, the minimum of V's usual terms at the pairable cell
// (i, j): the stack on CC[i+1][j-1]; CC[i][j] = min(v, V[i][j]) goes to XT[i * N + j] (XT's triangle
// that W and the traceback do not read). Without no_lp, v.
ZK_HD int zs_lonely(const int* P, const ZsSeq& q, int i, int j, int v) {
    if (!zk_no_lp(P)) return v;
    const int c = zk_stack_on(P, q.S, i, j, ZK_TYPE(q.S, i, j), q.XT + (i + 1) * q.N + j - 1,
                              ZK_SSTACK(q.SS, i, j) ZK_HC_ARG(q.HC));
    q.XT[i * q.N + j] = zk_min(v, c);
    return c;
}

// V's dependants of a pairable cell: VI, V1N, VAU (ring slot of diagonal d) and XT; with no_lp, V itself from v
// (zs_lonely) and CC.
ZK_HD void zs_store_v(const int* P, const ZsSeq& q, int i, int d, int v) {
    const signed char* S = q.S;
    const int N = q.N, j = i + d;
    v = zs_lonely(P, q, i, j, v);
    q.V[d * N + i] = v;
    const int t = ZK_TYPE(S, i, j);
    const int rt = zk_rtype(t);
    const int a = S[j + 1], b = S[i - 1];
    const int o = d * N + i;
    const bool inner = zk_closes(P, t);      // an inner pair of bulges and interior loops
    q.VI[o] = inner ? v + zk_mm(P, ZK_OFF_MISMATCH_INTERIOR, rt, a, b) : ZK_INF;
    q.V1N[o] = inner ? v + zk_mm(P, ZK_OFF_MISMATCH_INTERIOR_1N, rt, a, b) : ZK_INF;
    q.VAU[o] = inner ? v + zk_au(P, t) : ZK_INF;
    q.XT[j * N + i] = v + zk_exterior_stem_at(P, S, q.n, i, j);
}

ZK_HD void zs_store_unpaired(const ZsSeq& q, int i, int d) {
    const int N = q.N;
    q.V[d * N + i] = ZK_INF;
    const int o = d * N + i;
    q.VI[o] = ZK_INF;
    q.V1N[o] = ZK_INF;
    q.VAU[o] = ZK_INF;
    q.XT[(i + d) * N + i] = ZK_INF;
}

// WM1[i][i+d] from V[i][i+d] = v and WM1[i][j-1].
ZK_HD int zs_wm1(const int* P, const ZsSeq& q, int i, int d, int v) {
#ifdef ZK_HC
    int w1 = q.HC[i + d].up > 0 ? q.WM1[(d - 1) * q.N + i] + zk_sc(P, ZK_ML_BASE) : ZK_INF;   // j may be unpaired
#else
    int w1 = q.WM1[(d - 1) * q.N + i] + zk_sc(P, ZK_ML_BASE);
#endif
    if (v < ZK_HALF_INF) w1 = zk_min(w1, v + zk_multi_stem_at(P, q.S, i, i + d));
    return zk_min(w1, ZK_INF);
}

// Part of WM[i][i+d] for lane r of g: min over k = i + x, x = 1 .. d-TURN-1, of
// min(x * ML_base, WM[i][k-1]) + WM1[k][j]; the x = 0 term (w1, this cell's WM1) is lane 0's.
ZK_HD int zs_wm_partial(const int* P, const ZsSeq& q, int i, int d, int w1, int r, int g) {
    const int N = q.N;
    const int ml_base = zk_sc(P, ZK_ML_BASE);
    int best = r == 0 ? w1 : ZK_INF;
    const int* wa = q.WM + i - N;            // WM[i][i+x-1] at (x - 1) * N + i
    const int* wb = q.WM1 + d * N + i;       // WM1[i+x][j] at (d - x) * N + i + x
#ifdef ZK_HC
    const int ufree = q.HC[i].up;             // x unpaired from i only where they may be
    for (int x = 1 + r; x < d - ZK_TURN; x += g) {
        int u = x <= ufree ? zk_min(zk_min(x * ml_base, ZK_INF), wa[x * N]) : wa[x * N];
        best = zk_min(best, u + wb[x * (1 - N)]);
    }
#else
    for (int x = 1 + r; x < d - ZK_TURN; x += g) {
        int u = zk_min(zk_min(x * ml_base, ZK_INF), wa[x * N]);
        best = zk_min(best, u + wb[x * (1 - N)]);
    }
#endif
    return best;
}

// ---------------------------------------------------------------------------------------------------
// Traceback: rnapipe.cpu.zuker.traceback's tests in its order (ViennaRNA's MFE backtracking, see there).
// Every search for "the first x with pred(x)" is zs_first: on the device one warp tests 32 candidates at a
// time and takes the lowest lane that holds (so the same x comes out as the CPU's sequential loop); on the
// host a plain loop.
#ifdef __CUDA_ARCH__
template <class Pred>
__device__ __forceinline__ int zs_first(int count, int lane, Pred pred) {
    for (int base = 0; base < count; base += 32) {
        int x = base + lane;
        unsigned b = __ballot_sync(0xffffffffu, x < count && pred(x));
        if (b) return base + __ffs(b) - 1;
    }
    return -1;
}
#define ZS_SYNCWARP() __syncwarp()
#else
template <class Pred>
inline int zs_first(int count, int lane, Pred pred) {
    (void)lane;
    for (int x = 0; x < count; ++x)
        if (pred(x)) return x;
    return -1;
}
#define ZS_SYNCWARP() ((void)0)
#endif

#define ZS_PACK(kind, i, j) (((kind) << 22) | ((i) << 11) | (j))

// W: exterior loop values W[0..n] (computed beforehand); out: n bytes, already '.'; every lane of the warp
// calls this with its lane number (lane 0 writes). Stack entries: kind 0 the pair i.j, 1 the WM section
// i..j. Returns 0, or 1 if a value could not be re-derived.
template <class Dummy = void>
ZK_HD int zs_traceback(const int* P, const ZsSeq& q, const int* W, int* stack, unsigned char* out, int lane) {
    const signed char* S = q.S;
    const int n = q.n, N = q.N;
    const int ml_base = zk_sc(P, ZK_ML_BASE);
    int status = 0;
    int top = 0;
    int j = n;
    while (j > ZK_TURN + 1) {
        const int wj = W[j];
        if (ZK_HC_RUN_AND(q, j, 1) wj == W[j - 1]) { --j; continue; }
        // the closing position i from j - TURN - 1 down to 1 (or to j - span + 1): x = j - TURN - 1 - i
        const int jj = j, hi = j - ZK_TURN - 1;
#if defined(ZK_RULES) || defined(ZK_HC)
        const int scan = hi < ZK_REACH(P, q) - ZK_TURN - 1 ? hi : ZK_REACH(P, q) - ZK_TURN - 1;
        int x = zs_first(scan, lane, [&](int x) {
#else
        int x = zs_first(hi, lane, [&](int x) {
#endif
            int e = q.XT[jj * N + hi - x];
            return e < ZK_HALF_INF && W[hi - x - 1] + e == wj;
        });
        if (x >= 0) {
            if (lane == 0) stack[top] = ZS_PACK(0, hi - x, j);
            ++top;
            j = hi - x - 1;
        } else {
#ifdef ZK_HC
            if (wj < ZK_HALF_INF) status = 1;       // else hard constraints leave no structure (zk_traceback)
#else
            status = 1;
#endif
            --j;
        }
    }
    while (top > 0) {
        ZS_SYNCWARP();
        --top;
        const int e = stack[top];
        const int kind = e >> 22;
        int i = (e >> 11) & 2047;
        j = e & 2047;
        if (kind == 0) {
#if defined(ZK_RULES) || defined(ZK_HC)
            int d = j - i;
            if (lane == 0) { out[i - 1] = '('; out[j - 1] = ')'; }
            int target = q.V[d * N + i];
            if (zk_no_lp(P)) {       // the helix inwards while V equals what is left of the target (zk_traceback)
                do {
                    target -= zk_interior_at(P, S, i, j, i + 1, j - 1) + ZK_SSTACK(q.SS, i, j);
                    ++i;
                    --j;
                    d -= 2;
                    if (lane == 0) { out[i - 1] = '('; out[j - 1] = ')'; }
                } while (q.V[d * N + i] == target);
            }
            const bool closes = zk_closes(P, ZK_TYPE(S, i, j));
            if (closes ZK_AND_HC_RUN(q, i + 1, d - 1) && zk_hairpin(P, S, i, j) == target) continue;
#else
            const int d = j - i;
            if (lane == 0) { out[i - 1] = '('; out[j - 1] = ')'; }
            const int target = q.V[d * N + i];
            if (zk_hairpin(P, S, i, j) == target) continue;
#endif
            bool found = false;
            int maxu = d - ZK_TURN - 3;
            if (maxu > ZK_MAXLOOP) maxu = ZK_MAXLOOP;
            for (int n1 = 0; n1 <= maxu; ++n1) {
                const int p = i + 1 + n1;
                int n2 = zs_first(maxu - n1 + 1, lane, [&](int n2) {
                    int qq = j - 1 - n2;
#if defined(ZK_RULES) || defined(ZK_HC)
                    int t2 = zk_pair(P, S, p, qq ZK_HC_ARG(q.HC));
                    return ZK_HC_LOOP_AND(q, i, j, n1, n2) t2 != 0 && (n1 + n2 == 0 || (closes && zk_closes(P, t2))) &&
                           zk_interior_at(P, S, i, j, p, qq) + q.V[(qq - p) * N + p] +
                                   (n1 + n2 == 0 ? ZK_SSTACK(q.SS, i, j) : 0) == target;
#else
                    return zk_ptype(S[p], S[qq]) != 0 &&
                           zk_interior_at(P, S, i, j, p, qq) + q.V[(qq - p) * N + p] +
                                   (n1 + n2 == 0 ? ZK_SSTACK(q.SS, i, j) : 0) == target;
#endif
                });
                if (n2 >= 0) {
                    if (lane == 0) stack[top] = ZS_PACK(0, p, j - 1 - n2);
                    ++top;
                    found = true;
                    break;
                }
            }
#if defined(ZK_RULES) || defined(ZK_HC)
            if (found || !closes) continue;
#else
            if (found) continue;
#endif
            // the multiloop: WM[i+1][k-1] + WM[k][j-1], k from lo up
            const int rest = target - zk_multi_closing(P, S, i, j);
            const int lo = i + ZK_TURN + 3;
            int x = zs_first(j - ZK_TURN - 1 - lo, lane, [&](int x) {
                int k = lo + x;
                return q.WM[(k - 2 - i) * N + i + 1] + q.WM[(j - 1 - k) * N + k] == rest;
            });
            if (x >= 0) {
                int k = lo + x;
                if (lane == 0) {
                    stack[top] = ZS_PACK(1, i + 1, k - 1);
                    stack[top + 1] = ZS_PACK(1, k, j - 1);
                }
                top += 2;
            } else {
                status = 1;
            }
        } else {
            const int target = q.WM[(j - i) * N + i];
            while (j - 1 > i ZK_AND_HC_RUN(q, j, 1) && q.WM[(j - 1 - i) * N + i] + ml_base == target) --j;
            while (i + 1 < j ZK_AND_HC_RUN(q, i, 1) && q.WM[(j - i - 1) * N + i + 1] + ml_base == target) ++i;
            const int v = q.V[(j - i) * N + i];
            if (v < ZK_HALF_INF && v + zk_multi_stem_at(P, S, i, j) == target) {
                if (lane == 0) stack[top] = ZS_PACK(0, i, j);
                ++top;
                continue;
            }
            // the split WM[i][u] + WM[u+1][j], u from i + TURN + 1 up
            const int ii = i, jj = j, lo = i + ZK_TURN + 1;
            int x = zs_first(j - ZK_TURN - 1 - lo, lane, [&](int x) {
                int u = lo + x;
                return q.WM[(u - ii) * N + ii] + q.WM[(jj - u - 1) * N + u + 1] == target;
            });
            if (x >= 0) {
                int u = lo + x;
                if (lane == 0) {
                    stack[top] = ZS_PACK(1, i, u);
                    stack[top + 1] = ZS_PACK(1, u + 1, j);
                }
                top += 2;
            } else {
                status = 1;
            }
        }
    }
    return status;
}
