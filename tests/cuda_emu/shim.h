// CPU emulation of the CUDA built-ins rnapipe/gpu/kernels/partition.cu uses, for tests/test_partition_emulated.py: a
// block's threads as fibers (ucontext) taken in turn by one OS thread, __syncthreads as a barrier that puts a fiber
// aside until every thread of the block has arrived, warp shuffles through a per-warp buffer and barrier, __shared__
// as static (one block runs at a time). For checking results, not for speed.
#pragma once
#include <ucontext.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <utility>
#include <vector>
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __shared__ static
struct Dim { unsigned x = 1, y = 1, z = 1; };
inline Dim threadIdx;                  // the running fiber's (set at each switch)
inline Dim blockIdx, blockDim, gridDim;

// The fibers of the block being run, and the scheduler's context (launch below).
struct EmuBarrier;
struct EmuFiber {
    ucontext_t ctx;
    std::unique_ptr<char[]> stack;
    bool done = false;
    EmuBarrier* wait_on = nullptr;     // set aside on this barrier until its phase passes wait_phase
    unsigned long wait_phase = 0;
};
inline std::vector<EmuFiber> g_fibers;
inline unsigned g_current = 0;
inline ucontext_t g_scheduler;
inline void emu_yield() { swapcontext(&g_fibers[g_current].ctx, &g_scheduler); }

// A barrier of `expected` arrivals per phase (std::barrier's arrive / arrive_and_wait): a waiting fiber is taken
// again only once its phase has passed.
struct EmuBarrier {
    int expected, count = 0;
    unsigned long phase = 0;
    explicit EmuBarrier(std::ptrdiff_t n) : expected((int)n) {}
    void arrive() {
        if (++count == expected) {
            count = 0;
            ++phase;
        }
    }
    void arrive_and_wait() {
        const unsigned long p = phase;
        arrive();
        if (phase != p) return;
        g_fibers[g_current].wait_on = this;
        g_fibers[g_current].wait_phase = p;
        emu_yield();
    }
};
inline EmuBarrier* g_block_barrier = nullptr;
inline std::vector<EmuBarrier*> g_warp_barriers;
inline double g_shfl[4096];
inline void __syncthreads() { g_block_barrier->arrive_and_wait(); }
inline double __shfl_xor_sync(unsigned, double v, int o) {
    const int t = threadIdx.x;
    EmuBarrier* b = g_warp_barriers[t / 32];
    g_shfl[t] = v;
    b->arrive_and_wait();
    const double r = g_shfl[t ^ o];
    b->arrive_and_wait();
    return r;
}
inline long long __double_as_longlong(double x) { long long r; std::memcpy(&r, &x, 8); return r; }
inline double __longlong_as_double(long long x) { double r; std::memcpy(&r, &x, 8); return r; }
inline unsigned long long atomicMax(unsigned long long* p, long long v) {
    unsigned long long old = *p;
    if ((unsigned long long)v > old) *p = (unsigned long long)v;
    return old;
}
inline int atomicMin(int* p, int v) {
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

inline std::function<void()> g_fiber_body;    // the kernel call every fiber of the launch makes
inline void emu_fiber_entry() {
    g_fiber_body();
    g_fibers[g_current].done = true;
}

template <typename... A>
void launch(void (*k)(A...), unsigned gx, unsigned gy, unsigned gz, unsigned bx, void** p) {
    constexpr std::size_t STACK = 1 << 20;     // a fiber's stack: allocated, only the pages its frames use touched
    gridDim = {gx, gy, gz};
    blockDim = {bx, 1, 1};
    EmuBarrier bar((std::ptrdiff_t)bx);
    g_block_barrier = &bar;
    std::vector<std::unique_ptr<EmuBarrier>> wb;
    g_warp_barriers.clear();
    for (unsigned w = 0; w < (bx + 31) / 32; ++w) {
        wb.push_back(std::make_unique<EmuBarrier>((std::ptrdiff_t)std::min(32u, bx - 32 * w)));
        g_warp_barriers.push_back(wb.back().get());
    }
    g_fiber_body = [k, p] { call_with(k, p, std::index_sequence_for<A...>{}); };
    g_fibers = std::vector<EmuFiber>(bx);
    for (auto& f : g_fibers) f.stack.reset(new char[STACK]);
    // the blocks one after another (a block's statics, __shared__, are then its own), its threads in turn
    for (unsigned z = 0; z < gz; ++z)
        for (unsigned y = 0; y < gy; ++y)
            for (unsigned x = 0; x < gx; ++x) {
                blockIdx = {x, y, z};
                for (auto& f : g_fibers) {
                    getcontext(&f.ctx);
                    f.ctx.uc_stack.ss_sp = f.stack.get();
                    f.ctx.uc_stack.ss_size = STACK;
                    f.ctx.uc_link = &g_scheduler;
                    makecontext(&f.ctx, emu_fiber_entry, 0);
                    f.done = false;
                    f.wait_on = nullptr;
                }
                for (unsigned left = bx; left > 0;) {
                    bool ran = false;
                    for (unsigned t = 0; t < bx; ++t) {
                        EmuFiber& f = g_fibers[t];
                        if (f.done || (f.wait_on && f.wait_on->phase == f.wait_phase)) continue;
                        f.wait_on = nullptr;
                        g_current = t;
                        threadIdx = {t, 0, 0};
                        swapcontext(&g_scheduler, &f.ctx);
                        ran = true;
                        if (f.done) --left;
                    }
                    if (!ran) {
                        std::fprintf(stderr, "emulated block (%u, %u, %u): every thread waits (a barrier no one "
                                     "completes)\n", x, y, z);
                        std::abort();
                    }
                }
            }
    g_fibers.clear();
}

// run_<name>(grid x, y, z, block x, params) for ctypes: the params as cudaLaunchKernel takes them, pointers to the
// arguments (emu.py's Kernel)
#define EMU_EXPORT(name) \
    extern "C" void run_##name(unsigned gx, unsigned gy, unsigned gz, unsigned bx, void** p) { \
        launch(name, gx, gy, gz, bx, p);                                                        \
    }
