"""The Snakemake workflow on one node against one `rnapipe fold` of the same file (issue 15's last line).

    python benchmarks/workflow_vs_hybrid.py                       # GPU machine: --device hybrid, every core
    python benchmarks/workflow_vs_hybrid.py --device cpu --head 200 --max-length 400   # no GPU: a CPU check

Steps, each a fresh process, on ``--input`` (default: the chr19 cDNA of benchmarks/data):

1. the host's profile is made or loaded (``rnapipe profile --cached``), untimed: both runs below use it from the
   cache (the hybrid run's and the workflow's CPU jobs have the same threads: the cores but one with a GPU);
2. direct: ``rnapipe fold INPUT -o direct.db -o direct.tsv --device D --threads N -q``, timed;
3. workflow: ``snakemake --cores N --resources gpu=1`` with the input (one CPU job, and for --device hybrid one
   GPU job on GPU 0; ``jobs.gpu: 0`` for --device cpu) into a fresh output directory, timed from Snakemake's start to its
   end (every stage: prepare, profile (from the cache), partition, fold jobs, merge, report);
4. both runs' db and tsv outputs compared byte for byte.

Prints one table (wall s, seq/s, the workflow's throughput over the direct run's) and the workflow's stages
(Snakemake's benchmark files: wall s, peak RSS), and the partition's shares. ``--repeat`` runs each several
times (alternating), the median is shown.
"""

from __future__ import annotations

import argparse
import csv
import filecmp
import gzip
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_INPUT = HERE / "data" / "homo_sapiens_GRCh38_chr19_ensembl_cdna.fa.gz"


def env() -> dict:
    out = dict(os.environ)
    out["PYTHONPATH"] = str(REPO) + (os.pathsep + out["PYTHONPATH"] if out.get("PYTHONPATH") else "")
    out["PATH"] = os.path.dirname(sys.executable) + os.pathsep + out.get("PATH", "")
    return out


def run(cmd: list[str], cwd: Path, log: Path) -> float:
    start = time.perf_counter()
    with open(log, "w") as handle:
        proc = subprocess.run(cmd, cwd=cwd, env=env(), stdout=handle, stderr=subprocess.STDOUT)
    wall = time.perf_counter() - start
    if proc.returncode:
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{log.read_text()[-4000:]}")
    return wall


def subset(source: Path, target: Path, head: int | None, max_length: int | None) -> int:
    """Copy the first ``head`` records of at most ``max_length`` nt (all when None); returns the count."""
    opener = gzip.open if source.read_bytes()[:2] == b"\x1f\x8b" else open
    count = 0
    with opener(source, "rt") as src, open(target, "w") as out:
        name, seq = None, []

        def flush():
            nonlocal count
            s = "".join(seq)
            if name is not None and (max_length is None or len(s) <= max_length) and (head is None or count < head):
                out.write(f"{name}\n{s}\n")
                count += 1

        for line in src:
            if line.startswith(">"):
                flush()
                name, seq = line.rstrip("\n"), []
            else:
                seq.append(line.strip())
        flush()
    return count


def records_of(path: Path) -> int:
    opener = gzip.open if path.read_bytes()[:2] == b"\x1f\x8b" else open
    with opener(path, "rb") as handle:
        return sum(1 for line in handle if line.startswith(b">"))


def read_tsv(path: Path) -> list[dict]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--input", type=Path, default=DEFAULT_INPUT)
    parser.add_argument("--device", choices=("hybrid", "cpu"), default="hybrid")
    parser.add_argument("--cores", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--algorithm", choices=("zuker", "nussinov"), default="zuker")
    parser.add_argument("--head", type=int, help="only the first N records (of at most --max-length nt)")
    parser.add_argument("--max-length", type=int, help="only records of at most this many nt")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--work", type=Path, default=Path("/tmp/workflow_vs_hybrid"))
    args = parser.parse_args()
    if args.device == "hybrid" and args.algorithm != "zuker":
        sys.exit("--device hybrid folds Zuker only")

    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    if args.head or args.max_length:
        data = args.work / "input.fa"
        records = subset(args.input.resolve(), data, args.head, args.max_length)
    else:
        data = args.input.resolve()
        records = records_of(data)
    name = "input" if data.name == "input.fa" else data.name.split(".")[0]
    py = sys.executable
    gpu = args.device == "hybrid"

    profile = [py, "-m", "rnapipe", "profile", "--cached", "--algorithm", args.algorithm, "--threads", str(args.cores)]
    profile += ["--device", "hybrid"] if gpu else ["--device", "cpu"]
    seconds = run(profile, args.work, args.work / "profile.log")
    print(f"profile (untimed in the runs below): {seconds:.1f} s", flush=True)

    direct_cmd = [py, "-m", "rnapipe", "fold", str(data), "-o", "direct.db", "-o", "direct.tsv", "--device",
                  args.device, "--threads", str(args.cores), "--algorithm", args.algorithm, "-q"]
    (args.work / "run.yaml").write_text(f"inputs: [{data}]\noutdir: wf\nfold: {{algorithm: {args.algorithm}}}\n"
                                        f"jobs: {{cpu: 1, gpu: {1 if gpu else 0}, gpus: [0]}}\n")
    workflow_cmd = [py, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(args.work),
                    "--configfile", str(REPO / "config" / "config.yaml"), str(args.work / "run.yaml"),
                    "--cores", str(args.cores), "--resources", f"gpu={1 if gpu else 0}"]
    try:
        import matplotlib  # noqa: F401  (the report rule's pictures)
        report = True
    except ImportError:
        report = False
        # the merged outputs as targets: every stage but the report
        workflow_cmd += [f"wf/{name}.{args.algorithm}.{fmt}" for fmt in ("db", "tsv")]
        workflow_cmd += [f"wf/{name}.{args.algorithm}.db.rejected.tsv"]
        print("matplotlib is not installed: the workflow runs without its report rule", flush=True)
    walls = {"direct": [], "workflow": []}
    for k in range(args.repeat):
        for f in ("direct.db", "direct.tsv"):
            (args.work / f).unlink(missing_ok=True)
        walls["direct"].append(run(direct_cmd, args.work, args.work / f"direct{k}.log"))
        shutil.rmtree(args.work / "wf", ignore_errors=True)
        shutil.rmtree(args.work / ".snakemake", ignore_errors=True)
        walls["workflow"].append(run(workflow_cmd, args.work, args.work / f"workflow{k}.log"))
        print(f"run {k + 1}: direct {walls['direct'][-1]:.2f} s, workflow {walls['workflow'][-1]:.2f} s", flush=True)

    same = all(filecmp.cmp(args.work / f"direct.{fmt}", args.work / "wf" / f"{name}.{args.algorithm}.{fmt}",
                           shallow=False) for fmt in ("db", "tsv"))
    direct = statistics.median(walls["direct"])
    workflow = statistics.median(walls["workflow"])
    label = f"rnapipe fold --device {args.device}"
    print()
    print(f"{data.name}: {records:,} records, {args.algorithm}, {args.cores} cores"
          + (f", median of {args.repeat}" if args.repeat > 1 else ""))
    print(f"| run | wall s | seq/s | throughput / direct |")
    print(f"|---|---:|---:|---:|")
    print(f"| {label} | {direct:.2f} | {records / direct:,.1f} | 1.000 |")
    print(f"| workflow (snakemake --cores {args.cores}{'' if report else ', no report'}) | {workflow:.2f} | {records / workflow:,.1f} | "
          f"{direct / workflow:.3f} |")
    print(f"outputs byte-identical (db, tsv): {'yes' if same else 'NO'}")

    print("\nworkflow stages (last run; Snakemake benchmark files: wall s, peak RSS MB):")
    for path in sorted((args.work / "wf" / "benchmarks").glob("*/*.tsv")):
        row = read_tsv(path)[-1]
        print(f"  {path.parent.name}/{path.stem}: {float(row['s']):.2f} s, {row['max_rss']} MB")
    jobs = args.work / "wf" / "logs" / "partition" / f"{name}.log"
    if jobs.exists():
        print("\npartition:\n" + jobs.read_text())
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
