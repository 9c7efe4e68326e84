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
                                                          int* mfe, int* status, int max_n) {
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
    const int lane = tid & 31;

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
    // Diagonals 0 .. TURN are never computed: INF where WM, WM1 and V are read there.
    for (int k = tid; k < (ZK_TURN + 1) * N; k += T) {
        q.WM[k] = ZK_INF;
        q.WM1[k] = ZK_INF;
        q.V[k] = ZK_INF;
    }
    __syncthreads();
    // List of the cells of diagonal TURN + 1 that can pair.
    {
        const int d = ZK_TURN + 1;
        for (int base = 0; base < n - d; base += T) {
            int i = 1 + base + tid;
            bool ok = i + d <= n && zk_ptype(sS[i], sS[i + d]) != 0;
            unsigned b = __ballot_sync(0xffffffffu, ok);
            int at = 0;
            if (lane == 0 && b) at = atomicAdd(&sCnt[d & 1], __popc(b));
            at = __shfl_sync(0xffffffffu, at, 0);
            if (ok) sL[(d & 1) * MN + at + __popc(b & ((1u << lane) - 1))] = (short)i;
        }
    }
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
                    const bool pairs = zk_ptype(sS[i], sS[i + d]) != 0;
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
            const int d1 = d + 1;
            for (int base = 0; base < n - d1; base += T) {
                int i = 1 + base + tid;
                bool ok = i + d1 <= n && zk_ptype(sS[i], sS[i + d1]) != 0;
                unsigned b = __ballot_sync(0xffffffffu, ok);
                int at = 0;
                if (lane == 0 && b) at = atomicAdd(&sCnt[d1 & 1], __popc(b));
                at = __shfl_sync(0xffffffffu, at, 0);
                if (ok) sL[(d1 & 1) * MN + at + __popc(b & ((1u << lane) - 1))] = (short)i;
            }
        }
        __syncthreads();
    }
    // '.' everywhere (all warps), W by warp 0.
    unsigned char* o = out + soff[s];
    for (int k = tid; k < n; k += T) o[k] = '.';
    if (tid < 32) {
        for (int k = lane; k <= n && k <= ZK_TURN + 1; k += 32) sW[k] = 0;
        __syncwarp();
        int prev = 0;
        for (int j = ZK_TURN + 2; j <= n; ++j) {
            const int* row = q.XT + (long long)j * N;
            int m = ZK_INF;
            for (int i = 1 + lane; i < j - ZK_TURN; i += 32) {
                int x = row[i];
                if (x < ZK_HALF_INF) m = min(m, sW[i - 1] + x);
            }
            m = zs_group_min(m, 32);
            prev = min(prev, m);
            if (lane == 0) sW[j] = prev;
            __syncwarp();
        }
    }
    __syncthreads();
    if (tid < 32) {
        int st = zs_traceback(P, q, sW, zs_stack(q), o, lane);
        if (lane == 0) {
            mfe[s] = sW[n];
            status[s] = st;
        }
    }
}
