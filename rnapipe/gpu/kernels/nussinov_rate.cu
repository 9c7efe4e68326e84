// Probe of the add-max rate the Nussinov floor is stated against: many independent chains of
// max(a + b, c) per thread, in 32-bit (two instructions, or one fused VIADDMNMX) and in 16x2 DPX form.
#include "nussinov_common.cuh"

#define RATE_CHAINS 16

extern "C" __global__ void rate_addmax_s32(const int* in, int* out, int iters) {
    int acc[RATE_CHAINS];
    const int a = in[threadIdx.x & 31], b = in[(threadIdx.x + 7) & 31];
#pragma unroll
    for (int c = 0; c < RATE_CHAINS; ++c) acc[c] = in[c];
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int c = 0; c < RATE_CHAINS; ++c) acc[c] = max(acc[c] + a, b - c);
    }
    int s = 0;
#pragma unroll
    for (int c = 0; c < RATE_CHAINS; ++c) s ^= acc[c];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

// Two add-max per instruction (one per 16-bit half).
extern "C" __global__ void rate_addmax_u16x2(const unsigned* in, unsigned* out, int iters) {
    unsigned acc[RATE_CHAINS];
    const unsigned a = in[threadIdx.x & 31], b = in[(threadIdx.x + 7) & 31];
#pragma unroll
    for (int c = 0; c < RATE_CHAINS; ++c) acc[c] = in[c];
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int c = 0; c < RATE_CHAINS; ++c) acc[c] = __viaddmax_u16x2(acc[c], a, b + c);
    }
    unsigned s = 0;
#pragma unroll
    for (int c = 0; c < RATE_CHAINS; ++c) s ^= acc[c];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
