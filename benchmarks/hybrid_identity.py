"""Byte identity of ``rnapipe fold`` on every device: CPU = GPU = hybrid static = hybrid dynamic (one batch, and
batches of 300 records), in every format, on 400 chr19 transcripts of at most 1,500 nt
(benchmarks/data/homo_sapiens_GRCh38_chr19_ensembl_cdna.fa.gz) and 2,000 random sequences of 20-300 nt with N
(tests/seqgen.py). Prints each run's time and last stderr line, then one line per output; exit 1 on a difference.

    python benchmarks/hybrid_identity.py [--work DIR] [--gpus 0,1]
"""

from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

FORMATS = ("db", "tsv", "ct", "bpseq")


def main() -> int:
    from hybrid_sweep import fasta_sequences
    from seqgen import random_seqs

    ap = argparse.ArgumentParser()
    ap.add_argument("--work", type=Path, default=Path("/tmp/hybrid-identity"))
    ap.add_argument("--gpus", help="GPUs of the hybrid runs, e.g. 0,1")
    ap.add_argument("--transcripts", type=int, default=400)
    ap.add_argument("--random", type=int, default=2000)
    args = ap.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    data = HERE / "data" / "homo_sapiens_GRCh38_chr19_ensembl_cdna.fa.gz"
    seqs = [s for s in fasta_sequences(str(data)) if len(s) <= 1500][:args.transcripts]
    seqs += random_seqs(args.random, 20, 300, 16)
    with open(args.work / "in.fa", "w") as out:
        for k, s in enumerate(seqs):
            out.write(f">r{k}\n{s}\n")
    gpus = ["--gpus", args.gpus] if args.gpus else []
    runs = {"cpu": ["--device", "cpu"], "gpu": ["--device", "gpu"],
            "static": ["--device", "hybrid", "--split", "static"] + gpus,
            "dynamic": ["--device", "hybrid", "--split", "dynamic"] + gpus,
            "dynamic300": ["--device", "hybrid", "--split", "dynamic"] + gpus}
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE.parent)] + [os.environ.get("PYTHONPATH", "")]))
    for name, extra in runs.items():
        outputs = [x for fmt in FORMATS for x in ("-o", f"{name}.{fmt}")]
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "rnapipe", "fold", "in.fa", *outputs, *extra], cwd=args.work,
                              env=dict(env, RNAPIPE_BATCH_RECORDS="300" if name == "dynamic300" else ""),
                              capture_output=True, text=True)
        lines = [x for x in proc.stderr.splitlines() if x.strip() and "\r" not in x]
        print(f"{name}: exit {proc.returncode}, {time.perf_counter() - start:.1f} s; "
              f"{lines[-1] if lines else ''}", flush=True)
    bad = 0
    for name in runs:
        if name == "cpu":
            continue
        for fmt in FORMATS:
            a, b = args.work / f"cpu.{fmt}", args.work / f"{name}.{fmt}"
            same = a.exists() and b.exists() and filecmp.cmp(a, b, shallow=False)
            bad += not same
            print(f"{name}.{fmt} {'=' if same else 'DIFFERENT from'} cpu.{fmt}")
    print(f"{len(seqs)} records; {'all identical' if not bad else f'{bad} DIFFERENT'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
