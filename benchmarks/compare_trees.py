"""Two checkouts of rnapipe side by side on one machine, in one run: the CPU engine's rate, what a user gets from
`rnapipe fold` (interpreter start included), and whether their outputs are the same bytes.

For a change that must not alter behaviour or speed (a refactor): ``--old`` is a tree before it, ``--new`` after.
Every measurement runs in a fresh process with ``PYTHONPATH`` set to one tree; old and new alternate round by round
(old, new, new, old, ...), so that a machine that warms up or slows down mid-run touches both alike; each figure
is the median of ``--rounds``. One untimed process per tree first loads (or compiles) its Numba cache.

* engine: ``rnapipe.cpu.zuker.fold_batch`` on fixed random sequences (``--engine L:N,...``) on ``--threads``
  threads, timed inside the process after one untimed call on the first 64;
* CLI: ``python -m rnapipe fold FILE -o OUT.db -q --on-invalid skip`` (``--cli NAME=ALGORITHM:DEVICE:FILE[@ROUNDS],...``; FILE
  may be ``random:L:N``; ROUNDS overrides ``--rounds`` for a long one), wall time of the whole process, after one
  untimed run per tree; the outputs of the two trees compared byte for byte.

    python benchmarks/compare_trees.py --old ../before --new . --engine 120:20000,500:1000 \\
        --cli trna=zuker:cpu:data/tRNAs.fa,r68=nussinov:cpu:random:68:200000 --rounds 3

Prints a table (markdown) and, with ``--results FILE``, appends it with the date and the machine.
"""

from __future__ import annotations

import argparse
import datetime
import filecmp
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import cpu_name  # noqa: E402  (benchmarks/machine.py)

ENGINE = """
import random, sys, time
from rnapipe.cpu import zuker
length, count, threads = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(length * 1_000_003 + count)
seqs = ["".join(rng.choice("ACGU") for _ in range(length)) for _ in range(count)]
zuker.fold_batch(seqs[:64], "default", threads, {})
start = time.perf_counter()
zuker.fold_batch(seqs, "default", threads, {})
print(time.perf_counter() - start)
"""


def run_in(tree: Path, args: list[str], **kw) -> subprocess.CompletedProcess:
    """``python ARGS`` importing rnapipe from ``tree``: PYTHONPATH starts with it, and the process runs in the tree
    itself, because ``python -m`` and ``-c`` put the working directory before PYTHONPATH (run from a checkout, every
    side would import that checkout); paths in ARGS must be absolute."""
    rest = os.environ.get("PYTHONPATH")
    env = dict(os.environ, PYTHONPATH=str(tree.resolve()) + (os.pathsep + rest if rest else ""))
    return subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, check=True,
                          cwd=tree.resolve(), **kw)


def random_fasta(path: Path, length: int, count: int) -> None:
    rng = random.Random(length * 7 + count)
    with open(path, "w") as handle:
        for k in range(count):
            handle.write(f">r{k}\n{''.join(rng.choice('ACGU') for _ in range(length))}\n")


def order(rounds: int) -> list[str]:
    """old, new, new, old, old, new, ...: each side first in half of the rounds."""
    out = []
    for r in range(rounds):
        out += ["old", "new"] if r % 2 == 0 else ["new", "old"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", type=Path, required=True)
    ap.add_argument("--new", type=Path, required=True)
    ap.add_argument("--engine", default="120:20000,500:1000", help="L:N,... for the CPU engine ('' for none)")
    ap.add_argument("--cli", default="", help="NAME=ALGORITHM:DEVICE:FILE[@ROUNDS],... (FILE or random:L:N)")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work", type=Path, default=None, help="folder for inputs and outputs (default: a temporary one)")
    ap.add_argument("--results", type=Path, default=None)
    args = ap.parse_args()
    trees = {"old": args.old, "new": args.new}
    work = (args.work or Path(tempfile.mkdtemp(prefix="rnapipe-compare-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    rows = []

    engine_sets = [tuple(int(x) for x in item.split(":")) for item in args.engine.split(",") if item]
    if engine_sets:
        for side in trees:                              # Numba's cache loaded or compiled, untimed
            run_in(trees[side], ["-c", ENGINE, "40", "64", str(args.threads)])
    for length, count in engine_sets:
        times = {"old": [], "new": []}
        for side in order(args.rounds):
            out = run_in(trees[side], ["-c", ENGINE, str(length), str(count), str(args.threads)])
            times[side].append(float(out.stdout.strip().splitlines()[-1]))
        rows.append((f"engine zuker {length} nt x {count:,}", count, times, True))

    for item in [x for x in args.cli.split(",") if x]:
        name, spec = item.split("=", 1)
        rounds = args.rounds
        if "@" in spec:
            spec, rounds = spec.rsplit("@", 1)
            rounds = int(rounds)
        algorithm, device, source = spec.split(":", 2)
        if source.startswith("random:"):
            _, length, count = source.split(":")
            path = work / f"{name}.fa"
            if not path.exists():
                random_fasta(path, int(length), int(count))
        else:
            path = Path(source).resolve()
        records = sum(1 for line in open(path) if line.startswith(">"))
        for side in trees:                              # untimed: caches loaded, kernels compiled
            run_in(trees[side], ["-m", "rnapipe", "fold", str(path), "-o", str(work / f"{name}.{side}.db"), "-q",
                                 "--algorithm", algorithm, "--device", device, "--threads", str(args.threads), "--on-invalid", "skip"])
        times = {"old": [], "new": []}
        for side in order(rounds):
            start = time.perf_counter()
            run_in(trees[side], ["-m", "rnapipe", "fold", str(path), "-o", str(work / f"{name}.{side}.db"), "-q",
                                 "--algorithm", algorithm, "--device", device, "--threads", str(args.threads), "--on-invalid", "skip"])
            times[side].append(time.perf_counter() - start)
        same = filecmp.cmp(work / f"{name}.old.db", work / f"{name}.new.db", shallow=False)
        rows.append((f"rnapipe fold {name} ({algorithm}, {device})", records, times, same))

    lines = ["| what | records | old s (median) | new s (median) | new / old | outputs identical | rounds (old; new) |",
             "|---|---:|---:|---:|---:|---|---|"]
    for what, records, times, same in rows:
        old, new = statistics.median(times["old"]), statistics.median(times["new"])
        lines.append(f"| {what} | {records:,} | {old:.3f} | {new:.3f} | {new / old:.3f} | {'yes' if same else 'NO'} | "
                     f"{' '.join(f'{t:.2f}' for t in times['old'])}; {' '.join(f'{t:.2f}' for t in times['new'])} |")
    table = "\n".join(lines)
    print(table)
    if args.results:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        with open(args.results, "a") as handle:
            handle.write(f"\n### compare_trees.py ({stamp}; {cpu_name()}, {args.threads} threads; old {args.old}, "
                         f"new {args.new})\n\n{table}\n")


if __name__ == "__main__":
    main()
