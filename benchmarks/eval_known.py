"""Count the known structures (shared/data/known/*.dbn, next to the checkout) that ``rnapipe.eval_structure``
refuses, and those whose energy differs from ViennaRNA's ``fold_compound(seq, md).eval_structure(s)``, per
model; print a table. Needs ViennaRNA's Python module ``RNA`` (the test oracle).

    python benchmarks/eval_known.py [--models d2,d0,T20d2]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from shared_data import DATA  # noqa: E402

import rnapipe  # noqa: E402
from rnapipe.errors import InputError  # noqa: E402

MODELS = {"d2": (37.0, 2), "d0": (37.0, 0), "T20d2": (20.0, 2)}


def known_records() -> list[tuple[str, str, str]]:
    records = []
    for path in sorted((DATA / "known").glob("*.dbn")):
        lines = path.read_text().splitlines()
        for k in range(0, len(lines) - 2, 3):
            records.append((lines[k][1:].split()[0], lines[k + 1].strip().upper().replace("T", "U"),
                            lines[k + 2].strip()))
    return records


def vienna_dcal(sequence: str, structure: str, temperature: float, dangles: int) -> float:
    """ViennaRNA's energy in dcal/mol as the float it returns (float32 kcal/mol) times 100, unrounded."""
    import RNA

    md = RNA.md()
    md.temperature = temperature
    md.dangles = dangles
    return float(np.float32(RNA.fold_compound(sequence, md).eval_structure(structure))) * 100


def same(ours: int, vienna: float) -> bool:
    """ViennaRNA computes ``(float)e / 100.`` into a float: compare in that precision."""
    return np.float32(np.float64(np.float32(ours)) / 100.0) == np.float32(vienna / 100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="d2,d0")
    args = parser.parse_args()
    records = known_records()
    print("| model | structures | refused | energy differs |")
    print("|---|---:|---:|---:|")
    for name in args.models.split(","):
        temperature, dangles = MODELS[name]
        refused = differs = 0
        for _, sequence, structure in records:
            try:
                ours = rnapipe.eval_structure(sequence, structure, temperature=temperature, dangles=dangles)
            except InputError:
                refused += 1
                continue
            if not same(ours, vienna_dcal(sequence, structure, temperature, dangles)):
                differs += 1
        print(f"| {name} | {len(records)} | {refused} | {differs} |")


if __name__ == "__main__":
    main()
