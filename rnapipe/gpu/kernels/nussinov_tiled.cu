// Tiled Nussinov fill (Li, Ranka & Sahni: triangular diagonal blocks, square blocks by block-diagonal,
// a register-blocked max-plus "maxKernel"), templated on the cell type and the layout:
//   Cell = int  : 32-bit scores, plain add + max (the `tiled` variant);
//   Cell = u16  : 16-bit scores, two cells per 32-bit word, Hopper DPX __viaddmax_u16x2 (the default);
//   PACKED      : only the upper triangle of tiles is stored (the `packed` variant).
// Block-diagonal d of tiles is filled in two launches: outer_tiles adds the contributions of the
// tiles strictly between (split over several blocks when the diagonal has few tiles), then
// finish_tiles completes each tile with the split points that fall inside tiles I and J.
#include "nussinov_common.cuh"

template <typename Cell> struct Lanes;
template <> struct Lanes<u16> {
    enum { CPW = 2 };  // cells per 32-bit word
    static __device__ __forceinline__ u32 bcast(u32 v) { return v * 0x10001u; }
    // max(a + b, acc) per 16-bit half: scores never exceed 65535 (the host checks n), no wrap.
    static __device__ __forceinline__ u32 addmax(u32 a, u32 b, u32 acc) { return __viaddmax_u16x2(a, b, acc); }
    static __device__ __forceinline__ int half(u32 w, int h) { return h ? (int)(w >> 16) : (int)(w & 0xffffu); }
};
template <> struct Lanes<int> {
    enum { CPW = 1 };
    static __device__ __forceinline__ u32 bcast(u32 v) { return v; }
    static __device__ __forceinline__ u32 addmax(u32 a, u32 b, u32 acc) {
        return (u32)max((int)a + (int)b, (int)acc);
    }
    static __device__ __forceinline__ int half(u32 w, int) { return (int)w; }
};

#define T NUSS_TILE
#define TP (NUSS_TILE + 1)   // padded shared row: consecutive rows start in different banks
// finish_tiles row stride: with 8 threads per cell, 4 cells per warp, the column walks X[c][b] hit 32 banks
#define TF (NUSS_TILE + 7)

template <typename Cell> struct OuterShape {
    enum {
        CPW = Lanes<Cell>::CPW,
        ROWS = 8,                    // rows of the output tile per thread
        WPT = 8,                     // 32-bit accumulator words per row per thread (two groups of 4)
        WORDS_ROW = T / CPW,
        TX = WORDS_ROW / WPT,
        TY = T / ROWS,
        THREADS = TX * TY,
        EPV = 16 / sizeof(Cell),     // cells per 16-byte vector
        VPR = T / EPV,               // vectors per tile row
        LOADS = T * VPR / THREADS,   // 16-byte loads per thread per operand tile (a multiple of 8)
    };
};

// Max-plus product over the tiles K in [kbeg, kend] for output tile (I, I+d):
//   partial(a,b) = max_k C(i0+a, k) + C(k+1, j0+b),  k over the columns of tiles K.
template <typename Cell, bool PACKED>
__global__ void __launch_bounds__(OuterShape<Cell>::THREADS)
outer_tiles(const Cell* __restrict__ C, int N, int d, int splits, int kper, u32* __restrict__ partial) {
    typedef OuterShape<Cell> S;
    typedef Lanes<Cell> L;
    extern __shared__ uint4 smem_outer[];
    u32* As = (u32*)smem_outer;            // As[c*T + a] = C(i0+a, K*T+c), broadcast to every lane of the word
    Cell* Bs = (Cell*)(As + T * T);        // Bs[c*T + b] = C(K*T+c+1, j0+b)
    const int slot = blockIdx.x;
    const int I = slot / splits, s = slot % splits;
    const int J = I + d;
    const int i0 = I * T, j0 = J * T;
    const int kbeg = I + 1 + s * kper;
    const int kend = min(J - 1, kbeg + kper - 1);
    const int tid = threadIdx.x, tx = tid % S::TX, ty = tid / S::TX;

    u32 acc[S::ROWS][S::WPT];
#pragma unroll
    for (int r = 0; r < S::ROWS; ++r)
#pragma unroll
        for (int w = 0; w < S::WPT; ++w) acc[r][w] = 0u;

    for (int K = kbeg; K <= kend; ++K) {
        const int k0 = K * T;
        // all loads of a batch issued before their shared stores, so their latencies overlap
#pragma unroll 1
        for (int h = 0; h < S::LOADS; h += 8) {
            uint4 q[8];
#pragma unroll
            for (int u = 0; u < 8; ++u) {
                // consecutive threads take consecutive rows, so the transposed shared stores hit distinct banks
                const int v = tid + (h + u) * S::THREADS, a = v % T, ch = v / T;
                q[u] = *(const uint4*)(C + cell_index<PACKED>(i0 + a, k0 + ch * S::EPV, N));
            }
#pragma unroll
            for (int u = 0; u < 8; ++u) {
                const int v = tid + (h + u) * S::THREADS, a = v % T, ch = v / T;
                const Cell* e = (const Cell*)&q[u];
#pragma unroll
                for (int x = 0; x < S::EPV; ++x) As[(ch * S::EPV + x) * T + a] = L::bcast((u32)e[x]);
            }
        }
#pragma unroll 1
        for (int h = 0; h < S::LOADS; h += 8) {
            uint4 q[8];
#pragma unroll
            for (int u = 0; u < 8; ++u) {
                const int v = tid + (h + u) * S::THREADS, c = v / S::VPR, ch = v % S::VPR;
                q[u] = *(const uint4*)(C + cell_index<PACKED>(k0 + c + 1, j0 + ch * S::EPV, N));
            }
#pragma unroll
            for (int u = 0; u < 8; ++u) {
                const int v = tid + (h + u) * S::THREADS, c = v / S::VPR, ch = v % S::VPR;
                *(uint4*)(Bs + c * T + ch * S::EPV) = q[u];
            }
        }
        __syncthreads();
#pragma unroll 2
        for (int c = 0; c < T; ++c) {
            const uint4 a0 = *(const uint4*)&As[c * T + ty * S::ROWS];
            const uint4 a1 = *(const uint4*)&As[c * T + ty * S::ROWS + 4];
            const u32* brow = (const u32*)(Bs + c * T);
            const uint4 b0 = *(const uint4*)&brow[4 * tx];
            const uint4 b1 = *(const uint4*)&brow[S::WORDS_ROW / 2 + 4 * tx];
            const u32 av[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const u32 bv[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int r = 0; r < S::ROWS; ++r)
#pragma unroll
                for (int w = 0; w < S::WPT; ++w) acc[r][w] = L::addmax(av[r], bv[w], acc[r][w]);
        }
        __syncthreads();
    }
    u32* out = partial + (i64)slot * (T * S::WORDS_ROW);
#pragma unroll
    for (int r = 0; r < S::ROWS; ++r) {
        u32* row = out + (ty * S::ROWS + r) * S::WORDS_ROW;
        *(uint4*)&row[4 * tx] = make_uint4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
        *(uint4*)&row[S::WORDS_ROW / 2 + 4 * tx] = make_uint4(acc[r][4], acc[r][5], acc[r][6], acc[r][7]);
    }
}

template <typename Cell, bool PACKED>
__device__ __forceinline__ void store_cell(Cell* C, int i, int j, int N, int v) {
    C[cell_index<PACKED>(i, j, N)] = (Cell)v;
}

#define FIN_THREADS 1024

// Threads per cell for a step with cnt cells: as many as keep all FIN_THREADS busy, at most a warp,
// so that the few long cells at the ends of a tile's anti-diagonal sweep do not serialise.
__device__ __forceinline__ int lanes_per_cell(int cnt) {
    int g = 1;
    while (g < 32 && g * 2 * cnt <= FIN_THREADS) g *= 2;
    return g;
}

__device__ __forceinline__ int reduce_max(int v, int g) {
    for (int o = 1; o < g; o <<= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Diagonal tiles (I,I), all at once: the triangular blocks, filled by in-tile anti-diagonals.
template <typename Cell, bool PACKED>
__global__ void __launch_bounds__(FIN_THREADS)
diag_tiles(Cell* __restrict__ C, const signed char* __restrict__ seq, int N, int m) {
    extern __shared__ int smem_diag[];
    int (*X)[TP] = (int (*)[TP])smem_diag;
    const int I = blockIdx.x, i0 = I * T, tid = threadIdx.x;
    for (int x = tid; x < T * TP; x += blockDim.x) smem_diag[x] = 0;
    __syncthreads();
    for (int e = m + 1; e < T; ++e) {
        const int cnt = T - e, G = lanes_per_cell(cnt);
        const int q = tid / G, g = tid % G;
        const bool active = q < cnt;
        const int a = q, b = q + e;
        int best = 0;
        if (active) {
#pragma unroll 4
            for (int r = a + 1 + g; r <= b; r += G) best = max(best, X[a][r - 1] + X[r][b]);
        }
        best = reduce_max(best, G);
        if (active && g == 0) {
            if (can_pair(seq[i0 + a], seq[i0 + b])) best = max(best, (a + 1 <= b - 1 ? X[a + 1][b - 1] : 0) + 1);
            X[a][b] = best;
        }
        __syncthreads();
    }
    for (int x = tid; x < T * T; x += blockDim.x) {
        const int a = x / T, b = x % T;
        if (PACKED) store_cell<Cell, true>(C, i0 + a, i0 + b, N, b >= a ? X[a][b] : 0);
        else C[(i64)(i0 + a) * N + i0 + b] = (Cell)(b >= a ? X[a][b] : X[b][a]);
    }
}

// Off-diagonal tiles (I, I+d), d >= 1: fold in the outer partials, then the split points inside
// tiles I and J by in-tile anti-diagonals, then store the tile (and its mirror).
template <typename Cell, bool PACKED>
__global__ void __launch_bounds__(FIN_THREADS)
finish_tiles(Cell* __restrict__ C, const signed char* __restrict__ seq, int N, int m, int d, int splits,
             const u32* __restrict__ partial) {
    typedef Lanes<Cell> L;
    enum { WORDS_ROW = T / L::CPW };
    extern __shared__ int smem_fin[];
    int (*X)[TF] = (int (*)[TF])smem_fin;
    int (*DI)[TF] = (int (*)[TF])(smem_fin + T * TF);
    int (*DJ)[TF] = (int (*)[TF])(smem_fin + 2 * T * TF);
    int* rowb = smem_fin + 3 * T * TF;        // rowb[t] = C(i0+T, j0-1+t), t in [0, T]
    int* coll = rowb + T + 1;                 // coll[a] = C(i0+a, j0-1)
    const int I = blockIdx.x, J = I + d, i0 = I * T, j0 = J * T, tid = threadIdx.x;
    for (int x = tid; x < T * T; x += blockDim.x) {
        const int a = x / T, b = x % T;
        DI[a][b] = b >= a ? (int)C[cell_index<PACKED>(i0 + a, i0 + b, N)] : 0;
        DJ[a][b] = b >= a ? (int)C[cell_index<PACKED>(j0 + a, j0 + b, N)] : 0;
        int v = 0;
        if (d >= 2) {
            const u32* p = partial + (i64)I * splits * (T * WORDS_ROW) + a * WORDS_ROW + b / L::CPW;
            for (int s = 0; s < splits; ++s) v = max(v, L::half(p[(i64)s * (T * WORDS_ROW)], b % L::CPW));
        }
        X[a][b] = v;
    }
    for (int t = tid; t <= T; t += blockDim.x) rowb[t] = get_cell<Cell, PACKED>(C, i0 + T, j0 - 1 + t, N);
    for (int a = tid; a < T; a += blockDim.x) coll[a] = get_col<Cell, PACKED>(C, i0 + a, j0 - 1, N);
    __syncthreads();
    for (int e = -(T - 1); e < T; ++e) {
        const int alo = e < 0 ? -e : 0;
        const int cnt = T - (e < 0 ? -e : e), G = lanes_per_cell(cnt);
        const int q = tid / G, g = tid % G;
        const bool active = q < cnt;
        const int a = alo + q, b = a + e;
        int best = 0;
        if (active) {
            // split points k in (i, i0+T): C(i,k-1) + C(k,j) = DI[a][k-1] + X[k][b] (local k)
#pragma unroll 4
            for (int c = a + 1 + g; c < T; c += G) best = max(best, DI[a][c - 1] + X[c][b]);
            // split points k in (j0, j]: C(i,k-1) + C(k,j) = X[a][k-1] + DJ[k][b]
#pragma unroll 4
            for (int r = 1 + g; r <= b; r += G) best = max(best, X[a][r - 1] + DJ[r][b]);
        }
        best = reduce_max(best, G);
        if (active && g == 0) {
            const int i = i0 + a, j = j0 + b;
            int x = 0;
            if (j - i > m) {
                x = max(max(X[a][b], best), DI[a][T - 1] + rowb[b + 1]);     // k = i0 + T
                if (can_pair(seq[i], seq[j])) {
                    const int inner = (a + 1 < T && b >= 1) ? X[a + 1][b - 1] : (a + 1 == T ? rowb[b] : coll[a + 1]);
                    x = max(x, inner + 1);
                }
            }
            X[a][b] = x;
        }
        __syncthreads();
    }
    for (int x = tid; x < T * T; x += blockDim.x) {
        const int a = x / T, b = x % T;
        store_cell<Cell, PACKED>(C, i0 + a, j0 + b, N, X[a][b]);
    }
    if (!PACKED) {
        for (int x = tid; x < T * T; x += blockDim.x) {
            const int b = x / T, a = x % T;
            C[(i64)(j0 + b) * N + i0 + a] = (Cell)X[a][b];
        }
    }
}

template <typename Cell, bool PACKED>
__global__ void __launch_bounds__(1024)
traceback(const Cell* __restrict__ C, const signed char* __restrict__ seq, int n, int N, int m,
          int* stack, unsigned char* out, int* status) {
    traceback_block<Cell, PACKED>(C, seq, n, N, m, stack, out, status);
}

#undef T
#undef TP
#undef TF

// Offline compilation checks (tests/test_kernels_compile.py) build every instantiation the host uses.
#ifdef NUSS_INSTANTIATE_ALL
#define NUSS_INST(CELL, PK)                                                                              \
    template __global__ void outer_tiles<CELL, PK>(const CELL*, int, int, int, int, u32*);             \
    template __global__ void diag_tiles<CELL, PK>(CELL*, const signed char*, int, int);                \
    template __global__ void finish_tiles<CELL, PK>(CELL*, const signed char*, int, int, int, int,     \
                                                    const u32*);                                       \
    template __global__ void traceback<CELL, PK>(const CELL*, const signed char*, int, int, int, int*, \
                                                 unsigned char*, int*);
NUSS_INST(u16, false)
NUSS_INST(u16, true)
NUSS_INST(int, false)
NUSS_INST(int, true)
#endif
