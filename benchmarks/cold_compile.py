"""The Zuker CPU engine's first fold on a cold Numba cache (issue 26): one process folding 20 hairpins of the bundled
example on 2 threads, its Numba cache a new empty directory, with the compile split over two processes
(rnapipe.cpu.zuker.compile_ahead) and without it (the split switched off: one process compiles everything).
Prints each run's wall seconds and the CPU seconds of the process and its children.

    python benchmarks/cold_compile.py [--runs 3]
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

CHILD = """
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


def run(mode: str) -> tuple[float, float, float]:
    """(first fold's seconds, the process's wall seconds, CPU seconds of it and its children)."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=str(REPO))
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", CHILD, mode, str(REPO / "workflow" / "resources" / "example.fa")],
                             env=env, capture_output=True, text=True, check=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return float(out.stdout.strip()), wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    print(f"{os.cpu_count()} CPUs; load {os.getloadavg()[0]:.2f}")
    print(f"{'split':<6}{'run':>4}{'first fold s':>14}{'process s':>11}{'CPU s':>8}")
    for k in range(args.runs):
        for mode in ("on", "off"):
            first, wall, cpu = run(mode)
            print(f"{mode:<6}{k + 1:>4}{first:>14.2f}{wall:>11.2f}{cpu:>8.2f}", flush=True)
    print(f"load after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
