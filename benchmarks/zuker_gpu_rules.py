"""GPU Zuker under RNAfold's pairing rules and hard constraints against the default model: sequences/s end to end.

    python benchmarks/zuker_gpu_rules.py                       # the full plan, table on stdout
    python benchmarks/zuker_gpu_rules.py --quick --out t.md    # small counts, the table also written to t.md
    python benchmarks/zuker_gpu_rules.py --models default constraints "constraints enforced" --lengths 120 1000
    python benchmarks/zuker_gpu_rules.py --models default SHAPE --lengths 120 1000
    python benchmarks/zuker_gpu_rules.py --lengths 120 --detail --tuning 'smem_launch=(256, 3, True, 4, 2)'

Per (length, model): rnapipe.gpu.zuker.fold_batch on the same random ACGU sequences (Python strings in, MFE and
dot-bracket out), one untimed run of the batch (kernels compiled, pools made), then the median of --repeat runs,
each after gc.collect(); the ratio to the default model at that length. The models: RNAfold's defaults, each rule
alone (--noLP, --noGU, --noClosingGU, --maxBPspan 150) and all four together, and hard constraints (RNAfold's -C:
a random constraint line per sequence, tests/seqgen.py's random_constraint, seed
2027), with and without --enforceConstraint, and SHAPE data (RNAfold's --shape with Deigan's method at its defaults,
m 1.8, b -0.6: random reactivities per sequence, made as tests/test_zuker_gpu_shape.py's reactivities makes them,
about one in ten missing, seed 2028, turned into stacking pseudo-energies by rnapipe.constraints.deigan); at the
long length (chr19-like transcripts, 5,000 nt) the defaults and
--maxBPspan 150 only.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import platform
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # run from a checkout
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from seqgen import random_constraint  # noqa: E402  (tests/seqgen.py)

MODELS = {
    "default": {},
    "noLP": {"no_lp": True},
    "noGU": {"no_gu": True},
    "noClosingGU": {"no_closing_gu": True},
    "maxBPspan 150": {"max_bp_span": 150},
    "all four (span 150)": {"no_lp": True, "no_gu": True, "no_closing_gu": True, "max_bp_span": 150},
    "constraints": {},
    "constraints enforced": {"enforce_constraint": True},
    "SHAPE": {},
}
# models folded with a random constraint line per sequence (RNAfold -C; with --enforceConstraint)
CONSTRAINED = ("constraints", "constraints enforced")
# models folded with SHAPE data (RNAfold --shape, Deigan's method at its defaults)
WITH_SHAPE = ("SHAPE",)
# (length, sequences, models)
PLAN = [(120, 20_000, list(MODELS)), (1_000, 1_000, list(MODELS)), (5_000, 32, ["default", "maxBPspan 150"])]
QUICK = [(120, 2_000, list(MODELS)), (1_000, 100, list(MODELS)), (5_000, 4, ["default", "maxBPspan 150"])]


def reactivities(n: int, rng: random.Random) -> list[float]:
    """Random SHAPE reactivities, as tests/test_zuker_gpu_shape.py's reactivities makes them: about one in ten
    missing (negative here: rnapipe.constraints.deigan's missing value), some large."""
    out = []
    for _ in range(n):
        u = rng.random()
        out.append(-1.0 if u < 0.1 else round(rng.expovariate(1.5), 3) if u < 0.9 else round(rng.uniform(0, 4), 4))
    return out


def timed(seqs: list[str], options: dict, repeat: int, constraints: list[str] | None = None,
          shape: list | None = None) -> list[float]:
    from rnapipe.gpu import zuker as gpu

    gpu.fold_batch(seqs, "default", 1, options, constraints=constraints, shape=shape)      # compile, pools
    times = []
    for _ in range(repeat):
        gc.collect()
        t = time.perf_counter()
        gpu.fold_batch(seqs, "default", 1, options, constraints=constraints, shape=shape)
        times.append(time.perf_counter() - t)
    return times


def detail(seqs: list[str], options: dict, constraints: list[str] | None = None, shape: list | None = None) -> str:
    """--detail: one more run of the batch, its short-path kernels timed by CUDA events (fill and traceback of
    each chunk, summed over the chunks of both streams: more than the wall time where the streams overlap), the
    sequences the int16 ring sent back to the int32 one, and the fill's registers and local memory."""
    from rnapipe.gpu import zuker as gpu
    from rnapipe.gpu import zuker_short as short

    refolded = []
    plain = short._refold

    def counting(job, refold):
        refolded.append(len(refold))
        return plain(job, refold)

    short._refold, short.TUNING["events"] = counting, []
    try:
        gpu.fold_batch(seqs, "default", 1, options, constraints=constraints, shape=shape)
    finally:
        short._refold = plain
        events = short.TUNING.pop("events")
    n = len(seqs[0])
    if n > short.smem_max_n():
        return f"{sum(events):.1f} ms in {len(events)} chunks; {sum(refolded)} refolded"
    group = short._Group(seqs[:1], [n], gpu._gpu_model(options), shape=None if shape is None else shape[:1],
                         constraints=None if constraints is None else constraints[:1])
    a = group.launch(n, True)[0].attributes
    return (f"{sum(events):.1f} ms in {len(events)} chunks; {sum(refolded)} refolded; fill {a['num_regs']} "
            f"registers, {a['local_size_bytes']} B local")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", help="also write the table to this file")
    parser.add_argument("--models", nargs="+", choices=list(MODELS), help="only these models (default first)")
    parser.add_argument("--lengths", nargs="+", type=int, help="only these lengths of the plan")
    parser.add_argument("--detail", action="store_true",
                        help="a column of the short path's kernel milliseconds (CUDA events), refolds and registers")
    parser.add_argument("--tuning", action="append", default=[], metavar="KEY=VALUE",
                        help="set rnapipe.gpu.zuker_short.TUNING[KEY] (a Python literal), e.g. "
                             "'smem_launch=(256, 3, True, 3, 2)' or 'hc_smem=False'; repeatable")
    args = parser.parse_args()
    import ast

    import cupy

    from rnapipe.gpu import zuker_short

    for item in args.tuning:
        key, _, value = item.partition("=")
        zuker_short.TUNING[key.strip()] = ast.literal_eval(value.strip())

    device = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    rng = random.Random(2026)
    crng = random.Random(2027)
    srng = random.Random(2028)
    now = datetime.datetime.now(datetime.timezone.utc)
    lines = [f"GPU Zuker under the pairing rules and hard constraints ({now:%Y-%m-%d %H:%M} UTC; "
             f"{device}; Python {platform.python_version()}): random ACGU sequences (seed 2026), "
             f"rnapipe.gpu.zuker.fold_batch end to end, median of {args.repeat} runs after one untimed run, range "
             "in brackets; ratio: seq/s over the default model's at that length"
             + (f"; zuker_short.TUNING {zuker_short.TUNING}" if args.tuning else "") + ".", "",
             "| L | sequences | model | GPU seq/s | ratio to default |" + (" detail |" if args.detail else ""),
             "|---:|---:|---|---:|---:|" + ("---|" if args.detail else "")]
    for n, count, models in (QUICK if args.quick else PLAN):
        if args.lengths and n not in args.lengths:
            continue
        if args.models:
            models = [m for m in models if m in args.models]
        seqs = ["".join(rng.choice("ACGU") for _ in range(n)) for _ in range(count)]
        cons = [random_constraint(s, crng) for s in seqs] if any(m in CONSTRAINED for m in models) else None
        shape = None
        if any(m in WITH_SHAPE for m in models):
            from rnapipe.constraints import deigan
            shape = [deigan(reactivities(n, srng)) for _ in seqs]
        base = None
        for name in models:
            times = timed(seqs, MODELS[name], args.repeat, cons if name in CONSTRAINED else None,
                          shape if name in WITH_SHAPE else None)
            rate = count / statistics.median(times)
            base = base or rate
            more = ""
            if args.detail:
                what = detail(seqs, MODELS[name], cons if name in CONSTRAINED else None,
                              shape if name in WITH_SHAPE else None)
                more = f" {what} |"
            lines.append(f"| {n:,} | {count:,} | {name} | {rate:,.1f} ({count / max(times):,.1f}-"
                         f"{count / min(times):,.1f}) | {rate / base:.3f} |{more}")
            print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
