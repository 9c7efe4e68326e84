"""Where zk_fin_lanes' intervals go: each warp's part of each interval, from clock stamps (GPU only).

    python benchmarks/zuker_fin_trace.py [--tree .] [--length 601] [--count 256]

Builds zk_fin_lanes with -DZF_TRACE (the kernel then stamps, for tile diagonal 5's first four tile rows of the first
eight sequences, each warp's clock at the start of each cell diagonal's interval and at the end of its part, before
the block's barrier), fills random sequences of one length twice with the tiled fill, and prints per warp role the
median, mean and 90th percentile of its part in cycles and how often it was the last to finish (the interval's
length is the last one's), then the block's cycles before its first interval and in all.
"""

from __future__ import annotations

import argparse
import statistics
import sys


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", default=".", help="a checkout whose rnapipe/ is imported")
    ap.add_argument("--length", type=int, default=601)
    ap.add_argument("--count", type=int, default=256)
    ap.add_argument("--int32", action="store_true", help="the window in int32 (default: in 16 bits, as fold_batch "
                    "builds it up to FIN_AUX16_MAX_N nt where the tree has FIN_AUX16)")
    args = ap.parse_args()
    sys.path.insert(0, args.tree)
    import cupy
    import numpy as np

    from rnapipe.gpu import loader
    from rnapipe.gpu import zuker as gz
    from rnapipe.gpu.zuker_tables import hc_option, rules_option, shape_option
    from zuker_gpu_fill import tiled_inputs                 # this folder's: the same sequences and launch

    L, count = args.length, args.count
    if L < 6 * gz.TILE + 1:
        raise SystemExit(f"--length must be above {6 * gz.TILE} nt (tile diagonal 5 is traced)")
    model = gz._gpu_model({})
    launch, mats, total, _ = tiled_inputs(gz, model, L, count)
    kernels = dict(gz._kernels(model))
    opts = ((f"-DZK_TILE={gz.TILE}", f"-DZK_MID_STAGES={gz.MID_STAGES}") + rules_option(model)
            + shape_option(None) + hc_option(None))
    aux16 = not args.int32 and getattr(gz, "FIN_AUX16", False)
    shared = gz.fin_lanes_shared(True) if aux16 else gz.FIN_LANES_SHARED
    if hasattr(gz, "fin_lanes_options"):
        opts += gz.fin_lanes_options(model, aux16) + ("-DZF_TRACE",)
    else:                                                 # a tree from before it (and before the terms)
        opts += ((f"-DZF_WARPS={gz.FIN_LANES_WARPS}", f"-DZF_SHARED_BYTES={shared}", "-DZF_TRACE")
                 + (gz.fin_lanes_window(True) if aux16 else ()))
    kernels["zk_fin_lanes"] = loader.function(gz.KERNELS, "zk_fin_lanes", opts, dynamic_shared=shared)
    kernels["zk_fin_lanes_shared"] = shared
    for _ in range(2):
        kernels["zk_fill_inf"]((4096,), (256,), (mats, np.int64(7 * total)))
        gz._fill_tiled(kernels, launch, L, count)
        cupy.cuda.Device().synchronize()
    W = gz.FIN_LANES_WARPS
    g = loader.module(gz.KERNELS, opts).get_global("zf_trace")
    tr = cupy.ndarray((32, 66, W, 2), dtype=cupy.uint32, memptr=g).get().astype(np.int64)
    last = np.zeros(W)
    part: list[list[int]] = [[] for _ in range(W)]
    gaps, pro, tot = [], [], []
    for t in tr:
        if t[65, 0, 0] == 0:                               # a block not traced (fewer sequences or tile rows)
            continue
        pro.append(int(t[0, :, 0].min() - t[65, :, 0].min()))
        tot.append(int(t[65, :, 1].max() - t[65, :, 0].min()))
        n = 63                                             # tile diagonal 5: every cell diagonal -31 .. 31
        for k in range(n):
            start, ends = t[k, :, 0].min(), t[k, :, 1]
            last[int(np.argmax(ends))] += 1
            for w in range(W):
                part[w].append(int(ends[w] - t[k, w, 0]))
            if k + 1 < n:
                gaps.append(int(t[k + 1, :, 0].min() - start))
    print(f"zk_fin_lanes ({'16-bit' if aux16 else 'int32'} window), {L} nt x {count}, {len(tot)} blocks traced: "
          f"block {statistics.median(tot):,.0f} cycles, "
          f"{statistics.median(pro):,.0f} before the first interval; interval median {statistics.median(gaps):,.0f}, "
          f"mean {statistics.mean(gaps):,.0f}")
    print("| warp | part median | mean | p90 | last to finish |")
    print("|---:|---:|---:|---:|---:|")
    for w in range(W):
        print(f"| {w} | {statistics.median(part[w]):,.0f} | {statistics.mean(part[w]):,.0f} | "
              f"{np.percentile(part[w], 90):,.0f} | {last[w] / last.sum():.1%} |")


if __name__ == "__main__":
    main()
