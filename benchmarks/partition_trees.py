"""Two checkouts of rnapipe's GPU partition function side by side on one GPU, in one run: the engine's time per
length with its phases, and whether the two give the same results.

For a change to rnapipe/gpu/partition.py or its kernels: ``--old`` is a tree before it, ``--new`` after. Each
(tree, length) runs in a fresh process with ``PYTHONPATH`` set to its tree, rounds alternating old, new, new, old,
...; each figure is the median of ``--rounds``. The sequences are random ACGU seeded by their length, the same for
both trees; a process folds a few of them untimed first (64; above 2,000 nt one, above 12,000 nt one of 12,000:
the kernels' compile, the GPU's clocks), then all of them once, timed with the phases of ``benchmarks/partition.py``
(MFE, the groups' setup, inside, outside, summary, the host's derived values). The results of the two trees' last
rounds are compared: ensemble energies (relative), the pair lists at the threshold (the same pairs?) and their
probabilities, the unpaired probabilities.

    python benchmarks/partition_trees.py --old ../before --new . --lengths 68:8192,221:4096,1000:512,10000:1

Prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

PHASES = ("MFE", "setup", "inside", "outside", "summary", "host")


def sequences(n: int, count: int) -> list[str]:
    rng = random.Random(n)
    return ["".join(rng.choice("ACGU") for _ in range(n)) for _ in range(count)]


def worker(spec: str, out: str, threshold: float) -> None:
    """In a process whose PYTHONPATH leads with one tree: fold spec's sequences, print the seconds and phases
    as JSON, save the results to ``out`` (.npz)."""
    import cupy

    from rnapipe.gpu import partition as gp, zuker as gz

    phases: dict[str, float] = {}

    def wrap(owner, name, label, sync=True):
        f = getattr(owner, name)

        def timed(*a, **k):
            t = time.perf_counter()
            r = f(*a, **k)
            if sync:
                cupy.cuda.Device().synchronize()
            phases[label] = phases.get(label, 0.0) + time.perf_counter() - t
            return r
        setattr(owner, name, timed)

    wrap(gz, "fold_batch", "MFE")
    wrap(gp._Group, "__init__", "setup")
    wrap(gp._Group, "inside", "inside")
    wrap(gp._Group, "outside", "outside")
    wrap(gp._Group, "summary", "summary")
    wrap(gp.cpu, "derived_lists", "host", sync=False)
    n, count = (int(x) for x in spec.split(":"))
    seqs = sequences(n, count)
    threads = len(os.sched_getaffinity(0))
    # untimed first: the kernels' compile (the MFE engine's differ by length), the GPU's clocks
    gp.fold_batch(seqs[:64] if n <= 2000 else seqs[:1] if n <= 12000 else sequences(12000, 1), threads=threads,
                  threshold=threshold)
    cupy.cuda.Device().synchronize()
    phases.clear()
    t = time.perf_counter()
    res = gp.fold_batch(seqs, threads=threads, threshold=threshold)
    cupy.cuda.Device().synchronize()
    seconds = time.perf_counter() - t
    np.savez(out, E=np.array([r.energy for r in res]), i=np.concatenate([r.i for r in res]),
             j=np.concatenate([r.j for r in res]), p=np.concatenate([r.p for r in res]),
             u=np.concatenate([r.unpaired for r in res]), pairs=np.array([len(r.i) for r in res]))
    print(json.dumps({"seconds": seconds, "phases": phases}))


def compare(a: str, b: str) -> str:
    x, y = np.load(a), np.load(b)
    dE = float(np.max(np.abs(x["E"] - y["E"]) / np.maximum(1e-300, np.abs(x["E"]))))
    du = float(np.max(np.abs(x["u"] - y["u"]), initial=0.0))
    if np.array_equal(x["pairs"], y["pairs"]) and np.array_equal(x["i"], y["i"]) and np.array_equal(x["j"], y["j"]):
        dp = float(np.max(np.abs(x["p"] - y["p"]), initial=0.0))
        return f"same pairs ({x['i'].size:,}); p {dp:.1e}; unpaired {du:.1e}; G {dE:.1e}"
    return f"pair lists differ ({x['i'].size:,} / {y['i'].size:,}); unpaired {du:.1e}; G {dE:.1e}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", help="the tree before the change (required)")
    ap.add_argument("--new", default=".", help="the tree after it (default .)")
    ap.add_argument("--lengths", default="68:8192,221:4096,1000:512,10000:1", help="L:count,...")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--threshold", type=float, default=1e-5)
    ap.add_argument("--worker", nargs=2, metavar=("SPEC", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(*args.worker, args.threshold)
        return 0
    if not args.old:
        ap.error("--old is required")
    trees = {"old": str(Path(args.old).resolve()), "new": str(Path(args.new).resolve())}
    print("| length x sequences | old s | new s | new / old | new phases (s) | old against new |")
    print("|---|---:|---:|---:|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for spec in args.lengths.split(","):
            times: dict[str, list[float]] = {"old": [], "new": []}
            phases: dict[str, dict] = {}
            for r in range(args.rounds):
                for name in (("old", "new") if r % 2 == 0 else ("new", "old")):
                    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
                        [trees[name]] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
                    run = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--threshold",
                                          str(args.threshold), "--worker", spec, os.path.join(tmp, f"{name}.npz")],
                                         env=env, cwd=trees[name], capture_output=True, text=True)
                    if run.returncode:
                        print(run.stderr[-2000:], file=sys.stderr)
                        return 1
                    got = json.loads(run.stdout.strip().splitlines()[-1])
                    times[name].append(got["seconds"])
                    phases[name] = got["phases"]
            old, new = statistics.median(times["old"]), statistics.median(times["new"])
            ph = ", ".join(f"{k} {phases['new'].get(k, 0.0):.3f}" for k in PHASES)
            same = compare(os.path.join(tmp, "old.npz"), os.path.join(tmp, "new.npz"))
            print(f"| {spec.replace(':', ' x ')} | {old:.3f} | {new:.3f} | {new / old:.2f} | {ph} | {same} |",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
