"""Partition function and base-pair probabilities (RNAfold -p's work): rnapipe's GPU engine (rnapipe.gpu.partition),
its CPU engine on all cores (rnapipe.cpu.partition) and ViennaRNA's ``mfe()`` + ``exp_params_rescale`` + ``pf()``
+ ``bpp()`` (what RNAfold -p computes) in a process pool on all cores, on the same random ACGU sequences.

Each length is ``L:count``; the GPU folds all ``count`` (after a warm-up on a few), the CPU engine and ViennaRNA
a sample of them (``--sample``, at least one a core), each timed alone. The GPU's time is split into its phases
(the MFE engine, the groups' setup, inside + exterior, outside, the summary of the probabilities and its copy
back, the MEA structures and the rest on the host). Agreement: the largest ensemble-energy difference of the GPU
against the CPU engine and against ViennaRNA on the sample. The floor: the multiply-adds of the O(n³) sums and
the interior loops (:func:`work`) at the GPU's FP64 rate (``--fp64``, multiply-adds a second; H100 SXM: 34 TFLOPS
= 1.7e13), and the fraction of it the GPU reaches. Prints a table; appends it to benchmarks/RESULTS.md unless --no-append.

    python benchmarks/partition.py                                     # 68/120/221 x 20,000, 1,000 x 2,000, ...
    python benchmarks/partition.py --lengths 120:4096,1000:256 --no-append
"""

from __future__ import annotations

import argparse
import datetime
import os
import random
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rnapipe.cpu import partition as cpu  # noqa: E402
from rnapipe.model import Model  # noqa: E402

from machine import cpu_name, usable_cores  # noqa: E402  (benchmarks/machine.py)

DEFAULT = "68:20000,120:20000,221:20000,1000:2000,5600:64,10000:1"
TURN, MAXLOOP = 3, 30


def work(n: int, f: float = 0.375) -> float:
    """Multiply-adds of one sequence of n nt, a fraction f of its cells pairable: inside, per cell of span d >= 4,
    QM's d - 4 terms and, where it pairs, the multiloop's d - 10 and the interior loops (as the MFE benchmark counts
    them, (maxu+1)(maxu+2)/2, maxu = min(30, d - 6)); outside, per cell, QMout's n - j - 3 and QM1out's i - 1 terms
    and the interior loops again where it pairs."""
    d = np.arange(1, n, dtype=np.float64)
    cells = n - d
    maxu = np.minimum(MAXLOOP, d - 6)
    inter = np.where(maxu >= 0, (maxu + 1) * (maxu + 2) / 2, 0)
    inside = np.where(d >= TURN + 1, np.maximum(0, d - 4) + f * (np.maximum(0, d - 10) + inter), 0)
    # outside: sum over the cells of a diagonal of (n - j - 3) + (i - 1) = (n - d - 4 + ...) on average
    outside = np.maximum(0, n - d - 4) + f * inter
    return float((cells * (inside + outside)).sum())


def _vienna_init():
    import RNA  # noqa: F401


def vienna(seq: str) -> float:
    import RNA
    fc = RNA.fold_compound(seq, RNA.md())
    _, mfe = fc.mfe()
    fc.exp_params_rescale(mfe)
    _, G = fc.pf()
    fc.bpp()
    return G


class Phases:
    """Wall time of the GPU engine's phases (each ended by a device synchronisation)."""

    def __init__(self):
        from rnapipe.gpu import partition as gpu, zuker

        self.t: dict[str, float] = {}
        self._wrap(zuker, "fold_batch", "MFE")
        self._wrap(gpu._Group, "__init__", "setup")
        self._wrap(gpu._Group, "inside", "inside")
        self._wrap(gpu._Group, "outside", "outside")
        self._wrap(gpu._Group, "summary", "summary")
        self._wrap(gpu.cpu, "derived_lists", "host")

    def _wrap(self, owner, name, label):
        import cupy
        f = getattr(owner, name)

        def timed(*a, **k):
            t = time.perf_counter()
            r = f(*a, **k)
            if label != "host":
                cupy.cuda.Device().synchronize()
            self.t[label] = self.t.get(label, 0.0) + time.perf_counter() - t
            return r
        setattr(owner, name, timed)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lengths", default=DEFAULT, help="L:count,... (default %(default)s)")
    ap.add_argument("--sample", type=float, default=60.0, help="seconds of CPU-side work a length aims at")
    ap.add_argument("--fp64", type=float, default=1.7e13, help="the GPU's FP64 multiply-adds a second")
    ap.add_argument("--seed", type=int, default=24)
    ap.add_argument("--no-vienna", action="store_true")
    ap.add_argument("--cpu-max", type=int, default=1000,
                    help="no CPU side above this length (default %(default)s: ViennaRNA takes minutes a sequence "
                         "at 5,600 nt on a 16-core Xeon)")
    ap.add_argument("--results", default=str(ROOT / "benchmarks" / "RESULTS.md"))
    ap.add_argument("--no-append", action="store_true")
    args = ap.parse_args(argv)

    import cupy

    from rnapipe.gpu import partition as gpu
    cores = usable_cores()
    rng = random.Random(args.seed)
    model = Model()
    warm = ["".join(rng.choice("ACGU") for _ in range(m)) for m in (30, 80, 200)]
    gpu.fold_batch(warm, model, threads=cores)
    cpu.fold_batch(warm, model, threads=cores)
    pool = None if args.no_vienna else ProcessPoolExecutor(cores, initializer=_vienna_init)
    if pool:
        list(pool.map(vienna, warm * cores))
    phases = Phases()
    rows = []
    for item in args.lengths.split(","):
        n, count = map(int, item.split(":"))
        seqs = ["".join(rng.choice("ACGU") for _ in range(n)) for _ in range(count)]
        gpu.fold_batch(seqs[:min(count, 8)], model, threads=cores)
        phases.t.clear()
        cupy.cuda.Device().synchronize()
        t0 = time.perf_counter()
        ours = gpu.fold_batch(seqs, model, threads=cores)
        g_time = time.perf_counter() - t0
        ph = dict(phases.t)
        # the CPU-side sample: about args.sample seconds of ViennaRNA (a core: 3e-6 n² + 4e-9 n³ s a sequence,
        # measured on the H100 machine's Xeon), at least one a core
        k = int(min(count, max(cores, args.sample * cores / (3e-6 * n ** 2 + 4e-9 * n ** 3))))
        k = max(min(count, cores), k - k % cores if k >= cores else k)
        sample = seqs[:k] if n <= args.cpu_max else []
        c_rate = v_rate = dc = dv = float("nan")
        if sample:
            t0 = time.perf_counter()
            theirs_cpu = cpu.fold_batch(sample, model, threads=cores)
            c_rate = k / (time.perf_counter() - t0)
            dc = max(abs(a.energy - b.energy) for a, b in zip(ours, theirs_cpu))
        if pool and sample:
            t0 = time.perf_counter()
            G = list(pool.map(vienna, sample, chunksize=max(1, k // (4 * cores))))
            v_rate = k / (time.perf_counter() - t0)
            dv = max(abs(a.energy - b) for a, b in zip(ours, G))
        g_rate = count / g_time
        floor = count * work(n) / args.fp64
        rows.append((n, count, g_rate, c_rate, v_rate, k, floor / g_time, dc, dv, ph, g_time))
        print(f"{n} nt: GPU {g_rate:,.1f} seq/s, CPU {c_rate:,.1f}, ViennaRNA {v_rate:,.1f} ({k} of {count}); "
              f"{', '.join(f'{a} {b:.2f} s' for a, b in ph.items())}", file=sys.stderr, flush=True)
    if pool:
        pool.shutdown()
    name = cupy.cuda.runtime.getDeviceProperties(0)["name"]
    name = name.decode() if isinstance(name, bytes) else str(name)
    vversion = "" if args.no_vienna else __import__("RNA").__version__
    head = (f"### Partition function on the GPU ({datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, "
            f"{name}; CPU side {cores} cores, {cpu_name()})\n\n"
            "rnapipe.gpu.partition (MFE, pf, bpp and derived values, pairs above 1e-5) against rnapipe.cpu.partition on "
            f"all cores and ViennaRNA {vversion} (mfe + exp_params_rescale + pf + bpp) in a {cores}-process pool; "
            "random ACGU; the CPU side on a sample. Floor: benchmarks/partition.py's multiply-adds at "
            f"{args.fp64:.2g}/s.\n\n"
            "| length | sequences | GPU seq/s | CPU engine seq/s, all cores | ViennaRNA seq/s, all cores | sample | "
            "GPU / ViennaRNA | GPU / CPU engine | fraction of floor | GPU phases (s) | largest dG difference: CPU engine, "
            "ViennaRNA (kcal/mol) |\n|---|---|---|---|---|---|---|---|---|---|---|\n")

    def rate(x):
        return f"{x:,.1f}" if x >= 10 else f"{x:.3f}"

    lines = "".join(
        f"| {n:,} | {c:,} | {rate(g)} | {rate(cr)} | {rate(v)} | {k:,} | {g / v:.1f}x | {g / cr:.1f}x | "
        f"{100 * fr:.2f} % | {'; '.join(f'{a} {b:.2f}' for a, b in ph.items())} (of {gt:.2f}) | {dc:.1e}, {dv:.1e} |\n"
        for n, c, g, cr, v, k, fr, dc, dv, ph, gt in rows)
    text = head + lines
    print(text)
    if not args.no_append:
        with open(args.results, "a") as f:
            f.write("\n" + text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
