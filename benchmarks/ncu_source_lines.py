"""Nsight Compute's per-instruction counters of one kernel, summed per CUDA source line (host only, no GPU).

On the device, profile a launch with the kernel built with -lineinfo (its code is then the code of a local -lineinfo
build of the same tree) and export its SASS page:

    ncu --clock-control none -k zk_fin_lanes --launch-skip 5 -c 1 --section SourceCounters --section WarpStateStats \\
        -o fin python3 benchmarks/zuker_gpu_fill.py --child $PWD base --lengths 601:512 --lineinfo
    ncu -i fin.ncu-rep --page source --csv --print-source sass > src.csv

Here, with the same tree:

    python benchmarks/ncu_source_lines.py src.csv --kernel zk_fin_lanes -D ZF_WARPS=12 -D ZF_SHARED_BYTES=76420 \\
        -D ZK_TILE=32 -D ZK_MID_STAGES=2

builds kernels/zuker.cu locally (nvcc -lineinfo, sm_90), disassembles the kernel with nvdisasm (PyPI:
nvidia-cuda-nvdisasm) to get each instruction's source line, aligns the local and the profiled instruction streams by
opcode (difflib; the share matched is printed) and prints, per source line, the share of the kernel's instructions
executed, shared-memory wavefronts, global L1 requests and stall samples, and the stall reasons of the lines that
stall most. Lines are the kernel file's or its headers'; "?" collects the instructions left unmatched.
"""

from __future__ import annotations

import argparse
import collections
import csv
import difflib
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

KERNELS = Path(__file__).resolve().parent.parent / "rnapipe" / "gpu" / "kernels"
COLUMNS = ("Instructions Executed", "L1 Wavefronts Shared", "L1 Tag Requests Global",
           "Warp Stall Sampling (All Samples)")


def opcode(text: str) -> str:
    return re.sub(r"^@!?U?P\w+\s+", "", text.strip()).split(" ")[0]


def local_sass(source: Path, kernel: str, defines: list[str], arch: str) -> list[tuple[str, tuple[str, int]]]:
    """(opcode, (file name, line)) of each instruction of ``kernel`` in a local -lineinfo build."""
    nvcc, nvdisasm = shutil.which("nvcc"), shutil.which("nvdisasm")
    if not nvcc or not nvdisasm:
        raise SystemExit("needs nvcc and nvdisasm on PATH")
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "k.cubin"
        subprocess.run([nvcc, f"-arch={arch}", "-std=c++17", f"-I{source.parent}", "-cubin", "-lineinfo", "-o",
                        str(cubin), *[f"-D{d}" for d in defines], str(source)], check=True)
        text = subprocess.run([nvdisasm, "-g", "-c", str(cubin)], check=True, capture_output=True,
                              text=True).stdout
    out, where, inside = [], ("?", 0), False
    for line in text.splitlines():
        if line.startswith("//----") and ".text." in line:
            inside = line.split(".text.")[1].split()[0] == kernel
            continue
        if not inside:
            continue
        m = re.search(r'//## File "([^"]+)", line (\d+)', line)
        if m:
            where = (Path(m.group(1)).name, int(m.group(2)))
            continue
        m = re.match(r"\s+/\*[0-9a-f]{4,}\*/\s+(.*?);", line)
        if m:
            out.append((opcode(m.group(1)), where))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", type=Path, help="ncu --page source --csv --print-source sass output")
    ap.add_argument("--kernel", default="zk_fin_lanes")
    ap.add_argument("--source", type=Path, default=KERNELS / "zuker.cu")
    ap.add_argument("-D", dest="defines", action="append", default=[], help="a macro of the profiled build")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()

    rows = list(csv.reader(args.csv.open()))
    header = next(r for r in rows if "Source" in r and "Address" in r)
    ix = {h: i for i, h in enumerate(header)}
    data = [r for r in rows[rows.index(header) + 1:] if len(r) == len(header)]

    def num(x: str) -> float:
        try:
            return float(x.replace(",", ""))
        except ValueError:
            return 0.0

    local = local_sass(args.source, args.kernel, args.defines, args.arch)
    matcher = difflib.SequenceMatcher(None, [o for o, _ in local], [opcode(r[ix["Source"]]) for r in data],
                                      autojunk=False)
    at = {b + k: a + k for a, b, n in matcher.get_matching_blocks() for k in range(n)}
    print(f"{len(at):,} of {len(data):,} profiled instructions matched to the local build's {len(local):,}")
    cols = [c for c in COLUMNS if c in ix]
    stalls = [h for h in header if h.startswith("stall_") and "Not Issued" not in h]
    per = collections.defaultdict(lambda: collections.Counter())
    total = collections.Counter()
    for k, r in enumerate(data):
        key = local[at[k]][1] if k in at else ("?", 0)
        for c in cols + stalls:
            v = num(r[ix[c]])
            per[key][c] += v
            total[c] += v
    texts = {}
    for path in sorted(args.source.parent.glob("*.cu*")):
        texts[path.name] = path.read_text().splitlines()
    for c in cols:
        print(f"\n{c} (total {total[c]:,.0f}) by source line:")
        for key, cnt in sorted(per.items(), key=lambda kv: -kv[1][c])[:args.top]:
            name, line = key
            src = texts.get(name, [])[line - 1].strip()[:80] if name in texts and line else ""
            print(f"  {cnt[c] / max(total[c], 1):6.1%}  {name}:{line:<5d} {src}")
    stall_col = "Warp Stall Sampling (All Samples)"
    if stall_col in cols and stalls:
        all_st = sum(total[s] for s in stalls) or 1
        print("\nstall reasons, whole kernel: " + ", ".join(
            f"{s[6:]} {total[s] / all_st:.1%}" for s in sorted(stalls, key=lambda s: -total[s])[:8]))
        for key, cnt in sorted(per.items(), key=lambda kv: -kv[1][stall_col])[:10]:
            n = sum(cnt[s] for s in stalls) or 1
            print(f"  {key[0]}:{key[1]:<5d} " + ", ".join(
                f"{s[6:]} {cnt[s] / n:.0%}" for s in sorted(stalls, key=lambda s: -cnt[s])[:4]))


if __name__ == "__main__":
    main()
