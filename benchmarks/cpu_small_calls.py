"""The CPU engine's cost for small calls: one Zuker engine call (``Folder.fold_packed``) of 1, 8, 32 and 256
random sequences of 120 nt against one sequence's time on one thread, alone and with another thread keeping
the GIL busy in Python (as the GPU's feeding thread of a hybrid run can).

    python benchmarks/cpu_small_calls.py [--threads N] [--repeat R]

Prints, per call size: the median wall time of a call, the ideal (rounds of the threads × one sequence's
time), and their difference, the call's fixed cost; for three ways of running a call: a thread pool made for
each call with a future per group (``per_call_pool`` below, the alternative to a kept pool), the kept pool
(``rnapipe.cpu.batch``), and the kept pool with a 0.5 ms switch interval (what a dynamic hybrid batch sets).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def per_call_pool(fold_one, sequences, threads, progress=None, bytes_of=None, budget=None):
    """``rnapipe.cpu.batch.map_longest_first`` with a ThreadPoolExecutor per call and a future per group instead
    of the kept pool (no memory gate: the Zuker engine does not use it)."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    from rnapipe.cpu.batch import _groups

    order = sorted(range(len(sequences)), key=lambda k: -len(sequences[k]))
    results: list = [None] * len(sequences)
    if threads <= 1 or len(sequences) <= 1:
        for k in order:
            results[k] = fold_one(sequences[k])
            if progress is not None:
                progress(1)
        return results

    def run(group):
        for k in group:
            results[k] = fold_one(sequences[k])
        return len(group)

    with ThreadPoolExecutor(max_workers=threads) as pool:
        futures = [pool.submit(run, g) for g in _groups(order, [len(s) for s in sequences], threads)]
        for future in as_completed(futures):
            done = future.result()
            if progress is not None:
                progress(done)
    return results


def main() -> None:
    from rnapipe import config
    from rnapipe.pipeline.hybrid.costmodel import _random_sequences
    from rnapipe.pipeline.records import Records
    from rnapipe.pipeline.folding.folder import Folder

    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=config.default_threads())
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--length", type=int, default=120)
    args = ap.parse_args()

    def records(n: int, seed: int = 5) -> Records:
        seqs = _random_sequences(args.length, n, seed)
        return Records.from_lists([str(k) for k in range(n)], seqs, range(n))

    one = Folder("zuker", None, "cpu", 1)
    many = Folder("zuker", None, "cpu", args.threads)
    warm = records(2 * args.threads)
    one.fold_packed([warm])
    many.fold_packed([warm])
    sample = records(64, 9)
    runs = []
    for _ in range(3):
        start = time.perf_counter()
        one.fold_packed([sample])
        runs.append((time.perf_counter() - start) / 64)
    per_seq = min(runs)
    print(f"one {args.length}-nt sequence on one thread: {1e3 * per_seq:.3f} ms; calls on {args.threads} threads")
    from rnapipe.cpu import batch, zuker

    kept = zuker.map_longest_first
    modes = [("pool per call", per_call_pool, None), ("kept pool", kept, None), ("kept pool, 0.5 ms", kept, 0.0005)]
    print(f"{'mode':>18} {'GIL-busy thread':>16} {'n':>5} {'call (ms)':>10} {'ideal (ms)':>11} {'fixed (ms)':>11}")
    for name, mapper, switch in modes:
        zuker.map_longest_first = mapper
        old_switch = sys.getswitchinterval()
        if switch:
            sys.setswitchinterval(switch)
        for busy in (False, True):
            stop = threading.Event()

            def spin() -> None:
                x = 0
                while not stop.is_set():
                    x += 1
            spinner = threading.Thread(target=spin, daemon=True) if busy else None
            if spinner:
                spinner.start()
            try:
                for n in (1, 8, 32, 256):
                    batch_ = records(n)
                    times = []
                    for _ in range(args.repeat if n < 256 else max(1, args.repeat // 2)):
                        start = time.perf_counter()
                        many.fold_packed([batch_])
                        times.append(time.perf_counter() - start)
                    call = float(np.median(times))
                    ideal = -(-n // args.threads) * per_seq
                    print(f"{name:>18} {'yes' if busy else 'no':>16} {n:>5} {1e3 * call:>10.2f} {1e3 * ideal:>11.2f} "
                          f"{1e3 * (call - ideal):>11.2f}", flush=True)
            finally:
                stop.set()
                if spinner:
                    spinner.join()
        sys.setswitchinterval(old_switch)
    zuker.map_longest_first = kept
    assert batch.POOL is not None


if __name__ == "__main__":
    main()
