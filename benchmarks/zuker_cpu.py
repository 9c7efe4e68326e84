"""Zuker MFE on CPU: rnapipe against ViennaRNA's RNA.fold on the same random sequences, in one run.

For each length: one thread each (rnapipe fold_batch threads=1; RNA.fold in a loop), then all cores each
(rnapipe threads=N; RNA.fold over a multiprocessing pool of N processes, started before the clock). Every
rnapipe MFE is compared with RNA.fold's to the integer dcal/mol, and every rnapipe structure is evaluated
by ViennaRNA (it must have the MFE). Prints a table and appends it to benchmarks/RESULTS.md.

    python benchmarks/zuker_cpu.py                                  # paper lengths, 1 and all cores
    python benchmarks/zuker_cpu.py --threads 1,2,16 --lengths 68,1000 --count 200
"""

from __future__ import annotations

import argparse
import datetime
import multiprocessing
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rnapipe import config  # noqa: E402
from rnapipe.cpu import zuker  # noqa: E402

from machine import cpu_name  # noqa: E402  (benchmarks/machine.py)

DEFAULT_LENGTHS = (68, 120, 154, 221, 500, 1000, 3000)


def default_count(length: int) -> int:
    """Enough sequences for a steady rate on many threads (a batch of short ones lasts only milliseconds),
    without spending many minutes in RNA.fold at the long end."""
    if length <= 100:
        return 2000
    if length <= 160:
        return 800
    if length <= 250:
        return 400
    if length <= 500:
        return 96
    if length <= 1000:
        return 32
    return 4


def _rna_fold(seq: str) -> tuple[int, str]:
    import RNA
    structure, mfe = RNA.fold(seq)
    return round(mfe * 100), structure


def _pool_init():
    import RNA  # noqa: F401  (import before the clock starts)


def _ours_chunk(seqs):
    return zuker.fold_batch(seqs, "default", 1, {})


def run_rnapipe_processes(seqs, processes, pool):
    """rnapipe with one thread in each of ``processes`` processes (interleaved chunks, four per process):
    the machine's own ceiling for a parallel fold, nothing shared between the workers."""
    chunks = [seqs[k::4 * processes] for k in range(4 * processes)]
    start = time.perf_counter()
    pool.map(_ours_chunk, chunks, chunksize=1)
    return time.perf_counter() - start


def run_rnafold(seqs, threads, pool):
    start = time.perf_counter()
    if threads == 1:
        out = [_rna_fold(s) for s in seqs]
    else:
        out = pool.map(_rna_fold, seqs, chunksize=1)
    return out, time.perf_counter() - start


def run_rnapipe(seqs, threads):
    """Our results and the wall time of one run."""
    start = time.perf_counter()
    out = zuker.fold_batch(seqs, "default", threads, {})
    return out, time.perf_counter() - start


def check(seqs, ours, theirs) -> int:
    import RNA
    bad = 0
    for s, (e, db), (ref, _) in zip(seqs, ours, theirs):
        if e != ref or round(RNA.fold_compound(s).eval_structure(db) * 100) != ref:
            bad += 1
    return bad


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lengths", default=",".join(map(str, DEFAULT_LENGTHS)))
    ap.add_argument("--threads", default=None,
                    help="comma-separated thread counts (default: 1 and all cores); the first is the baseline")
    ap.add_argument("--count", type=int, default=None, help="sequences per length (default: by length)")
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--rnafold-fraction", type=float, default=1.0,
                    help="RNA.fold folds only this leading fraction of each length's sequences (at least 16): "
                         "its rate and the mismatch check cover those")
    ap.add_argument("--repeat", type=int, default=3, help="rnapipe runs per cell (median taken; RNAfold runs once)")
    ap.add_argument("--results", default=str(ROOT / "benchmarks" / "RESULTS.md"))
    ap.add_argument("--no-append", action="store_true", help="print only, do not append to RESULTS.md")
    args = ap.parse_args(argv)

    lengths = [int(x) for x in args.lengths.split(",") if x]
    cores = config.default_threads()
    threads = [int(x) for x in args.threads.split(",")] if args.threads else sorted({1, cores})
    rng = random.Random(args.seed)
    zuker.fold_batch(["GGGGAAAACCCC"], "default", 1, {})       # JIT (or cache load) before any clock

    pools = {t: multiprocessing.Pool(t, initializer=_pool_init) for t in threads if t > 1}
    for t, pool in pools.items():
        pool.map(_rna_fold, ["GGGGAAAACCCC"] * t)

    header = ["L", "seqs"]
    for t in threads:
        header += [f"RNAfold {t}t seq/s", f"rnapipe {t}t seq/s", f"ratio {t}t"]
    header += [f"rnapipe {t}t/{threads[0]}t" for t in threads[1:]]
    header += [f"rnapipe {t} proc/{threads[0]}t" for t in threads[1:]] + ["mismatches"]
    rows = []
    print(" | ".join(header), flush=True)
    for length in lengths:
        count = args.count or default_count(length)
        seqs = ["".join(rng.choice("ACGU") for _ in range(length)) for _ in range(count)]
        row = [str(length), str(count)]
        ours_rate = {}
        bad = 0
        ref = seqs[:max(16, round(count * args.rnafold_fraction))]
        # rnapipe's runs alternate between the thread counts, round after round, so that a noisy machine
        # (a shared VM) weighs on every count alike; the median of each count's rounds is taken
        times: dict[int, list[float]] = {t: [] for t in threads}
        proc_times: dict[int, list[float]] = {t: [] for t in threads[1:]}
        ours = None
        for _ in range(args.repeat):
            for t in threads:
                ours, elapsed = run_rnapipe(seqs, t)
                times[t].append(elapsed)
                if t in proc_times:
                    proc_times[t].append(run_rnapipe_processes(seqs, t, pools[t]))
        for t in threads:
            theirs, t_rna = run_rnafold(ref, t, pools.get(t))
            bad += check(ref, ours, theirs)
            t_ours = statistics.median(times[t])
            ours_rate[t] = count / t_ours
            rna_rate = len(ref) / t_rna
            row += [f"{rna_rate:.2f}", f"{count / t_ours:.2f}", f"{ours_rate[t] / rna_rate:.2f}"]
        row += [f"{ours_rate[t] / ours_rate[threads[0]]:.2f}" for t in threads[1:]]
        row += [f"{count / statistics.median(proc_times[t]) / ours_rate[threads[0]]:.2f}" for t in threads[1:]]
        row.append(str(bad))
        rows.append(row)
        print(" | ".join(row), flush=True)
    for pool in pools.values():
        pool.close()

    if not args.no_append:
        import RNA
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        lines = [
            "",
            f"### Zuker CPU vs RNAfold ({stamp})",
            "",
            f"Machine: {platform.node()}, {cpu_name()}, {os.cpu_count()} logical CPUs ({cores} usable cores); "
            f"Python {platform.python_version()}, ViennaRNA {RNA.__version__}; random uniform ACGU sequences "
            f"(seed {args.seed}); wall-clock sequences per second "
            f"(rnapipe: median of {args.repeat} rounds that alternate the thread counts; RNAfold: one run, on the first "
            f"{args.rnafold_fraction:g} of the same sequences); RNAfold multi-core "
            "= RNA.fold in a multiprocessing pool; 'rnapipe P proc' = rnapipe with one thread in each of P processes "
            "(the machine's ceiling for P-fold parallel work; same rounds); mismatches = MFE differing from RNA.fold's or structure not "
            "at the MFE by ViennaRNA's evaluation.",
            "",
            "| " + " | ".join(header) + " |",
            "|" + "---|" * len(header),
        ]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        with open(args.results, "a", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
    return 0 if all(r[-1] == "0" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
