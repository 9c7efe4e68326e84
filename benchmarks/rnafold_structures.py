"""Zuker structures against RNAfold's: on how many sequences rnapipe's dot-bracket differs from ViennaRNA's
``RNA.fold_compound(seq, md).mfe()`` for the same model details (dangles, temperature), and on how many the MFE
differs. Sets: random sequences (uniform length, ACGU with 2 % N), the bundled example, and every file of
../shared/data (next to the checkout; left out where absent). Prints a table and appends it to
benchmarks/RESULTS.md. Not a timing: the seconds shown are only how long each row took.

    python benchmarks/rnafold_structures.py                           # CPU engine, d2 and d0 at 37 °C, d2 at 20 °C
    python benchmarks/rnafold_structures.py --device gpu --threads 16
    python benchmarks/rnafold_structures.py --models 37:2 --count 1000 --no-append
    python benchmarks/rnafold_structures.py --models 37:2:noLP,37:2:noGU,37:2:noClosingGU,37:2:span150

A model is ``temperature:dangles`` with any of the pairing rules after it (``:noLP``, ``:noGU``,
``:noClosingGU``, ``:spanN`` for --maxBPspan N), set alike in both.
"""

from __future__ import annotations

import argparse
import datetime
import multiprocessing
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from machine import cpu_name, usable_cores  # noqa: E402  (benchmarks/machine.py)
from seqgen import random_seqs  # noqa: E402  (tests/seqgen.py)
from shared_data import DATA  # noqa: E402  (tests/shared_data.py)


def _fasta(path: Path) -> list[str]:
    seqs, cur = [], []
    for line in path.read_text().splitlines() + [">"]:
        if line.startswith(">"):
            if cur:
                seqs.append("".join(cur))
            cur = []
        else:
            cur.append(line.strip().upper().replace("T", "U"))
    return seqs


def _dbn(path: Path) -> list[str]:
    lines = path.read_text().splitlines()
    return [lines[k].strip().upper().replace("T", "U") for k in range(1, len(lines), 3)]


def sets(count: int, longest: int) -> dict[str, list[str]]:
    out = {f"random 20-400 nt, 2 % N ({count})": random_seqs(count, 20, 400, seed=2024),
           "workflow/resources/example.fa": _fasta(ROOT / "workflow" / "resources" / "example.fa")}
    if DATA.is_dir():
        for path in sorted((DATA / "transcripts").glob("*.fa")):
            out[f"shared/data/transcripts/{path.name}"] = _fasta(path)
        known = []
        for path in sorted((DATA / "known").glob("*.dbn")):
            known += _dbn(path)
        out["shared/data/known/*.dbn"] = known
    return {name: [s for s in seqs if 0 < len(s) <= longest] for name, seqs in out.items()}


_MD = None


RULES = {"noLP": ("no_lp", "noLP"), "noGU": ("no_gu", "noGU"), "noClosingGU": ("no_closing_gu", "noGUclosure")}


def _model(text: str) -> tuple[float, int, dict, dict]:
    """``T:d[:rule...]``: temperature, dangles, our engine's rule options and ViennaRNA's md fields."""
    temperature, dangles, *rules = text.split(":")
    ours, theirs = {}, {}
    for rule in rules:
        if rule.startswith("span"):
            ours["max_bp_span"] = theirs["max_bp_span"] = int(rule[4:])
        else:
            ours[RULES[rule][0]] = True
            theirs[RULES[rule][1]] = 1
    return float(temperature), int(dangles), ours, theirs


def _init(temperature: float, dangles: int, md_fields: dict) -> None:
    global _MD
    import RNA
    _MD = RNA.md()
    _MD.temperature = temperature
    _MD.dangles = dangles
    for key, value in md_fields.items():
        setattr(_MD, key, value)


def _rnafold(seq: str) -> tuple[int, str]:
    import RNA
    structure, mfe = RNA.fold_compound(seq, _MD).mfe()
    return round(mfe * 100), structure


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    ap.add_argument("--threads", type=int, default=usable_cores())
    ap.add_argument("--count", type=int, default=5000, help="random sequences")
    ap.add_argument("--longest", type=int, default=2500, help="leave out longer records")
    ap.add_argument("--models", default="37:2,37:0,20:2",
                    help="temperature:dangles[:noLP][:noGU][:noClosingGU][:spanN], comma-separated")
    ap.add_argument("--results", default=str(ROOT / "benchmarks" / "RESULTS.md"))
    ap.add_argument("--no-append", action="store_true", help="print only, do not append to RESULTS.md")
    args = ap.parse_args(argv)
    if args.device == "gpu":
        from rnapipe.gpu import zuker as engine
    else:
        from rnapipe.cpu import zuker as engine
    models = [(m, *_model(m)) for m in args.models.split(",")]
    rows = []
    header = "| model | set | sequences | structure differs | MFE differs | s |"
    print(header)
    for text, temperature, dangles, rules, md_fields in models:
        flags = "".join(f" {r}" for r in text.split(":")[2:])
        with multiprocessing.Pool(args.threads, _init, (temperature, dangles, md_fields)) as pool:
            for name, seqs in sets(args.count, args.longest).items():
                t0 = time.perf_counter()
                ours = engine.fold_batch(seqs, "default", args.threads,
                                         {"temperature": temperature, "dangles": dangles, **rules})
                theirs = pool.map(_rnafold, seqs, chunksize=16)
                diff = [k for k, (o, r) in enumerate(zip(ours, theirs)) if o[1] != r[1]]
                mfe = sum(o[0] != r[0] for o, r in zip(ours, theirs))
                row = (f"| -T {temperature:g} -d{dangles}{flags} | {name} | {len(seqs)} | {len(diff)} | {mfe} | "
                       f"{time.perf_counter() - t0:.0f} |")
                print(row, flush=True)
                rows.append(row)
    if not args.no_append:
        import RNA
        when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        with open(args.results, "a") as f:
            f.write(f"\n### Zuker structures against RNAfold's, {args.device} engine ({when})\n\n"
                    f"`python benchmarks/rnafold_structures.py --device {args.device} --models {args.models} --count {args.count}`; machine: {platform.node()}, "
                    f"{cpu_name()}, {args.threads} threads; Python {platform.python_version()}, ViennaRNA "
                    f"{RNA.__version__}. Sequences whose "
                    "dot-bracket differs from ViennaRNA's `fold_compound(seq, md).mfe()` (same temperature, "
                    "dangles and pairing rules), and whose MFE differs; records longer than "
                    f"{args.longest} nt left out.\n\n{header}\n|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
