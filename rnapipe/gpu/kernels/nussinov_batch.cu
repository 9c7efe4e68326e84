// Batched Nussinov for many short sequences: one block per sequence, the whole matrix in shared
// memory as bytes (scores <= n/2 <= 224 for n <= 448).  Row i holds C(i,j) for j >= i; the rest of
// the row holds the shifted mirror L[j][k] = C(k+1, j) for k < j, so the split max
//   max_{k=i}^{j-1} C(i,k) + C(k+1,j)  =  max_k  S[i][k] + S[j][k]
// reads two rows at the same offsets, eight k at a time (byte sums never carry: they are <= C(i,j)).
// Then warp 0 traces back in shared memory and writes the dot-bracket straight to global memory.
#include "nussinov_common.cuh"

extern "C" __global__ void nussinov_batch(const unsigned char* __restrict__ text, const i64* __restrict__ offsets,
                                          const int* __restrict__ lengths, const int* __restrict__ order,
                                          int npad, int m, unsigned char* __restrict__ out, int* __restrict__ scores) {
    extern __shared__ unsigned int smem_batch[];
    // rows padded by two words (8-byte loads): thread i starts its row walk near column i, and with
    // a stride of npad bytes (a multiple of 32) neighbouring threads would land in the same banks
    const int W = npad + 8;
    unsigned char* S = (unsigned char*)smem_batch;                 // npad * W
    signed char* sq = (signed char*)(S + npad * W);                // npad codes
    int* stk = (int*)(sq + npad);                                  // 2 * (npad/2 + 2) ints
    const int sid = order[blockIdx.x];
    const int n = lengths[sid];
    const i64 off = offsets[sid];
    const int tid = threadIdx.x;
    for (int x = tid; x < npad * W / 4; x += blockDim.x) smem_batch[x] = 0u;
    for (int x = tid; x < n; x += blockDim.x) {
        const unsigned char c = text[off + x];     // upper-case ASCII, encoded here (A=1 C=2 G=3 U=4)
        sq[x] = c == 'A' ? 1 : c == 'C' ? 2 : c == 'G' ? 3 : c == 'U' ? 4 : 0;
        out[off + x] = '.';
    }
    __syncthreads();
    for (int d = m + 1; d < n; ++d) {
        const int i = tid, j = i + d;
        if (j < n) {
            const unsigned char* ri = S + i * W;
            const unsigned char* rj = S + j * W;
            // eight k per 8-byte chunk: byte sums (no carry), then the even and odd bytes as 16-bit lanes
            // of max chains (VIMNMX.U16x2 is one instruction; a byte-wise max is not).  The first and
            // last chunks are masked to [i, j) before adding, so that no stray byte can carry.
            const int c0 = i >> 3, c1 = (j - 1) >> 3;
            const unsigned long long mlo = ~0ull << (8 * (i & 7));
            const unsigned long long mhi = ~0ull >> (8 * (7 - ((j - 1) & 7)));
            unsigned lo0 = 0, hi0 = 0, lo1 = 0, hi1 = 0;
            {
                const unsigned long long msk = c0 == c1 ? (mlo & mhi) : mlo;
                const unsigned long long s2 = (*(const unsigned long long*)(ri + 8 * c0) & msk) +
                                              (*(const unsigned long long*)(rj + 8 * c0) & msk);
                const unsigned s0 = (unsigned)s2, s1 = (unsigned)(s2 >> 32);
                lo0 = s0 & 0x00ff00ffu; hi0 = s0 & 0xff00ff00u; lo1 = s1 & 0x00ff00ffu; hi1 = s1 & 0xff00ff00u;
            }
#pragma unroll 4
            for (int c = c0 + 1; c < c1; ++c) {
                const uint2 a = *(const uint2*)(ri + 8 * c), b = *(const uint2*)(rj + 8 * c);
                const unsigned s0 = a.x + b.x, s1 = a.y + b.y;
                lo0 = __vmaxu2(lo0, s0 & 0x00ff00ffu);
                hi0 = __vmaxu2(hi0, s0 & 0xff00ff00u);
                lo1 = __vmaxu2(lo1, s1 & 0x00ff00ffu);
                hi1 = __vmaxu2(hi1, s1 & 0xff00ff00u);
            }
            if (c1 > c0) {
                const unsigned long long s2 = (*(const unsigned long long*)(ri + 8 * c1) & mhi) +
                                              (*(const unsigned long long*)(rj + 8 * c1) & mhi);
                const unsigned s0 = (unsigned)s2, s1 = (unsigned)(s2 >> 32);
                lo0 = __vmaxu2(lo0, s0 & 0x00ff00ffu);
                hi0 = __vmaxu2(hi0, s0 & 0xff00ff00u);
                lo1 = __vmaxu2(lo1, s1 & 0x00ff00ffu);
                hi1 = __vmaxu2(hi1, s1 & 0xff00ff00u);
            }
            const unsigned lo = __vmaxu2(lo0, lo1), hi = __vmaxu2(hi0, hi1) >> 8;
            const unsigned m2 = __vmaxu2(lo, hi);
            int best = (int)max(m2 & 0xffffu, m2 >> 16);
            if (can_pair(sq[i], sq[j])) best = max(best, (i + 1 <= j - 1 ? S[(i + 1) * W + j - 1] : 0) + 1);
            S[i * W + j] = (unsigned char)best;
            if (i >= 1) S[j * W + i - 1] = (unsigned char)best;
        }
        __syncthreads();
    }
    if (tid == 0) scores[sid] = n > 0 ? S[n - 1] : 0;
    if (tid >= 32) return;
    // Warp-0 traceback: lane 0 walks unpaired bases and direct pairs, the warp searches split points.
    const int lane = tid;
    int sp = 0;
    if (n > 0) { stk[0] = 0; stk[1] = n - 1; sp = 1; }
    while (true) {
        int si = 0, sj = 0, sv = 0, state = 0;
        if (lane == 0) {
            while (sp > 0 && state == 0) {
                --sp;
                int i = stk[2 * sp], j = stk[2 * sp + 1];
                while (j - i > m) {
                    const int v = S[i * W + j];
                    if (v == S[(i + 1) * W + j]) { ++i; continue; }
                    if (v == S[i * W + j - 1]) { --j; continue; }
                    if (can_pair(sq[i], sq[j]) && v == (i + 1 <= j - 1 ? S[(i + 1) * W + j - 1] : 0) + 1) {
                        out[off + i] = '('; out[off + j] = ')'; ++i; --j; continue;
                    }
                    si = i; sj = j; sv = v; state = 1;
                    break;
                }
            }
        }
        state = __shfl_sync(0xffffffffu, state, 0);
        if (state == 0) break;
        si = __shfl_sync(0xffffffffu, si, 0);
        sj = __shfl_sync(0xffffffffu, sj, 0);
        sv = __shfl_sync(0xffffffffu, sv, 0);
        int found = -1;
        for (int lo = si + m + 1; lo < sj && found < 0; lo += 32) {
            const int k = lo + lane;
            bool ok = false;
            if (k < sj && can_pair(sq[si], sq[k])) {
                const int left = si + 1 <= k - 1 ? S[(si + 1) * W + k - 1] : 0;
                ok = left + 1 + S[sj * W + k] == sv;     // S[j][k] = C(k+1, j)
            }
            const unsigned mask = __ballot_sync(0xffffffffu, ok);
            if (mask) found = lo + __ffs(mask) - 1;
        }
        if (lane == 0) {
            if (found < 0) scores[sid] = -1;   // inconsistent matrix: reported by the host
            else {
                out[off + si] = '('; out[off + found] = ')';
                stk[2 * sp] = found + 1; stk[2 * sp + 1] = sj; ++sp;
                stk[2 * sp] = si + 1; stk[2 * sp + 1] = found - 1; ++sp;
            }
        }
        if (__shfl_sync(0xffffffffu, found, 0) < 0) break;
    }
}
