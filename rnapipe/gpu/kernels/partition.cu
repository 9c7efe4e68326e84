// McCaskill's partition function and the base-pair probabilities on the GPU: the recursions of
// rnapipe.cpu.partition (_inside, _outside: its docstring says what every matrix holds), cell by cell, a warp a
// cell, the cells of one diagonal (span j - i) at a time. Double precision, the same scaled weights as the CPU
// engine (per-nucleotide log-scales lam: SL, SR and L are its _scales), so the two agree to rounding.
//
// Layout, per sequence s of n nt (N = n + 2): its codes S at off1[s] (S[0] and S[n+1] padding), SL and SR at
// 32 * off1[s] (rows of MAXLOOP + 2), the special-hairpin weights SPEC at 7 * off1[s], L (the prefix sums of lam)
// and the exterior vectors Q5, Q3 at off1[s]; its matrices at off2[s] (N x N doubles each):
//   A:  QB[i, j] at [i, j]; below the diagonal, inside G[i, j] at [j, i], outside QBout[i, j]
//   M, M1, MO:  QM, QM1, QMout at [i, j] and [j, i]; outside, X = QBout · Mc replaces QM above the diagonal
//       (at [i, j]) and QM1 below it (at [j, i]), the halves the outside pass does not read
//   QI: a ring of QW diagonals (QID: cell (i, i + d) at [d mod QW, i]) at QW * off1[s], QB times the inner pair's
//       generic interior mismatch (inside), then QBout times the closing pair's (outside, OI), 0 where i·j does
//       not pair: a cell's generic interior loops reach the 27 diagonals 6 .. 32 before it (inside) or after it
//       (outside), a diagonal's consecutive cells for each loop size, read in runs
//   HV: two diagonals (the last and the current, by d's parity) of H (inside) and V (outside) at 2 * off1[s];
//       O1 likewise of QM1out (outside)
// P[i, j] = QB QBout / Z is not stored (pf_prob).
// The tables X (doubles) at the offsets PF_* the host passes (-D, rnapipe.gpu.partition.table_layout).
//
// The multiloop sums, with U(h, k) = prod_{x = h}^{k-1} mlb scale(x) the weight of the unpaired stretch h .. k-1:
//   G[i, j] = sum_k QM[i, k] QM1[k+1, j]                  QM[i, j] = G[i, j] + H[i, j] + QM1 terms
//   H[i, j] = sum_k U(i, k+1) QM1[k+1, j]  = mlb scale(i) (QM1[i+1, j] + H[i+1, j])
//   QB[i, j] gets Mc(i, j) G[i+1, j-1]
//   QMout[i, j] = sum_l (QMout[i, l] + X[i-1, l+1]) QM1[j+1, l]
//   QM1out[i, j] gets sum_h QM[h, i-1] (QMout[h, j] + X[h-1, j+1]) and V[i, j] = sum_h U(h, i) QMout[h, j]
//                   = mlb scale(i-1) (QMout[i-1, j] + V[i-1, j])
// The three sums over k, l and h are cut in bands of PF_T diagonals (d = j - i in [D0, D0 + PF_T), D0 a multiple
// of PF_T) and tiles of PF_T rows (i in [a0, a0 + PF_T), a0 = 1 + PF_T t): before a band, pf_band sums, for every
// cell of a tile, the terms whose cells lie outside the band (k in [a0 + 2 PF_T - 2, a0 + D0 - 1] inside; l >=
// a0 + 2 PF_T - 1 + D0 and h <= a0 - PF_T outside) as a matrix product through shared memory, into the cell's
// own slot (G's, QMout's); the cell adds the rest (at most 3 PF_T terms) when its diagonal comes.
//
// Two ways to launch pf_inside and pf_outside: a block a sequence (gridDim.x == 1) walking the diagonals of a
// band with __syncthreads between them, or one launch a diagonal (d_first == d_last) with gridDim.x blocks over
// its cells, for few long sequences.

#define TURN 3
#define MAXLOOP 30
#define SLW 32                      // MAXLOOP + 2: the row width of SL and SR
#define NONE 5                      // the neighbour code of "no neighbour" in EXT and MLS
#define PF_WARPS 8
// pf_inside's and pf_outside's blocks an SM the compiler must allow: 48 registers a thread. A cell's time is a
// chain of dependent loads, so more warps in flight pay more than the few bytes this spills.
#define PF_MIN_BLOCKS 5
#define FULL 0xffffffffu
#define BIG 1e280
#define NGEN ((MAXLOOP - 3) * (MAXLOOP - 2) / 2)    // the generic interior loops (u1, u2 >= 2, u1 + u2 <= MAXLOOP)

#define PT(a, b) X[PF_PT + (a) * 5 + (b)]
#define QW 64                       // QI's ring of diagonals (>= MAXLOOP + 3, a power of 2; rnapipe.gpu.partition.QW)
#define QID(i, d) ((long long)((d) & (QW - 1)) * N + (i))     // QI's slot of the cell (i, i + d)
#define TAB3(o, t, a, b) X[(o) + ((t) * 5 + (a)) * 5 + (b)]

__device__ __forceinline__ double warp_sum(double v) {
#pragma unroll
    for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(FULL, v, o);
    return v;
}

struct PfSeq {
    const signed char* S;
    const double *SL, *SR;
    int n;
    long long N;
};

__device__ __forceinline__ PfSeq pf_seq(const signed char* Sall, const double* SLall, const double* SRall,
                                        const long long* off1, const int* lens, int s) {
    PfSeq q;
    q.S = Sall + off1[s];
    q.SL = SLall + SLW * off1[s];
    q.SR = SRall + SLW * off1[s];
    q.n = lens[s];
    q.N = q.n + 2;
    return q;
}

// the pair type of i·j, 0 outside 1..n or within TURN of the diagonal (the CPU engine's ptype)
__device__ __forceinline__ int pf_type(const int* sPT, const signed char* S, int n, int i, int j) {
    return (i >= 1 && j <= n && j - i > TURN) ? sPT[S[i] * 5 + S[j]] : 0;
}

// the pair types (sPT[5 a + b]) and, with PF_SHARED_SETUP, the reversed types (sRT) in shared memory
#define PF_SHARED_PT                                                                          \
    __shared__ int sPT[25];                                                                   \
    if (threadIdx.x < 25) sPT[threadIdx.x] = (int)X[PF_PT + threadIdx.x];                    \
    __syncthreads();
#define PF_SHARED_SETUP                                                                       \
    __shared__ int sRT[8];                                                                    \
    __shared__ short sGL[NGEN];                                                               \
    __shared__ double sGS[NGEN];                                                              \
    if (threadIdx.x < 8) sRT[threadIdx.x] = (int)X[PF_RT + threadIdx.x];                      \
    for (int k = threadIdx.x; k < NGEN; k += blockDim.x) {                                    \
        const int gl = (int)X[PF_GL + k];                                                     \
        sGL[k] = (short)gl;                                                                   \
        sGS[k] = X[PF_GS + (gl >> 5) * 31 + (gl & 31)];                                       \
    }                                                                                         \
    PF_SHARED_PT

// SL[i, u] = the scale factor of the stretch i .. i+u and SR[i, u] that of i-u .. i (u = 0 .. MAXLOOP + 1, nucleotides
// past either end count 0; 0 where it underflows) from L, the prefix sums of the log-scales (cpu.partition._scales).
extern "C" __global__ void pf_scales(const double* __restrict__ Lall, const long long* __restrict__ off1,
                                     const int* __restrict__ lens, const int* __restrict__ active, double* SLall,
                                     double* SRall) {
    const int s = blockIdx.y;
    if (!active[s]) return;
    const int n = lens[s];
    const double* L = Lall + off1[s];
    double* SL = SLall + SLW * off1[s];
    double* SR = SRall + SLW * off1[s];
    for (int e = blockIdx.x * blockDim.x + threadIdx.x; e < (n + 2) * SLW; e += gridDim.x * blockDim.x) {
        const int i = e / SLW, u = e % SLW;
        const double x = -(L[min(i + u, n + 1)] - L[max(i - 1, 0)]);
        SL[e] = x > -700.0 ? exp(x) : 0.0;
        const double y = -(L[i] - L[max(i - u - 1, 0)]);
        SR[e] = y > -700.0 ? exp(y) : 0.0;
    }
}

#define PF_T 32                     // the bands' and tiles' width (rnapipe.gpu.partition.BAND)
#define PF_KC 16                    // pf_band's k chunk

// The band's bulk sums (the header): mode 0 G (inside), 1 QMout, 2 QM1out's QM-times-(QMout + X) sum (outside,
// gridDim.z == 2: blockIdx.z + 1). A block a tile of PF_T rows and the 2 PF_T - 1 columns j = a0 + D0 + c its band
// cells reach; 128 threads, each 4 rows x 4 columns; rows of both factors read along the summed index.
extern "C" __global__ void __launch_bounds__(128)
pf_band(const double* __restrict__ Mall, const double* __restrict__ M1all, double* Aall, double* MOall,
        const long long* __restrict__ off2, const int* __restrict__ lens, const int* __restrict__ active, int D0,
        int inside) {
    const int s = blockIdx.y;
    if (!active[s]) return;
    const int n = lens[s];
    const long long N = n + 2;
    const int a0 = 1 + PF_T * blockIdx.x;
    if (a0 + D0 > n) return;
    const int mode = inside ? 0 : 1 + blockIdx.z;
    int k0, k1;
    if (mode == 0) {
        k0 = a0 + 2 * PF_T - 2;
        k1 = a0 + D0 - 1;
    } else if (mode == 1) {
        k0 = a0 + 2 * PF_T - 1 + D0;
        k1 = n;
    } else {
        k0 = 1;
        k1 = a0 - PF_T;
    }
    if (k1 < k0) return;
    const double* M = Mall + off2[s];
    const double* M1 = M1all + off2[s];
    double* A = Aall + off2[s];
    double* MO = MOall + off2[s];
    __shared__ double Rs[PF_KC][PF_T + 1];
    __shared__ double Cs[PF_KC][2 * PF_T + 1];
    const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
    const int b0 = a0 + D0;
    double acc[4][4];
#pragma unroll
    for (int q = 0; q < 4; ++q)
#pragma unroll
        for (int p = 0; p < 4; ++p) acc[q][p] = 0.0;
    for (int kb = k0; kb <= k1; kb += PF_KC) {
        // rows a: M[a, k] (mode 0), QMout[a, k] + X[a-1, k+1] (1), QM[k, a-1] (2)
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            const int e = tid + 128 * q, r = e >> 4, kk = e & 15, k = kb + kk, a = a0 + r;
            double v = 0.0;
            if (k <= k1 && a <= n) {
                if (mode == 0) v = M[a * N + k];
                else if (mode == 1) v = MO[a * N + k] + M[(a - 1) * N + k + 1];
                else v = M[(a - 1) * N + k];
            }
            Rs[kk][r] = v;
        }
        // columns b: QM1[k+1, b] (mode 0), QM1[b+1, k] (1), QMout[k, b] + X[k-1, b+1] (2)
#pragma unroll
        for (int q = 0; q < 8; ++q) {
            const int e = tid + 128 * q, c = e >> 4, kk = e & 15, k = kb + kk, b = b0 + c;
            double v = 0.0;
            if (k <= k1 && b <= n && c < 2 * PF_T - 1) {
                if (mode == 0) v = M1[b * N + k + 1];
                else if (mode == 1) v = M1[(b + 1) * N + k];
                else v = MO[b * N + k] + M1[(b + 1) * N + k - 1];
            }
            Cs[kk][c] = v;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < PF_KC; ++kk) {
            double r[4], c[4];
#pragma unroll
            for (int q = 0; q < 4; ++q) r[q] = Rs[kk][ty + 8 * q];
#pragma unroll
            for (int p = 0; p < 4; ++p) c[p] = Cs[kk][tx + 16 * p];
#pragma unroll
            for (int q = 0; q < 4; ++q)
#pragma unroll
                for (int p = 0; p < 4; ++p) acc[q][p] = fma(r[q], c[p], acc[q][p]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int q = 0; q < 4; ++q)
#pragma unroll
        for (int p = 0; p < 4; ++p) {
            const int a = a0 + ty + 8 * q, b = b0 + tx + 16 * p, d = b - a;
            if (b > n || d < max(D0, 1) || d >= D0 + PF_T) continue;
            if (mode == 0) A[b * N + a] = acc[q][p];
            else if (mode == 1) MO[a * N + b] = acc[q][p];
            else MO[b * N + a] = acc[q][p];
        }
}

// The inside pass over diagonals d_first .. d_last (ascending, one band's): QB, QI, QM1, QM, G and H of every
// cell; top[s] the largest value (as the bits of a positive double), span[s] the smallest span of a cell above BIG.
extern "C" __global__ void __launch_bounds__(32 * PF_WARPS, PF_MIN_BLOCKS)
pf_inside(const double* __restrict__ X, const double* __restrict__ HP, const signed char* __restrict__ Sall,
          const double* __restrict__ SLall, const double* __restrict__ SRall, const double* __restrict__ SPECall,
          const double* __restrict__ Lall, const long long* __restrict__ off1, const long long* __restrict__ off2,
          const int* __restrict__ lens, const int* __restrict__ active, double* Aall, double* Mall, double* M1all,
          double* QIall, double* HVall, unsigned long long* top, int* span, int d_first, int d_last) {
    const int s = blockIdx.y;
    if (!active[s]) return;
    PF_SHARED_SETUP
    const PfSeq q = pf_seq(Sall, SLall, SRall, off1, lens, s);
    const signed char* S = q.S;
    const int n = q.n;
    const long long N = q.N;
    const double* SPEC = SPECall + 7 * off1[s];
    const double* L = Lall + off1[s];
    double* A = Aall + off2[s];
    double* M = Mall + off2[s];
    double* M1 = M1all + off2[s];
    double* QI = QIall + QW * off1[s];
    double* H = HVall + 2 * off1[s];
    const int lane = threadIdx.x & 31;
    const int warp0 = blockIdx.x * PF_WARPS + (threadIdx.x >> 5);
    const int warps = gridDim.x * PF_WARPS;
    const double mlb = X[PF_MLB];
    for (int d = d_first; d <= d_last; ++d) {
        for (int i = 1 + warp0; i <= n - d; i += warps) {
            const int j = i + d;
            const int t = pf_type(sPT, S, n, i, j);
            const double* SLi = q.SL + i * SLW;
            const double* SRj = q.SR + j * SLW;
            double qb = 0.0;
            if (t) {
                const int si1 = S[i + 1], sj1 = S[j - 1];
                const int tr = t;
                double acc = 0.0;
                // generic interior loops (u1, u2 >= 2, GS's list in order of u1 + u2): a row of QI each
                {
                    const int smax = min(MAXLOOP, d - 6);
                    const int cnt = smax >= 4 ? (smax - 3) * (smax - 2) / 2 : 0;
                    double g = 0.0;
#pragma unroll 4
                    for (int k = lane; k < cnt; k += 32) {
                        const int gl = sGL[k];
                        const int u1 = gl >> 5, u2 = gl & 31;
                        g += QI[QID(i + 1 + u1, d - 2 - u1 - u2)] * sGS[k] * SLi[u1] * SRj[u2];
                    }
                    acc += g * TAB3(PF_MMI, tr, si1, sj1);
                }
                // the other interior loops, one lane each, and the hairpin
                {
                    int t2;
                    switch (lane) {
                    case 0: {
                        const int u = d - 1;
                        double w = u <= 6 ? SPEC[i * 7 + u] : -1.0;
                        if (w < 0.0) w = u == 3 ? HP[3] * X[PF_AU + t] : HP[u] * TAB3(PF_MMH, t, si1, sj1);
                        const double x = -(L[j] - L[i - 1]);
                        acc += w * (x > -700.0 ? exp(x) : 0.0);
                        break;
                    }
                    case 1:
                        t2 = pf_type(sPT, S, n, i + 1, j - 1);
                        if (t2) acc += X[PF_STACK + t * 8 + sRT[t2]] * A[(i + 1) * N + j - 1] * SLi[0] * SRj[0];
                        break;
                    case 2:
                        t2 = pf_type(sPT, S, n, i + 2, j - 1);
                        if (t2) acc += X[PF_BULGE + 1] * X[PF_STACK + t * 8 + sRT[t2]] * A[(i + 2) * N + j - 1] *
                                       SLi[1] * SRj[0];
                        break;
                    case 3:
                        t2 = pf_type(sPT, S, n, i + 1, j - 2);
                        if (t2) acc += X[PF_BULGE + 1] * X[PF_STACK + t * 8 + sRT[t2]] * A[(i + 1) * N + j - 2] *
                                       SLi[0] * SRj[1];
                        break;
                    case 4:
                        t2 = pf_type(sPT, S, n, i + 2, j - 2);
                        if (t2) acc += X[PF_INT11 + ((t * 8 + sRT[t2]) * 5 + si1) * 5 + sj1] *
                                       A[(i + 2) * N + j - 2] * SLi[1] * SRj[1];
                        break;
                    case 5:
                        t2 = pf_type(sPT, S, n, i + 2, j - 3);
                        if (t2) acc += X[PF_INT21 + (((t * 8 + sRT[t2]) * 5 + si1) * 5 + S[j - 2]) * 5 + sj1] *
                                       A[(i + 2) * N + j - 3] * SLi[1] * SRj[2];
                        break;
                    case 6:
                        t2 = pf_type(sPT, S, n, i + 3, j - 2);
                        if (t2) acc += X[PF_INT21 + (((sRT[t2] * 8 + t) * 5 + sj1) * 5 + si1) * 5 + S[i + 2]] *
                                       A[(i + 3) * N + j - 2] * SLi[2] * SRj[1];
                        break;
                    case 7:
                        t2 = pf_type(sPT, S, n, i + 3, j - 3);
                        if (t2) acc += X[PF_INT22 + ((((t * 8 + sRT[t2]) * 5 + si1) * 5 + S[i + 2]) * 5 + S[j - 2]) *
                                         5 + sj1] * A[(i + 3) * N + j - 3] * SLi[2] * SRj[2];
                        break;
                    case 8:
                        t2 = pf_type(sPT, S, n, i + 3, j - 4);
                        if (t2) acc += X[PF_INTERIOR + 5] * X[PF_NINIO + 1] * TAB3(PF_MM23, t, si1, sj1) *
                                       TAB3(PF_MM23, sRT[t2], S[j - 3], S[i + 2]) * A[(i + 3) * N + j - 4] *
                                       SLi[2] * SRj[3];
                        break;
                    case 9:
                        t2 = pf_type(sPT, S, n, i + 4, j - 3);
                        if (t2) acc += X[PF_INTERIOR + 5] * X[PF_NINIO + 1] * TAB3(PF_MM23, t, si1, sj1) *
                                       TAB3(PF_MM23, sRT[t2], S[j - 2], S[i + 3]) * A[(i + 4) * N + j - 3] *
                                       SLi[3] * SRj[2];
                        break;
                    default:
                        break;
                    }
                    // bulges of 2 or more: lane u - 2
                    const int u = lane + 2;
                    if (u <= min(MAXLOOP, d - TURN - 3)) {
                        const double w = X[PF_BULGE + u] * X[PF_AU + t];
                        t2 = pf_type(sPT, S, n, i + 1 + u, j - 1);
                        if (t2) acc += w * X[PF_AU + t2] * A[(i + 1 + u) * N + j - 1] * SLi[u] * SRj[0];
                        t2 = pf_type(sPT, S, n, i + 1, j - 1 - u);
                        if (t2) acc += w * X[PF_AU + t2] * A[(i + 1) * N + j - 1 - u] * SLi[0] * SRj[u];
                    }
                    // 1xn and nx1 (n >= 3): lane u - 3
                    const int v = lane + 3;
                    if (v <= min(MAXLOOP - 1, d - TURN - 4)) {
                        const double w = X[PF_INTERIOR + v + 1] * X[PF_NINIO + v - 1] * TAB3(PF_MM1N, t, si1, sj1);
                        const int qq = j - 1 - v;
                        t2 = pf_type(sPT, S, n, i + 2, qq);
                        if (t2) acc += w * TAB3(PF_MM1N, sRT[t2], S[qq + 1], si1) * A[(i + 2) * N + qq] * SLi[1] *
                                       SRj[v];
                        const int p = i + 1 + v;
                        t2 = pf_type(sPT, S, n, p, j - 2);
                        if (t2) acc += w * TAB3(PF_MM1N, sRT[t2], sj1, S[p - 1]) * A[p * N + j - 2] * SLi[v] * SRj[1];
                    }
                }
                // multiloops closed by i·j: Mc G[i+1, j-1] (A's lower triangle, 0 where never written)
                if (lane == 0) acc += A[(j - 1) * N + i + 1] * X[PF_CLO + (t * 5 + sj1) * 5 + si1] * SLi[0] * SRj[0];
                qb = warp_sum(acc);
            }
            // QM1 and QM
            double m1 = M1[i * N + j - 1] * mlb * SRj[0];
            if (t) {
                const int a = i >= 2 ? S[i - 1] : NONE, b = j < n ? S[j + 1] : NONE;
                m1 += qb * X[PF_MLS + (t * 6 + a) * 6 + b];
            }
            // G[i, j]: k in [i + TURN + 1, j - TURN - 2], the band's bulk (pf_band) in A's lower triangle where
            // its tile has one, the rest here
            const int a0 = 1 + PF_T * ((i - 1) / PF_T), D0 = d - d % PF_T;
            const int kl = a0 + 2 * PF_T - 2, kh = a0 + D0 - 1;
            const int k_lo = i + TURN + 1, k_hi = j - TURN - 2;
            const bool bulk = kh >= kl;
            double g = 0.0;
            const int k_mid = bulk ? min(kl - 1, k_hi) : k_hi;
            for (int k = k_lo + lane; k <= k_mid; k += 32) g += M[i * N + k] * M1[j * N + k + 1];
            if (bulk)
                for (int k = max(kh + 1, k_lo) + lane; k <= k_hi; k += 32) g += M[i * N + k] * M1[j * N + k + 1];
            g = warp_sum(g) + (bulk && lane == 0 ? A[j * N + i] : 0.0);    // lane 0 alone writes the cell
            const double h = mlb * SLi[0] * (M1[(i + 1) * N + j] + H[((d - 1) & 1) * N + i + 1]);
            const double m = g + h + m1;
            if (lane == 0) {
                if (t) A[i * N + j] = qb;
                QI[QID(i, d)] = t ? qb * TAB3(PF_MMI, sRT[t], S[j + 1], S[i - 1]) : 0.0;
                M1[i * N + j] = m1;
                M1[j * N + i] = m1;
                M[i * N + j] = m;
                M[j * N + i] = m;
                A[j * N + i] = g;
                H[(d & 1) * N + i] = h;
                const double big = fmax(qb, m);
                if (!(big <= BIG)) {                                    // NaN too
                    atomicMax(top + s, __double_as_longlong(isnan(big) ? __longlong_as_double(0x7ff0000000000000ll) : big));
                    atomicMin(span + s, d + 1);
                }
            }
        }
        if (d < d_last) __syncthreads();
    }
}

// The exterior loop: Q5[j] (ViennaRNA's q[1, j]) and Q3[i] (q[i, n]), a block a sequence; Z[2s] = Q5[n],
// Z[2s+1] = Q3[1].
extern "C" __global__ void __launch_bounds__(256)
pf_exterior(const double* __restrict__ X, const signed char* __restrict__ Sall, const double* __restrict__ SLall,
            const double* __restrict__ SRall, const long long* __restrict__ off1, const long long* __restrict__ off2,
            const int* __restrict__ lens, const int* __restrict__ active, const double* __restrict__ Aall,
            double* Q5all, double* Q3all, double* Z) {
    const int s = blockIdx.x;
    if (!active[s]) return;
    PF_SHARED_PT
    __shared__ double red[2][8];
    const PfSeq q = pf_seq(Sall, SLall, SRall, off1, lens, s);
    const signed char* S = q.S;
    const int n = q.n;
    const long long N = q.N;
    const double* A = Aall + off2[s];
    double* Q5 = Q5all + off1[s];
    double* Q3 = Q3all + off1[s];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (threadIdx.x == 0) {
        Q5[0] = 1.0;
        Q3[n + 1] = 1.0;
    }
    __syncthreads();
    for (int k = 1; k <= n; ++k) {
        const int j = k, i0 = n + 1 - k;
        double a = 0.0, b = 0.0;
        for (int i = 1 + threadIdx.x; i < j - TURN; i += blockDim.x) {
            const int t = pf_type(sPT, S, n, i, j);
            if (t) a += Q5[i - 1] * A[i * N + j] * X[PF_EXT + (t * 6 + (i >= 2 ? S[i - 1] : NONE)) * 6 + (j < n ? S[j + 1] : NONE)];
        }
        for (int jj = i0 + TURN + 1 + threadIdx.x; jj <= n; jj += blockDim.x) {
            const int t = pf_type(sPT, S, n, i0, jj);
            if (t) b += A[i0 * N + jj] * X[PF_EXT + (t * 6 + (i0 >= 2 ? S[i0 - 1] : NONE)) * 6 + (jj < n ? S[jj + 1] : NONE)] *
                        Q3[jj + 1];
        }
        a = warp_sum(a);
        b = warp_sum(b);
        if (lane == 0) {
            red[0][warp] = a;
            red[1][warp] = b;
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            double x = 0.0, y = 0.0;
            for (int w = 0; w < (int)(blockDim.x >> 5); ++w) {
                x += red[0][w];
                y += red[1][w];
            }
            Q5[j] = Q5[j - 1] * q.SR[j * SLW] + x;
            Q3[i0] = Q3[i0 + 1] * q.SL[i0 * SLW] + y;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        Z[2 * s] = Q5[n];
        Z[2 * s + 1] = Q3[1];
    }
}

// The outside pass over diagonals d_first .. d_last (descending, one band's): QMout, QM1out, QBout, OI, V and X;
// bad[s] set where a probability is not a number in [0, 1 + 1e-9].
extern "C" __global__ void __launch_bounds__(32 * PF_WARPS, PF_MIN_BLOCKS)
pf_outside(const double* __restrict__ X, const signed char* __restrict__ Sall, const double* __restrict__ SLall,
           const double* __restrict__ SRall, const long long* __restrict__ off1, const long long* __restrict__ off2,
           const int* __restrict__ lens, const int* __restrict__ active, double* Aall, double* Mall, double* M1all,
           double* MOall, double* QIall, double* HVall, double* O1all,
           const double* __restrict__ Q5all, const double* __restrict__ Q3all, const double* __restrict__ Z,
           int* bad, int d_first, int d_last) {
    const int s = blockIdx.y;
    if (!active[s]) return;
    PF_SHARED_SETUP
    const PfSeq q = pf_seq(Sall, SLall, SRall, off1, lens, s);
    const signed char* S = q.S;
    const int n = q.n;
    const long long N = q.N;
    double* A = Aall + off2[s];
    double* M = Mall + off2[s];                 // QM below the diagonal (read), X above it (written)
    double* M1 = M1all + off2[s];               // QM1 above the diagonal (read), X below it (written)
    double* MO = MOall + off2[s];
    double* O1 = O1all + 2 * off1[s];           // QM1out, two diagonals
    double* OI = QIall + QW * off1[s];          // OI, QW diagonals (QID)
    double* V = HVall + 2 * off1[s];
    const double* Q5 = Q5all + off1[s];
    const double* Q3 = Q3all + off1[s];
    const double z = Z[2 * s];
    const int lane = threadIdx.x & 31;
    const int warp0 = blockIdx.x * PF_WARPS + (threadIdx.x >> 5);
    const int warps = gridDim.x * PF_WARPS;
    const double mlb = X[PF_MLB];
    for (int d = d_first; d >= d_last; --d) {
        for (int i = 1 + warp0; i <= n - d; i += warps) {
            const int j = i + d;
            // QMout[i, j]: QM[i, l] = ... QM[i, j] QM1[j+1, l], QB[i-1, l+1] = Mc ... QM[i, j] QM1[j+1, l]; l in
            // [j + 1 + TURN, n], the band's bulk (pf_band, at MO[i, j]) where its tile has one, the rest here
            const int a0 = 1 + PF_T * ((i - 1) / PF_T), E = d - d % PF_T + PF_T;
            const int ll = a0 + PF_T - 1 + E, hh = a0 - PF_T;
            const int l_hi = ll <= n ? ll - 1 : n;
            double mo = 0.0;
#pragma unroll 4
            for (int l = j + 1 + TURN + lane; l <= l_hi; l += 32)
                mo += (MO[i * N + l] + M[(i - 1) * N + l + 1]) * M1[(j + 1) * N + l];
            mo = warp_sum(mo) + (ll <= n && lane == 0 ? MO[i * N + j] : 0.0);    // lane 0 alone writes the cell
            // QM1out[i, j]: QM1[i, j+1] = QM1[i, j] b + ...; QB[h-1, j+1] = Mc ... QM[h, i-1] QM1[i, j]; QM[h, j] =
            // ... QM[h, i-1] QM1[i, j] (h in [1, i - 1]: the band's bulk at MO[j, i] where its tile has one) and
            // U(h, i) QM1[i, j] (V)
            double o1 = 0.0;
#pragma unroll 4
            for (int h = (hh >= 1 ? hh + 1 : 1) + lane; h < i; h += 32)
                o1 += M[(i - 1) * N + h] * (MO[j * N + h] + M1[(j + 1) * N + h - 1]);
            const double v = mlb * q.SL[(i - 1) * SLW] * (MO[(i - 1) * N + j] + V[((d + 1) & 1) * N + i - 1]);
            o1 = warp_sum(o1) + (hh >= 1 && lane == 0 ? MO[j * N + i] : 0.0) + v + mo +
                 (j < n ? O1[((d + 1) & 1) * N + i] : 0.0) * mlb * q.SR[(j + 1) * SLW];
            const int t = pf_type(sPT, S, n, i, j);
            double ob = 0.0;
            if (t) {
                const int t2 = sRT[t];
                const int sp1 = S[i - 1], sq1 = S[j + 1];
                const double* slj = q.SL + (j + 1) * SLW;
                const double* sri = q.SR + (i - 1) * SLW;      // the stretch i-1-u .. i-1: SL[i-1-u, u], a run
                double acc = 0.0;
                // generic loops: the enclosing pair h·l, h = i-1-u1, l = j+1+u2
                {
                    double g = 0.0;
#pragma unroll 4
                    for (int k = lane; k < NGEN; k += 32) {
                        const int gl = sGL[k];
                        const int u1 = gl >> 5, u2 = gl & 31;
                        const int h = i - 1 - u1, l = j + 1 + u2;
                        if (h >= 1 && l <= n) g += OI[QID(h, d + 2 + u1 + u2)] * sGS[k] * sri[u1] * slj[u2];
                    }
                    acc += g * TAB3(PF_MMI, t2, sq1, sp1);
                }
                int th;
                switch (lane) {
                case 0: {
                    const int a = i >= 2 ? sp1 : NONE, b = j < n ? sq1 : NONE;
                    acc += Q5[i - 1] * X[PF_EXT + (t * 6 + a) * 6 + b] * Q3[j + 1] + o1 * X[PF_MLS + (t * 6 + a) * 6 + b];
                    break;
                }
                case 1:
                    th = pf_type(sPT, S, n, i - 1, j + 1);
                    if (th) acc += X[PF_STACK + th * 8 + t2] * A[(j + 1) * N + i - 1] * q.SL[(i - 1) * SLW] * slj[0];
                    break;
                case 2:
                    th = pf_type(sPT, S, n, i - 2, j + 1);
                    if (th) acc += X[PF_BULGE + 1] * X[PF_STACK + th * 8 + t2] * A[(j + 1) * N + i - 2] *
                                   q.SL[(i - 2) * SLW + 1] * slj[0];
                    break;
                case 3:
                    th = pf_type(sPT, S, n, i - 1, j + 2);
                    if (th) acc += X[PF_BULGE + 1] * X[PF_STACK + th * 8 + t2] * A[(j + 2) * N + i - 1] *
                                   q.SL[(i - 1) * SLW] * slj[1];
                    break;
                case 4:
                    th = pf_type(sPT, S, n, i - 2, j + 2);
                    if (th) acc += X[PF_INT11 + ((th * 8 + t2) * 5 + sp1) * 5 + sq1] * A[(j + 2) * N + i - 2] *
                                   q.SL[(i - 2) * SLW + 1] * slj[1];
                    break;
                case 5:
                    th = pf_type(sPT, S, n, i - 2, j + 3);
                    if (th) acc += X[PF_INT21 + (((th * 8 + t2) * 5 + sp1) * 5 + sq1) * 5 + S[j + 2]] *
                                   A[(j + 3) * N + i - 2] * q.SL[(i - 2) * SLW + 1] * slj[2];
                    break;
                case 6:
                    th = pf_type(sPT, S, n, i - 3, j + 2);
                    if (th) acc += X[PF_INT21 + (((t2 * 8 + th) * 5 + sq1) * 5 + S[i - 2]) * 5 + sp1] *
                                   A[(j + 2) * N + i - 3] * q.SL[(i - 3) * SLW + 2] * slj[1];
                    break;
                case 7:
                    th = pf_type(sPT, S, n, i - 3, j + 3);
                    if (th) acc += X[PF_INT22 + ((((th * 8 + t2) * 5 + S[i - 2]) * 5 + sp1) * 5 + sq1) * 5 + S[j + 2]] *
                                   A[(j + 3) * N + i - 3] * q.SL[(i - 3) * SLW + 2] * slj[2];
                    break;
                case 8:
                    th = pf_type(sPT, S, n, i - 3, j + 4);
                    if (th) acc += X[PF_INTERIOR + 5] * X[PF_NINIO + 1] * TAB3(PF_MM23, t2, sq1, sp1) *
                                   TAB3(PF_MM23, th, S[i - 2], S[j + 3]) * A[(j + 4) * N + i - 3] *
                                   q.SL[(i - 3) * SLW + 2] * slj[3];
                    break;
                case 9:
                    th = pf_type(sPT, S, n, i - 4, j + 3);
                    if (th) acc += X[PF_INTERIOR + 5] * X[PF_NINIO + 1] * TAB3(PF_MM23, t2, sq1, sp1) *
                                   TAB3(PF_MM23, th, S[i - 3], S[j + 2]) * A[(j + 3) * N + i - 4] *
                                   q.SL[(i - 4) * SLW + 3] * slj[2];
                    break;
                default:
                    break;
                }
                {
                    const int u = lane + 2;                             // bulges of 2 or more
                    if (u <= MAXLOOP) {
                        const double w = X[PF_BULGE + u] * X[PF_AU + t];
                        th = pf_type(sPT, S, n, i - 1 - u, j + 1);
                        if (th) acc += w * X[PF_AU + th] * A[(j + 1) * N + i - 1 - u] * sri[u] * slj[0];
                        th = pf_type(sPT, S, n, i - 1, j + 1 + u);
                        if (th) acc += w * X[PF_AU + th] * A[(j + 1 + u) * N + i - 1] * q.SL[(i - 1) * SLW] * slj[u];
                    }
                    const int v = lane + 3;                             // 1xn, nx1
                    if (v < MAXLOOP) {
                        const double w = X[PF_INTERIOR + v + 1] * X[PF_NINIO + v - 1] * TAB3(PF_MM1N, t2, sq1, sp1);
                        const int l = j + 1 + v;
                        th = pf_type(sPT, S, n, i - 2, l);
                        if (th) acc += w * TAB3(PF_MM1N, th, sp1, S[l - 1]) * A[l * N + i - 2] * q.SL[(i - 2) * SLW + 1] * slj[v];
                        const int h = i - 1 - v;
                        th = pf_type(sPT, S, n, h, j + 2);
                        if (th) acc += w * TAB3(PF_MM1N, th, S[h + 1], sq1) * A[(j + 2) * N + h] * sri[v] * slj[1];
                    }
                }
                ob = warp_sum(acc);
            }
            if (lane == 0) {
                MO[i * N + j] = mo;
                MO[j * N + i] = mo;
                O1[(d & 1) * N + i] = o1;
                V[(d & 1) * N + i] = v;
                double x = 0.0;                                     // every cell's: QM's and QM1's stale there
                OI[QID(i, d)] = t ? ob * TAB3(PF_MMI, t, S[i + 1], S[j - 1]) : 0.0;
                if (t) {
                    A[j * N + i] = ob;
                    x = ob * X[PF_CLO + (t * 5 + S[j - 1]) * 5 + S[i + 1]] * q.SL[i * SLW] * q.SR[j * SLW];
                    const double p = A[i * N + j] * ob / z;        // pf_summary's P[i, j], the same product
                    if (!(p <= 1.0 + 1e-9)) bad[s] = 1;
                }
                M[i * N + j] = x;
                M1[j * N + i] = x;
            }
        }
        if (d > d_last) __syncthreads();
    }
}

// RNAfold -p's pseudo-bracket character of a nucleotide (ViennaRNA's vrna_bpp_symbol; cpu.partition._bpp_symbol):
// unpaired with probability p0, paired to a partner 3' of it with p1 and 5' of it with p2, single precision.
__device__ __forceinline__ unsigned char pf_symbol(float p0, float p1, float p2) {
    if ((double)p0 > 0.667) return '.';
    if ((double)p1 > 0.667) return '(';
    if ((double)p2 > 0.667) return ')';
    const float s = __fadd_rn(p1, p2);
    if (s > p0) {
        if ((double)__fdiv_rn(p1, s) > 0.667) return '{';
        if ((double)__fdiv_rn(p2, s) > 0.667) return '}';
        return '|';
    }
    if (p0 > s) return ',';
    return ':';
}

// P[i, j] (i < j) = QB[i, j] QBout[i, j] / Z, as pf_outside checks it; 0 where i·j cannot pair (QB 0)
__device__ __forceinline__ double pf_prob(const double* A, long long N, int i, int j, double z) {
    return A[i * N + j] * A[j * N + i] / z;
}

// What the host reads of the probabilities (pf_prob), blockIdx.y a sequence, a thread a nucleotide j (at
// off1[s] + j of each array): its unpaired probability; the centroid's character (pairs above 0.5, over the
// host's '.') and RNAfold -p's (cpu.partition.pseudo_bracket: the sums in single precision in the same order);
// over its partners i < j the terms of the ensemble diversity, p (1 - p), and of the centroid's distance, 1 - p
// above 0.5 and p below; the pairs (j, i > j) of probability at least lo (counts), which pf_pairs lists.
extern "C" __global__ void __launch_bounds__(256)
pf_summary(const long long* __restrict__ off1, const long long* __restrict__ off2, const int* __restrict__ lens,
           const double* __restrict__ Aall, const double* __restrict__ Z, double lo, double* unpaired,
           unsigned char* centroid, unsigned char* pseudo, double* diversity, double* distance, long long* counts) {
    const int s = blockIdx.y;
    const int n = lens[s];
    const long long N = n + 2, o = off1[s];
    const double* A = Aall + off2[s];
    const double z = Z[2 * s];
    for (int j = 1 + blockIdx.x * blockDim.x + threadIdx.x; j <= n; j += gridDim.x * blockDim.x) {
        float p0 = 1.0f, p1 = 0.0f, p2 = 0.0f;
        double paired = 0.0, div = 0.0, dist = 0.0;
        for (int i = 1; i < j; ++i) {
            const double x = pf_prob(A, N, i, j, z);
            const float f = (float)x;
            p2 = __fadd_rn(p2, f);
            p0 = __fsub_rn(p0, f);
            paired += x;
            div += x * (1.0 - x);
            if (x > 0.5) {
                dist += 1.0 - x;
                centroid[o + i] = '(';
                centroid[o + j] = ')';
            } else {
                dist += x;
            }
        }
        long long c = 0;
        for (int i = j + 1; i <= n; ++i) {
            const double x = pf_prob(A, N, j, i, z);
            const float f = (float)x;
            p1 = __fadd_rn(p1, f);
            p0 = __fsub_rn(p0, f);
            paired += x;
            c += x >= lo;
        }
        unpaired[o + j] = 1.0 - paired;
        pseudo[o + j] = pf_symbol(p0, p1, p2);
        diversity[o + j] = div;
        distance[o + j] = dist;
        counts[o + j] = c;
    }
}

// The pairs (i, j) of probability at least lo, i ascending then j, of every sequence: row i's at first[off1[s] + i]
// (pf_summary's counts summed before it).
extern "C" __global__ void __launch_bounds__(256)
pf_pairs(const long long* __restrict__ off1, const long long* __restrict__ off2, const int* __restrict__ lens,
         const double* __restrict__ Aall, const double* __restrict__ Z, double lo, const long long* __restrict__ first,
         int* I, int* J, double* p) {
    const int s = blockIdx.y;
    const int n = lens[s];
    const long long N = n + 2, o = off1[s];
    const double* A = Aall + off2[s];
    const double z = Z[2 * s];
    for (int i = 1 + blockIdx.x * blockDim.x + threadIdx.x; i <= n; i += gridDim.x * blockDim.x) {
        long long k = first[o + i];
        for (int j = i + 1; j <= n; ++j) {
            const double x = pf_prob(A, N, i, j, z);
            if (x >= lo) {
                I[k] = i;
                J[k] = j;
                p[k] = x;
                ++k;
            }
        }
    }
}
