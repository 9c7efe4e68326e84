"""rnapipe.gpu.zuker.fold_batch with its CUDA kernels built for the CPU (g++ and zuker_shim.h) and numpy in CuPy's
place, so that the GPU Zuker engine's kernels can be checked where there is no GPU (tests/test_zuker_emulated.py).

Run in a process of its own (it puts a stand-in ``cupy`` module in sys.modules):

    python tests/cuda_emu/zuker_emu.py BUILD_DIR COUNT SEED MIN MAX [OPTIONS_JSON]

(OPTIONS_JSON: the engines' options, and "with_constraints" / "with_shape": true for random constraint lines or
SHAPE terms as well, "aux16": false for zk_fin_lanes' int32 window, "fin_options": more -D options for its build,
"mid_target_blocks": zk_mid's MID_TARGET_BLOCKS, "vgate_max_n": AUX_VGATE_MAX_N)
folds COUNT sequences of MIN..MAX nt (seed SEED; every other one random with 2 % N, the others built to fold
into a multiloop) with the emulated GPU engine forced onto the tiled fill
(``gpu_fill="tiled"``: zk_mid, zk_fin_lanes, the chunked W, the block traceback) and with the CPU engine, and prints one
JSON line: how many sequences differ in MFE or structure, how many went through the int32 window's build (the
refold of values out of the 16-bit range, or every one with "aux16": false), and the first few that differ.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import random
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import emu  # noqa: E402  (the stand-in CuPy and the launcher, shared with the partition function's emulation)

# zk_fin_lanes' CUDA-only lines and what the shim does instead
PATCHES = (
    ("extern __shared__ __align__(16) int zf_smem[];", "int* zf_smem = emu_dyn_smem;"),
    ('asm volatile("bar.arrive %0, 64;" :: "r"(w) : "memory");', "emu_bar_arrive(w);"),
    ('asm volatile("bar.sync %0, 64;" :: "r"(warp) : "memory");', "emu_bar_sync(warp);"),
)


def build(build_dir: str, options) -> ctypes.CDLL:
    kdir = os.path.join(ROOT, "rnapipe", "gpu", "kernels")
    text = open(os.path.join(kdir, "zuker.cu")).read()
    for old, new in PATCHES:
        if old not in text:
            raise RuntimeError(f"zuker.cu no longer has {old!r}: update zuker_emu.py's PATCHES")
        text = text.replace(old, new)
    headers = "".join(open(os.path.join(kdir, h)).read() for h in sorted(os.listdir(kdir)) if h.endswith(".cuh"))
    shims = "".join(open(os.path.join(HERE, f)).read() for f in ("shim.h", "zuker_shim.h", "zuker_emu.cpp"))
    # zk_mid's stages as the engine builds them: with ZK_MID_STAGES 2 the host build copies at once (cp.async is the
    # device's), so a copy into the wrong stage overwrites operands still to be multiplied and shows
    key = hashlib.sha1((text + headers + shims + " ".join(options)).encode()).hexdigest()[:16]
    so = os.path.join(build_dir, f"zuker_emu_{key}.so")
    if not os.path.exists(so):
        src = os.path.join(build_dir, f"src_{key}")
        os.makedirs(src, exist_ok=True)
        with open(os.path.join(src, "zuker_emu_src.cu"), "w") as f:
            f.write(text)
        emu.gxx("zuker_emu.cpp", so, options, [src, HERE, kdir])
    return ctypes.CDLL(so)


def install(build_dir: str):
    """The GPU Zuker engine's module with the emulated kernels."""
    cp = emu.fake_cupy()

    class Device:
        id = 0
        attributes = {"MultiProcessorCount": 1, "MaxSharedMemoryPerBlockOptin": 232448}

        def __init__(self, *a):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

        def synchronize(self):
            pass

    cp.cuda.Device = Device
    cp.cuda.memory = types.SimpleNamespace(OutOfMemoryError=type("OutOfMemoryError", (MemoryError,), {}))
    sys.modules["cupy"] = cp
    sys.modules["cupyx"] = emu.fake_cupyx()
    sys.path.insert(0, ROOT)
    from rnapipe.gpu import devices, loader, zuker as gz

    libs = {}

    def function(filename, name, options=(), name_expressions=(), dynamic_shared=0):
        if filename != gz.KERNELS:
            raise RuntimeError(f"only {gz.KERNELS} is emulated here, not {filename}")
        key = tuple(options)
        if key not in libs:
            libs[key] = build(build_dir, list(options))
        return emu.Kernel(libs[key], name)

    loader.function = function
    devices.memory_budget = lambda kept=0: 2**34
    return gz


def branched(rng: random.Random, lo: int, hi: int) -> str:
    """A random sequence of lo..hi nt built to fold into a multiloop: an outer helix closing three to five hairpins
    with short linkers, random flanks (the multiloop's split points then decide the MFE)."""
    pairs = ("GC", "CG", "AU", "UA", "GU", "UG")

    def helix(k: int, inner: str) -> str:
        ps = [rng.choice(pairs) for _ in range(k)]
        return "".join(p[0] for p in ps) + inner + "".join(p[1] for p in reversed(ps))

    def loop(a: int, b: int) -> str:
        return "".join(rng.choice("ACGU") for _ in range(rng.randint(a, b)))

    inner = loop(0, 3).join(helix(rng.randint(4, 7), loop(4, 8)) for _ in range(rng.randint(3, 5)))
    core = helix(rng.randint(4, 6), loop(1, 3) + inner + loop(1, 3))
    total = rng.randint(max(lo, len(core)), max(hi, len(core)))
    left = rng.randint(0, total - len(core))
    return loop(left, left) + core + loop(total - len(core) - left, total - len(core) - left)


def main(argv) -> int:
    build_dir, count, seed, lo, hi = argv[0], *map(int, argv[1:5])
    options = json.loads(argv[5]) if len(argv) > 5 else {}
    with_constraints = options.pop("with_constraints", False)
    with_shape = options.pop("with_shape", False)
    gz = install(build_dir)
    gz.FIN_AUX16 = options.pop("aux16", gz.FIN_AUX16)               # zk_fin_lanes' window in 16 bits or int32
    gz.FIN_OPTIONS = tuple(options.pop("fin_options", ()))          # e.g. a narrow 16-bit range
    gz.MID_TARGET_BLOCKS = options.pop("mid_target_blocks", gz.MID_TARGET_BLOCKS)   # 1: a zk_mid block a tile
    gz.AUX_VGATE_MAX_N = options.pop("vgate_max_n", gz.AUX_VGATE_MAX_N)   # 0: the window's loads untested
    refolded = []                                                   # the sequences folded again with int32
    once = gz._fold_group_with

    def counted(seqs, model, fill, host, block, shape, constraints, aux16):
        if not aux16:
            refolded.extend(seqs)
        return once(seqs, model, fill, host, block, shape, constraints, aux16)
    gz._fold_group_with = counted
    from rnapipe.cpu import zuker as cz

    rng = random.Random(seed)
    seqs = [branched(rng, lo, hi) if k % 2 else
            "".join("N" if rng.random() < 0.02 else rng.choice("ACGU") for _ in range(rng.randint(lo, hi)))
            for k in range(count)]
    data = {}
    if with_constraints:        # tests/seqgen.py's random lines (the kernels built with -DZK_HC)
        sys.path.insert(0, os.path.dirname(HERE))
        from seqgen import random_constraint
        data["constraints"] = [random_constraint(q, rng) for q in seqs]
    if with_shape:              # random reactivities through Deigan et al.'s terms (-DZK_SHAPE)
        from rnapipe.constraints import deigan
        data["shape"] = [deigan([round(rng.expovariate(1.5), 3) if rng.random() < 0.9 else -1.0 for _ in q], 1.8, -0.6)
                         for q in seqs]
    gpu = gz.fold_batch(seqs, "default", 2, dict(options, gpu_fill="tiled"), **data)
    cpu = cz.fold_batch(seqs, "default", 2, options, **data)
    differ = [k for k, (a, b) in enumerate(zip(gpu, cpu)) if tuple(a) != tuple(b)]
    print(json.dumps({"count": len(seqs), "differ": len(differ), "refolded": len(refolded),
                      "first": [[seqs[k], list(gpu[k]), list(cpu[k])] for k in differ[:2]]}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
