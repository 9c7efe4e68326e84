"""GPU Zuker benchmark: our GPU engine, our CPU engine on all cores and RNAfold on all cores, same sequences.

    python benchmarks/zuker_gpu.py                          # full run (one device call), appends to RESULTS.md
    python benchmarks/zuker_gpu.py --quick --results x.md   # small counts
    python benchmarks/zuker_gpu.py --plan transcripts --tree ../old --results x.md   # issue #22's lengths, old tree

Per length L: GPU sequences/s end to end (Python strings in, (MFE, dot-bracket) out; batches sized from free
memory; for 1,000 sequences or more one untimed run of the same batch, then the median of --repeat runs,
each after gc.collect(), the kernels of every planned length compiled beforehand), the CPU engine (rnapipe.cpu.zuker over all cores) and RNA.fold in a multiprocessing pool over all
cores on the first --cpu-count of the same sequences, the ratios, whether GPU and CPU engine agree on every
sequence both folded, and the floor: inner-loop evaluations per sequence (every add-min of the recursions,
counted below) over the GPU's integer add-min rate (--rate, 1.3e13/s measured on H100), with the fraction
of it reached. Lengths whose predicted GPU time (from the last length, scaled by L^3) exceeds --budget
seconds are skipped and the table says so.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import multiprocessing as mp
import os
import platform
import random
import sys
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # run from a checkout

# (L, GPU sequences, CPU/RNAfold sequences): the counts on the GPU; the CPU side on a subset
# (RNAfold at 5,600 nt takes minutes per sequence on one core: not measured there).
PLAN = [(68, 20_000, 2_000), (120, 20_000, 2_000), (154, 20_000, 2_000), (221, 20_000, 2_000),
        (1_000, 2_000, 64), (5_600, 64, 0), (10_000, 1, 0), (32_767, 1, 0)]
# --plan transcripts: issue #22's lengths (the fills' changes and a transcriptome's range) with enough records to
# fill the GPU (>= 4,096 up to 1,600 nt, >= 512 up to 5,600, >= 8 at 10,000), the CPU engine on a few of each
# and RNAfold on a few of each (the identity check and RNAfold's MFE; none from 3,500 nt on)
PLAN_TRANSCRIPTS = [(68, 20_000, 500), (120, 20_000, 500), (221, 20_000, 500), (232, 4_096, 256), (240, 4_096, 256),
                    (300, 4_096, 128), (400, 4_096, 128), (500, 4_096, 64), (501, 4_096, 64), (600, 4_096, 64),
                    (601, 4_096, 64), (800, 4_096, 32), (1_200, 4_096, 16), (1_600, 4_096, 8), (2_500, 512, 4),
                    (3_500, 512, 0), (5_600, 512, 0), (10_000, 8, 0), (32_767, 1, 0)]
TURN, MAXLOOP = 3, 30


def random_rna(n: int, rng: random.Random) -> str:
    return "".join(rng.choice("ACGU") for _ in range(n))


def inner_evaluations(n: int, f: float) -> float:
    """Add-min evaluations of one fold of n nt, pairable fraction f of the cells: per cell (i, j), d = j - i
    >= 4: WM's d - 3 split points; if i·j can pair, VM's d - 10 split points and the (maxu+1)(maxu+2)/2
    interior-loop candidates (maxu = min(30, d - 6)); plus W's j - 4 per j."""
    d = np.arange(TURN + 1, n, dtype=np.float64)
    maxu = np.minimum(MAXLOOP, d - 6)
    inter = np.where(maxu >= 0, (maxu + 1) * (maxu + 2) / 2, 0)
    per = (d - TURN) + f * (np.maximum(0, d - 2 * TURN - 4) + inter)
    return float(((n - d) * per).sum() + max(0, n - TURN - 1) ** 2 / 2)


def pair_fraction(seqs: list[str]) -> float:
    text = "".join(seqs[:200])
    p = {c: text.count(c) / max(1, len(text)) for c in "ACGU"}
    return sum(p[a] * p[b] for a, b in ("CG", "GC", "GU", "UG", "AU", "UA"))


def _rnafold(s: str):
    import RNA
    structure, mfe = RNA.fold(s)
    return round(mfe * 100), structure


def device_name() -> str:
    import cupy
    name = cupy.cuda.runtime.getDeviceProperties(0)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="a few sequences per length, short lengths only")
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--no-append", action="store_true")
    ap.add_argument("--budget", type=float, default=60.0, help="skip a length predicted to take longer (s)")
    ap.add_argument("--rate", type=float, default=1.3e13, help="integer add-min operations per second")
    ap.add_argument("--lengths", type=str, default="", help="comma-separated subset of the plan's lengths")
    ap.add_argument("--repeat", type=int, default=7, help="timed runs per length of 1,000+ sequences (median)")
    ap.add_argument("--plan", choices=("default", "transcripts"), default="default",
                    help="the lengths: the default plan, or issue #22's transcript lengths (PLAN_TRANSCRIPTS)")
    ap.add_argument("--tree", type=Path, help="import rnapipe from this checkout (old and new code in one call)")
    ap.add_argument("--no-cpu", action="store_true", help="the GPU alone: no CPU engine, no RNAfold (an old tree's run)")
    args = ap.parse_args()
    if args.tree:
        sys.path.insert(0, str(args.tree.resolve()))

    from rnapipe.cpu import zuker as cpu
    from rnapipe.gpu import zuker as gpu

    cores = os.cpu_count() or 1
    plan = PLAN_TRANSCRIPTS if args.plan == "transcripts" else PLAN
    if args.quick:
        plan = [(68, 500, 100), (120, 500, 100), (600, 20, 4)]
    if args.lengths:
        keep = {int(x) for x in args.lengths.split(",")}
        plan = [p for p in plan if p[0] in keep]
    rng = random.Random(2026)
    dev = device_name()
    # Warm-up: the kernels of every planned length (their launch settings depend on the longest sequence of
    # a batch; the int32 window beyond FIN_AUX16_MAX_N nt), Numba compile of the CPU engine, pool start (the last
    # two not with --no-cpu).
    for L, _, _ in plan:
        if L <= 1_000:
            gpu.fold_batch([random_rna(L, rng) for _ in range(8)], "default", cores, {})
    gpu.fold_batch([random_rna(130, rng) for _ in range(8)] + [random_rna(700, rng)], "default", cores, {})
    if hasattr(gpu, "FIN_AUX16_MAX_N") and any(L > gpu.FIN_AUX16_MAX_N for L, _, _ in plan):
        gpu.fold_batch([random_rna(gpu.FIN_AUX16_MAX_N + 100, rng)], "default", cores, {})   # its int32 window
    pool = None                                  # --no-cpu: neither the CPU engine nor RNAfold (no viennarna needed)
    if not args.no_cpu:
        cpu.fold_batch([random_rna(50, rng)], "default", cores, {})
        pool = mp.get_context("fork").Pool(cores)
        pool.map(_rnafold, [random_rna(30, rng) for _ in range(cores)])

    rows = []
    last = None     # (L, seconds per sequence, count) of the last GPU measurement
    for L, count, ccount in plan:
        seqs = [random_rna(L, rng) for _ in range(count)]
        f = pair_fraction(seqs)
        evals = inner_evaluations(L, f)
        floor_rate = args.rate / evals
        if last is not None and not (last[2] > 1 and count == 1):   # nothing of one sequence's alone
            predicted = last[1] * (L / last[0]) ** 3 * count
            if predicted > args.budget:
                rows.append(dict(L=L, count=count, skipped=f"predicted {predicted:.0f} s > budget {args.budget:.0f} s",
                                 evals=evals, floor=floor_rate))
                print(f"L={L}: skipped (predicted {predicted:.0f} s)", flush=True)
                continue
        if count >= 1000:                        # short runs: one untimed run of this very batch first
            gpu.fold_batch(seqs, "default", cores, {})
        gc.collect()
        t0 = time.perf_counter()
        ours = gpu.fold_batch(seqs, "default", cores, {})
        gsec = time.perf_counter() - t0
        spread = ""
        if count >= 1000:                        # short runs: the median of --repeat, then one split into phases
            runs = [gsec]
            for _ in range(args.repeat - 1):
                gc.collect()
                t0 = time.perf_counter()
                ours = gpu.fold_batch(seqs, "default", cores, {})
                runs.append(time.perf_counter() - t0)
            gsec = float(np.median(runs))
            spread = f"median of {len(runs)}: {count / max(runs):,.0f}-{count / min(runs):,.0f}"
            gpu.PHASE_SECONDS = {}
            gpu.fold_batch(seqs, "default", cores, {})
            phases = gpu.PHASE_SECONDS
            gpu.PHASE_SECONDS = None
        else:                                    # long runs: one more (phases) only if it was quick
            phases = {}
            if gsec < 3:
                gpu.PHASE_SECONDS = {}
                gpu.fold_batch(seqs, "default", cores, {})
                phases = gpu.PHASE_SECONDS
                gpu.PHASE_SECONDS = None
        last = (L, gsec / count, count)
        row = dict(L=L, count=count, gpu=count / gsec, gsec=gsec, evals=evals, floor=floor_rate, spread=spread,
                   phases=" / ".join(f"{phases.get(k, 0):.3f}" for k in ("fill", "exterior", "traceback"))
                   if phases else "")
        row["fraction"] = row["gpu"] / floor_rate
        if ccount and not args.no_cpu:
            sub = seqs[:ccount]
            t0 = time.perf_counter()
            ref = cpu.fold_batch(sub, "default", cores, {})
            row["cpu"] = ccount / (time.perf_counter() - t0)
            t0 = time.perf_counter()
            rna = pool.map(_rnafold, sub, chunksize=max(1, ccount // (4 * cores)))
            row["rnafold"] = ccount / (time.perf_counter() - t0)
            row["ccount"] = ccount
            row["identical"] = sum(a == b for a, b in zip(ours, ref))
            row["rnafold_mfe_equal"] = sum(a[0] == b[0] for a, b in zip(ours, rna))
        rows.append(row)
        print(row, flush=True)
    if pool is not None:
        pool.close()

    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    import rnapipe
    tree = f"; rnapipe from {Path(rnapipe.__file__).resolve().parents[1].name}" if args.tree else ""
    lines = [f"### Zuker GPU vs CPU engine vs RNAfold ({stamp}{tree}; plan {args.plan})", "",
             f"Machine: {dev}; {cores} CPU cores ({platform.processor() or platform.machine()}); Python "
             f"{platform.python_version()}. Random uniform ACGU sequences (seed 2026). GPU = rnapipe.gpu.zuker "
             "end to end (strings in, MFE and dot-bracket out; 1,000+ sequences: median of the runs, range in brackets). CPU engine = rnapipe.cpu.zuker on all cores; "
             "RNAfold = RNA.fold in a multiprocessing pool on all cores; both on the first 'CPU seqs' of the same "
             "sequences. 'identical' = GPU (MFE, structure) equal to the CPU engine's; 'RNAfold MFE =' = GPU MFE "
             f"equal to RNA.fold's. Floor = {args.rate:.2g} add-min/s over the inner-loop evaluations per sequence "
             "(WM, VM and interior-loop candidates per cell, W; pairable fraction of the sequences); fraction = "
             "GPU seq/s over the floor's seq/s. Phases: GPU seconds of a separate synchronised run (W = exterior "
             "loop; traceback on the GPU up to 8,000 nt, beyond on the host from copied matrices).", "",
             "| L | GPU seqs | GPU seq/s | CPU seqs | CPU engine seq/s | RNAfold seq/s | GPU/RNAfold | GPU/CPU engine "
             "| identical | RNAfold MFE = | evals/seq | floor seq/s | fraction | fill / W / traceback s |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        if "skipped" in r:
            lines.append(f"| {r['L']:,} | {r['count']:,} | skipped: {r['skipped']} | | | | | | | | "
                         f"{r['evals']:.3g} | {r['floor']:,.1f} | | |")
            continue
        c = r.get("ccount", 0)
        cpu_s = f"{r['cpu']:,.1f}" if c else "not run"
        rna_s = f"{r['rnafold']:,.1f}" if c else "not run"
        g_r = f"{r['gpu'] / r['rnafold']:,.1f}x" if c else ""
        g_c = f"{r['gpu'] / r['cpu']:,.1f}x" if c else ""
        ident = f"{r['identical']}/{c}" if c else ""
        rmfe = f"{r['rnafold_mfe_equal']}/{c}" if c else ""
        gpu_s = f"{r['gpu']:,.1f}" if r["gpu"] >= 10 else f"{r['gpu']:.3f} ({r['gsec']:.2f} s total)"
        if r.get("spread"):
            gpu_s += f" ({r['spread']})"
        lines.append(f"| {r['L']:,} | {r['count']:,} | {gpu_s} | {c:,} | {cpu_s} | {rna_s} | {g_r} | {g_c} | {ident} "
                     f"| {rmfe} | {r['evals']:.3g} | {r['floor']:,.1f} | {r['fraction']:.2%} | {r['phases']} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_append:
        with open(args.results, "a") as fh:
            fh.write("\n" + text)


if __name__ == "__main__":
    main()
