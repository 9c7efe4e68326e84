// Chang, Kimmel & Lin style Nussinov: one launch per anti-diagonal d = j - i, 32-bit cells in an
// N x N array whose lower triangle mirrors the upper one, so that both operands of
// C(i,k-1) + C(k,j) are read along rows (coalesced).  Three kernels by how much work a cell has:
//   chang_initial: one thread per cell (short spans, many cells);
//   chang_middle : one warp per cell;
//   chang_final  : one block per cell (long spans, few cells).
#include "nussinov_common.cuh"

// max over k in [i+1+lane, j] step width of C(i,k-1) + C(k,j); C(k,j) read as mirror [j][k].
__device__ __forceinline__ int split_partial(const int* __restrict__ C, int N, int i, int j, int lane, int width) {
    const int* row = C + (i64)i * N - 1;     // row[k] = C(i, k-1)
    const int* col = C + (i64)j * N;         // col[k] = C(k, j)
    int best = 0;
    for (int k = i + 1 + lane; k <= j; k += width) best = max(best, row[k] + col[k]);
    return best;
}

__device__ __forceinline__ void finish_cell(int* C, const signed char* seq, int N, int i, int j, int best) {
    if (can_pair(seq[i], seq[j])) best = max(best, (i + 1 <= j - 1 ? C[(i64)(i + 1) * N + j - 1] : 0) + 1);
    C[(i64)i * N + j] = best;
    C[(i64)j * N + i] = best;
}

extern "C" __global__ void chang_initial(int* C, const signed char* seq, int N, int d) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x, j = i + d;
    if (j >= N) return;
    finish_cell(C, seq, N, i, j, split_partial(C, N, i, j, 0, 1));
}

extern "C" __global__ void chang_middle(int* C, const signed char* seq, int N, int d) {
    const int i = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31, j = i + d;
    if (j >= N) return;   // whole warps leave together: i is uniform across a warp
    int best = split_partial(C, N, i, j, lane, 32);
    for (int o = 16; o > 0; o >>= 1) best = max(best, __shfl_xor_sync(0xffffffffu, best, o));
    if (lane == 0) finish_cell(C, seq, N, i, j, best);
}

extern "C" __global__ void chang_final(int* C, const signed char* seq, int N, int d) {
    __shared__ int red[32];
    const int i = blockIdx.x, j = i + d, lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    int best = split_partial(C, N, i, j, threadIdx.x, blockDim.x);
    for (int o = 16; o > 0; o >>= 1) best = max(best, __shfl_xor_sync(0xffffffffu, best, o));
    if (lane == 0) red[w] = best;
    __syncthreads();
    if (w == 0) {
        best = lane < (int)(blockDim.x >> 5) ? red[lane] : 0;
        for (int o = 16; o > 0; o >>= 1) best = max(best, __shfl_xor_sync(0xffffffffu, best, o));
        if (lane == 0) finish_cell(C, seq, N, i, j, best);
    }
}

extern "C" __global__ void __launch_bounds__(1024)
chang_traceback(const int* C, const signed char* seq, int n, int N, int m, int* stack, unsigned char* out, int* status) {
    traceback_block<int, false>(C, seq, n, N, m, stack, out, status);
}
