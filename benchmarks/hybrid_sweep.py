"""Lei et al.'s Fig. 8 and Table 3 on this machine: the hybrid's time against the CPU's share of the records.

    python benchmarks/hybrid_sweep.py --sets random:68:20000,random:120:20000,file:PATH:1000:2500 --json sweep.json
    python benchmarks/hybrid_sweep.py --plot sweep.json --png sweep.png        # needs matplotlib
    python benchmarks/hybrid_sweep.py --sets ... --json sweep.json --png sweep.png    # draws it too

Per set (``random:L:N``: N random sequences of L nt; ``file:PATH:N[:MAXLEN]``: the first N records of a FASTA
file, of at most MAXLEN nt), in this process (no interpreter start; the whole set is one batch, as
``--device hybrid`` folds a batch):

* T_gpu: the GPU alone (``fold_packed``), median of ``--repeat`` runs after a warm-up and as many more taken in
  turn with the dynamic split's runs;
* T_cpu: the CPU engine alone on the hybrid's CPU threads (all cores but one), once;
* T_add = T_cpu·T_gpu / (T_cpu + T_gpu), the ideal of the two at once;
* the balanced share: the CPU's share of the records that balances the profile's predicted times (as if a
  record could be shared out), and the estimated share: what the default mode gives the CPU
  (``HybridFolder.assign``'s static split: the CPU's one thread per sequence, its call cost, a minimum gain);
* the hybrid's time at ``--steps`` shares from 0 to 3 × the balanced one, median of ``--point-repeat`` runs
  each, and at the estimated share and 0.5, 1 and 2 points either side of it, median of at least 3 (records
  taken in the split's order); in the static split's default (its estimated share); and in the dynamic split
  (after one run that its scales learn from; then in turn with the GPU alone, in pairs of alternating order,
  ``--repeat`` pairs and more until they took ``PAIR_SECONDS``), with the CPU's share it took.

With ``--gpus 0,1`` the hybrid has several GPUs and T_gpu is the GPUs together (the batch cut in one part per GPU).

Prints one table per set and a summary, writes the points to ``--json``; appends the summary to
benchmarks/RESULTS.md unless ``--no-append``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import machine  # noqa: E402

PAIR_SECONDS = 2.0      # the dynamic split and the GPU alone run in turn at least --repeat times and this long


def fasta_sequences(path: str):
    """The sequences of a (gzipped) FASTA file in order, upper case, T as U (the file's records are valid:
    no reader with its checks, so that no Biopython is needed)."""
    import gzip

    opener = gzip.open if str(path).endswith(".gz") else open
    parts: list[str] = []
    with opener(path, "rt") as handle:
        for line in handle:
            if line.startswith(">"):
                if parts:
                    yield "".join(parts).upper().replace("T", "U")
                parts = []
            else:
                parts.append(line.strip())
    if parts:
        yield "".join(parts).upper().replace("T", "U")


def load_set(spec: str, seed: int):
    from rnapipe.pipeline.records import Records

    kind, _, rest = spec.partition(":")
    if kind == "random":
        length, count = (int(x) for x in rest.split(":"))
        rng = np.random.default_rng(seed)
        codes = np.frombuffer(b"ACGU", dtype=np.uint8)[rng.integers(0, 4, size=(count, length))]
        seqs = [row.tobytes().decode("ascii") for row in codes]
        label = f"random {length} nt × {count:,}"
    else:
        parts = rest.split(":")
        path, count = parts[0], int(parts[1])
        longest = int(parts[2]) if len(parts) > 2 else None
        seqs = []
        for sequence in fasta_sequences(path):
            if longest is None or len(sequence) <= longest:
                seqs.append(sequence)
                if len(seqs) == count:
                    break
        lens = [len(s) for s in seqs]
        label = f"{Path(path).name}: first {len(seqs):,} of ≤ {longest or max(lens)} nt ({min(lens)}-{max(lens)} nt)"
    return label, Records.from_lists([str(k) for k in range(len(seqs))], seqs, range(len(seqs)))


def timed(fold, records, repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        fold([records])
        runs.append(time.perf_counter() - start)
    return float(np.median(runs))


def sweep_set(folder, spec: str, seed: int, steps: int, repeat: int, point_repeat: int | None = None) -> dict:
    from rnapipe.pipeline.hybrid import static as partition

    split = folder.split
    label, records = load_set(spec, seed)
    lens = records.lens
    tc, tg = folder.predict(lens)
    # time balanced, as if records could be shared out (the GPUs together)
    paper = float(partition.split(tc, tg / len(folder.gpu_folders)).mean())
    estimated = float((folder.assign(tc, tg) < 0).mean())  # what the default mode gives the CPU
    warm = records.take(0, min(len(records), 256))
    for f in folder.gpu_folders:
        f.fold_packed([warm])
    folder.cpu.fold_packed([warm])
    folder.cpu_share = 0.5                    # the hybrid's own path once (its compiled record gathering)
    folder.fold_packed([records.take(0, min(len(records), 16))])
    if len(folder.gpu_folders) == 1:
        gpu_alone = folder.gpu.fold_packed
    else:                                                 # the GPUs together, each a contiguous part
        def gpu_alone(parts):
            share, folder.cpu_share = folder.cpu_share, 0.0
            try:
                return folder.fold_packed(parts)
            finally:
                folder.cpu_share = share
    gpu_runs = [timed(gpu_alone, records, 1) for _ in range(repeat)]
    t_gpu = float(np.median(gpu_runs))
    t_cpu = timed(folder.cpu.fold_packed, records, 1)
    t_add = t_cpu * t_gpu / (t_cpu + t_gpu)
    top = max(3 * paper, 3.0 / len(records))
    points = []
    shares = set(np.linspace(0.0, top, steps).tolist())
    near = set()
    if estimated > 0:               # and near the estimate, to tell whether the best is within 1 point of it
        near = {estimated + d for d in (-0.02, -0.01, -0.005, 0.0, 0.005, 0.01, 0.02) if 0 < estimated + d < 1}
    for share in sorted(shares | near):
        folder.cpu_share = float(share)
        runs = max(3, point_repeat or repeat) if share in near else point_repeat or repeat
        points.append((float(share), timed(folder.fold_packed, records, runs)))
    folder.cpu_share = None
    folder.split = "static"
    default = timed(folder.fold_packed, records, repeat)
    # the dynamic split: its time and the CPU's share of the records
    folder.split = "dynamic"
    folder.fold_packed([records])                        # its scales learnt from one run first
    before = folder.cpu_records
    # the dynamic split and the GPUs alone in turn, so that a drift of the machine's speed over the sweep
    # (clocks, caches, the CPU's long runs) counts in both alike; T_gpu is the median of every GPU run
    runs, alone = [], []
    while len(runs) < repeat or sum(runs) + sum(alone) < PAIR_SECONDS:       # short batches: many pairs
        if len(runs) % 2:                                                       # each order half the time
            alone.append(timed(gpu_alone, records, 1))
            runs.append(timed(folder.fold_packed, records, 1))
        else:
            runs.append(timed(folder.fold_packed, records, 1))
            alone.append(timed(gpu_alone, records, 1))
    dynamic = float(np.median(runs))
    t_gpu = float(np.median(gpu_runs + alone))
    t_add = t_cpu * t_gpu / (t_cpu + t_gpu)
    dynamic_share = (folder.cpu_records - before) / (len(runs) * len(records))
    folder.split = split
    best_share, best_time = min(points, key=lambda p: p[1])
    return {"set": label, "records": len(records), "t_gpu": t_gpu, "t_cpu": t_cpu, "t_add": t_add,
            "estimated_share": estimated, "balanced_share": paper, "points": points, "default": default,
            "best_share": best_share, "best": best_time, "dynamic": dynamic, "dynamic_share": dynamic_share,
            "pairs": len(runs), "pair_ratio": float(np.median(np.array(runs) / np.array(alone)))}


def summary_rows(results: list[dict]) -> list[str]:
    rows = ["| set | T_cpu (s) | T_gpu (s) | K = T_cpu/T_gpu | T_add (s) | balanced / estimated CPU share | sweep's best "
            "share (time) | static (s) | static / T_add | static / faster | dynamic (s) [CPU share] | dynamic / T_add "
            "| dynamic / faster |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        faster = min(r["t_cpu"], r["t_gpu"])
        dyn = (f"{r['dynamic']:.4f} [{100 * r['dynamic_share']:.2f}%] | {r['dynamic'] / r['t_add']:.3f} | "
               f"{r['dynamic'] / faster:.3f}") if "dynamic" in r else "- | - | -"
        if "pair_ratio" in r:
            dyn += f" (pairs: {r['pair_ratio']:.3f} × the GPU, {r['pairs']} pairs)"
        rows.append(f"| {r['set']} | {r['t_cpu']:.3f} | {r['t_gpu']:.4f} | {r['t_cpu'] / r['t_gpu']:.1f} | "
                    f"{r['t_add']:.4f} | {100 * r.get('balanced_share', r['estimated_share']):.2f}% / "
                    f"{100 * r['estimated_share']:.2f}% | {100 * r['best_share']:.2f}% "
                    f"({r['best']:.4f} s) | {r['default']:.4f} | {r['default'] / r['t_add']:.3f} | "
                    f"{r['default'] / faster:.3f} | {dyn} |")
    return rows


def plot(results: list[dict], png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(results)
    cols = min(3, n)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.6 * rows), squeeze=False)
    for ax, r in zip(axes.flat, results):
        share = [100 * p[0] for p in r["points"]]
        seconds = [p[1] for p in r["points"]]
        ax.plot(share, seconds, "o-", label="hybrid, forced share")
        ax.axhline(r["t_gpu"], color="tab:green", linestyle="--", label="GPU alone")
        ax.axhline(r["t_add"], color="tab:gray", linestyle=":", label="ideal T_add")
        ax.axvline(100 * r["estimated_share"], color="tab:red", linestyle="-.", label="estimated share")
        ax.plot([100 * r["estimated_share"]], [r["default"]], "s", color="tab:red", label="static split")
        if "dynamic" in r:
            ax.plot([100 * r["dynamic_share"]], [r["dynamic"]], "D", color="tab:purple",
                    label="dynamic split (its CPU share)")
        ax.set_title(r["set"], fontsize=9)
        ax.set_xlabel("CPU share of the records (%)")
        ax.set_ylabel("seconds")
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", help="comma-separated random:L:N or file:PATH:N[:MAXLEN]")
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--point-repeat", type=int, help="runs of each forced share (default --repeat)")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--plot", type=Path, help="draw the points of a --json file (no folding)")
    ap.add_argument("--png", type=Path, default=HERE / "hybrid_sweep.png")
    ap.add_argument("--no-append", action="store_true")
    ap.add_argument("--results", type=Path, default=HERE / "RESULTS.md", help="where the summary is appended")
    ap.add_argument("--gpus", help="GPUs of the hybrid, e.g. 0,1 (T_gpu is then the GPUs together, statically "
                    "split)")
    args = ap.parse_args()

    if args.plot:
        plot(json.loads(args.plot.read_text())["results"], args.png)
        return
    from rnapipe.pipeline.hybrid.folder import HybridFolder
    from rnapipe.gpu.devices import gpu_name
    from rnapipe.cli.main import stderr_say

    gpus = [int(g) for g in args.gpus.split(",")] if args.gpus else None
    folder = HybridFolder("zuker", gpus=gpus, say=stderr_say(False))
    results = []
    for k, spec in enumerate(args.sets.split(",")):
        result = sweep_set(folder, spec, 2026 + k, args.steps, args.repeat, args.point_repeat)
        results.append(result)
        print(f"\n{result['set']}: T_gpu {result['t_gpu']:.4f} s, T_cpu {result['t_cpu']:.3f} s, "
              f"T_add {result['t_add']:.4f} s, estimated share {100 * result['estimated_share']:.2f}%")
        for share, seconds in result["points"]:
            print(f"  CPU share {100 * share:6.2f}%  {seconds:.4f} s  ({seconds / result['t_add']:.3f} × T_add)")
        print(f"  static: {result['default']:.4f} s ({result['default'] / result['t_add']:.3f} × T_add)")
        print(f"  dynamic: {result['dynamic']:.4f} s ({result['dynamic'] / result['t_add']:.3f} × T_add), CPU share "
              f"{100 * result['dynamic_share']:.2f}% of the records", flush=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    where = (f"{len(folder.gpu_folders)} × {gpu_name()}; host {machine.cpu_name()}, CPU share on "
             f"{folder.cpu_threads()} threads")
    if args.json:
        args.json.write_text(json.dumps({"stamp": stamp, "machine": where, "results": results}, indent=1))
    try:
        plot(results, args.png)
    except ImportError:
        print("(no matplotlib: no picture)", file=sys.stderr)
    text = [f"\n### Hybrid sweep ({stamp})\n", f"{where}. `{' '.join(sys.argv)}`\n"] + summary_rows(results)
    report = "\n".join(text) + "\n"
    print(report)
    if not args.no_append:
        with open(args.results, "a") as handle:
            handle.write(report)


if __name__ == "__main__":
    main()
