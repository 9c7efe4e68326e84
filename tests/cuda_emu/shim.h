// CPU emulation of the CUDA built-ins rnapipe/gpu/kernels/partition.cu uses, for tests/test_partition_emulated.py: a
// block's threads as std::threads, __syncthreads as a barrier, warp shuffles through a per-warp buffer and barrier,
// atomics under a mutex, __shared__ as static (one block runs at a time). For checking results, not for speed.
#pragma once
#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __shared__ static
struct Dim { unsigned x = 1, y = 1, z = 1; };
inline thread_local Dim threadIdx;
inline Dim blockIdx, blockDim, gridDim;
inline std::barrier<>* g_block_barrier = nullptr;
inline std::vector<std::barrier<>*> g_warp_barriers;
inline double g_shfl[4096];
inline std::mutex g_atomic;
inline void __syncthreads() { g_block_barrier->arrive_and_wait(); }
inline double __shfl_xor_sync(unsigned, double v, int o) {
    const int t = threadIdx.x;
    std::barrier<>* b = g_warp_barriers[t / 32];
    g_shfl[t] = v;
    b->arrive_and_wait();
    const double r = g_shfl[t ^ o];
    b->arrive_and_wait();
    return r;
}
inline long long __double_as_longlong(double x) { long long r; std::memcpy(&r, &x, 8); return r; }
inline double __longlong_as_double(long long x) { double r; std::memcpy(&r, &x, 8); return r; }
inline unsigned long long atomicMax(unsigned long long* p, long long v) {
    std::lock_guard<std::mutex> g(g_atomic);
    unsigned long long old = *p;
    if ((unsigned long long)v > old) *p = (unsigned long long)v;
    return old;
}
inline int atomicMin(int* p, int v) {
    std::lock_guard<std::mutex> g(g_atomic);
    int old = *p;
    if (v < old) *p = v;
    return old;
}
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fmul_rn(float a, float b) { return a * b; }
using std::min; using std::max; using std::isnan; using std::exp; using std::fmax;
inline long long min(long long a, int b) { return a < b ? a : b; }
inline long long max(long long a, int b) { return a > b ? a : b; }

template <typename... A, std::size_t... I>
void call_with(void (*k)(A...), void** p, std::index_sequence<I...>) {
    k(*static_cast<std::remove_reference_t<A>*>(p[I])...);
}

template <typename... A>
void launch(void (*k)(A...), unsigned gx, unsigned gy, unsigned gz, unsigned bx, void** p) {
    gridDim = {gx, gy, gz};
    blockDim = {bx, 1, 1};
    std::barrier<> bar((std::ptrdiff_t)bx);
    g_block_barrier = &bar;
    std::vector<std::barrier<>*> wb;
    for (unsigned w = 0; w < (bx + 31) / 32; ++w)
        wb.push_back(new std::barrier<>((std::ptrdiff_t)std::min(32u, bx - 32 * w)));
    g_warp_barriers = wb;
    // bx threads take the blocks one after another (a block's statics, __shared__, are then its own)
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < bx; ++t)
        ts.emplace_back([=, &bar]() {
            threadIdx = {t, 0, 0};
            for (unsigned z = 0; z < gz; ++z)
                for (unsigned y = 0; y < gy; ++y)
                    for (unsigned x = 0; x < gx; ++x) {
                        if (t == 0) blockIdx = {x, y, z};
                        bar.arrive_and_wait();
                        call_with(k, p, std::index_sequence_for<A...>{});
                        bar.arrive_and_wait();
                    }
        });
    for (auto& th : ts) th.join();
    for (auto* b : wb) delete b;
}

// run_<name>(grid x, y, z, block x, params) for ctypes: the params as cudaLaunchKernel takes them, pointers to the
// arguments (emu.py's Kernel)
#define EMU_EXPORT(name) \
    extern "C" void run_##name(unsigned gx, unsigned gy, unsigned gz, unsigned bx, void** p) { \
        launch(name, gx, gy, gz, bx, p);                                                        \
    }
