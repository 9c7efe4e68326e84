"""The partition function's exactness against ViennaRNA on #24's sets: every sequence folded by rnapipe (the CPU engine,
rnapipe.cpu.partition, or with --device gpu the GPU engine) and by ViennaRNA's mfe + exp_params_rescale + pf + bpp +
centroid + MEA(1) with default options; per set the largest ensemble-free-energy difference, the largest difference of
any pair probability (the whole matrix: rnapipe's threshold 0), and the sequences whose centroid or MEA structure
differs (with ViennaRNA's and ours' values, to tell ties).

Sets: ``shared`` (every unique sequence of ../shared/data up to --max-shared nt), ``random`` (--random sequences of
20-1,000 nt, ACGU, seed 24), ``chr19`` (--chr19 transcripts of 1,000-5,000 nt of benchmarks/data's chr19 cDNA, the
first that many in file order). Prints a table.

    python benchmarks/partition_exact.py --sets shared,random,chr19 --procs 2
"""

from __future__ import annotations

import argparse
import gzip
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default="shared,random,chr19")
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--random", type=int, default=5000)
    ap.add_argument("--chr19", type=int, default=50)
    ap.add_argument("--max-shared", type=int, default=1000)
    args = ap.parse_args(argv)
    rows = []
    with ProcessPoolExecutor(args.procs) as pool:
        for name in args.sets.split(","):
            if name == "shared":
                from shared_data import shared_sequences
                seqs = shared_sequences(args.max_shared)
            elif name == "random":
                rng = random.Random(24)
                seqs = ["".join(rng.choice("ACGU") for _ in range(rng.randint(20, 1000))) for _ in range(args.random)]
            elif name == "chr19":
                seqs = [s for _, s in _fasta(CHR19) if 1000 <= len(s) <= 5000 and set(s) <= set("ACGU")][:args.chr19]
            else:
                raise SystemExit(f"unknown set {name}")
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
