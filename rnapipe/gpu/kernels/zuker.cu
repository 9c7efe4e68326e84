// Zuker MFE kernels: the fill of V, WM1, WM (one warp per cell, cells of an anti-diagonal spread over
// warps), the exterior loop W, and the traceback. The recursions live in zuker_core.cuh.
//
// Two fills share the cell code:
//   zk_fill_block  one block per sequence walks all its anti-diagonals (Lei et al. §3.2, sequence- and
//                  cell-level parallelism): for batches of short sequences, one launch per batch.
//   zk_fill_diag   one launch per anti-diagonal over every sequence of the batch: for long sequences,
//                  where one diagonal holds enough cells to fill the whole GPU.
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
};

// Kernel arguments that make up a ZkBatch (CuPy passes pointers and scalars, not structs).
#define ZK_BATCH_ARGS const int* P, const signed char* Sall, const long long* soff, const int* lens, \
                      const long long* moff, int* Vall, int* WMall, int* WM1Tall, int* VIall, int* V1Nall, \
                      int* VAUall, int* VMXall
#define ZK_BATCH ZkBatch b = {P, Sall, soff, lens, moff, Vall, WMall, WM1Tall, VIall, V1Nall, VAUall, VMXall}

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
    for (int d = ZK_TURN + 1; d < q.n; ++d) {
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
    for (int j = tid; j <= q.n && j <= ZK_TURN + 1; j += blockDim.x) W[j] = 0;
    __syncthreads();
    for (int j = ZK_TURN + 2; j <= q.n; ++j) {
        int x = zk_warp_min(zk_w_partial(b.P, q, W, j, tid, blockDim.x));
        if (lane == 0) red[warp] = x;
        __syncthreads();
        if (tid == 0) {
            int m = W[j - 1];
            for (int w = 0; w < warps; ++w) m = min(m, red[w]);
            W[j] = m;
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
