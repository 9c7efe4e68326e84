"""The GPU Zuker engine's tiled fill, timed alone, for one or more checkouts side by side: zk_fin_lanes' and zk_mid's
milliseconds a batch (CUDA events round each launch), and how many zk_fin_lanes blocks an SM holds.

    python benchmarks/zuker_gpu_fill.py --trees ../old,. --lengths 601:2048,1200:1024,2500:256 --rounds 2
    python benchmarks/zuker_gpu_fill.py --variants base,ZF_NO_CHUNKS --smem-extra 20000 --carveout 72

Each (tree, variant) runs in a fresh process with that tree first on ``sys.path``; the rounds alternate the trees
(a, b, b, a, ...), so that a GPU that warms up or slows down touches all alike; each figure is the median of the
rounds' medians. In a process, per length: random ACGU sequences seeded by the length (the same for every tree), the
batch set up as ``rnapipe.gpu.zuker._fold_group`` sets it up, then the fill (zk_fill_inf, ``_fill_tiled``) four
times, the first untimed, and the median of the other three. W, the traceback and the host are not timed (see
benchmarks/zuker_gpu.py for what a user gets).

--variants: '+'-joined macro names passed as -D to zk_fin_lanes' build (``base``: none), for timing the kernel with a
stage switched off by an ``#ifdef`` of one's own; such a fill's results are wrong, so V[1][n] of the first sequence
is printed beside each time as a check that the unchanged variants agree. --smem-extra adds bytes to zk_fin_lanes'
launch (fewer blocks an SM); --warps sets its warps a block (build and launch; the roles by ZF_RESTS, ZF_SPLIT_ONLY
and ZF_SPLIT_W0, which --variants sets); --carveout sets its preferred shared-memory carve-out (percent of the
largest), the rest of the 256 KB going to L1.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
from pathlib import Path


def tiled_inputs(gz, model, L: int, count: int):
    """``count`` random ACGU sequences of ``L`` nt (seeded by L) laid out for the tiled fill's launches with
    rnapipe.gpu.zuker ``gz``: the launch arguments, the matrices' one array, its words a matrix and the matrices'
    offsets."""
    import cupy
    import numpy as np

    from rnapipe.gpu.zuker_tables import table_for

    rng = random.Random(L)
    seqs = ["".join(rng.choice("ACGU") for _ in range(L)) for _ in range(count)]
    lens = np.array([len(s) for s in seqs], dtype=np.int32)
    N = lens.astype(np.int64) + 2
    soff, moff, total = gz._offsets(N), gz._offsets(N * N), int((N * N).sum())
    mats = gz._matrices(7 * total)
    args = ((table_for(model, L), cupy.asarray(gz._codes(seqs)), cupy.asarray(soff), cupy.asarray(lens),
             cupy.asarray(moff)) + tuple(mats[m * total:(m + 1) * total] for m in range(7)))
    return args, mats, total, moff


def child(tree: str, lengths: str, variant: str, smem_extra: int, carveout: int | None, warps: int | None,
          lineinfo: bool = False, aux16: bool = False) -> None:
    """In a process with ``tree`` first on sys.path: print one JSON line per length."""
    sys.path.insert(0, tree)
    import cupy
    import numpy as np

    from rnapipe.gpu import loader
    from rnapipe.gpu import zuker as gz
    from rnapipe.gpu.zuker_tables import (
        hc_option,
        rules_option,
        shape_option,
    )

    if warps is not None:                                   # the tree's FIN_LANES_WARPS: the build's and the launch's
        gz.FIN_LANES_WARPS = warps
    model = gz._gpu_model({})
    extra = tuple(f"-D{x}" for x in variant.split("+") if x and x != "base") + (("-lineinfo",) if lineinfo else ())
    for spec in lengths.split(","):
        L, count = (int(x) for x in spec.split(":"))
        args, mats, total, moff = tiled_inputs(gz, model, L, count)
        V = mats[:total]
        kernels = dict(gz._kernels(model))
        opts = ((f"-DZK_TILE={gz.TILE}", f"-DZK_MID_STAGES={gz.MID_STAGES}") + rules_option(model)
                + shape_option(None) + hc_option(None))
        layout = gz.fin_lanes_shared(True) if aux16 else gz.FIN_LANES_SHARED     # the tree's ZF_AUX16 build
        if hasattr(gz, "fin_lanes_options"):
            lanes = gz.fin_lanes_options(model, aux16)
        else:                                             # a tree from before it (and before the terms)
            lanes = ((f"-DZF_WARPS={gz.FIN_LANES_WARPS}", f"-DZF_SHARED_BYTES={layout}")
                     + (gz.fin_lanes_window(True) if aux16 else ()))
        shared = layout + smem_extra
        fin = loader.function(gz.KERNELS, "zk_fin_lanes", opts + lanes + extra, dynamic_shared=shared)
        if carveout is not None:
            fin.preferred_shared_memory_carveout = carveout
        try:
            from cupy_backends.cuda.api import driver
            func = getattr(fin, "kernel", fin)
            blocks = driver.occupancyMaxActiveBlocksPerMultiprocessor(func.ptr, 32 * gz.FIN_LANES_WARPS, shared)
        except Exception:                                   # the attribute names differ between CuPy versions
            blocks = None
        events: list = []

        def timed(kernel, name, shared=shared, events=events):
            def call(*a, **kw):
                if "shared_mem" in kw:
                    kw["shared_mem"] = shared
                e0, e1 = cupy.cuda.Event(), cupy.cuda.Event()
                e0.record()
                kernel(*a, **kw)
                e1.record()
                events.append((name, e0, e1))
            return call

        kernels["zk_fin_lanes"] = timed(fin, "zk_fin_lanes")
        kernels["zk_mid"] = timed(kernels["zk_mid"], "zk_mid")
        runs = []
        for rep in range(4):
            events.clear()
            kernels["zk_fill_inf"]((4096,), (256,), (mats, np.int64(7 * total)))
            gz._fill_tiled(kernels, args, L, count)
            cupy.cuda.Device().synchronize()
            if rep:
                runs.append({k: sum(cupy.cuda.get_elapsed_time(e0, e1) for n, e0, e1 in events if n == k)
                             for k in ("zk_fin_lanes", "zk_mid")})
        check = int(cupy.asnumpy(V[int(moff[0]) + (L + 2) + L]))
        try:
            regs = fin.attributes.get("num_regs")
        except Exception:
            regs = None
        print(json.dumps(dict(L=L, count=count, fin=statistics.median(r["zk_fin_lanes"] for r in runs),
                              mid=statistics.median(r["zk_mid"] for r in runs), check=check, blocks=blocks,
                              regs=regs, shared=shared)), flush=True)
        del mats, V, args, kernels
        gz.release()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trees", default=".", help="comma-separated checkouts (their rnapipe/ is imported)")
    ap.add_argument("--lengths", default="601:2048,1200:1024,2500:256", help="L:count,...")
    ap.add_argument("--variants", default="base", help="comma-separated; each '+'-joined -D macro names, or base")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--smem-extra", type=int, default=0)
    ap.add_argument("--carveout", type=int, default=None)
    ap.add_argument("--warps", type=int, default=None, help="zk_fin_lanes' warps a block (the trees' FIN_LANES_WARPS)")
    ap.add_argument("--lineinfo", action="store_true",
                    help="build zk_fin_lanes with -lineinfo (for Nsight Compute; ncu_source_lines.py)")
    ap.add_argument("--aux16", action="store_true",
                    help="zk_fin_lanes' window in 16 bits as the trees' FIN_AUX16 builds it (trees that have it)")
    ap.add_argument("--child", nargs=2, metavar=("TREE", "VARIANT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], args.lengths, args.child[1], args.smem_extra, args.carveout, args.warps, args.lineinfo,
              args.aux16)
        return
    trees = [str(Path(t).resolve()) for t in args.trees.split(",")]
    variants = args.variants.split(",")
    results: dict = {}
    for rnd in range(args.rounds):
        order = trees if rnd % 2 == 0 else trees[::-1]
        for tree in order:
            for var in variants:
                cmd = [sys.executable, str(Path(__file__).resolve()), "--child", tree, var, "--lengths", args.lengths,
                       "--smem-extra", str(args.smem_extra)]
                if args.carveout is not None:
                    cmd += ["--carveout", str(args.carveout)]
                if args.warps is not None:
                    cmd += ["--warps", str(args.warps)]
                if args.lineinfo:
                    cmd += ["--lineinfo"]
                if args.aux16:
                    cmd += ["--aux16"]
                env = dict(os.environ, PYTHONPATH=os.pathsep.join([tree, os.environ.get("PYTHONPATH", "")]))
                proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tree, check=False)
                if proc.returncode:
                    sys.exit(f"{tree} {var}: {proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else 'failed'}")
                for line in proc.stdout.splitlines():
                    if line.startswith("{"):
                        r = json.loads(line)
                        results.setdefault((tree, var, r["L"], r["count"]), []).append(r)
    print("| tree | variant | L x count | zk_fin_lanes ms | zk_mid ms | V[1][n] | blocks an SM | registers | "
          "shared bytes |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for (tree, var, L, count), rs in results.items():
        print(f"| {Path(tree).name or tree} | {var} | {L:,} x {count:,} | "
              f"{statistics.median(r['fin'] for r in rs):.1f} | {statistics.median(r['mid'] for r in rs):.1f} | "
              f"{rs[0]['check']} | {rs[0]['blocks']} | {rs[0]['regs']} | {rs[0]['shared']:,} |")


if __name__ == "__main__":
    main()
