"""The partition function's exactness on #24's sets.

Against ViennaRNA (the default): every sequence folded by rnapipe's CPU engine (rnapipe.cpu.partition) and by
ViennaRNA's mfe + exp_params_rescale + pf + bpp + centroid + MEA(1) with default options; per set the largest
ensemble-free-energy difference, the largest difference of any pair probability (the whole matrix: rnapipe's
threshold 0), and the sequences whose centroid or MEA structure differs (with ViennaRNA's and ours' values, to tell
ties).

``--against cpu`` (on a GPU machine): the GPU engine (rnapipe.gpu.partition.fold_batch) against the CPU engine
(rnapipe.cpu.partition.fold_batch on all cores), both at the pair threshold ``--threshold``; per set the largest
relative difference of the ensemble free energy, of a pair probability (pairs listed by both), of the MFE
frequency, diversity, centroid distance and MEA accuracy, the largest absolute difference of a pair probability
(a pair listed by one engine only counts with 0 on the other side) and of an unpaired probability, and the
sequences whose pair lists, MFE, centroid, MEA or pseudo-bracket structures differ; each engine's seconds.

Sets: ``shared`` (every unique sequence of ../shared/data up to --max-shared nt), ``random`` (--random sequences of
20-1,000 nt, ACGU, seed 24), ``chr19`` (--chr19 transcripts of 1,000-5,000 nt of benchmarks/data's chr19 cDNA, the
first that many in file order). Prints a table.

    python benchmarks/partition_exact.py --sets shared,random,chr19 --procs 2
    python benchmarks/partition_exact.py --against cpu     # on a GPU machine
"""

from __future__ import annotations

import argparse
import gzip
import os
import random
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

CHR19 = ROOT / "benchmarks" / "data" / "homo_sapiens_GRCh38_chr19_ensembl_cdna.fa.gz"


def _fasta(path: Path):
    opener = gzip.open if path.suffix == ".gz" else open
    name, seq = None, []
    with opener(path, "rt") as f:
        for line in f:
            if line.startswith(">"):
                if name is not None:
                    yield name, "".join(seq)
                name, seq = line[1:].split()[0], []
            else:
                seq.append(line.strip().upper().replace("T", "U"))
    if name is not None:
        yield name, "".join(seq)


def _set(name: str, args) -> list[str]:
    if name == "shared":
        from shared_data import shared_sequences
        return shared_sequences(args.max_shared)
    if name == "random":
        rng = random.Random(24)
        return ["".join(rng.choice("ACGU") for _ in range(rng.randint(20, 1000))) for _ in range(args.random)]
    if name == "chr19":
        return [s for _, s in _fasta(CHR19) if 1000 <= len(s) <= 5000 and set(s) <= set("ACGU")][:args.chr19]
    raise SystemExit(f"unknown set {name}")


def compare(seq: str):
    """(n, |dG|, largest |dP|, centroid same, MEA same, details) of one sequence."""
    import RNA

    from rnapipe.cpu import partition

    n = len(seq)
    r = partition.fold_one(seq, threshold=0.0)
    fc = RNA.fold_compound(seq, RNA.md())
    _, mfe = fc.mfe()
    fc.exp_params_rescale(mfe)
    _, G = fc.pf()
    bpp = np.array(fc.bpp())
    P = np.zeros((n + 1, n + 1))
    P[r.i, r.j] = r.p
    dP = float(np.abs(P - bpp).max()) if n else 0.0
    centroid = fc.centroid()[0]
    mea, mea_value = fc.MEA(1.0)
    same_c, same_m = r.centroid == centroid, r.mea == mea
    detail = "" if same_c and same_m else (f"centroid ours d={r.centroid_distance:.12g} vs {fc.centroid()[1]:.12g}; "
                                           f"MEA ours {r.mea_accuracy:.12g} vs {mea_value:.12g}")
    return n, abs(r.energy - G), dP, same_c, same_m, detail


def _relative(a: float, b: float) -> float:
    return abs(a - b) / max(abs(b), 1e-300) if a != b else 0.0


def engines(seqs: list[str], threshold: float) -> tuple[dict, list[str]]:
    """The GPU engine against the CPU engine on ``seqs``: the largest differences (see the module's text) and a
    line for each sequence that differs in a pair list or a structure."""
    from rnapipe.cpu import partition as cp
    from rnapipe.gpu import partition as gp

    threads = len(os.sched_getaffinity(0))
    t = time.perf_counter()
    gpu = gp.fold_batch(seqs, threads=threads, threshold=threshold)
    t_gpu = time.perf_counter() - t
    t = time.perf_counter()
    cpu = cp.fold_batch(seqs, threads=threads, threshold=threshold)
    t_cpu = time.perf_counter() - t
    worst = dict.fromkeys(("G", "p_rel", "p_abs", "unpaired", "frequency", "diversity", "distance", "accuracy"), 0.0)
    differ = []
    for k, (g, c) in enumerate(zip(gpu, cpu)):
        worst["G"] = max(worst["G"], _relative(g.energy, c.energy))
        for key, attr in (("frequency", "mfe_frequency"), ("diversity", "diversity"),
                          ("distance", "centroid_distance"), ("accuracy", "mea_accuracy")):
            worst[key] = max(worst[key], _relative(getattr(g, attr), getattr(c, attr)))
        if g.unpaired.size:
            worst["unpaired"] = max(worst["unpaired"], float(np.abs(g.unpaired - c.unpaired).max()))
        n = len(seqs[k]) + 1
        kg, kc = g.i.astype(np.int64) * n + g.j, c.i.astype(np.int64) * n + c.j
        both, ig, ic = np.intersect1d(kg, kc, assume_unique=True, return_indices=True)
        if both.size:
            d = np.abs(g.p[ig] - c.p[ic])
            worst["p_rel"] = max(worst["p_rel"], float((d / np.maximum(c.p[ic], 1e-300)).max()))
            worst["p_abs"] = max(worst["p_abs"], float(d.max()))
        only = np.concatenate((np.delete(g.p, ig), np.delete(c.p, ic)))
        if only.size:
            worst["p_abs"] = max(worst["p_abs"], float(only.max()))
        what = [name for name, same in (("pairs", kg.size == kc.size == both.size), ("mfe", g.structure == c.structure),
                                        ("centroid", g.centroid == c.centroid), ("MEA", g.mea == c.mea),
                                        ("pseudo", g.pseudo == c.pseudo)) if not same]
        if what:
            differ.append(f"{len(seqs[k])} nt {seqs[k][:30]}: {', '.join(what)} differ; listed only by one engine: "
                          f"{np.round(only, 12).tolist()[:6]}")
    worst["gpu_s"], worst["cpu_s"] = t_gpu, t_cpu
    return worst, differ


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default="shared,random,chr19")
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--random", type=int, default=5000)
    ap.add_argument("--chr19", type=int, default=50)
    ap.add_argument("--max-shared", type=int, default=1000)
    ap.add_argument("--against", choices=("vienna", "cpu"), default="vienna",
                    help="the reference: ViennaRNA (of the CPU engine) or the CPU engine (of the GPU engine)")
    ap.add_argument("--threshold", type=float, default=1e-6, help="the pair threshold of both engines (--against cpu)")
    args = ap.parse_args(argv)
    if args.against == "cpu":
        print("| set | sequences | lengths | G | p (relative) | MFE frequency | diversity | centroid distance | MEA "
              "accuracy | p (absolute) | unpaired (absolute) | differ | GPU s | CPU s |\n"
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|", flush=True)
        for name in args.sets.split(","):
            seqs = _set(name, args)
            w, differ = engines(seqs, args.threshold)
            print(f"| {name} | {len(seqs):,} | {min(map(len, seqs))}-{max(map(len, seqs))} | {w['G']:.1e} | "
                  f"{w['p_rel']:.1e} | {w['frequency']:.1e} | {w['diversity']:.1e} | {w['distance']:.1e} | "
                  f"{w['accuracy']:.1e} | {w['p_abs']:.1e} | {w['unpaired']:.1e} | {len(differ)} | "
                  f"{w['gpu_s']:.1f} | {w['cpu_s']:.1f} |", flush=True)
            for line in differ[:20]:
                print("  ", line, file=sys.stderr)
        return 0
    rows = []
    with ProcessPoolExecutor(args.procs) as pool:
        for name in args.sets.split(","):
            seqs = _set(name, args)
            t0 = time.time()
            order = sorted(range(len(seqs)), key=lambda k: -len(seqs[k]))
            out = list(pool.map(compare, [seqs[k] for k in order], chunksize=1 if name == "chr19" else 8))
            dG = max(o[1] for o in out)
            dP = max(o[2] for o in out)
            differ = [(seqs[order[k]][:30], o[0], o[5]) for k, o in enumerate(out) if not (o[3] and o[4])]
            rows.append((name, len(seqs), min(map(len, seqs)), max(map(len, seqs)), dG, dP, len(differ),
                         time.time() - t0))
            print(f"{name}: {len(seqs)} sequences, |dG| <= {dG:.2e} kcal/mol, |dP| <= {dP:.2e}, "
                  f"centroid or MEA different: {len(differ)} ({time.time() - t0:.0f} s)", file=sys.stderr, flush=True)
            for d in differ:
                print("  ", d, file=sys.stderr)
    print("| set | sequences | lengths | largest dG difference (kcal/mol) | largest bpp difference | centroid or MEA "
          "different | seconds |\n|---|---|---|---|---|---|---|")
    for name, c, lo, hi, dG, dP, nd, t in rows:
        print(f"| {name} | {c:,} | {lo}-{hi} | {dG:.2e} | {dP:.2e} | {nd} | {t:.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
