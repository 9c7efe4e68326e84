"""End to end: the engine's own rate beside what a user gets from `rnapipe fold` on the same sequences.

    python benchmarks/end_to_end.py --device cpu --algorithm nussinov --sets random:68:1000000
    python benchmarks/end_to_end.py --device gpu --sets random:68:5000000,random:120:2000000,file:PATH

Per set (``random:L:N``: N random sequences of L nt, written as FASTA; ``file:PATH``: a FASTA file):

* engine, batches of 20,000 (random sets): ``fold_batch`` on the set's first 20,000 sequences, one untimed
  call, then the median of ``--repeat`` timed calls, each after ``gc.collect()``, as benchmarks/zuker_gpu.py
  measures it;
* engine, one list: ``fold_batch`` on every sequence of the set in one call (after one untimed call on the
  first 2,000, which compiles what the lengths need), timed once;
* CLI: ``rnapipe fold FILE -o OUT.db --device D -q`` as a fresh process (interpreter start, imports, reading,
  folding, writing all included), wall time and peak RSS (``wait4``), ``--cli-repeat`` runs, the median;
* whether the CLI's output equals the engine's results (MFE or pairs, and structure, every record).

Appends the table to benchmarks/RESULTS.md with the date and the machine.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "RESULTS.md"
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import machine  # noqa: E402


def random_fasta(path: Path, length: int, count: int, seed: int) -> None:
    """``count`` random sequences of ``length`` nt, ids ``r000000001`` (fixed width: built as one array)."""
    rng = np.random.default_rng(seed)
    width = 10
    head = 2 + width                          # '>' + id + '\n'
    rec = head + length + 1
    step = 1 << 20
    with open(path, "wb") as out:
        for a in range(0, count, step):
            b = min(count, a + step)
            n = b - a
            buf = np.empty((n, rec), dtype=np.uint8)
            buf[:, 0] = ord(">")
            ids = np.char.zfill(np.arange(a, b).astype(str), width - 1)
            buf[:, 1] = ord("r")
            buf[:, 2:1 + width] = np.frombuffer("".join(ids.tolist()).encode(), dtype=np.uint8).reshape(n, width - 1)
            buf[:, 1 + width] = 10
            buf[:, head:head + length] = np.frombuffer(b"ACGU", dtype=np.uint8)[
                rng.integers(0, 4, size=(n, length), dtype=np.uint8)]
            buf[:, -1] = 10
            out.write(buf.tobytes())


def read_sequences(path: Path) -> tuple[list[str], list[str]]:
    from rnapipe.io import read_records

    ids, seqs = [], []
    for r in read_records([path], on_invalid="skip"):
        ids.append(r.id)
        seqs.append(r.sequence)
    return ids, seqs


def engine_rate_batches(engine, variant, seqs, threads, repeat) -> float:
    batch = seqs[:20_000]
    engine.fold_batch(batch, variant, threads, {})
    runs = []
    for _ in range(repeat):
        gc.collect()
        t = time.perf_counter()
        engine.fold_batch(batch, variant, threads, {})
        runs.append(time.perf_counter() - t)
    return len(batch) / float(np.median(runs))


def engine_one_list(engine, variant, seqs, threads):
    engine.fold_batch(seqs[:2000], variant, threads, {})
    gc.collect()
    t = time.perf_counter()
    results = engine.fold_batch(seqs, variant, threads, {})
    return time.perf_counter() - t, results


# `python -m rnapipe` that prints its own peak RSS as it exits: VmHWM of /proc/self/status (the high-water
# mark of this program's memory; getrusage's ru_maxrss would also count the benchmark process it was forked
# from, which holds the whole set), else ru_maxrss where there is no /proc
_CLI = ("import atexit, resource, runpy, sys\n"
        "def peak():\n"
        "    try:\n"
        "        return [int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM:')][0]\n"
        "    except (OSError, IndexError):\n"
        "        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "atexit.register(lambda: sys.stderr.write('peak_rss_kb %d\\n' % peak()))\n"
        "sys.argv[0] = 'rnapipe'; runpy.run_module('rnapipe', run_name='__main__')")


def run_cli(path: Path, out: Path, device: str, algorithm: str, threads: int, timeline: Path | None = None):
    """Wall seconds, peak RSS (MB) and stderr of one `rnapipe fold` process."""
    args = [sys.executable, "-c", _CLI, "fold", str(path), "-o", str(out), "--device", device,
            "--algorithm", algorithm, "--threads", str(threads), "-q", "--on-invalid", "skip", "--restart"]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE.parent)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    if timeline is not None:
        env["RNAPIPE_TIMELINE"] = str(timeline)
    t = time.perf_counter()
    proc = subprocess.run(args, env=env, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(f"rnapipe fold failed ({proc.returncode}): {proc.stderr}")
    peak = [int(x.split()[1]) for x in proc.stderr.splitlines() if x.startswith("peak_rss_kb ")]
    return wall, peak[-1] / 1024.0, proc.stderr.strip()


def _count(path: Path) -> tuple[int, int]:
    from rnapipe.pipeline.resume.progress import survey

    records, _ = survey([path])
    nt = 0
    with open(path, "rb") as handle:
        for line in handle:
            if not line.startswith(b">"):
                nt += len(line.strip())
    return records, nt


def parse_db(path: Path, zuker: bool):
    out = []
    with open(path) as handle:
        for k, line in enumerate(handle):
            if k % 3 == 2:
                structure, score = line.rstrip("\n").rsplit(" (", 1)
                value = score.rstrip(")").strip()
                out.append((round(float(value) * 100) if zuker else int(value), structure))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--algorithm", default="zuker")
    ap.add_argument("--sets", required=True, help="comma-separated random:L:N or file:PATH")
    ap.add_argument("--threads", type=int, default=machine.usable_cores())
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--cli-repeat", type=int, default=1)
    ap.add_argument("--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "rnapipe-e2e")
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--no-append", action="store_true")
    ap.add_argument("--skip-engine-list", action="store_true", help="no one-list engine run (memory sets)")
    ap.add_argument("--skip-engine", action="store_true", help="the CLI alone (memory sets)")
    args = ap.parse_args()

    from rnapipe.engines import get_engine

    engine, variant = get_engine(args.algorithm, args.device, None)
    zuker = args.algorithm == "zuker"
    args.work.mkdir(parents=True, exist_ok=True)
    device = machine.cpu_name()
    if args.device == "gpu":
        import cupy
        name = cupy.cuda.runtime.getDeviceProperties(0)["name"]
        device = name.decode() if isinstance(name, bytes) else str(name)
    rows = []
    for k, spec in enumerate(args.sets.split(",")):
        kind, _, rest = spec.partition(":")
        if kind == "random":
            length, count = (int(x) for x in rest.split(":"))
            path = args.work / f"random_{length}_{count}.fa"
            if not path.exists():
                random_fasta(path, length, count, seed=2026 + k)
            label = f"random {length} nt × {count:,}"
        else:
            path = Path(rest)
            label = path.name
        batch_rate = one_list = results = None
        if args.skip_engine:
            ids = seqs = None
            count, nt = _count(path)
        else:
            ids, seqs = read_sequences(path)
            count = len(seqs)
            nt = sum(map(len, seqs))
            if kind == "random":
                batch_rate = engine_rate_batches(engine, variant, seqs, args.threads, args.repeat)
        if not args.skip_engine_list and not args.skip_engine:
            seconds, results = engine_one_list(engine, variant, seqs, args.threads)
            one_list = count / seconds
        out = args.work / "out.db"
        walls, rss = [], []
        timeline = args.work / "timeline.json"
        for _ in range(args.cli_repeat):
            wall, peak, _err = run_cli(path, out, args.device, args.algorithm, args.threads, timeline)
            walls.append(wall)
            rss.append(peak)
            print(f"  {label}: CLI {wall:.2f} s, stages (s): {timeline.read_text()}", flush=True)
        wall = float(np.median(walls))
        same = "not checked"
        if results is not None:
            same = "yes" if parse_db(out, zuker) == [(int(s), t) for s, t in results] else "NO"
        del results, seqs, ids
        gc.collect()
        cli_rate = count / wall
        row = dict(label=label, count=count, nt=nt, batch=batch_rate, one=one_list, wall=wall, cli=cli_rate,
                   ratio=(cli_rate / batch_rate) if batch_rate else None,
                   ratio_one=(cli_rate / one_list) if one_list else None, rss=max(rss), same=same)
        rows.append(row)
        print(_row(row), flush=True)

    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = [f"\n### End to end, {args.algorithm} on {args.device} ({stamp})\n",
            f"{device}; host {machine.cpu_name()}, {args.threads} threads. `{' '.join(sys.argv)}`\n",
            "| set | records | engine, batches of 20,000 (seq/s) | engine, one list (seq/s) | CLI wall (s) | "
            "CLI seq/s | CLI / engine (batches) | CLI / engine (one list) | CLI peak RSS (MB) | CLI = engine |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    text += [_row(r) for r in rows]
    report = "\n".join(text) + "\n"
    print(report)
    if not args.no_append:
        with open(args.results, "a") as handle:
            handle.write(report)


def _row(r) -> str:
    f = lambda x: "" if x is None else f"{x:,.0f}"  # noqa: E731
    pct = lambda x: "" if x is None else f"{100 * x:.1f}%"  # noqa: E731
    return (f"| {r['label']} | {r['count']:,} | {f(r['batch'])} | {f(r['one'])} | {r['wall']:.2f} | {f(r['cli'])} | "
            f"{pct(r['ratio'])} | {pct(r['ratio_one'])} | {r['rss']:,.0f} | {r['same']} |")


if __name__ == "__main__":
    main()
