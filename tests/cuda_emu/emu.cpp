// partition.cu's kernels built for the CPU (shim.h), each behind run_<name>(grid x, y, z, block x, params): the
// params as cudaLaunchKernel takes them, an array of pointers to the arguments.
#include "shim.h"
#include "partition.cu"
EMU_EXPORT(pf_scales)
EMU_EXPORT(pf_band)
EMU_EXPORT(pf_inside)
EMU_EXPORT(pf_exterior)
EMU_EXPORT(pf_outside)
EMU_EXPORT(pf_summary)
EMU_EXPORT(pf_pairs)
#ifdef EMU_SOLO
EMU_EXPORT(pf_inside_solo)
EMU_EXPORT(pf_outside_solo)
#endif
