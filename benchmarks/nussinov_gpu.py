"""GPU Nussinov benchmark: every variant at the papers' sizes, the batched mode, and the floor.

    python benchmarks/nussinov_gpu.py                 # full run (one device call), appends to RESULTS.md
    python benchmarks/nussinov_gpu.py --quick         # small sizes, nothing appended

Per variant and n: fill time, traceback time, total, and the fraction of the add-max floor reached
(n^3/6 add-max operations over the measured 32-bit add-max rate).  A variant whose predicted time
(its last time scaled by n^3) exceeds --budget seconds is skipped at that n and the table says so.
All variants must give the same score at each n (the table's last column); tests check exactness.
"""

from __future__ import annotations

import argparse
import datetime
import random
import sys
import time
from pathlib import Path

import numpy as np

PAPER_SIZES = [2000, 6000, 10000, 16000, 26000, 37000]
RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # run from a checkout


def random_rna(n: int, seed: int) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice("ACGU") for _ in range(n))


def measure_rates() -> dict:
    """Add-max operations per second, 32-bit and 16x2 DPX, from many independent chains."""
    import cupy
    from rnapipe.gpu import loader

    out = {}
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    blocks, threads, iters, chains = sms * 16, 256, 4096, 16
    src = cupy.arange(64, dtype=cupy.int32)
    res = cupy.empty(blocks * threads, dtype=cupy.int32)
    for name, per_instr in (("rate_addmax_s32", 1), ("rate_addmax_u16x2", 2)):
        kern = loader.function("nussinov_rate.cu", name)
        kern((blocks,), (threads,), (src, res, np.int32(16)))
        cupy.cuda.Device().synchronize()
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        best = None
        for _ in range(3):
            start.record()
            kern((blocks,), (threads,), (src, res, np.int32(iters)))
            stop.record()
            stop.synchronize()
            ms = cupy.cuda.get_elapsed_time(start, stop)
            best = ms if best is None else min(best, ms)
        out[name] = blocks * threads * iters * chains * per_instr / (best / 1e3)
    return out


def device_name() -> str:
    import cupy
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    name = props["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def run_variants(variants, sizes, budget, rate, log):
    from rnapipe.gpu import nussinov as gpu
    import cupy

    rows = []
    scores: dict[int, dict[str, int]] = {}
    for v in variants:                      # compile and warm each variant outside the timings
        gpu.fold_one(random_rna(600, 1), v)
    last: dict[str, tuple[int, float]] = {}
    for n in sizes:
        seq = random_rna(n, n)
        floor = n ** 3 / 6 / rate
        for v in variants:
            need = gpu.bytes_needed(n, v)
            free = cupy.cuda.runtime.memGetInfo()[0] + cupy.get_default_memory_pool().free_bytes()
            if need > free:
                rows.append((v, n, None, None, None, None, "does not fit"))
                continue
            if v in last:
                n0, t0 = last[v]
                predicted = t0 * (n / n0) ** 3
                if predicted > budget:
                    rows.append((v, n, None, None, None, None, f"skipped (predicted {predicted:.0f} s)"))
                    continue
            stats: dict = {}
            t = time.perf_counter()
            score, structure = gpu.fold_one(seq, v, stats=stats)
            total = time.perf_counter() - t
            cupy.get_default_memory_pool().free_all_blocks()
            last[v] = (n, total)
            scores.setdefault(n, {})[v] = score
            ok = structure.count("(") == score
            rows.append((v, n, stats["fill"], stats["traceback"], total, floor / stats["fill"],
                         "" if ok else "STRUCTURE MISMATCH"))
            log(f"{v:14s} n={n:6d} fill {stats['fill']:8.3f} s  traceback {stats['traceback']:6.3f} s  "
                f"score {score}  floor fraction {floor / stats['fill']:.2f}")
    agree = {n: len(set(s.values())) == 1 for n, s in scores.items()}
    return rows, agree


def run_batched(count: int, log) -> list[tuple]:
    from rnapipe.gpu import nussinov as gpu

    rng = random.Random(2026)
    out = []
    for label, lengths in (("uniform 1..256", [rng.randint(1, 256) for _ in range(count)]),
                           ("all 256", [256] * count)):
        seqs = ["".join(rng.choice("ACGU") for _ in range(n)) for n in lengths]
        gpu.fold_short(seqs[:500])                  # warm-up and compile
        best = None
        for _ in range(3):
            stats: dict = {}
            t = time.perf_counter()
            res = gpu.fold_short(seqs, stats=stats)
            total = time.perf_counter() - t
            if best is None or total < best[0]:
                best = (total, stats)
        # spot check against the one-sequence tiled path
        for k in range(0, count, max(1, count // 20)):
            assert res[k][0] == gpu.fold_one(seqs[k], "tiled")[0], k
        total, stats = best
        out.append((label, count, total, count / total, stats["kernel"], count / stats["kernel"]))
        log(f"batched {label}: {count} seqs in {total * 1e3:.1f} ms end to end ({count / total:,.0f} seq/s), "
            f"kernel {stats['kernel'] * 1e3:.1f} ms ({count / stats['kernel']:,.0f} seq/s)")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sizes", type=int, nargs="*")
    ap.add_argument("--variants", nargs="*")
    ap.add_argument("--largest", type=int, default=100_000, help="extra size for the default variant")
    ap.add_argument("--budget", type=float, default=12.0, help="skip a run predicted to take longer (s)")
    ap.add_argument("--batch", type=int, default=25_000)
    ap.add_argument("--no-append", action="store_true")
    ap.add_argument("--batch-only", action="store_true", help="only the batched mode")
    ap.add_argument("--save", help="also write the markdown section to this file")
    ap.add_argument("--profile", type=int, nargs="*", default=[],
                    help="sizes at which to print the default variant's time per kernel kind")
    args = ap.parse_args()
    from rnapipe.gpu import nussinov as gpu

    variants = args.variants or list(gpu.VARIANTS)
    sizes = args.sizes or ([1000, 3000] if args.quick else PAPER_SIZES)
    log = lambda s: print(s, flush=True)  # noqa: E731
    name = device_name()
    rates = measure_rates()
    rate = rates["rate_addmax_s32"]
    log(f"device: {name}; add-max rate: 32-bit {rate:.3g}/s, 16x2 DPX {rates['rate_addmax_u16x2']:.3g}/s")
    for n in args.profile:
        for v in ("dpx", "tiled"):
            stats: dict = {"profile": True}
            gpu.fold_one(random_rna(n, n), v, stats=stats)
            parts = ", ".join(f"{k} {t:.3f} s" for k, t in stats["kernels"].items())
            log(f"profile {v} n={n}: fill {stats['fill']:.3f} s ({parts}); traceback {stats['traceback']:.3f} s")
    rows, agree = run_variants([] if args.batch_only else variants, sizes, args.budget, rate, log)
    if args.largest and not args.quick and not args.batch_only and gpu.VARIANTS[0] in variants:
        r2, _ = run_variants([gpu.VARIANTS[0]], [args.largest], 1e9, rate, log)
        rows += r2
    batched = run_batched(args.batch, log)

    lines = [f"\n## GPU Nussinov ({datetime.date.today()}, {name})\n",
             f"Add-max rate measured on this GPU: {rate:.3g}/s in 32-bit (the floor below), "
             f"{rates['rate_addmax_u16x2']:.3g}/s as 16x2 DPX (two per instruction). "
             "Floor = n^3/6 add-max over the 32-bit rate; 'of floor' = floor / fill time. "
             "Random sequences (seed = n); all variants gave the same score at every n: "
             f"{all(agree.values())}.\n",
             "| variant | n | fill (s) | traceback (s) | total (s) | of floor | note |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for v, n, fill, tb, total, frac, note in rows:
        if fill is None:
            lines.append(f"| {v} | {n:,} | | | | | {note} |")
        else:
            lines.append(f"| {v} | {n:,} | {fill:.3f} | {tb:.3f} | {total:.3f} | {frac:.2f} | {note} |")
    lines += ["", "Batched mode: `fold_short` end to end (Python strings in, (score, structure) out), best of 3; "
              "'kernel' = GPU time of the batched kernels alone.", "",
              "| batched mode | sequences | end to end (ms) | seq/s | kernel (ms) | seq/s (kernel) |",
              "|---|---:|---:|---:|---:|---:|"]
    for label, count, total, rate_e, kern, rate_k in batched:
        lines.append(f"| {label} | {count:,} | {total * 1e3:.1f} | {rate_e:,.0f} | {kern * 1e3:.1f} | {rate_k:,.0f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.save:
        Path(args.save).write_text(text)
    if not args.quick and not args.no_append:
        with open(RESULTS, "a") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
