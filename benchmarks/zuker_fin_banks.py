"""Shared-memory wavefronts of zk_fin_lanes' chunk units' window loads, counted on the host (no GPU): for random
sequences, every tile with D >= 1 and every cell diagonal, the cells listed as having interior loops (a pair, maxu >= 3)
in passes of eight, four lanes a cell; for each base loop of a pass, the banks of the active lanes' words and the
wavefronts the load takes (the most distinct words on one bank). Printed per window row pitch (ZF_PA of
kernels/zuker.cu) and per growth step of the base loops (g0 rows / g1 columns a lane; the kernel's is 1 / 1), with the
base loop count that step needs (each is a shared load of the window and an add-min a lane; the size terms come
four at a time from a row of their own):

    python benchmarks/zuker_fin_banks.py --length 601 --seqs 3 --pitches 62,64,65,66,67

The base loops are kernels/zuker.cu's zf_base list (grown by g0 along n1 or g1 along n2); a pitch above 62 costs
3 x 62 x (pitch - 62) words of shared memory a block.
"""

from __future__ import annotations

import argparse
import collections
import random

MAXLOOP = 30
TURN = 3
SPECIAL = {(0, 0), (0, 1), (1, 0), (1, 1), (0, 2), (2, 0), (1, 2), (2, 1), (2, 2), (2, 3), (3, 2)}
PAIRS = {("A", "U"), ("U", "A"), ("G", "C"), ("C", "G"), ("G", "U"), ("U", "G")}


def base_loops(g0: int, g1: int) -> list[tuple[int, int, int, int]]:
    """(s, n1, n2, direction) of each base loop, sorted by s then n1 (direction 0: grown along n1 by g0 a lane)."""
    def kind(n1: int, n2: int) -> int:
        if n1 >= 2 and n2 >= 2:
            return 0 if ((n1 - 2) // g0) % 4 == 0 else -1
        if n1 <= 1 and n2 >= 3:
            return 1 if ((n2 - 3) // g1) % 4 == 0 else -1
        if n2 <= 1 and n1 >= 3:
            return 0 if ((n1 - 3) // g0) % 4 == 0 else -1
        return -1
    out = [(s, n1, s - n1, kind(n1, s - n1)) for s in range(MAXLOOP + 1) for n1 in range(s + 1)]
    out = [b for b in out if b[3] >= 0]
    covered = {(n1 + g0 * d, n2) if dr == 0 else (n1, n2 + g1 * d) for _, n1, n2, dr in out for d in range(4)}
    missing = [(n1, s - n1) for s in range(MAXLOOP + 1) for n1 in range(s + 1)
               if (n1, s - n1) not in SPECIAL and (n1, s - n1) not in covered]
    assert not missing, f"growth {g0}/{g1} leaves loops out: {missing[:5]}"
    return out


def wavefronts(pitch: int, g0: int, g1: int, length: int, seqs: int, seed: int,
               elem: int = 4) -> tuple[int, float]:
    bases = base_loops(g0, g1)
    plane = 62 * pitch
    rng = random.Random(seed)
    total = loads = 0
    for _ in range(seqs):
        seq = "".join(rng.choice("ACGU") for _ in range(length))
        tiles = (length + 31) // 32
        for ti in range(tiles):
            for tj in range(ti + 1, tiles):
                i0, j0 = 1 + 32 * ti, 1 + 32 * tj
                for dn in range(-31, 32):
                    listed = []
                    for r in range(max(0, -dn), min(32, 32 - dn)):
                        i, j = i0 + r, j0 + r + dn
                        if j <= length and (seq[i - 1], seq[j - 1]) in PAIRS:
                            maxu = min(j - i - TURN - 3, MAXLOOP)
                            if maxu >= 3:
                                listed.append((r, maxu))
                    for k0 in range(0, len(listed), 8):
                        for s, n1, n2, dr in bases:
                            kind = min(2, n1, n2)
                            banks = collections.defaultdict(set)
                            for rr, maxu in listed[k0:k0 + 8]:
                                for d in range(4):
                                    if s > maxu - (g0 if dr == 0 else g1) * d:
                                        continue
                                    word = (rr * (pitch + 1) + dn + 30 + kind * plane + n1 * pitch - n2
                                            + (d * g0 * pitch if dr == 0 else -d * g1))
                                    word = word * elem // 4          # the 4-byte bank word of the element
                                    banks[word % 32].add(word)
                            if banks:
                                total += max(len(w) for w in banks.values())
                                loads += 1
    return len(bases), total / loads


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--length", type=int, default=601)
    ap.add_argument("--seqs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--pitches", default="62,63,64,65,66,67")
    ap.add_argument("--growth", default="1/1,4/8", help="g0/g1 pairs, comma-separated")
    ap.add_argument("--elem-bytes", type=int, default=4, choices=(2, 4), help="bytes a window element (ZF_AUX16: 2)")
    args = ap.parse_args()
    print("| pitch | growth g0 / g1 | base loops | wavefronts a window load | extra shared bytes a block |")
    print("|---:|---|---:|---:|---:|")
    for g in args.growth.split(","):
        g0, g1 = (int(x) for x in g.split("/"))
        for pitch in (int(x) for x in args.pitches.split(",")):
            n, w = wavefronts(pitch, g0, g1, args.length, args.seqs, args.seed, args.elem_bytes)
            print(f"| {pitch} | {g0} / {g1} | {n} | {w:.2f} | {args.elem_bytes * 3 * 62 * (pitch - 62):,} |",
                  flush=True)


if __name__ == "__main__":
    main()
