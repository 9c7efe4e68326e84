"""Where the GPU's time goes by length, and what the CPU can take from it: the facts a hybrid cost model needs.

    python benchmarks/hybrid_lengths.py [--set file:PATH:N:MAXLEN] [--quick]

Prints four tables (one GPU, the CPU on all cores but two, as a hybrid batch runs them):

1. the GPU engine's seconds for a batch of ``count`` random sequences of one length, by length and count
   (does a length's time grow with the count, or is it the latency of one block?);
2. one CPU thread's seconds per record, the CPU's threads all folding at once (one record each);
3. the GPU alone on parts of the transcript set, cut by the GPU engine's fills (≤ 232, 233-600, > 600 nt);
4. forced hybrid batches on the transcripts: the CPU given k records of one length range (shortest or longest
   first), the rest to the GPU: wall seconds, the CPU's longest thread, the GPU's busy seconds;
5. a dynamic-split batch against the GPU alone at 68 nt × 20,000, in pairs of alternating order, and the GPU
   alone against itself (what the split's own path costs, and the pairs' spread); ``--overhead``: this alone.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from hybrid_sweep import load_set  # noqa: E402

TRANSCRIPTS = HERE / "data" / "homo_sapiens_GRCh38_chr19_ensembl_cdna.fa.gz"


def median_time(fn, repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return float(np.median(runs))


def random_records(length: int, count: int, seed: int = 7):
    return load_set(f"random:{length}:{count}", seed)[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", default=f"file:{TRANSCRIPTS}:1000:2500", help="the mixed set of tables 3 and 4 "
                    "(file:PATH:N:MAXLEN, as hybrid_sweep.py)")
    ap.add_argument("--quick", action="store_true", help="fewer lengths")
    ap.add_argument("--overhead", action="store_true", help="table 5 only")
    ap.add_argument("--stand-in", action="store_true", help="no GPU: a one-thread CPU folder in its place (to "
                    "check this script, not to measure)")
    args = ap.parse_args()

    from rnapipe.pipeline.hybrid import costmodel, dynamic as scheduler
    from rnapipe.pipeline.hybrid.folder import HybridFolder, _Batch
    from rnapipe.gpu.devices import gpu_name

    # a fixed cost model (the H200's fitted one): table 4 places records itself, the model only orders LPT
    costs = {"cpu": costmodel.Cost(9.677e-12, 8.133e-09, 0.0), "gpu": costmodel.Cost(5.26e-13, 2.836e-11, 1.113e-07)}
    profile = costmodel.Profile({}, {"cpu": {}, "gpu": {}}, costs, {"cpu": 3e-4, "gpu": 2e-4})
    if args.stand_in:
        from rnapipe.pipeline.folding.folder import Folder
        folder = HybridFolder("zuker", profile=profile, split="dynamic", gpu=Folder("zuker", None, "cpu", 1))
        name = "stand-in (CPU)"
    else:
        folder = HybridFolder("zuker", profile=profile, split="dynamic")
        name = gpu_name()
    threads = folder.cpu_threads()
    if args.overhead:
        print(name)
        overhead(folder, folder.gpu, scheduler)
        return
    print(f"{name}; CPU part on {threads} threads (CPU folder {folder.cpu.threads})", flush=True)
    gpu = folder.gpu

    # 1. GPU seconds by length and count
    lengths = (200, 400) if args.stand_in else (200, 232, 240, 300, 400, 500, 600, 601, 800, 1600) if args.quick else \
        (120, 200, 232, 240, 300, 350, 400, 450, 500, 550, 600, 601, 700, 800, 1200, 1600, 2500)
    counts = (16, 64, 256, 1024, 4096)
    print("\n1. GPU alone, one batch of random sequences: seconds (ms a record)")
    print("| L | " + " | ".join(f"{c:,}" for c in counts) + " |")
    print("|---:|" + "---:|" * len(counts))
    for length in lengths:
        gpu.fold_packed([random_records(length, 16, 1)])
        cells = []
        for count in counts:
            recs = random_records(length, count)
            t = median_time(lambda: gpu.fold_packed([recs]), 3 if count <= 256 else 1)
            cells.append(f"{t:.4f} ({1e3 * t / count:.3f})")
            if t > 0.5:
                break
        cells += ["—"] * (len(counts) - len(cells))
        print(f"| {length} | " + " | ".join(cells) + " |", flush=True)

    # 2. one CPU thread's seconds per record, the threads all at once
    print(f"\n2. CPU, {threads} records at once, one a thread: seconds a record (the longest thread)")
    print("| L | s a record | s a record (2 a thread) |")
    print("|---:|---:|---:|")
    for length in lengths:
        cells = []
        for per in (1, 2):
            recs = random_records(length, threads * per, 3)
            lens = recs.lens
            where = np.full(len(lens), -1, dtype=np.int64)
            tc, tg = folder.predict(lens)

            def run():
                folder._fold([recs], recs.seqs_text, lens, tc * folder.cpu.threads, tg, where, threads)
            cells.append(f"{median_time(run, 1) / per:.4f}")
            if length > 1000:
                break
        cells += ["—"] * (2 - len(cells))
        print(f"| {length} | " + " | ".join(cells) + " |", flush=True)

    # 3. the transcripts' parts on the GPU
    label, recs = load_set(args.set, 0)
    lens = recs.lens
    print(f"\n3. {label}: the GPU alone on parts (median of 3)")
    print("| part | records | Σ L³ (1e9) | seconds |")
    print("|---|---:|---:|---:|")
    gpu.fold_packed([recs])
    parts = {"all": np.ones(len(lens), bool), "≤ 232": lens <= 232, "233-600": (lens > 232) & (lens <= 600),
             "233-400": (lens > 232) & (lens <= 400), "401-600": (lens > 400) & (lens <= 600),
             "> 600": lens > 600, "≤ 600": lens <= 600, "> 600 and ≤ 232": (lens > 600) | (lens <= 232)}
    for name, mask in parts.items():
        pos = np.flatnonzero(mask)
        sub = _Batch(recs.seqs_text, lens).records(pos)
        t = median_time(lambda: gpu.fold_packed([sub]), 3)
        print(f"| {name} | {len(pos)} | {float((lens[pos].astype(float) ** 3).sum()) / 1e9:.1f} | {t:.4f} |",
              flush=True)

    # 4. forced hybrid batches: the CPU gets k records of a range
    print(f"\n4. {label}: hybrid batches, the CPU given k records of a range (median of 3)")
    print("| CPU records | k | wall (s) | CPU thread-seconds / threads (s) | GPU busy (s) |")
    print("|---|---:|---:|---:|---:|")
    t_gpu = median_time(lambda: gpu.fold_packed([recs]), 3)
    print(f"| none (GPU alone) | 0 | {t_gpu:.4f} | 0 | {t_gpu:.4f} |", flush=True)
    tc, tg = folder.predict(lens)
    for name, lo, hi, longest_first in (("233-600 shortest first", 233, 600, False),
                                        ("233-600 longest first", 233, 600, True),
                                        ("401-600 longest first", 401, 600, True),
                                        ("601-1000 shortest first", 601, 1000, False)):
        pos = np.flatnonzero((lens >= lo) & (lens <= hi))
        pos = pos[np.argsort(lens[pos], kind="stable")]
        if longest_first:
            pos = pos[::-1]
        for k in (25, 50, 100, 150, 200, 250, 300, len(pos)):
            if k > len(pos):
                continue
            where = np.zeros(len(lens), dtype=np.int64)
            where[pos[:k]] = -1
            walls, cpus, gpus = [], [], []
            for _ in range(3):
                m0, start = list(folder.measured), time.perf_counter()
                folder._fold([recs], recs.seqs_text, lens, tc * folder.cpu.threads, tg, where, threads)
                walls.append(time.perf_counter() - start)
                gpus.append(folder.measured[1] - m0[1])
                cpus.append(folder.measured[0] - m0[0])
            print(f"| {name} | {k} | {np.median(walls):.4f} | {np.median(cpus) / threads:.3f} | "
                  f"{np.median(gpus):.4f} |", flush=True)
            if np.median(walls) > 2.5 * t_gpu:
                break

    overhead(folder, gpu, scheduler)


def overhead(folder, gpu, scheduler, seconds: float = 3.0) -> None:
    """Table 5: the dynamic split's batch (planned to the GPU alone) against the GPU alone, in pairs whose order
    alternates, and the GPU alone against itself in the same way (the pairs' own spread)."""
    folder.scales = scheduler.Scales()          # the scales of the forced batches forgotten
    recs = random_records(68, 20000, 11)

    def call(fold) -> float:
        start = time.perf_counter()
        fold([recs])
        return time.perf_counter() - start

    for _ in range(5):
        call(folder.fold_packed)
        call(gpu.fold_packed)
    print("\n5. 68 nt × 20,000: pairs in alternating order, median of the ratios (quartiles)")
    predicted = float(folder.gpu_cost.seconds(recs.lens).sum())

    def direct(parts):                    # the hybrid's GPU-alone step without its look at the lengths
        return folder._gpu_alone(0, parts, predicted, len(recs))

    for name, first, second in (("dynamic / GPU alone", folder.fold_packed, gpu.fold_packed),
                                ("GPU alone / GPU alone", gpu.fold_packed, gpu.fold_packed),
                                ("hybrid's GPU-alone step / GPU alone", direct, gpu.fold_packed)):
        a, b = [], []
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            if len(a) % 2:
                b.append(call(second))
                a.append(call(first))
            else:
                a.append(call(first))
                b.append(call(second))
        r = np.array(a) / np.array(b)
        print(f"{name}: {np.median(r):.4f} ({np.percentile(r, 25):.4f}-{np.percentile(r, 75):.4f}), {len(r)} pairs; "
              f"medians {1e3 * np.median(a):.3f} / {1e3 * np.median(b):.3f} ms", flush=True)
    print(f"CPU records: {folder.cpu_records}")

    class Stub:                            # a GPU that takes no time: what is left is the hybrid's own path
        def fold_packed(self, parts):
            return np.zeros(len(parts[0].lens), dtype=np.int64), parts[0].seqs_text

    real = folder.gpu_folders[0]
    folder.gpu_folders[0] = Stub()
    try:
        n = 2000
        start = time.perf_counter()
        for _ in range(n):
            folder.fold_packed([recs])
        print(f"the dynamic split's own path (a GPU that takes no time): {1e6 * (time.perf_counter() - start) / n:.1f} "
              "µs a batch of 20,000", flush=True)
        import cProfile
        import pstats
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(500):
            folder.fold_packed([recs])
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(10)
    finally:
        folder.gpu_folders[0] = real


if __name__ == "__main__":
    main()
