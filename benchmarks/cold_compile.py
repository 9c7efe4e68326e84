"""The Zuker CPU engine's first fold on a cold Numba cache (issue 26): one process folding 20 hairpins of the bundled
example on 2 threads, its Numba cache a new empty directory, with the compile split over two processes
(rnapipe.cpu.zuker.compile_ahead) and without it (the split switched off: one process compiles everything).
Prints each run's wall seconds and the CPU seconds of the process and its children; with --speed, the engine's
speed once compiled (600 random sequences of 100-400 nt on 2 threads, best of 3), to show that the compiled
code folds as fast.

    python benchmarks/cold_compile.py [--runs 3] [--speed] [--tree DIR]

--tree: another rnapipe tree to time (e.g. `git archive COMMIT | tar -x -C DIR`); a tree without the split
is timed as it is ("plain").
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

FIRST = """
import sys, time
from rnapipe.cpu import zuker
if sys.argv[1] == "off":
    zuker._AHEAD.run(lambda: None)          # marks the split as done: the first fold compiles everything
records = open(sys.argv[2]).read().split(">")[1:21]
seqs = [r.split("\\n", 1)[1].replace("\\n", "") for r in records]
start = time.perf_counter()
zuker.fold_batch(seqs, "default", 2, {})
print(f"{time.perf_counter() - start:.2f}")
"""

SPEED = """
import random, time
from rnapipe.cpu import zuker
rng = random.Random(1)
seqs = ["".join(rng.choice("ACGU") for _ in range(rng.randint(100, 400))) for _ in range(600)]
zuker.fold_batch(seqs[:2], "default", 2, {})
best = 1e9
for _ in range(3):
    start = time.perf_counter()
    zuker.fold_batch(seqs, "default", 2, {})
    best = min(best, time.perf_counter() - start)
print(f"{best:.2f}")
"""


def run(tree: Path, code: str, *args: str, cache: str | None = None) -> tuple[str, float, float]:
    """(what the code printed, the process's wall seconds, CPU seconds of it and its children)."""
    with tempfile.TemporaryDirectory() as fresh:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache or fresh, PYTHONPATH=str(tree))
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, check=True,
                             cwd=fresh)                # not this checkout: `python -c` imports from its directory
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return out.stdout.strip(), wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--speed", action="store_true", help="also time the compiled engine's speed")
    ap.add_argument("--tree", type=Path, default=REPO, help="the rnapipe tree to time (default: this one)")
    args = ap.parse_args()
    tree = args.tree.resolve()
    has_split = "def compile_ahead" in (tree / "rnapipe" / "cpu" / "zuker.py").read_text()
    modes = ("on", "off") if has_split else ("plain",)
    example = str(tree / "workflow" / "resources" / "example.fa")
    print(f"tree {tree}; {os.cpu_count()} CPUs; load {os.getloadavg()[0]:.2f}")
    print(f"{'split':<6}{'run':>4}{'first fold s':>14}{'process s':>11}{'CPU s':>8}")
    for k in range(args.runs):
        for mode in modes:
            first, wall, cpu = run(tree, FIRST, mode, example)
            print(f"{mode:<6}{k + 1:>4}{float(first):>14.2f}{wall:>11.2f}{cpu:>8.2f}", flush=True)
    if args.speed:
        with tempfile.TemporaryDirectory() as cache:
            seconds, _, _ = run(tree, SPEED, cache=cache)
        print(f"compiled: {seconds} s for 600 random sequences of 100-400 nt on 2 threads (best of 3)")
    print(f"load after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
