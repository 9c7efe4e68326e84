"""`rnapipe fold -p` against its engine: the whole command (interpreter start, reading, the partition function,
rendering db, tsv, bpp and unpaired, writing) against ``rnapipe.cpu.partition.fold_batch`` in this process on
the same random sequences and threads, and the MFE command beside them. The ratio is what the front door
keeps of the engine's rate. Prints a table and appends it to benchmarks/RESULTS.md.

    python benchmarks/partition_cli.py                       # 68, 120 and 400 nt
    python benchmarks/partition_cli.py --lengths 120 --count 500 --no-append
"""

from __future__ import annotations

import argparse
import datetime
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rnapipe import config  # noqa: E402
from rnapipe.cpu import partition  # noqa: E402

from machine import cpu_name, usable_cores  # noqa: E402  (benchmarks/machine.py)

COUNTS = {68: 3000, 120: 1000, 400: 40}


def command(args, cwd) -> float:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "rnapipe", *args], cwd=cwd, env=env, capture_output=True,
                          text=True)
    took = time.perf_counter() - t0
    if done.returncode:
        raise SystemExit(done.stderr)
    return took


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lengths", default=",".join(map(str, COUNTS)))
    ap.add_argument("--count", type=int, default=None, help="sequences per length (default: by length)")
    ap.add_argument("--threads", type=int, default=None, help="threads of both (default: all cores)")
    ap.add_argument("--seed", type=int, default=24)
    ap.add_argument("--repeat", type=int, default=2, help="runs of each, the best kept (default 2)")
    ap.add_argument("--machine", default=None, help="a description of the machine for RESULTS.md")
    ap.add_argument("--results", default=str(ROOT / "benchmarks" / "RESULTS.md"))
    ap.add_argument("--no-append", action="store_true", help="print only, do not append to RESULTS.md")
    args = ap.parse_args(argv)

    threads = args.threads or config.default_threads()
    rng = random.Random(args.seed)
    partition.fold_batch(["GGGGAAAACCCCAUGCAUGCAUGC"], threads=1)          # JIT (or cache load) before any clock
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in [int(x) for x in args.lengths.split(",") if x]:
            count = args.count or COUNTS.get(n, 100)
            seqs = ["".join(rng.choice("ACGU") for _ in range(n)) for _ in range(count)]
            Path(tmp, "in.fa").write_text("".join(f">s{k}\n{s}\n" for k, s in enumerate(seqs)))
            engine = cli = mfe = float("inf")
            for _ in range(args.repeat):              # the best of each: a shared machine's noise is one-sided
                t0 = time.perf_counter()
                partition.fold_batch(seqs, threads=threads)
                engine = min(engine, time.perf_counter() - t0)
                cli = min(cli, command(["fold", "in.fa", "-p", "-q", "--threads", str(threads), "-o", "out",
                                        "--format", "db,tsv,bpp,unpaired"], tmp))
                mfe = min(mfe, command(["fold", "in.fa", "-q", "--threads", str(threads), "-o", "mfe.db"], tmp))
            rows.append((n, count, engine, cli, engine / cli, mfe))
            print(f"{n} nt done", file=sys.stderr)
    machine = args.machine or f"{usable_cores()}-core {cpu_name()}"
    head = (f"### rnapipe fold -p against its engine ({datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} "
            f"UTC, {machine}, {threads} threads)\n\n"
            "`rnapipe fold -p` with four outputs (db, tsv, bpp, unpaired; interpreter start included) against "
            f"rnapipe.cpu.partition.fold_batch in one process; the MFE command beside them; the best of {args.repeat} "
            "runs each. Random ACGU.\n\n"
            "| length | sequences | engine s | rnapipe fold -p s | engine / command | rnapipe fold (MFE) s |\n"
            "|---|---|---|---|---|---|\n")
    text = head + "".join(f"| {n} | {c} | {e:.2f} | {k:.2f} | {r:.2f} | {m:.2f} |\n" for n, c, e, k, r, m in rows)
    print(text)
    if not args.no_append:
        with open(args.results, "a") as f:
            f.write("\n" + text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
