// Shared pieces of the Nussinov kernels: pairing rule, cell layouts, and the on-device traceback.
//
// Recurrence (Nussinov & Jacobson 1980, in the split form used by Chang et al. and Li et al.):
//   C(i,j) = 0                                                     if j - i <= m  (m = min_loop)
//   C(i,j) = max( C(i+1,j-1) + pair(i,j),  max_{i < k <= j} C(i,k-1) + C(k,j) )   otherwise,
// with C(i,i-1) = 0 for empty intervals.  Codes: A=1 C=2 G=3 U=4, anything else 0 (never pairs).
#pragma once

typedef unsigned short u16;
typedef unsigned int u32;
typedef long long i64;

// Bit (5a + b) set for the canonical pairs AU UA CG GC GU UG.
#define NUSS_PAIR_MASK ((1u << 9) | (1u << 21) | (1u << 13) | (1u << 17) | (1u << 19) | (1u << 23))

__device__ __forceinline__ int can_pair(int a, int b) {
    return (NUSS_PAIR_MASK >> (a * 5 + b)) & 1;
}

#ifndef NUSS_TILE
#define NUSS_TILE 128
#endif

// Full square (N x N, row-major): upper triangle holds C(i,j); the lower triangle holds the mirror
// C(i,j) at [j][i] so that a column of C is a contiguous row (Chang et al.'s mirrored lower triangle).
// Packed: only the upper triangle of TILE x TILE tiles, tile (I,J) at rank I*NT - I(I-1)/2 + (J-I),
// each tile row-major (Li et al.'s packed layout for the largest n); no mirror.
template <bool PACKED>
__device__ __forceinline__ i64 cell_index(int i, int j, int N) {
    if (!PACKED) return (i64)i * N + j;
    const int NT = N / NUSS_TILE;
    const i64 I = i / NUSS_TILE, J = j / NUSS_TILE;
    const i64 rank = I * NT - I * (I - 1) / 2 + (J - I);
    return (rank * NUSS_TILE + (i % NUSS_TILE)) * NUSS_TILE + (j % NUSS_TILE);
}

// C(i,j) for i <= j, 0 for an empty interval.
template <typename Cell, bool PACKED>
__device__ __forceinline__ int get_cell(const Cell* C, int i, int j, int N) {
    return i > j ? 0 : (int)C[cell_index<PACKED>(i, j, N)];
}

// C(k,j) read through the mirror where there is one, so that consecutive k are consecutive addresses.
template <typename Cell, bool PACKED>
__device__ __forceinline__ int get_col(const Cell* C, int k, int j, int N) {
    if (k > j) return 0;
    if (PACKED) return (int)C[cell_index<true>(k, j, N)];
    return (int)C[(i64)j * N + k];
}

// Traceback on the device, one block, so that only n bytes of structure cross the bus.
// Thread 0 walks unpaired bases and direct pairs; the whole block joins only to search a split
// point k (the pair (i,k) with C(i,j) = C(i+1,k-1) + 1 + C(k+1,j)), reading row i+1 and the
// mirrored column j.  stack holds 2 ints per pending interval; out starts as '.' everywhere.
// status[0] = 1 if the matrix is inconsistent (a bug), 0 otherwise.
template <typename Cell, bool PACKED>
__device__ void traceback_block(const Cell* C, const signed char* seq, int n, int N, int m,
                                int* stack, unsigned char* out, int* status) {
    __shared__ int s_i, s_j, s_v, s_sp, s_state, s_k;
    const int tid = threadIdx.x;
    if (tid == 0) {
        s_sp = 0;
        if (n > 0) { stack[0] = 0; stack[1] = n - 1; s_sp = 1; }
        status[0] = 0;
    }
    __syncthreads();
    while (true) {
        if (tid == 0) {
            s_state = 0;  // 0: done, 1: needs a block search
            int sp = s_sp;
            while (sp > 0 && s_state == 0) {
                --sp;
                int i = stack[2 * sp], j = stack[2 * sp + 1];
                while (j - i > m) {
                    int v = get_cell<Cell, PACKED>(C, i, j, N);
                    if (v == get_cell<Cell, PACKED>(C, i + 1, j, N)) { ++i; continue; }
                    if (v == get_cell<Cell, PACKED>(C, i, j - 1, N)) { --j; continue; }
                    if (can_pair(seq[i], seq[j]) && v == get_cell<Cell, PACKED>(C, i + 1, j - 1, N) + 1) {
                        out[i] = '('; out[j] = ')'; ++i; --j; continue;
                    }
                    s_i = i; s_j = j; s_v = v; s_state = 1;
                    break;
                }
            }
            s_sp = sp;
            s_k = 0x7fffffff;
        }
        __syncthreads();
        if (s_state == 0) break;
        const int i = s_i, j = s_j, v = s_v;
        const int ai = seq[i];
        // i pairs with some k in (i+m, j); j itself was ruled out above.
        for (int lo = i + m + 1; lo < j; lo += blockDim.x) {
            int k = lo + tid;
            if (k < j && can_pair(ai, seq[k])) {
                int left = get_cell<Cell, PACKED>(C, i + 1, k - 1, N);
                int right = get_col<Cell, PACKED>(C, k + 1, j, N);
                if (left + 1 + right == v) atomicMin(&s_k, k);
            }
            __syncthreads();
            const int found = s_k;
            __syncthreads();  // everyone has read s_k before anyone's next atomicMin
            if (found != 0x7fffffff) break;
        }
        if (tid == 0) {
            int k = s_k;
            if (k == 0x7fffffff) {
                status[0] = 1;
                s_sp = 0;
            } else {
                out[i] = '('; out[k] = ')';
                int sp = s_sp;
                stack[2 * sp] = k + 1; stack[2 * sp + 1] = j; ++sp;
                stack[2 * sp] = i + 1; stack[2 * sp + 1] = k - 1; ++sp;
                s_sp = sp;
            }
        }
        __syncthreads();
    }
}
