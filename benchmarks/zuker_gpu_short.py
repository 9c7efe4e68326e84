"""The short-sequence GPU Zuker path (rnapipe.gpu.zuker_short) against the general block fill it replaces.

    python benchmarks/zuker_gpu_short.py                    # default lengths and counts
    python benchmarks/zuker_gpu_short.py --quick
    python benchmarks/zuker_gpu_short.py --variants          # also kernel time per block size / nvcc options

Per length L (random uniform ACGU, seed 2026): sequences/s end to end through rnapipe.gpu.zuker.fold_batch
(Python strings in, (MFE, dot-bracket) tuples out) with the block fill forced (before: zk_fill_block, W and
traceback launches) and the short path forced (after: zs_fold_smem up to its limit, zs_fold beyond up to 600 nt,
in chunks on several streams; fold_batch itself takes the tiled fill past zs_fold_smem's limit), best of --repeat; the kernel's own time
(CUDA events around the launch); whether the two agree on every sequence (the block fill is the path
verified against the CPU engine); and the floor: inner-loop add-min evaluations per sequence
(benchmarks/zuker_gpu.py's inner_evaluations) over --rate, with the fraction of it reached end to end
and by the kernel.
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))   # run from a checkout

PLAN = [(68, 50_000), (120, 40_000), (154, 30_000), (221, 20_000), (400, 5_000), (600, 2_000)]
VARIANTS = [(64, ()), (128, ()), (256, ()),
            (128, ("-DZS_MAX_THREADS=128", "-DZS_MIN_BLOCKS=8")),
            (256, ("-DZS_MAX_THREADS=256", "-DZS_MIN_BLOCKS=4")),
            (64, ("-DZS_MAX_THREADS=64", "-DZS_MIN_BLOCKS=16"))]


def _floor_module():
    spec = importlib.util.spec_from_file_location("zuker_gpu_bench", HERE / "zuker_gpu.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def random_rna(n: int, rng: random.Random) -> str:
    return "".join(rng.choice("ACGU") for _ in range(n))


def device_name() -> str:
    import cupy
    name = cupy.cuda.runtime.getDeviceProperties(0)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--variants", action="store_true", help="kernel time per block size and nvcc options")
    ap.add_argument("--no-before", action="store_true", help="skip the general fill (before) timings")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rate", type=float, default=1.3e13, help="integer add-min operations per second")
    ap.add_argument("--lengths", type=str, default="")
    args = ap.parse_args()

    import cupy

    from rnapipe.gpu import zuker as gpu
    from rnapipe.gpu import zuker_short as short
    from rnapipe.model import Model

    fm = _floor_module()
    plan = [(68, 2_000), (120, 2_000), (600, 100)] if args.quick else PLAN
    if args.lengths:
        keep = {int(x) for x in args.lengths.split(",")}
        plan = [p for p in plan if p[0] in keep]
    rng = random.Random(2026)
    dev = device_name()
    on = max(short.MAX_N, 600)
    warm = [random_rna(n, rng) for n in (600, 300, 130, 68, 20)]
    saved = short.MAX_N
    gpu.fold_batch(warm, "default", 1, {"gpu_fill": "block"})
    short.MAX_N = on
    gpu.fold_batch(warm, "default", 1, {"gpu_fill": "short"})

    def timed(seqs, options=None):
        best, out = float("inf"), None
        for _ in range(args.repeat):
            cupy.cuda.Device().synchronize()
            t0 = time.perf_counter()
            out = gpu.fold_batch(seqs, "default", 1, options or {})
            best = min(best, time.perf_counter() - t0)
        return best, out

    rows = []
    for L, count in plan:
        seqs = [random_rna(L, rng) for _ in range(count)]
        evals = fm.inner_evaluations(L, fm.pair_fraction(seqs))
        floor = args.rate / evals
        row = dict(L=L, count=count, evals=evals, floor=floor)
        if not args.no_before:                       # the block fill, forced
            row["before_s"], before = timed(seqs, {"gpu_fill": "block"})
        row["after_s"], after = timed(seqs, {"gpu_fill": "short"})     # the short path forced (zs_fold past 500)
        short.TUNING["events"] = []
        gpu.fold_batch(seqs, "default", 1, {"gpu_fill": "short"})
        row["kernel_ms"] = sum(short.TUNING.pop("events"))
        ordered = sorted(seqs, key=len, reverse=True)
        t0 = time.perf_counter()
        short.fold_group(ordered, Model())
        row["group_s"] = time.perf_counter() - t0
        if not args.no_before:
            row["identical"] = sum(a == b for a, b in zip(after, before))
        if args.variants:
            model = Model()
            var = []
            for threads, options in VARIANTS:
                short.TUNING.update(threads=threads, options=options, events=[])
                try:
                    short.fold_group(sorted(seqs, key=len, reverse=True)[:min(count, 20_000)], model)
                    var.append(f"{threads}{'/' + options[-1].split('=')[1] if options else ''}:"
                               f"{min(count, 20_000) / (sum(short.TUNING['events']) / 1e3):,.0f}")
                except Exception as exc:     # a variant that cannot launch (registers) is reported, not fatal
                    var.append(f"{threads}{options}: {type(exc).__name__}")
                short.TUNING.clear()
            row["variants"] = " ".join(var)
        rows.append(row)
        print(row, flush=True)
    short.MAX_N = saved

    lines = [f"Device: {dev}. Random uniform ACGU, seed 2026; end to end = rnapipe.gpu.zuker.fold_batch (strings in, "
             f"tuples out), best of {args.repeat}; kernel = the launches' CUDA-event time, summed; floor = {args.rate:.2g} add-min/s "
             "over inner_evaluations (benchmarks/zuker_gpu.py).", "",
             "| L | seqs | before seq/s | after seq/s (end to end) | after seq/s (one fold_group) | after seq/s (kernel) "
             "| speed-up | identical to before | evals/seq | floor seq/s | fraction (e2e / kernel) |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        before = r["count"] / r["before_s"] if "before_s" in r else None
        after = r["count"] / r["after_s"]
        kern = r["count"] / (r["kernel_ms"] / 1e3)
        group = r["count"] / r["group_s"]
        lines.append(f"| {r['L']} | {r['count']:,} | {f'{before:,.0f}' if before else 'not run'} | {after:,.0f} "
                     f"| {group:,.0f} | {kern:,.0f} "
                     f"| {f'{after / before:.1f}x' if before else ''} | "
                     f"{str(r['identical']) + '/' + str(r['count']) if 'identical' in r else ''} | {r['evals']:.3g} "
                     f"| {r['floor']:,.0f} | {after / r['floor']:.2%} / {kern / r['floor']:.2%} |")
    if args.variants:
        lines += ["", "Kernel seq/s per block size (threads[/min blocks per SM]):"]
        lines += [f"- L={r['L']}: {r['variants']}" for r in rows]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
