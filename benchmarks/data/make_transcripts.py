#!/usr/bin/env python3
"""Build the committed benchmark transcript set from its public source file.

Source (see SOURCES.md for full provenance):
    ENCODE-DCC/rna-seq-pipeline, test_data/Homo_sapiens.GRCh38.cdna.all.chr19_ERCC_phix.fa.gz
    = Ensembl GRCh38 cDNA ("cdna.all") restricted to chromosome 19, plus 96
      ERCC-named spike-in records and phiX174 appended by ENCODE.

Rule (deterministic, no sampling):
    * keep every record whose header is an Ensembl cDNA header on GRCh38
      chromosome 19, i.e. the 2nd header word is "cdna" and the 3rd starts with
      "chromosome:GRCh38:19:"  -> drops the ERCC spike-ins and phiX174;
    * id = first word of the header (versioned Ensembl transcript id, e.g.
      ENST00000339924.12); the rest of the header is dropped;
    * sequence upper-cased, T -> U, written on one line; records stay in the
      order of the source file;
    * allowed letters: ACGU + IUPAC N R Y K M S W B D H V (kept unchanged);
      anything else, an empty sequence or a duplicate id is an error;
    * gzip level 9 with no file name and mtime 0 in the header (what
      `gzip -n` guarantees), so the output is byte-for-byte reproducible with
      the same zlib.

Usage (stdlib only, Python >= 3.10):
    python benchmarks/data/make_transcripts.py SOURCE.fa[.gz] [-o OUT.fa.gz]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import statistics
import sys
from pathlib import Path

DEFAULT_OUT = Path(__file__).resolve().parent / "homo_sapiens_GRCh38_chr19_ensembl_cdna.fa.gz"
CHROM_PREFIX = "chromosome:GRCh38:19:"
ALLOWED = frozenset("ACGUNRYKMSWBDHV")
IUPAC = frozenset("NRYKMSWBDHV")


def read_fasta(path: Path):
    """Yield (header, sequence) from a plain or gzipped FASTA file."""
    opener = gzip.open if path.read_bytes()[:2] == b"\x1f\x8b" else open
    header = None
    chunks: list[str] = []
    with opener(path, "rt", encoding="ascii") as fh:
        for line in fh:
            line = line.rstrip("\r\n")
            if line.startswith(">"):
                if header is not None:
                    yield header, "".join(chunks)
                header, chunks = line[1:], []
            elif line.strip():
                if header is None:
                    raise ValueError("sequence data before first header")
                chunks.append(line.strip())
    if header is not None:
        yield header, "".join(chunks)


def keep(header: str) -> bool:
    words = header.split()
    return len(words) >= 3 and words[1] == "cdna" and words[2].startswith(CHROM_PREFIX)


def build(src: Path) -> tuple[list[tuple[str, str]], int]:
    records: list[tuple[str, str]] = []
    seen: set[str] = set()
    dropped = 0
    for header, seq in read_fasta(src):
        if not keep(header):
            dropped += 1
            continue
        rid = header.split()[0]
        if rid in seen:
            raise ValueError(f"duplicate id {rid}")
        seen.add(rid)
        rna = seq.upper().replace("T", "U")
        if not rna:
            raise ValueError(f"empty sequence for {rid}")
        bad = set(rna) - ALLOWED
        if bad:
            raise ValueError(f"{rid}: characters outside ACGU+IUPAC: {sorted(bad)}")
        records.append((rid, rna))
    return records, dropped


def gzip_bytes(text: bytes) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=9, mtime=0) as gz:
        gz.write(text)
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("source", type=Path, help="Homo_sapiens.GRCh38.cdna.all.chr19_ERCC_phix.fa.gz")
    ap.add_argument("-o", "--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)

    records, dropped = build(args.source)
    text = "".join(f">{rid}\n{seq}\n" for rid, seq in records).encode("ascii")
    data = gzip_bytes(text)
    args.out.write_bytes(data)

    lengths = [len(s) for _, s in records]
    iupac = sum(1 for _, s in records if IUPAC & set(s))
    print(f"wrote {args.out.name}: {len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()}")
    print(f"records kept {len(records)}, dropped {dropped} (non-chr19 / spike-ins)")
    print(
        f"length min {min(lengths)} median {statistics.median(lengths)} max {max(lengths)}; "
        f">=1000: {sum(l >= 1000 for l in lengths)}; >=10000: {sum(l >= 10000 for l in lengths)}; "
        f"total nt {sum(lengths)}; records with IUPAC codes: {iupac}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
