"""Long-sequence GPU Zuker: exactness of the tiled fill and block traceback, and their speed against the
per-diagonal path (per-diagonal fill, thread/host traceback), in one device call.

    python benchmarks/zuker_gpu_long.py                       # check + time 1,000 / 5,600 / 10,000 / 32,767
    python benchmarks/zuker_gpu_long.py --check-only
    python benchmarks/zuker_gpu_long.py --lengths 1000,5600 --no-old

Check: random sequences of 600-3,000 nt (a few N-rich) folded by the CPU engine (all cores) and by the GPU in
each combination of fill ("diag", "tiled" at two tile sizes) and traceback ("thread"/host, "block"): every
(MFE, dot-bracket) must be identical. Timing: end to end (strings in, results out) at the issue's lengths and
counts, the tiled path ("new" in the output) against the per-diagonal one ("old"), the two compared for
identity, then a synchronised run split into phases.
The floor is the benchmarks/zuker_gpu.py one: inner-loop add-min evaluations over 1.3e13/s.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from zuker_gpu import inner_evaluations, pair_fraction  # noqa: E402  (benchmarks/zuker_gpu.py)

PLAN = [(1_000, 2_000), (5_600, 64), (10_000, 1), (32_767, 1)]


def rna(n, rng, n_rate=0.0):
    return "".join("N" if rng.random() < n_rate else rng.choice("ACGU") for _ in range(n))


def configure(gpu, fill, tb, tile=32, fin="zk_fin_flat", ext=True, warps=8):
    gpu.FIN_WARPS = warps
    gpu.EXTERIOR_CHUNKED = ext
    gpu.LONG_FILL = fill
    gpu.BLOCK_TRACEBACK = tb == "block"
    gpu.TILE = tile
    gpu.FIN_KERNEL = fin


def run(gpu, seqs, phases=False):
    import cupy
    cupy.cuda.Device().synchronize()
    if phases:
        gpu.PHASE_SECONDS = {}
    t0 = time.perf_counter()
    out = gpu.fold_batch(seqs, "default", os.cpu_count() or 1, {})
    dt = time.perf_counter() - t0
    ph = gpu.PHASE_SECONDS
    gpu.PHASE_SECONDS = None
    return out, dt, ph


def first_diff(seqs, a, b):
    for k, (s, x, y) in enumerate(zip(seqs, a, b)):
        if x != y:
            d = next((p for p in range(len(s)) if x[1][p] != y[1][p]), -1)
            return f"#{k} n={len(s)} mfe {x[0]} vs {y[0]}, first structure difference at {d}"
    return ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check-only", action="store_true")
    ap.add_argument("--check-count", type=int, default=40)
    ap.add_argument("--lengths", default="")
    ap.add_argument("--no-old", action="store_true",
                    help="time only the tiled path (new), not the per-diagonal one (old)")
    ap.add_argument("--configs", default="32:zk_fin_flat,32:zk_fin:noext,64:zk_fin_flat",
                    help="tile:fin-kernel[:wN][:noext] of the tiled path to time (the first is the reference; wN: N "
                         "warps per tile; noext: W by zk_exterior, not in chunks)")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    from rnapipe.cpu import zuker as cpu
    from rnapipe.gpu import zuker as gpu
    import cupy
    dev = cupy.cuda.runtime.getDeviceProperties(0)["name"]
    dev = dev.decode() if isinstance(dev, bytes) else str(dev)
    print("device:", dev, flush=True)
    configs = []
    for c in args.configs.split(","):
        f = c.split(":")
        w = next((int(x[1:]) for x in f[2:] if x.startswith("w")), 8)
        configs.append((int(f[0]), f[1], "noext" not in f[2:], w))
    report = {"device": dev, "check": {}, "timing": []}
    rng = random.Random(2026)

    # --- exactness against the CPU engine -------------------------------------------------------------
    seqs = [rna(rng.randint(600, 3000), rng, 0.3 if k % 10 == 0 else 0.02 if k % 3 == 0 else 0.0)
            for k in range(args.check_count)]
    seqs += ["N" * 700, "GGGGAAAACCCC" * 60]
    t0 = time.perf_counter()
    ref = cpu.fold_batch(seqs, "default", os.cpu_count() or 1, {})
    print(f"cpu reference: {len(seqs)} seqs in {time.perf_counter() - t0:.1f} s", flush=True)
    combos = ([("diag", "thread", 32, "zk_fin", True, 8)] + [("tiled", "block", t, f, e, w) for t, f, e, w in configs]
              + [("tiled", "thread", 32, "zk_fin_flat", False, 8), ("tiled", "block", 32, "zk_fin", True, 8)])
    for fill, tb, tile, fin, ext, w in combos:
        configure(gpu, fill, tb, tile, fin, ext, w)
        out, dt, _ = run(gpu, seqs)
        same = sum(a == b for a, b in zip(out, ref))
        key = f"{fill}/{tb}/T{tile}/{fin}/w{w}/{'chunkW' if ext else 'blockW'}"
        report["check"][key] = f"{same}/{len(seqs)}"
        print(f"check {key}: {same}/{len(seqs)} identical to the CPU engine ({dt:.2f} s) {first_diff(seqs, out, ref)}",
              flush=True)
    if args.check_only:
        print(json.dumps(report))
        return

    # --- timing, the tiled path (new) against the per-diagonal one (old) -------------------------------
    plan = PLAN
    if args.lengths:
        keep = {int(x) for x in args.lengths.split(",")}
        plan = [p for p in plan if p[0] in keep]
    trng = random.Random(7)
    for L, count in plan:
        seqs = [rna(L, trng) for _ in range(count)]
        evals = inner_evaluations(L, pair_fraction(seqs))
        floor = 1.3e13 / evals
        row = {"L": L, "count": count, "floor_seq_s": floor}
        new_out = None
        for tile, fin, ext, w in configs:
            configure(gpu, "tiled", "block", tile, fin, ext, w)
            run(gpu, [rna(700, trng)])                            # warm-up (compile)
            if count == 1:                                        # one long fold: one synchronised run
                out, dt, ph = run(gpu, seqs, phases=True)
            else:
                out, dt, _ = run(gpu, seqs)
                _, _, ph = run(gpu, seqs, phases=True)
            if new_out is None:
                new_out = out
            else:
                row[f"T{tile}_{fin}_w{w}_{ext}_same_as_first"] = out == new_out
            row[f"new_T{tile}_{fin}_w{w}_{ext}"] = {"s": dt, "seq_s": count / dt, "fraction": count / dt / floor,
                                   "phases": {k: round(v, 4) for k, v in ph.items()}}
            print(L, count, f"new T{tile} {fin} w{w} chunkW={ext}: {dt:.3f} s = {count / dt:.2f} seq/s ({count / dt / floor:.2%} of floor)",
                  "same as first:", out == new_out,
                  {k: round(v, 3) for k, v in ph.items()}, flush=True)
        if not args.no_old:
            configure(gpu, "diag", "thread")
            out, dt, _ = run(gpu, seqs)
            row["old"] = {"s": dt, "seq_s": count / dt}
            row["old_same_as_new"] = out == new_out
            print(L, count, f"old: {dt:.3f} s = {count / dt:.2f} seq/s; identical to new: {out == new_out} "
                  f"{first_diff(seqs, out, new_out)}", flush=True)
        report["timing"].append(row)
    print(json.dumps(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
