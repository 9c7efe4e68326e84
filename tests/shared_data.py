"""The real RNA sets in ../shared/data (next to the checkout), read for tests; absent on a user's machine."""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def shared_sequences(limit: int = 1000) -> list[str]:
    """Unique sequences of every FASTA in transcripts/ and every .dbn in known/, 1..limit nt, upper case, T→U;
    [] when the folder is absent."""
    if not DATA.is_dir():
        return []
    seqs = []
    for path in sorted((DATA / "transcripts").glob("*.fa")):
        seq = []
        for line in path.read_text().splitlines() + [">"]:
            if line.startswith(">"):
                if seq:
                    seqs.append("".join(seq))
                seq = []
            else:
                seq.append(line.strip().upper().replace("T", "U"))
    for path in sorted((DATA / "known").glob("*.dbn")):
        lines = path.read_text().splitlines()
        seqs += [lines[k].strip().upper().replace("T", "U") for k in range(1, len(lines), 3)]
    return [s for s in dict.fromkeys(seqs) if 0 < len(s) <= limit]
