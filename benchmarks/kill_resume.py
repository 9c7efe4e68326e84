"""What a killed run keeps: a clean run's time, then runs killed at given shares of it and rerun, each rerun's
time against the clean run's and its outputs against the clean run's, byte for byte.

    python benchmarks/kill_resume.py --records 20000 --min 150 --max 400 --threads 2
    python benchmarks/kill_resume.py --device gpu --records 200000 --min 150 --max 1500
    python benchmarks/kill_resume.py --device gpu --partition --records 600 --min 200 --max 3000 --term 0.5
    python benchmarks/kill_resume.py --workflow --input benchmarks/data/homo_sapiens_GRCh38_chr19_ensembl_cdna.fa.gz \
        --longest 700

``rnapipe fold`` (default): random sequences of ``--min``..``--max`` nt (seeded) written as FASTA, or
``--input``; each run a fresh process (interpreter start included), ``-o OUT.db -o OUT.tsv`` (and, with
``--partition``, ``-p -o OUT.bpp``), after one untimed run (compiled code cached). For each kill point p of
``--kill`` the run is started, sent SIGKILL at p × the clean run's time, and run again with the same
command; the table gives the rerun's time over the clean run's beside the issue's bound (1 − p) + 0.1, and the
chunks the journal had kept. ``--term P`` also sends SIGTERM at P: how long the run took to exit, its exit code
and last line, the rerun's share.

``--workflow``: the same with ``snakemake --cores C`` on a work directory whose config folds ``--input`` (its
records up to ``--longest`` nt): SIGKILL to Snakemake's whole process group, then ``snakemake --cores C``
again (the default profile sets rerun-incomplete) and, where that says the directory is locked, as the README
says, ``snakemake --unlock`` and the command once more (the rerun's time is all of them); the final outputs
compared.

Appends the table to benchmarks/RESULTS.md with the date and the machine (unless ``--no-record``).
"""

from __future__ import annotations

import argparse
import datetime
import filecmp
import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "RESULTS.md"
sys.path.insert(0, str(HERE))

import machine  # noqa: E402


def random_fasta(path: Path, records: int, lo: int, hi: int, seed: int = 26) -> None:
    rng = np.random.default_rng(seed)
    letters = np.frombuffer(b"ACGU", dtype=np.uint8)
    with open(path, "wb") as out:
        for k in range(records):
            n = int(rng.integers(lo, hi + 1))
            out.write(b">r%d\n" % k + letters[rng.integers(0, 4, n)].tobytes() + b"\n")


def real_fasta(source: Path, path: Path, longest: int) -> int:
    """The records of ``source`` (FASTA, maybe gzipped) up to ``longest`` nt, with their first word as id."""
    opener = gzip.open if source.suffix == ".gz" else open
    count = 0
    with opener(source, "rt") as handle, open(path, "w") as out:
        name, seq = None, []

        def flush():
            nonlocal count
            s = "".join(seq).upper().replace("T", "U")
            if name and 0 < len(s) <= longest:
                out.write(f">{name}\n{s}\n")
                count += 1

        for line in handle:
            if line.startswith(">"):
                flush()
                name, seq = line[1:].split()[0], []
            else:
                seq.append(line.strip())
        flush()
    return count


class Job:
    """One command run in ``where`` as a process group of its own."""

    def __init__(self, argv: list[str], where: Path, env: dict):
        self.start = time.perf_counter()
        self.proc = subprocess.Popen(argv, cwd=where, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     start_new_session=True)

    def wait(self) -> tuple[float, int, str]:
        _, err = self.proc.communicate()
        return time.perf_counter() - self.start, self.proc.returncode, err.decode(errors="replace")

    def kill_at(self, seconds: float, sig: int) -> tuple[float, int, str]:
        """Send ``sig`` to the group ``seconds`` after the start; how long the group took to exit after it."""
        left = seconds - (time.perf_counter() - self.start)
        try:
            self.proc.wait(timeout=max(0.0, left))
            return 0.0, self.proc.returncode, "ended before the signal"
        except subprocess.TimeoutExpired:
            pass
        sent = time.perf_counter()
        os.killpg(self.proc.pid, sig)
        _, err = self.proc.communicate()
        with_pid = [line for line in err.decode(errors="replace").splitlines() if line.strip()]
        return time.perf_counter() - sent, self.proc.returncode, with_pid[-1] if with_pid else ""


def fold_setup(args, work: Path):
    data = work / "in.fa"
    if args.input:
        count = real_fasta(Path(args.input), data, args.longest)
    else:
        random_fasta(data, args.records, args.min, args.max)
        count = args.records
    argv = [sys.executable, "-m", "rnapipe", "fold", str(data), "-o", "out.db", "-o", "out.tsv",
            "--device", args.device, "-q"]
    outputs = ["out.db", "out.tsv"]
    if args.partition:
        argv += ["-p", "-o", "out.bpp"]
        outputs.append("out.bpp")
    if args.threads:
        argv += ["--threads", str(args.threads)]
    what = f"{count:,} records ({args.input or f'random {args.min}-{args.max} nt'})"
    return argv, outputs, count, what + (", -p (db, tsv and bpp)" if args.partition else "")


def workflow_setup(args, work: Path):
    data = work / "in.fa"
    count = real_fasta(Path(args.input), data, args.longest)
    config = {"inputs": [str(data)], "outdir": "results"}
    (work / "config.json").write_text(json.dumps(config))
    argv = ["snakemake", "-s", str(ROOT / "Snakefile"), "--directory", str(work), "--configfile",
            str(work / "config.json"), "--cores", str(args.cores), "-q"]
    outputs = None                                    # every file under results/ except logs and benchmarks
    return argv, outputs, count, f"workflow, {count:,} records of {Path(args.input).name} up to {args.longest} nt"


def result_files(where: Path, outputs) -> list[Path]:
    if outputs is not None:
        return [where / o for o in outputs]
    res = where / "results"
    return sorted(p for p in res.glob("*") if p.is_file())


def clear(where: Path, outputs) -> None:
    if outputs is None:
        shutil.rmtree(where / "results", ignore_errors=True)
        shutil.rmtree(where / ".snakemake", ignore_errors=True)
    else:
        for p in where.iterdir():
            if p.name.startswith("out."):
                p.unlink()


def journal_chunks(where: Path) -> int:
    count = 0
    for journal in list(where.glob("*.journal")) + list(where.glob("results/**/*.journal")):
        with open(journal, "rb") as handle:
            count += sum(1 for line in handle if b'"chunk"' in line)
    return count


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cores", type=int, default=2, help="snakemake --cores (with --workflow)")
    ap.add_argument("--records", type=int, default=20000)
    ap.add_argument("--min", type=int, default=150)
    ap.add_argument("--max", type=int, default=400)
    ap.add_argument("--input", help="a FASTA file (maybe gzipped) instead of random records")
    ap.add_argument("--longest", type=int, default=1000, help="records of --input up to this length")
    ap.add_argument("--workflow", action="store_true")
    ap.add_argument("--partition", action="store_true", help="rnapipe fold -p, the bpp output beside db and tsv")
    ap.add_argument("--kill", default="0.3,0.6,0.9")
    ap.add_argument("--term", type=float, default=None)
    ap.add_argument("--clean-runs", type=int, default=2, help="clean runs timed (their median is the base)")
    ap.add_argument("--results", type=Path, default=RESULTS, help="where the table is appended")
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()
    if args.workflow and not args.input:
        ap.error("--workflow needs --input")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    work = Path(tempfile.mkdtemp(prefix="rnapipe-kill-"))
    argv, outputs, count, what = (workflow_setup if args.workflow else fold_setup)(args, work)
    if args.workflow:
        clear(work, outputs)
    clear(work, outputs)
    Job(argv, work, env).wait()                       # untimed: Numba's cache and the GPU's kernels are made
    cleans = []
    for _ in range(args.clean_runs):
        clear(work, outputs)
        seconds, rc, err = Job(argv, work, env).wait()
        if rc:
            print(err)
            return 1
        cleans.append(seconds)
    clean_seconds = float(np.median(cleans))
    reference = work / "reference"
    reference.mkdir()
    for p in result_files(work, outputs):
        shutil.copy(p, reference / p.name)
    names = [p.name for p in result_files(work, outputs)]
    rows = [f"| clean (median of {', '.join(f'{x:.1f}' for x in cleans)} s) | {clean_seconds:.1f} s | 1.00 | | | |"]
    failures = 0
    points = [("SIGKILL", float(p)) for p in args.kill.split(",") if p] + \
             ([("SIGTERM", args.term)] if args.term is not None else [])
    for name, share in points:
        clear(work, outputs)
        job = Job(argv, work, env)
        sig = signal.SIGKILL if name == "SIGKILL" else signal.SIGTERM
        took, code, last = job.kill_at(share * clean_seconds, sig)
        kept = journal_chunks(work) if last != "ended before the signal" else "ended before the signal"
        rerun, rc, err = Job(argv, work, env).wait()
        if rc and args.workflow and "--unlock" in err:
            # the README's way on: `snakemake --unlock` where the command says the directory is locked
            steps = [Job(argv + ["--unlock"], work, env).wait(), Job(argv, work, env).wait()]
            rerun, rc, err = rerun + steps[0][0] + steps[1][0], steps[1][1], steps[1][2]
        same = rc == 0 and all(filecmp.cmp(reference / n, work / n if outputs is not None else work / "results" / n,
                                           shallow=False) for n in names)
        failures += not same
        bound = (1 - share) + 0.1 if name == "SIGKILL" else 0.65
        note = f"exit {code} {took:.1f} s after; `{last[:90]}`" if name == "SIGTERM" else ""
        rows.append(f"| {name} at {share:.0%} | {rerun:.1f} s | {rerun / clean_seconds:.2f} | ≤ {bound:.2f} "
                    f"| {kept} | {'yes' if same else 'NO'} {note} |")
    table = "\n".join(["| run | rerun's time | share of a clean run | bound | chunks kept | identical |",
                       "|---|---|---|---|---|---|", *rows])
    title = (f"kill_resume ({datetime.date.today()}, {machine.cpu_name()}, {machine.usable_cores()} cores): {what}, "
             f"{'snakemake --cores ' + str(args.cores) if args.workflow else 'rnapipe fold --device ' + args.device}"
             f"{'' if args.workflow else ', ' + str(args.threads) + ' threads'}")
    print(title)
    print(table)
    if not args.no_record:
        with open(args.results, "a") as out:
            out.write(f"\n### {title}\n\n{table}\n")
    shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
