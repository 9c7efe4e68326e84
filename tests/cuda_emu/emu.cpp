// partition.cu's kernels built for the CPU (shim.h), each behind run_<name>(grid x, y, z, block x, params): the
// params as cudaLaunchKernel takes them, an array of pointers to the arguments.
#include "shim.h"
#include "partition.cu"
#define EXPORT(name) \
    extern "C" void run_##name(unsigned gx, unsigned gy, unsigned gz, unsigned bx, void** p) { \
        launch(name, gx, gy, gz, bx, p);                                                        \
    }
EXPORT(pf_scales)
EXPORT(pf_band)
EXPORT(pf_inside)
EXPORT(pf_exterior)
EXPORT(pf_outside)
EXPORT(pf_summary)
EXPORT(pf_pairs)
#ifdef EMU_SOLO
EXPORT(pf_inside_solo)
EXPORT(pf_outside_solo)
#endif
