// shim.h plus what rnapipe/gpu/kernels/zuker.cu uses beyond partition.cu, for tests/cuda_emu/zuker_emu.py: integer
// warp shuffles, votes and reductions, __constant__ tables, __syncwarp, the named barriers of zk_fin_lanes
// (bar.arrive / bar.sync of 64 threads: warp 0 arrives, warp w waits) and the dynamic shared memory of a block (one
// block runs at a time).
#pragma once
#include "shim.h"
#define __host__
#define __constant__
#define __align__(n) __attribute__((aligned(n)))
struct alignas(16) int4 { int x, y, z, w; };
inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }
inline int g_ivote[4096];
alignas(16) inline int emu_dyn_smem[65536];
inline EmuBarrier g_named[16] = {EmuBarrier(64), EmuBarrier(64), EmuBarrier(64), EmuBarrier(64),
                                 EmuBarrier(64), EmuBarrier(64), EmuBarrier(64), EmuBarrier(64),
                                 EmuBarrier(64), EmuBarrier(64), EmuBarrier(64), EmuBarrier(64),
                                 EmuBarrier(64), EmuBarrier(64), EmuBarrier(64), EmuBarrier(64)};
inline void emu_bar_arrive(int w) { g_named[w].arrive(); }
inline void emu_bar_sync(int w) { g_named[w].arrive_and_wait(); }
inline void __syncwarp(unsigned = 0xffffffffu) { g_warp_barriers[threadIdx.x / 32]->arrive_and_wait(); }
// every lane of the warp puts v, then reads the warp's values through f(first lane's index, own lane)
template <typename F>
inline int emu_warp(int v, F f) {
    const int t = threadIdx.x;
    EmuBarrier* b = g_warp_barriers[t / 32];
    g_ivote[t] = v;
    b->arrive_and_wait();
    const int r = f(t & ~31, t & 31);
    b->arrive_and_wait();
    return r;
}
inline int __shfl_xor_sync(unsigned, int v, int o) {
    return emu_warp(v, [o](int w0, int l) { return g_ivote[w0 + (l ^ o)]; });
}
inline int __shfl_down_sync(unsigned, int v, int o) {      // lanes past 31 - o read their own value, as on a GPU
    return emu_warp(v, [o](int w0, int l) { return g_ivote[w0 + (l + o < 32 ? l + o : l)]; });
}
inline unsigned __ballot_sync(unsigned, int p) {
    return (unsigned)emu_warp(p != 0, [](int w0, int) {
        unsigned r = 0;
        for (int l = 0; l < 32; ++l) r |= (unsigned)(g_ivote[w0 + l] != 0) << l;
        return (int)r;
    });
}
inline bool __any_sync(unsigned m, int p) { return __ballot_sync(m, p) != 0; }
inline int __reduce_min_sync(unsigned, int v) {
    return emu_warp(v, [](int w0, int) {
        int r = g_ivote[w0];
        for (int l = 1; l < 32; ++l) r = std::min(r, g_ivote[w0 + l]);
        return r;
    });
}
inline int __popc(unsigned x) { return __builtin_popcount(x); }
