// Zuker MFE kernels: the fill of V, WM1, WM (one warp per cell, cells of an anti-diagonal spread over
// warps), the exterior loop W, and the traceback. The recursions live in zuker_core.cuh.
//
// Two fills share the cell code:
//   zk_fill_block  one block per sequence walks all its anti-diagonals (Lei et al. §3.2, sequence- and
//                  cell-level parallelism): for batches of short sequences, one launch per batch.
//   zk_fill_diag   one launch per anti-diagonal over every sequence of the batch: for long sequences,
//                  where one diagonal holds enough cells to fill the whole GPU (the host's LONG_FILL = "diag").
// and, for long sequences, a tiled fill (zk_mid + zk_fin*, below; the default), a chunked W and a block traceback.
#include "zuker_core.cuh"

struct ZkBatch {
    const int* P;               // flat parameter table
    const signed char* S;       // padded codes of every sequence, back to back
    const long long* soff;      // start of sequence s in S
    const int* lens;
    const long long* moff;      // start of sequence s's (n+2)^2 block in V, WM and WM1T
    int* V;
    int* WM;
    int* WM1T;
    int* VI;
    int* V1N;
    int* VAU;
    int* VMX;
#ifdef ZK_SHAPE
    const int* SS;              // SHAPE stacking terms of every sequence, laid out as S (sequence s at soff[s])
#endif
#ifdef ZK_HC
    const ZkHc* HC;             // hard constraints of every sequence, laid out as S (zuker_core.cuh, ZkHc)
#endif
};

// Kernel arguments that make up a ZkBatch (CuPy passes pointers and scalars, not structs); built with ZK_SHAPE,
// the SHAPE terms SSall are the thirteenth; built with ZK_HC, the hard constraints HCall come next.
#define ZK_BATCH_ARGS const int* P, const signed char* Sall, const long long* soff, const int* lens, \
                      const long long* moff, int* Vall, int* WMall, int* WM1Tall, int* VIall, int* V1Nall, \
                      int* VAUall, int* VMXall ZK_SHAPE_PARAM ZK_HC_BATCH_PARAM
#define ZK_BATCH ZkBatch b = {P, Sall, soff, lens, moff, Vall, WMall, WM1Tall, VIall, V1Nall, VAUall, VMXall \
                              ZK_SHAPE_NAME ZK_HC_BATCH_NAME}
#define ZK_BATCH_NAMES P, Sall, soff, lens, moff, Vall, WMall, WM1Tall, VIall, V1Nall, VAUall, VMXall ZK_SHAPE_NAME \
                       ZK_HC_BATCH_NAME

__device__ __forceinline__ ZkSeq zk_seq(const ZkBatch& b, int s) {
    ZkSeq q;
    q.S = b.S + b.soff[s];
    q.n = b.lens[s];
    q.N = q.n + 2;
    long long o = b.moff[s];
    q.V = b.V + o;
    q.WM = b.WM + o;
    q.WM1T = b.WM1T + o;
    q.VI = b.VI + o;
    q.V1N = b.V1N + o;
    q.VAU = b.VAU + o;
    q.VMX = b.VMX + o;
#ifdef ZK_SHAPE
    q.SS = b.SS + b.soff[s];
#endif
#ifdef ZK_HC
    q.HC = b.HC + b.soff[s];
#endif
    return q;
}

__device__ __forceinline__ int zk_warp_min(int x) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) x = min(x, __shfl_xor_sync(0xffffffffu, x, o));
    return x;
}

// One cell, computed by a whole warp (every lane returns with the same values; lane 0 stores).
__device__ __forceinline__ void zk_cell(const int* P, const ZkSeq& q, int i, int j, int lane) {
    int v = zk_warp_min(zk_v_partial(P, q, i, j, lane, 32));
#ifdef ZK_RULES
    v = zk_lonely(P, q, i, j, v, lane == 0);
#endif
    int w1 = zk_wm1(P, q, i, j, v);
    int vm;
    int wm = zk_warp_min(zk_wm_partial(P, q, i, j, w1, lane, 32, vm));
    vm = zk_warp_min(vm);
    if (lane == 0) zk_store(P, q, i, j, v, w1, wm, vm);
}

extern "C" __global__ void zk_fill_block(ZK_BATCH_ARGS, int s0) {
    ZK_BATCH;
    const int s = s0 + blockIdx.x;
    ZkSeq q = zk_seq(b, s);
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int warps = blockDim.x >> 5;
#if defined(ZK_RULES) || defined(ZK_HC)
    const int dend = min(q.n, ZK_REACH(b.P, q));       // max_bp_span: no cell of span j - i + 1 > it
#else
    const int dend = q.n;
#endif
    for (int d = ZK_TURN + 1; d < dend; ++d) {
        for (int i = 1 + warp; i + d <= q.n; i += warps) zk_cell(b.P, q, i, i + d, lane);
        __syncthreads();
    }
}

extern "C" __global__ void zk_fill_diag(ZK_BATCH_ARGS, int s0, int d) {
    ZK_BATCH;
    const int s = s0 + blockIdx.y;
    const int n = b.lens[s];
    const int i = 1 + (int)((blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5);
    if (i + d > n) return;      // uniform over the warp
    ZkSeq q = zk_seq(b, s);
    zk_cell(b.P, q, i, i + d, threadIdx.x & 31);
}

// W (eq. 1) for sequence s0 + blockIdx.x, one block: j in order, the i of each j across the block.
extern "C" __global__ void zk_exterior(ZK_BATCH_ARGS, int s0, int* Wall, const long long* woff) {
    ZK_BATCH;
    __shared__ int red[32];
    const int s = s0 + blockIdx.x;
    ZkSeq q = zk_seq(b, s);
    int* W = Wall + woff[s];
    const int tid = threadIdx.x;
    const int lane = tid & 31, warp = tid >> 5, warps = (blockDim.x + 31) >> 5;
#ifdef ZK_HC
    // the first TURN + 1 positions unpaired, if they may be (rnapipe.cpu.zuker._W)
    for (int j = tid; j <= q.n && j <= ZK_TURN + 1; j += blockDim.x) W[j] = q.HC[j].dn >= j ? 0 : ZK_INF;
#else
    for (int j = tid; j <= q.n && j <= ZK_TURN + 1; j += blockDim.x) W[j] = 0;
#endif
    __syncthreads();
    for (int j = ZK_TURN + 2; j <= q.n; ++j) {
        int x = zk_warp_min(zk_w_partial(b.P, q, W, j, tid, blockDim.x));
        if (lane == 0) red[warp] = x;
        __syncthreads();
        if (tid == 0) {
#ifdef ZK_HC
            int m = q.HC[j].up > 0 ? W[j - 1] : ZK_INF;          // j unpaired only if it may be
            for (int w = 0; w < warps; ++w) m = min(m, red[w]);
            W[j] = min(m, ZK_INF);
#else
            int m = W[j - 1];
            for (int w = 0; w < warps; ++w) m = min(m, red[w]);
            W[j] = m;
#endif
        }
        __syncthreads();
    }
}

// Traceback, one thread per sequence; out gets the dot-bracket bytes at ooff[s], mfe[s] = W[n].
extern "C" __global__ void zk_traceback(ZK_BATCH_ARGS, int s0, int count, const int* Wall, const long long* woff,
                                        int* stacks, const long long* stoff, int* pts,
                                        unsigned char* out, int* mfe, int* status) {
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= count) return;
    ZK_BATCH;
    const int s = s0 + r;
    ZkSeq q = zk_seq(b, s);
    const int* W = Wall + woff[s];
    int* pt = pts + woff[s];
    int st = zk_traceback(b.P, q, W, stacks + stoff[s], pt);
    unsigned char* o = out + b.soff[s];
    for (int k = 1; k <= q.n; ++k) o[k - 1] = pt[k] == 0 ? '.' : (pt[k] > k ? '(' : ')');
    mfe[s] = W[q.n];
    status[s] = st;
}

// ======================================================================================================
// Tiled fill for long sequences (Li, Ranka & Sahni's tiled Nussinov, applied to the multiloop min-plus
// products). Cells (i, j), 1 <= i, j <= n, are grouped in ZK_TILE x ZK_TILE tiles: tile (I, J) holds
// i in [1 + I*T, 1 + I*T + T), j in [1 + J*T, 1 + J*T + T). Tile diagonal D = J - I is filled in two launches:
//
//   zk_mid   (D >= 2) the split points k of the "middle" tiles K = I+1 .. J-1, k in [iEnd, jBeg - 1]
//            (iEnd = first row after tile I, jBeg = first column of tile J), whose operands WM[a][k-1] and
//            WM1[k][b] lie in tiles of diagonals < D (finished), as a register-blocked min-plus product:
//              X(a, b)  = min_k WM[a][k-1] + WM1[k][b]           (VMX of cell (a-1, b+1))
//              WM(a, b) = min_k U_a(k) + WM1[k][b],  U_a(k) = min((k-a)·ML_base, WM[a][k-1])
//                       = min(X(a, b), min_k (k·ML_base + WM1[k][b]) - a·ML_base)
//            (exact integer identities; the host makes sure k·ML_base stays far below INF). The minima go
//            into the very slots the cell will finally hold (WM[a][b] and VMX[a-1][b+1]): stored where one
//            block has the tile, else (the K tiles split over several blocks) by atomicMin on their INF.
//   zk_fin   one block per tile walks its 2T - 1 cell diagonals: V (zk_v_partial, as in the other fills), WM1, and WM /
//            X over the split points outside the middle: k in [i+1, iEnd-1] and [jBeg, j-4] (for D = 0
//            all of [i+1, j-4]), combined with the slots' middle minima. WM's set of k stays i .. j-4 and
//            X's i+5 .. j-4 (terms outside them are INF-based: WM1[k][b] for b - k < 4 is masked to a value
//            above every real sum), so every stored value is the minimum over the same set as in the per-cell sweep.
// ======================================================================================================
#ifndef ZK_TILE
#define ZK_TILE 32
#endif
#define ZK_BIG 1000000000          // > any sum of real terms (3 * INF): marks an excluded operand

__device__ __forceinline__ int zk_addmin(int a, int b, int c) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    return __viaddmin_s32(a, b, c);
#else
    return min(a + b, c);
#endif
}

// Middle products of tile diagonal D >= 2; grid (ceil(tiles / group) * splits, sequences): a block takes part of a
// tile's K tiles (splits > 1) or all of `group` tiles' (group > 1 only without splits). Block: (T/4)^2 threads,
// each 4 x 4 outputs (four rows and four columns T/4 apart). Each K tile's operands come from global memory once
// (no other block of the launch reads them), so with ZK_MID_STAGES 2 the next K tile's are copied asynchronously
// (cp.async, sm_80 on) while the current one is multiplied.
#ifndef ZK_MID_STAGES
#define ZK_MID_STAGES (ZK_TILE <= 32 ? 2 : 1)   // 2 x 2 x 32 x 36 words fit the static shared memory; 64 x 68 do not
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && ZK_MID_STAGES == 2
#define ZK_MID_ASYNC 1
#endif
// *dst = *src, 4 bytes, asynchronously (cp.async; completed by zk_cp_wait) where ZK_MID_ASYNC, else at once.
__device__ __forceinline__ void zk_cp4(int* dst, const int* src) {
#ifdef ZK_MID_ASYNC
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"((unsigned)__cvta_generic_to_shared(dst)), "l"(src));
#else
    *dst = *src;
#endif
}
__device__ __forceinline__ void zk_cp_commit() {
#ifdef ZK_MID_ASYNC
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}
// Every copy but those of the last `pending` commits done (this thread's).
template <int pending>
__device__ __forceinline__ void zk_cp_wait() {
#ifdef ZK_MID_ASYNC
    asm volatile("cp.async.wait_group %0;\n" ::"n"(pending));
#endif
}
// ZK_MID_MINB: the blocks an SM the registers must allow (-D for timing). At T = 32, 12 (80 registers; shared memory
// allows 11), or with hard constraints 8 (128 registers: their per-row terms spill at 80); larger tiles: no bound.
#ifndef ZK_MID_MINB
#if ZK_TILE > 32
#define ZK_MID_MINB 1
#elif defined(ZK_HC)
#define ZK_MID_MINB 8
#else
#define ZK_MID_MINB 12
#endif
#endif
extern "C" __global__ void __launch_bounds__((ZK_TILE / 4) * (ZK_TILE / 4), ZK_MID_MINB)
zk_mid(ZK_BATCH_ARGS, int s0, int D, int splits, int group) {
    constexpr int T = ZK_TILE;
    constexpr int TS = T + 4;            // padded shared row (16-byte aligned rows; rows TS words apart fall on
                                         // distinct 16-byte bank groups for eight consecutive rows)
    constexpr int TX = T / 4;
    constexpr int NT = TX * TX;
    // Both operands row by row, as global memory holds them (a warp copies a row: no bank conflicts): a thread's
    // outputs are rows ty + TX·r and columns tx + TX·c, four split points a 16-byte load of each operand
    __shared__ __align__(16) int Asb[ZK_MID_STAGES][T * TS];   // As[a][kk] = WM[i0 + a][k0 + kk - 1]
    __shared__ __align__(16) int Bsb[ZK_MID_STAGES][T * TS];   // Bs[b][kk] = WM1[k0 + kk][j0 + b] (masked: b - k >= 4)
    __shared__ int pcs[T];
#ifdef ZK_HC
    __shared__ int tcs[T];                   // per K tile: min over its k of k*ml + WM1[k][j0 + col]
#endif
    ZK_BATCH;
    const int s = s0 + blockIdx.y;
    const int n = b.lens[s];
    const int ntiles = (n + T - 1) / T;
    // The block's products, tile by tile: with splits > 1 `span` of one tile's D - 1 K tiles (from its koff-th),
    // else the D - 1 K tiles of each of `group` consecutive tiles (group > 1 where D is small: a block then takes
    // several tiles, their copies overlapping the products as the K tiles' do).
    const int kt = D - 1;                              // middle K tiles of tile I: I+1 .. J-1
    int t0, tiles_here, koff, span;
    if (splits > 1) {
        t0 = blockIdx.x / splits;
        const int part = blockIdx.x % splits;
        const int kper = (kt + splits - 1) / splits;
        koff = part * kper;
        span = min(kper, kt - koff);
        tiles_here = 1;
    } else {
        t0 = blockIdx.x * group;
        koff = 0;
        span = kt;
        tiles_here = min(group, ntiles - D - t0);
    }
    if (t0 + D >= ntiles || span <= 0) return;
    const int nprod = tiles_here * span;
    ZkSeq q = zk_seq(b, s);
    const long long N = q.N;
    const int tid = threadIdx.x, tx = tid % TX, ty = tid / TX;
    const int ml = zk_sc(b.P, ZK_ML_BASE);
    constexpr int PK = T / (NT / T);                   // split points a thread of column pcol takes a K tile
    const int pcol = tid % T, pk0 = tid / T * PK;
    // K tile K's operands into stage st (masked ones written at once, the rest copied). A thread copies column
    // lk of rows lr, lr + RS, ...: a warp copies whole rows, and a row's addresses step by RS rows of the matrix.
    constexpr int RS = NT / T;                         // rows a pass
    static_assert(RS >= 1 && NT % T == 0, "zk_mid: the block copies whole rows a pass");
    const int lk = tid % T, lr = tid / T;
    // product p: tile t0 + p / span, K tile I + 1 + koff + p % span
    auto load = [&](int p, int st) {
        const int I = t0 + p / span;
        const int K = I + 1 + koff + p % span;
        const int i0 = 1 + I * T, j0 = 1 + (I + D) * T;
        const int k = 1 + K * T + lk;
        int* As = Asb[st] + lr * TS + lk;
        int* Bs = Bsb[st] + lr * TS + lk;
        const int* ga = q.WM + (i0 + lr) * N + k - 1;
        const int* gb = q.WM1T + (j0 + lr) * N + k;
        const int amax = n - i0, bmin = k + ZK_TURN + 1 - j0;   // row r: a <= n, bb - k >= ZK_TURN + 1
#pragma unroll
        for (int m = 0; m < T / RS; ++m) {
            const int r = lr + m * RS;
            if (r <= amax) zk_cp4(As + m * RS * TS, ga);
            else As[m * RS * TS] = ZK_BIG;
            if (r <= amax + i0 - j0 && r >= bmin) zk_cp4(Bs + m * RS * TS, gb);
            else Bs[m * RS * TS] = ZK_BIG;
            ga += RS * N;
            gb += RS * N;
        }
        zk_cp_commit();
    };
    if (ZK_MID_STAGES == 2) load(0, 0);
    for (int I = t0; I < t0 + tiles_here; ++I) {
        const int i0 = 1 + I * T, j0 = 1 + (I + D) * T;
        int acc[4][4];
#pragma unroll
        for (int r = 0; r < 4; ++r)
#pragma unroll
            for (int c = 0; c < 4; ++c) acc[r][c] = ZK_BIG;
        int pc = ZK_BIG;                               // min_k k*ml + WM1[k][j0 + pcol], over this thread's k
        if (tid < T) pcs[tid] = ZK_BIG;                // (read by the last tile's stores before its final barrier)
#ifdef ZK_HC
        // Hard constraints: row a's k - a unpaired nucleotides only for k <= ka = a + UP[a] (the end of its free
        // run), so the unpaired term is taken per row: ucc[r][c] = min over the k <= ka[r] of k*ml + WM1[k][b], a
        // K tile's whole column minimum (tcs) where ka[r] lies beyond the tile, its first ka[r] - k0 + 1 rows
        // where ka[r] lies inside it.
        int ucc[4][4], ka[4];
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            const int a = i0 + ty + TX * r;
            ka[r] = a <= n ? a + q.HC[a].up : 0;
#pragma unroll
            for (int c = 0; c < 4; ++c) ucc[r][c] = ZK_BIG;
        }
#endif
        const int p0 = (I - t0) * span;
        for (int p = p0; p < p0 + span; ++p) {
            const int k0 = 1 + (I + 1 + koff + p - p0) * T;
            const int st = ZK_MID_STAGES == 2 ? p & 1 : 0;
            if (ZK_MID_STAGES == 2) {
                if (p + 1 < nprod) {
                    load(p + 1, st ^ 1);   // stage st ^ 1 was last read in the iteration before (its final barrier)
                    zk_cp_wait<1>();
                } else {
                    zk_cp_wait<0>();
                }
            } else {
                load(p, 0);
            }
            const int* As = Asb[st];
            const int* Bs = Bsb[st];
#ifdef ZK_HC
            if (tid < T) tcs[tid] = ZK_BIG;
#endif
            __syncthreads();
            {
                int m = ZK_BIG;
#pragma unroll
                for (int kk = 0; kk < PK; kk += 4) {
                    const int4 bv = *(const int4*)&Bs[pcol * TS + pk0 + kk];
                    const int k = k0 + pk0 + kk;
                    m = min(m, min(min(k * ml + bv.x, (k + 1) * ml + bv.y),
                                   min((k + 2) * ml + bv.z, (k + 3) * ml + bv.w)));
                }
#ifdef ZK_HC
                atomicMin(&tcs[pcol], m);
#else
                pc = min(pc, m);
#endif
            }
#pragma unroll 2
            for (int kk = 0; kk < T; kk += 4) {
                int ar[4][4], br[4][4];
#pragma unroll
                for (int r = 0; r < 4; ++r) {
                    const int4 v = *(const int4*)&As[(ty + TX * r) * TS + kk];
                    ar[r][0] = v.x; ar[r][1] = v.y; ar[r][2] = v.z; ar[r][3] = v.w;
                }
#pragma unroll
                for (int c = 0; c < 4; ++c) {
                    const int4 v = *(const int4*)&Bs[(tx + TX * c) * TS + kk];
                    br[c][0] = v.x; br[c][1] = v.y; br[c][2] = v.z; br[c][3] = v.w;
                }
#pragma unroll
                for (int h = 0; h < 4; ++h)
#pragma unroll
                    for (int r = 0; r < 4; ++r)
#pragma unroll
                        for (int c = 0; c < 4; ++c) acc[r][c] = zk_addmin(ar[r][h], br[c][h], acc[r][c]);
            }
#ifdef ZK_HC
            __syncthreads();                           // tcs complete
#pragma unroll
            for (int r = 0; r < 4; ++r) {
                if (ka[r] >= k0 + T - 1) {
#pragma unroll
                    for (int c = 0; c < 4; ++c) ucc[r][c] = min(ucc[r][c], tcs[tx + TX * c]);
                } else if (ka[r] >= k0) {
                    for (int kk = 0; kk <= ka[r] - k0; ++kk)
#pragma unroll
                        for (int c = 0; c < 4; ++c)
                            ucc[r][c] = min(ucc[r][c], (k0 + kk) * ml + Bs[(tx + TX * c) * TS + kk]);
                }
            }
#endif
            __syncthreads();
        }
        atomicMin(&pcs[pcol], pc);
        __syncthreads();
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            const int a = i0 + ty + TX * r;
            if (a > n) break;
#pragma unroll
            for (int c = 0; c < 4; ++c) {
                const int bb = j0 + tx + TX * c;
                if (bb > n) break;
                const int x = acc[r][c];
#ifdef ZK_HC
                const int pw = ucc[r][c];
#else
                const int pw = pcs[tx + TX * c];
#endif
                int wm = x;
                if (pw < ZK_BIG) wm = min(wm, pw - a * ml);
                if (splits == 1) {                     // the cell's one writer: what atomicMin on INF would leave
                    q.WM[a * N + bb] = min(wm, ZK_INF);    // (the INF fill may then leave these cells alone)
                    if (a > 1 && bb < n) q.VMX[(a - 1) * N + bb + 1] = min(x, ZK_INF);
                    continue;
                }
                if (wm < ZK_BIG) atomicMin(&q.WM[a * N + bb], wm);
                if (a > 1 && bb < n && x < ZK_BIG) atomicMin(&q.VMX[(a - 1) * N + bb + 1], x);
            }
        }
        __syncthreads();                               // pcs read before the next tile resets it
    }
}

// WM and X of cell (i, j) over the split points outside the middle tiles, for one lane: k in [i+1, lo_end]
// and [hi_beg, j-4]; the k = i term (w1) on lane 0.
__device__ __forceinline__ int zk_wm_near(const int* P, const ZkSeq& q, int i, int j, int w1, int lane,
                                          int lo_end, int hi_beg, int& vm) {
    int best = lane == 0 ? w1 : ZK_INF;
    int vmin = ZK_INF;
    const int ml_base = zk_sc(P, ZK_ML_BASE);
    const int* rw = q.WM1T + (long long)j * q.N;
    const int* ru = q.WM + (long long)i * q.N - 1;
    const int vbeg = i + ZK_TURN + 2;
    const int kend = j - ZK_TURN - 1;
    const int e1 = min(lo_end, kend);
    for (int k = i + 1 + lane; k <= e1; k += 32)
        zk_wm_split(ru, rw, i, k, ml_base, vbeg, best, vmin ZK_HC_UFREE_OF(q, i));
    for (int k = max(hi_beg, i + 1) + lane; k <= kend; k += 32)
        zk_wm_split(ru, rw, i, k, ml_base, vbeg, best, vmin ZK_HC_UFREE_OF(q, i));
    vm = vmin;
    return best;
}

// zk_v_partial with the interior loops n1 + n2 <= maxu (bulges >= 3, 1xn, generic: aux + SZ) spread evenly
// over the lanes in row-major order (n1, then n2) instead of one row per iteration: the same candidates.
__device__ __forceinline__ int zk_v_flat(const int* P, const ZkSeq& q, int i, int j, int lane) {
    const signed char* S = q.S;
    int t = zk_pair(P, S, i, j ZK_HC_ARG(q.HC));
    if (t == 0) return ZK_INF;
    const bool closes = zk_closes(P, t);     // else the stack alone, as in zk_v_partial
    int best = ZK_INF;
    if (lane == 0 && closes ZK_AND_HC_RUN(q, i + 1, j - i - 1)) best = zk_hairpin(P, S, i, j);
    int maxu = j - i - ZK_TURN - 3;
    if (maxu > ZK_MAXLOOP) maxu = ZK_MAXLOOP;
    if (!closes && maxu > 0) maxu = 0;
    int si1 = S[i + 1], sj1 = S[j - 1];
    if (lane < ZK_NSPECIAL) {
        int n1 = (ZK_SPECIAL_N1 >> (2 * lane)) & 3, n2 = (ZK_SPECIAL_N2 >> (2 * lane)) & 3;
        if (n1 + n2 <= maxu ZK_AND_HC_LOOP(q, i, j, n1, n2)) {
            int p = i + 1 + n1, qq = j - 1 - n2;
            int t2 = zk_pair(P, S, p, qq ZK_HC_ARG(q.HC));
            if (t2 && (lane == 0 || zk_closes(P, t2)))
                best = zk_min(best, zk_interior(P, n1, n2, t, zk_rtype(t2), si1, sj1, S[p - 1], S[qq + 1]) +
                                    q.V[p * q.N + qq] + (lane == 0 ? ZK_SSTACK(q.SS, i, j) : 0));
        }
    }
    const int o0 = zk_au(P, t), o1 = zk_mm(P, ZK_OFF_MISMATCH_INTERIOR_1N, t, si1, sj1),
              o2 = zk_mm(P, ZK_OFF_MISMATCH_INTERIOR, t, si1, sj1);
    const int* SZ = P + zk_tab(P, ZK_H_SZ);
    if (maxu >= 0) {
        int n1 = 0, n2 = lane;
        while (n1 <= maxu && n2 > maxu - n1) { n2 -= maxu - n1 + 1; ++n1; }
        while (n1 <= maxu) {
            const int kind = min(min(n1, n2), 2);
            const int* A = kind == 0 ? q.VAU : (kind == 1 ? q.V1N : q.VI);
            const int e = A[(long long)(i + 1 + n1) * q.N + j - 1 - n2] + ZK_LDG(SZ + n1 * 32 + n2) +
                          (kind == 0 ? o0 : (kind == 1 ? o1 : o2));
#ifdef ZK_HC
            if (ZK_HC_LOOP(q, i, j, n1, n2)) best = zk_min(best, e);
#else
            best = zk_min(best, e);
#endif
            n2 += 32;
            while (n1 <= maxu && n2 > maxu - n1) { n2 -= maxu - n1 + 1; ++n1; }
        }
    }
    if (lane == 0 && closes) {
        int m = q.VMX[i * q.N + j];
        if (m < ZK_HALF_INF) best = zk_min(best, m + zk_multi_closing(P, S, i, j));
    }
    return best;
}

// Finish the tiles of tile diagonal D; grid (tiles, sequences), FIN_WARPS warps per block.
template <bool FLAT>
__device__ __forceinline__ void zk_fin_tiles(ZK_BATCH_ARGS, int s0, int D) {
    constexpr int T = ZK_TILE;
    ZK_BATCH;
    const int s = s0 + blockIdx.y;
    const int n = b.lens[s];
    const int ntiles = (n + T - 1) / T;
    const int I = blockIdx.x, J = I + D;
    if (J >= ntiles) return;
    ZkSeq q = zk_seq(b, s);
    const long long N = q.N;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const int i0 = 1 + I * T, j0 = 1 + J * T;
    const int iend = i0 + T;
    // local diagonals dl (cell (i0 + r, j0 + r + dl)); cells with j - i = D*T + dl <= TURN are never filled, nor
    // (max_bp_span) those with j - i + 1 > the span: left INF, never read by a cell within it
#if defined(ZK_RULES) || defined(ZK_HC)
    const int dlend = min(T, ZK_REACH(b.P, q) - D * T);
#else
    constexpr int dlend = T;
#endif
    for (int dl = max(1 - T, ZK_TURN + 1 - D * T); dl < dlend; ++dl) {
        const int lb = dl < 0 ? -dl : 0, le = dl < 0 ? T : T - dl;   // local rows r: cell (i0+r, j0+r+dl)
        for (int r = lb + warp; r < le; r += warps) {
            const int i = i0 + r, j = j0 + r + dl;
            if (j > n) break;                                         // j grows with r
            int v = zk_warp_min(FLAT ? zk_v_flat(b.P, q, i, j, lane) : zk_v_partial(b.P, q, i, j, lane, 32));
#ifdef ZK_RULES
            v = zk_lonely(b.P, q, i, j, v, lane == 0);
#endif
            int w1 = zk_wm1(b.P, q, i, j, v);
            int vm;
            int wm = zk_wm_near(b.P, q, i, j, w1, lane, D == 0 ? j : iend - 1, D == 0 ? j + 1 : j0, vm);
            wm = zk_warp_min(wm);
            vm = zk_warp_min(vm);
            if (lane == 0) {
                if (D >= 2) {
                    wm = zk_min(wm, q.WM[i * N + j]);
                    if (i > 1 && j < n) vm = zk_min(vm, q.VMX[(i - 1) * N + j + 1]);
                }
                zk_store(b.P, q, i, j, v, w1, wm, vm);
            }
        }
        __syncthreads();
    }
}

extern "C" __global__ void zk_fin(ZK_BATCH_ARGS, int s0, int D) {
    zk_fin_tiles<false>(ZK_BATCH_NAMES, s0, D);
}

extern "C" __global__ void zk_fin_flat(ZK_BATCH_ARGS, int s0, int D) {
    zk_fin_tiles<true>(ZK_BATCH_NAMES, s0, D);
}

// ------------------------------------------------------------------------------------------------------
// zk_fin_lanes: zk_fin_flat's work on a tile (ZK_TILE = 32 only), with the lanes of a warp over the cells of a
// cell diagonal (lane r: cell (i0 + r, j0 + r + dl)) instead of over one cell's candidates, and what a cell
// diagonal reads in shared memory, loaded at the start and written as the tile's own cells are finished:
//   * the auxiliaries VAU, V1N, VI of every cell an interior loop of the tile reads (rows i0+1 .. i0+61,
//     columns j0-31 .. j0+30: ZF_A x ZF_A elements a kind, int32 or 16 bits with ZF_AUX16);
//   * for the 11 loops of zk_interior: pair types and V of the cells within 4 of the tile, and the codes;
//   * the multiloop's near split points (zk_wm_near's): WM of tile (I, I) and WM1 of tile (J, J) (for D = 0 the
//     tile itself), WM and WM1 of the tile, and column j0 - 1 of WM and WM1 (tile (I, J-1)).
// WM's split points k take min((k - i)·ML_base, WM[i][k-1]) + WM1[k][j]: their minimum is the lesser of X's (the
// WM[i][k-1] + WM1[k][j], near ones from the units below, middle ones from zk_mid's slots) and of
// U[i][j] = min over k >= i of (k - i)·ML_base + WM1[k][j] = min(WM1[i][j], ML_base + U[i + 1][j]), one step a cell
// from the cell below (the lane below on the diagonal before; for the tile's last row, the first row of tile
// (I + 1, J), which that tile's block stored in WM1T's unused upper triangle: WM1T[i][j], i < j, holds U[i][j] for
// i a tile's first row). A cell's loops read the cells two diagonals back and more, its near split points too; only
// U reads the diagonal just before. So per cell diagonal dl, one interval between block barriers:
// warp 0 finishes dl's cells (V, WM1, U, WM and X from the partial results, stored as zk_store stores them and
// into the shared copies) while the other warps compute what diagonal dl + 1 needs: warp 1
// its cells' table terms for phase B and the middle's slots, the next ZF_RESTS warps the rest of V (the hairpin and
// VM, the 11 loops of zk_interior), the next ZF_CHUNKS the interior loops in chunks (zf_base's list, (n1, n2) known
// at compile time: one shared load at a constant offset and an add-min each), four lanes a cell over the cells
// listed as having loops; and, spread over warps ZF_SPLIT_W0 .., the other near split points in ZF_SPLITS units.
// Each kind's minimum goes into shared memory by a shared atomicMin; those writes wait on a named barrier a warp
// until warp 0 has read and reset the partial results of dl.
// Each value is the minimum over zk_fin_flat's candidates: the same value wherever it is finite (below
// ZK_HALF_INF; a value above it, which every reader takes as INF, may differ:
// zk_fin_flat also adds up the loops that cannot form, which this kernel leaves out).
// ------------------------------------------------------------------------------------------------------
#if ZK_TILE == 32                      // zk_fin_lanes: a warp's lanes are a tile's 32 rows (or a diagonal's listed cells)
#define ZF_A (32 + ZK_MAXLOOP)          // rows and columns of the auxiliaries' window (62)
#ifndef ZF_PA                           // its row pitch (62 to 65; -D for timing): at 65 the chunk units' four lanes
#define ZF_PA 65                        // a cell (words row * 66 + d * 65 or row * 66 - d, eight listed cells) share
#endif                                  // banks less than at 62 (benchmarks/zuker_fin_banks.py: 1.78 shared
                                        // wavefronts a load against 2.22 on random sequences)
static_assert(ZF_PA >= ZF_A, "zk_fin_lanes: the window's rows are 62 words");
#define ZF_PLANE (ZF_A * ZF_PA)
// The window's elements: int32, or with ZF_AUX16 (the host's FIN_AUX16) 16 bits, which leaves zk_fin_lanes small
// enough for four blocks an SM. A 16-bit element holds x - B for a value x, B the tile's bias (the least finite V
// or WM beside the tile: the window's values, whose spans differ by less than 64, lie near it), when x - B lies
// in [ZF16_LO, ZF16_HI]; ZF16_SENT stands for INF and for any value above that. The block sets the sequence's
// overflow word where a finite value of its window falls outside the range (the host then folds the sequence again
// with int32 elements), so where it is not set every finite value is held exactly. A chunk's sum of an element and
// a size term (finite ones within +-ZF16_SZ: the host checks the model's) is then at most ZF16_HI + ZF16_SZ for a
// finite element and at least ZF16_SENT - ZF16_SZ for ZF16_SENT: phase B takes a chunk minimum from ZF16_CUT up as
// none, and adds B back to the others.
#ifdef ZF_AUX16
typedef short zf_aux_t;
#define ZF16_SENT 32767
#ifndef ZF16_LO                        // -D for tests (a narrow range makes the int32 refold happen)
#define ZF16_LO (-32000)
#endif
#ifndef ZF16_HI
#define ZF16_HI 16000
#endif
#define ZF16_SZ 8000
#define ZF16_CUT (ZF16_HI + ZF16_SZ + 1)
static_assert(ZF16_LO >= -32768 && ZF16_LO <= ZF16_HI && ZF16_CUT <= ZF16_SENT - ZF16_SZ,
              "zk_fin_lanes: the 16-bit range");
#else
typedef int zf_aux_t;
#endif
#define ZF_AUX_WORDS ((3 * ZF_PLANE * (int)sizeof(zf_aux_t) + 15) / 16 * 4)   // the window's 4-byte words (16-byte
                                                                               // aligned end)
// the window element of the value x under the tile's bias B (INF: ZF16_SENT)
__device__ __forceinline__ zf_aux_t zf_aux(int x, int B) {
#ifdef ZF_AUX16
    return (zf_aux_t)(x >= ZK_HALF_INF || x - B > ZF16_HI ? ZF16_SENT : max(x - B, ZF16_LO));
#else
    return x;
#endif
}
// whether the value x is finite and its element under the bias B out of range
__device__ __forceinline__ bool zf_aux_out(int x, int B) {
#ifdef ZF_AUX16
    return x < ZK_HALF_INF && (x - B < ZF16_LO || x - B > ZF16_HI);
#else
    return false;
#endif
}
// The 32 x 32 multiloop tiles: rows of ZF_TP words, 16-byte aligned, so that the near split points read four
// consecutive split points with one 16-byte load. A WM tile holds cell (r, c) at word r * ZF_TP + 1 + c (word 0 of
// row r: column -1), a WM1 tile transposed, cell (r, c) at word c * ZF_TP + r. Tile (I, I)'s WM (cells c >= r + 4)
// and tile (J, J)'s WM1 (cells r <= c - 4) share one array: row x holds WM's row x from word x + 5 and WM1's column
// x up to word x - 4, INF between.
#define ZF_TP 36
// The warps of a block (the host's FIN_LANES_WARPS): warp 0 finishes the cells, warp 1 computes the table terms,
// warps 2 .. ZF_RESTS + 1 the rest of V, then ZF_CHUNKS warps the interior loops and ZF_SPLIT_ONLY warps the near
// split points (ZF_SPLITS units round warps ZF_SPLIT_W0 ..). Each producer is a chain of dependent table reads or
// shared loads whose latency the others' work covers: more of them in flight, shorter intervals.
#ifndef ZF_WARPS
#define ZF_WARPS 12
#endif
#ifndef ZF_SPLIT_ONLY                  // -D for timing
#define ZF_SPLIT_ONLY (ZF_WARPS >= 12 ? 2 : 0)
#endif
#ifndef ZF_RESTS                       // 2 to 8; -D for timing
#define ZF_RESTS (ZF_WARPS >= 12 ? 5 : 3)
#endif
static_assert(ZF_RESTS >= 2 && ZF_RESTS <= 8, "zk_fin_lanes: 2 to 8 warps for the rest of V");
#define ZF_C0 (2 + ZF_RESTS)             // the first chunk warp
#define ZF_CHUNKS (ZF_WARPS - ZF_C0 - ZF_SPLIT_ONLY)   // warps ZF_C0 .. take the interior loops, a chunk each
#ifndef ZF_SPLITS                      // units of the near split points; -D for timing
#define ZF_SPLITS 8
#endif
#ifndef ZF_SPLIT_W0                    // the units go round warps ZF_SPLIT_W0 .. ZF_WARPS - 1; -D for timing
#define ZF_SPLIT_W0 (ZF_SPLIT_ONLY > 0 ? ZF_WARPS - ZF_SPLIT_ONLY : 1)
#endif
static_assert(ZF_SPLIT_W0 >= 1 && ZF_SPLIT_W0 < ZF_WARPS, "zk_fin_lanes: warp 0 takes no split-point unit");
static_assert(ZF_WARPS >= 6 && ZF_WARPS <= 16, "zk_fin_lanes: 6 to 16 warps");
#define ZF_PW 36                        // row pitch of the specials' windows (pair types, V)
static_assert(ZF_SPLITS == 8, "zk_fin_lanes: the near split points in units of four (16-byte loads)");

// Named barriers 1 .. ZF_WARPS - 1 within phase B's interval, barrier w between warp 0 and warp w only: warp 0 has
// read and reset the partial results of the diagonal it finishes (zf_consumed, no wait: it arrives at each); warp w
// may then write those of the next one (zf_wait_consumed), without waiting for the other warps.
__device__ __forceinline__ void zf_consumed() {
#pragma unroll
    for (int w = 1; w < ZF_WARPS; ++w) asm volatile("bar.arrive %0, 64;" :: "r"(w) : "memory");
}
__device__ __forceinline__ void zf_wait_consumed(int warp) {
    asm volatile("bar.sync %0, 64;" :: "r"(warp) : "memory");
}
static_assert(ZF_WARPS <= 16, "zk_fin_lanes: a named barrier a warp");

// zk_fin_lanes' shared memory, in 4-byte words (the host's FIN_LANES_SHARED)
#define ZF_SHARED_WORDS (4 * ZF_NBP + ZF_AUX_WORDS + 3 * 32 * ZF_TP + 35 * ZF_PW + 32 + 21 * 32 + 66 + \
                         (36 * ZF_PW + 80) / 4)
// The interior loops four lanes a cell. zk_loop_entry's list is covered by ZF_NBASE base loops, each taken by the
// cell's four lanes with its n1 (along a window column) or its n2 (along a row) grown by the lane's d = 0 .. 3, in the
// same kind (min(n1, n2): 0, 1 or >= 2):
//   * n1 >= 2 and n2 >= 2: from n1 = 2, 6, 10, .., along n1;
//   * n1 <= 1 and n2 >= 3: from n2 = 3, 7, 11, .., along n2;
//   * n2 <= 1 and n1 >= 3: from n1 = 3, 7, 11, .., along n1.
// Every loop of the list is one base loop grown by one d. A lane may also land on three of the 11 special loops,
// (2, 2), (2, 3) and (3, 2): their size terms are INF, so they never win. Loops past s = maxu are cut by the size
// test (s + d <= maxu); a lane's window and size-term reads stay inside their arrays for every loop it takes.
ZK_CHD int zf_base(int n1, int n2) {              // -1: not a base loop; 0: grown along n1; 1: along n2
    if (n1 >= 2 && n2 >= 2) return (n1 - 2) % 4 == 0 ? 0 : -1;
    if (n1 <= 1 && n2 >= 3) return (n2 - 3) % 4 == 0 ? 1 : -1;
    if (n2 <= 1 && n1 >= 3) return (n1 - 3) % 4 == 0 ? 0 : -1;
    return -1;
}
ZK_CHD int zf_entry(int e, int what) {            // base loop e by s, then n1: what 0 its s, 1 its n1, 2 its direction
    int k = 0;
    for (int s = 0; s <= ZK_MAXLOOP; ++s)
        for (int n1 = 0; n1 <= s; ++n1) {
            const int d = zf_base(n1, s - n1);
            if (d < 0) continue;
            if (k == e) return what == 0 ? s : what == 1 ? n1 : d;
            ++k;
        }
    return -1;
}
#define ZF_NBASE 133
#define ZF_NBP 136                     // a lane's row of size terms (ZF_NBASE up to a multiple of 4: 16-byte loads)
static_assert(zf_entry(ZF_NBASE - 1, 0) == ZK_MAXLOOP && zf_entry(ZF_NBASE, 0) == -1, "base loop count");
// The base loops in a table (constant memory) for the size terms' load: n1 | s << 5 | direction << 10 each
struct ZfBases { unsigned short e[ZF_NBASE]; };
ZK_CHD ZfBases zf_bases() {
    ZfBases t{};
    for (int e = 0; e < ZF_NBASE; ++e)
        t.e[e] = (unsigned short)(zf_entry(e, 1) | zf_entry(e, 0) << 5 | zf_entry(e, 2) << 10);
    return t;
}
__constant__ ZfBases zf_base_tab = zf_bases();
#ifdef ZF_SHARED_BYTES                 // the dynamic shared memory the host launches with (zuker.py, FIN_LANES_SHARED)
static_assert(ZF_SHARED_BYTES >= 4 * ZF_SHARED_WORDS, "zk_fin_lanes: FIN_LANES_SHARED is smaller than its layout");
#endif

// chunk C's first base loop: chunk 0 has ZF_CH0 of them (the smallest loops, which every listed cell takes: a little
// under an even share, 36 of 133 with three chunk warps), the others an even share of the rest
#ifndef ZF_CH0                         // -D for timing
#define ZF_CH0 ((ZF_NBASE / ZF_CHUNKS - 8) & ~3)
#endif
ZK_CHD int zf_chunk_lo(int c) {
    return c == 0 ? 0 : c >= ZF_CHUNKS ? ZF_NBASE : ZF_CH0 + (c - 1) * (ZF_NBASE - ZF_CH0) / (ZF_CHUNKS - 1);
}
// The base loops' terms. A chunk's base loops of one s form terms whose loops have, for each lane's d, one size
// term: the bulges (kind 0: bulge[s] whichever side) where ZF_GROUP01, the 1 x n loops (kind 1: interior[s] plus
// Ninio of s - 2) where ZF_GROUP01, the generic loops whose grown loops keep |n1 - n2| >= ZF_GROUPS for every d
// (interior[s] plus the largest Ninio), then every other base loop a term of its own. The host checks both rules
// on the model's size terms (fin_lanes_groups: ZF_GROUPS the least asymmetry from which every s's generic loops have
// one size term); without them every loop is a term. A term costs a lane one size term and one add-min: its loops'
// window elements are taken by three-operand mins first (a grown loop's sum is element + size term, and adding
// one number commutes with the minimum).
#ifndef ZF_GROUPS
#define ZF_GROUPS 99
#endif
#ifndef ZF_GROUP01
#define ZF_GROUP01 0
#endif
constexpr ZfBases zf_bases_c = zf_bases();
ZK_CHD int zf_bs(int e) { return (zf_bases_c.e[e] >> 5) & 31; }      // base loop e's s, n1, direction
ZK_CHD int zf_bn1(int e) { return zf_bases_c.e[e] & 31; }
ZK_CHD int zf_bdir(int e) { return zf_bases_c.e[e] >> 10; }
ZK_CHD int zf_kind_of(int e) {                    // min(n1, n2) up to 2 (the window's plane)
    const int n1 = zf_bn1(e), n2 = zf_bs(e) - n1, m = n1 < n2 ? n1 : n2;
    return m < 2 ? m : 2;
}
ZK_CHD int zf_class(int e) {                      // 0, 1, 2: the term of its kind; 3: a term of its own
    const int k = zf_kind_of(e);
    if (k < 2) return ZF_GROUP01 ? k : 3;
    const int n1 = zf_bn1(e), n2 = zf_bs(e) - n1, dir = zf_bdir(e);
    for (int d = 0; d < 4; ++d) {
        const int g1 = dir ? n1 : n1 + d, g2 = dir ? n2 + d : n2, a = g1 - g2;
        if ((a < 0 ? -a : a) < ZF_GROUPS || g1 + g2 <= 5) return 3;    // (2, 2), (2, 3), (3, 2): special loops
    }
    return 2;
}
#define ZF_TMAX 160
struct ZfTerms {                       // term t: base loops [a, b) of one s, those of class cls (3: loop a alone)
    int n;
    int chunk0[12];                    // a chunk's first term
    unsigned char a[ZF_TMAX], b[ZF_TMAX], cls[ZF_TMAX], first[ZF_TMAX], rep[ZF_TMAX];
};
ZK_CHD ZfTerms zf_make_terms() {
    ZfTerms t{};
    for (int c = 0; c <= ZF_CHUNKS; ++c) {
        t.chunk0[c] = t.n;
        if (c == ZF_CHUNKS) break;
        const int e0 = zf_chunk_lo(c), e1 = zf_chunk_lo(c + 1);
        for (int e = e0; e < e1;) {                     // the loops [e, f) of one s
            int f = e;
            while (f < e1 && zf_bs(f) == zf_bs(e)) ++f;
            t.first[t.n] = 1;
            for (int cls = 0; cls < 4; ++cls)
                for (int g = e; g < f; ++g) {
                    if (zf_class(g) != cls) continue;
                    t.a[t.n] = (unsigned char)(cls < 3 ? e : g);   // a group: one term, its first loop's size term
                    t.b[t.n] = (unsigned char)(cls < 3 ? f : g + 1);
                    t.cls[t.n] = (unsigned char)cls;
                    t.rep[t.n++] = (unsigned char)g;
                    if (cls < 3) break;
                }
            e = f;
        }
    }
    return t;
}
constexpr ZfTerms zf_terms = zf_make_terms();
constexpr int zf_nterms = zf_terms.n;
static_assert(zf_nterms <= ZF_NBP, "zk_fin_lanes: a row of size terms holds every term");
__constant__ ZfTerms zf_term_tab = zf_make_terms();    // the size terms' load (a term's first loop)
ZK_CHD int zf_term(int t, int what) {             // term t's a, b, class, whether first of its s; chunk t's first term
    return what == 0 ? zf_terms.a[t] : what == 1 ? zf_terms.b[t] : what == 2 ? zf_terms.cls[t]
         : what == 3 ? zf_terms.first[t] : zf_terms.chunk0[t];
}
ZK_CHD int zf_member(int e, int b, int cls) {     // term (.., b, cls)'s first loop from e on (b: none)
    return e >= b ? b : (cls == 3 || zf_class(e) == cls) ? e : zf_member(e + 1, b, cls);
}
// a loop's window element: its plane (kind), n1 and n2, along its direction
template <int E>
__device__ __forceinline__ int zf_win(const zf_aux_t* wr, const zf_aux_t* wc) {
    constexpr int n1 = zf_bn1(E), n2 = zf_bs(E) - n1, dir = zf_bdir(E);
    return (dir ? wc : wr)[zf_kind_of(E) * ZF_PLANE + n1 * ZF_PA - n2];
}
__device__ __forceinline__ int zf_min3(int a, int b, int c) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    return __vimin3_s32(a, b, c);
#else
    return min(a, min(b, c));
#endif
}
// the minimum of t and the window elements of class CLS's loops E .. B-1 (two a three-operand min)
template <int E, int B, int CLS>
__device__ __forceinline__ int zf_group_min(const zf_aux_t* wr, const zf_aux_t* wc, int t) {
    constexpr int e1 = zf_member(E, B, CLS);
    if constexpr (e1 >= B) {
        return t;
    } else {
        constexpr int e2 = zf_member(e1 + 1, B, CLS);
        if constexpr (e2 >= B) {
            return min(t, zf_win<e1>(wr, wc));
        } else {
            return zf_group_min<e2 + 1, B, CLS>(wr, wc, zf_min3(t, zf_win<e1>(wr, wc), zf_win<e2>(wr, wc)));
        }
    }
}
// the loops of a term one by one (hard constraints, or a term of one loop): x = element + size term sz
template <bool B, int E, int E1, int CLS>
__device__ __forceinline__ void zf_each(const zf_aux_t* wr, const zf_aux_t* wc, int sz, int& m0, int& m1, int& m2,
                                        int a5r, int a3r, int a5c, int a3c) {
    constexpr int e = zf_member(E, E1, CLS);
    if constexpr (e < E1) {
        constexpr int n1 = zf_bn1(e), n2 = zf_bs(e) - n1, dir = zf_bdir(e);
        constexpr int kind = zf_kind_of(e);
        const int x = zf_win<e>(wr, wc) + sz;
        bool ok = true;
        if constexpr (B) ok = dir ? n1 <= a5c && n2 <= a3c : n1 <= a5r && n2 <= a3r;
        if (ok) {
            if constexpr (kind == 0) m0 = min(m0, x);
            else if constexpr (kind == 1) m1 = min(m1, x);
            else m2 = min(m2, x);
        }
        zf_each<B, e + 1, E1, CLS>(wr, wc, sz, m0, m1, m2, a5r, a3r, a5c, a3c);
    }
}
// The size terms: a lane's own row of them in shared memory (sSZB: word d * ZF_NBP + T, term T's loops grown by d,
// its first loop's), read four at a time with one 16-byte load at a chunk's first term and at every multiple of 4
// (a load of a size term at each loop cost a third of the chunk units' shared loads). z holds the four words.
template <int T>
__device__ __forceinline__ int zf_size(const int4& z) {
    return (T & 3) == 0 ? z.x : (T & 3) == 1 ? z.y : (T & 3) == 2 ? z.z : z.w;
}
// Terms T .. T1-1 of a chunk whose first is T0 for a lane: wr / wc its window base grown along n1 / n2 (row
// r + d*ZF_PA, column -d), szb its row of size terms (z: the four last loaded), mu = maxu - d; with B (hard
// constraints bounding the loop), a5r, a3r / a5c, a3c: the most unpaired nucleotides after i and before j, less d on
// the side the loop grows (each loop then taken alone). m0, m1, m2: the minima of the three kinds.
template <bool B, int T, int T0, int T1>
__device__ __forceinline__ void zf_terms_run(const zf_aux_t* wr, const zf_aux_t* wc, const int* szb, int4& z, int mu,
                                             int& m0, int& m1, int& m2, int a5r, int a3r, int a5c, int a3c) {
    if constexpr (T < T1) {
        constexpr int a = zf_term(T, 0), b = zf_term(T, 1), cls = zf_term(T, 2);
        if constexpr (zf_term(T, 3)) {
            if (zf_bs(a) > mu) return;            // the terms are sorted by s
        }
        if constexpr (T == T0 || T % 4 == 0) z = *(const int4*)(szb + (T & ~3));
        const int sz = zf_size<T>(z);
        if constexpr (B || cls == 3) {
            zf_each<B, a, b, cls>(wr, wc, sz, m0, m1, m2, a5r, a3r, a5c, a3c);
        } else {
            const int t = zf_group_min<a, b, cls>(wr, wc, ZK_BIG);
            if constexpr (cls == 0) m0 = min(m0, t + sz);
            else if constexpr (cls == 1) m1 = min(m1, t + sz);
            else m2 = min(m2, t + sz);
        }
        zf_terms_run<B, T + 1, T0, T1>(wr, wc, szb, z, mu, m0, m1, m2, a5r, a3r, a5c, a3c);
    }
}

template <bool B, int C>
__device__ __forceinline__ void zf_chunk(const zf_aux_t* wr, const zf_aux_t* wc, const int* szb, int mu,
                                         int& m0, int& m1, int& m2, int a5r, int a3r, int a5c, int a3c) {
    int4 z;
    constexpr int T0 = zf_term(C, 4), T1 = zf_term(C + 1, 4);
    zf_terms_run<B, T0, T0, T1>(wr, wc, szb, z, mu, m0, m1, m2, a5r, a3r, a5c, a3c);
}

// zf_chunk<B, C> for the chunk c a warp takes (C counts up from 0 to ZF_CHUNKS - 1)
template <bool B, int C = 0>
__device__ __forceinline__ void zf_chunk_at(int c, const zf_aux_t* wr, const zf_aux_t* wc, const int* szb,
                                            int mu, int& m0, int& m1, int& m2, int a5r, int a3r, int a5c, int a3c) {
    if constexpr (C < ZF_CHUNKS) {
        if (c == C) {
            zf_chunk<B, C>(wr, wc, szb, mu, m0, m1, m2, a5r, a3r, a5c, a3c);
            return;
        }
        zf_chunk_at<B, C + 1>(c, wr, wc, szb, mu, m0, m1, m2, a5r, a3r, a5c, a3c);
    }
}
static_assert(ZF_CHUNKS >= 1 && ZF_CHUNKS <= 11, "ZF_CHUNKS: 1 to 11");
static_assert(ZF_CHUNKS == 1 || (ZF_CH0 >= 1 && ZF_NBASE - ZF_CH0 >= ZF_CHUNKS - 1), "ZF_CH0: a base loop a chunk");

#ifdef ZK_HC
#define ZF_HC_BOUNDS , int a5, int a3           // at most a5 unpaired after i, a3 before j (zk_v_flat's ZK_HC_LOOP)
#define ZF_HC_BOUNDS_ARG , a5, a3
#else
#define ZF_HC_BOUNDS
#define ZF_HC_BOUNDS_ARG
#endif
// One of the 11 loops of zk_interior (C: its index in ZK_SPECIAL_N1/N2) for the lane's cell (row r, column c of
// the tile) of pair type t whose loops reach maxu, as zk_v_flat evaluates it, from the tile's windows: pair types
// sPT (rows i0 .., columns j0 - 4 ..; ZF_PW a row), V (sV: rows i0 + 1 .., columns j0 - 4 ..; ZF_PW a row) and codes
// (sSr: positions i0 - 1 .., sSc: j0 - 5 ..); sstack: the stack's SHAPE term.
template <int C>
__device__ __forceinline__ int zf_special(const int* P, const signed char* sPT, const int* sV, const signed char* sSr,
                                          const signed char* sSc, int r, int c, int t, int maxu, int sstack
                                          ZF_HC_BOUNDS) {
    constexpr int n1 = (ZK_SPECIAL_N1 >> (2 * C)) & 3, n2 = (ZK_SPECIAL_N2 >> (2 * C)) & 3;
    // evaluated whether the loop may form or not (every table index stays in its table: t, t2 <= 7, codes <= 4),
    // so that the table reads of a unit's loops go out together, and taken only where it may
    const int t2 = sPT[(r + 1 + n1) * ZF_PW + c + 3 - n2];
    bool ok = n1 + n2 <= maxu && t2 != 0 && (C == 0 || zk_closes(P, t2));
#ifdef ZK_HC
    ok = ok && n1 <= a5 && n2 <= a3;
#endif
    const int e = zk_interior(P, n1, n2, t, zk_rtype(t2), sSr[r + 2], sSc[c + 4], sSr[r + 1 + n1], sSc[c + 5 - n2]) +
                  sV[(r + n1) * ZF_PW + c + 3 - n2] + (C == 0 ? sstack : 0);
    return ok ? e : ZK_INF;
}

// The rest of V in ZF_RESTS units (warps 2 .. ZF_RESTS + 1): the unit of the hairpin (what 11), of the multiloop
// closed by the cell (12) and of special loop C (0 .. 10)
ZK_CHD int zf_rest_unit(int what) {
    return ZF_RESTS == 2 ? (what >= 11 || what < 4 ? 1 : 2)
         : ZF_RESTS == 3 ? (what >= 11 || what < 3 ? 1 : what < 7 ? 2 : 3)
         : ZF_RESTS == 4 ? (what >= 11 ? 1 : what < 4 ? 2 : what < 7 ? 3 : 4)
         : ZF_RESTS == 5 ? (what == 11 ? 1 : what == 12 || what < 2 ? 2 : what < 5 ? 3 : what < 8 ? 4 : 5)
         : (what == 11 ? 1 : what == 12 ? 2 : 3 + what * (ZF_RESTS - 2) / 11);
}
#define ZF_REST_SPECIAL(C, SS) \
    if constexpr (zf_rest_unit(C) == U) \
        v = zk_min(v, zf_special<C>(P, sPT, sV, sSr, sSc, r, c, t, maxu, SS ZF_HC_BOUNDS_ARG));
// Unit U's part of the rest of V for the cell (i, j) (row r, column c of the tile) of pair type t != 0
template <int U>
__device__ __forceinline__ int zf_rest(const int* P, const ZkSeq& q, long long N, const signed char* sPT, const int* sV,
                                       const signed char* sSr, const signed char* sSc, int r, int c, int i, int j,
                                       int t, int maxu ZF_HC_BOUNDS) {
    const bool closes = zk_closes(P, t);
    int v = ZK_INF;
    if constexpr (zf_rest_unit(11) == U) {
        if (closes ZK_AND_HC_RUN(q, i + 1, j - i - 1)) v = zk_hairpin(P, q.S, i, j);
    }
    if constexpr (zf_rest_unit(12) == U) {
        if (closes) {
            const int m = q.VMX[i * N + j];            // made by cell (i + 1, j - 1), two diagonals back
            if (m < ZK_HALF_INF) {                     // the codes of i, i + 1, j - 1, j from sSr / sSc
                const int tt = ZK_TYPE_OF(sSr[r + 1], sSc[c + 5]);
                v = zk_min(v, m + zk_multi_closing_of(P, tt, sSr[r + 2], sSc[c + 4]));
            }
        }
    }
    ZF_REST_SPECIAL(0, ZK_SSTACK(q.SS, i, j))
    ZF_REST_SPECIAL(1, 0)
    ZF_REST_SPECIAL(2, 0)
    ZF_REST_SPECIAL(3, 0)
    ZF_REST_SPECIAL(4, 0)
    ZF_REST_SPECIAL(5, 0)
    ZF_REST_SPECIAL(6, 0)
    ZF_REST_SPECIAL(7, 0)
    ZF_REST_SPECIAL(8, 0)
    ZF_REST_SPECIAL(9, 0)
    ZF_REST_SPECIAL(10, 0)
    return v;
}
#undef ZF_REST_SPECIAL
// zf_rest<u> for the unit u (1 .. ZF_RESTS) a warp takes
template <int U>
__device__ __forceinline__ int zf_rest_at(int u, const int* P, const ZkSeq& q, long long N, const signed char* sPT,
                                          const int* sV, const signed char* sSr, const signed char* sSc, int r, int c,
                                          int i, int j, int t, int maxu ZF_HC_BOUNDS) {
    if constexpr (U <= ZF_RESTS) {
        if (u == U) return zf_rest<U>(P, q, N, sPT, sV, sSr, sSc, r, c, i, j, t, maxu ZF_HC_BOUNDS_ARG);
        return zf_rest_at<U + 1>(u, P, q, N, sPT, sV, sSr, sSc, r, c, i, j, t, maxu ZF_HC_BOUNDS_ARG);
    } else {
        return ZK_INF;
    }
}

// Four near split points k of a cell (h = 0 .. 3) from one 16-byte load of each operand: wm, WM[i][k - 1] (a WM
// tile's row), and w1, WM1[k][j] (a WM1 tile's column); vmin takes WM[i][k - 1] + WM1[k][j]. (The split points' other
// term, (k - i)·ML_base + WM1[k][j], is phase B's U.)
__device__ __forceinline__ void zf_split4(const int* wm, const int* w1, int& vmin) {
    const int4 a4 = *(const int4*)wm, b4 = *(const int4*)w1;
    vmin = zk_addmin(a4.x, b4.x, vmin);
    vmin = zk_addmin(a4.y, b4.y, vmin);
    vmin = zk_addmin(a4.z, b4.z, vmin);
    vmin = zk_addmin(a4.w, b4.w, vmin);
}

#ifdef ZF_TRACE                        // -D for benchmarks/zuker_fin_trace.py: each warp's clock at the start of each
__device__ unsigned int zf_trace[32][66][ZF_WARPS][2];   // interval and at its part's end (row 65: the block's)
#endif

#ifndef ZF_MINB                        // blocks an SM the registers must allow (the 16-bit window's build: the
                                       // host's FIN_AUX16_BLOCKS); -D for timing
#define ZF_MINB 3
#endif
extern "C" __global__ void __launch_bounds__(32 * ZF_WARPS, ZF_MINB)   // as many blocks an SM as shared memory allows
zk_fin_lanes(ZK_BATCH_ARGS, int s0, int D, int* over) {
    constexpr int T = 32;
    extern __shared__ __align__(16) int zf_smem[];
    int* sSZB = zf_smem;                               // the size terms: word d * ZF_NBP + t, term t grown by d
    zf_aux_t* sAux = (zf_aux_t*)(sSZB + 4 * ZF_NBP);   // 3 planes of ZF_A x ZF_PA: VAU, V1N, VI
    // the multiloop tiles (ZF_TP): column -1 of sWMc's row r is WM[i0 + r][j0 - 1]
    int* sWMc = sSZB + 4 * ZF_NBP + ZF_AUX_WORDS;       // WM of the tile, cell (r, c) at r * ZF_TP + 1 + c
    int* sW1c = sWMc + 32 * ZF_TP;                     // WM1 of the tile, cell (r, c) at c * ZF_TP + r
    int* sDg = sW1c + 32 * ZF_TP;                      // WM of tile (I, I) as sWMc, WM1 of tile (J, J) as sW1c
    int* sV = sDg + 32 * ZF_TP;                        // V, rows i0 + 1 .. i0 + 35, columns j0 - 4 .. j0 + 31
    int* sW1col = sV + 35 * ZF_PW;                     // WM1[i0 + r][j0 - 1]
    int* sCm = sW1col + 32;                            // per cell of the diagonal: the chunks' minima of three kinds
    int* sRv = sCm + 3 * 32;                           // the rest of V
    int* sU32 = sRv + 32;                              // U of row i0 + 32 (tile (I + 1, J)'s first row), columns j0 ..
    int* sXb = sU32 + 32;                              // the near split points' minima of WM[i][k-1] + WM1[k][j]
    int* sPw = sXb + 32;                               // the middle's WM slot, diagonal dl in row dl & 1
    int* sPx = sPw + 2 * 32;                           // the middle's X slot, the same
    int* sO = sPx + 2 * 32;                            // the closing pair's parts of the three kinds of loop
    int* sMs = sO + 3 * 32;                            // zk_multi_stem_at of the cell
    int* sAd = sMs + 32;                               // the cell's parts as an inner pair (INF: it is none)
    int* sList = sAd + 3 * 32;                         // two diagonals' cells with interior loops: r | maxu << 8
    int* sDC = sList + 64;                             // four diagonals' diag_cell of each lane (dl in row dl & 3)
    int* sNlist = sDC + 4 * 32;                        // how many listed cells (diagonal dl in buffer dl & 1)
    signed char* sPT = (signed char*)(sNlist + 2);   // pair types, rows i0 .. i0 + 35, columns j0 - 4 .. j0 + 31
    signed char* sSr = sPT + 36 * ZF_PW;               // codes of positions i0 - 1 .. i0 + 36
    signed char* sSc = sSr + 40;                       // codes of positions j0 - 5 .. j0 + 32
    ZK_BATCH;
    const int s = s0 + blockIdx.y;
    const int n = b.lens[s];
    const int ntiles = (n + T - 1) / T;
    const int I = blockIdx.x, J = I + D;
    if (J >= ntiles) return;
    ZkSeq q = zk_seq(b, s);
    const long long N = q.N;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int i0 = 1 + I * T, j0 = 1 + J * T;
    const int ml = zk_sc(b.P, ZK_ML_BASE);
#ifdef ZF_AUX16
    // the tile's bias, each warp alike: the least finite V or WM of column j0 - 1 (rows i0 + 1 .. i0 + 32, tile
    // (I, J - 1)) and of row i0 + 32 (columns j0 .. j0 + 31, tile (I + 1, J)), made before this launch (WM, finite
    // wherever a pair can form, is there where a column or row has no pair: runs of N, low complexity); 0 where
    // none is (the cells near the diagonal, whose values are small)
    int bias;
    {
        const int p = i0 + 1 + lane, qq = j0 + lane;
        const long long oa = (long long)p * N + j0 - 1, oc = (long long)(i0 + 32) * N + qq;
        const bool a = p <= n && j0 - 1 - p > ZK_TURN, c = i0 + 32 <= n && qq <= n && qq - i0 - 32 > ZK_TURN;
        bias = zk_warp_min(min(min(a ? q.V[oa] : ZK_INF, a ? q.WM[oa] : ZK_INF),
                               min(c ? q.V[oc] : ZK_INF, c ? q.WM[oc] : ZK_INF)));
        bias = bias < ZK_HALF_INF ? bias : 0;
    }
#else
    constexpr int bias = 0;
#endif
    // the auxiliaries' window: cell (p, qq) at row p - i0 - 1, column qq - j0 + 31 (INF outside 1 .. n and for
    // qq - p <= TURN, where no interior loop's inner pair lies)
#pragma unroll 4
    for (int x = tid; x < ZF_A * ZF_A; x += blockDim.x) {
        const int a = x / ZF_A, c = x % ZF_A;
        const int p = i0 + 1 + a, qq = j0 - 31 + c;
        const long long o = (long long)p * N + qq;
#ifdef ZF_AUX_VGATE
        // only at a pair (V finite) outside this tile (whose cells are not made yet): the fill writes the three
        // only at inner pairs, and elsewhere they hold zk_fill_inf's INF or, after zk_fill_band (the default model,
        // where every pair is an inner pair), nothing
        const bool in = p <= n && qq <= n && qq - p > ZK_TURN && !(a < 31 && c >= 31) && q.V[o] < ZK_HALF_INF;
#else
        const bool in = p <= n && qq <= n && qq - p > ZK_TURN;
#endif
        const int x0 = in ? q.VAU[o] : ZK_INF, x1 = in ? q.V1N[o] : ZK_INF, x2 = in ? q.VI[o] : ZK_INF;
        sAux[a * ZF_PA + c] = zf_aux(x0, bias);
        sAux[ZF_PLANE + a * ZF_PA + c] = zf_aux(x1, bias);
        sAux[2 * ZF_PLANE + a * ZF_PA + c] = zf_aux(x2, bias);
        if (zf_aux_out(x0, bias) || zf_aux_out(x1, bias) || zf_aux_out(x2, bias)) over[s] = 1;
    }
    // pair types and V of the specials' window: cell (p, qq) at row p - i0 (sPT) or p - i0 - 1 (sV), column
    // qq - j0 + 4
    for (int x = tid; x < 36 * 36; x += blockDim.x) {
        const int a = x / 36, c = x % 36;
        const int p = i0 + a, qq = j0 - 4 + c;
        const bool in = p <= n && qq <= n && qq - p > ZK_TURN;
        sPT[a * ZF_PW + c] = in ? (signed char)zk_pair(b.P, q.S, p, qq ZK_HC_ARG(q.HC)) : 0;
        if (a > 0) sV[(a - 1) * ZF_PW + c] = in ? q.V[(long long)p * N + qq] : ZK_INF;
    }
    if (tid < 38) {
        sSr[tid] = i0 - 1 + tid <= n + 1 ? q.S[i0 - 1 + tid] : 0;
        const int x = j0 - 5 + tid;
        sSc[tid] = x >= 0 && x <= n + 1 ? q.S[x] : 0;
    }
#pragma unroll 4
    for (int x = tid; x < 32 * ZF_TP; x += blockDim.x) {
        // row r, word w: of a WM tile column w - 1, of a WM1 tile (transposed) row w
        const int r = x / ZF_TP, w = x % ZF_TP, a = i0 + r, bb = i0 + w - 1, k = j0 + w, l = j0 + r;
        sWMc[x] = w == 0 && D > 0 && a <= n ? q.WM[(long long)a * N + j0 - 1] : ZK_INF;
        sW1c[x] = ZK_INF;
        sDg[x] = D == 0 ? ZK_INF
               : w >= r + 5 ? (w <= 32 && bb <= n ? q.WM[(long long)a * N + bb] : ZK_INF)
               : w <= r - 4 && l <= n ? q.WM1T[(long long)l * N + k] : ZK_INF;
    }
    const int* SZg = b.P + zk_tab(b.P, ZK_H_SZ);
    for (int x = tid; x < 4 * ZF_NBP; x += blockDim.x) {
        // SZ[n1][n2] of term x % ZF_NBP's first base loop e grown by d = x / ZF_NBP (INF past the largest loop and
        // the terms)
        const int tm = x % ZF_NBP, d = x / ZF_NBP, e = tm < zf_nterms ? zf_term_tab.rep[tm] : ZF_NBASE;
        const int w = zf_base_tab.e[e < ZF_NBASE ? e : 0], s = e < ZF_NBASE ? (w >> 5) & 31 : ZK_MAXLOOP + 1;
        const int dir = w >> 10;
        const int n1 = (w & 31) + (dir ? 0 : d), n2 = s - (w & 31) + (dir ? d : 0);
        sSZB[x] = s + d <= ZK_MAXLOOP ? ZK_LDG(SZg + n1 * 32 + n2) : ZK_INF;
    }
    if (tid < 32) {
        const int a = i0 + tid;
        sW1col[tid] = D > 0 && a <= n ? q.WM1T[(long long)(j0 - 1) * N + a] : ZK_INF;
        sCm[tid] = sCm[32 + tid] = sCm[64 + tid] = ZK_BIG;
        sRv[tid] = sXb[tid] = ZK_INF;
        const int bb = j0 + tid;
        sU32[tid] = D > 0 && i0 + 32 <= n && bb <= n ? q.WM1T[(long long)(i0 + 32) * N + bb] : ZK_INF;
    }
    int ulast = ZK_INF;                                // (warp 0) the lane's U of the diagonal before (INF: none)
#ifdef ZK_HC
    const int hc_up = i0 + lane <= n ? q.HC[i0 + lane].up : 0;   // the most unpaired nucleotides after row lane's i
#endif
    const int* sWl = D == 0 ? sWMc : sDg;              // WM of the split points after i: tile (I, I)
    const int* sW1h = D == 0 ? sW1c : sDg;             // WM1 of those before j: tile (J, J)
    // whether the lane's cell on cell diagonal dl (row lane, column lane + dl) is one
    auto lane_cell = [&](int dl) -> bool {
        const int c = lane + dl;
        return c >= 0 && c < T && j0 + c <= n;
    };
    // the lane's cell on cell diagonal dl: whether it is one, its pair type t and the longest interior loop it
    // closes, maxu (zk_v_flat's)
    auto diag_cell = [&](int dl, int& t, int& maxu) -> bool {
        const int c = lane + dl;
        const bool cell = lane_cell(dl);
        t = cell ? sPT[lane * ZF_PW + c + 4] : 0;
        maxu = min(j0 + c - i0 - lane - ZK_TURN - 3, ZK_MAXLOOP);
        if (t && !zk_closes(b.P, t) && maxu > 0) maxu = 0;
        return cell;
    };
    // diag_cell of diagonal dl as list_cells stored it (two intervals before dl's phase B, one before its producers)
    auto diag_read = [&](int dl, int& t, int& maxu) -> bool {
        const int w = sDC[(dl & 3) * 32 + lane];
        t = (w >> 1) & 7;
        maxu = (w >> 4) - 64;
        return w & 1;
    };
    // (warp ZF_WARPS - 1) diag_cell of diagonal dl's lanes into row dl & 3 of sDC, and the list of its cells with
    // interior loops (a pair type, maxu >= 3) for the chunk units, in buffer dl & 1
    auto list_cells = [&](int dl) {
        int t, maxu;
        const bool cell = diag_cell(dl, t, maxu);
        sDC[(dl & 3) * 32 + lane] = (int)cell | t << 1 | (maxu + 64) << 4;
        const bool has = t != 0 && maxu >= 3;
        const unsigned act = __ballot_sync(0xffffffffu, has);
        if (has) sList[(dl & 1) * 32 + __popc(act & ((1u << lane) - 1))] = lane | maxu << 8;
        if (lane == 0) sNlist[dl & 1] = __popc(act);
    };
    const int dl0 = max(1 - T, ZK_TURN + 1 - D * T);
#if defined(ZK_RULES) || defined(ZK_HC)
    const int dlend = min(T, ZK_REACH(b.P, q) - D * T);
#else
    constexpr int dlend = T;
#endif

    // ---- the near split points (zk_wm_near) of diagonal dn's cells, unit part of ZF_SPLITS, computed in the interval
    // of diagonal dn - 1 beside the other producers: the minimum of WM[i][k-1] + WM1[k][j] (X's, and WM's with U:
    // min((k - i)·ML_base, WM[i][k-1]) + WM1[k][j] over the split points is the lesser of U's minimum and X's) over k
    // after i, k = i0 + kk for kk in [r + 5, 31] (with D = 0 up to c - 4), and before j (D >= 1), k = j0 + kk for kk
    // in [0, c - 4]. Every operand is on diagonal dn - 2 or before. vmin: ZK_INF or above where there is none. For a
    // lane whose cell (i, j) is one (split_units tests it).
    //   No range tests: past each range one operand is INF. After i: WM of tile (I, I) (for D = 0 the tile itself) is
    // INF for kk - 1 < r + 4 (never computed), WM1 of this tile for kk <= r (diagonals dn on, not yet made) and for
    // j - k < 4. Before j: WM1 of tile (J, J) is INF for kk > c - 4. So the sums outside the ranges are INF-based
    // (above ZK_HALF_INF, as the slot's INF start). Column -1 of a row: WM's column j0 - 1 in sWMc, INF in sDg.
    // Four split points a load (16 bytes: words kb .. kb + 3 of a WM row, from column kb - 1, and of a WM1 column);
    // each part only where the lane has a split point in it: after i where kk >= r + 5 for some kk of the unit,
    // before j where kk <= c - 4. (sDg's other tile lies beyond: words r - 4 and below of row r, c + 5 and above of
    // column c.) Two words of these loads are written by warp 0 in this same interval (diagonal dn - 1): WM1 of
    // kk = r + 1 (after i) and WM of column c - 1 (kk = c, before j). A load sees each as INF (the tile's start) or as
    // its final value, and both give the same minimum: the first's partner WM[i][i] is INF, the second's WM1[j][j].
    auto splits = [&](int dn, int part, int& vmin) {
        const int r = lane, c = r + dn;
        const int kb = part * (32 / ZF_SPLITS);
        if (kb >= r + 2)                               // after i: WM of tile (I, I), WM1 of this tile
            zf_split4(sWl + r * ZF_TP + kb, sW1c + c * ZF_TP + kb, vmin);
        if (D > 0 && kb <= c - 4)                      // before j: WM of this tile, WM1 of tile (J, J)
            zf_split4(sWMc + r * ZF_TP + kb, sW1h + c * ZF_TP + kb, vmin);
    };
    // the split-point units of warp w (1 ..): units u with ZF_SPLIT_W0 + u % (ZF_WARPS - ZF_SPLIT_W0) == w; their
    // minimum for diagonal dn, to write after the warp's wait
    auto split_units = [&](int dn, int& vmin) {
        vmin = ZK_INF;
        if (warp < ZF_SPLIT_W0) return;
        int t, maxu;
        if (!diag_read(dn, t, maxu)) return;
#pragma unroll 1
        for (int u = warp - ZF_SPLIT_W0; u < ZF_SPLITS; u += ZF_WARPS - ZF_SPLIT_W0) splits(dn, u, vmin);
    };
    auto split_write = [&](int vmin) {
        if (vmin < ZK_INF) atomicMin(&sXb[lane], vmin);
    };

    // ---- the interval of phase B of diagonal db. Warp 0 finishes db's cells from the partial results, having
    // first read and reset them (then zf_consumed); meanwhile the other warps compute what diagonal dn = db + 1
    // needs from the diagonals up to db - 1 (a cell's loops read cells two diagonals back and more, its split
    // points but k = i + 1 too): warp 1 its table terms for phase B, warps 2 .. ZF_C0 - 1 the rest of V, the chunk
    // warps the interior loops, the split-point units their part. Each writes its results after zf_wait_consumed
    // (its own barrier).
    auto phase_b = [&](int db) {
        int t = 0, maxu;
        const bool cell = db >= dl0 && diag_read(db, t, maxu);
        const int r = lane, c = r + db, i = i0 + r, j = j0 + c;
        int rv = ZK_INF, cm0 = ZK_BIG, cm1 = ZK_BIG, cm2 = ZK_BIG, o0 = 0, o1 = 0, o2 = 0, ms = 0;
        int ad0 = ZK_INF, ad1 = 0, ad2 = 0, pw = ZK_INF, px = ZK_INF, xb = ZK_INF;
        // U of cell (i + 1, j): made on diagonal db - 1 by lane r + 1, or for r = 31 tile (I + 1, J)'s first row
        const int ud = __shfl_down_sync(0xffffffffu, ulast, 1);
        if (cell) {
            rv = sRv[r]; cm0 = sCm[r]; cm1 = sCm[32 + r]; cm2 = sCm[64 + r];
            o0 = sO[r]; o1 = sO[32 + r]; o2 = sO[64 + r]; ms = sMs[r];
            ad0 = sAd[r]; ad1 = sAd[32 + r]; ad2 = sAd[64 + r];
            if (D >= 2) { pw = sPw[(db & 1) * 32 + r]; px = sPx[(db & 1) * 32 + r]; }
            xb = sXb[r];
            sCm[r] = sCm[32 + r] = sCm[64 + r] = ZK_BIG;
            sRv[r] = sXb[r] = ZK_INF;
        }
        zf_consumed();
        ulast = ZK_INF;
        if (!cell) return;
        int v = ZK_INF;
        if (t) {
            v = rv;
            if (zk_closes(b.P, t)) {
#ifdef ZF_AUX16
                cm0 = cm0 < ZF16_CUT ? cm0 + bias : ZK_BIG;    // sums of ZF16_SENT: no loop
                cm1 = cm1 < ZF16_CUT ? cm1 + bias : ZK_BIG;
                cm2 = cm2 < ZF16_CUT ? cm2 + bias : ZK_BIG;
#endif
                v = zk_min(v, cm0 + o0);
                v = zk_min(v, cm1 + o1);
                v = zk_min(v, cm2 + o2);
            }
        }
#ifdef ZK_RULES
        v = zk_lonely(b.P, q, i, j, v, true);
#endif
        // WM1 (zk_wm1): WM1[i][j-1] from the tile, or column j0 - 1
#ifdef ZK_HC
        int w1 = q.HC[j].up > 0 ? (c > 0 ? sW1c[(c - 1) * ZF_TP + r] : sW1col[r]) + ml : ZK_INF;
#else
        int w1 = (c > 0 ? sW1c[(c - 1) * ZF_TP + r] : sW1col[r]) + ml;
#endif
        if (v < ZK_HALF_INF) w1 = zk_min(w1, v + ms);
        w1 = zk_min(w1, ZK_INF);
        // U[i][j] = min over k >= i of (k - i)·ML_base + WM1[k][j] = min(WM1[i][j], ML_base + U[i + 1][j]) (i
        // unpaired; with hard constraints only where it may be: (k - i) <= UP[i] holds where UP[i] >= 1 and
        // (k - i - 1) <= UP[i + 1] do, UP[i] being UP[i + 1] + 1 then)
        const int un = r < 31 ? ud : sU32[c];
        int u = w1;
#ifdef ZK_HC
        if (un < ZK_HALF_INF && hc_up >= 1) u = zk_min(u, ml + un);
#else
        if (un < ZK_HALF_INF) u = zk_min(u, ml + un);
#endif
        int wm = zk_min(u, xb), vm = xb;
        if (D >= 2) {
            wm = zk_min(wm, pw);
            if (i > 1 && j < n) vm = zk_min(vm, px);
        }
        wm = zk_min(wm, ZK_INF);
        // zk_store's writes
        q.V[i * N + j] = v;
        if (i > 1 && j < n) q.VMX[(i - 1) * N + j + 1] = vm;
        q.WM1T[(long long)j * N + i] = w1;
        if (r == 0 && I > 0) q.WM1T[(long long)i * N + j] = u;   // U of the tile's first row, for tile (I - 1, J)
        q.WM[i * N + j] = wm;
        const bool inner = v < ZK_HALF_INF && ad0 < ZK_INF;
        if (inner) {
            const int x0 = v + ad0, x1 = v + ad1, x2 = v + ad2;
            if (zf_aux_out(x0, bias) || zf_aux_out(x1, bias) || zf_aux_out(x2, bias)) over[s] = 1;
            q.VAU[i * N + j] = x0;
            q.V1N[i * N + j] = x1;
            q.VI[i * N + j] = x2;
            if (r > 0 && c < 31) {
                zf_aux_t* w = sAux + (r - 1) * ZF_PA + c + 31;
                w[0] = zf_aux(x0, bias);
                w[ZF_PLANE] = zf_aux(x1, bias);
                w[2 * ZF_PLANE] = zf_aux(x2, bias);
            }
        }
        sWMc[r * ZF_TP + 1 + c] = wm;
        sW1c[c * ZF_TP + r] = w1;
        ulast = u;
        if (r > 0) sV[(r - 1) * ZF_PW + c + 4] = v;
    };

    // (warp 1, D >= 2) the middle's slots of diagonal dn's cells (zk_mid's WM and VMX, made before this launch)
    // copied into row dn & 1 of sPw / sPx asynchronously (cp.async where ZK_MID_ASYNC): issued in the interval of
    // dn - 2 once phase B has read that row (diagonal dn - 2's), waited for at the end of the interval of dn - 1
    auto slots = [&](int dn) {
        if (D >= 2 && lane_cell(dn)) {
            const int r = lane, c = r + dn, i = i0 + r, j = j0 + c;
            zk_cp4(&sPw[(dn & 1) * 32 + r], &q.WM[i * N + j]);
            if (i > 1 && j < n) zk_cp4(&sPx[(dn & 1) * 32 + r], &q.VMX[(i - 1) * N + j + 1]);
            else sPx[(dn & 1) * 32 + r] = ZK_INF;
        }
        zk_cp_commit();
    };
    // warp 1: the table terms of diagonal dn's cells for phase B; then the slots of dn (issued an interval before)
    // complete and those of dn + 1 go out
    auto terms = [&](int dn, int sx) {
        int t, maxu;
        const bool cell = diag_read(dn, t, maxu);
        const int r = lane, c = r + dn;
        int o0 = 0, o1 = 0, o2 = 0, ms = 0, ad0 = 0, ad1 = 0, ad2 = 0;
        if (cell) {
            const int si1 = sSr[r + 2], sj1 = sSc[c + 4];
            o0 = zk_au(b.P, t);
            o1 = zk_mm(b.P, ZK_OFF_MISMATCH_INTERIOR_1N, t, si1, sj1);
            o2 = zk_mm(b.P, ZK_OFF_MISMATCH_INTERIOR, t, si1, sj1);
            // the codes of i - 1, i, j and j + 1 from the shared copies (sSr: i0 - 1 .., sSc: j0 - 5 ..)
            const int aa = sSc[c + 6], bb = sSr[r];
            const int tt = ZK_TYPE_OF(sSr[r + 1], sSc[c + 5]), rt = zk_rtype(tt);
            ms = zk_multi_stem_of(b.P, tt, bb, aa);
            ad0 = zk_closes(b.P, tt) ? zk_au(b.P, tt) : ZK_INF;
            ad1 = zk_mm(b.P, ZK_OFF_MISMATCH_INTERIOR_1N, rt, aa, bb);
            ad2 = zk_mm(b.P, ZK_OFF_MISMATCH_INTERIOR, rt, aa, bb);
        }
        zf_wait_consumed(warp);
        split_write(sx);
        if (cell) {
            sO[r] = o0; sO[32 + r] = o1; sO[64 + r] = o2; sMs[r] = ms;
            sAd[r] = ad0; sAd[32 + r] = ad1; sAd[64 + r] = ad2;
        }
        zk_cp_wait<0>();
        slots(dn + 1);
    };

    // warps 2 .. ZF_C0 - 1: the rest of V of diagonal dn's cells (zk_v_flat's lane-0 and special terms), unit
    // u = 1 .. ZF_RESTS (zf_rest)
    auto rest = [&](int dn, int u, int sx) {
        int t, maxu;
        diag_read(dn, t, maxu);
        const int r = lane, c = r + dn, i = i0 + r, j = j0 + c;
        int v = ZK_INF;
        if (t) {
#ifdef ZK_HC
            const int a5 = q.HC[i + 1].up, a3 = q.HC[j - 1].dn;
#endif
            v = zf_rest_at<1>(u, b.P, q, N, sPT, sV, sSr, sSc, r, c, i, j, t, maxu ZF_HC_BOUNDS_ARG);
        }
        zf_wait_consumed(warp);
        split_write(sx);
        if (t) atomicMin(&sRv[r], v);
    };

    // warps ZF_C0 ..: chunk ch of the base loops for diagonal dn's listed cells, eight a pass, four lanes a cell (lane
    // d = lane & 3 grows each base loop by d); the four lanes' minima to sCm
    auto chunks = [&](int dn, int ch, int sx) {
        const int nl = sNlist[dn & 1], d = lane & 3;
        const int* list = sList + (dn & 1) * 32;
        const int* szb = sSZB + d * ZF_NBP;
        bool waited = false;
        for (int k0 = 0; k0 < nl; k0 += 8) {
            const int k = k0 + (lane >> 2);
            const int e = k < nl ? list[k] : 0;
            const int rr = e & 31, mx = e >> 8, mu = k < nl ? mx - d : -1;
            const zf_aux_t* win = sAux + rr * (ZF_PA + 1) + dn + 30;
            int m0 = ZK_BIG, m1 = ZK_BIG, m2 = ZK_BIG;
#ifdef ZK_HC
            const int a5 = k < nl ? q.HC[i0 + rr + 1].up : ZK_MAXLOOP;
            const int a3 = k < nl ? q.HC[j0 + rr + dn - 1].dn : ZK_MAXLOOP;
            if (__any_sync(0xffffffffu, a5 < mx || a3 < mx))
                zf_chunk_at<true>(ch, win + d * ZF_PA, win - d, szb, mu, m0, m1, m2,
                                  a5 - d, a3, a5, a3 - d);
            else
#endif
                zf_chunk_at<false>(ch, win + d * ZF_PA, win - d, szb, mu, m0, m1, m2,
                                   0, 0, 0, 0);
            m0 = min(m0, __shfl_xor_sync(0xffffffffu, m0, 1));
            m1 = min(m1, __shfl_xor_sync(0xffffffffu, m1, 1));
            m2 = min(m2, __shfl_xor_sync(0xffffffffu, m2, 1));
            m0 = min(m0, __shfl_xor_sync(0xffffffffu, m0, 2));
            m1 = min(m1, __shfl_xor_sync(0xffffffffu, m1, 2));
            m2 = min(m2, __shfl_xor_sync(0xffffffffu, m2, 2));
            if (!waited) {
                zf_wait_consumed(warp);
                split_write(sx);
                waited = true;
            }
            if (d == 0 && k < nl) {
                atomicMin(&sCm[rr], m0);
                atomicMin(&sCm[32 + rr], m1);
                atomicMin(&sCm[64 + rr], m2);
            }
        }
        if (!waited) {
            zf_wait_consumed(warp);
            split_write(sx);
        }
    };

    // the interval of db, then a barrier. The last warp also lists the cells of diagonal db + 2 (its buffer was
    // read by the chunks of db, in the interval before)
    auto interval = [&](int db) {
        int sx;
        split_units(db + 1, sx);
        if (warp == 0) phase_b(db);
        else if (warp == 1) terms(db + 1, sx);
        else if (warp < ZF_C0) rest(db + 1, warp - 1, sx);
        else if (warp < ZF_C0 + ZF_CHUNKS) chunks(db + 1, warp - ZF_C0, sx);
        else {
            zf_wait_consumed(warp);
            split_write(sx);
        }
        if (warp == ZF_WARPS - 1) list_cells(db + 2);
    };

#ifdef ZF_TRACE                        // tile diagonal 5, four tile rows of the first eight sequences
    const bool traced = D == 5 && blockIdx.x < 4 && s0 + blockIdx.y < 8;
    const int tb = blockIdx.x * 8 + s0 + blockIdx.y;
    if (traced && lane == 0) zf_trace[tb][65][warp][0] = clock();
#endif
    if (warp == 1) slots(dl0);
    __syncthreads();
    if (warp == ZF_WARPS - 1) list_cells(dl0);
    __syncthreads();
    interval(dl0 - 1);                                 // warp 0 has no diagonal to finish yet
    __syncthreads();
    for (int dl = dl0; dl < dlend; ++dl) {
#ifdef ZF_TRACE
        const unsigned int c0 = clock();
#endif
        interval(dl);
#ifdef ZF_TRACE
        if (traced && lane == 0) { zf_trace[tb][dl - dl0][warp][0] = c0; zf_trace[tb][dl - dl0][warp][1] = clock(); }
#endif
        __syncthreads();
    }
    if (warp == 1) zk_cp_wait<0>();                    // no copy outlives the block
#ifdef ZF_TRACE
    if (traced && lane == 0) zf_trace[tb][65][warp][1] = clock();
#endif
}

#endif  // ZK_TILE == 32

// INF where the tiled fill of the default model (every cell of span > TURN written, no span limit) reads cells it
// does not write, in the matrices of the bit mask which of sequence blockIdx.x (matrix m, the blockIdx.y-th bit of
// which: V, WM, WM1T, VI, V1N, VAU, VMX, total words each, the sequence's block at moff): in every row the cells
// from ZK_FILL_BAND below the diagonal (the fill reads cells up to about a tile below it) to those it never writes
// above it (span <= TURN; VMX, stored at (i - 1, j + 1) for cell (i, j), two more), for WM1T (transposed) the
// mirror image, the first and last row and column, and, for the matrices of the bit mask upper (VI, V1N and VAU
// where zk_fin_lanes reads them at every cell: the fill writes them only where a cell is an inner pair; WM and VMX
// where zk_mid's blocks share a tile), every cell right of the band. Whole 16-byte words (p is 16-byte aligned)
// from the range's first word rounded down to its last rounded up: INF beside a range is harmless before the fill.
// A warp a row, rows round the warps of the blockIdx.z blocks of the sequence's matrix.
#define ZK_FILL_BAND 64
extern "C" __global__ void zk_fill_band(int* p, long long total, const long long* moff, const int* lens, int upper,
                                        int which) {
    const int s = blockIdx.x;
    int m = 0;
    for (int k = blockIdx.y; k >= 0; ++m) k -= (which >> m) & 1;   // m: the (blockIdx.y + 1)-th set bit of which
    --m;
    const long long N = lens[s] + 2, base = m * total + moff[s], end = 7 * total;
    const bool up = (upper >> m) & 1;
    const int lane = threadIdx.x & 31, warps = (blockDim.x >> 5) * gridDim.z;
    const int4 v = make_int4(ZK_INF, ZK_INF, ZK_INF, ZK_INF);
    auto fill = [&](long long x0, long long x1) {     // words [x0, x1) of p, x1 <= end
        for (long long k = (x0 >> 2) + lane; 4 * k < x1; k += 32) {
            if (4 * k + 3 < end) {
                reinterpret_cast<int4*>(p)[k] = v;
            } else {
                for (long long w = 4 * k; w < end; ++w) p[w] = ZK_INF;
            }
        }
    };
    for (long long a = blockIdx.z * (blockDim.x >> 5) + (threadIdx.x >> 5); a < N; a += warps) {
        const long long row = base + a * N;
        if (a == 0 || a == N - 1) {
            fill(row, row + N);
        } else {
            const int near = m == 6 ? ZK_TURN + 3 : ZK_TURN + 1;
            const int lo = m == 2 ? near : ZK_FILL_BAND, hi = m == 2 ? ZK_FILL_BAND : near;
            fill(row + max(0LL, a - lo), row + (up ? N : min(N, a + hi)));
            fill(row + N - 1, row + N + 1);              // the last column and the next row's first
        }
    }
}

// INF into the n int32 words from p (16-byte aligned: the start of a CuPy allocation), four words a thread a step.
extern "C" __global__ void zk_fill_inf(int* p, long long n) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const int4 v = make_int4(ZK_INF, ZK_INF, ZK_INF, ZK_INF);
    const long long n4 = n / 4;
    for (long long k = first; k < n4; k += stride) reinterpret_cast<int4*>(p)[k] = v;
    for (long long k = 4 * n4 + first; k < n; k += stride) p[k] = ZK_INF;
}

// ------------------------------------------------------------------------------------------------------
// W (eq. 1) in chunks of ZK_WCHUNK positions j, for long sequences: zk_ext_cross takes, for every j of the
// chunk [c0, c0 + C), the terms of the i whose W[i-1] is already known (i <= c0: W[0 .. c0-1] final), one
// warp per row block, lanes over j, into Wpart[j] by atomicMin; zk_ext_seq (one warp per sequence) then walks
// the chunk's j in order with the remaining i in (c0, j - TURN). Same terms as zk_w_partial (min is
// order-free); Wpart must hold INF beforehand (W[j] for j <= TURN + 1 is 0).
// ------------------------------------------------------------------------------------------------------
#define ZK_WCHUNK 64

extern "C" __global__ void zk_ext_cross(ZK_BATCH_ARGS, int s0, int* Wall, const long long* woff, int* Wpart, int c0,
                                        int rows_per_warp) {
    ZK_BATCH;
    const int s = s0 + blockIdx.y;
    ZkSeq q = zk_seq(b, s);
    const int n = q.n;
    if (c0 > n) return;
    const int* W = Wall + woff[s];
    int* Wp = Wpart + woff[s];
    const int lane = threadIdx.x & 31;
    const int gw = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    // rows from i_lo: with max_bp_span no pair i.j of the chunk starts before c0 - span + 1 (the host launches
    // warps for rows i_lo .. c0 only)
#if defined(ZK_RULES) || defined(ZK_HC)
    const int i_lo = max(1, c0 - ZK_REACH(P, q) + 1);
#else
    constexpr int i_lo = 1;
#endif
    const int ib = i_lo + gw * rows_per_warp;
    if (ib > c0) return;
    const int ie = min(c0, ib + rows_per_warp - 1);
    int acc[ZK_WCHUNK / 32];
#pragma unroll
    for (int h = 0; h < ZK_WCHUNK / 32; ++h) acc[h] = ZK_INF;
    for (int i = ib; i <= ie; ++i) {
        const int wi = W[i - 1];
#pragma unroll
        for (int h = 0; h < ZK_WCHUNK / 32; ++h) {
            const int j = c0 + h * 32 + lane;
            if (j <= n && i < j - ZK_TURN) {
                const int v = q.V[i * q.N + j];
                if (v < ZK_HALF_INF) acc[h] = zk_min(acc[h], wi + v + zk_exterior_stem_at(P, q.S, n, i, j));
            }
        }
    }
#pragma unroll
    for (int h = 0; h < ZK_WCHUNK / 32; ++h) {
        const int j = c0 + h * 32 + lane;
        if (j <= n && acc[h] < ZK_INF) atomicMin(&Wp[j], acc[h]);
    }
}

extern "C" __global__ void zk_ext_seq(ZK_BATCH_ARGS, int s0, int* Wall, const long long* woff, const int* Wpart, int c0) {
    ZK_BATCH;
    const int s = s0 + blockIdx.x;
    ZkSeq q = zk_seq(b, s);
    const int n = q.n;
    int* W = Wall + woff[s];
    const int* Wp = Wpart + woff[s];
    const int lane = threadIdx.x & 31;
    if (c0 == 1) {
#ifdef ZK_HC
        for (int j = lane; j <= n && j <= ZK_TURN + 1; j += 32) W[j] = q.HC[j].dn >= j ? 0 : ZK_INF;
#else
        for (int j = lane; j <= n && j <= ZK_TURN + 1; j += 32) W[j] = 0;
#endif
        __syncwarp();
    }
    for (int j = max(c0, ZK_TURN + 2); j < c0 + ZK_WCHUNK && j <= n; ++j) {
        int m = ZK_INF;
        for (int i = max(c0 + 1, 1) + lane; i < j - ZK_TURN; i += 32) {
            const int v = q.V[i * q.N + j];
            if (v < ZK_HALF_INF) m = zk_min(m, W[i - 1] + v + zk_exterior_stem_at(P, q.S, n, i, j));
        }
        m = zk_warp_min(m);
#ifdef ZK_HC
        if (lane == 0) W[j] = zk_min(zk_min(zk_min(q.HC[j].up > 0 ? W[j - 1] : ZK_INF, Wp[j]), m), ZK_INF);
#else
        if (lane == 0) W[j] = zk_min(zk_min(W[j - 1], Wp[j]), m);
#endif
        __syncwarp();
    }
}

// ------------------------------------------------------------------------------------------------------
// Traceback, one block per sequence: rnapipe.cpu.zuker.traceback's walk (zk_traceback's), each of its scans
// ("the first candidate in the CPU's order that re-derives the stored value") done by the whole block in
// chunks of blockDim.x candidates with a minimum-index reduction over the candidate's rank in that order,
// so the same co-optimal choice comes out. Every thread walks the same stack (kept in global memory,
// written by thread 0) and takes the same branches.
// ------------------------------------------------------------------------------------------------------
#define ZK_NONE 0x7fffffff

__device__ __forceinline__ int zk_block_min(int x, int* red, int& parity) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    x = __reduce_min_sync(0xffffffffu, x);
    int* r = red + 32 * parity;
    parity ^= 1;
    if (lane == 0) r[warp] = x;
    __syncthreads();
    int m = ZK_NONE;
    for (int w = 0; w < warps; ++w) m = min(m, r[w]);
    return m;
}

extern "C" __global__ void zk_traceback_block(ZK_BATCH_ARGS, int s0, int count, const int* Wall,
                                              const long long* woff, int* stacks, const long long* stoff,
                                              int* pts, unsigned char* out, int* mfe, int* status) {
    __shared__ int red[64];
    ZK_BATCH;
    const int s = s0 + blockIdx.x;
    if (blockIdx.x >= count) return;
    ZkSeq q = zk_seq(b, s);
    const signed char* S = q.S;
    const int n = q.n;
    const long long N = q.N;
    const int* W = Wall + woff[s];
    int* pt = pts + woff[s];
    int* stack = stacks + stoff[s];
    const int tid = threadIdx.x, nth = blockDim.x;
    const int ml_base = zk_sc(P, ZK_ML_BASE);
    int parity = 0;
    int st = 0;
    for (int k = tid; k < n + 2; k += nth) pt[k] = 0;
    int top = 0;
    int j = n;
    while (j > ZK_TURN + 1) {
        if (ZK_HC_RUN_AND(q, j, 1) W[j] == W[j - 1]) { --j; continue; }
        // the closing position i, from j - TURN - 1 down to 1 (or to j - span + 1): candidate c is
        // i = j - TURN - 1 - c
        const int ncand = j - ZK_TURN - 1;
#if defined(ZK_RULES) || defined(ZK_HC)
        const int nscan = min(ncand, ZK_REACH(P, q) - ZK_TURN - 1);
#else
        const int nscan = ncand;
#endif
        int f = ZK_NONE;
        for (int base = 0; base < nscan && f == ZK_NONE; base += nth) {
            int c = base + tid, mine = ZK_NONE;
            if (c < nscan) {
                int i = ncand - c;
                int v = q.V[i * N + j];
                if (v < ZK_HALF_INF && W[i - 1] + v + zk_exterior_stem_at(P, S, n, i, j) == W[j]) mine = c;
            }
            f = zk_block_min(mine, red, parity);
        }
        if (f != ZK_NONE) {
            const int i = ncand - f;
            if (tid == 0) { stack[3 * top] = 0; stack[3 * top + 1] = i; stack[3 * top + 2] = j; }
            ++top;
            j = i - 1;
        } else {
#ifdef ZK_HC
            if (W[j] < ZK_HALF_INF) st = 1;         // else hard constraints leave no structure (zk_traceback)
#else
            st = 1;
#endif
            --j;
        }
    }
    __syncthreads();
    while (top > 0) {
        --top;
        const int kind = stack[3 * top];
        int i = stack[3 * top + 1];
        j = stack[3 * top + 2];
        __syncthreads();             // every thread has read the entry before thread 0 overwrites it
        if (kind == 0) {
            if (tid == 0) { pt[i] = j; pt[j] = i; }
            int target = q.V[i * N + j];
            if (zk_no_lp(P)) {       // the helix inwards while V equals what is left of the target (zk_traceback)
                do {
                    target -= zk_interior_at(P, S, i, j, i + 1, j - 1) + ZK_SSTACK(q.SS, i, j);
                    ++i;
                    --j;
                    if (tid == 0) { pt[i] = j; pt[j] = i; }
                } while (q.V[i * N + j] == target);
            }
            const bool closes = zk_closes(P, ZK_TYPE(S, i, j));
            if (closes ZK_AND_HC_RUN(q, i + 1, j - i - 1) && zk_hairpin(P, S, i, j) == target) continue;
            int maxu = j - i - ZK_TURN - 3;
            if (maxu > ZK_MAXLOOP) maxu = ZK_MAXLOOP;
            int f = ZK_NONE;
            const int ncand = (ZK_MAXLOOP + 1) * (ZK_MAXLOOP + 1);
            for (int base = 0; base < ncand && f == ZK_NONE && maxu >= 0; base += nth) {
                int c = base + tid, mine = ZK_NONE;
                if (c < ncand) {
                    int n1 = c / (ZK_MAXLOOP + 1), n2 = c % (ZK_MAXLOOP + 1);
                    if (n1 + n2 <= maxu ZK_AND_HC_LOOP(q, i, j, n1, n2)) {
                        int p = i + 1 + n1, qq = j - 1 - n2;
                        int t2 = zk_pair(P, S, p, qq ZK_HC_ARG(q.HC));
                        if (t2 && (n1 + n2 == 0 || (closes && zk_closes(P, t2))) &&
                            zk_interior_at(P, S, i, j, p, qq) + q.V[p * N + qq] +
                                    (n1 + n2 == 0 ? ZK_SSTACK(q.SS, i, j) : 0) == target)
                            mine = c;
                    }
                }
                f = zk_block_min(mine, red, parity);
            }
            if (f != ZK_NONE) {
                if (tid == 0) {
                    stack[3 * top] = 0;
                    stack[3 * top + 1] = i + 1 + f / (ZK_MAXLOOP + 1);
                    stack[3 * top + 2] = j - 1 - f % (ZK_MAXLOOP + 1);
                }
                ++top;
                __syncthreads();
                continue;
            }
            if (!closes) continue;
            const int rest = target - zk_multi_closing(P, S, i, j);
            const int kb = i + ZK_TURN + 3, ke = j - ZK_TURN - 1;
            for (int base = kb; base < ke && f == ZK_NONE; base += nth) {
                int k = base + tid, mine = ZK_NONE;
                if (k < ke && q.WM[(i + 1) * N + k - 1] + q.WM[k * N + j - 1] == rest) mine = k;
                f = zk_block_min(mine, red, parity);
            }
            if (f != ZK_NONE) {
                if (tid == 0) {
                    stack[3 * top] = 1; stack[3 * top + 1] = i + 1; stack[3 * top + 2] = f - 1;
                    stack[3 * top + 3] = 1; stack[3 * top + 4] = f; stack[3 * top + 5] = j - 1;
                }
                top += 2;
            } else st = 1;
        } else {
            const int target = q.WM[i * N + j];
            while (j - 1 > i ZK_AND_HC_RUN(q, j, 1) && q.WM[i * N + j - 1] + ml_base == target) --j;
            while (i + 1 < j ZK_AND_HC_RUN(q, i, 1) && q.WM[(i + 1) * N + j] + ml_base == target) ++i;
            const int v = q.V[i * N + j];
            if (v < ZK_HALF_INF && v + zk_multi_stem_at(P, S, i, j) == target) {
                if (tid == 0) { stack[3 * top] = 0; stack[3 * top + 1] = i; stack[3 * top + 2] = j; }
                ++top;
            } else {
                const int ub = i + ZK_TURN + 1, ue = j - ZK_TURN - 1;
                int f = ZK_NONE;
                for (int base = ub; base < ue && f == ZK_NONE; base += nth) {
                    int u = base + tid, mine = ZK_NONE;
                    if (u < ue && q.WM[i * N + u] + q.WM[(u + 1) * N + j] == target) mine = u;
                    f = zk_block_min(mine, red, parity);
                }
                if (f != ZK_NONE) {
                    if (tid == 0) {
                        stack[3 * top] = 1; stack[3 * top + 1] = i; stack[3 * top + 2] = f;
                        stack[3 * top + 3] = 1; stack[3 * top + 4] = f + 1; stack[3 * top + 5] = j;
                    }
                    top += 2;
                } else st = 1;
            }
        }
        __syncthreads();             // thread 0's pushes are visible before the next pop
    }
    __syncthreads();
    unsigned char* o = out + b.soff[s];
    for (int k = 1 + tid; k <= n; k += nth) o[k - 1] = pt[k] == 0 ? '.' : (pt[k] > k ? '(' : ')');
    if (tid == 0) { mfe[s] = W[n]; status[s] = st; }
}
