// zuker.cu's kernels built for the CPU (zuker_shim.h), each behind run_<name>(grid x, y, z, block x, params), as
// emu.cpp does for partition.cu. zuker_emu.py writes zuker_emu_src.cu: zuker.cu with zk_fin_lanes' dynamic shared
// memory and named barriers given to the shim.
#include "zuker_shim.h"
#include "zuker_emu_src.cu"
EMU_EXPORT(zk_fill_block)
EMU_EXPORT(zk_fill_diag)
EMU_EXPORT(zk_exterior)
EMU_EXPORT(zk_traceback)
EMU_EXPORT(zk_mid)
EMU_EXPORT(zk_fin)
EMU_EXPORT(zk_fin_flat)
EMU_EXPORT(zk_fin_lanes)
EMU_EXPORT(zk_traceback_block)
EMU_EXPORT(zk_ext_cross)
EMU_EXPORT(zk_ext_seq)
EMU_EXPORT(zk_fill_inf)
EMU_EXPORT(zk_fill_band)
