"""Issue #22's exactness sets for the GPU Zuker engine against the CPU engine: written as FASTA, folded by
`rnapipe fold` on either device, compared output by output.

    python benchmarks/zuker_exact_sets.py make DIR                     # DIR/sets/*.fa
    python benchmarks/zuker_exact_sets.py fold DIR --device cpu [--threads N] [--sets random,chr19]
    python benchmarks/zuker_exact_sets.py fold DIR --device gpu
    python benchmarks/zuker_exact_sets.py compare DIR                  # DIR/gpu/*.tsv against DIR/cpu/*.tsv

Sets: random (20,000 random sequences of 233-3,000 nt, each nucleotide N with probability 0.02, seed 2211),
lengths (one sequence of every length 230-610, 1 % N), chr19 (every transcript of at most 3,000 nt of
benchmarks/data's GRCh38 chr19 cDNA), and the sequences of every file of ../shared/data where that folder is (the
.dbn files' structures left out). `fold` runs `rnapipe fold SET.fa --device D -q --on-invalid skip -o DIR/D/SET.tsv`
for each set in turn: a run cut off goes on from its journal when the same command is given again (rnapipe's
resume), a finished one is not run again. The CPU engine's outputs change only with the CPU engine, so a DIR folded
on the CPU once (hours on two cores: the random set is the most of it) serves later GPU runs of new GPU code.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHR19 = HERE / "data" / "homo_sapiens_GRCh38_chr19_ensembl_cdna.fa.gz"
SHARED = HERE.parent.parent / "shared" / "data"
sys.path.insert(0, str(HERE.parent))          # run from a checkout: its rnapipe


def _random(rng: random.Random, n: int, nfrac: float) -> str:
    return "".join("N" if rng.random() < nfrac else rng.choice("ACGU") for _ in range(n))


def _fasta(path: Path, records) -> int:
    count = 0
    with open(path, "w") as fh:
        for name, seq in records:
            fh.write(f">{name}\n{seq}\n")
            count += 1
    return count


def _records(path: Path):
    """(id, sequence) of a FASTA file (gzipped or not) or a .dbn file, through rnapipe's own readers (upper case,
    T as U; records they reject, such as a repeated id, left out)."""
    from rnapipe.io.fasta import read_dotbracket, read_records

    if path.suffix == ".dbn":
        return ((name, seq) for name, seq, _ in read_dotbracket(path, "skip"))
    return ((r.id, r.sequence) for r in read_records(path, "skip"))


def make(out: Path) -> None:
    sets = out / "sets"
    sets.mkdir(parents=True, exist_ok=True)
    rng = random.Random(2211)
    n = _fasta(sets / "random.fa", ((f"r{k}", _random(rng, rng.randint(233, 3000), 0.02)) for k in range(20_000)))
    print(f"random: {n} records")
    rng = random.Random(610)
    n = _fasta(sets / "lengths.fa", ((f"len{L}", _random(rng, L, 0.01)) for L in range(230, 611)))
    print(f"lengths: {n} records")
    n = _fasta(sets / "chr19.fa", ((name, seq) for name, seq in _records(CHR19) if len(seq) <= 3000))
    print(f"chr19 (<= 3,000 nt): {n} records")
    if SHARED.is_dir():
        for path in sorted(SHARED.rglob("*")):
            if path.suffix in (".fa", ".dbn"):
                n = _fasta(sets / f"shared_{path.stem}.fa", _records(path))
                print(f"shared_{path.stem}: {n} records")


def fold(out: Path, device: str, threads: int | None, only: list[str] | None) -> None:
    (out / device).mkdir(parents=True, exist_ok=True)
    for fa in sorted((out / "sets").glob("*.fa")):
        if only and fa.stem not in only:
            continue
        tsv = out / device / f"{fa.stem}.tsv"
        if tsv.exists():
            print(f"{fa.stem}: done before ({tsv})")
            continue
        cmd = [sys.executable, "-m", "rnapipe", "fold", str(fa), "--device", device, "-q", "--on-invalid", "skip",
               "-o", str(tsv)]
        if threads:
            cmd += ["--threads", str(threads)]
        print(" ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)


def compare(out: Path) -> int:
    bad = 0
    for gpu in sorted((out / "gpu").glob("*.tsv")):
        cpu = out / "cpu" / gpu.name
        if not cpu.exists():
            print(f"{gpu.stem}: no CPU output")
            continue
        a, b = gpu.read_text().splitlines(), cpu.read_text().splitlines()
        differ = sum(x != y for x, y in zip(a, b)) + abs(len(a) - len(b))
        bad += differ
        print(f"{gpu.stem}: {len(a):,} lines, {differ} differ")
    return 1 if bad else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("make", "fold", "compare"))
    ap.add_argument("dir", type=Path)
    ap.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--sets", default="", help="comma-separated set names (default: every one)")
    args = ap.parse_args()
    if args.what == "make":
        make(args.dir)
    elif args.what == "fold":
        fold(args.dir, args.device, args.threads, [s for s in args.sets.split(",") if s] or None)
    else:
        sys.exit(compare(args.dir))


if __name__ == "__main__":
    main()
