"""Nussinov on the CPU: CPU1 (naive), CPU2 (transposed) and OMP2 (parallel) as in Li, Ranka & Sahni, Table 1.

Folds one random sequence (uniform A/C/G/U, seeded) per length with each variant, end to end (matrix
fill, traceback and the structure string; the fill is all but a fraction of a percent), best of
``--repeats`` runs. Prints a table and appends it, dated, with the machine, to benchmarks/RESULTS.md.

    python benchmarks/nussinov_cpu.py                                   # n = 1,000 .. 4,000
    python benchmarks/nussinov_cpu.py --sizes 1000,2000,4000,8000,16000 --threads 16 --naive-max 4000
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numba  # noqa: E402

from machine import cpu_name, usable_cores  # noqa: E402  (benchmarks/machine.py)

from rnapipe.cpu import nussinov  # noqa: E402

COLUMNS = (("naive", "CPU1"), ("transposed", "CPU2"), ("parallel", "OMP2"))


def time_fold(sequence: str, variant: str, threads: int, tile: int | None, repeats: int) -> tuple[float, int]:
    best, score = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        [(got, _)] = nussinov.fold_batch([sequence], variant, threads, {"tile": tile})
        best = min(best, time.perf_counter() - start)
        if score is not None and got != score:
            raise SystemExit(f"{variant} gave {got} then {score} pairs for the same sequence")
        score = got
    return best, score


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,2000,3000,4000", help="comma-separated lengths")
    parser.add_argument("--threads", type=int, default=usable_cores(), help="threads for OMP2 (parallel)")
    parser.add_argument("--repeats", type=int, default=3, help="best of this many runs per cell")
    parser.add_argument("--naive-max", type=int, default=8000, help="skip CPU1 above this length (it is slow)")
    parser.add_argument("--tile", type=int, default=None, help="tile side for CPU2/OMP2 (default: the engine's)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--results", default=str(ROOT / "benchmarks" / "RESULTS.md"))
    parser.add_argument("--no-append", action="store_true", help="print only, do not touch RESULTS.md")
    args = parser.parse_args(argv)
    sizes = [int(x) for x in args.sizes.split(",") if x.strip()]

    # Compile (or load from the Numba cache) before any timing.
    warm = time.perf_counter()
    for variant, _ in COLUMNS:
        nussinov.fold_batch(["GGGAAAUCCCAGCUAGCUAGCUAGGCUAGCUAGCUAGCUAGCUAGCUAGCUAGCUAGCGAUCG"], variant,
                            min(2, args.threads), {"tile": 8})
    warm = time.perf_counter() - warm

    load_before = os.getloadavg()[0]
    rows = []
    for n in sizes:
        # One generator per length: the same n gives the same sequence whatever --sizes lists.
        sequence = "".join(np.random.default_rng([args.seed, n]).choice(list("ACGU"), n))
        times, scores = {}, set()
        for variant, _ in COLUMNS:
            if variant == "naive" and n > args.naive_max:
                continue
            threads = args.threads if variant == "parallel" else 1
            seconds, score = time_fold(sequence, variant, threads, args.tile, args.repeats)
            times[variant] = seconds
            scores.add(score)
        if len(scores) != 1:
            raise SystemExit(f"variants disagree at n = {n}: {scores}")
        rows.append((n, times, scores.pop()))
        print_row(rows[-1], header=len(rows) == 1, threads=args.threads)
    load_after = os.getloadavg()[0]

    table = markdown_table(rows, args.threads)
    checks = acceptance(rows, args.threads)
    for line in checks:
        print(line)
    if not args.no_append:
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        machine = (f"{cpu_name()}, {usable_cores()} usable cores ({os.cpu_count()} logical), "
                   f"{platform.system()} {platform.machine()}; Python {platform.python_version()}, "
                   f"numpy {np.__version__}, numba {numba.__version__}")
        tile = args.tile or nussinov.DEFAULT_TILE
        command = " ".join(["python", "benchmarks/nussinov_cpu.py", *(sys.argv[1:] if argv is None else argv)])
        text = [f"\n## Nussinov CPU: CPU1 / CPU2 / OMP2 ({now}, {cpu_name()}, {usable_cores()} cores)\n",
                f"`{command}`; machine: {machine}. Seconds per fold of one random sequence "
                f"(fill + traceback), best of {args.repeats}; tile {tile}; OMP2 on {args.threads} threads; "
                f"load average {load_before:.2f} before, {load_after:.2f} after (other work on the machine "
                f"slows the timings); compile or cache load before timing: {warm:.1f} s.\n", table]
        text += [f"- {line}" for line in checks]
        results = Path(args.results)
        new = not results.exists()
        with open(results, "a") as out:
            if new:
                out.write("# Benchmark results\n")
            out.write("\n".join(text) + "\n")
        print(f"appended to {results}")
    return 0


def fmt(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    return f"{seconds:.4f}" if seconds < 0.1 else f"{seconds:.3f}"


def ratio(a: float | None, b: float | None) -> str:
    return "—" if a is None or b is None or b == 0 else f"{a / b:.1f}"


def cells(row):
    n, t, score = row
    return [f"{n:,}", str(score), fmt(t.get("naive")), fmt(t.get("transposed")), fmt(t.get("parallel")),
            ratio(t.get("naive"), t.get("transposed")), ratio(t.get("transposed"), t.get("parallel")),
            ratio(t.get("naive"), t.get("parallel"))]


def headers(threads: int):
    return ["n", "pairs", "CPU1 naive (s)", "CPU2 transposed (s)", f"OMP2 parallel, {threads} thr (s)",
            "CPU1/CPU2", "CPU2/OMP2", "CPU1/OMP2"]


def print_row(row, header: bool, threads: int) -> None:
    widths = [7, 6, 15, 20, 24, 10, 10, 10]
    if header:
        print("  ".join(h.rjust(w) for h, w in zip(headers(threads), widths)))
    print("  ".join(c.rjust(w) for c, w in zip(cells(row), widths)), flush=True)


def markdown_table(rows, threads: int) -> str:
    head = headers(threads)
    lines = ["| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
    lines += ["| " + " | ".join(cells(row)) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def acceptance(rows, threads: int) -> list[str]:
    """Issue 2's two speed lines, where this run has the sizes for them."""
    out = []
    by_n = {n: t for n, t, _ in rows}
    t2 = by_n.get(2000, {})
    if "naive" in t2 and "transposed" in t2:
        r = t2["naive"] / t2["transposed"]
        out.append(f"n = 2,000: transposed is {r:.1f}x naive (wanted >= 1.5x): {'holds' if r >= 1.5 else 'FAILS'}")
    t4 = by_n.get(4000, {})
    if "parallel" in t4:
        s = t4["parallel"]
        out.append(f"n = 4,000: parallel on {threads} threads took {s:.3f} s (wanted <= 2 s"
                   f"{' on 2 threads' if threads != 2 else ''}): {'holds' if s <= 2 else 'FAILS'}")
    return out


if __name__ == "__main__":
    sys.exit(main())
