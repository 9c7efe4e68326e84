// Zuker MFE for a batch of short sequences in one launch: one block per sequence does the fill (one
// anti-diagonal at a time), the exterior loop W and the traceback, and writes the MFE and the dot-bracket.
// The recursions are in zuker_short.cuh (on top of zuker_core.cuh's energies).
//
// Per anti-diagonal d, two phases between barriers:
//   A  V of the cells that can pair only (their list was made in the previous phase B): g threads per cell
//      (g = the largest power of two <= threads / cells, at most 32) split its interior loops and
//      multiloop split points and meet in a shuffle minimum; the cell's V, VI, V1N, VAU and XT are written.
//   B  WM1 and WM of every cell (again g threads per cell), INF into V and its dependants where the cell
//      cannot pair, and the list of the cells of diagonal d + 1 that can pair.
// Then warp 0 sweeps W (lanes over the closing position i, XT rows contiguous) and walks the traceback,
// its searches 32 candidates at a time (zs_first), while the other warps have written the '.' bytes.
#include "zuker_short.cuh"

__device__ __forceinline__ int zs_group_min(int x, int g) {
    for (int o = g >> 1; o > 0; o >>= 1) x = min(x, __shfl_xor_sync(0xffffffffu, x, o));
    return x;
}

__device__ __forceinline__ int zs_group_size(int threads, int cells) {
    if (cells <= 0) return 32;
    int g = threads / cells;
    if (g >= 32) return 32;
    if (g < 1) return 1;
    return 1 << (31 - __clz(g));
}

__device__ __forceinline__ int zs_code(unsigned char c) {
    return c == 'A' ? 1 : (c == 'C' ? 2 : (c == 'G' ? 3 : (c == 'U' ? 4 : 0)));
}

#ifdef ZK_HC
#include "zuker_hc.cuh"
// The hard-constraint words of a chunk's sequences (zs_hc_words_of, zuker_hc.cuh), a warp per sequence: the line
// in and the words out by all lanes (coalesced), the passes by lane 0 in shared memory (ZS_HC_ROW(max_n) bytes a
// warp: the words, then the line); lines: the constraint lines laid out as the text, words at HCall + soff[s] + s.
#define ZS_HC_ROW(max_n) (((max_n) + 2) * 8 + ((max_n) + 2 + 7) / 8 * 8)
extern "C" __global__ void zs_hc_words(const unsigned char* lines, const long long* soff, const int* lens,
                                       ZkHc* HCall, int count, int enforce, int span, int max_n) {
    extern __shared__ int smem[];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int s = blockIdx.x * (blockDim.x >> 5) + warp;
    if (s >= count) return;
    const int n = lens[s];
    ZkHc* sH = (ZkHc*)((char*)smem + warp * ZS_HC_ROW(max_n));
    unsigned char* sL = (unsigned char*)(sH + max_n + 2);      // sL[1 .. n]
    const unsigned char* src = lines + soff[s];
    for (int k = lane; k < n; k += 32) sL[k + 1] = src[k];
    __syncwarp();
    if (lane == 0) zs_hc_words_of(sL, n, sH, enforce != 0, span);
    __syncwarp();
    ZkHc* H = HCall + soff[s] + s;
    for (int k = lane; k < n + 2; k += 32) H[k] = sH[k];
}
#endif

// Appends the cells of diagonal dd that can pair (their i; zk_pair: under the model's rules) to list, count
// holding its length (0 before): every thread of the block calls it (ballots, one atomicAdd per warp).
__device__ __forceinline__ void zs_list(const int* P, const signed char* S, int n, int dd, short* list, int* count
                                        ZK_HC_PARAM) {
    const int lane = threadIdx.x & 31;
    for (int b0 = 0; b0 < n - dd; b0 += blockDim.x) {
        const int i = 1 + b0 + threadIdx.x;
        const bool ok = i + dd <= n && zk_pair(P, S, i, i + dd ZK_HC_ARG(HC)) != 0;
        const unsigned b = __ballot_sync(0xffffffffu, ok);
        int at = 0;
        if (lane == 0 && b) at = atomicAdd(count, __popc(b));
        at = __shfl_sync(0xffffffffu, at, 0);
        if (ok) list[at + __popc(b & ((1u << lane) - 1))] = (short)i;
    }
}

// Diagonals 0 .. TURN are never computed: INF where WM, WM1 and V are read there (every thread calls it).
__device__ __forceinline__ void zs_low_diagonals(const ZsSeq& q) {
    for (int k = threadIdx.x; k < (ZK_TURN + 1) * q.N; k += blockDim.x) {
        q.WM[k] = ZK_INF;
        q.WM1[k] = ZK_INF;
        q.V[k] = ZK_INF;
    }
}

// W[j] from W[0 .. j-1] and XT row j (one warp, every lane calls it; lanes over the closing position i).
__device__ __forceinline__ void zs_w_step(const ZsSeq& q, int* sW, int j, int lane) {
    const int* row = q.XT + (long long)j * q.N;
    int m = ZK_INF;
    for (int i = 1 + lane; i < j - ZK_TURN; i += 32) {
        int x = row[i];
        if (x < ZK_HALF_INF) m = min(m, sW[i - 1] + x);
    }
    m = zs_group_min(m, 32);
#ifdef ZK_HC
    if (lane == 0) sW[j] = min(min(q.HC[j].up > 0 ? sW[j - 1] : ZK_INF, m), ZK_INF);   // j unpaired if it may be
#else
    if (lane == 0) sW[j] = min(sW[j - 1], m);
#endif
    __syncwarp();
}

// After the fill: '.' everywhere (all warps); W[w_from .. n] by warp 0 (W[0 .. w_from-1] are there already,
// W[0 .. TURN+1] being 0); then warp 0 walks the traceback and writes the MFE and the status.
__device__ void zs_finish(const int* P, const ZsSeq& q, int* sW, int w_from, int* stack, unsigned char* o,
                          int* mfe, int* status) {
    const int n = q.n;
    const int tid = threadIdx.x, T = blockDim.x, lane = tid & 31;
    for (int k = tid; k < n; k += T) o[k] = '.';
    if (tid < 32) {
        for (int j = w_from; j <= n; ++j) zs_w_step(q, sW, j, lane);
    }
    __syncthreads();
    if (tid < 32) {
        int st = zs_traceback(P, q, sW, stack, o, lane);
        if (lane == 0) {
            *mfe = sW[n];
            *status = st;
        }
    }
}

// seqs: the sequences' ASCII bytes back to back, sequence s at soff[s] (length lens[s]); its dot-bracket
// goes to out at the same offset. pool: zs_pool_words(n) int32 per sequence at poff[s]. max_n: the
// longest sequence of the batch (sizes the dynamic shared memory). LTg: the loop table (zuker_short.cuh).
#ifndef ZS_MAX_THREADS
#define ZS_MAX_THREADS 256
#endif
#ifndef ZS_MIN_BLOCKS
#define ZS_MIN_BLOCKS 1
#endif

extern "C" __global__ void __launch_bounds__(ZS_MAX_THREADS, ZS_MIN_BLOCKS) zs_fold(const int* P, const int* LTg, const unsigned char* seqs,
                                                          const long long* soff, const int* lens,
                                                          const long long* poff, int* pool, unsigned char* out,
                                                          int* mfe, int* status, int max_n ZK_SHAPE_PARAM
                                                          ZK_HC_BATCH_PARAM) {
    extern __shared__ int smem[];
    const int s = blockIdx.x;
    const int n = lens[s];
    const int N = n + 2;
    const int MN = max_n + 2;
    int* sLT = smem;                                   // ZS_LT_ENTRIES: the loop table's header
    int* sLOFF = sLT + ZS_LT_ENTRIES;                  // ZS_LT_MAX: offsets of the loops for this N
    int* sLSZ = sLOFF + ZS_LT_MAX;                     // ZS_LT_MAX: their size terms
    int* sW = sLSZ + ZS_LT_MAX;                        // MN
    short* sL = (short*)(sW + MN);                     // 2 lists of MN
    int* sCnt = (int*)(sL + 2 * MN);                   // 2 (+ 2 spare)
    signed char* sS = (signed char*)(sCnt + 4);        // MN
    const int tid = threadIdx.x, T = blockDim.x;

    const unsigned char* src = seqs + soff[s];
    for (int k = tid; k < N; k += T) sS[k] = (k >= 1 && k <= n) ? (signed char)zs_code(src[k - 1]) : 0;
    for (int k = tid; k < ZS_LT_ENTRIES; k += T) sLT[k] = LTg[k];
    {
        const int total = LTg[ZS_LT_COUNT + 31 * 2 + ZK_MAXLOOP] + LTg[ZS_LT_START + 2];
        for (int c = tid; c < total; c += T) {
            const int kind = c >= LTg[ZS_LT_START + 2] ? 2 : (c >= LTg[ZS_LT_START + 1] ? 1 : 0);
            const int* e = LTg + ZS_LT_ENTRIES + 3 * c;
            sLOFF[c] = zs_loop_offset(e[0], e[1], kind, N);
            sLSZ[c] = e[2];
        }
    }
    if (tid < 2) sCnt[tid] = 0;
    ZsSeq q = zs_seq(sS, n, pool + poff[s]);
#ifdef ZK_SHAPE
    q.SS = SSall + soff[s] + s;                       // N entries per sequence: the text's n + 1 bytes, plus one
#endif
#ifdef ZK_HC
    q.HC = HCall + soff[s] + s;                       // laid out as the SHAPE terms
    q.LTE = LTg + ZS_LT_ENTRIES;
#endif
    zs_low_diagonals(q);
    __syncthreads();
    // List of the cells of diagonal TURN + 1 that can pair.
    zs_list(P, sS, n, ZK_TURN + 1, sL + ((ZK_TURN + 1) & 1) * MN, &sCnt[(ZK_TURN + 1) & 1] ZK_HC_ARG(q.HC));
    __syncthreads();
    for (int d = ZK_TURN + 1; d < n; ++d) {
        // Phase A: V of the pairable cells.
        const int pc = sCnt[d & 1];
        const short* L = sL + (d & 1) * MN;
        if (tid == 0) sCnt[(d + 1) & 1] = 0;
        if (pc > 0) {
            const int g = zs_group_size(T, pc);
            const int r = tid & (g - 1);
            const int step = T / g;
            for (int base = 0; base < pc; base += step) {
                const int w = base + tid / g;
                const bool active = w < pc;
                const int i = active ? L[w] : 1;
                int v = active ? zs_v_partial(P, sLOFF, sLSZ, sLT, q, i, d, r, g) : ZK_INF;
                v = zs_group_min(v, g);
                if (active && r == 0) zs_store_v(P, q, i, d, v);
            }
        }
        __syncthreads();
        // Phase B: WM1, WM of every cell; next diagonal's list.
        {
            const int cells = n - d;
            const int g = zs_group_size(T, cells);
            const int r = tid & (g - 1);
            const int step = T / g;
            for (int base = 0; base < cells; base += step) {
                const int i = 1 + base + tid / g;
                const bool active = i <= cells;
                int w1 = ZK_INF;
                int wm = ZK_INF;
                if (active) {
                    const bool pairs = zk_pair(P, sS, i, i + d ZK_HC_ARG(q.HC)) != 0;
                    const int v = pairs ? q.V[d * N + i] : ZK_INF;
                    w1 = zs_wm1(P, q, i, d, v);
                    wm = zs_wm_partial(P, q, i, d, w1, r, g);
                    if (r == 0 && !pairs) zs_store_unpaired(q, i, d);
                }
                wm = zs_group_min(wm, g);
                if (active && r == 0) {
                    q.WM1[d * N + i] = w1;
                    q.WM[d * N + i] = zk_min(wm, ZK_INF);
                }
            }
            zs_list(P, sS, n, d + 1, sL + ((d + 1) & 1) * MN, &sCnt[(d + 1) & 1] ZK_HC_ARG(q.HC));
        }
        __syncthreads();
    }
#ifdef ZK_HC
    for (int k = tid; k <= n && k <= ZK_TURN + 1; k += T) sW[k] = q.HC[k].dn >= k ? 0 : ZK_INF;   // if they may be
#else
    for (int k = tid; k <= n && k <= ZK_TURN + 1; k += T) sW[k] = 0;
#endif
    __syncthreads();
    zs_finish(P, q, sW, ZK_TURN + 2, zs_stack(q), out + soff[s], mfe + s, status + s);
}

// ---------------------------------------------------------------------------------------------------
// zs_fold_smem: the same fold for sequences of up to ZS_SMEM_MAX_N nt (rnapipe/gpu/zuker_short.py,
// SMEM_MAX_N), built so that the interior loops (most of the work below ~600 nt) never leave the SM:
//
// * The auxiliaries VAU, V1N, VI live only in shared memory, as a ring of the last Z2_RING diagonals
//   (every interior loop of cell (i, i+d) reads diagonals d-2 .. d-32), three planes of Z2_RING rows.
// * The interior loops are split into Z2_CHUNKS fixed chunks of the (n1, n2) list, one warp per chunk,
//   lanes over the diagonal's pairable cells. Every lane of a warp evaluates the same loop at the same
//   time, so each loop is one shared load at an offset known to the compiler plus the size term, read
//   by every lane from the same shared word (the model's SZ in loop order, an argument copied to shared
//   memory once): the chunks are unrolled by the templates below.
// * The multiloop is one min-plus product per cell, PM[i][j] = min_k WM[i][k-1] + WM1[k][j] (k > i):
//   WM[i][j] = min(WMB[i][j], PM[i][j]) with WMB[i][j] = min(WM1[i][j], WMB[i+1][j] + ML_base) (the
//   unpaired-prefix candidates of the CPU engine's WM, one step each), and VM[i][j] is PM[i+1][j-1]
//   plus the closing terms, from two diagonals earlier: no separate VM sweep.
// Per diagonal d, phase A (between barriers): work units taken in turn by whichever warp is free (PM of
// diagonal d+1, W[d], the hairpin and VM, the 11 loops with tables of their own, the chunks; see the loop
// below); phase B: V of each cell from the partial minima (the chunks leave one minimum per kind of
// interior loop, and its terms are added here once), its auxiliaries into the ring, XT, WM1, WMB, WM,
// and the next diagonal's pairable list. V, WM, WM1 and XT go to global memory (diagonal-major as in
// zuker_short.cuh) for the traceback: zs_finish's, as in zs_fold, or with Z2_TB_APART (the host's
// default) zs_tb_smem's, a kernel of its own launched after this one.
// A block folds Z2_SEQS sequences side by side (1 to 4; z2_seq_of): their diagonals are walked together,
// so the units whose lanes go over pairable cells (the chunks, the rest of V) serve all of them, and a
// short diagonal does not leave most lanes idle; each sequence keeps its own matrices in global memory.
#define Z2_RING 32
#ifndef Z2_CHUNKS
#define Z2_CHUNKS 8              // 3 to 8 (fewer: too deep a template recursion)
#endif

// The ring's words: int32, or with Z2_RING16 int16 (half the shared memory, so more blocks per SM). In
// 16 bits a stored value is exact if |value| <= Z2_RING_LIM; INF (and anything >= ZK_HALF_INF) is stored
// as Z2_RING_SENT, and a chunk minimum >= Z2_RING_INF_AT reads as INF again. That is exact as long as
// every finite size term lies in (-4000, 4000) (the host checks the model: 20000 + 4000 < 25000 and
// 30000 - 4000 >= 25000). A finite value beyond Z2_RING_LIM sets the block's overflow flag: status 2, and
// the host folds that sequence again with the int32 ring.
#ifdef Z2_RING16
typedef short z2_ring_t;
#ifndef Z2_RING_LIM
#define Z2_RING_LIM 20000
#endif
#define Z2_RING_SENT 30000
#define Z2_RING_INF_AT 25000
#else
typedef int z2_ring_t;
#endif

__device__ __forceinline__ z2_ring_t z2_store(int x, bool& overflow) {
#ifdef Z2_RING16
    if (x >= ZK_HALF_INF) return (z2_ring_t)Z2_RING_SENT;
    if (x > Z2_RING_LIM || x < -Z2_RING_LIM) {
        overflow = true;
        return (z2_ring_t)Z2_RING_SENT;
    }
    return (z2_ring_t)x;
#else
    return x;
#endif
}

// A chunk's minimum over ring values plus size terms: INF where only sentinels were read.
__device__ __forceinline__ int z2_load_min(int m) {
#ifdef Z2_RING16
    return m >= Z2_RING_INF_AT ? ZK_INF : m;
#else
    return m;
#endif
}
#define Z2_NLOOPS ZK_NLOOPS       // (n1, n2) with n1 + n2 <= 30, less the 11 of zk_interior (zk_loop_entry's list)
static_assert(Z2_CHUNKS >= 3 && Z2_CHUNKS <= 8, "Z2_CHUNKS: 3 to 8");

// Loops E .. E1-1 (E0: the chunk's first) for one cell: win = ring base + i + 1, ring rows of N words,
// planes of `plane` words; dm2 = d - 2; loops with s > maxu are not reached (the list is sorted by s). With hard
// constraints (Z2_HC_BOUNDS: the bounds a5, a3, the cell's UP[i+1] and DN[j-1]) a loop counts only where n1 <= a5,
// n2 <= a3. The bounds travel as two masks: t5 has bits 0 .. a5, r3 bits 31 - a3 .. 31 (bit 31 - n2 for each
// n2 <= a3, the bits of a3's mask reversed), so that the n1 a loop size s allows are the bits of
// t5 & (r3 >> (31 - s)), a shift per size; each loop then tests its bit n1 (z2_min_if: ptxas loads seven such
// predicates at once with R2P) and keeps the fused add-min of the unbounded loops, its result taken under that
// predicate: two ALU instructions a loop, against one unbounded. B (a template argument of those builds) false:
// no cell of the warp has to refuse any of the loops (each a5, a3 >= maxu), so none is tested.
#ifdef ZK_HC
#define Z2_HC_BOUNDS , unsigned t5, unsigned r3
#define Z2_HC_BOUNDS_ARG , t5, r3
#define Z2_HC_TPARAM , bool B
#define Z2_HC_TARG , B
#else
#define Z2_HC_BOUNDS
#define Z2_HC_BOUNDS_ARG
#define Z2_HC_TPARAM
#define Z2_HC_TARG
#endif
// Z2_HC_BOUNDED (builds with hard constraints under --enforceConstraint): the chunks test each loop against its
// cell's bounds (B true). Without --enforceConstraint no bound ever refuses a loop (UP[i+1] = n - i and DN[j-1] =
// j - 1, both beyond maxu < d), so those builds hold the unbounded chunks only. One copy of the chunks either
// way: they are most of the kernel's code, and two that both run overflow the instruction cache.
#ifdef ZK_HC
// m = min(m, x) where (mask & bit) != 0, the test written as one predicate (PTX): ptxas then loads seven loops'
// predicates at once with R2P and takes the fused add-min's result with a select; written as a C++ condition it
// compiled to a shift, a mask, a compare and a select per loop.
template <unsigned BIT>
__device__ __forceinline__ void z2_min_if(int& m, int x, unsigned mask) {
    asm("{\n\t.reg .pred p;\n\t.reg .b32 t;\n\tand.b32 t, %2, %3;\n\tsetp.ne.b32 p, t, 0;\n\t@p min.s32 %0, %0, %1;\n\t}"
        : "+r"(m) : "r"(x), "r"(mask), "n"(BIT));
}
#endif
template <int E, int E0, int E1 Z2_HC_TPARAM>
__device__ __forceinline__ void z2_loops(const z2_ring_t* win, const int* sz, int N, int plane, int dm2, int maxu,
                                         const z2_ring_t* rp, int& m0, int& m1, int& m2 Z2_HC_BOUNDS) {
    if constexpr (E < E1) {
        constexpr int s = zk_loop_entry(E, true), n1 = zk_loop_entry(E, false), n2 = s - n1;
        constexpr int small = n1 < n2 ? n1 : n2;
        constexpr int kind = small < 2 ? small : 2;
        if constexpr (E == E0 || zk_loop_entry(E - 1, true) != s) {
            if (s > maxu) return;
            rp = win + ((dm2 - s) & (Z2_RING - 1)) * N;
        }
#ifdef ZK_HC
        const int x = (int)rp[kind * plane + n1] + sz[E];
        constexpr bool ok = !B;
        if constexpr (B) {
            const unsigned ms = t5 & (r3 >> (31 - s));         // the n1 this size allows (the same for all its loops)
            if constexpr (kind == 0) z2_min_if<1u << n1>(m0, x, ms);
            else if constexpr (kind == 1) z2_min_if<1u << n1>(m1, x, ms);
            else z2_min_if<1u << n1>(m2, x, ms);
        }
#else
        constexpr bool ok = true;
        const int x = (int)rp[kind * plane + n1] + sz[E];
#endif
        if (ok) {
            if constexpr (kind == 0) m0 = min(m0, x);
            else if constexpr (kind == 1) m1 = min(m1, x);
            else m2 = min(m2, x);
        }
        z2_loops<E + 1, E0, E1 Z2_HC_TARG>(win, sz, N, plane, dm2, maxu, rp, m0, m1, m2 Z2_HC_BOUNDS_ARG);
    }
}

template <int C Z2_HC_TPARAM>
__device__ __forceinline__ void z2_chunk(const z2_ring_t* win, const int* sz, int N, int plane, int dm2, int maxu,
                                         int& m0, int& m1, int& m2 Z2_HC_BOUNDS) {
    constexpr int E0 = C * Z2_NLOOPS / Z2_CHUNKS, E1 = (C + 1) * Z2_NLOOPS / Z2_CHUNKS;
    z2_loops<E0, E0, E1 Z2_HC_TARG>(win, sz, N, plane, dm2, maxu, win, m0, m1, m2 Z2_HC_BOUNDS_ARG);
}

// Chunk c of the interior loops (zs_fold_smem's units; B, in the builds with hard constraints: see z2_loops).
#ifdef ZK_HC
template <bool B>
#endif
__device__ __forceinline__ void z2_chunk_at(int c, const z2_ring_t* win, const int* sz, int N, int plane, int dm2,
                                            int maxu, int& m0, int& m1, int& m2 Z2_HC_BOUNDS) {
    switch (c) {
        case 0: z2_chunk<0 Z2_HC_TARG>(win, sz, N, plane, dm2, maxu, m0, m1, m2 Z2_HC_BOUNDS_ARG); break;
#if Z2_CHUNKS > 2
        case 2: z2_chunk<2 % Z2_CHUNKS Z2_HC_TARG>(win, sz, N, plane, dm2, maxu, m0, m1, m2 Z2_HC_BOUNDS_ARG); break;
#endif
#if Z2_CHUNKS > 3
        case 3: z2_chunk<3 % Z2_CHUNKS Z2_HC_TARG>(win, sz, N, plane, dm2, maxu, m0, m1, m2 Z2_HC_BOUNDS_ARG); break;
#endif
#if Z2_CHUNKS > 4
        case 4: z2_chunk<4 % Z2_CHUNKS Z2_HC_TARG>(win, sz, N, plane, dm2, maxu, m0, m1, m2 Z2_HC_BOUNDS_ARG); break;
#endif
#if Z2_CHUNKS > 5
        case 5: z2_chunk<5 % Z2_CHUNKS Z2_HC_TARG>(win, sz, N, plane, dm2, maxu, m0, m1, m2 Z2_HC_BOUNDS_ARG); break;
#endif
#if Z2_CHUNKS > 6
        case 6: z2_chunk<6 % Z2_CHUNKS Z2_HC_TARG>(win, sz, N, plane, dm2, maxu, m0, m1, m2 Z2_HC_BOUNDS_ARG); break;
#endif
#if Z2_CHUNKS > 7
        case 7: z2_chunk<7 % Z2_CHUNKS Z2_HC_TARG>(win, sz, N, plane, dm2, maxu, m0, m1, m2 Z2_HC_BOUNDS_ARG); break;
#endif
        default: z2_chunk<1 Z2_HC_TARG>(win, sz, N, plane, dm2, maxu, m0, m1, m2 Z2_HC_BOUNDS_ARG); break;
    }
}

// Shared memory of zs_fold_smem, rows of Z2_SEQS * MN words (MN = max_n + 2; the block's sequences side by
// side, z2_seq_of): the ring (3 planes of Z2_RING rows of z2_ring_t), then int32 rows: V's partial minima
// (Z2_PARTS: the interior loops' minimum per kind, the hairpin and VM, two sets of zk_interior's loops), PM
// (4), WMB (2), WM1 (2), W (1: a row of MN per sequence); then two short lists and the codes. Before all of
// it: the size terms, 8 counters, the sequences' pools (4 pointers) and lengths (4, and 4 spare).
#ifndef Z2_SEQS
#define Z2_SEQS 1                // sequences per block, 1 to 4
#endif
static_assert(Z2_SEQS >= 1 && Z2_SEQS <= 4, "Z2_SEQS: 1 to 4");
#define Z2_PARTS 6
#define Z2_ROWS (Z2_PARTS + 4 + 2 + 2 + 1)          // int32 rows, after the ring's 3 * Z2_RING rows
#ifndef Z2_XCHUNK
#define Z2_XCHUNK 8             // split points per PM unit
#endif
#define Z2_FIXED (Z2_NLOOPS + 3 + 8 + 16)     // words before the rows: size terms, pad, counters, pools, lengths

// Shared memory of zs_fold_smem in bytes for a longest sequence of max_n nt (zuker_short.py mirrors it); with
// Z2_HC_SMEM the hard-constraint words follow, 8-byte aligned.
ZK_HD int z2_shared_bytes(int max_n) {
    int mn = max_n + 2;
    return ((4 * Z2_FIXED + Z2_SEQS * (3 * Z2_RING * mn * (int)sizeof(z2_ring_t) + 4 * Z2_ROWS * mn + 2 * 2 * mn + mn))
            + 7) / 8 * 8
#if defined(ZK_HC) && defined(Z2_HC_SMEM)
           + Z2_SEQS * mn * 8
#endif
        ;
}

// The pool of one sequence: V, WM, WM1, XT ((n+2)^2 int32 each, zuker_short.cuh's layout), W (n+2), the
// stack; then, from word z2_pm16_at(n), WM and WM1 again in 16 bits ((n+2)^2 int16 each, the same layout),
// written and read only by builds with Z2_PM16.
ZK_HD long long z2_pm16_at(int n) {
    long long N = n + 2;
    return 4 * N * N + N + 3LL * n + 8;
}
ZK_HD long long z2_pool_words(int n) {
    long long N = n + 2;
    return z2_pm16_at(n) + N * N;
}

// Z2_PM16 (with the int16 ring only): the multiloop's split points (the PM units) read WM and WM1 from their
// 16-bit copies. Those reads are most of the kernel's global traffic, and from about 180 nt on one diagonal's
// reads span more than the L2 holds for the blocks in flight, so their latency is the PM units'; half the bytes
// mean more of them hit. A value is stored exact if it lies in [Z2_PM_LO, Z2_PM_HI]; any finite value outside
// sets the block's overflow flag (status 2: the host folds the sequence again with the int32 build, which has no
// copies), and INF (>= ZK_HALF_INF) is stored as Z2_PM_SENT. A PM unit adds two stored values in 32 bits: two
// exact ones make at most 2 * Z2_PM_HI = 12,000, a sum with a sentinel at least Z2_PM_SENT + Z2_PM_LO = 12,767,
// so a minimum >= Z2_PM_INF_AT is INF.
#ifdef Z2_PM16
#ifndef Z2_RING16
#error "Z2_PM16 needs Z2_RING16: a value out of range sends the sequence back to the int32 build"
#endif
#ifndef Z2_PM_LO                       // -D for the tests (a narrow range: most sequences go back)
#define Z2_PM_LO (-20000)
#endif
#ifndef Z2_PM_HI
#define Z2_PM_HI 6000
#endif
#define Z2_PM_SENT 32767
#define Z2_PM_INF_AT 12500
static_assert(2 * Z2_PM_HI < Z2_PM_INF_AT && Z2_PM_INF_AT <= Z2_PM_SENT + Z2_PM_LO, "Z2_PM16's ranges");
__device__ __forceinline__ short z2_pm_store(int v, bool& overflow) {
    if (v >= ZK_HALF_INF) return (short)Z2_PM_SENT;
    if (v < Z2_PM_LO || v > Z2_PM_HI) overflow = true;
    return (short)v;
}
#endif

#ifndef Z2_MAX_THREADS
#define Z2_MAX_THREADS 256
#endif
#ifndef Z2_MIN_BLOCKS
#define Z2_MIN_BLOCKS 2
#endif

// One of the 11 loops of zk_interior (c: its index in ZK_SPECIAL_N1/N2) for pairable cell (i, j) of a
// sequence whose codes are S (i, j in its numbering) and whose V (row stride N) is in global memory; sstack:
// the stack's SHAPE term (0 without); HC (ZK_HC): the sequence's hard constraints.
template <int C>
__device__ __forceinline__ int z2_special_loop(const int* P, const signed char* S, const int* V, int N, int i, int j,
                                               int t, int maxu ZK_HC_PARAM, int sstack = 0) {
    constexpr int n1 = (ZK_SPECIAL_N1 >> (2 * C)) & 3, n2 = (ZK_SPECIAL_N2 >> (2 * C)) & 3;
    if (n1 + n2 > maxu) return ZK_INF;
#ifdef ZK_HC
    if (HC[i + 1].up < n1 || HC[j - 1].dn < n2) return ZK_INF;
#endif
    const int p = i + 1 + n1, qq = j - 1 - n2;
    const int t2 = zk_pair(P, S, p, qq ZK_HC_ARG(HC));
    if (!t2 || (C != 0 && !zk_closes(P, t2))) return ZK_INF;     // the stack (C = 0) on any pair
    return zk_interior(P, n1, n2, t, zk_rtype(t2), S[i + 1], S[j - 1], S[p - 1], S[qq + 1]) + V[(qq - p) * N + p] +
           (C == 0 ? sstack : 0);                                  // the stack's SHAPE term (ZK_SSTACK)
}

// The block's sequences side by side (Z2_SEQS of them): in shared memory sequence k's cell i is column
// e = k * N0 + i of rows of R = Z2_SEQS * N0 words (N0: the block's longest plus 2), its codes at the same
// columns; the cells of one diagonal are also numbered flat, sequence by sequence. z2_seq_of: k of column e;
// z2_cell: k and i of flat number x on diagonal dd (lens: the block's lengths, 0 past the batch's end).
__device__ __forceinline__ int z2_seq_of(int e, int N0) {
    int k = 0;
#pragma unroll
    for (int m = 1; m < Z2_SEQS; ++m) k += e >= m * N0;
    return k;
}

__device__ __forceinline__ void z2_cell(const int* lens, int dd, int x, int& k, int& i) {
    k = 0;
#pragma unroll
    for (int m = 0; m + 1 < Z2_SEQS; ++m) {
        const int c = max(lens[m] - dd, 0);
        if (k == m && x >= c) {
            x -= c;
            k = m + 1;
        }
    }
    i = 1 + x;
}

__device__ __forceinline__ int z2_cells(const int* lens, int dd) {
    int c = 0;
#pragma unroll
    for (int m = 0; m < Z2_SEQS; ++m) c += max(lens[m] - dd, 0);
    return c;
}

// Appends the columns of the cells of diagonal dd that can pair to list (zs_list for the block's sequences).
// ZK_HC: the words of sequence k of the block (Z2_HC_OF): with Z2_HC_SMEM a copy in shared memory, N0 words a
// sequence side by side as the codes (zs_fold_smem copies them first), else in global memory at
// HCall + soff[s0 + k] + s0 + k.
#if defined(ZK_HC) && defined(Z2_HC_SMEM)
#define Z2_HC_OF(k) (sHC + (k) * N0)
#define Z2_HC_LIST , sHC
#define Z2_HC_LIST_PARAM , const ZkHc* sHC
#elif defined(ZK_HC)
#define Z2_HC_OF(k) (HCall + soff[s0 + (k)] + s0 + (k))
#define Z2_HC_LIST , HCall, soff, s0
#define Z2_HC_LIST_PARAM , const ZkHc* HCall, const long long* soff, int s0
#else
#define Z2_HC_LIST
#define Z2_HC_LIST_PARAM
#endif
__device__ __forceinline__ void z2_list(const int* P, const signed char* S, const int* lens, int N0, int dd,
                                        short* list, int* count Z2_HC_LIST_PARAM) {
    const int lane = threadIdx.x & 31;
    const int total = z2_cells(lens, dd);
    for (int b0 = 0; b0 < total; b0 += blockDim.x) {
        int k, i;
        z2_cell(lens, dd, b0 + threadIdx.x, k, i);
        const int e = k * N0 + i;
#ifdef ZK_HC
        const bool ok = b0 + (int)threadIdx.x < total && zk_pair(P, S + k * N0, i, i + dd, Z2_HC_OF(k)) != 0;
#else
        const bool ok = b0 + (int)threadIdx.x < total && zk_pair(P, S, e, e + dd) != 0;
#endif
        const unsigned b = __ballot_sync(0xffffffffu, ok);
        int at = 0;
        if (lane == 0 && b) at = atomicAdd(count, __popc(b));
        at = __shfl_sync(0xffffffffu, at, 0);
        if (ok) list[at + __popc(b & ((1u << lane) - 1))] = (short)e;
    }
}

// Sequence k of the block: its codes and its matrices in the pool (V, WM, WM1, XT with row stride n + 2).
__device__ __forceinline__ ZsSeq z2_seq(const signed char* sS, int* const* bases, const int* lens, int N0, int k) {
    return zs_seq(sS + k * N0, lens[k], bases[k]);
}

extern "C" __global__ void __launch_bounds__(Z2_MAX_THREADS, Z2_MIN_BLOCKS) zs_fold_smem(const int* P, const int* SZE, const unsigned char* seqs,
                                                                const long long* soff, const int* lens,
                                                                const long long* poff, int* pool,
                                                                unsigned char* out, int* mfe, int* status,
                                                                int max_n, int count ZK_SHAPE_PARAM
                                                                ZK_HC_BATCH_PARAM) {
    extern __shared__ int smem[];
    constexpr int K = Z2_SEQS;
    const int s0 = blockIdx.x * K;                     // the block's sequences: s0 .. s0 + K - 1 (< count)
    const int MN = max_n + 2;
    int* sSZ = smem;                                   // Z2_NLOOPS: the size terms in loop order
    int* sCnt = sSZ + Z2_NLOOPS + 3;                   // 2 list counts, 2 unit counters, overflow (3 spare)
    int** sBase = (int**)(sCnt + 8);                   // K (<= 4): the sequences' pools
    int* sLen = sCnt + 16;                             // K (<= 4): their lengths (0: no sequence)
    z2_ring_t* sWin = (z2_ring_t*)(sSZ + Z2_FIXED);    // 3 planes (VAU, V1N, VI) x Z2_RING rows of R
    int* sPart = (int*)(sWin + 3 * Z2_RING * K * MN);  // Z2_PARTS rows: V's partial minima by column (rows 0-2:
                                                       // per kind, INF between diagonals; 3-5: by V unit)
    int* sPM = sPart + Z2_PARTS * K * MN;              // 4 rows: PM of diagonals d & 3
    int* sWMB = sPM + 4 * K * MN;                      // 2 rows: WMB of diagonals d & 1
    int* sWM1 = sWMB + 2 * K * MN;                     // 2 rows: WM1 of diagonals d & 1
    int* sW = sWM1 + 2 * K * MN;                       // K rows of MN: W of each sequence
    short* sL = (short*)(sW + K * MN);                 // 2 lists of K * MN
    signed char* sS = (signed char*)(sL + 2 * K * MN); // K * MN
#if defined(ZK_HC) && defined(Z2_HC_SMEM)
    // K * MN, 8-byte aligned; offset from smem by pointer arithmetic only, so that the compiler keeps them in the
    // shared space (LDS): a pointer made from an integer is generic, and each read of a word a generic load
    const int hc_at = ((int)((char*)(sS + K * MN) - (char*)smem) + 7) & ~7;
    ZkHc* sHC = (ZkHc*)((char*)smem + hc_at);
#endif
    const int tid = threadIdx.x, T = blockDim.x;
    const int lane = tid & 31;

    int n = 0;                                         // the block's longest
#pragma unroll
    for (int k = 0; k < K; ++k) n = max(n, s0 + k < count ? lens[s0 + k] : 0);
    const int N0 = n + 2, R = K * N0;
    const int plane = Z2_RING * R;
    // sequence k of the block (z2_seq), with its SHAPE terms: N entries per sequence, at soff + s
    auto seq_of = [&](int k) {
        ZsSeq q = z2_seq(sS, sBase, sLen, N0, k);
#ifdef ZK_SHAPE
        q.SS = SSall + soff[s0 + k] + s0 + k;
#endif
#ifdef ZK_HC
        q.HC = Z2_HC_OF(k);
#endif
        return q;
    };
    for (int e = tid; e < R; e += T) {
        const int k = z2_seq_of(e, N0), i = e - k * N0;
        const int nk = s0 + k < count ? lens[s0 + k] : 0;
        sS[e] = (i >= 1 && i <= nk) ? (signed char)zs_code(seqs[soff[s0 + k] + i - 1]) : 0;
#if defined(ZK_HC) && defined(Z2_HC_SMEM)
        // sequence k's words are positions 0 .. nk + 1; none beyond is read
        sHC[e] = i <= nk + 1 && nk > 0 ? (HCall + soff[s0 + k] + s0 + k)[i] : ZkHc{};
#endif
    }
    for (int k = tid; k < 4 * R; k += T) sPM[k] = ZK_INF;
    for (int k = tid; k < 3 * R; k += T) sPart[k] = ZK_INF;
    for (int k = tid; k < 2 * R; k += T) {
        sWMB[k] = ZK_INF;
        sWM1[k] = ZK_INF;
    }
    for (int k = tid; k < Z2_NLOOPS; k += T) sSZ[k] = SZE[k];
    if (tid < 8) sCnt[tid] = 0;
    if (tid < K) {
        const bool here = s0 + tid < count;
        sLen[tid] = here ? lens[s0 + tid] : 0;
        sBase[tid] = here ? pool + poff[s0 + tid] : pool;
    }
    __syncthreads();
    for (int k = 0; k < K; ++k) {
        if (sLen[k] == 0) continue;
        const ZsSeq q = seq_of(k);     // V, WM, WM1, XT (the aux planes are not used)
        zs_low_diagonals(q);
#ifdef ZK_HC
        for (int j = tid; j <= q.n && j <= ZK_TURN + 1; j += T) sW[k * MN + j] = q.HC[j].dn >= j ? 0 : ZK_INF;
#else
        for (int j = tid; j <= q.n && j <= ZK_TURN + 1; j += T) sW[k * MN + j] = 0;
#endif
    }
    z2_list(P, sS, sLen, N0, ZK_TURN + 1, sL + ((ZK_TURN + 1) & 1) * K * MN, &sCnt[(ZK_TURN + 1) & 1] Z2_HC_LIST);
    __syncthreads();
    const int ml_base = zk_sc(P, ZK_ML_BASE);
    bool overflow = false;                             // a ring value beyond z2_store's range (16-bit ring)
    for (int d = ZK_TURN + 1; d < n; ++d) {
        const int pc = sCnt[d & 1];
        const short* L = sL + (d & 1) * K * MN;
        if (tid == 0) sCnt[(d + 1) & 1] = 0;
        int maxu = d - ZK_TURN - 3;
        if (maxu > ZK_MAXLOOP) maxu = ZK_MAXLOOP;
        // Phase A: the units of the diagonal, listed as Z2_CHUNKS per 32 pairable cells (the interior loops
        // through the auxiliaries, lanes over the cells, the same loop in every lane; each leaves its
        // minimum per kind in rows 0-2 of sPart, shared atomicMin), three per 32 pairable cells for the rest
        // of V (0: hairpin and VM, 1: loops 0-5 of zk_interior's 11, 2: loops 6-10), PM of diagonal d+1 (it
        // reads diagonals <= d-3 only) per 32 (cell, Z2_XCHUNK split points) pairs (shared atomicMin into
        // a row that is INF before), W[d] of each sequence (its terms lie on
        // diagonals < d). The pairable cells of all the block's sequences share the units of the first
        // two kinds. Whichever warp is free takes the next unit (a shared counter) from the end of the
        // list: W and PM first (their global loads take longest), the chunks last.
        {
            const int nb = (pc + 31) >> 5;
            const int dn = d + 1;
            const int x_lo = ZK_TURN + 2, x_hi = dn - ZK_TURN - 1;
            const int nxp = x_hi >= x_lo ? (x_hi - x_lo + Z2_XCHUNK) / Z2_XCHUNK : 0;
            const int cells_n = z2_cells(sLen, dn);     // cells of diagonal d+1 (all the block's sequences)
            const int n_chunk = Z2_CHUNKS * nb, n_v = n_chunk + 3 * nb, n_pm = n_v + (nxp * cells_n + 31) / 32;
            const int total = n_pm + K;
            const float inv_cells = cells_n ? 1.0f / (float)cells_n : 0.0f;
            if (tid == 0) sCnt[2 + ((d + 1) & 1)] = 0;
            for (;;) {
                int u = 0;
                if (lane == 0) u = atomicAdd(&sCnt[2 + (d & 1)], 1);
                u = total - 1 - __shfl_sync(0xffffffffu, u, 0);
                if (u < 0) break;
                if (u >= n_pm) {
                    const int k = u - n_pm;
                    if (d >= ZK_TURN + 2 && d < sLen[k])
                        zs_w_step(seq_of(k), sW + k * MN, d, lane);
                    continue;
                }
                if (u >= n_v) {
                    // lanes over (split-point chunk, cell) pairs, cells fastest: no lane idles but in the last
                    // unit of the diagonal, and neighbouring lanes read neighbouring words
                    const int f = (u - n_v) * 32 + lane;
                    const bool active = f < nxp * cells_n;
                    const int xp = (int)(((float)f + 0.5f) * inv_cells);    // f / cells_n, exact (f < 2^16)
                    int k, i;
                    z2_cell(sLen, dn, active ? f - xp * cells_n : 0, k, i);
                    const int N = sLen[k] + 2;
#ifdef Z2_PM16
                    const short* wm = (const short*)(sBase[k] + z2_pm16_at(sLen[k]));   // WM; WM1 follows it
#else
                    const int* wm = sBase[k] + N * N;                        // WM; WM1 follows it
#endif
                    const int xa = x_lo + xp * Z2_XCHUNK;
                    const int xb = min(xa + Z2_XCHUNK - 1, x_hi);
                    const int oa = (xa - 1) * N + i;                          // WM[i][i+x-1], x = xa ...
                    const int ob = N * N + (dn - xa) * N + i + xa;            // WM1[i+x][i+dn]
                    int m = ZK_INF, m_ = ZK_INF;                              // two chains of add-min
#pragma unroll
                    for (int c = 0; c < Z2_XCHUNK; ++c)
                        if (active && xa + c <= xb) {
                            if (c & 1) m_ = min(m_, wm[oa + c * N] + wm[ob + c * (1 - N)]);
                            else m = min(m, wm[oa + c * N] + wm[ob + c * (1 - N)]);
                        }
                    m = min(m, m_);
#ifdef Z2_PM16
                    if (m >= Z2_PM_INF_AT) m = ZK_INF;
#endif
                    if (active) atomicMin(&sPM[(dn & 3) * R + k * N0 + i], m);
                    continue;
                }
                if (u >= n_chunk) {
                    const int g = u - n_chunk;
                    const int grp = g % 3, idx = (g / 3) * 32 + lane;
                    const bool active = idx < pc;
                    const int e = L[active ? idx : 0], f = e + d;          // columns of i and j
                    const int t = ZK_TYPE(sS, e, f);
#ifdef ZK_RULES
                    // a pair that closes no loop (no_closing_gu) has the stack alone: no hairpin, no VM, no
                    // other interior loop (maxu 0, as in zk_v_partial)
                    const bool closes = zk_closes(P, t);
                    const int mu = closes || maxu < 0 ? maxu : 0;
#else
                    constexpr bool closes = true;
                    const int mu = maxu;
#endif
                    int v;
                    if (grp == 0) {
                        v = ZK_INF;
                        if (closes) {
#ifdef ZK_HC
                            // the hairpin only if its d - 1 may stay unpaired; the multiloop (VM) either way
                            const int kh = z2_seq_of(e, N0);
                            if (Z2_HC_OF(kh)[e - kh * N0 + 1].up >= d - 1) v = zk_hairpin(P, sS, e, f);
#else
                            v = zk_hairpin(P, sS, e, f);
#endif
                            const int pm = sPM[((d - 2) & 3) * R + e + 1];
                            if (pm < ZK_HALF_INF) v = zk_min(v, pm + zk_multi_closing(P, sS, e, f));
                        }
                    } else {
                        const int k = z2_seq_of(e, N0);
                        const int* V = sBase[k];
                        const int N = sLen[k] + 2;
                        const signed char* S = sS + k * N0;
                        const int i = e - k * N0, j = i + d;
#ifdef ZK_HC
                        const ZkHc* HC = Z2_HC_OF(k);
#endif
                        if (grp == 1) {
#ifdef ZK_SHAPE
                            const int* SS = SSall + soff[s0 + k] + s0 + k;
                            v = z2_special_loop<0>(P, S, V, N, i, j, t, mu ZK_HC_ARG(HC), ZK_SSTACK(SS, i, j));
#else
                            v = z2_special_loop<0>(P, S, V, N, i, j, t, mu ZK_HC_ARG(HC));
#endif
                            v = zk_min(v, z2_special_loop<1>(P, S, V, N, i, j, t, mu ZK_HC_ARG(HC)));
                            v = zk_min(v, z2_special_loop<2>(P, S, V, N, i, j, t, mu ZK_HC_ARG(HC)));
                            v = zk_min(v, z2_special_loop<3>(P, S, V, N, i, j, t, mu ZK_HC_ARG(HC)));
                            v = zk_min(v, z2_special_loop<4>(P, S, V, N, i, j, t, mu ZK_HC_ARG(HC)));
                            v = zk_min(v, z2_special_loop<5>(P, S, V, N, i, j, t, mu ZK_HC_ARG(HC)));
                        } else {
                            v = z2_special_loop<6>(P, S, V, N, i, j, t, mu ZK_HC_ARG(HC));
                            v = zk_min(v, z2_special_loop<7>(P, S, V, N, i, j, t, mu ZK_HC_ARG(HC)));
                            v = zk_min(v, z2_special_loop<8>(P, S, V, N, i, j, t, mu ZK_HC_ARG(HC)));
                            v = zk_min(v, z2_special_loop<9>(P, S, V, N, i, j, t, mu ZK_HC_ARG(HC)));
                            v = zk_min(v, z2_special_loop<10>(P, S, V, N, i, j, t, mu ZK_HC_ARG(HC)));
                        }
                    }
                    if (active) sPart[(3 + grp) * R + e] = v;
                    continue;
                }
                const int c = u % Z2_CHUNKS, b0 = (u / Z2_CHUNKS) * 32;
                const bool active = b0 + lane < pc;
                const int e = L[active ? b0 + lane : 0];
                const z2_ring_t* win = sWin + e + 1;
                int m0 = ZK_INF, m1 = ZK_INF, m2 = ZK_INF;
#if defined(ZK_HC) && defined(Z2_HC_BOUNDED)
                const int kh = z2_seq_of(e, N0);
                const ZkHc* hc = Z2_HC_OF(kh) + (e - kh * N0);                // the cell's i at hc[0]
                const int a5 = hc[1].up, a3 = hc[d - 1].dn;      // at most a5 unpaired after i, a3 before j
                // Each loop is tested against its cell's bounds, and none is reached beyond the warp's longest
                // a5 + a3 (a loop of s > a5 + a3 fits no cell).
                const unsigned t5 = (2u << min(a5, 31)) - 1u, r3 = __brev((2u << min(a3, 31)) - 1u);
                const int mu = __reduce_max_sync(0xffffffffu, active ? min(maxu, a5 + a3) : -1);
                z2_chunk_at<true>(c, win, sSZ, R, plane, d - 2, mu, m0, m1, m2 Z2_HC_BOUNDS_ARG);
#elif defined(ZK_HC)
                constexpr unsigned t5 = 0, r3 = 0;                // no bound refuses a loop (Z2_HC_BOUNDED)
                z2_chunk_at<false>(c, win, sSZ, R, plane, d - 2, maxu, m0, m1, m2 Z2_HC_BOUNDS_ARG);
#else
                z2_chunk_at(c, win, sSZ, R, plane, d - 2, maxu, m0, m1, m2);
#endif
                if (active) {                  // the kinds' terms are added once per cell, in phase B
                    atomicMin(&sPart[e], z2_load_min(m0));
                    atomicMin(&sPart[R + e], z2_load_min(m1));
                    atomicMin(&sPart[2 * R + e], z2_load_min(m2));
                }
            }
        }
        __syncthreads();
        // Phase B: V, its auxiliaries and XT, WM1, WMB, WM of every cell; the PM row of diagonal d+2 to INF;
        // the next diagonal's list.
        {
            const int* wmb_prev = sWMB + ((d - 1) & 1) * R;
            int* wmb_row = sWMB + (d & 1) * R;
            const int* wm1_prev = sWM1 + ((d - 1) & 1) * R;
            int* wm1_row = sWM1 + (d & 1) * R;
            const int* pm_row = sPM + (d & 3) * R;
            const int cells = z2_cells(sLen, d);
            for (int x = tid; x < cells; x += T) {
                int k, i;
                z2_cell(sLen, d, x, k, i);
                const ZsSeq q = seq_of(k);
                const int N = q.N, j = i + d, e = k * N0 + i;
                const signed char* S = q.S;
                const int t = zk_pair(P, S, i, j ZK_HC_ARG(q.HC));
                const int slot = (d & (Z2_RING - 1)) * R + e;
                int v = ZK_INF;
#ifdef ZK_HC
                int w1 = q.HC[j].up > 0 ? wm1_prev[e] + ml_base : ZK_INF;     // j unpaired only if it may be
#else
                int w1 = wm1_prev[e] + ml_base;
#endif
                if (t) {
                    const int si1 = S[i + 1], sj1 = S[j - 1];
                    v = zk_min(zk_min(sPart[3 * R + e], sPart[4 * R + e]), sPart[5 * R + e]);
#ifdef ZK_RULES
                    const bool closes = zk_closes(P, t);     // else the stack alone: no loop of the chunks
                    if (closes) {
                        v = zk_min(v, sPart[e] + zk_au(P, t));
                        v = zk_min(v, sPart[R + e] + zk_mm(P, ZK_OFF_MISMATCH_INTERIOR_1N, t, si1, sj1));
                        v = zk_min(v, sPart[2 * R + e] + zk_mm(P, ZK_OFF_MISMATCH_INTERIOR, t, si1, sj1));
                    }
                    v = zs_lonely(P, q, i, j, v);      // no_lp: V the stack on CC, CC kept in XT
#else
                    v = zk_min(v, sPart[e] + zk_au(P, t));
                    v = zk_min(v, sPart[R + e] + zk_mm(P, ZK_OFF_MISMATCH_INTERIOR_1N, t, si1, sj1));
                    v = zk_min(v, sPart[2 * R + e] + zk_mm(P, ZK_OFF_MISMATCH_INTERIOR, t, si1, sj1));
                    constexpr bool closes = true;
#endif
                    sPart[e] = ZK_INF;                 // the per-kind rows for the next diagonal
                    sPart[R + e] = ZK_INF;
                    sPart[2 * R + e] = ZK_INF;
                    const int rt = zk_rtype(t);
                    const int a = S[j + 1], b = S[i - 1];
                    if (closes) {                      // an inner pair of bulges and interior loops
                        sWin[slot] = z2_store(v + zk_au(P, t), overflow);
                        sWin[plane + slot] = z2_store(v + zk_mm(P, ZK_OFF_MISMATCH_INTERIOR_1N, rt, a, b), overflow);
                        sWin[2 * plane + slot] = z2_store(v + zk_mm(P, ZK_OFF_MISMATCH_INTERIOR, rt, a, b), overflow);
                    } else {
                        sWin[slot] = z2_store(ZK_INF, overflow);
                        sWin[plane + slot] = z2_store(ZK_INF, overflow);
                        sWin[2 * plane + slot] = z2_store(ZK_INF, overflow);
                    }
                    q.XT[j * N + i] = v + zk_exterior_stem_at(P, S, q.n, i, j);
                    if (v < ZK_HALF_INF) w1 = zk_min(w1, v + zk_multi_stem_at(P, S, i, j));
                } else {
                    sWin[slot] = z2_store(ZK_INF, overflow);
                    sWin[plane + slot] = z2_store(ZK_INF, overflow);
                    sWin[2 * plane + slot] = z2_store(ZK_INF, overflow);
                    q.XT[j * N + i] = ZK_INF;
                }
                w1 = zk_min(w1, ZK_INF);
                const int o = d * N + i;
                q.V[o] = v;
#ifdef ZK_HC
                const int wmb = zk_min(zk_min(w1, q.HC[i].up > 0 ? wmb_prev[e + 1] + ml_base : ZK_INF), ZK_INF);
#else
                const int wmb = zk_min(zk_min(w1, wmb_prev[e + 1] + ml_base), ZK_INF);
#endif
                wmb_row[e] = wmb;
                wm1_row[e] = w1;
                q.WM1[o] = w1;
                const int pm = pm_row[e];
                const int wm = pm < ZK_HALF_INF ? zk_min(wmb, pm) : wmb;
                q.WM[o] = wm;
#ifdef Z2_PM16
                short* w16 = (short*)(sBase[k] + z2_pm16_at(q.n));
                w16[o] = z2_pm_store(wm, overflow);
                w16[N * N + o] = z2_pm_store(w1, overflow);
#endif
            }
            int* pm_next = sPM + ((d + 2) & 3) * R;      // PM of d-2, read above: d+2's next
            for (int x = tid; x < R; x += T) pm_next[x] = ZK_INF;
            z2_list(P, sS, sLen, N0, d + 1, sL + ((d + 1) & 1) * K * MN, &sCnt[(d + 1) & 1] Z2_HC_LIST);
        }
        __syncthreads();
    }
    if (overflow) sCnt[4] = 1;
    __syncthreads();
    const bool refold = sCnt[4] != 0;                  // the host folds the block's sequences again (int32 ring)
#ifdef Z2_TB_APART
    // W[n] of each sequence (warp k), then W and the status to global memory: zs_tb_smem walks the traceback.
    const int warp = tid >> 5;
    if (warp < K && sLen[warp] > 0) {
        const ZsSeq q = seq_of(warp);
        for (int j = q.n > ZK_TURN + 2 ? q.n : ZK_TURN + 2; j <= q.n; ++j) zs_w_step(q, sW + warp * MN, j, lane);
    }
    __syncthreads();
    for (int k = 0; k < K; ++k) {
        const int nk = sLen[k];
        if (nk == 0) continue;
        int* gW = sBase[k] + 4LL * (nk + 2) * (nk + 2);   // after V, WM, WM1, XT; then the traceback's stack
        for (int j = tid; j <= nk; j += T) gW[j] = sW[k * MN + j];
        if (tid == 0) status[s0 + k] = refold ? 2 : 0;
    }
#else
    for (int k = 0; k < K; ++k) {
        const int nk = sLen[k];
        if (nk == 0) continue;
        const ZsSeq q = seq_of(k);
        int* gW = sBase[k] + 4LL * (nk + 2) * (nk + 2);
        zs_finish(P, q, sW + k * MN, nk > ZK_TURN + 2 ? nk : ZK_TURN + 2, gW + nk + 2, out + soff[s0 + k],
                  mfe + s0 + k, status + s0 + k);
        if (tid == 0 && refold) status[s0 + k] = 2;    // the host folds it again with the int32 ring
        __syncthreads();
    }
#endif
}

// The traceback of zs_fold_smem's sequences (built with Z2_TB_APART), one warp per sequence, blockDim.x / 32
// sequences per block (dynamic shared memory: their codes, ZS_TB_ROW(max_n) bytes each): the fill's blocks
// then leave the multiprocessors sooner, and here many more warps share each one, hiding the latency of
// the traceback's dependent loads. Same arguments as zs_fold_smem, less the size terms, plus count.
#define ZS_TB_ROW(max_n) (((max_n) + 2 + 15) / 16 * 16)
extern "C" __global__ void __launch_bounds__(128) zs_tb_smem(const int* P, const unsigned char* seqs,
                                                          const long long* soff, const int* lens,
                                                          const long long* poff, int* pool, unsigned char* out,
                                                          int* mfe, int* status, int count, int max_n ZK_SHAPE_PARAM
                                                          ZK_HC_BATCH_PARAM) {
    extern __shared__ int smem[];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int s = blockIdx.x * (blockDim.x >> 5) + warp;
    if (s >= count) return;
    const int n = lens[s];
    const int N = n + 2;
    signed char* sS = (signed char*)smem + warp * ZS_TB_ROW(max_n);
    const unsigned char* src = seqs + soff[s];
    for (int k = lane; k < N; k += 32) sS[k] = (k >= 1 && k <= n) ? (signed char)zs_code(src[k - 1]) : 0;
    unsigned char* o = out + soff[s];
    for (int k = lane; k < n; k += 32) o[k] = '.';
    int* base = pool + poff[s];
#if defined(ZK_SHAPE) || defined(ZK_HC)
    ZsSeq q = zs_seq(sS, n, base);
#ifdef ZK_SHAPE
    q.SS = SSall + soff[s] + s;
#endif
#ifdef ZK_HC
    q.HC = HCall + soff[s] + s;
#endif
#else
    const ZsSeq q = zs_seq(sS, n, base);
#endif
    const int* W = base + 4LL * N * N;
    __syncwarp();
    if (status[s] == 2) return;                        // folded again with the int32 ring
    const int st = zs_traceback(P, q, W, (int*)W + N, o, lane);
    if (lane == 0) {
        mfe[s] = W[n];
        status[s] = st;
    }
}
