"""Four-Russians Nussinov on the CPU against our best plain CPU Nussinov, single thread.

    python benchmarks/fourrussians_cpu.py                  # n = 1,000 .. 6,000, appends to RESULTS.md
    python benchmarks/fourrussians_cpu.py --sizes 1000 2000 --no-append

Columns: seconds per fold (fill and traceback) for the four Four-Russians variants (automatic q), the
plain CPU engine's default (`transposed`, CPU2) and its textbook `naive` (CPU1, the papers' serial
baseline), then the ratios two-vector / transposed and naive / two-vector (the paper's "speedup").
Every run's score must agree across all methods (checked, printed).
"""

from __future__ import annotations

import argparse
import datetime
import random
import sys
import time
from pathlib import Path

from machine import cpu_name  # benchmarks/machine.py, beside this script

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # run from a checkout
FR_VARIANTS = ["two-vector", "fg", "memo-partial", "memo-full"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="*", default=[1000, 2000, 3000, 4000, 5000, 6000])
    ap.add_argument("--budget", type=float, default=60.0, help="skip a run predicted to take longer (s)")
    ap.add_argument("--no-append", action="store_true")
    args = ap.parse_args()
    from rnapipe.cpu import fourrussians as fr
    from rnapipe.cpu import nussinov as plain

    def fold(method, seq):
        if method in FR_VARIANTS:
            return fr.fold_one(seq, method)
        return plain.fold_batch([seq], method, 1, {})[0]

    methods = FR_VARIANTS + ["transposed", "naive"]
    warm = "".join(random.Random(0).choice("ACGU") for _ in range(200))
    for m in methods:
        fold(m, warm)                            # Numba compile (or load from cache) outside the timings
    last: dict[str, tuple[int, float]] = {}
    rows = []
    for n in args.sizes:
        seq = "".join(random.Random(n).choice("ACGU") for _ in range(n))
        times, scores = {}, set()
        for m in methods:
            if m in last and last[m][1] * (n / last[m][0]) ** 3 > args.budget:
                times[m] = None
                continue
            t = time.perf_counter()
            score, structure = fold(m, seq)
            times[m] = time.perf_counter() - t
            last[m] = (n, times[m])
            scores.add(score)
            assert structure.count("(") == score
        rows.append((n, times, len(scores) == 1, fr.auto_q(n)))
        print(n, {k: (round(v, 3) if v else v) for k, v in times.items()}, "agree" if len(scores) == 1 else "DISAGREE",
              flush=True)

    def cell(v):
        return f"{v:.3f}" if v is not None else "skipped"

    lines = [f"\n## Four-Russians Nussinov, CPU ({datetime.date.today()}, {cpu_name()}, one thread)\n",
             "Seconds per fold (fill + traceback), random sequences (seed = n), q automatic. "
             "'2v / best' = two-vector time over our best plain CPU Nussinov (`transposed`, CPU2); "
             "'naive / 2v' = the textbook CPU1 time over two-vector (the papers' speedup measure). "
             "Other work may have been running on this shared machine.\n",
             "| n | q | " + " | ".join(methods) + " | 2v / best | naive / 2v | scores agree |",
             "|---:|---:|" + "---:|" * len(methods) + "---:|---:|---|"]
    for n, times, ok, q in rows:
        tv, best, naive = times["two-vector"], times["transposed"], times["naive"]
        r1 = f"{tv / best:.1f}" if tv and best else ""
        r2 = f"{naive / tv:.2f}" if tv and naive else ""
        lines.append(f"| {n:,} | {q} | " + " | ".join(cell(times[m]) for m in methods) + f" | {r1} | {r2} | {ok} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_append:
        with open(RESULTS, "a") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
