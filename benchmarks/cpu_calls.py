"""Where `rnapipe fold` on the CPU loses against the engine's one list: the split into engine calls, or the
stream around them.

    python benchmarks/cpu_calls.py --fasta r3000.fa --threads 16 [--seconds 2,4] [--rounds 3]

On one set, in this process after one untimed call on its first 200 sequences:

* one list: ``fold_batch`` on every sequence in one call (the engine's figure of end_to_end.py);
* calls of S seconds: the sequences in input order cut where their predicted work (``pace.work``) reaches S
  seconds at the one list's rate, one ``fold_batch`` a slice, one after the other (what the stream's
  engine calls are, with no reading or writing around them), for each S of ``--seconds``;

then ``rnapipe fold FILE -o OUT --device cpu`` as a fresh process with ``RNAPIPE_TIMELINE`` (once untimed, then
``--rounds`` rounds of the one list and the CLI in turn, as a shared host's speed drifts): its wall seconds against
the one list of its round, and where they went (reading, folding, writing, the first fold's start).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def read_fasta(path: str) -> list[str]:
    seqs, parts = [], []
    with open(path) as handle:
        for line in handle:
            if line.startswith(">"):
                if parts:
                    seqs.append("".join(parts).upper().replace("T", "U"))
                parts = []
            else:
                parts.append(line.strip())
    if parts:
        seqs.append("".join(parts).upper().replace("T", "U"))
    return seqs


def slices(seqs: list[str], per_call: float) -> list[list[str]]:
    from rnapipe.pipeline.folding.pace import work

    w = work([len(s) for s in seqs])
    out, start, acc = [], 0, 0.0
    for k, x in enumerate(w):
        acc += x
        if acc >= per_call:
            out.append(seqs[start:k + 1])
            start, acc = k + 1, 0.0
    if start < len(seqs):
        out.append(seqs[start:])
    return out


def cli(fasta: str, threads: int, tmp: str, r: int) -> tuple[float, dict]:
    timeline = Path(tmp) / f"timeline{r}.json"
    env = dict(os.environ, RNAPIPE_TIMELINE=str(timeline))
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rnapipe", "fold", fasta, "-o", str(Path(tmp) / "out.db"),
                    "--device", "cpu", "--threads", str(threads), "-q"], check=True, env=env)
    return time.perf_counter() - t, json.loads(timeline.read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fasta", required=True)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--seconds", default="2,4")
    ap.add_argument("--rounds", type=int, default=1, help="rounds of (one list, CLI) in turn after the calls")
    args = ap.parse_args()

    from rnapipe.cpu import zuker
    from rnapipe.pipeline.folding.pace import work

    seqs = read_fasta(args.fasta)
    zuker.fold_batch(seqs[:200], "default", args.threads, {})

    def one_list() -> float:
        t = time.perf_counter()
        zuker.fold_batch(seqs, "default", args.threads, {})
        return time.perf_counter() - t

    one = one_list()
    rate = float(work([len(s) for s in seqs]).sum()) / one
    print(f"{len(seqs)} sequences, {args.threads} threads: one list {one:.2f} s ({len(seqs) / one:.1f} seq/s)")
    for s in (float(x) for x in args.seconds.split(",")):
        parts = slices(seqs, s * rate)
        t = time.perf_counter()
        for part in parts:
            zuker.fold_batch(part, "default", args.threads, {})
        took = time.perf_counter() - t
        print(f"calls of {s:g} s: {len(parts)} calls, {took:.2f} s, one list / calls {one / took:.3f}")
    with tempfile.TemporaryDirectory() as tmp:
        wall, _ = cli(args.fasta, args.threads, tmp, 0)
        print(f"CLI, untimed first run (its compiled passes cached): {wall:.2f} s")
        ratios = []
        for r in range(1, args.rounds + 1):
            one = one_list()
            wall, stages = cli(args.fasta, args.threads, tmp, r)
            ratios.append(one / wall)
            shown = ", ".join(f"{k} {v:.2f}" for k, v in sorted(stages.items()) if not k.endswith(" cpu"))
            print(f"round {r}: one list {one:.2f} s, CLI {wall:.2f} s wall, one list / CLI {one / wall:.3f}; {shown}")
        if ratios:
            print(f"one list / CLI, median of {len(ratios)} rounds: {float(np.median(ratios)):.3f} "
                  f"(each: {', '.join(f'{x:.3f}' for x in ratios)})")


if __name__ == "__main__":
    main()
