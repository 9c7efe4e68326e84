// Four-Russians Nussinov on the GPU (after Frid & Gusfield; Venkatachalam et al.): the k range of
// max_k C(i,k) + C(k+1,j) is cut into groups of Q = 8.  Adjacent cells differ by 0 or 1 along a row
// and down a column, so inside a group
//   C(i, gq+p) + C(gq+p+1, j) = C(i,gq) + C(gq+1,j) + sum_{t=1..p} (h_i(gq+t) - v_j(gq+t)),
// and the max over p is one lookup R[H][V] in a table over all pairs of (Q-1)-bit difference
// vectors, built once on the host.  H (horizontal vectors) is stored row-major H[i][g], V (vertical
// vectors) per column V[j][g], both contiguous in g.  One launch per anti-diagonal, one warp per cell;
// the warp that finishes the last cell of a group writes that group's vector.
#include "nussinov_common.cuh"

#define FR_Q 8
#define FR_BITS (FR_Q - 1)

extern "C" __global__ void fr_diagonal(int* C, const signed char* seq, int N, int m, int d,
                                       unsigned char* H, unsigned char* V, int NG,
                                       const unsigned char* __restrict__ R) {
    const int i = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31, j = i + d;
    if (j >= N) return;
    const int* row = C + (i64)i * N;       // row[k] = C(i,k)
    const int* col = C + (i64)j * N;       // col[k] = C(k,j) through the mirror
    // whole groups [gq, gq+Q-1] inside [i, j-1]
    const int glo = (i + FR_Q - 1) / FR_Q;
    const int ghi = j >= FR_Q ? (j - FR_Q) / FR_Q : -1;
    int best = 0;
    if (glo <= ghi) {
        const unsigned char* hrow = H + (i64)i * NG;
        const unsigned char* vcol = V + (i64)j * NG;
        for (int g = glo + lane; g <= ghi; g += 32) {
            const int k = g * FR_Q;
            best = max(best, row[k] + col[k + 1] + (int)__ldg(&R[(hrow[g] << FR_BITS) | vcol[g]]));
        }
        for (int k = i + lane; k < glo * FR_Q; k += 32) best = max(best, row[k] + col[k + 1]);
        for (int k = (ghi + 1) * FR_Q + lane; k < j; k += 32) best = max(best, row[k] + col[k + 1]);
    } else {
        for (int k = i + lane; k < j; k += 32) best = max(best, row[k] + col[k + 1]);
    }
    for (int o = 16; o > 0; o >>= 1) best = max(best, __shfl_xor_sync(0xffffffffu, best, o));
    if (lane != 0) return;
    int x = 0;
    if (j - i > m) {
        x = best;
        if (can_pair(seq[i], seq[j])) x = max(x, (i + 1 <= j - 1 ? C[(i64)(i + 1) * N + j - 1] : 0) + 1);
    }
    C[(i64)i * N + j] = x;
    C[(i64)j * N + i] = x;
    // C(i, gq..gq+Q-1) complete once column gq+Q-1 = j is done: horizontal vector of row i, group g.
    if ((j + 1) % FR_Q == 0) {
        const int g = j / FR_Q, k0 = g * FR_Q;
        if (k0 >= i) {
            unsigned bits = 0;
            for (int t = 1; t < FR_Q; ++t) {
                const int cur = (k0 + t == j) ? x : row[k0 + t];
                bits |= (unsigned)(cur - row[k0 + t - 1]) << (t - 1);
            }
            H[(i64)i * NG + g] = (unsigned char)bits;
        }
    }
    // C(gq+1..gq+Q, j) complete once row gq+1 = i is done: vertical vector of column j, group g.
    if (i >= 1 && (i - 1) % FR_Q == 0) {
        const int g = (i - 1) / FR_Q, k0 = g * FR_Q;
        if (k0 + FR_Q <= j) {
            unsigned bits = 0;
            for (int t = 1; t < FR_Q; ++t) {
                const int upper = (k0 + t == i) ? x : col[k0 + t];
                bits |= (unsigned)(upper - col[k0 + t + 1]) << (t - 1);
            }
            V[(i64)j * NG + g] = (unsigned char)bits;
        }
    }
}

extern "C" __global__ void __launch_bounds__(1024)
fr_traceback(const int* C, const signed char* seq, int n, int N, int m, int* stack, unsigned char* out, int* status) {
    traceback_block<int, false>(C, seq, n, N, m, stack, out, status);
}
