"""The GPU Zuker engine's fold_batch under build variants, alternating in one process (GPU only).

    python benchmarks/zuker_fold_variants.py --plan 601x4096,800x2048 \
        --variants "main=FIN_PAIRS=0;pairs=;nearw=-DZF_NEARW" [--repeat 5] [--results FILE]

A variant is a name and a comma-separated list of tokens: ``-D...`` options added to every kernel's build of
rnapipe/gpu/kernels/zuker.cu (through ``rules_option``, which every build's options pass through), or
``NAME=VALUE`` for an attribute of rnapipe.gpu.zuker (an int, e.g. ``FIN_PAIRS=0``, ``MID_TARGET_BLOCKS=1``). The
first variant is the base. First each variant folds the same 1,000 sequences (600 random of 233-3,000 nt with 2 % N,
400 GC-rich of 700 and 1,500 nt) and is compared with the base (how many results differ); then, per LxCOUNT, one
untimed fold of 256 sequences per variant and ``--repeat`` rounds of fold_batch on COUNT random sequences of L nt,
the variants in turn (reversed every other round, two sequence sets alternating), synchronised, each variant's
median wall time and its ratio to the base's. Prints a markdown table; ``--results`` appends it with the date and
the device.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
from seqgen import random_seqs  # noqa: E402  (tests/seqgen.py)


def gc_rich(n: int, count: int, seed: int) -> list[str]:
    """``count`` sequences of n nt, 70 % G or C."""
    r = np.random.default_rng(seed)
    a = r.choice(np.frombuffer(b"ACGU", dtype=np.uint8), size=(count, n), p=[0.15, 0.35, 0.35, 0.15])
    return [row.tobytes().decode() for row in a]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--plan", default="601x4096,800x2048,1200x2048,2500x512", help="LxCOUNT,...")
    ap.add_argument("--variants", required=True, help="name=TOKEN,TOKEN;name=...")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--results", type=Path)
    args = ap.parse_args()

    import cupy

    from rnapipe.gpu import zuker as gz

    variants: dict[str, list[str]] = {}
    for part in args.variants.split(";"):
        name, _, tokens = part.partition("=")
        variants[name.strip()] = [t for t in tokens.split(",") if t]
    defaults = {}
    for tokens in variants.values():
        for t in tokens:
            if not t.startswith("-D"):
                key = t.split("=")[0]
                defaults.setdefault(key, getattr(gz, key))
    rules = gz.rules_option
    extra: list[tuple[str, ...]] = [()]
    gz.rules_option = lambda model: tuple(rules(model)) + extra[0]

    def fold(name: str, seqs: list[str]):
        tokens = variants[name]
        for key, value in defaults.items():
            setattr(gz, key, value)
        for t in tokens:
            if not t.startswith("-D"):
                key, _, value = t.partition("=")
                setattr(gz, key, type(defaults[key])(int(value)))
        extra[0] = tuple(t for t in tokens if t.startswith("-D"))
        return gz.fold_batch(seqs, "default", 16, {})

    names = list(variants)
    check = random_seqs(600, 233, 3000, seed=11) + gc_rich(1500, 200, 5) + gc_rich(700, 200, 6)
    base = fold(names[0], check)
    differ = {names[0]: 0}
    for name in names[1:]:
        differ[name] = sum(a != b for a, b in zip(base, fold(name, check)))
        print(f"{name}: {differ[name]} of {len(check)} differ from {names[0]}", flush=True)

    dev = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    rows = []
    for item in args.plan.split(","):
        L, count = (int(x) for x in item.split("x"))
        sets = [random_seqs(count, L, L, seed=L * 31 + k, n_rate=0.0) for k in range(2)]
        for name in names:
            fold(name, sets[0][:256])
        times: dict[str, list[float]] = {name: [] for name in names}
        for rep in range(args.repeat):
            for name in (names if rep % 2 == 0 else names[::-1]):
                cupy.cuda.Device().synchronize()
                t0 = time.perf_counter()
                fold(name, sets[rep % 2])
                cupy.cuda.Device().synchronize()
                times[name].append(time.perf_counter() - t0)
        b = statistics.median(times[names[0]])
        rows.append((f"{L} x {count}", [(statistics.median(times[n]) * 1e3, statistics.median(times[n]) / b)
                                        for n in names]))
        print(rows[-1], flush=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"### fold_batch variants ({stamp}, {dev})", "",
             "Variants: " + "; ".join(f"{n} = {' '.join(variants[n]) or '(as built)'}" for n in names) +
             f". Median of {args.repeat}, alternating; ms (ratio to {names[0]}).", "",
             "| L x count | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
    lines += [f"| {what} | " + " | ".join(f"{ms:.1f} ({ratio:.3f})" for ms, ratio in cells) + " |"
              for what, cells in rows]
    lines += [f"| results differing from {names[0]} (of {len(check)}) | " +
              " | ".join(str(differ[n]) for n in names) + " |", ""]
    print("\n".join(lines))
    if args.results:
        with open(args.results, "a") as f:
            f.write("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
