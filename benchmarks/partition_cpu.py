"""Partition function and base-pair probabilities on CPU: rnapipe (rnapipe.cpu.partition) against ViennaRNA's
``fold_compound`` ``mfe()`` + ``exp_params_rescale(mfe)`` + ``pf()`` + ``bpp()`` (what ``RNAfold -p`` computes) on
the same random sequences.

For each length: rnapipe on one thread and on all cores (``fold_batch``, pairs above 1e-5), ViennaRNA in a loop
on one thread. Every sequence's probabilities are compared (rnapipe's full matrix, threshold 0, outside the
clock) with ViennaRNA's: the table gives the largest difference of any pair probability and of the ensemble free
energy. Prints a table and appends it to benchmarks/RESULTS.md.

    python benchmarks/partition_cpu.py                                   # 68, 120, 221 and 1,000 nt
    python benchmarks/partition_cpu.py --lengths 120,1000 --count 8 --no-append
"""

from __future__ import annotations

import argparse
import datetime
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rnapipe import config  # noqa: E402
from rnapipe.cpu import partition  # noqa: E402
from rnapipe.model import Model  # noqa: E402

from machine import cpu_name, usable_cores  # noqa: E402  (benchmarks/machine.py)

DEFAULT_LENGTHS = (68, 120, 221, 1000)


def default_count(length: int) -> int:
    if length <= 100:
        return 200
    if length <= 250:
        return 60
    return 4


def vienna(seq: str):
    import RNA
    fc = RNA.fold_compound(seq, RNA.md())
    _, mfe = fc.mfe()
    fc.exp_params_rescale(mfe)
    _, G = fc.pf()
    return G, fc.bpp()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lengths", default=",".join(map(str, DEFAULT_LENGTHS)))
    ap.add_argument("--count", type=int, default=None, help="sequences per length (default: by length)")
    ap.add_argument("--threads", type=int, default=None, help="rnapipe's many-thread run (default: all cores)")
    ap.add_argument("--seed", type=int, default=24)
    ap.add_argument("--machine", default=None, help="a description of the machine for RESULTS.md")
    ap.add_argument("--results", default=str(ROOT / "benchmarks" / "RESULTS.md"))
    ap.add_argument("--no-append", action="store_true", help="print only, do not append to RESULTS.md")
    args = ap.parse_args(argv)

    import RNA  # noqa: F401  (before any clock)
    lengths = [int(x) for x in args.lengths.split(",") if x]
    threads = args.threads or config.default_threads()
    rng = random.Random(args.seed)
    model = Model()
    partition.fold_batch(["GGGGAAAACCCCAUGCAUGCAUGC"], model)          # JIT (or cache load) before any clock
    rows = []
    for n in lengths:
        count = args.count or default_count(n)
        seqs = ["".join(rng.choice("ACGU") for _ in range(n)) for _ in range(count)]
        t0 = time.perf_counter()
        partition.fold_batch(seqs, model, threads=1)
        one = time.perf_counter() - t0
        t0 = time.perf_counter()
        partition.fold_batch(seqs, model, threads=threads)
        many = time.perf_counter() - t0
        t0 = time.perf_counter()
        theirs = [vienna(s) for s in seqs]
        ref = time.perf_counter() - t0
        full = partition.fold_batch(seqs, model, threads=threads, threshold=0.0)
        dp = dg = 0.0
        for r, (G, bpp) in zip(full, theirs):
            P = np.zeros((n + 1, n + 1))
            P[r.i, r.j] = r.p
            dp = max(dp, float(np.abs(P - np.asarray(bpp)).max()))
            dg = max(dg, abs(r.energy - G))
        rows.append((n, count, count / one, count / many, count / ref, one and ref / one, dp, dg))
        print(f"{n} nt done", file=sys.stderr)

    machine = args.machine or f"{usable_cores()}-core {cpu_name()}"
    head = (f"### Partition function on CPU ({datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, "
            f"{machine})\n\n"
            "rnapipe.cpu.partition (MFE, pf and bpp, pairs above 1e-5) against ViennaRNA "
            f"{__import__('RNA').__version__}\nmfe + exp_params_rescale + pf + bpp, one thread; random ACGU.\n\n"
            f"| length | sequences | rnapipe seq/s, 1 thread | rnapipe seq/s, {threads} threads | "
            "ViennaRNA seq/s, 1 thread | rnapipe / ViennaRNA per thread | largest bpp difference | "
            "largest ensemble energy difference (kcal/mol) |\n|---|---|---|---|---|---|---|---|\n")
    def rate(x):
        return f"{x:,.1f}" if x >= 10 else f"{x:.3f}"

    lines = "".join(f"| {n} | {c} | {rate(a)} | {rate(b)} | {rate(v)} | {x:.2f} | {dp:.1e} | {dg:.1e} |\n"
                    for n, c, a, b, v, x, dp, dg in rows)
    text = head + lines
    print(text)
    if not args.no_append:
        with open(args.results, "a") as f:
            f.write("\n" + text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
