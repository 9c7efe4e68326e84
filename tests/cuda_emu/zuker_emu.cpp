// zuker.cu's kernels built for the CPU (zuker_shim.h), each behind run_<name>(grid x, y, z, block x, params), as
// emu.cpp does for partition.cu. zuker_emu.py writes zuker_emu_src.cu: zuker.cu with zk_fin_lanes' dynamic shared
// memory and named barriers given to the shim.
#include "zuker_shim.h"
#include "zuker_emu_src.cu"
#define EXPORT(name) \
    extern "C" void run_##name(unsigned gx, unsigned gy, unsigned gz, unsigned bx, void** p) { \
        launch(name, gx, gy, gz, bx, p);                                                        \
    }
EXPORT(zk_fill_block)
EXPORT(zk_fill_diag)
EXPORT(zk_exterior)
EXPORT(zk_traceback)
EXPORT(zk_mid)
EXPORT(zk_fin)
EXPORT(zk_fin_flat)
EXPORT(zk_fin_lanes)
EXPORT(zk_traceback_block)
EXPORT(zk_ext_cross)
EXPORT(zk_ext_seq)
EXPORT(zk_fill_inf)
