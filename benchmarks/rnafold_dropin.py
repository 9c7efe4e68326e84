"""Issue #23's acceptance: ``rnapipe fold`` prints RNAfold's bytes, record by record, on every set and option.

The reference is RNAfold's stdout built from ViennaRNA's Python API by the tests' printer
(tests/test_rnafold_conventions.py, ``rnafold_record``: the same options, ViennaRNA's MFE and structure, RNAfold's
layout); rnapipe's code takes no part in it. rnapipe is the real command line, ``python -m rnapipe fold IN.fa
-o OUT.db`` with RNAfold's flags, in a subprocess, on a FASTA file written for the set (with each record's
constraint line for -C, as RNAfold -C reads it; with a table of ``id position reactivity`` rows for --shape).

Sets (``--sets``, comma-separated; ``shared`` is mirbase,trna,known):
  random  20,000 random sequences of 20-600 nt with 2 % N (tests/seqgen.py, seed 23), headers ``random{k} {n} nt``
  mirbase ../shared/data/transcripts/miRBase21_hairpin_all_species.fa (28,645 hairpins)
  trna    ../shared/data/transcripts/tRNAs_GtRNAdb_6species.fa (2,224)
  known   the sequences of ../shared/data/known/*.dbn (1,501), file by file
  chr19   the first 2,000 transcripts of benchmarks/data/homo_sapiens_GRCh38_chr19_ensembl_cdna.fa.gz of at most
          3,000 nt, in file order (T printed as U, as RNAfold prints it)
Options (``--options``): default, noLP, d0, T25, maxBPspan150, noGU, C (-C: a random valid constraint line a
record, tests/seqgen.py's ``random_constraint``), C-enforce (the same lines, -C --enforceConstraint),
shape (random reactivities a record, tests/test_constraints.py's ``random_reactivities``, ``--shape TABLE``,
RNAfold's default Deigan method). Constraint lines and reactivities are drawn per record from a seed made of the
set's name and the record's number, so a --limit run draws the first records' ones. RNAfold -C does not print
the constraint line: neither does the reference. RNAfold applies a --shape file to the first record only;
rnapipe's table gives each record its own rows, and each record's reference is what RNAfold prints for that
record alone with a file of its reactivities.

Under --enforceConstraint a random line may leave no structure: RNAfold stops there ("empty solution set"). The
harness runs rnapipe with ``--on-invalid skip`` for that option and counts such a record as agreeing when the
reference has no structure for it and rnapipe lists it in OUT.db.rejected.tsv as leaving none ("no structure"
in the table's note); any other rejection, or a missing one, is a differing record.

Reference outputs are computed in a multiprocessing pool (--jobs) and cached under --cache (default
``.cache/rnafold_dropin`` in the checkout, git-ignored), a gzipped file per chunk of records keyed by set, option
and a hash of the chunk's input (sequences, headers, constraint lines, reactivities, ViennaRNA's version): a
rerun, another --devices or a --limit run over the same first records computes nothing again (a --limit run's
last chunk is its own). Carry the folder to another host to reuse it there. Cost of the reference, ViennaRNA
core-seconds an option (default model; --noLP, --noGU and --maxBPspan 150 less, -C and SHAPE about as much):
random about 1,100, mirbase about 110, trna and known a few, chr19 about 1,500-3,000 (its 2,000 transcripts
hold 2.1 M nt): on 16 cores chr19 takes a few minutes an option, so give it a few options a command where
commands are limited in time; each chunk is cached as soon as it is computed, so an interrupted run loses
only the chunks in flight.

For each option, set and device (``--devices cpu,gpu,hybrid``; gpu and hybrid are left out where no GPU is
usable), the table gives the records, the differing records (by bytes: header line, sequence line, structure
and energy line), the first differing record's id, rnapipe's seconds (the whole command: start, compile cache,
reading, folding, writing) and the reference's seconds (0 from the cache). A device that refuses an option
(``-C`` on the GPU engines today) is "refused"; any other failure of the command shows its error line. The first
differing record of each row is printed under the table (reference and rnapipe lines). The table is appended to
benchmarks/RESULTS.md (date, machine, commit) unless --no-append.

    python benchmarks/rnafold_dropin.py --sets random,shared --devices cpu --jobs 2
    python benchmarks/rnafold_dropin.py --limit 200 --no-append                 # every set and option, quickly
    python benchmarks/rnafold_dropin.py --sets chr19 --devices cpu,gpu,hybrid --jobs 16
    python benchmarks/rnafold_dropin.py --sets random --options default,C,shape --cache /tmp/c
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import hashlib
import itertools
import multiprocessing
import os
import pickle
import platform
import random
import shlex
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from machine import cpu_name, usable_cores  # noqa: E402  (benchmarks/machine.py)
from seqgen import iter_random_seqs  # noqa: E402  (tests/seqgen.py)
import shared_data  # noqa: E402  (tests/shared_data.py)
from test_constraints import random_constraint, random_reactivities  # noqa: E402
from test_rnafold_conventions import RNA, rnafold_md, rnafold_record  # noqa: E402

CHR19 = ROOT / "benchmarks" / "data" / "homo_sapiens_GRCh38_chr19_ensembl_cdna.fa.gz"
DEFAULT_CACHE = Path(".cache") / "rnafold_dropin"          # relative to the checkout (ROOT), git-ignored

# a chunk of the reference: at most this many records, or fewer whose L³ add up to this (about 10 s of ViennaRNA)
CHUNK_RECORDS = 256
CHUNK_CUBES = 2 * 10 ** 10
CACHE_FORMAT = 2                           # of the cache files (part of the key)


# ------------------------------------------------------------------------------------------------- sets

def read_fasta(path: Path) -> Iterator[tuple[str, str]]:
    """(header line without '>' and line end, sequence) of each record of a FASTA file (gzipped or not), one
    at a time."""
    opener = gzip.open if path.suffix == ".gz" else open
    header, seq = None, []
    with opener(path, "rt") as handle:
        for line in handle:
            line = line.rstrip("\r\n")
            if line.startswith(">"):
                if header is not None:
                    yield header, "".join(seq)
                header, seq = line[1:], []
            elif line.strip():
                seq.append(line.strip())
    if header is not None:
        yield header, "".join(seq)


def read_dbn(path: Path) -> Iterator[tuple[str, str]]:
    """(header line, sequence) of each record of a .dbn file (header, sequence, structure lines)."""
    with open(path) as handle:
        for header, seq, _ in itertools.zip_longest(handle, handle, handle, fillvalue=""):
            if header.startswith(">"):
                yield header.rstrip("\r\n")[1:], seq.strip()


def _random_set() -> Iterator[tuple[str, str]]:
    for k, seq in enumerate(iter_random_seqs(20_000, 20, 600, seed=23)):
        yield f"random{k} {len(seq)} nt", seq


DATA = shared_data.DATA                    # ../shared/data beside the checkout; --data names another


def _known_set() -> Iterator[tuple[str, str]]:
    for path in sorted((DATA / "known").glob("*.dbn")):
        yield from read_dbn(path)


def _chr19_set() -> Iterator[tuple[str, str]]:
    return itertools.islice(((h, s) for h, s in read_fasta(CHR19) if len(s) <= 3000), 2000)


SETS = {
    "random": (_random_set, "20,000 random 20-600 nt, 2 % N (seed 23)"),
    "mirbase": (lambda: read_fasta(DATA / "transcripts" / "miRBase21_hairpin_all_species.fa"),
                "shared/data miRBase21 hairpins"),
    "trna": (lambda: read_fasta(DATA / "transcripts" / "tRNAs_GtRNAdb_6species.fa"), "shared/data GtRNAdb tRNAs"),
    "known": (_known_set, "shared/data known/*.dbn sequences"),
    "chr19": (_chr19_set, "chr19 cDNA: first 2,000 of <= 3,000 nt"),
}
SET_GROUPS = {"shared": ["mirbase", "trna", "known"]}


def set_available(name: str) -> bool:
    return CHR19.is_file() if name == "chr19" else (name == "random" or DATA.is_dir())


# ---------------------------------------------------------------------------------------------- options

@dataclass(frozen=True)
class Option:
    flags: tuple = ()                     # rnapipe fold's (and RNAfold's) flags
    model: dict = field(default_factory=dict)   # rnafold_md's keywords
    constraint: bool = False              # -C: a constraint line a record
    enforce: bool = False                 # --enforceConstraint
    shape: bool = False                   # --shape TABLE


OPTIONS = {
    "default": Option(),
    "noLP": Option(("--noLP",), {"no_lp": True}),
    "d0": Option(("-d0",), {"dangles": 0}),
    "T25": Option(("-T", "25"), {"temperature": 25.0}),
    "maxBPspan150": Option(("--maxBPspan", "150"), {"max_bp_span": 150}),
    "noGU": Option(("--noGU",), {"no_gu": True}),
    "C": Option(("-C",), constraint=True),
    "C-enforce": Option(("-C", "--enforceConstraint"), constraint=True, enforce=True),
    "shape": Option(("--shape",), shape=True),       # the table's path follows
}


@dataclass
class Record:
    number: int                           # from 0, in the set's order
    header: str
    seq: str
    constraint: str | None = None
    shape: list | None = None             # one reactivity a nucleotide, None where missing

    @property
    def id(self) -> str:
        return self.header.split(None, 1)[0] if self.header.split() else ""


def records(set_name: str, option: Option, limit: int | None) -> Iterator[Record]:
    """The set's records with the option's per-record data (constraint line, reactivities), drawn from a seed
    of the set's name and the record's number."""
    for k, (header, seq) in enumerate(itertools.islice(SETS[set_name][0](), limit)):
        rec = Record(k, header, seq)
        folded = seq.upper().replace("T", "U")
        if option.constraint:
            rec.constraint = random_constraint(folded, random.Random(f"constraint:{set_name}:{k}"))
        if option.shape:
            rec.shape = random_reactivities(len(seq), random.Random(f"shape:{set_name}:{k}"))
        yield rec


# -------------------------------------------------------------------------------------------- reference

def _chunks(recs: Iterator[Record]) -> Iterator[list[Record]]:
    chunk, cubes = [], 0
    for rec in recs:
        chunk.append(rec)
        cubes += len(rec.seq) ** 3
        if len(chunk) >= CHUNK_RECORDS or cubes >= CHUNK_CUBES:
            yield chunk
            chunk, cubes = [], 0
    if chunk:
        yield chunk


def chunk_key(option: Option, chunk: list[Record]) -> str:
    h = hashlib.sha256()
    h.update(repr((CACHE_FORMAT, RNA.__version__, sorted(option.model.items()), option.constraint, option.enforce,
                   option.shape)).encode())
    for rec in chunk:
        h.update(repr((rec.header, rec.seq, rec.constraint, rec.shape)).encode())
    return h.hexdigest()[:32]


def _record_lines(rec: Record) -> bytes:
    """The header and sequence lines RNAfold prints for ``rec`` (its header, its sequence with T as U): the
    part of the reference that the cache files leave out where it is so."""
    return f">{rec.header.rstrip()}\n{rec.seq.replace('T', 'U').replace('t', 'u')}\n".encode()


def reference_chunk(task) -> tuple[list, float]:
    """The reference bytes of a chunk's records (None: RNAfold stops, no structure) and the seconds spent
    computing them (0 when read from the cache file). A cache file keeps of each record's bytes what follows its
    header and sequence lines where these are ``_record_lines`` (else the whole bytes, as a 1-tuple), gzipped:
    about a byte per 4 nt."""
    path, option, chunk = task
    if path.is_file():
        with gzip.open(path, "rb") as handle:
            kept = pickle.load(handle)
        return [None if k is None else k[0] if isinstance(k, tuple) else _record_lines(rec) + k
                for rec, k in zip(chunk, kept)], 0.0
    start = time.perf_counter()
    md = rnafold_md(**option.model)
    out = [rnafold_record(rec.header, rec.seq, md, constraint=rec.constraint, enforce_constraint=option.enforce,
                          shape=rec.shape) for rec in chunk]
    seconds = time.perf_counter() - start
    kept = []
    for rec, text in zip(chunk, out):
        lines = None if text is None else _record_lines(rec)
        kept.append(None if text is None else text[len(lines):] if text.startswith(lines) else (text,))
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(f"{path.name}.{os.getpid()}.part")
    with gzip.open(part, "wb") as handle:
        pickle.dump(kept, handle)
    os.replace(part, path)
    return out, seconds


@dataclass
class Prepared:
    fasta: Path
    shape_table: Path | None
    reference: Path                        # the reference bytes of the records that have a structure
    records: int = 0
    no_structure: dict = field(default_factory=dict)     # id -> record number, where RNAfold stops
    numbers: dict = field(default_factory=dict)          # id -> record number, every record
    ref_seconds: float = 0.0               # core-seconds of ViennaRNA (0: all from the cache)
    computed: int = 0                      # chunks computed (not from the cache)


def prepare(set_name: str, option_name: str, limit: int | None, workdir: Path, cache: Path,
            pool) -> Prepared:
    """Write the set's FASTA (and SHAPE table) for rnapipe and the reference's bytes, streaming: at most a few
    chunks per worker in flight."""
    option = OPTIONS[option_name]
    prep = Prepared(workdir / "in.fa", workdir / "shape.tsv" if option.shape else None, workdir / "reference.db")
    window: deque = deque()                # (chunk, its pending result), in the set's order
    jobs = pool._processes if pool is not None else 1

    def take(ref) -> None:
        chunk, result = window.popleft()
        out, seconds = result.get() if pool is not None else result
        prep.ref_seconds += seconds
        prep.computed += seconds > 0
        for rec, text in zip(chunk, out):
            if text is None:
                prep.no_structure[rec.id] = rec.number
            else:
                ref.write(text)

    with open(prep.fasta, "w") as fa, open(prep.reference, "wb") as ref, \
            open(prep.shape_table if option.shape else os.devnull, "w") as table:
        if option.shape:
            table.write("# id position reactivity\n")
        for chunk in _chunks(records(set_name, option, limit)):
            for rec in chunk:
                fa.write(f">{rec.header}\n{rec.seq}\n")
                if rec.constraint is not None:
                    fa.write(rec.constraint + "\n")
                if rec.shape is not None:
                    table.write("".join(f"{rec.id}\t{p}\t{v!r}\n" for p, v in enumerate(rec.shape, start=1)
                                        if v is not None))
                prep.numbers[rec.id] = rec.number
                prep.records += 1
            task = (cache / set_name / option_name / f"{chunk_key(option, chunk)}.pkl.gz", option, chunk)
            window.append((chunk, pool.apply_async(reference_chunk, (task,)) if pool is not None
                           else reference_chunk(task)))
            while len(window) > 3 * jobs:
                take(ref)
        while window:
            take(ref)
    return prep


# ------------------------------------------------------------------------------------------------ rnapipe

@dataclass
class Row:
    option: str
    set: str
    device: str
    records: int
    differing: int | None = None           # None: no comparison (the command failed)
    first: str = ""                        # the first differing record's id
    seconds: float = 0.0                   # rnapipe fold's whole command
    ref_seconds: float = 0.0               # ViennaRNA's core-seconds for the reference (0: from the cache)
    note: str = ""                         # "refused", the error line, records without a structure
    detail: tuple | None = None            # (id, reference bytes, rnapipe bytes) of the first differing record


def run_rnapipe(prep: Prepared, option: Option, device: str, jobs: int, workdir: Path):
    """``python -m rnapipe fold`` on the set's FASTA with the option's flags: (exit status, seconds, the error
    line or '', the db output)."""
    out = workdir / f"out-{device}.db"
    for stale in workdir.glob(f"out-{device}.db*"):
        stale.unlink()
    flags = list(option.flags)
    if option.shape:
        flags.append(str(prep.shape_table))
    if option.enforce:                     # a record that leaves no structure: listed, the rest folded
        flags += ["--on-invalid", "skip"]
    cmd = [sys.executable, "-m", "rnapipe", "fold", str(prep.fasta), "-o", str(out), "-q", "--device", device,
           f"-j{jobs}", *flags]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, errors="replace")
    seconds = time.perf_counter() - start
    error = ""
    if proc.returncode != 0:
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        errors = [line for line in lines if line.startswith("rnapipe: error")]
        error = (errors or lines or [f"exit status {proc.returncode}, nothing on stderr"])[-1]
    return proc.returncode, seconds, error, out


def db_records(path: Path) -> Iterator[tuple[str, bytes]]:
    """(id, bytes) of each record of db output whose records all have a header line (header, sequence,
    structure lines), one at a time."""
    with open(path, "rb") as handle:
        for lines in itertools.zip_longest(handle, handle, handle, fillvalue=b""):
            head = lines[0]
            words = head[1:].split(None, 1) if head.startswith(b">") else []
            yield (words[0].decode("utf-8", "replace") if words else f"(not a header: {head[:40]!r})",
                   b"".join(lines))


def rejected(out: Path) -> dict[str, str]:
    """id -> reason of OUT.rejected.tsv (``--on-invalid skip``'s list), {} where there is none."""
    path = out.with_name(out.name + ".rejected.tsv")
    if not path.is_file():
        return {}
    rows = {}
    with open(path, encoding="utf-8", errors="replace") as handle:
        next(handle, None)                 # index, id, file, reason
        for line in handle:
            parts = line.rstrip("\n").split("\t")
            if len(parts) >= 4:
                rows[parts[1]] = parts[3]
    return rows


def compare(prep: Prepared, out: Path, row: Row) -> None:
    """Walk the reference and rnapipe's output together (both in input order; ids unique): a record whose
    bytes differ, one missing from either side, a record without structure that rnapipe does not list as such:
    each a differing record."""
    numbers, end = prep.numbers, float("inf")
    first = (end, "", b"", b"")
    differing = 0
    printed_extra = set()

    def differ(rid: str, want: bytes, got: bytes) -> None:
        nonlocal differing, first
        differing += 1
        number = numbers.get(rid, end)
        if number < first[0] or first[0] == end and not first[1]:
            first = (number, rid, want, got)

    exp, got = db_records(prep.reference), db_records(out)
    e, g = next(exp, None), next(got, None)
    while e is not None or g is not None:
        if e is not None and g is not None and e[0] == g[0]:
            if e[1] != g[1]:
                differ(e[0], e[1], g[1])
            e, g = next(exp, None), next(got, None)
        elif g is None or (e is not None and numbers.get(e[0], end) < numbers.get(g[0], end)):
            differ(e[0], e[1], b"(not printed)\n")
            e = next(exp, None)
        else:
            if g[0] in prep.no_structure:
                printed_extra.add(g[0])
            differ(g[0], b"(RNAfold stops: the constraints leave no structure)\n"
                   if g[0] in prep.no_structure else b"(not in the reference)\n", g[1])
            g = next(got, None)
    listed, agreed = rejected(out), 0
    for rid in prep.no_structure:
        if "leaves no structure" in listed.get(rid, ""):
            agreed += rid not in printed_extra
        elif rid not in printed_extra:
            differ(rid, b"(RNAfold stops: the constraints leave no structure)\n",
                   f"(rejected: {listed[rid]})\n".encode() if rid in listed else b"(not printed, not listed)\n")
    row.differing = differing
    if differing:
        row.first = first[1]
        row.detail = first[1:]
    if prep.no_structure:
        row.note = (f"{len(prep.no_structure):,} without structure (RNAfold stops): {agreed:,} listed so by "
                    "rnapipe")


def gpu_usable() -> bool:
    try:
        from rnapipe.gpu.devices import gpu_available
        return bool(gpu_available())
    except Exception:                      # no CUDA stack at all
        return False


# ------------------------------------------------------------------------------------------------- report

HEAD = ("| option | set | device | records | differing | first differing | rnapipe s | reference s | note |\n"
        "|---|---|---|---:|---:|---|---:|---:|---|\n")


def table_row(row: Row) -> str:
    differing = "refused" if row.note == "refused" else "error" if row.differing is None else f"{row.differing:,}"
    note = row.note if row.note != "refused" else "CPU-only option (CpuOnlyOption)"
    note = note.replace("|", "\\|")
    first = row.first.replace("|", "\\|")
    return (f"| {row.option} | {row.set} | {row.device} | {row.records:,} | {differing} | {first} | "
            f"{row.seconds:.1f} | {row.ref_seconds:.1f} | {note} |\n")


def details(rows: list[Row]) -> str:
    out = []
    for row in rows:
        if row.detail:
            rid, want, got = row.detail
            out.append(f"- {row.option} / {row.set} / {row.device}: first differing record `{rid}`\n"
                       f"  - reference: `{want.decode('utf-8', 'replace').rstrip().splitlines()[-1]}`\n"
                       f"  - rnapipe:   `{got.decode('utf-8', 'replace').rstrip().splitlines()[-1]}`\n")
    return "".join(out)


def commit() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                                ":!benchmarks/RESULTS.md"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
        return head + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _quoted(arg: str) -> str:
    """``arg`` as a shell reads it back, readably: an apostrophe inside double quotes where nothing else in it
    needs them, else shlex's quoting."""
    if "'" in arg and not set(arg) & set('"$`\\!'):
        return f'"{arg}"'
    return shlex.quote(arg)


def main(argv=None) -> int:
    global DATA
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default="random,shared,chr19",
                    help=f"comma-separated: {', '.join(SETS)}, shared (= {','.join(SET_GROUPS['shared'])})")
    ap.add_argument("--options", default=",".join(OPTIONS), help=f"comma-separated: {', '.join(OPTIONS)}")
    ap.add_argument("--devices", default="cpu,gpu,hybrid",
                    help="comma-separated: cpu, gpu, hybrid (gpu and hybrid left out where no GPU is usable)")
    ap.add_argument("--limit", type=int, default=None, help="the first N records of each set")
    ap.add_argument("--jobs", type=int, default=usable_cores(),
                    help="processes for the reference and rnapipe's -j (default: the usable cores)")
    ap.add_argument("--cache", type=Path, default=ROOT / DEFAULT_CACHE,
                    help="folder of the reference's cached chunks (default: .cache/rnafold_dropin in the checkout)")
    ap.add_argument("--data", type=Path, default=DATA,
                    help="the shared data folder (transcripts/, known/; default: ../shared/data beside the checkout)")
    ap.add_argument("--machine", default=None, help="how RESULTS.md names the machine (default: CPU model, cores)")
    ap.add_argument("--no-append", action="store_true", help="do not append the table to benchmarks/RESULTS.md")
    args = ap.parse_args(argv)
    DATA = args.data

    sets = [s for name in args.sets.split(",") if name for s in SET_GROUPS.get(name, [name])]
    options = [o for o in args.options.split(",") if o]
    devices = [d for d in args.devices.split(",") if d]
    for name, known, what in ((sets, SETS, "set"), (options, OPTIONS, "option"),
                              (devices, ("cpu", "gpu", "hybrid"), "device")):
        bad = [n for n in name if n not in known]
        if bad:
            ap.error(f"unknown {what}(s): {', '.join(bad)}")
    # the reference's workers are forked before this process asks CUDA about GPUs (they never touch CUDA)
    pool = multiprocessing.get_context("fork").Pool(args.jobs) if args.jobs > 1 else None
    if any(d != "cpu" for d in devices) and not gpu_usable():
        print(f"no usable GPU: {', '.join(d for d in devices if d != 'cpu')} left out", file=sys.stderr)
        devices = [d for d in devices if d == "cpu"]
    missing = [s for s in sets if not set_available(s)]
    if missing:
        print(f"not present here, left out: {', '.join(missing)}", file=sys.stderr)
        sets = [s for s in sets if s not in missing]

    started, tree = datetime.datetime.now(datetime.timezone.utc), commit()
    rows: list[Row] = []
    print(HEAD, end="", flush=True)
    try:
        for option_name in options:
            option = OPTIONS[option_name]
            for set_name in sets:
                with tempfile.TemporaryDirectory(prefix=f"dropin-{set_name}-{option_name}-") as tmp:
                    workdir = Path(tmp)
                    t0 = time.perf_counter()
                    prep = prepare(set_name, option_name, args.limit, workdir, args.cache, pool)
                    print(f"# {option_name} / {set_name}: reference of {prep.records:,} records in "
                          f"{time.perf_counter() - t0:.1f} s ({prep.computed} chunk(s) computed, "
                          f"{prep.ref_seconds:.1f} core-s)", file=sys.stderr, flush=True)
                    for device in devices:
                        row = Row(option_name, set_name, device, prep.records, ref_seconds=prep.ref_seconds)
                        rc, row.seconds, error, out = run_rnapipe(prep, option, device, args.jobs, workdir)
                        if rc != 0:
                            row.note = "refused" if "supported on the CPU engine for now" in error else error
                        else:
                            compare(prep, out, row)
                        rows.append(row)
                        print(table_row(row), end="", flush=True)
    finally:
        if pool is not None:
            pool.terminate()
    text = details(rows)
    if text:
        print("\nFirst differing record of each row (its last line, reference and rnapipe):\n" + text)
    if not args.no_append:
        machine = args.machine or f"{cpu_name()}, {usable_cores()} usable cores"
        command = " ".join(_quoted(a) for a in ["python", "benchmarks/rnafold_dropin.py",
                                                  *(argv if argv is not None else sys.argv[1:])])
        about = textwrap.fill(
            f"Machine: {machine}; Python {platform.python_version()}; ViennaRNA {RNA.__version__} (the reference, "
            f"its Python API); commit {tree}. `{command}`. Records: those of the set (--limit: the first N); "
            "differing: records whose bytes (header, sequence, structure and energy lines) differ from the "
            "reference's, or that one side lacks; rnapipe s: the whole `python -m rnapipe fold` command; reference "
            "s: ViennaRNA's core-seconds (0: from the cache).", width=118, break_long_words=False,
            break_on_hyphens=False)
        with open(ROOT / "benchmarks" / "RESULTS.md", "a") as handle:
            handle.write(
                f"\n### RNAfold drop-in: `rnapipe fold` against RNAfold's bytes ({started:%Y-%m-%d %H:%M} UTC)\n\n"
                + about + "\n\n" + HEAD + "".join(table_row(r) for r in rows)
                + (f"\nFirst differing records:\n\n{text}" if text else ""))
    return 0 if all(r.differing == 0 or r.note == "refused" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
